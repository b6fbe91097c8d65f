"""Agent records as skycap's capture server writes them for a tool-using agent, with what the Chat tab
must get right: tool-call ids reused as skycap's own renderer names them (every parsed call `call_0`),
parallel calls, a result naming no call, and tool output holding invisible characters (a right-to-left
override that makes `evil.exe` read `exe.live`, a zero-width joiner, a lone carriage return)."""

import json

from skycap_viewer.demo.writer import RecordBuilder

REUSED = "tr_reused_ids"
RLO_NAME = "evil\u202eexe.txt"  # shown applied it reads "evil" then "txt.exe" reversed
ZWJ_TEXT = "pass\u200dword"
LONE_CR = "progress 10%\rprogress 99%"


def call(name: str, arguments: dict, call_id: str = "call_0") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def write_reused_ids(directory, rounds: int = 6, record_id: str = REUSED) -> dict:
    """`rounds` rounds of one call named `call_0` and its result, then two parallel calls both named
    `call_0` and their two results, then a result whose id was never called; the first result holds
    the invisible characters. Returns {round: (call node, result node)} and the other nodes by name."""
    builder = RecordBuilder(record_id, meta={"step": 1, "task_id": "agent"}, annotations={"reward": 1.0})
    at = builder.add_client(None, "system", "You are an agent with tools.")
    at = builder.add_client(at, "user", "Read the files.")
    rounds_at = {}
    for number in range(rounds):
        caller = builder.add_model(at, message={"role": "assistant", "content": "",
                                                "tool_calls": [call("read", {"file": f"f{number}"})]},
                                   finish_reason="tool_calls")
        text = f"{RLO_NAME} {ZWJ_TEXT} {LONE_CR}" if number == 0 else f"contents of f{number}"
        result = builder.add_client(caller, "tool", message={"role": "tool", "tool_call_id": "call_0",
                                                             "content": text})
        rounds_at[number] = (caller, result)
        at = result
    parallel = builder.add_model(at, message={"role": "assistant", "content": "", "tool_calls": [
        call("read", {"file": "a"}), call("read", {"file": "b"})]}, finish_reason="tool_calls")
    first = builder.add_client(parallel, "tool", message={"role": "tool", "tool_call_id": "call_0", "content": "A"})
    second = builder.add_client(first, "tool", message={"role": "tool", "tool_call_id": "call_0", "content": "B"})
    orphan = builder.add_client(second, "tool", message={"role": "tool", "tool_call_id": "call_9",
                                                         "content": "a result nobody asked for"})
    builder.add_model(orphan, "Done.")
    builder.write(directory)
    return {"rounds": rounds_at, "parallel": parallel, "first": first, "second": second, "orphan": orphan}
