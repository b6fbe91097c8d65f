"""What the sampling mask says of each sampled token: the size of its support, and whether the id
sampled is in it (format §5.3).

A node's mask rows are `[mask_offset, mask_offset + mask_rows)`, row r for its token
`sampled_start + r`. A sampled id outside its support (an empty support included: nothing can be
inside it) is a sampler or `logprobs_mode` bug; a run of supports of one id is forced tokens
(constrained decoding, or a top-p that left a single id). The Path's hover and the background
verification both read these facts from here, so the flags and the page agree.
"""

from dataclasses import dataclass

from skycap_viewer.errors import RecordError
from skycap_viewer.flags import FORCED_RUN_TOKENS
from skycap_viewer.record.manifest import token_nodes
from skycap_viewer.record.sidecars import TokenData, mask_problems, read_present_sidecar, sidecar_file


@dataclass(frozen=True)
class NodeSupport:
    """One node's sampled tokens against its mask rows: `sizes[r]` is the support size of token
    `sampled_start + r` (rows past the node's tokens are not read); `outside` the node token
    indices whose sampled id is not in its support."""

    sizes: list[int]
    outside: list[int]

    def forced_runs(self) -> int:
        """How many runs of at least `FORCED_RUN_TOKENS` supports of one id the node has."""
        runs = length = 0
        for size in self.sizes:
            length = length + 1 if size == 1 else 0
            runs += length == FORCED_RUN_TOKENS
        return runs


class SamplingMask:
    """The arrays of one sampling-mask sidecar, checked: offsets start at 0, never decrease, stay in the ids."""

    def __init__(self, arrays: dict, where):
        problems = mask_problems(arrays)
        if problems:
            raise RecordError(where, "; ".join(problems))
        self.ids = arrays["ids"]
        self.offsets = arrays["offsets"]

    def node_support(self, tokens: dict, token_ids) -> NodeSupport | None:
        """The support facts of a node (its `tokens` object and its token ids), or None when the node
        records no mask (a client node, `mask_offset` null, or `mask_rows` 0)."""
        start, first = tokens.get("sampled_start"), tokens.get("mask_offset")
        if start is None or first is None or not tokens.get("mask_rows"):
            return None
        rows = max(min(tokens["mask_rows"], len(token_ids) - start, len(self.offsets) - 1 - first), 0)
        bounds = self.offsets[first : first + rows + 1].tolist()
        sizes, outside = [], []
        for row in range(rows):
            low, high = bounds[row], bounds[row + 1]
            sizes.append(high - low)
            if token_ids[start + row] not in self.ids[low:high]:
                outside.append(start + row)
        return NodeSupport(sizes, outside)


def read_mask(directory, document: dict) -> SamplingMask | None:
    """The record's sampling mask, or None when it was not captured or its file is not here;
    `RecordError` when it is damaged."""
    arrays = read_present_sidecar(directory, document, "sampling_mask")
    return None if arrays is None else SamplingMask(arrays, sidecar_file(directory, document, "sampling_mask"))


def support_by_node(document: dict, tokens: TokenData, mask: SamplingMask) -> dict[int, NodeSupport]:
    """Every node's support facts that has mask rows, by node id."""
    found = {}
    for node in token_nodes(document):
        support = mask.node_support(node["tokens"], tokens.ids(node["tokens"]))
        if support is not None:
            found[node["id"]] = support
    return found


def support_flags(supports: dict[int, NodeSupport]) -> list[str]:
    """The flags the support facts raise: `out-of-support`, `forced-run`."""
    flags = []
    if any(support.outside for support in supports.values()):
        flags.append("out-of-support")
    if any(support.forced_runs() for support in supports.values()):
        flags.append("forced-run")
    return flags
