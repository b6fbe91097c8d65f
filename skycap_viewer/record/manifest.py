"""Consistency of a document with its own sidecar manifest, from the document alone.

These problems leave the graph readable, so the viewer still shows the record, marked
`malformed-record`; none of them needs a sidecar opened, so the index can find them too.
"""

from skycap_viewer.record.media import media_problems
from skycap_viewer.record.schema import is_int

DTYPE_SIZES = {"uint8": 1, "uint16": 2, "int16": 2, "int32": 4, "int64": 8, "float64": 8}
EXPECTED_ARRAYS = {
    "tokens": {"token_ids": ("int32",), "logprobs": ("float64",), "text_offsets": ("int32",), "text": ("uint8",)},
    "experts": {"routed_experts": ("uint8", "uint16", "int16", "int32")},
    "sampling_mask": {"ids": ("int32",), "offsets": ("int64",)},
}


def listed_kinds(document: dict) -> set[str]:
    """Kinds the record captured: in the manifest, or named in a mirror's `omitted_sidecars`."""
    omitted = document.get("omitted_sidecars")
    omitted = {k for k in omitted if isinstance(k, str)} if isinstance(omitted, list) else set()
    return set(document.get("sidecars") or {}) | omitted


def token_nodes(document: dict) -> list[dict]:
    return [n for n in document["nodes"] if n.get("tokens") is not None]


def layout_problems(document: dict, file_id: str | None = None) -> list[str]:
    """Every way `document` disagrees with itself about its sidecars, as readable sentences."""
    problems = []
    if file_id is not None and document["id"] != file_id:
        problems.append(f"document id {document['id']!r} differs from its file name {file_id!r}")
    problems += _depth_problems(document["nodes"])
    sidecars = document.get("sidecars") or {}
    for kind, manifest in sidecars.items():
        problems += manifest_problems(kind, manifest)
        expected_name = f"{file_id or document['id']}.{kind}.zst"
        if manifest["file"] != expected_name:
            problems.append(f"{kind} sidecar is named {manifest['file']!r}, not {expected_name!r}")
    sliced = token_nodes(document)
    problems += _token_slice_problems(sliced, sidecars) + _side_channel_problems(document, sliced, sidecars)
    # most nodes hold no media (none, or skycap's `[]`): only the others pay for the check
    return problems + [problem for node in sliced if node["tokens"].get("media") not in (None, [])
                       for problem in media_problems(node)]


def _depth_problems(nodes: list[dict]) -> list[str]:
    problems = []
    for node in nodes:
        parent = node.get("parent")
        if parent is None:
            expected = 0
        else:
            parent_depth = nodes[parent].get("depth", 0)
            if not is_int(parent_depth):
                continue  # the parent's own depth is wrong and reported on its own line
            expected = parent_depth + 1
        if "depth" in node and node["depth"] != expected:
            problems.append(f"node {node['id']} has depth {node['depth']!r}, its parent says {expected}")
    return problems


def manifest_problems(kind: str, manifest: dict) -> list[str]:
    if kind not in EXPECTED_ARRAYS:
        return [f"unknown sidecar kind {kind!r}"]
    problems = []
    arrays = manifest["arrays"]
    for name, dtypes in EXPECTED_ARRAYS[kind].items():
        spec = arrays.get(name)
        if spec is None:
            problems.append(f"{kind} sidecar has no `{name}` array")
        elif spec["dtype"] not in dtypes:
            problems.append(f"{kind}.{name} has dtype {spec['dtype']!r}, expected {' or '.join(dtypes)}")
        elif spec["offset"] % 8:
            problems.append(f"{kind}.{name} starts at byte {spec['offset']}, not a multiple of 8")
    if kind == "tokens" and not problems:
        per_token = ("token_ids", "logprobs", "text_offsets")
        lengths = {arrays[n]["shape"][0] if arrays[n]["shape"] else None for n in per_token}
        if len(lengths) != 1:
            problems.append("tokens arrays token_ids, logprobs and text_offsets differ in length")
    return problems


def array_rows(sidecars: dict, kind: str, name: str) -> int | None:
    """The first dimension of a manifest array, or None when the manifest lacks it."""
    spec = (sidecars.get(kind) or {}).get("arrays", {}).get(name)
    if not spec or not spec["shape"]:
        return None
    return spec["shape"][0]


def token_layout_problems(document: dict) -> list[str]:
    """The problems that make the tokens sidecar unsafe to show: its manifest and the token slices."""
    sidecars = document.get("sidecars") or {}
    problems = manifest_problems("tokens", sidecars["tokens"]) if "tokens" in sidecars else []
    return problems + _token_slice_problems(token_nodes(document), sidecars)


def _token_slice_problems(sliced: list[dict], sidecars: dict) -> list[str]:
    """Token slices that do not tile the arrays or run past them; `sliced`: the nodes with tokens."""
    token_count = array_rows(sidecars, "tokens", "token_ids")
    text_size = array_rows(sidecars, "tokens", "text")
    problems, expected_offset = [], 0
    for node in sliced:
        t, nid = node["tokens"], node["id"]
        start, end = t["offset"], t["offset"] + t["length"]
        if start != expected_offset:
            problems.append(f"node {nid} tokens start at {start}, expected {expected_offset} (nodes tile the arrays)")
        expected_offset = end
        if token_count is not None and end > token_count:
            problems.append(f"node {nid} tokens [{start}, {end}) run past the {token_count} tokens")
        text_start, text_bytes = t.get("text_offset"), t.get("text_bytes", 0)
        if text_start is not None and text_size is not None and text_start + text_bytes > text_size:
            problems.append(
                f"node {nid} text [{text_start}, {text_start + text_bytes}) runs past the {text_size} text bytes"
            )
        if text_start is None and text_bytes:
            problems.append(f"node {nid} has {text_bytes} text bytes but no text_offset")
    if token_count is not None and "tokens" in sidecars and expected_offset != token_count and not problems:
        problems.append(f"token nodes cover {expected_offset} tokens, the tokens sidecar has {token_count}")
    return problems


def _side_channel_problems(document: dict, sliced: list[dict], sidecars: dict) -> list[str]:
    """Experts and sampling-mask rows past their arrays, and slices into kinds nobody listed."""
    listed = listed_kinds(document)
    expert_rows = array_rows(sidecars, "experts", "routed_experts")
    mask_offsets = array_rows(sidecars, "sampling_mask", "offsets")
    mask_rows = None if mask_offsets is None else max(mask_offsets - 1, 0)
    problems, unlisted = [], set()
    for node in sliced:
        t, nid = node["tokens"], node["id"]
        if "tokens" not in listed:
            unlisted.add("tokens")
        if t.get("experts_offset") is not None:
            if "experts" not in listed:
                unlisted.add("experts")
            elif expert_rows is not None and t["experts_offset"] + t.get("experts_rows", 0) > expert_rows:
                problems.append(f"node {nid} experts rows run past the {expert_rows} rows of routed_experts")
        if t.get("mask_offset") is not None and t.get("mask_rows", 0) > 0:
            if "sampling_mask" not in listed:
                unlisted.add("sampling_mask")
            elif mask_rows is not None and t["mask_offset"] + t["mask_rows"] > mask_rows:
                problems.append(f"node {nid} sampling-mask rows run past the {mask_rows} rows of the mask")
    return problems + [f"nodes slice the {kind} sidecar, which the manifest does not list" for kind in sorted(unlisted)]
