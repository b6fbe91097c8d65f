"""One record understood from its document alone: paths, blocks, counts, signs and flags.

Everything here is computed without opening a sidecar, so the index can build it for every
record. `present` is the set of file names in the record directory; it tells a listed
sidecar that a mirror left out (absent) from one that is there.
"""


from dataclasses import dataclass

from skycap_viewer.flags import ordered
from skycap_viewer.record.blocks import Block, path_has_tokens, sampled_tokens, text_blocks, token_blocks
from skycap_viewer.record.graph import Graph, PathInfo
from skycap_viewer.record.lazy import lazy
from skycap_viewer.record.manifest import layout_problems, listed_kinds

ABSENT = "absent"


def bridged_value(call: dict):
    """`true`/`false`/`null`, or "absent" for records older than the field."""
    return call["bridged"] if "bridged" in call else ABSENT


def bridged_key(value) -> str:
    """The count a `bridged` value falls under; anything but true/false/null counts as absent."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "null" if value is None else ABSENT


def trained_counts(graph: Graph, info: PathInfo) -> tuple[int, int]:
    """(sampled tokens of the path's targets, those of them with logprobs), in one pass."""
    trainable = with_logprobs = 0
    for node_id in info.targets:
        node = graph.nodes[node_id]
        sampled = sampled_tokens(node)
        trainable += sampled
        if node["tokens"].get("has_logprobs"):
            with_logprobs += sampled
    return trainable, with_logprobs


class PathView:
    """One path with its blocks and counts."""

    def __init__(self, rollout: "Rollout", info: PathInfo):
        self.info = info
        graph = rollout.graph
        self.token_blocked = rollout.text_only is None and path_has_tokens(graph, info)
        self.blocks: list[Block] = (token_blocks if self.token_blocked else text_blocks)(graph, info)
        self.size = self.blocks[-1].end if self.blocks else 0
        self.trainable_count, self.logprob_count = trained_counts(graph, info) if self.token_blocked else (0, 0)
        leaf = graph.nodes[info.leaf]
        calls = leaf.get("calls") or []
        self.stop_reason = calls[-1].get("finish_reason") if leaf["author"] == "model" and calls else None

    @property
    def unit(self) -> str:
        """What the path's sizes and offsets count: `tokens`, or `chars` (UTF-16 units) without tokens."""
        return "tokens" if self.token_blocked else "chars"

    @property
    def token_count(self) -> int:
        return self.size if self.token_blocked else 0

    @property
    def char_count(self) -> int | None:
        return None if self.token_blocked else self.size


@dataclass(frozen=True)
class Sample:
    """One sample the trainer gets: a row of the record's `samples` (or, without them, a path the `all`
    rule trains): `input_ids[:size]` of the path that carries it, through its leaf, with the loss on its
    targets' sampled tokens. A custom rule's row may end before its path's leaf, and a path may carry
    several rows: each is a sample of its own."""

    number: int  # its row in `samples.rows`, or the path's index under the viewer's `all` rule
    path: int  # the path that carries it (the first holding its leaf)
    leaf: int
    targets: tuple[int, ...]
    size: int  # tokens through its leaf (characters without tokens)
    trainable: int | None  # tokens in its loss; None without tokens


class Rollout:
    def __init__(self, document: dict, present: set[str] | None = None, file_id: str | None = None):
        self.document = document
        self.nodes = document["nodes"]
        self.graph = Graph(self.nodes, document.get("samples"))
        self.sidecars = document.get("sidecars") or {}
        self.calls = [call for node in self.nodes for call in node.get("calls") or []]
        self.listed_kinds = listed_kinds(document)
        self.missing_sidecars = sorted(
            kind for kind in self.listed_kinds
            if present is not None and (kind not in self.sidecars or self.sidecars[kind]["file"] not in present)
        )
        self.damaged_sidecars: set[str] = set()
        self.sidecar_flags: list[str] = []  # what only the sidecars tell (`read_sidecars`)
        self.sidecars_read: dict = {}  # kind -> what reading it gave without a problem (`TokenData`, ...)
        self.record_problems = layout_problems(document, file_id) + self.graph.problems

    def read_sidecars(self, report) -> None:
        """Take what reading the sidecars found (a `record.verify.SidecarReport`): before any fact is asked,
        as they depend on it (`record.verify.verified_rollout` does both)."""
        self.damaged_sidecars = report.damaged
        self.sidecar_flags = report.flags
        self.sidecars_read = report.read
        self.record_problems = self.record_problems + report.problems

    @lazy
    def mode(self) -> str:
        """Token mode is read from the data, not `capture.mode`, which graph-API records leave out."""
        capture_mode = (self.document.get("capture") or {}).get("mode")
        if capture_mode in ("tokens", "text"):
            return capture_mode
        return "tokens" if "tokens" in self.listed_kinds or self.slices_tokens else "text"

    @property
    def stated_mode(self) -> str | None:
        """The mode as the header says it: `mode`, or None for a record with no nodes whose capture names
        none (nothing tells tokens from text: "text" would be a guess)."""
        if not self.nodes and (self.document.get("capture") or {}).get("mode") not in ("tokens", "text") \
                and not self.listed_kinds:
            return None
        return self.mode

    @lazy
    def slices_tokens(self) -> bool:
        """Whether any node has a tokens slice (the first node tells, in a token record)."""
        return any(node.get("tokens") is not None for node in self.nodes)

    @lazy
    def text_only(self) -> str | None:
        """Why a token record must be shown from message text: tokens missing, unlisted, or found damaged."""
        if not self.slices_tokens:
            return None
        if "tokens" not in self.listed_kinds:
            return "tokens-unlisted"
        if "tokens" in self.missing_sidecars:
            return "tokens-missing"
        return "tokens-unreadable" if "tokens" in self.damaged_sidecars else None

    @lazy
    def paths(self) -> list[PathView]:
        return [PathView(self, info) for info in self.graph.paths]

    @lazy
    def call_signs(self) -> tuple[dict, list[int], list[int]]:
        """(bridged counts, unbridged nodes, truncated nodes) in one pass over every call."""
        bridged = {"true": 0, "false": 0, "null": 0, ABSENT: 0}
        unbridged, truncated = [], []
        for node in self.nodes:
            calls = node.get("calls")
            if not calls:
                continue
            for call in calls:
                value = bridged_value(call)
                bridged[bridged_key(value)] += 1
                if value is False and (not unbridged or unbridged[-1] != node["id"]):
                    unbridged.append(node["id"])
                if call.get("finish_reason") == "length" and (not truncated or truncated[-1] != node["id"]):
                    truncated.append(node["id"])
        return bridged, unbridged, truncated

    @property
    def bridged(self) -> dict:
        """How many calls had `bridged` true, false, null, or no such field."""
        return self.call_signs[0]

    @property
    def unbridged_nodes(self) -> list[int]:
        return self.call_signs[1]

    @property
    def truncated_nodes(self) -> list[int]:
        return self.call_signs[2]

    @lazy
    def retokenized_pairs(self) -> list[tuple[int, int]]:
        """(model node, its re-tokenized copy) per copy, in node order: a client node shadowed by a
        model-authored sibling in a token record, the model's reply rendered again to other tokens (§8).
        A model node shadowed by a model node, or any shadowing in text mode, is no copy."""
        if self.mode != "tokens":
            return []
        pairs = []
        for node in self.nodes:
            by = node.get("shadowed_by")  # most nodes shadow nothing: asked first
            if (by is not None and node["author"] == "client" and 0 <= by < len(self.nodes) and self.graph.is_model(by)
                    and self.nodes[by].get("parent") == node.get("parent")):
                pairs.append((by, node["id"]))
        return pairs

    @lazy
    def retokenized_nodes(self) -> list[int]:
        """The re-tokenized copies (`retokenized_pairs`), in node order."""
        return [copy for _, copy in self.retokenized_pairs]

    @lazy
    def copy_set(self) -> frozenset[int]:
        return frozenset(self.retokenized_nodes)

    def prompt_copy(self, node_id: int) -> int | None:
        """The re-tokenized copy the prompt of model node `node_id` passes since the previous model node,
        or None. A full render keeps only the prefix whose stored tokens it reproduces and forks the rest
        (§8), so such a copy is where this call's render did not give back the model's tokens."""
        copies = self.copy_set
        current = self.nodes[node_id].get("parent")
        while current is not None and not self.graph.is_model(current):
            if current in copies:
                return current
            current = self.nodes[current].get("parent")
        return None

    @lazy
    def inferred_unbridged_nodes(self) -> list[int]:
        """Model nodes whose prompt passes a re-tokenized copy since the previous model node."""
        if not self.copy_set:
            return []
        return [node["id"] for node in self.nodes
                if node["author"] == "model" and self.prompt_copy(node["id"]) is not None]

    @lazy
    def flags(self) -> list[str]:
        d = self.document
        token_blocked = [p for p in self.paths if p.token_blocked]
        found = {
            "malformed-record": bool(self.record_problems),
            "tokens-missing": "tokens" in self.missing_sidecars,
            "failed-calls": bool(d.get("failures")),
            "incomplete": d.get("ended") is False or d["status"] == "open",
            "no-logprobs": any(p.trainable_count > p.logprob_count for p in token_blocked),
            "unbridged": bool(self.unbridged_nodes),
            "unbridged-inferred": self.bridged[ABSENT] > 0 and bool(self.inferred_unbridged_nodes),
            "re-tokenized": bool(self.retokenized_nodes),
            "replayed": any(b.kind == "replayed" for p in self.paths for b in p.blocks),
            "no-train": any(sample.trainable == 0 for sample in self.samples)  # None (no tokens): no verdict
            or (self.graph.samples_recorded and bool(self.nodes) and not any(p.info.trains for p in self.paths)),
            "empty": not self.nodes,
            "truncated": bool(self.truncated_nodes) or any(p.stop_reason == "length" for p in self.paths),
            "abandoned": d["status"] == "abandoned",
            "forked": len(self.paths) > 1,
            "bridged-unknown": self.bridged[ABSENT] > 0,
        }
        return ordered([*(name for name, on in found.items() if on), *self.sidecar_flags])

    @property
    def unit(self) -> str:
        """What `tokens` counts: tokens when every path has them, else characters."""
        if not self.paths:
            return "tokens" if self.mode == "tokens" else "chars"
        return "tokens" if all(p.token_blocked for p in self.paths) else "chars"

    @property
    def training_paths(self) -> list[PathView]:
        """The paths the trainer gets as samples: the record's rows (every path under the `all` rule)."""
        return [p for p in self.paths if p.info.trains]

    @lazy
    def samples(self) -> list[Sample]:
        """What the trainer gets, one `Sample` per row of the record's `samples` (per trained path under
        the viewer's `all` rule)."""
        if not self.graph.samples_recorded:
            return [Sample(p.info.index, p.info.index, p.info.leaf, tuple(p.info.targets), p.size,
                           p.trainable_count if p.token_blocked else None) for p in self.training_paths]
        samples = []
        for row in self.graph.sample_rows:
            path = self.paths[row.path]
            size = path.size if row.leaf == path.info.leaf else \
                max((block.end for block in path.blocks if block.node == row.leaf), default=0)
            trainable = sum(sampled_tokens(self.nodes[t]) for t in row.targets) if path.token_blocked else None
            samples.append(Sample(row.number, row.path, row.leaf, tuple(row.targets), size, trainable))
        return samples

    @lazy
    def samples_by_path(self) -> dict[int, list[Sample]]:
        """The samples each path carries (a path that carries none is not in it)."""
        carried: dict[int, list[Sample]] = {}
        for sample in self.samples:
            carried.setdefault(sample.path, []).append(sample)
        return carried

    @property
    def tokens(self) -> int:
        """The samples' sizes added up (what the trainer gets): tokens, or characters without tokens."""
        return sum(sample.size for sample in self.samples)

    @property
    def trainable(self) -> int | None:
        """The tokens in the loss, over every sample; None without tokens (nothing to count it in), 0 for a
        record with no nodes (nothing could train)."""
        if not self.nodes:
            return 0
        if self.unit != "tokens":
            return None
        return sum(sample.trainable or 0 for sample in self.samples)

    @property
    def longest(self) -> int:
        """The longest path's size, sample or not."""
        return max((p.size for p in self.paths), default=0)
