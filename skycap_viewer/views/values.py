"""The values a run holds, for the page's task and annotation picker, each with its record count.

A run may hold thousands of tasks: an answer is bounded (`limit` values per list, `limit` annotation
keys) and `q` narrows it, so the page offers a searchable list and never a select of every task.
The full tables are counted once per snapshot; a request only filters and cuts them. Counts only:
nothing here averages or rates anything.
"""

import math
from collections import Counter

from skycap_viewer.catalog.index import Snapshot
from skycap_viewer.errors import ApiError
from skycap_viewer.record.fields import scalar_text

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def value_order(value, text: str) -> tuple:
    """Finite numbers first in numeric order, then everything else by its text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return (0, value, text)
    return (1, 0, text)


def tables(rows) -> dict:
    """{"tasks": [(text, count)], "annotations": {key: [(text, count)]}} over the readable rows, in order.

    Values are written as the filters take them (`scalar_text`), so 1 and 1.0 are one value."""
    readable = [row for row in rows if not row.get("unreadable")]
    tasks = Counter(row["task_id"] for row in readable)
    tasks.pop(None, None)
    pairs = Counter((key, type(value) is bool, value) for row in readable  # True is not 1 here
                    for key, value in row["annotations"].items()
                    if value is not None and not isinstance(value, (dict, list)))
    annotations: dict[str, dict] = {}
    for (key, _, value), count in pairs.items():
        text = scalar_text(value)
        values = annotations.setdefault(key, {})
        order, before = values.get(text, (value_order(value, text), 0))
        values[text] = (order, before + count)
    return {
        "tasks": sorted(((scalar_text(task), n) for task, n in tasks.items()), key=lambda item: item[0]),
        "annotations": {key: [(text, n) for text, (_, n) in sorted(values.items(), key=lambda kv: kv[1][0])]
                        for key, values in sorted(annotations.items())},
    }


def bounded(values: list, q: str | None, limit: int) -> dict:
    """The values whose text holds `q` (any case), the first `limit` of them, and how many there were."""
    matching = values if q is None else [item for item in values if q in item[0].lower()]
    return {
        "values": [{"value": text, "count": count} for text, count in matching[:limit]],
        "total": len(values),
        "matching": len(matching),
        "has_more": len(matching) > limit,
    }


def parse_limit(params: dict) -> int:
    text = (params.get("limit") or [""])[-1]
    try:
        return min(max(int(text), 1), MAX_LIMIT) if text else DEFAULT_LIMIT
    except ValueError:
        raise ApiError(400, f"limit must be a whole number, not {text!r}") from None


def values_payload(snapshot: Snapshot, q: str | None, limit: int) -> dict:
    """Tasks and annotation values of one run; an annotation key that holds `q` lists all its values."""
    table = snapshot.memoized(("values",), lambda: tables(snapshot.rows))
    q = q.lower() if q else None
    keys = []
    for key, values in table["annotations"].items():
        listed = bounded(values, None if q is None or q in key.lower() else q, limit)
        if listed["matching"]:
            keys.append({"key": key, **listed})
    return {
        "run_id": snapshot.id,
        "q": q,
        "limit": limit,
        "tasks": bounded(table["tasks"], q, limit),
        "annotations": keys[:limit],
        "annotation_keys": {"total": len(table["annotations"]), "matching": len(keys), "has_more": len(keys) > limit},
    }
