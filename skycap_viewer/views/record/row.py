"""One path taken away whole: the trainer's row, and the chat the model saw (a bug report's attachments).

The row is the path's `input_ids`, its `loss_mask` and its rollout `logprobs`, put together from
the same blocks the Path tab draws (`RecordView.node_blocks`), so it trains exactly what the page
says trains: 1 on the `sampled` blocks, whichever rule the record's `samples` ran. The chat is the
path's nodes' `message` objects as the document holds them. Each answer is one whole path, never
cut: past its limit it is refused (413) with the limit named.
"""

import sys

from skycap_viewer.errors import ApiError
from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.rollout import PathView
from skycap_viewer.views.record.trajectory import PartLimit, RecordView, samples_said, window

ROW_TOKENS = 2**20  # tokens in one row: up to about 30 MB of JSON, a 1M-token context's whole path
MESSAGES_BYTES = 32 * 2**20  # of encoded messages in one chat answer
TEXT_ONLY_WHY = {
    "tokens-missing": "its tokens sidecar is listed but not in this directory (a mirror that left it out?)",
    "tokens-unlisted": "its nodes slice a tokens sidecar the manifest does not list",
    "tokens-unreadable": "its tokens sidecar is damaged",
}
SIDECAR_FIELDS = {"experts": "routed_experts", "sampling_mask": "sampling_mask"}  # sidecar kind -> sample field


def chosen_path(view: RecordView, path: int) -> PathView:
    """The record's path `path`; 404 for one it does not have (as `/paths?path=` answers)."""
    paths = view.rollout.paths
    if not 0 <= path < len(paths):
        raise ApiError(404, f"no such path: the trajectory has {len(paths)} path(s), not path {path}")
    return paths[path]


def path_facts(view: RecordView, path: PathView) -> dict:
    """What names the path, shared by both answers."""
    return {
        "trajectory_id": view.record_id,
        "path": path.info.index,
        "path_count": len(view.rollout.paths),
        "leaf_node_id": wire_id(path.info.leaf),
    }


def record_refusal(view: RecordView) -> str | None:
    """Why no path of the record has a token row (one line: text mode, a missing, unlisted or damaged
    tokens sidecar), or None."""
    rollout = view.rollout
    if rollout.mode == "text":
        return "the record was captured in text mode (no token ids)"
    if rollout.text_only is not None:
        return TEXT_ONLY_WHY[rollout.text_only]
    return view.tokens[1]


def refusal(view: RecordView, path: PathView) -> str | None:
    """Why the path has no token row (one line), or None when it has one."""
    why = record_refusal(view)
    if why is None and not path.token_blocked:
        bare = next(n for n in path.info.nodes if view.rollout.nodes[n].get("tokens") is None)
        why = f"node {wire_id(bare)} on it has no tokens (the trainer gets no token arrays)"
    return None if why is None else f"trajectory {view.record_id} path {path.info.index} has no token row: {why}"


def trainer_row(view: RecordView, path_index: int, limit: int = ROW_TOKENS) -> dict:
    """The `/paths/{n}/row` answer: the trainer's row of the path, with its blocks.

    Raises ApiError: 404 for a path there is not, 400 (the reason in one line) when the path has no
    token row (text mode, a missing or damaged tokens sidecar, a node without tokens), 413 past `limit`
    tokens: checked from the document, before the sidecar is read."""
    path = chosen_path(view, path_index)
    if path.token_blocked and path.size > limit:
        raise ApiError(413, f"trajectory {view.record_id} path {path_index} has {path.size:,} tokens, "
                            f"past the {limit:,} one row answer holds (the row limit)")
    why = refusal(view, path)
    if why is not None:
        raise ApiError(400, why)
    tokens, nodes = view.tokens[0], view.rollout.nodes
    input_ids, logprobs, loss_mask = [], [], [0] * path.size
    for node_id in path.info.nodes:
        slices = nodes[node_id]["tokens"]
        input_ids += tokens.ids(slices)
        logprobs += tokens.logprobs_of(slices)
    blocks = [block for position in range(len(path.info.nodes)) for block in view.node_blocks(path, position)]
    for block in blocks:
        if block["trainable"]:
            loss_mask[block["start"]:block["end"]] = [1] * (block["end"] - block["start"])
    graph = view.rollout.graph
    return {
        **path_facts(view, path),
        "rule": graph.rule or "all",
        "rule_recorded": graph.samples_recorded,
        "trains": path.info.trains,
        "samples_rows": samples_rows(view, path),
        "token_count": path.size,
        "trained_count": path.trainable_count,
        "input_ids": input_ids,
        "loss_mask": loss_mask,
        "logprobs": logprobs,
        "blocks": blocks,
        "not_included": not_included(view, path),
    }


def sample_rows(view: RecordView, path_index: int, limit: int = ROW_TOKENS) -> list[dict]:
    """The trainer's rows of the samples path `path_index` carries, one each, as `trainer_row` gives a
    path's (same errors): the path's row when it carries the one usual sample through its leaf (or
    none); else, per sample, `input_ids[:end]` through its leaf with the loss on its own targets only
    (`sample`: its row), exactly what skycap's sample builder gives for the recorded rows."""
    whole = trainer_row(view, path_index, limit)
    carried = view.rollout.samples_by_path.get(path_index, [])
    if not samples_said(view.rollout.paths[path_index], carried):
        return [whole]
    rows = []
    for sample in carried:
        targets = {wire_id(t) for t in sample.targets}
        blocks = [block for block in whole["blocks"] if block["end"] <= sample.size]
        loss_mask = [0] * sample.size
        for block in blocks:
            if block["trainable"] and block["node_id"] in targets:
                loss_mask[block["start"]:block["end"]] = [1] * (block["end"] - block["start"])
        rows.append({**whole, "sample": sample.number, "leaf_node_id": wire_id(sample.leaf),
                     "token_count": sample.size, "trained_count": sum(loss_mask),
                     "input_ids": whole["input_ids"][:sample.size], "loss_mask": loss_mask,
                     "logprobs": whole["logprobs"][:sample.size],
                     "blocks": [{**block, "trainable": block["trainable"] and block["node_id"] in targets}
                                for block in blocks]})
    return rows


def not_included(view: RecordView, path: PathView) -> list[str]:
    """The fields of skycap's sample (format §7) the record has for this path and the row leaves out."""
    fields = [field for kind, field in SIDECAR_FIELDS.items() if kind in view.rollout.listed_kinds]
    if any(view.rollout.nodes[n]["tokens"].get("media") for n in path.info.nodes):
        fields.append("media")
    return fields


def samples_rows(view: RecordView, path: PathView) -> list[dict] | None:
    """The record's `samples` rows this path carries, each with where its leaf ends in `input_ids`;
    None without samples (the viewer's `all` rule: the path is one sample). Usually one row ending at
    the path's leaf; a custom rule's row may end before it, or several rows share one path: the
    trainer got one sample per row, `input_ids[:end]` with the loss on that row's targets."""
    graph = view.rollout.graph
    if not graph.samples_recorded:
        return None
    ends, at = {}, 0
    for node_id in path.info.nodes:
        at += graph.nodes[node_id]["tokens"]["length"]
        ends[node_id] = at
    return [{"row": row.number, "leaf_node_id": wire_id(row.leaf), "targets": [wire_id(t) for t in row.targets],
             "end": ends[row.leaf]} for row in graph.sample_rows if row.path == path.info.index]


def path_messages(view: RecordView, path_index: int, limit: int = MESSAGES_BYTES) -> dict:
    """The `/paths/{n}/messages` answer: the path's messages in chat format, one per node, as the
    document holds them (tool calls, tool results and the model's replies included), with each
    one's node id and author beside it. Needs no sidecar. Raises ApiError: 404 for a path there is
    not, 413 when the messages pass `limit` bytes of JSON."""
    path = chosen_path(view, path_index)
    nodes = view.rollout.nodes
    ids = path.info.nodes
    messages, end, _ = window(lambda p: nodes[ids[p]].get("message"), 0, len(ids), PartLimit(sys.maxsize, limit))
    if end < len(ids):
        raise ApiError(413, f"trajectory {view.record_id} path {path_index}: its messages pass the {limit:,} "
                            "bytes of JSON one messages answer holds (the messages limit)")
    return {
        **path_facts(view, path),
        "tools": last_tools(view, ids),
        "node_ids": [wire_id(n) for n in ids],
        "authors": [nodes[n]["author"] for n in ids],
        "messages": messages,
    }


def last_tools(view: RecordView, ids: list[int]):
    """The tool list the path's last model call was sent with (the document's `tools`), or None."""
    for node_id in reversed(ids):
        calls = view.rollout.nodes[node_id].get("calls") or []
        if calls:
            key = calls[-1].get("tools")
            tools = view.document.get("tools") or {}
            return tools.get(key) if isinstance(key, str) and isinstance(tools, dict) else None
    return None
