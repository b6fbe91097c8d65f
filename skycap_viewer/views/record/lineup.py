"""A GRPO group lined up: every counting member compared with one anchor member (`views.record.compare`).

The anchor is the highest recorded reward unless one is chosen; `lowest` is the member "pass vs
fail" pairs it with. Each member's values are its row's, as recorded; nothing is averaged.
"""

from skycap_viewer.catalog.groups import Group, repetition_of
from skycap_viewer.errors import ApiError
from skycap_viewer.views.record.compare import Comparison


def extreme(rows: list, pick) -> dict:
    """The row with the highest (`max`) or lowest (`min`) recorded reward, ties the first; rows
    without a numeric reward only when no row has one."""
    numeric = [row for row in rows if row["_keys"]["reward"] is not None]
    if not numeric:
        return rows[0]
    best = pick(row["_keys"]["reward"] for row in numeric)
    return next(row for row in numeric if row["_keys"]["reward"] == best)


def member_entry(row: dict) -> dict:
    """A member as the line-up lists it, before it is compared."""
    return {"trajectory_id": row["id"], "repetition_id": repetition_of(row), "attempt": row["meta"].get("attempt"),
            "reward": row["annotations"].get("reward"), "reward_value": row["_keys"]["reward"],
            "turns": row["_keys"]["turns"], "tokens": row["_keys"]["tokens"], "flags": row["flags"],
            "common_prefix_tokens": None, "common_prefix_chars": None, "diverge_node_id": None,
            "anchor_diverge_node_id": None, "identical": None, "error": None}


def lineup(group: Group, run_id: str, anchor_id: str | None, view_of) -> dict:
    """The `/v1/groups/{key}/lineup` answer; `view_of(record id)` gives a member's `RecordView`
    (raising `ApiError` for one that cannot be read: that member says why, the others are lined up).
    Raises `ApiError` for an anchor that is not a counting member."""
    members = group.counting
    chosen = anchor_id is not None
    if not chosen:
        anchor_id = extreme(members, max)["id"]
    anchor_row = next((row for row in members if row["id"] == anchor_id), None)
    if anchor_row is None:
        raise ApiError(400, f"anchor {anchor_id} is not a counting member of group {group.key}")
    lowest = extreme(members, min)
    if lowest["_keys"]["reward"] is None or lowest["_keys"]["reward"] == anchor_row["_keys"]["reward"]:
        lowest = None
    anchor = view_of(anchor_id)
    unit, lined = None, []
    for row in members:
        entry = member_entry(row)
        lined.append(entry)
        try:
            comparison = Comparison(anchor, 0, view_of(row["id"]), 0)
        except (ApiError, IndexError) as error:
            entry["error"] = error.detail if isinstance(error, ApiError) else str(error)
            continue
        facts = comparison.facts()
        diverge = facts["diverge"]
        unit = unit or ("tokens" if comparison.a.by_tokens else "chars")
        entry.update(common_prefix_tokens=facts["common_prefix_tokens"],
                     common_prefix_chars=facts["common_prefix_chars"], identical=facts["identical"],
                     diverge_node_id=diverge and diverge["b"]["node_id"],
                     anchor_diverge_node_id=diverge and diverge["a"]["node_id"])
    return {
        "group": group.summary(run_id),
        "unit": unit,
        "anchor": {"trajectory_id": anchor_id, "reward": anchor_row["annotations"].get("reward"), "chosen": chosen},
        "lowest": lowest["id"] if lowest else None,
        "members": lined,
    }
