"""The shape a v1 document must have before a graph can be built from it.

Only what the viewer relies on is required; unknown fields are ignored everywhere (the
format's rule), including inside calls and failures, where skycap's own reader is stricter.
"""

import re

PLAIN_FILE_NAME = re.compile(r"^[^/\\\x00]+$")
TOKEN_INT_FIELDS = ("offset", "length", "text_bytes", "experts_rows", "mask_rows")
TOKEN_OPTIONAL_INT_FIELDS = ("sampled_start", "text_offset", "experts_offset", "mask_offset")


def is_int(value) -> bool:
    return type(value) is int


def is_plain_file_name(name) -> bool:
    """A sidecar name must stay in the record's own directory: no separators, no `..`."""
    return isinstance(name, str) and bool(PLAIN_FILE_NAME.match(name)) and name not in (".", "..")


def check_structure(document: dict) -> str | None:
    """The first reason `document` cannot be read as v1, or None when it can."""
    for key, kind in (("id", str), ("status", str), ("nodes", list)):
        if key not in document:
            return f"no `{key}` field"
        if not isinstance(document[key], kind):
            return f"`{key}` is not a {kind.__name__}"
    for key in ("meta", "annotations", "capture", "tools", "sidecars", "retries"):
        if document.get(key) is not None and not isinstance(document[key], dict):
            return f"`{key}` is not an object"
    failures = document.get("failures")
    if failures is not None and not (
        isinstance(failures, list) and all(isinstance(f, dict) for f in failures)
    ):
        return "`failures` is not a list of objects"
    problem = _check_sidecar_manifest(document.get("sidecars") or {})
    if problem:
        return problem
    for index, node in enumerate(document["nodes"]):
        problem = _check_node(index, node)
        if problem:
            return f"node {index}: {problem}"
    return None


def _check_sidecar_manifest(sidecars: dict) -> str | None:
    for kind, manifest in sidecars.items():
        if not isinstance(manifest, dict):
            return f"sidecar `{kind}`: the manifest is not an object"
        if not is_plain_file_name(manifest.get("file")):
            return f"sidecar `{kind}`: file {manifest.get('file')!r} is not a plain file name in the record directory"
        arrays = manifest.get("arrays")
        if not isinstance(arrays, dict):
            return f"sidecar `{kind}`: `arrays` is not an object"
        for name, spec in arrays.items():
            if not isinstance(spec, dict):
                return f"sidecar `{kind}` array `{name}` is not an object"
            shape = spec.get("shape")
            if not (isinstance(shape, list) and all(is_int(n) and n >= 0 for n in shape)):
                return f"sidecar `{kind}` array `{name}`: shape {shape!r} is not a list of sizes"
            if not (is_int(spec.get("offset")) and spec["offset"] >= 0):
                return f"sidecar `{kind}` array `{name}`: offset {spec.get('offset')!r} is not a byte offset"
            if not isinstance(spec.get("dtype"), str):
                return f"sidecar `{kind}` array `{name}`: dtype is not a string"
    return None


def _check_node(index: int, node) -> str | None:
    """Runs for every node of every record at index time, hence the inlined type checks."""
    if type(node) is not dict:
        return "is not an object"
    node_id = node.get("id")
    if type(node_id) is not int or node_id != index:
        return f"id is {node_id!r}; nodes must be stored in creation order (nodes[i].id == i)"
    parent = node.get("parent")
    if parent is not None and not (type(parent) is int and 0 <= parent < index):
        return f"parent {parent!r} is not an earlier node"
    if node.get("author") not in ("client", "model"):
        return f"author {node.get('author')!r} is neither client nor model"
    role = node.get("role")
    if role is not None and type(role) is not str:
        return "role is not a string"
    calls = node.get("calls", [])
    if type(calls) is not list:
        return "calls is not a list of objects"
    for call in calls:  # a loop, not any(): most nodes hold one call or none, and a generator costs more
        if type(call) is not dict:
            return "calls is not a list of objects"
    shadowed_by = node.get("shadowed_by")
    if shadowed_by is not None and type(shadowed_by) is not int:
        return "shadowed_by is not a node id"
    tokens = node.get("tokens")
    if tokens is None:
        return None
    if type(tokens) is not dict:
        return "tokens is not an object"
    if "offset" not in tokens or "length" not in tokens:
        return "tokens has no offset/length"
    for field in TOKEN_INT_FIELDS:
        value = tokens.get(field, 0)
        if type(value) is not int or value < 0:
            return f"tokens.{field} {value!r} is not a count"
    for field in TOKEN_OPTIONAL_INT_FIELDS:
        value = tokens.get(field)
        if value is not None and (type(value) is not int or value < 0):
            return f"tokens.{field} {value!r} is not a count"
    start = tokens.get("sampled_start")
    if start is not None and start > tokens["length"]:
        return f"tokens.sampled_start {start} is past the node's {tokens['length']} tokens"
    return None
