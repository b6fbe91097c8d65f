"""The Chat tab's answer: one path read as a conversation, a card per message, in parts.

Each card is one node of the path: its message as the document holds it (a message bigger than a
part is a placeholder with its size; `/message?node=` has it whole), who wrote it, and for a model
turn what its calls and the trainer made of it on this path, so "what it did" and "what trained"
stay side by side. What the viewer derives (the lowest logprob of a turn's sampled tokens) is named
as derived by the key it comes under; the rest is what the record says.
"""

from bisect import bisect_right

from skycap_viewer.record.blocks import sampled_kind, sampled_tokens
from skycap_viewer.record.fields import is_finite_number, iso_time, wire_id
from skycap_viewer.record.forks import trajectory_forks
from skycap_viewer.record.media import node_media
from skycap_viewer.record.rollout import PathView
from skycap_viewer.views.record.row import chosen_path, last_tools, path_facts
from skycap_viewer.views.record.trajectory import (
    MEDIA_IN_NODE,
    SERVED_PARTS,
    PartLimit,
    RecordView,
    call_duration_ms,
    check_start,
    node_chars,
    part_of,
    window,
    without_message,
)


def chat_part(view: RecordView, path_index: int, start: int = 0, limit: PartLimit = SERVED_PARTS) -> dict:
    """The cards of path `path_index` from its `start`-th node; the first part also says what names the
    path, where it leaves an earlier one, and the tools its last call was sent with. Raises ApiError
    404 for a path there is not, ValueError for a start there is not."""
    path = chosen_path(view, path_index)
    ids = path.info.nodes
    check_start(start, len(ids))
    failed = failures_on_path(view, path)
    edited = {fork.node_id: fork.detail for fork in trajectory_forks(view.document) if fork.kind == "edited reply"}
    cards, end, _ = window(lambda p: card(view, path, p, failed, edited), start, len(ids), limit,
                           placeholder=without_message)
    answer = {"cards": cards, "part": part_of(start, end, len(ids))}
    if start:
        return answer
    return {**path_facts(view, path), "unit": "tokens" if path.token_blocked else "chars",
            "mode": view.rollout.mode, "node_count": len(ids), "fork": fork_facts(view, path),
            "tools": last_tools(view, ids), "pairs": tool_pairs(view, ids), **answer}


def card(view: RecordView, path: PathView, position: int, failed: dict, edited: dict) -> dict:
    """One node of the path as a card: its message, author and node id; for a model turn, its calls,
    how the trainer took it on this path, the sampled tokens' lowest logprob and whether a call of it was
    unbridged; for an assistant message the client wrote, what copy it is; and where its tokens do not
    hold its message's texts, the tokens' text (what the trainer saw)."""
    node_id = path.info.nodes[position]
    node = view.rollout.nodes[node_id]
    slices = node.get("tokens")
    entry = {
        "node_id": wire_id(node_id),
        "position": position,
        "role": node.get("role"),
        "author": node["author"],
        "size": slices["length"] if path.token_blocked and slices else node_chars(node),
        "message": node.get("message"),
    }
    if node["author"] == "model":
        entry.update(training(path, node_id), sampled=sampled_tokens(node) if slices else None,
                     calls=[call_facts(call) for call in node.get("calls") or []],
                     lowest_logprob=lowest_logprob(view, node), unbridged=unbridged(view, node_id))
    elif node.get("role") == "assistant":
        entry["copy"] = copy_kind(view, node, edited)
    if path.token_blocked:
        entry.update(tokens_differ(view, node))
    if node_id in failed:
        entry["failures"] = failed[node_id]
    if media := node_media(node, 0, MEDIA_IN_NODE):
        entry["media"] = media  # the Path tab's labels: its image parts are named by them, in order
    return entry


def unbridged(view: RecordView, node_id: int) -> str | None:
    """"unbridged" when a call of the model turn re-rendered its prompt from messages (`bridged: false`),
    "inferred" when an old record's history passes a re-tokenized copy (the Tree's signs), else None."""
    signs = view.signs
    return "unbridged" if node_id in signs["unbridged"] else "inferred" if node_id in signs["inferred_unbridged"] \
        else None


def copy_kind(view: RecordView, node: dict, edited: dict) -> dict:
    """What an assistant message the client wrote is, as the Path tab and the Tree mark it: a `re-tokenized`
    copy of model node `of` (the template rendered the reply to other tokens), an `edited` reply (`detail`:
    what the harness changed, as the fork says), else `replayed` (an assistant turn the model did not
    sample here)."""
    if node["id"] in view.rollout.copy_set:
        return {"kind": "re-tokenized", "of": wire_id(node["shadowed_by"])}
    if node["id"] in edited:
        return {"kind": "edited", "detail": edited[node["id"]]}
    return {"kind": "replayed"}


def message_pieces(message) -> list[tuple[str, str]]:
    """(what, text) of a message's reasoning and text content: what its tokens should hold."""
    if not isinstance(message, dict):
        return []
    pieces = [("reasoning", message[key]) for key in ("reasoning_content", "reasoning")
              if isinstance(message.get(key), str)]
    content = message.get("content")
    parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    for part in parts:
        text = part if isinstance(part, str) else part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str):
            pieces.append(("text", text))
    return pieces


def tokens_differ(view: RecordView, node: dict) -> dict:
    """Where the node's tokens do not hold its message (the template dropped the reasoning, a re-rendered
    prompt): `not_in_tokens`, which texts of the message its tokens' text lacks, and `token_text`, that
    text, which is what the trainer saw; nothing when they hold it all or the tokens are not read."""
    slices, tokens = node.get("tokens"), view.tokens[0]
    text = tokens.shown_text(slices) if slices and tokens is not None else None
    if text is None:
        return {}
    missing = sorted({what for what, piece in message_pieces(node.get("message")) if piece.strip() not in text})
    return {"not_in_tokens": missing, "token_text": text} if missing else {}


def training(path: PathView, node_id: int) -> dict:
    """How this path trains a model turn, as its blocks say (`sampled_kind`): `trained` (in its loss),
    `trained_in` (the path whose loss has it instead: train-once), or neither (sampled, in no loss);
    `in_samples`, whether the trainer got this path as a sample at all."""
    kind, trained_in = sampled_kind(path.info, node_id)
    return {"trained": kind == "sampled", "trained_in": trained_in, "in_samples": path.info.trains}


def call_facts(call: dict) -> dict:
    """What a card says of one call: its finish reason, model, duration, usage and start."""
    return {"finish_reason": call.get("finish_reason"), "model": call.get("model"),
            "duration_ms": call_duration_ms(call), "usage": call.get("usage"),
            "started_at": iso_time(call.get("t_start"))}


def lowest_logprob(view: RecordView, node: dict) -> float | None:
    """The lowest logprob among the node's sampled tokens (derived by the viewer), None without them:
    text mode, no logprobs recorded, or the tokens sidecar not read."""
    slices = node.get("tokens")
    tokens = view.tokens[0] if slices and slices.get("has_logprobs") else None
    if tokens is None:
        return None
    sampled = tokens.logprobs_of(slices)[slices.get("sampled_start") or 0:]
    known = [value for value in sampled if value is not None]
    return min(known) if known else None


def failures_on_path(view: RecordView, path: PathView) -> dict[int, list]:
    """The record's failed calls on the path's cards: each on the node its history ended at
    (`input_leaf`), or, when the record does not say (`input_leaf` null), on the path's last node
    created by the time it failed (`placed: "by time"`, the viewer's placing), with `later`: the client
    messages recorded after that node, up to the next model turn, which its request may have carried too
    (a tool's results, recorded once they came); a failure whose node is on another path is not on this one."""
    ids = path.info.nodes
    nodes = view.rollout.nodes
    times = [created if is_finite_number(created := nodes[n].get("created_at")) else 0.0 for n in ids]
    on_path = set(ids)
    found: dict[int, list] = {}
    for failure in view.document.get("failures") or []:
        leaf, placed = failure.get("input_leaf"), "input_leaf"
        if not isinstance(leaf, int) or isinstance(leaf, bool):
            when = failure.get("t")
            if not ids or not is_finite_number(when):
                continue
            at = max(0, bisect_right(times, when) - 1)
            leaf, placed = ids[at], "by time"
        if leaf in on_path:
            entry = {"status": failure.get("status"), "error": failure.get("error"), "at": iso_time(failure.get("t")),
                     "placed": placed}
            if placed == "by time":
                entry["later"] = later_messages(view, ids, at)
            found.setdefault(leaf, []).append(entry)
    return found


def later_messages(view: RecordView, ids: list[int], at: int) -> list[str]:
    """The client messages after position `at` of the path, up to its next model turn."""
    later = []
    for node_id in ids[at + 1:]:
        if view.rollout.nodes[node_id]["author"] == "model":
            break
        later.append(wire_id(node_id))
    return later


def tool_pairs(view: RecordView, ids: list[int]) -> list[dict]:
    """Each tool call of the path with its result, paired in path order (ids repeat: skycap's renderer names
    every parsed call `call_0`): a result answers the nearest earlier call with its id, the first of that
    message's calls with the id still unanswered; a call's result is the first later result naming it before
    the id is called again. One pair per call (`result_node_id` null: none on the path), one per result that
    answers no call (`call_node_id` null), and one more for a call answered twice. The whole path's, in the
    first part: a link reaches a card of a later part."""
    pairs: list[dict] = []
    latest: dict[str, list[dict]] = {}  # a tool-call id -> the pairs of the last message that called it
    for node_id in ids:
        message = view.rollout.nodes[node_id].get("message")
        if not isinstance(message, dict):
            continue
        answers = message.get("tool_call_id")
        if isinstance(answers, str):
            calls = latest.get(answers)
            pair = next((p for p in calls or [] if p["result_node_id"] is None), None)
            if pair is not None:
                pair["result_node_id"] = wire_id(node_id)
            else:
                pairs.append({"tool_call_id": answers, "call_node_id": calls[-1]["call_node_id"] if calls else None,
                              "call_index": calls[-1]["call_index"] if calls else None,
                              "result_node_id": wire_id(node_id)})
        called: dict[str, list[dict]] = {}
        for index, call in enumerate(message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []):
            call_id = call.get("id") if isinstance(call, dict) else None
            if isinstance(call_id, str):
                pair = {"tool_call_id": call_id, "call_node_id": wire_id(node_id), "call_index": index,
                        "result_node_id": None}
                pairs.append(pair)
                called.setdefault(call_id, []).append(pair)
        latest.update(called)
    return pairs


def fork_facts(view: RecordView, path: PathView) -> dict | None:
    """Where the path leaves an earlier one: that path's index, the last shared node and how many nodes
    they share (the Chat tab folds them); None for path 0 and a path from a new root."""
    info = path.info
    if info.fork_from is None:
        return None
    earlier = next(p.info.index for p in view.rollout.paths[:info.index] if info.fork_from in p.info.nodes)
    return {"path": earlier, "last_shared": wire_id(info.fork_from), "shared_nodes": info.shared_nodes}

