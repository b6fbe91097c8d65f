"""A rollout's calls and failures in time, and its lane on a step's axis, from its document alone.

The time order and each item's times are what a rollout's Timeline tab lays out (`views.record.timeline`) and
what a step's lanes are made of (`views.run.step_timeline`), so the two never time a call differently. A
rollout's lane (`rollout_lane`) is computed where its document is parsed anyway, when the run is indexed
(`catalog.rows.compute_row`), and kept in the run's store: a step's lanes are then a query, never a
reading of its documents. It keeps Unix seconds, since the step's origin (its earliest start) is only
known once every rollout of the step is.
"""

from operator import itemgetter

from skycap_viewer.record.fields import cut_marker, is_finite_number, iso_time, wire_id
from skycap_viewer.wire import encode_json

MESSAGE_CHARS = 300  # of a failure's `error`: the upstream body can be 2,000 characters
REWARD_CHARS = 200  # of a reward recorded as text


def time_key(value) -> tuple:
    """Calls and failures sort by time; those without one go last, in the order they were found."""
    return (not is_finite_number(value), value if is_finite_number(value) else 0)


def time_order(document: dict) -> list[tuple[int | None, int]]:
    """Every call as (node index, call index) and every failure as (None, failure index), in time order
    (ties: calls by node, then failures): what a rollout's Timeline tab and a step's lanes are laid out in."""
    keyed = [(call.get("t_start"), n, j) for n, node in enumerate(document["nodes"])
             for j, call in enumerate(node.get("calls") or [])]
    keyed += [(failure.get("t"), None, k) for k, failure in enumerate(document.get("failures") or [])]
    keyed.sort(key=lambda item: time_key(item[0]))
    return [(n, j) for _, n, j in keyed]


def times(document: dict, node_index: int | None, at: int) -> tuple[float | None, float | None, str | None]:
    """(start, end, why not drawn) of a call (node index, call index) or a failure (None, failure index)."""
    if node_index is None:
        return failure_times(document["failures"][at])
    return call_times(document["nodes"][node_index]["calls"][at])


def failure_times(failure: dict) -> tuple[float | None, float | None, str | None]:
    """`times` of a failure: its `t`, twice."""
    t = failure.get("t")
    return (t, t, None) if is_finite_number(t) else (None, None, "t is not a time")


def call_times(call: dict) -> tuple[float | None, float | None, str | None]:
    """`times` of a call."""
    start, end = call.get("t_start"), call.get("t_end")
    if not is_finite_number(start):
        return None, None, "t_start is not a time"
    if not is_finite_number(end):
        return None, None, "t_end is not a time"
    if end < start:
        return None, None, "t_end is before t_start"
    return start, end, None


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def rollout_lane(document: dict) -> tuple:
    """The rollout's lane as the store keeps it: (start, end, what the lane says), times in Unix seconds.

    `start` is its earliest start (its `created_at`, first call or first failure), `end` the latest of its
    calls' and failures' ends and its `finished_at` (None without a valid time). What it says is
    (`started_at`, `ended_at`, the reward as recorded, the longest gap in ms, its calls as (start, end,
    node id, finish_reason, completion tokens), its failures as (t, status, message cut)): the calls and
    failures with a valid time, in time order."""
    calls, failures = [], []
    for node in document["nodes"]:  # each call timed once, then sorted by its start: `time_order` keeps these in
        for call in node.get("calls") or []:  # that order too, those it leaves out never being drawn
            start, end, _ = call_times(call)
            if start is not None:
                calls.append((start, end, wire_id(node["id"]), call.get("finish_reason"), completion_tokens(call)))
    for failure in document.get("failures") or []:
        start, _, _ = failure_times(failure)
        if start is not None:
            failures.append((start, failure.get("status"), str(failure.get("error") or "")[:MESSAGE_CHARS]))
    calls.sort(key=itemgetter(0))  # stable: ties stay in node order, as in `time_order`
    failures.sort(key=itemgetter(0))
    created, finished = document.get("created_at"), document.get("finished_at")
    firsts = [t for t in (created, *(c[0] for c in calls[:1]), *(f[0] for f in failures[:1])) if is_finite_number(t)]
    ends = [t for t in (finished, *(c[1] for c in calls), *(f[0] for f in failures)) if is_finite_number(t)]
    annotations = document.get("annotations")
    reward = recorded_reward(annotations if isinstance(annotations, dict) else {})
    says = (iso_time(created), iso_time(finished), reward, longest_gap(calls), calls, failures)
    return (min(firsts) if firsts else None), (max(ends) if ends else None), says


def recorded_reward(annotations: dict) -> object:
    """The reward as the record has it: a scalar as is (text cut), anything bigger as a cut marker."""
    reward = annotations.get("reward")
    if isinstance(reward, str) and len(reward) > REWARD_CHARS:
        return reward[:REWARD_CHARS] + "…"
    if isinstance(reward, (dict, list)):
        return cut_marker(reward, len(encode_json(reward)))
    return reward


def longest_gap(calls: list) -> float | None:
    """The longest time no call of the rollout ran, between its first call's start and its last's end (ms)."""
    longest, running_until = None, None
    for start, end, *_ in calls:
        if running_until is not None and start > running_until:
            longest = max(longest or 0.0, start - running_until)
        running_until = end if running_until is None else max(running_until, end)
    return None if longest is None else ms(longest)


def completion_tokens(call: dict):
    """The call's completion tokens as its `usage` says, when it says a count."""
    usage = call.get("usage")
    count = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return count if type(count) is int else None
