"""Records made for the search tests, and the text a search reaches in each node, rebuilt here from the
rule in docs/api.md (the decoded tokens where there are any, else the message's text)."""

import json
import math
import struct
from pathlib import Path

from skycap_viewer.demo.writer import RecordBuilder
from skycap_viewer.record.frames import decompress_one_frame

CATASTROPHIC = "tr_catastrophic"
MADE = {  # record id -> (client text, model text, replayed assistant text)
    "tr_made_1": ("Straße und STRASSE", "the Answer is 42", "answer: edited"),
    "tr_made_2": ("İstanbul or ISTANBUL", "no match here", "ANSWER 7"),
    "tr_made_3": ("escape \x1b[31mred\x1b[0m answer", "plain", "also plain"),
}


def made_record(directory: Path, record_id: str, client: str, model: str, replayed: str, step: int):
    builder = RecordBuilder(record_id, mode="text", meta={"step": step, "task_id": f"task-{step}"})
    system = builder.add_client(None, "system", "You are terse.")
    user = builder.add_client(system, "user", client)
    call = builder.add_model(user, message={"role": "assistant", "content": None, "reasoning_content": "think: answer",
                                            "tool_calls": [{"id": "c1", "type": "function", "function": {
                                                "name": "lookup_answer", "arguments": '{"q": "answer"}'}}]})
    tool = builder.add_client(call, "tool", message={"role": "tool", "tool_call_id": "c1", "content": "tool answer"})
    reply = builder.add_model(tool, model)
    edited = builder.add_client(reply, "assistant", replayed)  # a replayed assistant turn
    builder.add_client(edited, "user", "thanks")
    builder.write(directory)


def shown_only_record(directory: Path, record_id: str):
    """A token record whose shown text holds what its messages do not: a client turn rendered to other text, with
    characters that fold into ASCII (the Kelvin sign, a long s) and a word whose first character is two tokens
    (its first piece empty); and a reply whose text the tokens spell in capitals."""
    builder = RecordBuilder(record_id, meta={"step": 0, "task_id": "task-shown"})
    user = builder.add_client(None, "user", "plain question", pieces=[
        (1, "\u212aelvin "), (2, "\u017ftra\u00dfe "), (3, ""), (4, "\u00e9clair "), (5, "Zebra")])
    builder.add_model(user, "quiet reply", pieces=[(6, "QUIET "), (7, "REPLY "), (8, "ZEBRA")])
    builder.write(directory)


def raw_text(message) -> str:
    """A message's searched text, rebuilt from the rule in docs/api.md."""
    if not isinstance(message, dict):
        return "" if message is None else str(message)
    parts = [message[key] for key in ("reasoning_content", "reasoning") if isinstance(message.get(key), str)
             and message[key]]
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts += [p.get("text") if isinstance(p.get("text"), str) else f"[{p.get('type', 'part')}]"
                  if isinstance(p, dict) else p for p in content if isinstance(p, (dict, str))]
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        parts.append(f"{function.get('name', '?')}({function.get('arguments', '')})")
    return "\n".join(parts)


def decoded_texts(directory: Path, document: dict) -> dict:
    """node id -> the text its tokens decode to, from its first token on (what the Path tab shows),
    read from the tokens sidecar with `struct`; {} without a readable one."""
    manifest = (document.get("sidecars") or {}).get("tokens")
    try:
        payload = decompress_one_frame((directory / manifest["file"]).read_bytes())
        spec = manifest["arrays"]
        text_at = spec["text"]["offset"]
        text = payload[text_at : text_at + math.prod(spec["text"]["shape"])]
        count = math.prod(spec["text_offsets"]["shape"])
        starts = struct.unpack_from(f"<{count}i", payload, spec["text_offsets"]["offset"])
        shown = {}
        for node in document["nodes"]:
            slices = node.get("tokens")
            if slices and slices.get("text_offset") is not None:
                raw = text[slices["text_offset"] : slices["text_offset"] + slices["text_bytes"]]
                first = starts[slices["offset"]] if slices["length"] else len(raw)
                shown[node["id"]] = raw[first:].decode("utf-8")
        return shown
    except Exception:  # noqa: BLE001 - no sidecar, or a damaged one: the message text is searched
        return {}


def raw_nodes(directory: Path, within: str = "shown") -> dict:
    """(record id, "n<id>") -> (text, role, kind, in) for every readable document in `directory`."""
    nodes = {}
    for path in sorted(directory.glob("*.json.zst")):
        try:
            document = json.loads(decompress_one_frame(path.read_bytes()))
            listed = document["nodes"]
        except Exception:  # noqa: BLE001 - an unreadable fixture is not searched
            continue
        record_id = path.name[: -len(".json.zst")]
        shown = decoded_texts(directory, document) if within == "shown" else {}
        for node in listed:
            kind = "sampled" if node["author"] == "model" else (
                "replayed" if node.get("role") == "assistant" else "given")
            text, source = (shown[node["id"]], "tokens") if node["id"] in shown else (
                raw_text(node.get("message")), "message")
            nodes[record_id, f"n{node['id']}"] = (text, node.get("role"), kind, source)
    return nodes
