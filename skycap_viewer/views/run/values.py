"""The values a run holds, for the page's task and annotation picker, each with its record count.

A run may hold thousands of tasks: an answer is bounded (`limit` values per list, `limit` annotation
keys) and `q` narrows it, so the page offers a searchable list and never a select of every task.
The full tables are counted once per snapshot; a request only filters and cuts them. Counts only:
nothing here averages or rates anything.
"""

import math

from skycap_viewer.catalog.index import Snapshot
from skycap_viewer.record.fields import scalar_text
from skycap_viewer.views.params import parsed

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def value_order(text: str) -> tuple:
    """Values written as finite numbers first in numeric order, then everything else by its text."""
    try:
        value = float(text)
    except ValueError:
        return (1, 0, text)
    return (0, value, text) if math.isfinite(value) else (1, 0, text)


def tables(db) -> dict:
    """{"tasks": [(text, count)], "annotations": {key: [(text, count)]}} over the readable rows, from the
    counts the store keeps. Values are written as the filters take them (`scalar_text`), so 1 and 1.0
    are one value."""
    def counts(kind):
        return db.execute("SELECT value, sum(n) FROM tally WHERE kind = ? GROUP BY value HAVING sum(n) > 0",
                          (kind,)).fetchall()

    annotations: dict[str, list] = {}
    for value, n in counts("annotation"):
        key, _, text = value.partition("\0")
        annotations.setdefault(key, []).append((text, n))
    return {
        "tasks": sorted(((scalar_text(task), n) for task, n in counts("task")), key=lambda item: item[0]),
        "annotations": {key: sorted(values, key=lambda item: value_order(item[0]))
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
    """How many values a list holds (`limit`): 1..`MAX_LIMIT`, `DEFAULT_LIMIT` when not given."""
    return parsed(params, "limit", DEFAULT_LIMIT, lambda text: min(max(int(text), 1), MAX_LIMIT), "a whole number")


def values_payload(snapshot: Snapshot, q: str | None, limit: int) -> dict:
    """Tasks and annotation values of one run; an annotation key that holds `q` lists all its values."""
    def count():
        with snapshot.reading() as db:
            return tables(db)

    table = snapshot.memoized(("values",), count)
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
