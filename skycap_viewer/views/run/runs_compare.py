"""Two runs (or two steps) group by group, and one prompt across steps (`/v1/compare/runs`, `/v1/lineage`).

Both line rollouts up by their keys and show each side as `/v1/groups` shows it, so a pair of
groups reads the same here as in either run's own listing. Nothing is averaged or subtracted:
the values are the records' own.
"""

import json

from skycap_viewer.catalog.groups import (
    build_grouping,
    key_values,
    ordered_by,
    repetition_of,
    split_attempts,
)
from skycap_viewer.catalog.index import Snapshot
from skycap_viewer.errors import ApiError
from skycap_viewer.record.fields import scalar_text
from skycap_viewer.views.run import stored_groups
from skycap_viewer.views.run.listing import Filters, reward_range


def matching_keys(by: tuple, server_keys: tuple, stepped: bool) -> tuple:
    """The keys groups are matched by: `by` when given, else the server's group key; without `step`
    when a side is cut to one step, or two different steps could never meet."""
    keys = by or (tuple(key for key in server_keys if key != "step") if stepped else server_keys)
    if not keys:
        raise ApiError(400, "no group key is left to match groups by: pass by=k1,k2")
    return keys


def side_groups(snapshot: Snapshot, keys: tuple, server_keys: tuple, step: float | None) -> tuple[list, object]:
    """(one side's groups as listed, its modal size): the run's kept groups when nothing narrows them;
    else built for this request over that step's rows alone (compared as `/v1/trajectories?step=`
    compares)."""
    with snapshot.reading() as db:
        if step is None and keys == server_keys:
            modal_n = snapshot.groups["modal_n"]
            return stored_groups.table_groups(snapshot.id, db, Filters(), modal_n), modal_n
        rows = snapshot.rows_where(*Filters(step=step).where()) if step is not None else snapshot.rows
    grouping = build_grouping(rows, keys)
    return stored_groups.from_grouping(snapshot.id, grouping, None), grouping.modal_n


def side_summary(group: stored_groups.Listed, modal_n) -> dict:
    """A group as `/v1/groups` lists it unfiltered: every member matches."""
    group.kept = group.matched
    return json.loads(group.json(modal_n))


def compare_runs(a: tuple[list, object], b: tuple[list, object], limit: int, offset: int) -> dict:
    """The groups both sides have (a page, in side a's group order) and every key only one side has."""
    (side_a, modal_a), (side_b, modal_b) = a, b
    by_key_a, by_key_b = {g.key: g for g in side_a}, {g.key: g for g in side_b}
    matched = [(group, by_key_b[group.key]) for group in side_a if group.key in by_key_b]
    lows = [g.low for pair in matched for g in pair if g.low is not None]
    highs = [g.high for pair in matched for g in pair if g.high is not None]
    return {
        "matched": [{"key": group_a.key, "a": side_summary(group_a, modal_a), "b": side_summary(group_b, modal_b)}
                    for group_a, group_b in matched[offset: offset + limit]],
        "total": len(matched),
        "limit": limit,
        "offset": offset,
        "has_more": offset + limit < len(matched),
        "only_a": [group.key for group in side_a if group.key not in by_key_b],
        "only_b": [group.key for group in side_b if group.key not in by_key_a],
        # one colour scale for both sides and every page: the counting rewards of all matched groups
        "reward_range": {"min": min(lows), "max": max(highs)} if lows else None,
    }


def lineage(snapshot: Snapshot, key: str, value: str) -> dict:
    """Every rollout whose `key` (meta, else annotations) is `value` as text, by step ascending
    (no step last); at each step the attempts are decided as groups decide them."""
    by_step: dict = {}
    plain = value.isascii() and not any(c in value for c in '"\\') and value.strip() == value and value
    holding = Filters(q=value.lower()).on(snapshot)  # the rows whose text holds the value; then their key
    rows = snapshot.rows_where(*holding.where()) if plain else snapshot.rows
    for row in rows:
        values = key_values(row, (key,))
        if values is not None and scalar_text(values[key]) == value:
            by_step.setdefault(row["step"], []).append(row)
    steps = ordered_by(list(by_step), lambda step: step, "asc")
    return {
        "data": [{"step": step, "rollouts": step_rollouts(by_step[step])} for step in steps],
        "reward_range": reward_range(row["_keys"]["reward"] for rows in by_step.values() for row in rows),
    }


def step_rollouts(rows: list) -> list[dict]:
    """One step's rollouts: those that count in repetition order, then the attempts they superseded."""
    group = split_attempts(key="", values={}, rows=rows)
    superseded_by = {row["id"]: winner for row, winner in group.superseded}
    return [{
        "trajectory_id": row["id"],
        "repetition_id": repetition_of(row),
        "reward": row["annotations"].get("reward"),
        "reward_value": row["_keys"]["reward"],
        "flags": row["flags"],
        "attempt": row["meta"].get("attempt"),
        "superseded": row["id"] in superseded_by,
        "superseded_by": superseded_by.get(row["id"]),
    } for row in group.members]
