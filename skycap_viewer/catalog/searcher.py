"""Search documents on every core: `SearchPool.search` reads and matches them in worker processes.

A document is decompressed, parsed and matched in a worker, never in the server's process, so a
big one costs the server neither its GIL nor its memory; only the hits come back. A regex can
backtrack for hours (`(a+)+$` on `aaaa…b`), so each document's matching has a deadline
(`MATCH_SECONDS`): the worker's alarm interrupts the match (Python's regex engine checks for
signals as it goes) and the document is reported as skipped. A worker that dies (out of memory, a
signal) breaks the pool: the documents not yet read are reported skipped, and the next search
starts fresh workers. The
workers start as the indexing pool's do (`pool.start_worker`: niced, though less than indexing,
the server's file limit, gone with the server) and exit after a while idle.
"""

import multiprocessing
import queue
import re
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass

from skycap_viewer.catalog.pool import (
    IDLE_SECONDS,
    IdleWorkers,
    chunk_size,
    in_chunks,
    start_method,
    start_worker,
    watched,
    worker_count,
)
from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import document_path, document_text, parse_document_text, read_regular_file
from skycap_viewer.record.frames import file_limit
from skycap_viewer.record.search import Query, document_hits, may_match, shown_may_match
from skycap_viewer.record.sidecars import present_payload, tokens_of

SEARCH_NICENESS = 5  # below the server's own process (requests first), above indexing and verification
# (niceness 10): someone is waiting for a search, nobody for the background sidecar checks
MATCH_SECONDS = 2.0  # the most one document's matching may take; past it the document is skipped
DIED = "the worker reading it died (out of memory, or a signal)"
LISTS_TOKENS = re.compile(r'"tokens"\s*:\s*\{')  # a tokens sidecar manifest, or a node's token slices
AHEAD = 4  # chunks handed to each worker at a time: every core kept busy, searches running side by side take turns


@dataclass
class Found:
    """What searching one document gave: its hits, or why it was skipped."""

    record_id: str
    hits: list
    capped: bool = False
    skipped: str | None = None


class MatchTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise MatchTimeout


@contextmanager
def deadline(seconds: float):
    """Interrupt the block after `seconds` (main thread only: where workers and commands run)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def search_document(directory: str, record_id: str, query: Query, seconds: float = MATCH_SECONDS) -> Found:
    """One document's hits, read with the record readers (bounded decompression, the schema check); a
    document that cannot hold the text and has no tokens to search is not parsed (`may_match`). Its
    tokens sidecar is read only when the query searches the shown text and the document lists tokens,
    and its arrays decoded only when their text may hold it too (`shown_may_match`); one that cannot be
    read leaves the message text searched (the hits say `in: message`)."""
    path = document_path(directory, record_id)
    try:
        text = document_text(read_regular_file(path), path)
        with_tokens = query.within == "shown" and LISTS_TOKENS.search(text) is not None
        in_message = may_match(text, query)
        if not with_tokens and not in_message:
            return Found(record_id, [])  # the text is nowhere in the document: no need to parse it
        document = parse_document_text(text, path)
        del text
    except RecordError as error:
        return Found(record_id, [], skipped=f"unreadable: {error.problem}")
    tokens = None
    if with_tokens:
        try:
            present = present_payload(directory, document, "tokens")
            if not in_message and (present is None
                                   or not shown_may_match(present[1], document["sidecars"]["tokens"], query)):
                return Found(record_id, [])  # nor in the tokens' text: no need to decode their arrays
            tokens = tokens_of(document, present)
        except RecordError:
            pass  # the Path tab shows the message text of a record whose tokens cannot be read
    try:
        with deadline(seconds):
            hits, capped = document_hits(document, query, record_id, tokens)
    except MatchTimeout:
        return Found(record_id, [], skipped=f"matching took longer than {seconds:g} s, the limit per document")
    return Found(record_id, hits, capped)


def search_chunk(directory: str, record_ids: list[str], query: Query, seconds: float) -> list[Found]:
    """Worker task: search some documents of one directory."""
    return [search_document(directory, record_id, query, seconds) for record_id in record_ids]


class SearchPool(IdleWorkers):
    """Worker processes for searches: started by the first search, stopped after `idle_seconds` idle."""

    def __init__(self, workers: int | None = None, idle_seconds: float = IDLE_SECONDS,
                 seconds: float = MATCH_SECONDS):
        super().__init__(idle_seconds)
        self.workers = workers or worker_count()
        self.seconds = seconds
        self.lifeline = None

    def search(self, directory, record_ids, query: Query, count: int | None = None):
        """`Found` for each document, in the order chunks finish (a generator: closing it drops the rest).
        `record_ids` may be an iterator, of `count` ids: it is read as chunks are handed out.

        Only `AHEAD` chunks a worker are handed out at a time, the next as one comes back: handing out a
        million documents at once would cost seconds before the first was read, and would queue every
        later search behind this one's last document."""
        executor = self._acquire()
        if executor is None:
            return
        if count is None:
            record_ids = list(record_ids)
            count = len(record_ids)
        chunks = in_chunks(record_ids, chunk_size(count, self.workers))
        finished = queue.SimpleQueue()
        pending = {}

        def hand_out():
            chunk = next(chunks, None)
            if chunk is not None:
                future = executor.submit(search_chunk, str(directory), chunk, query, self.seconds)
                pending[future] = chunk
                future.add_done_callback(finished.put)  # fires for a cancelled future too

        try:
            for _ in range(self.workers * AHEAD):
                hand_out()
            while pending:
                future = finished.get()
                chunk = pending.pop(future)
                if future.cancelled():  # the pool was closed: the server is stopping
                    return
                found = []
                try:
                    found = future.result()
                    hand_out()
                except BrokenProcessPool:  # every document not read yet is reported, none silently lost
                    self._discard(executor)
                    unread = ([] if found else [chunk]) + list(pending.values()) + list(chunks)
                    found += [Found(record_id, [], skipped=DIED) for lost in unread for record_id in lost]
                    pending.clear()
                except RuntimeError:  # the pool was closed while handing out more: the server is stopping
                    return
                yield from found
        finally:
            for future in pending:
                future.cancel()
            self._done()

    def _acquire(self) -> ProcessPoolExecutor | None:
        with self.lock:
            if self.closed:
                return None
            if self.executor is None:
                context = multiprocessing.get_context(start_method())
                self.lifeline = self.lifeline or context.Pipe(duplex=False)
                self.executor = watched(ProcessPoolExecutor(
                    self.workers, mp_context=context, initializer=start_worker,
                    initargs=(self.lifeline[0], file_limit(), None, SEARCH_NICENESS)))
            self._busy()
            return self.executor

    def close(self, wait: bool = False):
        """Stop the search workers, by default without waiting: a search being matched is of no use any
        more. A command that has read every answer waits (nothing is left running): Python 3.10's exit
        hook may otherwise wake the executor's thread through a pipe that thread is closing."""
        super().close(wait=wait)
