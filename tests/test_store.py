"""The SQLite row store lists what the in-memory listing lists: the same rows, in the same order,
page by page, for every sort key and order and every filter kind, on the corpus's own records."""

import pytest

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.rows import SORT_KEYS
from skycap_viewer.catalog.store import Query, RowStore
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.views.listing import Filters, ordered_by
from tests.conftest import FIXTURES

RUNS = ("groups", "groups2", "real-like", "spec", "broken")


@pytest.fixture(scope="module")
def indexed():
    """{run: (its snapshot's rows in the index's order, a store holding the same rows)}."""
    catalog = Catalog([FIXTURES / run for run in RUNS])
    Watcher(catalog).poll()
    stores = {}
    for run in catalog.runs.values():
        store = RowStore(":memory:")
        store.put((name, version.size, version.mtime_ns, run.rows[name]) for name, version in run.versions.items())
        stores[run.location.id] = (list(run.snapshot.rows), store)
    return stores


def listed(store: RowStore, query: Query, limit: int = 7) -> list[str]:
    """Every id the store lists for `query`, walking its pages by cursor."""
    ids, cursor = [], None
    while True:
        rows, cursor = store.page(query, limit, cursor)
        ids += [row["id"] for row in rows]
        if cursor is None:
            return ids


def expected(rows: list, filters: Filters, key: str, order: str) -> list[str]:
    ordered = rows if (key, order) == ("created", "desc") else ordered_by(rows, lambda r: r["_keys"][key], order)
    return [row["id"] for row in filters.flagged(filters.select(ordered))]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("key", SORT_KEYS)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_every_sort_lists_the_same_rows_in_the_same_order(indexed, run, key, order):
    rows, store = indexed[run]
    assert listed(store, Query(sort=key, order=order)) == expected(rows, Filters(), key, order)


FILTERS = [
    {"step": 2.0}, {"status": "finished"}, {"task_id": "task-a"}, {"q": "task-b"},
    {"reward_min": 0.5}, {"reward_max": 0.5, "reward_min": 0.0},
    {"annotations": (("stop_reason", "error"),)}, {"annotations": (("reward", None),)},
    {"flags": ("forked",)}, {"exclude_flags": ("forked", "truncated")}, {"flags": ("malformed-record",)},
]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("wanted", FILTERS, ids=str)
def test_every_filter_keeps_the_same_rows(indexed, run, wanted):
    rows, store = indexed[run]
    filters = Filters(**{k: list(v) if k == "annotations" else v for k, v in wanted.items()})
    for key, order in (("created", "desc"), ("reward", "asc"), ("task", "desc")):
        want = expected(rows, filters, key, order)
        assert listed(store, Query(**wanted, sort=key, order=order), limit=3) == want
        assert store.count(Query(**wanted)) == len(want)


def test_a_rewritten_or_removed_record_is_listed_once_or_not_at_all(indexed):
    rows, store = indexed["groups"]
    first = rows[0]
    name = f"{first['id']}.json.zst"
    store.put([(name, 1, 2, first)])  # the same file read again
    assert listed(store, Query()).count(first["id"]) == 1
    store.remove([name])
    assert first["id"] not in listed(store, Query())
    store.put([(name, 1, 2, first)])
    assert listed(store, Query()) == [row["id"] for row in rows]


@pytest.mark.parametrize("wanted", FILTERS, ids=str)
def test_every_filter_keeps_some_rows_of_some_run_and_not_all(indexed, wanted):
    """The parity above is not between two empty lists: each filter keeps rows somewhere, and drops some."""
    counts = [(indexed[run][1].count(Query(**wanted)), len(indexed[run][0])) for run in RUNS]
    assert any(kept for kept, _ in counts) and any(kept < total for kept, total in counts)
