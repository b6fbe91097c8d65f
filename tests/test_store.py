"""The SQLite store lists what the records say: every sort and filter kind against a reference
computed here in Python over the same rows, page by page through its cursors; and the counts and
groups it keeps as rows come and go are the ones counted from scratch."""

import random
import sqlite3
from pathlib import Path

import pytest

from skycap_viewer.catalog.groups import ordered_by
from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.rows import SORT_KEYS, compute_row, public
from skycap_viewer.catalog.store import READERS, RunStore
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.errors import ApiError
from skycap_viewer.record.fields import scalar_text
from skycap_viewer.views.run.listing import Cursor, Filters, counted, kept_counts, listed_rows, searched_ids
from tests.support.corpus import FIXTURES

RUNS = ("groups", "groups2", "real-like", "spec", "broken")


@pytest.fixture(scope="module")
def indexed():
    """{run: (its rows in the index's order, its snapshot)}."""
    catalog = Catalog([FIXTURES / run for run in RUNS])
    Watcher(catalog, verify=False).poll()
    return {s.id: (s.rows, s) for s in catalog.snapshots()}


def newest_first(rows):
    return sorted(rows, key=lambda row: (row["created_ts"] is None, -(row["created_ts"] or 0), row["id"]))


def kept(filters: Filters, row: dict) -> bool:
    """The listing filters as the API documents them, written out plainly."""
    annotations = row["annotations"]
    reward = row["_keys"]["reward"]
    checks = [
        filters.step is None or row["step"] == filters.step,
        filters.task_id is None or row["task_id"] == filters.task_id,
        filters.status is None or row["status"] == filters.status,
        filters.reward_min is None or (reward is not None and reward >= filters.reward_min),
        filters.reward_max is None or (reward is not None and reward <= filters.reward_max),
        filters.q is None or filters.q in row_text(row),
        all(annotations.get(key) is not None and (wanted is None or scalar_text(annotations[key]) == wanted)
            for key, wanted in filters.annotations),
        all(flag in row["flags"] for flag in filters.flags),
        not any(flag in row["flags"] for flag in filters.exclude_flags),
    ]
    return all(checks)


def row_text(row: dict) -> str:
    return compute_row(str(FIXTURES / row["_run"]), row["id"] + ".json.zst")["_text"]


def expected(rows: list, filters: Filters, key: str, order: str) -> list[str]:
    ordered = newest_first(rows)
    if key == "created" and order == "asc":
        ordered = ordered_by(sorted(ordered, key=lambda r: r["id"]), lambda r: r["_keys"]["created"], "asc")
    elif (key, order) != ("created", "desc"):
        ordered = ordered_by(ordered, lambda r: r["_keys"][key], order)
    return [row["id"] for row in ordered if kept(filters, row)]


def listed(snapshot, filters: Filters, key: str, order: str, limit: int = 7, sparse: bool = False,
           indexed: bool = False) -> list[str]:
    """Every id the store lists, walking its pages by the cursors it hands out (`sparse`: finding the
    matches first through a filter's index, as a listing keeping few rows does)."""
    ids, cursor = [], Cursor()
    with snapshot.reading() as db:
        while True:
            found, last = listed_rows(db, filters, key, order, limit, cursor, sparse=sparse, indexed=indexed)
            ids += [public_id(entry[0]) for entry in found]
            if last is None:
                return ids
            cursor = Cursor.parse(cursor.next(limit, last))


def public_id(json_z: bytes) -> str:
    return public({"_json_z": json_z})["id"]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("key", SORT_KEYS)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_every_sort_lists_the_same_rows_in_the_same_order(indexed, run, key, order):
    rows, snapshot = indexed[run]
    assert listed(snapshot, Filters(), key, order) == expected(rows, Filters(), key, order)
    assert listed(snapshot, Filters(), key, order, indexed=True) == expected(rows, Filters(), key, order)


FILTERS = [
    {"step": 2.0}, {"status": "finished"}, {"task_id": "task-a"}, {"q": "task-b"}, {"q": "ta"},
    {"reward_min": 0.5}, {"reward_max": 0.5, "reward_min": 0.0},
    {"annotations": [("stop_reason", "error")]}, {"annotations": [("reward", None)]},
    {"annotations": [("reward", "1")]}, {"step": 1, "status": "finished"},
    {"flags": ("forked",)}, {"exclude_flags": ("forked", "truncated")}, {"flags": ("malformed-record",)},
    {"status": "finished", "flags": ("truncated",)}, {"reward_min": 0.4, "flags": ("forked",)},
    {"annotations": [("stop_reason", None)], "exclude_flags": ("truncated",)},
]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("asked", FILTERS, ids=repr)
@pytest.mark.parametrize("key", ["created", "reward"])
@pytest.mark.slow
def test_every_filter_lists_and_counts_what_the_rows_say(indexed, run, asked, key):
    rows, snapshot = indexed[run]
    filters = Filters(**asked)
    ids = expected(rows, filters, key, "desc")
    assert snapshot.sorted, "the run's sort and text indexes are built once it is indexed"
    with snapshot.reading() as db:
        looked_up = filters.on(snapshot).with_text_matches(db, len(rows))
    assert (looked_up.text_rids is not None) == (len(filters.q or "") >= 3)
    # the text scanned, found through its index, then its rows looked up once
    for plan in (filters, filters.on(snapshot), looked_up):
        assert listed(snapshot, plan, key, "desc") == ids
        assert listed(snapshot, plan, key, "desc", sparse=True) == ids
        assert listed(snapshot, plan, key, "desc", indexed=True) == ids
    with snapshot.reading() as db:
        total, rewards = kept_counts(counted(db, filters), filters)
        assert kept_counts(counted(db, looked_up), looked_up) == (total, rewards)
    assert total == len(ids)
    values = [row["_keys"]["reward"] for row in rows if row["id"] in set(ids) and row["_keys"]["reward"] is not None]
    assert rewards == ({"min": min(values), "max": max(values)} if values else None)


def counts_of(path) -> tuple:
    """The store's kept counts and groups, as tables (what a store counted from scratch must equal)."""
    with sqlite3.connect(path) as db:
        tally = sorted(db.execute("SELECT kind, value, flags, n, low, high FROM tally WHERE n > 0"))
        groups = sorted(db.execute("SELECT * FROM groups"))
    return tally, groups


def test_kept_counts_and_groups_follow_every_change(tmp_path):
    """Rows put, replaced and removed in random batches keep the counts a fresh store counts."""
    directory = FIXTURES / "groups2"
    names = sorted(p.name for p in directory.iterdir() if p.name.endswith(".json.zst"))
    rows = {name: compute_row(str(directory), name) for name in names}
    facts = {"test": 1}
    store = RunStore(tmp_path / "changing.sqlite", facts, ("step", "instance_id"))
    present = set()
    chooser = random.Random(14)
    for _ in range(12):
        for name in chooser.sample(names, len(names) // 3):
            if name in present and chooser.random() < 0.5:
                store.remove(name)
                present.discard(name)
            else:  # a new row, or the same document rewritten under another name's row
                store.put(name, 1, 1, 1, rows[name] if chooser.random() < 0.8 else rows[chooser.choice(names)])
                present.add(name)
        store.commit()
    final = {name: row for name, row in ((n, r) for n, r in store_rows(store))}
    fresh = RunStore(tmp_path / "fresh.sqlite", facts, ("step", "instance_id"))
    for name, row in final.items():
        fresh.put(name, 1, 1, 1, row)
    fresh.commit()
    assert counts_of(store.path) == counts_of(fresh.path)
    assert len(final) == len(present) > 0


def test_a_publish_counts_the_groups_without_reading_their_summaries(indexed):
    """`count_groups` runs at every publish (a reopen's first among them): each of its queries is answered from an
    index, never from the groups' rows, whose summaries are most of a big run's groups table."""
    from skycap_viewer.catalog.index import count_groups

    _, snapshot = indexed["groups"]
    with snapshot.reading() as db:
        asked = []
        db.set_trace_callback(asked.append)
        counted = count_groups(db)
        db.set_trace_callback(None)
        plans = [" ".join(step[-1] for step in db.execute(f"EXPLAIN QUERY PLAN {query}")) for query in asked]
    assert counted["group_count"] == 6 and counted["grouped_rows"] == 28
    assert len(plans) == 2 and all("USING COVERING INDEX" in plan for plan in plans), plans


def test_a_search_finds_its_unreadable_rows_from_their_index_and_lists_the_rest_in_order(indexed):
    """The unreadable rows are a few: found from their own index, never by walking the order's index (3 s at a
    million rows); the readable ids come in the listing's order, each once."""
    order, snapshot = indexed["broken"]
    db = READERS.connection(snapshot.database)
    asked = []
    db.set_trace_callback(asked.append)
    try:
        with searched_ids(snapshot, Filters.parse({})) as (readable, unreadable, ids):
            listed = list(ids)
    finally:
        db.set_trace_callback(None)
    skipped = [row["id"] for row in order if row.get("unreadable")]
    assert skipped and [found["trajectory_id"] for found in unreadable] == skipped
    assert listed == [row["id"] for row in order if not row.get("unreadable")] and readable == len(listed)
    plans = {query: " ".join(step[-1] for step in db.execute(f"EXPLAIN QUERY PLAN {query}"))
             for query in asked if "unreadable AND" in query}
    assert len(plans) == 1 and all("USING INDEX rows_unreadable" in plan for plan in plans.values()), plans


def test_groups_computed_a_few_at_a_time_are_the_groups_computed_at_once(tmp_path, monkeypatch):
    """A big first indexing touches every group at its end: they are computed in slices (memory bounded),
    and the slices give the very groups one pass gives."""
    directory = FIXTURES / "groups"
    names = sorted(p.name for p in directory.iterdir() if p.name.endswith(".json.zst"))
    stores = {}
    for at_once in (10_000, 2):
        monkeypatch.setattr("skycap_viewer.catalog.store.GROUPS_AT_ONCE", at_once)
        store = RunStore(tmp_path / f"{at_once}.sqlite", {"test": 1}, ("step", "instance_id"))
        store.put_many([(name, 1, 1, 1, compute_row(str(directory), name), False) for name in names])
        store.commit()
        stores[at_once] = store.db.execute("SELECT * FROM groups ORDER BY gkey").fetchall()
    assert len(stores[2]) > 2 * 2
    assert stores[2] == stores[10_000]


def test_groups_a_worker_keeps_are_computed_once_inside_the_write_lock(tmp_path, monkeypatch):
    """A worker computes a batch's groups inside the write transaction that keeps them: no other writer can
    commit a member in between, so each member is read once (computed before the lock, they had nearly always
    changed by the time it was held, and were computed again); what is kept is what the store computes at once;
    a database made again meanwhile (another identity) is left alone."""
    from skycap_viewer.catalog import store as store_module
    directory = FIXTURES / "groups"
    names = sorted(p.name for p in directory.iterdir() if p.name.endswith(".json.zst"))
    store = RunStore(tmp_path / "kept.sqlite", {"test": 1}, ("step", "instance_id"))
    store.defer_groups(True)  # a big batch's: computed elsewhere
    store.put_many([(name, 1, 1, 1, compute_row(str(directory), name), False) for name in names])
    store.commit()
    keys = store.take_deferred_groups()
    assert not store_module.groups_written(str(store.path), "another", keys, store.group_by)
    assert store.db.execute("SELECT count(*) FROM groups").fetchone()[0] == 0
    computed = store_module.computed_groups
    other_writer_refused = []

    def computing(db, some, group_by):
        other = sqlite3.connect(store.path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
        except sqlite3.OperationalError as error:
            other_writer_refused.append(str(error))
        finally:
            other.close()
        return computed(db, some, group_by)

    monkeypatch.setattr(store_module, "computed_groups", computing)
    assert store_module.groups_written(str(store.path), store.identity, keys, store.group_by)
    assert other_writer_refused == ["database is locked"], "computed once, with the write lock held"
    monkeypatch.setattr(store_module, "computed_groups", computed)
    store.defer_groups(False)
    kept = store.db.execute("SELECT * FROM groups ORDER BY gkey").fetchall()
    store.touched_groups.update(keys)
    store.begin()
    store.commit()  # the groups computed again here, from the same members
    assert kept == store.db.execute("SELECT * FROM groups ORDER BY gkey").fetchall() and kept


def test_groups_computed_elsewhere_are_kept_only_while_their_members_are_as_they_were(tmp_path):
    """While the server writes a batch's rows itself, the workers compute its groups and the server keeps them:
    a member removed in between leaves them to be computed again here, never kept as they were."""
    from skycap_viewer.catalog import store as store_module
    directory = FIXTURES / "groups"
    names = sorted(p.name for p in directory.iterdir() if p.name.endswith(".json.zst"))
    store = RunStore(tmp_path / "kept.sqlite", {"test": 1}, ("step", "instance_id"))
    store.defer_groups(True)
    store.put_many([(name, 1, 1, 1, compute_row(str(directory), name), False) for name in names])
    store.commit()
    keys = store.take_deferred_groups()
    marks, records = store_module.groups_computed(str(store.path), keys, store.group_by)
    store.keep_groups(keys, marks, records)
    store.commit()
    assert store.db.execute("SELECT * FROM groups ORDER BY gkey").fetchall() == sorted(records)
    store.remove(names[0])
    store.commit()
    store.take_deferred_groups()
    store.keep_groups(keys, marks, records)  # computed before the member went
    store.defer_groups(False)
    store.commit()
    kept = store.db.execute("SELECT * FROM groups ORDER BY gkey").fetchall()
    assert kept == sorted(store_module.computed_groups(store.db, keys, store.group_by)) != sorted(records)


def store_rows(store: RunStore):
    """(name, the row it was put with) of every stored row, as a store would be given it again."""
    from skycap_viewer.catalog.store import unpack
    for name, kept_fields, json_z, verified in store.db.execute("SELECT name, kept, json, verified FROM rows"):
        row = unpack(kept_fields)
        text = store.db.execute("SELECT text FROM rowtexts WHERE rid = (SELECT rid FROM rows WHERE name = ?)",
                                (name,)).fetchone()[0]
        yield name, {**row, "_json_z": json_z, "_verified": bool(verified), "_text": text}


def test_a_reader_never_takes_a_rebuilt_file_for_the_snapshots_database(tmp_path):
    """Deleted under the server and made again by the watcher, the file at a snapshot's path is not the
    snapshot's database: a reader with no connection yet says 503 (rebuilding), never reads the new,
    maybe still empty, file as the old one; the new file's own snapshot reads it."""
    path = tmp_path / "run.sqlite"
    old = RunStore(path, {"test": 1}, ("step", "instance_id"))
    snapshot_database = (path, old.identity)
    old.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with pytest.raises(ApiError) as gone:
        READERS.connection(snapshot_database)
    assert gone.value.status == 503
    rebuilt = RunStore(path, {"test": 1}, ("step", "instance_id"))
    assert rebuilt.identity != snapshot_database[1]  # the file may even have the old one's inode
    with pytest.raises(ApiError) as rebuilding:
        READERS.connection(snapshot_database)
    assert rebuilding.value.status == 503
    with READERS.reading((path, rebuilt.identity)) as db:
        assert db.execute("SELECT value FROM facts WHERE key = 'test'").fetchone() == (1,)
    rebuilt.close()
