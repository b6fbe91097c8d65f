"""Index rows on every core: `RowPool.compute_rows` spreads documents over worker processes.

Reading a document is CPU-bound (zstd, JSON, the graph), so one process is bound by the GIL;
worker processes make a cold index as fast as the disk and the cores allow, and leave the
server's own process free to answer requests. Rows come back chunk by chunk as they finish,
so a listing fills in while a big run is indexed. Small batches (a live run's few new records)
stay in this process, where starting workers would cost more than it saves; workers left idle
exit after a while, so a viewer left open on a finished run gives their memory back.

The server has threads, and `fork` after threads may copy a held lock into the child, so workers
start from a `forkserver` (Linux) or are spawned. A worker ignores Ctrl-C (the server shuts the
pool down) and exits by itself when the server disappears, so a killed server leaves no orphans.
"""

import itertools
import multiprocessing
import os
import queue
import signal
import stat
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress

from skycap_viewer.catalog.index import file_version_now, version_parts
from skycap_viewer.catalog.rows import compute_row, unreadable_row
from skycap_viewer.catalog.store import GKEY, STORE_REFUSALS, Written, rows_written, stored_form
from skycap_viewer.printable import say
from skycap_viewer.record.document import record_id_of
from skycap_viewer.record.frames import declared_size, file_limit, set_file_limit

SMALL_BATCH = 64  # fewer documents than this are computed in this process
MAX_CHUNK = 64  # documents per task: enough to amortise the round trip; few enough that rows stream in
# and that the last (the largest, when the watcher sends them smallest first) chunk leaves no core idle for long
INDEX_CHUNK = 512  # documents per indexing task after each worker's first: a task is a write transaction, whose
# commit and round trip cost about as much at 64 rows as at 512 (a commit rewrites each index page its rows touched)
WORKER_NICENESS = 10  # workers yield the cores to the server's own process, which answers requests
MAX_WORKERS = 8  # processes a pool (indexing, search) starts at most, whatever the cores
IDLE_SECONDS = 10.0  # workers left idle this long exit (a live run's next big batch starts them again)
WATCH_SECONDS = 0.5  # how often `watched` looks for a dead worker its executor did not notice
IN_PROCESS_BYTES = 256 * 1024  # a document file larger than this on disk is never read in the server's process
IN_PROCESS_JSON = 4 * 2**20  # nor one whose frame does not declare that it decompresses to at most this
FRAME_HEADER_BYTES = 18  # a zstd frame header's most: where it declares its content size
_started = None  # in a worker: the queue it tells which task it started (set by `start_worker`)


def worker_count() -> int:
    """Worker processes a pool starts: one per core, at most `MAX_WORKERS` (each holds its own memory, and a
    64-core machine's cold index is bound by the server's process and the disk long before)."""
    return min(core_count(), MAX_WORKERS)


def core_count() -> int:
    """Cores this process may run on (its affinity, not the machine's total)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def compute_chunk(directory: str, names: list[str], verify: bool = False, task: int | None = None,
                  group_by: tuple | None = None, database: tuple | None = None):
    """Worker task: the rows of some documents of one directory, with `group_by` as the store keeps them
    (`store.stored_form`: the server's process then only inserts them), and given the run's `database`
    ((path, identity)) written into it here (`store.rows_written`), each given back with the version its file
    was stated at just before it was read: (version, `Written`) when written, else (version, stored form). It
    says first that it started (`task`), so when a worker dies the server knows which chunks were being read."""
    announce(task)
    if database is None:
        return [(name, as_stored(compute_row(directory, name, verify), group_by)) for name in names]
    return written_here(list(stated_rows(directory, names, verify, group_by)), *database)


def stated_rows(directory, names, verify: bool, group_by: tuple | None):
    """(name, version, stored form) for each document, its `file_version` (None: gone) stated before it is read,
    so that a version is never newer than what was read: the server's first listing of a run need not state
    every file itself (`index.list_names`), and a file rewritten meanwhile is read again at the next listing."""
    for name in names:
        version = file_version_now(os.path.join(directory, name))
        yield name, version, as_stored(compute_row(str(directory), name, verify), group_by)


def written_here(rows: list[tuple], path: str, identity: str) -> list[tuple]:
    """`rows` (name, version, stored form) written into the run's database by this process, given back as
    (name, (version, `Written`)); a row the database refuses, or of a document gone (the server says it is gone),
    is given back as (name, (version, form)) for the server to store."""
    forms = [(name, *version_parts(version), form) for name, version, form in rows if version is not None]
    try:
        written = bool(forms) and rows_written(path, identity, forms)
    except STORE_REFUSALS:  # the database deleted (being made again), locked too long, or a row holds a value it
        written = False  # refuses: the server stores them (and a refused row as that record's problem)
    return [(name, (version, Written(form[0][GKEY]) if written and version is not None else form))
            for name, version, form in rows]


def as_stored(row: dict, group_by: tuple | None):
    """`row`, or with `group_by` its `stored_form`."""
    return row if group_by is None else stored_form(row, group_by)


def announce(task: int | None) -> None:
    """In a worker: tell the server that `task` is being read (a task run in isolation has none)."""
    if task is not None and _started is not None:
        _started.put(task)


def compute_rows_here(directory, names, verify: bool = False, group_by: tuple | None = None, stated: bool = False):
    """(name, row) for each document, computed in this process (as stored, with `group_by`); with `stated`, each
    row as (the version its file was stated at before it was read, row), as `compute_chunk` gives them."""
    if stated:
        yield from ((name, (version, form)) for name, version, form in stated_rows(directory, names, verify, group_by))
        return
    for name in names:
        yield name, as_stored(compute_row(str(directory), name, verify), group_by)


def small_here(directory, names) -> tuple[list[str], list[str]]:
    """(names to read in this process, names for the workers): what a document costs is what it
    decompresses to, not its size on disk (12 KB of zstd can hold 120 MB of JSON), so only one whose
    frame header declares at most `IN_PROCESS_JSON` bytes, in a file of at most `IN_PROCESS_BYTES`,
    is read here; any other may take seconds of parsing that hold the server's GIL (or its memory),
    and goes to a worker, whose death or slowness costs the server nothing."""
    here, there = [], []
    for name in names:
        (here if light_enough(os.path.join(directory, name)) else there).append(name)
    return here, there


def light_enough(path: str) -> bool:
    """Whether the document at `path` may be read in the server's process (see `small_here`). It is
    opened without blocking (a FIFO would wait for a writer) and only a regular file's header is read;
    anything else, gone or unreadable, is refused by the reader at no cost, so it stays here."""
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            status = os.fstat(handle.fileno())
            if not stat.S_ISREG(status.st_mode):
                return True
            declared = declared_size(handle.read(FRAME_HEADER_BYTES))
    except OSError:
        return True
    return status.st_size <= IN_PROCESS_BYTES and declared is not None and declared <= IN_PROCESS_JSON


def killed_row(directory: str, name: str) -> dict:
    """The row of a document whose reading killed the worker reading it, read alone and again."""
    return unreadable_row(record_id_of(name), f"{os.path.join(directory, name)}: reading it killed the "
                          "indexing worker (out of memory, or a signal); the rest of the run is listed")


def chunk_size(count: int, workers: int) -> int:
    """Documents a chunk of `count` holds: about 8 chunks per worker (capped), so every core stays busy to the end,
    at most `MAX_CHUNK` documents."""
    return max(1, min(MAX_CHUNK, -(-count // (workers * 8))))


def in_chunks(names, size: int):
    """`names` (any iterable, read as the chunks are) in lists of `size`."""
    names = iter(names)
    while chunk := list(itertools.islice(names, size)):
        yield chunk


def index_chunks(names: list[str], workers: int) -> list[list[str]]:
    """A search's chunks (`in_chunks` of `chunk_size`), for indexing: each worker's first chunk as small, so the
    first rows are listed at once, the rest up to `INDEX_CHUNK` documents (still about 8 a worker), so fewer
    commits and round trips a row."""
    first = list(itertools.islice(in_chunks(names, chunk_size(len(names), workers)), workers))  # not all cut
    rest = names[sum(map(len, first)):]
    size = max(1, min(INDEX_CHUNK, -(-len(rest) // (workers * 8))))
    return first + [rest[i : i + size] for i in range(0, len(rest), size)]


def start_method() -> str:
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def start_worker(lifeline, limit: int, started, niceness: int = WORKER_NICENESS):
    """Worker initializer: leave Ctrl-C to the server, run `niceness` below it, read with the server's
    file limit, and exit as soon as it is gone.

    `lifeline` is the read end of a pipe whose write end only the server holds: the read ends when
    the server's process does, however it ends. (Not "when the parent goes": a forkserver's children
    keep it alive, so it never goes; not a pid probe: a killed server stays a zombie until reaped.)"""
    global _started
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_file_limit(limit)
    _started = started
    with suppress(AttributeError, OSError):  # below the server: indexing and verifying never slow a request
        os.nice(niceness)

    def exit_with_the_server():
        with suppress(EOFError, OSError):
            lifeline.recv_bytes()
        os._exit(0)

    threading.Thread(target=exit_with_the_server, name="lifeline", daemon=True).start()


def watched(executor: ProcessPoolExecutor) -> ProcessPoolExecutor:
    """`executor`, watched by a thread that breaks it when one of its workers died and it did not notice.

    A worker killed (out of memory, a signal) in the middle of writing its answer leaves half a message in the
    result pipe. The executor's own thread then waits in `recv` for the rest, which never comes (this process
    holds the pipe's write end too): no future ever fails, every wait on one hangs, and so does the exit, which
    joins that thread. Python 3.10 to 3.14 all do this. The watch sees a worker dead at two looks in a row,
    `WATCH_SECONDS` apart, with the executor not broken, and breaks it (`break_stuck`); the futures then fail with
    `BrokenProcessPool`, as they would had the executor noticed, and the callers' usual recovery follows. It holds
    the executor's own process table and result pipe (a shut down executor lets go of them, its thread does not)."""
    watch = (weakref.ref(executor), executor._processes, executor._result_queue)
    threading.Thread(target=watch_workers, args=watch, name="pool-watch", daemon=True).start()
    return executor


def watch_workers(reference, processes: dict, result_queue):
    """The watch's loop: until the executor is broken, or shut down (its workers all exited, or none started)."""
    suspects = set()
    while True:
        time.sleep(WATCH_SECONDS)
        executor = reference()
        if executor is not None and executor._broken:
            return
        codes = {pid: exit_code(process) for pid, process in list(processes.items())}
        dead = {pid for pid, code in codes.items() if code not in (None, 0)}
        if dead & suspects:
            break_stuck(reference, processes, result_queue)
            return
        if not dead and all(code == 0 for code in codes.values()) and (codes or executor is None):
            return  # shut down: its workers all exited, or it was let go before it started any
        suspects = dead
        del executor


def exit_code(process) -> int | None:
    """`process.exitcode`; 0 for one closed (it ended and was reaped)."""
    try:
        return process.exitcode
    except ValueError:
        return 0


def break_stuck(reference, processes: dict, result_queue):
    """End what is left of a stuck executor: its living workers (they wait forever for the write lock the dead
    one held), then this process's write end of its result pipe, so that its thread reads the pipe's end, marks
    the pool broken and fails its futures. The end is taken from its connection before it is closed: the
    executor, once broken, may be shut down (closing that connection) while `os.close` lets other threads run,
    and a second close of the number would fail, or close another file that got it meanwhile."""
    for process in list(processes.values()):
        if exit_code(process) is None:
            process.kill()
            process.join()
    executor = reference()
    if executor is not None and executor._broken:
        return  # it noticed meanwhile: its own shutdown closes the pipe
    writer = result_queue._writer
    handle, writer._handle = writer._handle, None
    if handle is not None:
        os.close(handle)


class IdleWorkers:
    """Worker processes started when work comes and stopped after `idle_seconds` with none (their memory
    goes back to the machine), or by `close()`: the life cycle the indexing pool and the search pool share.
    A subclass starts `self.executor` under `self.lock` and marks work with `_busy()` and `_done()`."""

    def __init__(self, idle_seconds: float):
        self.idle_seconds = idle_seconds
        self.lock = threading.RLock()  # a generator finalised while the lock is held may take it again
        self.executor: ProcessPoolExecutor | None = None
        self.busy = 0  # batches or searches in flight: the workers are not idle
        self.idle_timer: threading.Timer | None = None
        self.closed = False

    def _busy(self):
        """One more piece of work (the caller holds the lock): no idle stop while it runs."""
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        self.busy += 1

    def _done(self):
        """Once no work is left, stop the workers after `idle_seconds`."""
        with self.lock:
            self.busy -= 1
            if self.busy or self.closed or self.executor is None:
                return
            self.idle_timer = threading.Timer(self.idle_seconds, self._discard, args=(self.executor, True))
            self.idle_timer.daemon = True
            self.idle_timer.start()

    def _discard(self, executor, only_if_idle: bool = False):
        """Stop `executor` if it is still the pool's (and, when asked, still idle)."""
        with self.lock:
            if executor is not self.executor or (only_if_idle and self.busy):
                return
            self.executor = None
        executor.shutdown(wait=False, cancel_futures=True)

    def close(self, wait: bool = True, end_running: bool = False):
        """Stop the workers: queued work is dropped; with `wait`, running work finishes first, unless
        `end_running` ends it (its workers terminated: the executor then fails its futures): a server that is
        stopped does not wait the minute a million rows' listing indexes take to build in a worker (a worker's
        writes are transactions: what one had not committed is rolled back, and done again at the next start)."""
        with self.lock:
            self.closed = True
            executor, self.executor = self.executor, None
            if self.idle_timer is not None:
                self.idle_timer.cancel()
        if executor is not None:
            if end_running:  # the executor's own processes: it gives no public way to end running work
                for process in list((executor._processes or {}).values()):
                    process.terminate()
            executor.shutdown(wait=wait, cancel_futures=True)


class RowPool(IdleWorkers):
    """Worker processes, one per core (at most `MAX_WORKERS`): started by a big batch, stopped after a while
    idle and by `close()`."""

    def __init__(self, workers: int | None = None, small_batch: int = SMALL_BATCH, idle_seconds: float = IDLE_SECONDS,
                 task=compute_chunk):
        """`task` is what a worker runs on a chunk (`compute_chunk`; a test may pass one that dies on a document)."""
        super().__init__(idle_seconds)
        self.workers = workers or worker_count()
        self.task = task
        self.small_batch = small_batch
        self.lifeline = None  # (read end for the workers, write end kept here and never written)
        self.started = None  # the queue workers put the task they start on...
        self.started_tasks: set[int] = set()  # ...drained as results come, those still running kept
        self.tasks = itertools.count()

    def compute_rows(self, directory, names, verify: bool = False, group_by: tuple | None = None,
                     database: tuple | None = None):
        """(name, row) for each document, in the order chunks finish (a generator, like the watcher wants);
        with `group_by`, each row as the store keeps it (`store.stored_form`), and with `database` ((path,
        identity), and `group_by`) each as (the version its file was stated at before it was read, the row, or
        `Written` where the workers wrote it into the database: `compute_chunk`)."""
        names = list(names)
        stated = database is not None
        if len(names) < self.small_batch or self.workers < 2:
            here, names = small_here(directory, names)
            yield from compute_rows_here(directory, here, verify, group_by, stated)
        pending = index_chunks(names, self.workers) if names else []
        extra = {key: value for key, value in (("group_by", group_by), ("database", database)) if value is not None}
        while pending:
            try:
                futures = self._submit(str(directory), pending, verify, extra)
            except (OSError, RuntimeError) as error:  # cannot start processes here (a sandbox, a limit)
                say(f"skycap-viewer: indexing in one process: {type(error).__name__}: {error}")
                self.workers = 1
                yield from compute_rows_here(directory, [name for chunk in pending for name in chunk], verify,
                                             group_by, stated)
                return
            if futures is None:  # closed: the server is stopping
                return
            failed = yield from self._collect(futures)
            if not failed:
                return
            # a worker died: what it may have been reading is read alone, the rest again in fresh workers
            self._discard(self.executor)
            started = self._started_tasks() & {task for task, _ in failed}
            if not started:  # no word from the dead worker: every unread chunk is a suspect (no endless retry)
                started = {task for task, _ in failed}
            pending = [chunk for task, chunk in failed if task not in started]
            for task, chunk in failed:
                if task in started:
                    yield from self._isolated(str(directory), chunk, verify, extra)

    def _collect(self, futures: dict):
        """Yield the rows of `futures` ({future: (task, names)}) as they finish; return the (task, names)
        that a dead worker left unread (empty when none did)."""
        finished = queue.SimpleQueue()  # done callbacks, not as_completed(): they fire for cancelled ones too
        for future in futures:
            future.add_done_callback(finished.put)
        broken = False
        try:
            for _ in range(len(futures)):
                future = finished.get()
                self._drain_started()
                if future.cancelled():  # close() dropped what was queued
                    return []
                try:
                    rows = future.result()
                except BrokenProcessPool:  # a worker died (killed, out of memory)
                    broken = True
                    continue
                self.started_tasks.discard(futures[future][0])
                yield from rows
                del futures[future]
            return [futures[future] for future in futures] if broken else []
        finally:
            if not broken:
                for future in futures:  # the caller stopped early: drop what has not started
                    future.cancel()
            self._done()

    def _isolated(self, directory: str, names: list[str], verify: bool, extra: dict):
        """Read `names` alone in a fresh worker; when it dies too, halve them down to the one document
        that kills it, which is listed as unreadable. Never in this process: it would die as well."""
        if self.closed:
            return
        executor = self._executor(1)
        try:
            rows = executor.submit(self.task, directory, names, verify, **extra).result()
        except BrokenProcessPool:
            rows = None
        finally:
            executor.shutdown(wait=False, cancel_futures=True)
        if rows is not None:
            yield from rows
        elif len(names) == 1:
            killed = as_stored(killed_row(directory, names[0]), extra.get("group_by"))
            yield names[0], (None, killed) if "database" in extra else killed  # its version stated when stored
        else:
            yield from self._isolated(directory, names[: len(names) // 2], verify, extra)
            yield from self._isolated(directory, names[len(names) // 2 :], verify, extra)

    def submit(self, task, *args):
        """Run `task(*args)` in a worker (a future), or None where there are no workers (one core, a
        sandbox, closed): the caller then does it itself. For work that only a big batch brings (its
        groups, its indexes), so it never holds the server's own process."""
        with self.lock:
            if self.closed or self.workers < 2:
                return None
            try:
                if self.executor is None:
                    self.executor = self._executor(self.workers)
                future = self.executor.submit(task, *args)
            except BrokenProcessPool:  # a worker died while the pool was idle: the caller does it
                self._discard(self.executor)
                return None
            except (OSError, RuntimeError):  # cannot start processes here
                return None
            self._busy()
        future.add_done_callback(lambda _: self._done())
        return future

    def _drain_started(self):
        """Read what the workers said they started: unread, the queue's pipe fills after a few thousand
        tasks (a run of ~200k documents) and every worker blocks on telling it."""
        while self.started is not None and not self.started.empty():
            self.started_tasks.add(self.started.get())

    def _started_tasks(self) -> set[int]:
        """The tasks workers said they started and that did not finish, since the last call."""
        self._drain_started()
        started, self.started_tasks = self.started_tasks, set()
        return started

    def _submit(self, directory: str, chunks: list[list[str]], verify: bool, extra: dict):
        """{future: (task, names)} for every chunk, or None once closed."""
        with self.lock:
            if self.closed:
                return None
            try:
                futures = self._submit_all(directory, chunks, verify, extra)
            except BrokenProcessPool:  # a worker died while the pool was idle: start afresh
                self.executor.shutdown(wait=False, cancel_futures=True)
                self.executor = None
                futures = self._submit_all(directory, chunks, verify, extra)
            self._busy()
            return futures

    def _submit_all(self, directory: str, chunks: list[list[str]], verify: bool, extra: dict) -> dict:
        if self.executor is None:
            self.executor = self._executor(self.workers)
        futures = {}
        for chunk in chunks:
            task = next(self.tasks)
            futures[self.executor.submit(self.task, directory, chunk, verify, task, **extra)] = (task, chunk)
        return futures

    def _executor(self, workers: int) -> ProcessPoolExecutor:
        """Fresh worker processes that read as the server does and tell it which task they start."""
        context = multiprocessing.get_context(start_method())
        if context.get_start_method() == "forkserver":
            context.set_forkserver_preload([compute_row.__module__])  # workers start with it imported
        self.lifeline = self.lifeline or context.Pipe(duplex=False)
        self.started = self.started or context.SimpleQueue()
        return watched(ProcessPoolExecutor(workers, mp_context=context, initializer=start_worker,
                                           initargs=(self.lifeline[0], file_limit(), self.started)))
