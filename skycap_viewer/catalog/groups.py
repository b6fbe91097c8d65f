"""GRPO groups over a run's rows: one group per key (`step,instance_id` by default).

Per repetition the highest `attempt` counts and earlier attempts are superseded (listed
under it). The run's modal group size decides `short`. The server's listings and the `summary`
command both group here, so they cannot disagree. Nothing here averages rewards for display:
the mean counting reward exists only as the `reward` sort key.
"""

from collections import Counter
from dataclasses import dataclass, field

from skycap_viewer.flags import GROUP_FLAGS, row_flags
from skycap_viewer.record.fields import attempt_of, reward_as_number, scalar_text
from skycap_viewer.record.lazy import lazy

DEFAULT_GROUP_BY = ("step", "instance_id")
GROUP_SORT_KEYS = ("step", "task", "reward", "turns", "tokens", "health", "created")
MASKING_STOPS = ("agent_timeout", "error")  # a trainer masks a group holding a rollout that stopped so


def key_values(row: dict, keys: tuple[str, ...]) -> dict | None:
    """The row's value for each key (from meta, else annotations), or None if one is missing."""
    if row.get("unreadable"):
        return None
    values = {}
    for key in keys:
        value = row["meta"].get(key)
        if value is None:
            value = row["annotations"].get(key)
        if value is None or isinstance(value, (dict, list)):
            return None
        values[key] = value
    return values


def group_key_of(row: dict, keys: tuple[str, ...]) -> str | None:
    """The key of the row's group (its values as text, joined by `~`), or None when it is in none."""
    values = key_values(row, keys)
    return None if values is None else "~".join(scalar_text(v) for v in values.values())


def ordered_by(items, value_of, order: str) -> list:
    """Sort by `value_of` (stable, so ties keep the incoming order); None values always last."""
    values = list(map(value_of, items))
    present = [index for index, value in enumerate(values) if value is not None]
    present.sort(key=values.__getitem__, reverse=order == "desc")  # sorting positions: no tuples to build
    return [items[i] for i in present] + [items[i] for i, value in enumerate(values) if value is None]


def repetition_of(row: dict):
    repetition = row["meta"].get("repetition_id")
    return row["id"] if repetition is None or isinstance(repetition, (dict, list)) else repetition


def repetition_order(repetition):
    """Numbers first in numeric order, then everything else as text."""
    if isinstance(repetition, (int, float)) and not isinstance(repetition, bool):
        return (0, repetition, "")
    return (1, 0, str(repetition))


def group_flags(members: list[dict], counting: list[dict], modal_size: int | None) -> list[str]:
    """The group flags of one group, from its members' rows and those that count."""
    rewards = [reward_as_number(row["annotations"]) for row in counting]
    found = {
        "no-signal": bool(rewards) and None not in rewards and len(set(rewards)) == 1,
        "masked": any(row["annotations"].get("stop_reason") in MASKING_STOPS for row in counting),
        "short": modal_size is not None and len(counting) < modal_size,
        "retried": len(counting) < len(members),
    }
    return [name for name in GROUP_FLAGS if found[name]]


def modal(sizes: list[int]) -> int | None:
    """The most common size; ties go to the larger one."""
    counts = Counter(sizes)
    return max(counts, key=lambda size: (counts[size], size)) if counts else None


def span(values) -> list | None:
    values = [v for v in values if v is not None]
    return [min(values), max(values)] if values else None


@dataclass
class Group:
    key: str
    values: dict
    counting: list  # rows, in repetition order
    superseded: list  # (row, id of the attempt that counts instead; None when it is not in this copy)
    modal_n: int | None = None
    flags: list = field(default_factory=list)

    @property
    def step(self):
        """The group's step and task: its first counting rollout's (its first member's when the run
        index calls every attempt superseded)."""
        return (self.counting or self.members)[0]["step"]

    @property
    def task(self):
        return (self.counting or self.members)[0]["task_id"]

    @lazy
    def members(self) -> list:
        return self.counting + [row for row, _ in self.superseded]

    @lazy
    def member_flags(self) -> set:
        """Every rollout flag any member carries (the band of an unfiltered listing)."""
        return {flag for row in self.members for flag in row["flags"]}

    @lazy
    def rewards(self) -> list:
        return [row["_keys"]["reward"] for row in self.counting]

    @lazy
    def rollup(self) -> dict:
        counts = {}
        for row in self.counting:
            for flag in row_flags(row["flags"]):
                counts[flag] = counts.get(flag, 0) + 1
        return counts

    @lazy
    def keys(self) -> dict:
        """Sort values: the mean counting reward is one, and only ever used to order groups."""
        numeric = [r for r in self.rewards if r is not None]
        created = [row["created_ts"] for row in self.members if row["created_ts"] is not None]
        return {
            "step": self.step,
            "task": self.task,
            "reward": sum(numeric) / len(numeric) if numeric else None,
            "turns": max((row["_keys"]["turns"] for row in self.counting), default=None),
            "tokens": max((row["_keys"]["tokens"] for row in self.counting), default=None),
            "health": len(self.flags) + sum(self.rollup.values()),
            "created": min(created) if created else None,
        }

    def summary(self, run_id: str) -> dict:
        return {
            "key": self.key,
            "run_id": run_id,
            "values": self.values,
            "step": self.step,
            "task_id": self.task,
            "n": len(self.counting),
            "modal_n": self.modal_n,
            "rewards": [
                {
                    "id": row["id"],
                    "repetition_id": repetition_of(row),
                    "attempt": row["meta"].get("attempt"),
                    "reward": row["annotations"].get("reward"),
                    "value": row["_keys"]["reward"],
                    "stop_reason": row["annotations"].get("stop_reason"),
                }
                for row in self.counting
            ],
            "binary": bool(self.rewards) and all(r in (0, 1) for r in self.rewards),
            "turns": span(row["_keys"]["turns"] for row in self.counting),
            "tokens": span(row["_keys"]["tokens"] for row in self.counting),
            "superseded_count": len(self.superseded),
            "flags": self.flags,
            "rollup": self.rollup,
            "created_ts": self.keys["created"],
        }


@dataclass
class Grouping:
    keys: tuple
    groups: list  # default order: step desc, task asc, key asc
    by_key: dict
    modal_n: int | None
    grouped_rows: int
    row_count: int
    ungrouped: list  # the rows without every key, in the run's order: in no group


def build_grouping(rows, keys: tuple) -> Grouping:
    members: dict[str, list] = {}
    values_of: dict[str, dict] = {}
    ungrouped = []
    for row in rows:
        values = key_values(row, keys)
        if values is None:
            ungrouped.append(row)
            continue
        key = "~".join(scalar_text(v) for v in values.values())
        members.setdefault(key, []).append(row)
        values_of.setdefault(key, values)
    groups = [split_attempts(key, values_of[key], rows) for key, rows in members.items()]
    modal_n = modal([len(g.counting) for g in groups])
    for group in groups:
        group.modal_n = modal_n
        group.flags = group_flags(group.members, group.counting, modal_n)
    by_task = sorted(groups, key=lambda g: (g.task is None, g.task or "", g.key))
    groups = ordered_by(by_task, lambda g: g.step, "desc")
    return Grouping(keys, groups, {g.key: g for g in groups}, modal_n,
                    sum(len(g.members) for g in groups), len(rows), ungrouped)


def split_attempts(key: str, values: dict, rows: list) -> Group:
    """Per repetition, the highest attempt counts (ties: the newest); the rest are superseded, and so is
    every attempt the trainer's run index says was (`superseded: true`), even when the attempt that
    replaced it is not in this copy (then superseded by None)."""
    by_repetition: dict = {}
    for row in rows:
        by_repetition.setdefault(repetition_of(row), []).append(row)
    counting, superseded = [], []
    for repetition in sorted(by_repetition, key=repetition_order):
        attempts = by_repetition[repetition]
        if len(attempts) > 1:
            attempts.sort(key=lambda r: (attempt_of(r["meta"]), r["created_ts"] or 0, r["id"]))
        candidates = [row for row in attempts if row.get("superseded") is not True]
        winner = candidates[-1] if candidates else None
        if winner is not None:
            counting.append(winner)
        superseded.extend((row, winner and winner["id"]) for row in attempts if row is not winner)
    return Group(key, values, counting, superseded)
