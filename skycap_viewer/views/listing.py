"""Listing queries over in-memory rows: filters, sort (nulls last), paging, health counts, reward range.

Everything here loops over rows already in memory and their precomputed `_keys`; sorted
orders are memoized per snapshot, so a poll that changes nothing costs one pass of filters.
"""

import math
from collections import Counter
from dataclasses import dataclass, field, replace

from skycap_viewer.catalog.index import Snapshot, default_order_key
from skycap_viewer.catalog.rows import SORT_KEYS
from skycap_viewer.errors import ApiError
from skycap_viewer.flags import FLAG_BY_NAME, FLAG_ORDER
from skycap_viewer.record.fields import scalar_text

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def one(params: dict, name: str) -> str | None:
    """The last value of a query parameter, or None; empty means absent."""
    values = params.get(name)
    return values[-1] if values and values[-1] != "" else None


def number(params: dict, name: str) -> float | None:
    """A numeric query parameter, or None when absent; anything else is a 400."""
    value = one(params, name)
    if value is None:
        return None
    try:
        parsed = float(value)
    except ValueError:
        parsed = math.nan
    if math.isnan(parsed):
        raise ApiError(400, f"{name} must be a number, not {value!r}")
    return parsed


def flag_names(params: dict, name: str) -> tuple[str, ...]:
    """The distinct flags a repeatable parameter names, in the order given; an unknown one is a 400."""
    names = tuple(dict.fromkeys(value for value in params.get(name, []) if value))
    for flag in names:
        if flag not in FLAG_BY_NAME:
            raise ApiError(400, f"{name} must be one of {', '.join(FLAG_BY_NAME)}")
    return names


@dataclass
class Filters:
    """What a listing keeps: the row filters (`select`, before the health band is counted) and
    the flags every kept row must carry and must not carry (`flagged`, after it), so the band
    shows what choosing a flag would keep. All of them must hold."""

    step: float | None = None
    task_id: str | None = None
    status: str | None = None
    annotations: list = field(default_factory=list)  # (key, value or None for "present")
    q: str | None = None
    reward_min: float | None = None  # inclusive; a row without a numeric reward is outside any range
    reward_max: float | None = None
    flags: tuple = ()  # required
    exclude_flags: tuple = ()

    @classmethod
    def parse(cls, params: dict) -> "Filters":
        annotations = []
        for value in params.get("annotation", []):
            if value:
                key, sep, wanted = value.partition("=")
                annotations.append((key, wanted if sep else None))
        q = one(params, "q")
        return cls(number(params, "step"), one(params, "task_id"), one(params, "status"), annotations,
                   q.lower() if q else None, number(params, "reward_min"), number(params, "reward_max"),
                   flag_names(params, "flag"), flag_names(params, "exclude_flag"))

    def __bool__(self):
        """Whether a row filter is set (the flags are not row filters: see `flagged`)."""
        values = (self.step, self.task_id, self.status, self.q, self.reward_min, self.reward_max)
        return any(v is not None for v in values) or bool(self.annotations)

    @property
    def by_flag(self) -> bool:
        return bool(self.flags or self.exclude_flags)

    def rollout_only(self) -> "Filters":
        """The same filters with only the rollout flags: what a group's members are judged by."""
        return replace(self, flags=tuple(f for f in self.flags if is_rollout_flag(f)),
                       exclude_flags=tuple(f for f in self.exclude_flags if is_rollout_flag(f)))

    def flagged(self, rows) -> list:
        """The rows carrying every required flag and no excluded one, one pass per flag."""
        rows = list(rows)
        for flag in self.flags:
            rows = [row for row in rows if flag in row["flags"]]
        for flag in self.exclude_flags:
            rows = [row for row in rows if flag not in row["flags"]]
        return rows

    def select(self, rows) -> list:
        """The rows that match, one tight pass per active filter (what big listings use)."""
        rows = list(rows)
        if self.reward_min is not None:
            low = self.reward_min
            rows = [row for row in rows if (r := row["_keys"]["reward"]) is not None and r >= low]
        if self.reward_max is not None:
            high = self.reward_max
            rows = [row for row in rows if (r := row["_keys"]["reward"]) is not None and r <= high]
        if self.step is not None:
            rows = [row for row in rows if row["step"] == self.step]
        if self.task_id is not None:
            rows = [row for row in rows if row["task_id"] == self.task_id]
        if self.status is not None:
            rows = [row for row in rows if row["status"] == self.status]
        if self.annotations:
            rows = [row for row in rows if self.annotations_match(row["annotations"])]
        if self.q is not None:
            rows = [row for row in rows if self.q in row["_text"]]
        return rows

    def annotations_match(self, annotations: dict) -> bool:
        for key, wanted in self.annotations:
            if annotations.get(key) is None:
                return False
            if wanted is not None and scalar_text(annotations[key]) != wanted:
                return False
        return True

    def matches(self, row: dict) -> bool:
        """The row passes the row filters and the flags (a group's member is judged by `rollout_only`)."""
        return bool(self.flagged(self.select((row,))))


def is_rollout_flag(flag: str | None) -> bool:
    return flag is not None and FLAG_BY_NAME[flag].unit == "rollout"


def parse_sort(params: dict, keys=SORT_KEYS, default=("created", "desc")) -> tuple[str, str, bool]:
    """(key, order, asked): `asked` is False when the default order applies."""
    key = one(params, "sort")
    if key is None:
        return default[0], default[1], False
    if key not in keys:
        raise ApiError(400, f"sort must be one of {'|'.join(keys)}")
    return key, "asc" if one(params, "order") == "asc" else "desc", True


def parse_page(params: dict) -> tuple[int, int]:
    """(limit, offset): limit 1-1000 (junk means 100), cursor an offset (junk means 0)."""
    try:
        limit = min(max(int(one(params, "limit") or DEFAULT_LIMIT), 1), MAX_LIMIT)
    except ValueError:
        limit = DEFAULT_LIMIT
    try:
        offset = max(int(one(params, "cursor") or 0), 0)
    except ValueError:
        offset = 0
    return limit, offset


def ordered_by(items, value_of, order: str) -> list:
    """Sort by `value_of` (stable, so ties keep the incoming order); None values always last."""
    values = list(map(value_of, items))
    present = [index for index, value in enumerate(values) if value is not None]
    present.sort(key=values.__getitem__, reverse=order == "desc")  # sorting positions: no tuples to build
    return [items[i] for i in present] + [items[i] for i, value in enumerate(values) if value is None]


def rows_in_order(snapshots: list[Snapshot], key: str, order: str) -> list[dict]:
    """Every row of `snapshots` sorted by `key`; ties newest first, then id. Memoized per snapshot."""
    def compute(rows):
        if (key, order) == ("created", "desc"):
            return rows  # the index's own order
        return ordered_by(rows, lambda row: row["_keys"][key], order)

    if len(snapshots) == 1:
        snapshot = snapshots[0]
        return snapshot.memoized(("rows", key, order), lambda: compute(list(snapshot.rows)))
    merged = sorted((row for s in snapshots for row in s.rows), key=default_order_key)
    return compute(merged)


def health(flag_keys, unit: str, scanned: int, total: int) -> dict:
    """How many rows carry each flag, in flag order; `flag_keys` has each row's flags space-joined.

    Counting the few distinct flag combinations first keeps this one C-level pass over the rows."""
    counts = Counter()
    for key, n in Counter(flag_keys).items():
        for flag in key.split():
            counts[flag] += n
    return {
        "scanned": scanned,
        "total": total,
        "unit": unit,
        "counts": [[flag, counts[flag]] for flag in sorted(counts, key=FLAG_ORDER.__getitem__)],
    }


def reward_range(rewards) -> dict | None:
    values = [r for r in rewards if r is not None]
    return {"min": min(values), "max": max(values)} if values else None


def page(items: list, limit: int, offset: int) -> dict:
    chunk = items[offset: offset + limit]
    more = offset + limit < len(items)
    return {"data": chunk, "next_cursor": str(offset + limit) if more else None, "has_more": more}
