"""While a run is indexed its rows are published as they come, but a publish costs what the run's
size costs: the watcher spaces publishes out so they stay a tenth of the work (a clock it reads is
stood in for here, so nothing is timed). The next poll waits on listing, never on indexing."""

import json
import math
import os
import shutil
import time
from concurrent.futures import Future

import pytest

from skycap_viewer.catalog import index as index_module
from skycap_viewer.catalog import watcher as watcher_module
from skycap_viewer.catalog.index import FACTS_SECONDS, Catalog
from skycap_viewer.catalog.rows import compute_row
from skycap_viewer.catalog.store import groups_computed, groups_written
from skycap_viewer.catalog.watcher import PUBLISH_COST_FACTOR, PUBLISH_SECONDS, Watcher
from skycap_viewer.wire import encode_json
from tests.support.corpus import FIXTURES


@pytest.fixture(autouse=True)
def no_glimpse(monkeypatch):
    """These follow one batch's publishes: a glimpse (`Watcher.glimpse`, tested in test_pool.py) would read the
    fixture's few records before it."""
    monkeypatch.setattr(watcher_module, "GLIMPSE", 0)


class Clock:
    """`time` for the watcher: it moves only when the test says."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def time_ns(self):
        return int(self.now * 1e9)


def rows_arriving(clock: Clock, seconds_each: float, copies: int):
    """A row source handing every `groups` record `copies` times, each row taking `seconds_each`."""
    def compute_rows(directory, names, verify=False):
        for name in names:
            row = compute_row(str(directory), name)
            for _ in range(copies):
                clock.now += seconds_each
                yield name, row
    return compute_rows


def published_while_indexing(tmp_path, monkeypatch, publish_cost: float) -> list[float]:
    """The clock's readings at each publish of a run indexed with a publish costing `publish_cost`."""
    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    catalog = Catalog([FIXTURES / "groups"])
    times = []

    def prepare(snapshot):
        times.append(clock.now)
        clock.now += publish_cost

    Watcher(catalog, compute_rows=rows_arriving(clock, 0.05, 20), prepare=prepare).poll()
    assert sum(len(s.rows) for s in catalog.snapshots()) == 28
    return times


def test_cheap_publishes_come_every_half_second(tmp_path, monkeypatch):
    times = published_while_indexing(tmp_path, monkeypatch, publish_cost=0.0)
    gaps = [later - earlier for earlier, later in zip(times, times[1:-1], strict=False)]
    assert len(times) > 40 and all(PUBLISH_SECONDS <= gap <= PUBLISH_SECONDS + 0.1 for gap in gaps)


def test_costly_publishes_are_spaced_to_a_tenth_of_the_work(tmp_path, monkeypatch):
    cost = 1.0
    times = published_while_indexing(tmp_path, monkeypatch, publish_cost=cost)
    gaps = [later - earlier for earlier, later in zip(times[1:], times[2:-1], strict=False)]
    assert gaps and all(gap >= PUBLISH_COST_FACTOR * cost for gap in gaps)
    assert len(times) <= 28 * 20 * 0.05 / (PUBLISH_COST_FACTOR * cost) + 3  # the first, the spaced ones, the last


def test_a_big_batch_computes_its_groups_again_as_its_rows_double_not_every_few_seconds(monkeypatch):
    """A big batch's groups are computed elsewhere from what is committed, and every group is touched between
    two sends: sent every `GROUPS_SECONDS`, a group was computed as often as the batch took seconds (here 28 s:
    14 times), reading its members each time; now once its rows have doubled too, so a few times in all, the
    last with every member (the groups are those of the run indexed in one go)."""
    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    monkeypatch.setattr(watcher_module, "SMALL_BATCH", 1)  # the fixture's 28 records as a big batch
    sends = []

    def offload(task, *args):
        if task in (groups_computed, groups_written):
            sends.append(clock.now)
        future = Future()
        future.set_result(task(*args))
        return future

    catalog = Catalog([FIXTURES / "groups"])
    Watcher(catalog, compute_rows=rows_arriving(clock, 0.05, 20), offload=offload, verify=False).poll()
    rows = 28 * 20
    first_rows = watcher_module.GROUPS_SECONDS / 0.05
    assert 2 <= len(sends) <= math.log2(rows / first_rows) + 2
    in_one_go = Catalog([FIXTURES / "groups"])
    Watcher(in_one_go, verify=False).poll()
    with catalog.snapshots()[0].reading() as db, in_one_go.snapshots()[0].reading() as expected:
        query = "SELECT gkey, n, members, flags, member_flags, reward, low, high, summary FROM groups ORDER BY gkey"
        assert db.execute(query).fetchall() == expected.execute(query).fetchall()


class Queued(Future):
    """A worker's task that waits, as a group task waits in the workers' queue behind a batch's chunks of rows,
    until it is waited for (the batch's end); a cancelled one never runs."""

    def __init__(self, task, args):
        super().__init__()
        self.work = task, args

    def result(self, timeout=None):
        if not self.done():
            task, args = self.work
            self.set_result(task(*args))
        return super().result(timeout)


def test_a_group_task_that_had_not_started_is_withdrawn_when_its_groups_are_sent_again(monkeypatch):
    """The workers take tasks in the order asked, so a big batch's group tasks wait behind its rows and ran at its
    end, each computing its groups with every member: a group was computed as many times as it was sent. A task
    that has not started when its groups are sent again is withdrawn, its keys sent with the new ones: each group
    is computed once, and what is kept is the run indexed in one go."""
    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    monkeypatch.setattr(watcher_module, "SMALL_BATCH", 1)  # the fixture's 28 records as a big batch
    asked, computed = [], []

    def offload(task, *args):
        if task is not groups_computed:  # the listing indexes, at the end
            return Queued(task, args)
        asked.append(Queued(lambda path, keys, group_by: (computed.extend(keys), task(path, keys, group_by))[1],
                            args))
        return asked[-1]

    catalog = Catalog([FIXTURES / "groups"])
    Watcher(catalog, compute_rows=rows_arriving(clock, 0.05, 20), offload=offload, verify=False).poll()
    assert len(asked) >= 3 and sum(future.cancelled() for future in asked) == len(asked) - 1
    assert sorted(computed) == sorted(set(computed))
    in_one_go = Catalog([FIXTURES / "groups"])
    Watcher(in_one_go, verify=False).poll()
    with catalog.snapshots()[0].reading() as db, in_one_go.snapshots()[0].reading() as expected:
        query = "SELECT gkey, n, members, flags, member_flags, reward, low, high, summary FROM groups ORDER BY gkey"
        assert db.execute(query).fetchall() == expected.execute(query).fetchall()
        assert len(computed) == db.execute("SELECT count(*) FROM groups").fetchone()[0]


def test_while_a_run_is_first_indexed_its_facts_are_counted_every_two_seconds_its_rows_every_publish(monkeypatch):
    """Counting a run's facts (its tasks, steps, statuses) costs what the run's size costs, and a run is published
    twice a second while it is indexed: the facts are counted again at most every `FACTS_SECONDS` then, the rows
    and their count at every publish, and the last publish (indexed) counts all of them."""
    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    monkeypatch.setattr(index_module, "time", clock)
    catalog = Catalog([FIXTURES / "groups"])
    seen = []

    def prepare(snapshot):
        seen.append((clock.now, snapshot.indexing, snapshot.row_count, sum(snapshot.facts["step_counts"].values())))

    Watcher(catalog, compute_rows=rows_arriving(clock, 0.25, 1), prepare=prepare, verify=False).poll()
    indexing = [entry for entry in seen if entry[1]]
    assert len({rows for _, _, rows, _ in indexing}) > 2 * len({counted for *_, counted in indexing}) > 2
    changed = [at for (at, *_, counted), (_, *_, before) in zip(indexing[1:], indexing, strict=False)
               if counted != before]
    assert all(later - earlier >= FACTS_SECONDS for earlier, later in zip(changed, changed[1:], strict=False))
    last = seen[-1]
    assert not last[1] and last[2] == 28
    assert last[3] == len([row for row in catalog.snapshots()[0].rows if row["step"] is not None])


def test_while_a_big_run_is_first_indexed_its_facts_are_counted_as_seldom_as_they_cost(monkeypatch):
    """Counting a run's facts costs what its tasks cost (a tenth of a second or more at a million rows): while it
    is first indexed they are counted again no sooner than `FACTS_COST_FACTOR` times what the last count took."""
    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    monkeypatch.setattr(index_module, "time", clock)
    counted_at = []
    count = index_module.count_facts

    def costly_count(db):
        counted_at.append(clock.now)
        clock.now += 0.1
        return count(db)

    monkeypatch.setattr(index_module, "count_facts", costly_count)
    catalog = Catalog([FIXTURES / "groups"])
    Watcher(catalog, compute_rows=rows_arriving(clock, 0.25, 20), verify=False).poll()
    gaps = [later - earlier for earlier, later in zip(counted_at, counted_at[1:-1], strict=False)]
    assert len(gaps) > 5 and min(gaps) >= index_module.FACTS_COST_FACTOR * 0.1 > FACTS_SECONDS


def test_a_runs_entry_is_encoded_as_it_is_published_and_its_facts_once_a_count(monkeypatch):
    """A big run's facts (its tasks: megabytes at a million rollouts) are encoded once each time they are counted,
    not at every publish, and `/v1/runs` joins the entries the watcher encoded: each is its `run_entry`."""
    from skycap_viewer.server import api as api_module

    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    monkeypatch.setattr(index_module, "time", clock)
    catalog = Catalog([FIXTURES / "groups", FIXTURES / "spec"])
    api = api_module.Api(catalog)
    encoded, facts_seen = [], []
    plain = api_module.encode_json
    monkeypatch.setattr(api_module, "encode_json", lambda payload: encoded.append(payload) or plain(payload))

    def prepare(snapshot):
        facts_seen.append(snapshot.facts)
        api.encoded_entry(snapshot)
        assert json.loads(api.encoded_entry(snapshot)) == json.loads(plain(api.run_entry(snapshot)))

    Watcher(catalog, compute_rows=rows_arriving(clock, 0.25, 1), prepare=prepare, verify=False).poll()
    counts = {id(facts): facts for facts in facts_seen}
    assert len(facts_seen) > len(counts) > 2, "published more often than counted"
    assert sum(payload is facts for payload in encoded for facts in counts.values()) == len(counts)
    before = len(encoded)
    answer = json.loads(encode_json(api.runs({})[1]))["data"]
    assert answer == [json.loads(plain(api.run_entry(catalog.snapshot(entry["id"])))) for entry in answer]
    assert [entry["id"] for entry in answer] == ["groups", "spec"], "newest first"
    assert len(encoded) == before, "the published snapshots' entries were encoded as they were published"


class OneWait:
    """`Watcher.stopped` for one pass of its loop: the wait it asks for is noted, and it stops."""

    def __init__(self):
        self.waits = []

    def is_set(self):
        return bool(self.waits)

    def wait(self, seconds):
        self.waits.append(seconds)


def test_a_long_index_does_not_delay_the_next_poll(monkeypatch):
    """The poll after a long index comes at the interval (records written meanwhile show then): only the
    time spent listing directories stretches it."""
    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    watcher = Watcher(Catalog([FIXTURES / "groups"]), compute_rows=rows_arriving(clock, 0.05, 20), verify=False)
    watcher.stopped = OneWait()
    watcher.run()
    assert clock.now >= 28 and watcher.stopped.waits == [watcher.interval]


def test_a_huge_directory_is_listed_again_when_its_mtime_moves(tmp_path):
    """A directory that takes long to list is not listed every poll while its mtime stays: a record
    rewritten in place waits for the next full listing, one renamed in (as skycap writes) shows at once."""
    run, catalog, watcher = huge_listing(tmp_path, mtime_ns=time.time_ns() - 3600 * 10**9)  # an hour ago
    spec = FIXTURES / "spec" / "tr_text.json.zst"
    in_place = sorted(run.glob("*.json.zst"))[0]
    stat = os.stat(run)
    in_place.write_bytes(spec.read_bytes())
    os.utime(run, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # an in-place write leaves the directory's mtime
    record_id = in_place.name.removesuffix(".json.zst")

    def task_of(record):
        return next(row["task_id"] for row in catalog.snapshot("groups").rows if row["id"] == record)

    before = task_of(record_id)
    watcher.poll()
    assert catalog.snapshot("groups").row_count == 28 and task_of(record_id) == before, "not listed this poll"

    (run / ".new.tmp").write_bytes(spec.read_bytes())
    os.replace(run / ".new.tmp", run / "tr_new.json.zst")  # skycap's way: the directory's mtime moves
    watcher.poll()
    assert catalog.snapshot("groups").row_count == 29
    assert task_of(record_id) == task_of("tr_new") != before, "the in-place one is read with it"


def test_a_huge_directory_changed_within_its_mtime_tick_is_listed_again(tmp_path):
    """A record renamed in just after the listing, in the same tick of the file system's clock, leaves the
    directory's mtime as it was: an mtime that recent when listed is not trusted, so it shows next poll."""
    now = time.time_ns()
    run, catalog, watcher = huge_listing(tmp_path, mtime_ns=now)
    (run / ".new.tmp").write_bytes((FIXTURES / "spec" / "tr_text.json.zst").read_bytes())
    os.replace(run / ".new.tmp", run / "tr_new.json.zst")
    os.utime(run, ns=(now, now))  # the same tick: the mtime did not move
    watcher.poll()
    assert catalog.snapshot("groups").row_count == 29


def huge_listing(tmp_path, mtime_ns: int):
    """The groups fixture as a run whose directory (mtime `mtime_ns` when first listed) takes 10 s to list."""
    run = tmp_path / "groups"
    shutil.copytree(FIXTURES / "groups", run)
    os.utime(run, ns=(mtime_ns, mtime_ns))
    catalog = Catalog([run])
    watcher = Watcher(catalog, verify=False)
    watcher.poll()
    index = catalog.runs["groups"]
    index.listing_cost, index.next_full_listing = 10.0, float("inf")  # as if listing it took 10 s
    return run, catalog, watcher


class Recording:
    """A run's connection, standing in for it: each statement executed is kept with whether a transaction was open
    (`sqlite3.Connection` itself cannot be patched)."""

    def __init__(self, db):
        self.db, self.statements = db, []

    def execute(self, sql, *args):
        self.statements.append((sql.split()[0].upper(), self.db.in_transaction))
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_a_publish_reads_one_committed_state_whatever_the_workers_commit_meanwhile():
    """Every count a publish freezes (rows, verified, facts, groups) is read in one transaction: read a moment
    apart, while the workers committed their chunks, `sidecars_verified` was once -512 (more unverified rows
    than the rows counted a moment before)."""
    catalog = Catalog([FIXTURES / "groups"])
    Watcher(catalog).poll()
    run = next(iter(catalog.runs.values()))
    recording = run.store.db = Recording(run.store.db)
    run.publish(catalog.generation + 1, indexing=False)
    reads = [(verb, open_) for verb, open_ in recording.statements if verb == "SELECT"]
    assert reads and all(open_ for _, open_ in reads), recording.statements
    verbs = [verb for verb, _ in recording.statements]
    assert verbs.count("BEGIN") == 1 and verbs.index("BEGIN") < verbs.index("SELECT") and verbs[-1] == "COMMIT"
    assert 0 <= run.snapshot.verified <= run.snapshot.row_count == 28
