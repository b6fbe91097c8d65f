"""A record whose calls overlap, written with the demo writer: what the fixtures lack for the timeline.

Fixed clock (from 1_790_000_000.0), so every position is known:
- root n0 (the main conversation): reply n2 at 0–5 s and, started at the same instant, its sibling
  n3 at 0–2 s (a "tools or model" fork: same lane, so a sub-lane); then n5 at 20–21 s.
- root n6 (a subagent): reply n8 at 1–3 s, beside the main conversation on a lane of its own.
- a failure at 10 s, inside the idle span 5–20 s (a failure runs no call: it does not end it).
- reply n10 under root n0 whose call has no `t_end` (a graph-API record may leave it null).
"""

from pathlib import Path

from skycap_viewer.demo.writer import RecordBuilder

RECORD = "tr_timeline"
T0 = 1_790_000_000.0


def write_timeline_record(directory: Path) -> dict:
    """Write the record into `directory`; its node ids by name."""
    builder = RecordBuilder(RECORD, "text", created_at=T0)
    system = builder.add_client(None, "system", "be brief")
    user = builder.add_client(system, "user", "plan the work")
    builder.clock = T0
    long_reply = builder.add_model(user, "the long answer", duration=5.0)
    builder.clock = T0
    short_reply = builder.add_model(user, "the short answer", duration=2.0)
    sub_root = builder.add_client(None, "system", "you are a subagent")
    sub_user = builder.add_client(sub_root, "user", "look it up")
    builder.clock = T0 + 1
    sub_reply = builder.add_model(sub_user, "found it", duration=2.0)
    builder.clock = T0 + 10
    builder.add_failure(status=504, error="upstream timeout")
    then = builder.add_client(long_reply, "user", "go on")
    builder.clock = T0 + 20
    last = builder.add_model(then, "done", duration=1.0)
    untimed = builder.add_model(builder.add_client(last, "user", "and?"), "nothing more")
    builder.nodes[untimed]["calls"][0]["t_end"] = None
    builder.write(directory)
    return {"system": system, "user": user, "long": long_reply, "short": short_reply, "sub_root": sub_root,
            "sub": sub_reply, "last": last, "untimed": untimed}
