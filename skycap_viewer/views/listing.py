"""Listing queries over in-memory rows: filters, sort (nulls last), paging, health counts, reward range.

Everything here loops over rows already in memory and their precomputed `_keys`; sorted
orders are memoized per snapshot, so a poll that changes nothing costs one pass of filters.
"""

from collections import Counter
from dataclasses import dataclass, field

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


@dataclass
class Filters:
    step: float | None = None
    task_id: str | None = None
    status: str | None = None
    annotations: list = field(default_factory=list)  # (key, value or None for "present")
    q: str | None = None

    @classmethod
    def parse(cls, params: dict) -> "Filters":
        step = one(params, "step")
        if step is not None:
            try:
                step = float(step)
            except ValueError:
                raise ApiError(400, f"step must be a number, not {step!r}") from None
        annotations = []
        for value in params.get("annotation", []):
            if value:
                key, sep, wanted = value.partition("=")
                annotations.append((key, wanted if sep else None))
        q = one(params, "q")
        return cls(step, one(params, "task_id"), one(params, "status"), annotations, q.lower() if q else None)

    def __bool__(self):
        values = (self.step, self.task_id, self.status, self.q)
        return any(v is not None for v in values) or bool(self.annotations)

    def select(self, rows) -> list:
        """The rows that match, one tight pass per active filter (what big listings use)."""
        rows = list(rows)
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
        return bool(self.select((row,)))


def parse_flag(params: dict) -> str | None:
    flag = one(params, "flag")
    if flag is not None and flag not in FLAG_BY_NAME:
        raise ApiError(400, f"flag must be one of {', '.join(FLAG_BY_NAME)}")
    return flag


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
