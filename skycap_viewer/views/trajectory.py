"""The answers about one record, shared by the HTTP server and `skycap-viewer show --json`.

One builder per API shape, so the terminal and the page can never disagree about what a
rollout's paths are; the page draws what these say and derives none of it again. Node ids go
on the wire as `"n<id>"` (`fields.wire_id`).
"""

from itertools import accumulate

from skycap_viewer.errors import RecordError
from skycap_viewer.record.blocks import Block, message_text, sampled_tokens, utf16_length
from skycap_viewer.record.fields import is_finite_number, iso_time, wire_id
from skycap_viewer.record.forks import Fork, trajectory_forks
from skycap_viewer.record.header import trajectory_header
from skycap_viewer.record.rollout import ABSENT, PathView, Rollout, bridged_value
from skycap_viewer.record.sidecars import TokenData, read_tokens

BLOCKING = "mask+turns"  # token-blocked paths are cut on the loss mask and on node boundaries


def node_payload(node: dict, tokens: TokenData | None) -> dict:
    """One node's text, and its token ids/logprobs/offsets when the tokens sidecar is read."""
    slices = node.get("tokens")
    entry = {
        "node_id": wire_id(node["id"]),
        "role": node.get("role"),
        "author": node["author"],
        "sampled_start": slices.get("sampled_start") if slices else None,
        "has_logprobs": bool(slices.get("has_logprobs")) if slices else None,
        "text": None,
        "token_ids": None,
        "logprobs": None,
        "token_offsets": None,
    }
    if tokens is None or slices is None:
        entry["text"] = message_text(node.get("message"))
        return entry
    entry["token_ids"] = tokens.ids(slices)
    entry["logprobs"] = tokens.logprobs_of(slices)
    raw = tokens.text_bytes(slices)
    if raw is not None:
        starts = tokens.text_offsets[slices["offset"] : slices["offset"] + slices["length"]].tolist()
        entry["text"], entry["token_offsets"] = text_and_offsets(raw, starts)
    return entry


UTF16_UNITS = bytes(0 if 0x80 <= b < 0xC0 else 2 if b >= 0xF0 else 1 for b in range(256))  # per UTF-8 byte


def text_and_offsets(raw: bytes, starts: list[int]) -> tuple[str, list[int]]:
    """A node's text (its tokens' pieces joined) and each token's UTF-16 offset into it, plus the end.

    `read_tokens` has checked that every start is a character boundary, so the text decodes
    once instead of per token; for ASCII text (most of it) UTF-16 offsets are the byte offsets."""
    first = starts[0] if starts else len(raw)
    text = raw[first:].decode("utf-8")
    if text.isascii():
        return text, [start - first for start in starts] + [len(raw) - first]
    units = [0, *accumulate(raw.translate(UTF16_UNITS))]  # UTF-16 units before each byte offset
    return text, [units[start] - units[first] for start in starts] + [units[len(raw)] - units[first]]


def block_payload(block: Block, node_start: int, token_blocked: bool) -> dict:
    entry = {
        "kind": block.kind,
        "role": block.role,
        "author": block.author,
        "node_id": wire_id(block.node),
        "trainable": block.trainable,
        "start": block.start,
        "end": block.end,
        "token_count" if token_blocked else "char_count": block.size,
        "node_start": node_start,
        "node_end": node_start + block.size,
    }
    if block.kind == "sampled-elsewhere":
        entry["trained_in"] = block.trained_in
    return entry


def path_payload(record_id: str, path: PathView, nodes: list[dict], chars: list[int] | None = None) -> dict:
    """One path's summary and blocks; `chars` (each node's `node_chars`) saves measuring every shared
    node's text again for each of a forked rollout's paths."""
    info = path.info
    node_starts: dict[int, int] = {}
    blocks = []
    for block in path.blocks:
        first = node_starts.setdefault(block.node, block.start)
        blocks.append(block_payload(block, block.start - first, path.token_blocked))
    return {
        "path_id": f"{record_id}-p{info.index:04d}",
        "index": info.index,
        "node_ids": [wire_id(n) for n in info.nodes],
        "leaf_node_id": wire_id(info.leaf),
        "fork_from": wire_id(info.fork_from),
        "diverges_at": wire_id(info.diverges_at),
        "shared_nodes": info.shared_nodes,
        "targets": [wire_id(n) for n in info.targets],
        "abandoned": False,
        "masked_reason": None,
        "stop_reason": path.stop_reason,
        "trains": info.trains,
        "unit": path.unit,
        "token_count": path.token_count,
        "char_count": path.char_count,
        "trainable_count": path.trainable_count,
        "blocking": BLOCKING if path.token_blocked else None,
        "logprob_count": path.logprob_count,
        "messages": [
            {
                "role": nodes[n].get("role"),
                "author": nodes[n]["author"],
                "chars": node_chars(nodes[n]) if chars is None else chars[n],
            }
            for n in info.nodes
        ],
        "blocks": blocks,
    }


def paths_payload(directory, document: dict, present_names, file_id: str | None, text: bool = True,
                  **context) -> dict:
    """The `/v1/trajectories/{id}/paths` answer for one record.

    `present_names` is the set of file names in `directory` (tells a mirror's absent sidecar
    from a present one). With `text=False` no sidecar is opened: blocks carry kinds and
    ranges only, taken from the document. With text, a damaged tokens sidecar does not hide
    the record: it is shown from message text, `text_only: "tokens-unreadable"`, with the
    error in `tokens_error`. `context` (run_id, project, ...) is merged into the header.
    """
    present = set(present_names)
    rollout = Rollout(document, present, file_id)
    header = trajectory_header(rollout, **context)  # the record's own flags, as the index has them
    tokens, tokens_error, shown = None, None, rollout
    if text and rollout.text_only is None:
        try:
            tokens = read_tokens(directory, document)
        except RecordError as error:
            tokens_error = str(error)
            shown = Rollout(document, present, file_id)
            shown.text_only = "tokens-unreadable"  # set before its paths are built: message text only
    payload = {
        "trajectory": header,
        "mode": rollout.mode,
        "text_only": shown.text_only,
        "tokenizer": (document.get("capture") or {}).get("tokenizer"),
    }
    if tokens_error is not None:
        payload["tokens_error"] = tokens_error
    if text:
        payload["nodes"] = {wire_id(n["id"]): node_payload(n, tokens) for n in rollout.nodes}
    record_id = file_id or document["id"]  # the id the record is looked up by
    chars = [node_chars(node) for node in rollout.nodes]
    payload["paths"] = [path_payload(record_id, path, rollout.nodes, chars) for path in shown.paths]
    return payload


# -- the record's graph, its calls, and two paths compared (server routes) -------------------


def node_chars(node: dict) -> int:
    """A node's message text length in UTF-16 units (what the page's strings count)."""
    return utf16_length(message_text(node.get("message")))


def train_once(rollout: Rollout) -> dict:
    """Does any model node sit in the loss of more than one path? And which train on none?

    Under the `all` rule every model node trains exactly once; a record's own samples may leave
    some out on purpose (`final` trains one path), so those are listed, not counted as a breach."""
    trained = {}
    for path in rollout.graph.paths:
        for node_id in path.targets:
            trained.setdefault(node_id, []).append(path.index)
    model_nodes = [n["id"] for n in rollout.nodes if n["author"] == "model"]
    violations = [{"node_id": wire_id(n), "paths": trained[n]} for n in model_nodes if len(trained.get(n, [])) > 1]
    return {
        "holds": not violations,
        "violations": violations,
        "untrained": [wire_id(n) for n in model_nodes if n not in trained],
        "model_nodes": len(model_nodes),
        "paths": len(rollout.graph.paths),
        "rule": rollout.graph.rule or "all",
        "rule_recorded": rollout.graph.samples_recorded,
    }


def graph_node(rollout: Rollout, node: dict, signs: dict) -> dict:
    slices = node.get("tokens")
    node_id = node["id"]
    return {
        "node_id": wire_id(node_id),
        "parent_node_id": wire_id(node.get("parent")),
        "depth": node.get("depth"),
        "role": node.get("role"),
        "author": node["author"],
        "token_count": slices["length"] if slices else None,
        "char_count": node_chars(node),
        "sampled_start": slices.get("sampled_start") if slices else None,
        "sampled_token_count": sampled_tokens(node),
        "has_logprobs": bool(slices and slices.get("has_logprobs")),
        "created_at": iso_time(node.get("created_at")),
        "shadowed_by": wire_id(node.get("shadowed_by")),
        "match_hash": node.get("match_hash"),
        "delta_hash": node.get("delta_hash"),
        "calls": [{**call, "bridged": bridged_value(call), "duration_ms": call_duration_ms(call)}
                  for call in node.get("calls") or []],
        "child_ids": [wire_id(child) for child in rollout.graph.children[node_id]],
        "trained_in": rollout.graph.trained_in.get(node_id),
        "signs": {name: node_id in members for name, members in signs.items()},
        "message": node.get("message"),
    }


def fork_payload(fork: Fork) -> dict:
    """One fork as the wire has it: node ids as `"n<id>"`, `parent_id` null for a new root."""
    return {"node_id": wire_id(fork.node_id), "parent_id": wire_id(fork.parent_id),
            "sibling_id": wire_id(fork.sibling_id), "kind": fork.kind, "detail": fork.detail}


def graph_payload(document: dict, present_names, file_id: str | None, **context) -> dict:
    """The `/graph` answer: every node once, leaves, branch points, each fork named as skycap's
    `check` names it, and the train-once check."""
    rollout = Rollout(document, set(present_names), file_id)
    graph = rollout.graph
    signs = {
        "unbridged": set(rollout.unbridged_nodes),
        "inferred_unbridged": set(rollout.inferred_unbridged_nodes) if rollout.bridged[ABSENT] else set(),
        "retokenized": set(rollout.retokenized_nodes),
    }
    return {
        "trajectory": trajectory_header(rollout, **context),
        "nodes": [graph_node(rollout, node, signs) for node in rollout.nodes],
        "root_node_ids": [wire_id(n) for n in graph.roots],
        "leaf_node_ids": [wire_id(n) for n in graph.leaves],
        "branch_points": [
            {"node_id": wire_id(n), "child_count": len(graph.children[n]),
             "child_ids": [wire_id(c) for c in graph.children[n]]}
            for n in graph.branch_points
        ],
        "forks": [fork_payload(fork) for fork in trajectory_forks(document)],
        "train_once": train_once(rollout),
    }


def exchanges_payload(document: dict) -> dict:
    """The `/exchanges` answer: every model call and every failed call, in time order."""
    rows = []
    for node in document["nodes"]:
        for call in node.get("calls") or []:
            start = call.get("t_start")
            rows.append((start, {
                "kind": "call",
                "node_id": wire_id(node["id"]),
                "model": call.get("model"),
                "started_at": iso_time(start),
                "duration_ms": call_duration_ms(call),
                "completion_reason": call.get("finish_reason"),
                "bridged": bridged_value(call),
                "usage": call.get("usage"),
                "sampling": call.get("sampling") or {},
                "tools": call.get("tools"),
            }))
    for failure in document.get("failures") or []:
        rows.append((failure.get("t"), {
            "kind": "failure",
            "node_id": wire_id(leaf) if isinstance(leaf := failure.get("input_leaf"), int) else None,
            "started_at": iso_time(failure.get("t")),
            "http_status": failure.get("status"),
            "error": failure.get("error"),
        }))
    rows.sort(key=lambda item: (not _is_time(item[0]), item[0] if _is_time(item[0]) else 0))
    return {"data": [{**row, "sequence": index} for index, (_, row) in enumerate(rows)]}


def _is_time(value) -> bool:
    return is_finite_number(value)


def call_duration_ms(call: dict):
    """How long a call took, from its `t_start` and `t_end`, or None when either is not a time."""
    start, end = call.get("t_start"), call.get("t_end")
    return round((end - start) * 1000, 3) if _is_time(start) and _is_time(end) else None


def forks_payload(document: dict, present_names, file_id: str | None, a: int, b: int) -> dict:
    """The `/forks` answer: where paths `a` and `b` agree, and each one's blocks after that.

    Raises IndexError when a path does not exist. Blocks are `/paths` blocks, so the page
    takes their text from the `/paths` nodes."""
    rollout = Rollout(document, set(present_names), file_id)
    paths = rollout.paths
    if not (0 <= a < len(paths) and 0 <= b < len(paths)):
        raise IndexError(f"the trajectory has {len(paths)} path(s)")
    view_a, view_b = paths[a], paths[b]
    nodes_a, nodes_b = view_a.info.nodes, view_b.info.nodes
    shared = 0
    while shared < min(len(nodes_a), len(nodes_b)) and nodes_a[shared] == nodes_b[shared]:
        shared += 1
    shared_ids = {wire_id(n) for n in nodes_a[:shared]}
    blocks_a = path_payload(document["id"], view_a, rollout.nodes)["blocks"]
    blocks_b = path_payload(document["id"], view_b, rollout.nodes)["blocks"]
    shared_size = sum(block["end"] - block["start"] for block in blocks_a if block["node_id"] in shared_ids)
    last = rollout.nodes[nodes_a[shared - 1]] if shared else None
    return {
        "a": a,
        "b": b,
        "unit": view_a.unit,
        "shared_nodes": shared,
        "last_shared_node_id": wire_id(last["id"]) if last else None,
        "last_shared": {"role": last.get("role"), "author": last["author"]} if last else None,
        "shared_tokens": shared_size if view_a.token_blocked else None,
        "shared_chars": sum(node_chars(rollout.nodes[n]) for n in nodes_a[:shared]),
        "a_node_id_first": wire_id(nodes_a[shared]) if shared < len(nodes_a) else None,
        "b_node_id_first": wire_id(nodes_b[shared]) if shared < len(nodes_b) else None,
        "shared_blocks": [block for block in blocks_a if last and block["node_id"] == wire_id(last["id"])],
        "a_blocks": [block for block in blocks_a if block["node_id"] not in shared_ids],
        "b_blocks": [block for block in blocks_b if block["node_id"] not in shared_ids],
        "a_nodes_after": len(nodes_a) - shared,
        "b_nodes_after": len(nodes_b) - shared,
        "train_once": train_once(rollout),
    }
