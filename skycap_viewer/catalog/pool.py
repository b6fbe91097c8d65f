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

import multiprocessing
import os
import queue
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress

from skycap_viewer.catalog.rows import compute_row

SMALL_BATCH = 64  # fewer documents than this are computed in this process
MAX_CHUNK = 64  # documents per task: enough to amortise the round trip; few enough that rows stream in
# and that the last (largest: the watcher sends smallest first) chunk does not leave a core idle for long
WORKER_NICENESS = 10  # workers yield the cores to the server's own process, which answers requests
IDLE_SECONDS = 10.0  # workers left idle this long exit (a live run's next big batch starts them again)


def core_count() -> int:
    """Cores this process may run on (its affinity, not the machine's total)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def compute_chunk(directory: str, names: list[str], verify: bool = False) -> list[tuple[str, dict]]:
    """Worker task: the rows of some documents of one directory."""
    return [(name, compute_row(directory, name, verify)) for name in names]


def compute_rows_here(directory, names, verify: bool = False):
    """(name, row) for each document, computed in this process."""
    for name in names:
        yield name, compute_row(str(directory), name, verify)


def chunked(names: list[str], workers: int) -> list[list[str]]:
    """Split into about 8 chunks per worker (capped), so every core stays busy to the end."""
    size = max(1, min(MAX_CHUNK, -(-len(names) // (workers * 8))))
    return [names[i : i + size] for i in range(0, len(names), size)]


def start_method() -> str:
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _start_worker(lifeline):
    """Worker initializer: leave Ctrl-C to the server, run below it, and exit as soon as it is gone.

    `lifeline` is the read end of a pipe whose write end only the server holds: the read ends when
    the server's process does, however it ends. (Not "when the parent goes": a forkserver's children
    keep it alive, so it never goes; not a pid probe: a killed server stays a zombie until reaped.)"""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with suppress(AttributeError, OSError):  # below the server: indexing and verifying never slow a request
        os.nice(WORKER_NICENESS)

    def exit_with_the_server():
        with suppress(EOFError, OSError):
            lifeline.recv_bytes()
        os._exit(0)

    threading.Thread(target=exit_with_the_server, name="lifeline", daemon=True).start()


class RowPool:
    """Worker processes, one per core: started by a big batch, stopped after a while idle and by `close()`."""

    def __init__(self, workers: int | None = None, small_batch: int = SMALL_BATCH, idle_seconds: float = IDLE_SECONDS):
        self.workers = workers or core_count()
        self.small_batch = small_batch
        self.idle_seconds = idle_seconds
        self.lock = threading.RLock()  # a generator finalised while the lock is held may take it again
        self.executor: ProcessPoolExecutor | None = None
        self.batches = 0  # batches in flight: the workers are not idle
        self.idle_timer: threading.Timer | None = None
        self.closed = False
        self.lifeline = None  # (read end for the workers, write end kept here and never written)

    def compute_rows(self, directory, names, verify: bool = False):
        """(name, row) for each document, in the order chunks finish (a generator, like the watcher wants)."""
        names = list(names)
        if len(names) < self.small_batch or self.workers < 2:
            yield from compute_rows_here(directory, names, verify)
            return
        try:
            futures = self._submit(str(directory), chunked(names, self.workers), verify)
        except (OSError, RuntimeError) as error:  # cannot start processes here (a sandbox, a limit)
            print(f"skycap-viewer: indexing in one process: {type(error).__name__}: {error}", file=sys.stderr)
            self.workers = 1
            yield from compute_rows_here(directory, names, verify)
            return
        if futures is None:  # closed: the server is stopping
            return
        # done callbacks, not as_completed(): they also fire for futures that close() cancels
        finished = queue.SimpleQueue()
        for future in futures:
            future.add_done_callback(finished.put)
        try:
            for _ in range(len(futures)):
                future = finished.get()
                if future.cancelled():  # close() dropped what was queued
                    return
                try:
                    rows = future.result()
                except BrokenProcessPool:  # a worker died (killed, out of memory): finish here
                    self._discard(self.executor)
                    yield from compute_rows_here(directory, [n for chunk in futures.values() for n in chunk], verify)
                    return
                del futures[future]
                yield from rows
        finally:
            for future in futures:  # the caller stopped early: drop what has not started
                future.cancel()
            self._batch_done()

    def _submit(self, directory: str, chunks: list[list[str]], verify: bool):
        """{future: names} for every chunk, or None once closed."""
        with self.lock:
            if self.closed:
                return None
            if self.idle_timer is not None:
                self.idle_timer.cancel()
            try:
                futures = self._submit_all(directory, chunks, verify)
            except BrokenProcessPool:  # a worker died while the pool was idle: start afresh
                self.executor.shutdown(wait=False, cancel_futures=True)
                self.executor = None
                futures = self._submit_all(directory, chunks, verify)
            self.batches += 1
            return futures

    def _submit_all(self, directory: str, chunks: list[list[str]], verify: bool) -> dict:
        if self.executor is None:
            context = multiprocessing.get_context(start_method())
            if context.get_start_method() == "forkserver":
                context.set_forkserver_preload([compute_row.__module__])  # workers start with it imported
            self.lifeline = self.lifeline or context.Pipe(duplex=False)
            self.executor = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_start_worker,
                                                initargs=(self.lifeline[0],))
        return {self.executor.submit(compute_chunk, directory, chunk, verify): chunk for chunk in chunks}

    def _batch_done(self):
        """Once no batch is left, stop the workers after `idle_seconds`: their memory goes back."""
        with self.lock:
            self.batches -= 1
            if self.batches or self.closed or self.executor is None:
                return
            self.idle_timer = threading.Timer(self.idle_seconds, self._discard, args=(self.executor, True))
            self.idle_timer.daemon = True
            self.idle_timer.start()

    def _discard(self, executor, only_if_idle: bool = False):
        """Stop `executor` if it is still the pool's (and, when asked, still idle)."""
        with self.lock:
            if executor is not self.executor or (only_if_idle and self.batches):
                return
            self.executor = None
        executor.shutdown(wait=False, cancel_futures=True)

    def close(self):
        """Stop the workers: queued chunks are dropped, running ones finish first."""
        with self.lock:
            self.closed = True
            executor, self.executor = self.executor, None
            if self.idle_timer is not None:
                self.idle_timer.cancel()
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
