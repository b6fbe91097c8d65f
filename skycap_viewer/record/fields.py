"""Fields read out of a document's free-form parts (`meta`, `annotations`, times), each rule said once.

`meta` and `annotations` are whatever the trainer wrote, so every reader here takes only a value
of the kind it expects and answers None otherwise. Rewards have two meanings, kept apart on purpose:

- `reward_as_number`: what orders, colours and compares rollouts (sort keys, the reward range,
  a group's `no-signal` and `binary`). A pass/fail reward written as `true`/`false` must sort and
  compare like 1/0, so booleans count as 0/1.
- `recorded_number`: what `summary` counts "as recorded". Counting `true` as `1` there would print
  a number the record does not hold, so only real numbers count.
"""

import math
from datetime import datetime, timezone


def is_finite_number(value) -> bool:
    """An int or float that is finite as a float (JSON ints can have 400 digits); not a bool."""
    try:
        return type(value) in (int, float) and math.isfinite(value)
    except OverflowError:
        return False


def wire_id(node_id: int | None) -> str | None:
    """A node id as the API and the page name it: `"n<id>"`."""
    return None if node_id is None else f"n{node_id}"


def iso_time(seconds) -> str | None:
    """Unix seconds as an ISO-8601 UTC string with milliseconds, like the original viewer."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    try:
        moment = datetime.fromtimestamp(seconds, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def created_ts(document: dict):
    """`created_at` in unix seconds when it is a finite number (what orders rows by time), else None."""
    created = document.get("created_at")
    return created if is_finite_number(created) else None


def task_id(meta: dict) -> str | None:
    """`meta.task_id`, else the last part of `meta.task`, else `meta.instance_id`."""
    for key in ("task_id", "task", "instance_id"):
        value = meta.get(key)
        if value is None or isinstance(value, (dict, list)):
            continue
        text = str(value)
        return text.rstrip("/").rsplit("/", 1)[-1] if key == "task" else text
    return None


def step_of(meta: dict):
    """`meta.step` when it is a finite number, else None."""
    step = meta.get("step")
    return step if is_finite_number(step) else None


def attempt_of(meta: dict):
    """`meta.attempt` when it is a finite number, else 0 (a record written before retries existed)."""
    attempt = meta.get("attempt")
    return attempt if is_finite_number(attempt) else 0


def reward_as_number(annotations: dict):
    """The reward to order, colour and compare by: a finite number, booleans as 0/1; else None."""
    reward = (annotations or {}).get("reward")
    if isinstance(reward, bool):
        return int(reward)
    return reward if is_finite_number(reward) else None


def recorded_number(annotations: dict):
    """The reward when the record holds a finite number there (booleans are not counted as numbers)."""
    reward = (annotations or {}).get("reward")
    return reward if is_finite_number(reward) else None


def scalar_text(value) -> str:
    """A scalar as the page writes it: `2` for 2.0, `true`/`false` for booleans."""
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def cut_marker(value, json_bytes: int) -> dict:
    """What a row keeps of a value too long to keep: that it was cut, its size and its JSON type."""
    kind = {dict: "object", list: "list", str: "string"}.get(type(value), "number")
    return {"cut": True, "json_bytes": json_bytes, "type": kind}
