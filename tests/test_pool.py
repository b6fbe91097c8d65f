"""The row pool: worker processes give exactly the rows this process computes, and never linger."""

import gc
import multiprocessing
import multiprocessing.queues
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from pathlib import Path

import pytest

from skycap_viewer.catalog import index as index_module
from skycap_viewer.catalog import pool as pool_module
from skycap_viewer.catalog import watcher as watcher_module
from skycap_viewer.catalog.blobs import unpack
from skycap_viewer.catalog.index import Catalog, file_version, file_version_now
from skycap_viewer.catalog.persisted import IndexFiles
from skycap_viewer.catalog.pool import (
    INDEX_CHUNK,
    MAX_CHUNK,
    RowPool,
    announce,
    chunk_size,
    compute_chunk,
    compute_rows_here,
    in_chunks,
    index_chunks,
    start_method,
    watched,
)
from skycap_viewer.catalog.rows import public
from skycap_viewer.catalog.store import LAST_LISTING_INDEX, LISTING_INDEXES, ROW_COLUMNS, index_name
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.record.document import is_document_name
from tests.support.corpus import FIXTURES, PULLED
from tests.support.oracle import RECORD_DIRS
from tests.support.server_process import ServerProcess, wait_for


def document_names(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if is_document_name(name))


@pytest.fixture
def pool():
    rows = RowPool(workers=2, small_batch=0)  # every batch goes to the workers, even on one core
    yield rows
    rows.close()


def test_pool_rows_equal_in_process_rows_over_the_whole_corpus(pool):
    unreadable = 0
    for name in RECORD_DIRS:
        directory = FIXTURES / name
        names = document_names(directory)
        pooled = list(pool.compute_rows(directory, names))
        assert pool.executor is not None, "the batch must have gone to the worker processes"
        assert sorted(n for n, _ in pooled) == names, f"{name}: every document exactly once"
        assert dict(pooled) == dict(compute_rows_here(directory, names)), name
        unreadable += sum(1 for _, row in pooled if row.get("unreadable"))
    assert unreadable > 0, "the corpus's unreadable records must be part of the comparison"


def test_small_batches_stay_in_this_process():
    pool = RowPool(workers=2)
    try:
        directory = FIXTURES / "spec"
        names = document_names(directory)
        assert dict(pool.compute_rows(directory, names)) == dict(compute_rows_here(directory, names))
        assert pool.executor is None, "no worker process for a handful of documents"
    finally:
        pool.close()


def test_chunks_cover_every_name_once_in_order():
    """A search's chunks (`in_chunks` of `chunk_size`)."""
    def chunked(names, workers):
        return list(in_chunks(iter(names), chunk_size(len(names), workers)))

    names = [f"r{i}.json.zst" for i in range(5000)]
    chunks = chunked(names, 2)
    assert [n for chunk in chunks for n in chunk] == names
    assert max(map(len, chunks)) <= MAX_CHUNK
    assert len(chunks) >= 16, "enough chunks per worker to keep both busy to the end"
    assert chunked(names[:3], 8) == [[n] for n in names[:3]]


def test_index_chunks_start_small_then_grow():
    """Each worker's first indexing task is a small chunk (the first rows listed at once); the rest are up to
    `INDEX_CHUNK` (a task is a transaction: fewer commits a row), still enough of them to keep both busy."""
    names = [f"r{i}.json.zst" for i in range(20_000)]
    chunks = index_chunks(names, 2)
    assert [n for chunk in chunks for n in chunk] == names
    assert [len(chunk) for chunk in chunks[:2]] == [MAX_CHUNK, MAX_CHUNK]
    assert max(map(len, chunks)) == INDEX_CHUNK > MAX_CHUNK
    assert len(index_chunks(names[:5000], 2)) >= 16
    assert index_chunks(names[:3], 8) == [[n] for n in names[:3]]


def many_names(repeat: int):
    """A long batch (names repeat: each is computed again), so work remains after the first chunk."""
    directory = FIXTURES / "groups"
    return directory, document_names(directory) * repeat


@pytest.mark.slow
def test_a_killed_worker_loses_no_rows(pool):
    directory, names = many_names(60)
    expected = dict(compute_rows_here(directory, set(names)))
    rows = pool.compute_rows(directory, names)
    got = [next(rows)]
    workers = multiprocessing.active_children()
    assert workers, "the pool's worker processes"
    for worker in workers:
        os.kill(worker.pid, signal.SIGKILL)
    got.extend(rows)
    assert [p.pid for p in multiprocessing.active_children()] != [w.pid for w in workers], "fresh workers"
    assert len(got) == len(names), "every document once: what the dead workers held is read again"
    assert all(row == expected[name] for name, row in got)
    assert dict(pool.compute_rows(directory, names[:100])) == {n: expected[n] for n in names[:100]}


POISON = "tr_0e32dadf1ca07c39.json.zst"  # reading this one kills the worker, every time


def dying_chunk(directory, names, verify=False, task=None):
    """A worker task that dies (SIGKILL, as the kernel's OOM killer does) while reading `POISON`."""
    if POISON in names:
        announce(task)
        os.kill(os.getpid(), signal.SIGKILL)
    return compute_chunk(directory, names, verify, task)


def half_answer_then_die():
    """In a worker: write the first bytes of an answer to the executor's result pipe, holding its write lock, and
    die there (SIGKILL), as a worker the OOM killer stops while it sends a big answer."""
    result_queue, = [found for found in gc.get_objects()
                     if isinstance(found, multiprocessing.queues.SimpleQueue) and found is not pool_module._started]
    result_queue._wlock.acquire()
    os.write(result_queue._writer.fileno(), struct.pack("!i", 100_000) + b"half an answer")
    os.kill(os.getpid(), signal.SIGKILL)


def half_answering_chunk(directory, names, verify=False, task=None):
    """A worker task that dies in the middle of its answer when it reads `POISON`."""
    if POISON in names:
        announce(task)
        half_answer_then_die()
    return compute_chunk(directory, names, verify, task)


def test_a_worker_that_dies_in_the_middle_of_its_answer_breaks_its_executor():
    """Left alone, the executor waits for the rest of the answer forever; watched, its futures fail."""
    context = multiprocessing.get_context(start_method())
    executor = watched(ProcessPoolExecutor(2, mp_context=context))
    try:
        assert executor.submit(os.getpid).result() > 0
        dying = executor.submit(half_answer_then_die)
        with pytest.raises(BrokenProcessPool):
            dying.result()
    finally:
        executor.shutdown(wait=True)


def test_breaking_a_stuck_executor_never_closes_its_pipe_twice():
    """The watch ends the pipe's write end; the executor, broken by it, may be shut down (closing the same end) before
    the watch's close has returned: `os.close` lets other threads run while it closes. Here that close is held until
    the dying task's future has failed and the executor is shut down, as a loaded machine may have it (CI did):
    closed through its connection, the end was closed twice (`OSError: Bad file descriptor`, or another file's
    descriptor closed, had the number been reused meanwhile)."""
    context = multiprocessing.get_context(start_method())
    executor = watched(ProcessPoolExecutor(2, mp_context=context))
    writer = executor._result_queue._writer
    failed, shut = threading.Event(), threading.Event()

    def close_held(_close=writer._close):  # the connection's own close, held after the descriptor is closed
        _close()
        failed.wait(30)
        shut.wait(30)

    writer._close = close_held
    try:
        assert executor.submit(os.getpid).result() > 0
        dying = executor.submit(half_answer_then_die)
        dying.add_done_callback(lambda _: failed.set())
        with pytest.raises(BrokenProcessPool):
            dying.result()
    finally:
        try:
            executor.shutdown(wait=True)
        finally:
            shut.set()


@pytest.mark.slow
@pytest.mark.parametrize("task", [dying_chunk, half_answering_chunk])
def test_a_document_that_kills_its_worker_is_narrowed_down_and_listed_alone(task):
    directory, names = many_names(6)
    names = list(dict.fromkeys(names)) + [f"copy-{i}" for i in range(200)]  # plenty of chunks around it
    assert POISON in names
    pool = RowPool(workers=2, small_batch=0, task=task)
    calls_here = []
    try:
        from skycap_viewer.catalog import pool as pool_module

        original = pool_module.compute_row
        pool_module.compute_row = lambda *args: calls_here.append(args) or original(*args)
        try:
            got = dict(pool.compute_rows(directory, names))
        finally:
            pool_module.compute_row = original
    finally:
        pool.close()
    assert not calls_here, "nothing is read again in this process: it would die the same way"
    assert sorted(got) == sorted(names), "every other document is listed"
    assert got[POISON]["unreadable"], got[POISON]
    assert "killed the indexing worker" in got[POISON]["error"] and POISON in got[POISON]["error"]
    expected = dict(compute_rows_here(directory, [n for n in names if n != POISON]))
    assert {n: r for n, r in got.items() if n != POISON} == expected


def test_closing_mid_batch_stops_quietly(pool):
    directory, names = many_names(100)
    rows = pool.compute_rows(directory, names)
    next(rows)
    pool.close()
    rest = list(rows)  # finished chunks may still arrive; queued ones are dropped without an error
    assert len(rest) < len(names) - 1
    assert multiprocessing.active_children() == []
    assert list(pool.compute_rows(directory, names)) == [], "a closed pool starts no workers"


def test_idle_workers_exit_and_start_again():
    pool = RowPool(workers=2, small_batch=0, idle_seconds=0.2)
    try:
        directory = FIXTURES / "groups"
        names = document_names(directory)
        first = dict(pool.compute_rows(directory, names))
        deadline = time.monotonic() + 30
        while (pool.executor is not None or multiprocessing.active_children()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pool.executor is None and multiprocessing.active_children() == [], "idle workers must exit"
        assert dict(pool.compute_rows(directory, names)) == first
        assert pool.executor is not None, "the next big batch starts them again"
    finally:
        pool.close()


ORPHAN_SCRIPT = """
import sys
from skycap_viewer.catalog.pool import RowPool
import multiprocessing
if __name__ == "__main__":
    pool = RowPool(workers=2, small_batch=0)
    directory = sys.argv[1]
    names = sorted(n for n in __import__("os").listdir(directory) if n.endswith(".json.zst"))
    list(pool.compute_rows(directory, names))
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
    sys.stdin.read()
"""


def is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def all_gone(pids, seconds: float) -> bool:
    """Whether every process has ended within `seconds`: one that has closed its pipes may still be
    in the kernel's exit path for a moment on a loaded machine."""
    deadline = time.monotonic() + seconds
    while any(map(is_running, pids)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_workers_exit_when_the_server_is_killed(tmp_path):
    script = tmp_path / "orphans.py"
    script.write_text(ORPHAN_SCRIPT)
    parent = subprocess.Popen([sys.executable, str(script), str(FIXTURES / "groups")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(map(is_running, workers))
    parent.kill()  # no chance to shut the pool down
    parent.wait()
    assert all_gone(workers, 30), "orphaned workers must exit by themselves"


@pytest.fixture
def big_run(tmp_path):
    """A run big enough for the pool."""
    run = tmp_path / "big"
    run.mkdir()
    for name in ("groups", "real-like", "spec"):
        for source in (FIXTURES / name).iterdir():
            if not source.name.startswith("tr_"):
                continue
            # sidecars as they are, documents three times (a copy's id disagrees with its name: still listed)
            document = is_document_name(source.name)
            copies = [f"c{i}{source.name}" for i in range(3)] if document else [source.name]
            for copy in copies:
                (run / copy).write_bytes(source.read_bytes())
    assert len(document_names(run)) >= 2 * 64
    return run


@pytest.mark.slow
def test_the_server_lists_a_run_indexed_by_the_pool(big_run):
    """The server lists every record, with the rows computed in this process."""
    expected = {row["id"]: row for _, row in compute_rows_here(big_run, document_names(big_run))}
    with ServerProcess([big_run]) as server:
        server.wait_indexed()
        listed = server.get("/v1/trajectories?run_id=big&limit=1000")["data"]
        assert "Traceback" not in server.output()
    assert {row["id"] for row in listed} == set(expected)
    for row in listed:
        computed = expected[row["id"]]
        assert {key: row[key] for key in public(computed)} == public(computed)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the pool's processes in /proc")
@pytest.mark.slow
def test_terminating_the_server_stops_its_workers_cleanly(big_run):
    """SIGTERM ends the server like Ctrl-C: exit status 0, workers shut down, nothing on stderr
    (not even the resource tracker's warning about semaphores a killed pool leaks)."""
    with ServerProcess([big_run]) as server:
        server.wait_indexed()
        pool = [p for p in Path("/proc").glob("[0-9]*") if is_pool_process_of(p.name, server.process.pid)]
        server.process.terminate()
        out, err = server.process.communicate(timeout=60)  # until every process holding the pipes is gone
    assert pool, "the pool's processes were running"
    assert server.process.returncode == 0
    assert server.output() + out + err == ""
    assert all_gone([int(p.name) for p in pool], 10), "the pool's processes ended with the server"


def is_pool_process_of(pid: str, server_pid: int) -> bool:
    """A multiprocessing process that is the server's child (forkserver, tracker) or grandchild (worker)."""
    try:
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        grandparent = int(Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return False
    return server_pid in (parent, grandparent) and "multiprocessing" in Path(f"/proc/{pid}/cmdline").read_text()


def quick_chunk(directory, names, verify=False, task=None):
    """A worker task that says it started and returns at once: thousands of them make a big run."""
    announce(task)
    return [(name, {"id": name}) for name in names]


@pytest.mark.slow
def test_thousands_of_tasks_never_block_the_workers(monkeypatch):
    """Workers tell the server each task they start; a run of a million documents is ~16k tasks, and
    told to a queue nobody read, their pipe filled at ~200k documents and every worker blocked."""
    monkeypatch.setattr(pool_module, "MAX_CHUNK", 1)
    monkeypatch.setattr(pool_module, "INDEX_CHUNK", 1)
    pool = RowPool(workers=2, small_batch=0, task=quick_chunk)
    names = [f"n{i}.json.zst" for i in range(12_000)]
    done = []
    reading = threading.Thread(target=lambda: done.extend(pool.compute_rows(Path("/nowhere"), names)), daemon=True)
    try:
        reading.start()
        reading.join(timeout=120)
        assert not reading.is_alive(), "the workers blocked"
    finally:
        pool.close(wait=False)
    assert sorted(name for name, _ in done) == sorted(names)


def stuck_task(marker: str):
    """A worker task that says it started (`marker` written) and never ends, as a long index build runs on."""
    Path(marker).write_text("started")
    threading.Event().wait()


def test_closing_with_running_work_ended_does_not_wait_for_it(tmp_path):
    """A server that is stopped ends its workers' running work (a million rows' listing indexes take a minute to
    build in one): `close(end_running=True)` returns at once, and the work's future fails."""
    pool = RowPool(workers=2, small_batch=0)
    marker = tmp_path / "started"
    future = pool.submit(stuck_task, str(marker))
    assert future is not None
    wait_for(marker.exists, "the task started in its worker")
    closing = threading.Thread(target=lambda: pool.close(end_running=True), daemon=True)
    closing.start()
    closing.join(timeout=60)  # a condition, not a wait: it returns at once unless it hangs
    assert not closing.is_alive(), "closing waited for the running task"
    with pytest.raises(BrokenProcessPool):
        future.result(timeout=60)


def test_a_reopened_run_builds_the_listing_indexes_its_last_server_stopped_before_building(tmp_path):
    run = shutil.copytree(FIXTURES / "groups2", tmp_path / "groups2")
    catalog = Catalog([run], IndexFiles(tmp_path / "cache"))
    Watcher(catalog, verify=False).poll()
    (indexed,) = catalog.runs.values()
    assert indexed.store.listing_indexes_built()
    built = [name for (name,) in indexed.store.db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")]
    for statement in LISTING_INDEXES[3:-2]:  # as a server stopped in the middle of building them leaves its run
        indexed.store.db.execute(f"DROP INDEX {index_name(statement)}")
    indexed.store.db.execute(f"DROP TABLE {LAST_LISTING_INDEX}")
    indexed.store.close()
    reopened = Catalog([run], IndexFiles(tmp_path / "cache"))
    Watcher(reopened, verify=False).poll()
    (again,) = reopened.runs.values()
    assert again.reopened and again.store.listing_indexes_built()
    assert [name for (name,) in again.store.db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")] \
        == built


def test_what_a_document_decompresses_to_decides_where_it_is_read(tmp_path):
    """A file small on disk that declares 8 MiB of JSON (or declares nothing) goes to the workers; a
    small one that declares a small size is read in the server's process."""
    from skycap_viewer.record.frames import compress, zstd

    (tmp_path / "small.json.zst").write_bytes(compress(b"{}" + b" " * 1000))
    (tmp_path / "explodes.json.zst").write_bytes(compress(b"{}" + b" " * (8 * 2**20)))
    undeclared = zstd.ZstdCompressor()
    (tmp_path / "undeclared.json.zst").write_bytes(undeclared.compress(b"{}") + undeclared.flush())
    assert (tmp_path / "explodes.json.zst").stat().st_size < 4096
    here, there = pool_module.small_here(tmp_path, ["small.json.zst", "explodes.json.zst", "undeclared.json.zst",
                                                     "gone.json.zst"])
    assert here == ["small.json.zst", "gone.json.zst"] and there == ["explodes.json.zst", "undeclared.json.zst"]


def stored_tables(catalog) -> dict:
    """What each run's database holds, by document name (rids, and the order rows came in, aside) and
    what its snapshot says."""
    held = {}
    for run_id, run in catalog.runs.items():
        db = run.store.db
        rows = {name: (*rest, unpack(kept)) for name, *rest, kept in db.execute(
            f"SELECT name, {', '.join(c for c in ROW_COLUMNS.split(', ') if c not in ('rid', 'name', 'kept'))}, kept"
            " FROM rows")}
        annotations = db.execute("SELECT name, key, value FROM annotations JOIN rows USING (rid)"
                                 " ORDER BY 1, 2, 3").fetchall()
        texts = db.execute("SELECT name, text FROM rowtexts JOIN rows USING (rid) ORDER BY 1").fetchall()
        matched = db.execute("SELECT name FROM texts JOIN rows ON rows.rid = texts.rowid WHERE texts MATCH 'tr_'"
                             " ORDER BY 1").fetchall()
        tally = db.execute("SELECT * FROM tally ORDER BY kind, value, flags").fetchall()
        groups = db.execute("SELECT * FROM groups ORDER BY gkey").fetchall()
        indexes = db.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
        snapshot = run.snapshot
        said = (snapshot.row_count, snapshot.facts, snapshot.groups, snapshot.verified, snapshot.sorted,
                snapshot.indexing, snapshot.run_index)
        held[run_id] = (rows, annotations, texts, matched, tally, groups, indexes, said)
    return held


@pytest.mark.slow
def test_rows_groups_and_indexes_made_by_the_workers_are_those_made_here(big_run, tmp_path):
    """A big batch's rows as the workers store them, its groups computed and its indexes built there, hold
    exactly what the server's process makes of them alone (a run index's rows included)."""
    indexed = tmp_path / "indexed"
    shutil.copytree(PULLED / "old", indexed)
    for source in indexed.glob("tr_*.json.zst"):
        for i in range(20):
            shutil.copy(source, indexed / f"c{i}{source.name}")
    here = Catalog([big_run, indexed], IndexFiles(tmp_path / "here"))
    Watcher(here, verify=False).poll()
    elsewhere = Catalog([big_run, indexed], IndexFiles(tmp_path / "elsewhere"))
    pool = RowPool(workers=2, small_batch=0)
    try:
        watcher = Watcher(elsewhere, compute_rows=pool.compute_rows, verify=False, offload=pool.submit,
                          stored_forms=True)
        watcher.poll()
        building = [run.indexes_building for run in elsewhere.runs.values()]
        assert all(building), "a big batch's indexes are built by a worker"
        for future in building:
            future.result()
        watcher.poll()  # publishes the runs whose indexes are built
    finally:
        pool.close()
    assert len(here.runs) == 2 and any(run.store.has_index for run in here.runs.values()), \
        "a run index must be part of the comparison"
    assert stored_tables(elsewhere) == stored_tables(here)


def test_a_cold_index_lists_names_only_and_keeps_the_versions_the_workers_state(big_run, tmp_path, monkeypatch):
    """A run nothing of which is indexed, which the workers read and write, is first listed by name: the server's
    process states no document (a stat each was a third of its own work a record); each file's version is stated
    where it is read, and is the one kept (in memory and in the database), so the next poll, which states every
    file, reads nothing again, and a file rewritten after its read is read again."""
    stated = []
    monkeypatch.setattr(watcher_module, "scan_directory", lambda directory, limit=None: stated.append(
                        (directory, limit)) or index_module.scan_directory(directory, limit))
    read = []
    pool = RowPool(workers=2, small_batch=0)

    def compute_rows(directory, names, **form):
        names = list(names)
        read.append(names)
        return pool.compute_rows(directory, names, **form)

    catalog = Catalog([big_run], IndexFiles(tmp_path / "cache"))
    watcher = Watcher(catalog, compute_rows=compute_rows, verify=False, offload=pool.submit, stored_forms=True)
    try:
        watcher.poll()
        assert stated == [(big_run, watcher_module.GLIMPSE)], \
            "the first listing states no document in the server's process (the glimpse before it, its few)"
        glimpse, rest = read
        assert len(glimpse) == watcher_module.GLIMPSE and sorted(glimpse + rest) == document_names(big_run)
        (run,) = catalog.runs.values()
        on_disk = index_module.scan_directory(big_run)
        assert {name: file_version(*version) for name, *version, _ in run.store.versions()} == on_disk
        watcher.poll()
        assert stated[1:] == [(big_run, None)] and read[2:] == [], \
            "nothing is read again: the versions kept are the files'"
        rewritten = document_names(big_run)[0]
        (big_run / rewritten).write_bytes((big_run / rewritten).read_bytes())
        os.utime(big_run / rewritten, ns=(1, 1))
        watcher.poll()
        assert read[2:] == [[rewritten]]
    finally:
        pool.close()


def test_a_cold_index_reads_the_documents_in_name_order(big_run, tmp_path):
    """A run listed by name only is read in name order, not the directory's (a hash's) order: each chunk's rows
    then hold neighbouring names and ids, whose index entries its commit writes on a few pages, not one each."""
    read = []
    pool = RowPool(workers=2, small_batch=0)

    def compute_rows(directory, names, **form):
        read.append(list(names))
        return pool.compute_rows(directory, read[-1], **form)

    catalog = Catalog([big_run], IndexFiles(tmp_path / "cache"))
    watcher = Watcher(catalog, compute_rows=compute_rows, verify=False, offload=pool.submit, stored_forms=True)
    try:
        watcher.poll()
    finally:
        pool.close()
    glimpse, rest = read  # the glimpse: the first few documents listed, read before the listing
    assert rest == sorted(rest) and sorted(glimpse + rest) == document_names(big_run)
    listed = list(index_module.list_names(big_run))
    assert listed != sorted(listed), "the directory's own order is another"


def test_an_empty_run_the_workers_write_has_no_group_index_until_its_groups_are_computed(big_run, tmp_path):
    """While the workers write an empty run's rows its group index is left out (its keys come in no order: kept
    up row by row, it was a fifth of their writing); the groups, computed once the rows are written, build it,
    and are those the server's process makes alone."""
    def has_group_index(path) -> bool:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'rows_by_group'").fetchone() is not None

    pool = RowPool(workers=2, small_batch=0)
    catalog = Catalog([big_run], IndexFiles(tmp_path / "cache"))
    while_written, batches = [], []

    def compute_rows(directory, names, **form):
        batches.append(names)
        for found in pool.compute_rows(directory, names, **form):
            if len(batches) > 1:  # the glimpse's rows (`Watcher.glimpse`) are read before the batch
                while_written.append(has_group_index(next(iter(catalog.runs.values())).store.path))
            yield found

    watcher = Watcher(catalog, compute_rows=compute_rows, verify=False, offload=pool.submit, stored_forms=True)
    try:
        watcher.poll()
    finally:
        pool.close()
    (run,) = catalog.runs.values()
    assert len(while_written) == len(document_names(big_run)) - watcher_module.GLIMPSE and not any(while_written)
    assert has_group_index(run.store.path)
    here = Catalog([big_run], IndexFiles(tmp_path / "here"))
    Watcher(here, verify=False).poll()
    query = "SELECT * FROM groups ORDER BY gkey"
    assert run.store.db.execute(query).fetchall() == next(iter(here.runs.values())).store.db.execute(query).fetchall()


def test_a_new_runs_first_rows_are_listed_before_its_directory_is_listed_whole(big_run, tmp_path, monkeypatch):
    """A million names take seconds to list: a new run's first documents (the first `GLIMPSE` its directory lists)
    are read and published first, and the listing that follows reads every other document, none of them again."""
    catalog = Catalog([big_run], IndexFiles(tmp_path / "cache"))
    published_when_listed = []

    def scan_directory(directory, limit=None):
        if limit is None:
            published_when_listed.append(catalog.snapshots()[0].row_count)
        return index_module.scan_directory(directory, limit)

    monkeypatch.setattr(watcher_module, "scan_directory", scan_directory)
    read = []

    def compute_rows(directory, names, **form):
        read.extend(names)
        return compute_rows_here(directory, names, **form)

    Watcher(catalog, compute_rows=compute_rows, verify=False).poll()
    assert published_when_listed == [watcher_module.GLIMPSE]
    assert sorted(read) == document_names(big_run) and catalog.snapshots()[0].row_count == len(read)


def test_stated_documents_are_read_smallest_first_and_runs_with_fewer_bytes_first(tmp_path):
    """A stated listing's new documents are read smallest first, in name order among equals (a names-only
    listing's in name order), and a poll reads the run with fewer new bytes first: first rows come soonest."""
    from skycap_viewer.catalog.discovery import RunLocation
    from skycap_viewer.catalog.index import IndexedRun

    run = IndexedRun(RunLocation("r", "p", tmp_path), tmp_path / "r.sqlite", {"run": "r"})
    sizes = {"d.json.zst": 30, "b.json.zst": 10, "c.json.zst": 10, "a.json.zst": 20}
    stated = run.changes({name: file_version(size, 1) for name, size in sizes.items()})
    assert stated.compute == ["b.json.zst", "c.json.zst", "a.json.zst", "d.json.zst"] and stated.size == 70
    unstated = run.changes(dict.fromkeys(sizes))
    assert unstated.compute == sorted(sizes) and unstated.size == 0
    smaller = run.changes({"e.json.zst": file_version(5, 1)})
    work = [(run, stated), (run, unstated), (run, smaller)]
    work.sort(key=watcher_module.Watcher.work_order)
    assert [changes for _, changes in work] == [unstated, smaller, stated]


def test_a_huge_directory_listed_by_name_first_is_listed_as_seldom_as_one_stated(big_run, tmp_path, monkeypatch):
    """A huge directory (a stated listing would take long) whose mtime did not move is not listed again at the
    next poll: its first listing, by name only, counts what stating its documents would have cost
    (`stated_listing_seconds`), not what the names alone took."""
    monkeypatch.setattr(watcher_module, "stated_listing_seconds", lambda directory, names, seconds: 10.0,
                        raising=False)
    stated = []
    monkeypatch.setattr(watcher_module, "scan_directory", lambda directory, limit=None: (
                        limit is None and stated.append(directory)) or index_module.scan_directory(directory, limit))
    os.utime(big_run, ns=(1, 1))  # an mtime long settled
    pool = RowPool(workers=2, small_batch=0)
    catalog = Catalog([big_run], IndexFiles(tmp_path / "cache"))
    watcher = Watcher(catalog, compute_rows=pool.compute_rows, verify=False, offload=pool.submit, stored_forms=True)
    try:
        watcher.poll()
        (run,) = catalog.runs.values()
        assert run.listing_cost == 10.0
        assert {name: file_version(*version) for name, *version, _ in run.store.versions()} == \
            index_module.scan_directory(big_run)
        watcher.poll()
        assert stated == [], "not listed again: its mtime did not move, and a stated listing takes long"
    finally:
        pool.close()


def test_a_stated_listing_is_estimated_from_a_sample_of_stats(big_run, monkeypatch):
    names = index_module.list_names(big_run)
    assert len(names) > index_module.STAT_SAMPLE
    sampled = []
    clock = [0.0]
    monkeypatch.setattr(index_module.time, "monotonic", lambda: clock[0])

    def stat(path):  # a stat takes 1 ms of the clock, and one of them waits 10 s (the CPU was busy elsewhere)
        sampled.append(path)
        clock[0] += 10.0 if len(sampled) == 3 else 0.001

    monkeypatch.setattr(index_module, "file_version_now", stat)
    assert index_module.stated_listing_seconds(big_run, names, 0.5) == pytest.approx(0.5 + 0.001 * len(names))
    assert len(sampled) == index_module.STAT_SAMPLE, "a sample is stated, not every document"


def test_a_machine_with_many_cores_starts_a_bounded_number_of_workers(monkeypatch):
    """64 cores start 8 indexing and 8 search processes, not 64 of each: each holds its own memory."""
    from skycap_viewer.catalog.searcher import SearchPool

    monkeypatch.setattr(pool_module, "core_count", lambda: 64)
    assert RowPool().workers == pool_module.MAX_WORKERS == 8
    assert SearchPool().workers == 8
    monkeypatch.setattr(pool_module, "core_count", lambda: 3)
    assert RowPool().workers == SearchPool().workers == 3


def test_a_worker_writes_its_rows_only_into_the_database_it_was_given(tmp_path):
    """A chunk's rows go into the run's database when it is still the one the server made; into one made
    again (another identity), or deleted, they are not written but given back for the server to store."""
    from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY
    from skycap_viewer.catalog.store import GKEY, RunStore, Written, stored_form

    directory = FIXTURES / "groups"
    names = document_names(directory)
    forms = dict(compute_rows_here(directory, names, group_by=DEFAULT_GROUP_BY))
    assert forms == {name: stored_form(row, DEFAULT_GROUP_BY) for name, row in compute_rows_here(directory, names)}
    store = RunStore(tmp_path / "run.sqlite", {"run": "groups"}, DEFAULT_GROUP_BY)
    versions = {name: file_version_now(directory / name) for name in names}
    for database in ((str(tmp_path / "gone.sqlite"), store.identity), (str(store.path), "made again")):
        given = dict(compute_chunk(str(directory), names, group_by=DEFAULT_GROUP_BY, database=database))
        assert given == {name: (versions[name], form) for name, form in forms.items()}
    assert store.row_count() == 0
    written = dict(compute_chunk(str(directory), names, group_by=DEFAULT_GROUP_BY,
                                 database=(str(store.path), store.identity)))
    assert written == {name: (versions[name], Written(forms[name][0][GKEY])) for name in names}, \
        "each row written, given with its version and the group it touched"
    assert {row.gkey for _, row in written.values()} == {
        key for (key,) in store.db.execute("SELECT gkey FROM rows WHERE gkey IS NOT NULL")} != set()
    assert store.row_count() == len(names)
    assert {name: file_version(*version) for name, *version, _ in store.versions()} == versions
    assert sorted(name for (name,) in store.db.execute("SELECT name FROM rows")) == names
