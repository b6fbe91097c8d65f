"""Run-wide searches in the background: started by a request, polled by cursor, bounded, given up.

A search reads its documents in the search pool's workers (`catalog/searcher.py`) on a thread of
its own, appending hits as chunks come back; requests only read what it has found so far, so
listings never wait for it. The first request of a search waits (up to `WAIT_SECONDS`) until
there are `limit` hits or the run is read, and says `done`; later requests pass `next_cursor`
(`<search token>-<offset>`) for more. A search reads ahead of the pages asked for by one page (the
largest asked), then waits to be asked: a client that wanted only the first page leaves the workers
to the next search, instead of sharing them with every search it started before (each would read on
until the run's end or `IDLE_SECONDS` unpolled). A search is keyed by its parameters and the index generation:
the same search asked again, while it runs or once done, is answered from it (a repeat costs no
reading). Bounds: `MAX_SEARCHES` kept (the least recently asked one is cancelled and dropped),
`MAX_HITS` hits each (then the search stops and says `capped`); a running search nobody polls for
`IDLE_SECONDS` is cancelled and freed, a finished one is dropped after `KEPT_SECONDS` unasked.
"""

import secrets
import sqlite3
import threading
import time
from collections import OrderedDict

from skycap_viewer.catalog.searcher import SearchPool
from skycap_viewer.errors import ApiError
from skycap_viewer.record.search import Query

MAX_SEARCHES = 4
MAX_HITS = 10_000  # per search: with snippets of at most 280 code points, a few MiB at most
MAX_SKIPPED_SHOWN = 100  # skipped documents named in an answer (all are counted)
WAIT_SECONDS = 2.0  # the longest a request waits for its page before answering with what there is
IDLE_SECONDS = 30.0
KEPT_SECONDS = 300.0


class Search:
    """One search's progress: hits in the order documents finish, the documents skipped and why."""

    def __init__(self, key, query: Query, directory, listing):
        """`listing()` is a context manager giving (readable documents, the unreadable ones as skipped, an
        iterator over the readable ids), entered by the search's thread (`views.run.listing.searched_ids`)."""
        self.key = key
        self.token = secrets.token_hex(8)
        self.query = query
        self.directory = directory
        self.listing = listing
        self.listed = False  # the documents are counted: a page waits for it
        self.total_documents = 0
        self.hits: list[dict] = []
        self.skipped: list[dict] = []  # the unreadable rows (never read again), then documents the workers skipped
        self.scanned = 0
        self.capped = False
        self.done = False
        self.cancelled = False
        self.error: str | None = None  # why the search stopped early (no worker could start, the index is rebuilt)
        self.asked = time.monotonic()
        self.waiting = 0  # requests waiting on a page now: the search is not idle while one does
        self.wanted = 0  # hits the search reads up to before it waits to be asked (`page` raises it)
        self.paused = False  # it holds what it was asked for and waits to be asked for more
        self.changed = threading.Condition()

    def run(self, pool: SearchPool):
        """The feeding thread: list the documents, read every one, stop at the hit cap, or when cancelled or
        unpolled."""
        try:
            with self.listing() as (readable, unreadable, record_ids):
                with self.changed:
                    self.total_documents = readable + len(unreadable)
                    self.skipped = unreadable
                    self.scanned = len(unreadable)
                    self.listed = True
                    self.changed.notify_all()
                self.read(pool, record_ids, readable)
        except (OSError, RuntimeError) as error:  # worker processes cannot start here (a sandbox, a limit)
            self.error = f"the search could not start its worker processes: {type(error).__name__}: {error}"
        except ApiError as error:  # the run's index is being made again
            self.error = error.detail
        except sqlite3.Error as error:  # the ids are read as the search goes: its index failed it on the way
            self.error = f"the run's index could not be read: {error}"
        finally:
            with self.changed:
                self.done = True
                self.changed.notify_all()

    def read(self, pool: SearchPool, record_ids, count: int):
        """Read the `count` documents of `record_ids` in the pool's workers, keeping their hits."""
        found = pool.search(self.directory, record_ids, self.query, count)
        try:
            for result in found:
                if not self.asked_for_more():
                    self.cancelled = True
                    break
                with self.changed:
                    self.scanned += 1
                    if result.skipped:
                        self.skipped.append({"trajectory_id": result.record_id, "reason": result.skipped})
                    room = MAX_HITS - len(self.hits)
                    self.hits.extend(result.hits[:room])
                    self.capped = self.capped or result.capped or len(result.hits) > room
                    self.changed.notify_all()
                if len(self.hits) >= MAX_HITS:
                    self.capped = True
                    break
        finally:
            found.close()

    def asked_for_more(self) -> bool:
        """Wait while the search holds as many hits as it was asked to read (`wanted`); False once it is cancelled
        or left unpolled (`unpolled`)."""
        with self.changed:
            while not self.cancelled and not self.unpolled() and len(self.hits) >= self.wanted:
                self.paused = True
                self.changed.wait(max(0.05, IDLE_SECONDS - (time.monotonic() - self.asked)))
            self.paused = False
            return not self.cancelled and not self.unpolled()

    def unpolled(self) -> bool:
        """Nobody waits on a page of it, and none was asked for `IDLE_SECONDS`."""
        return not self.waiting and time.monotonic() - self.asked > IDLE_SECONDS

    def page(self, offset: int, limit: int, wait: float = WAIT_SECONDS) -> dict:
        """Hits from `offset`, waiting until `limit` of them are there, the search ends, or `wait` s pass; the
        search then reads on until it holds a page more than asked (`wanted`)."""
        with self.changed:
            self.wanted = max(self.wanted, offset + 2 * limit)
            self.changed.notify_all()
            self.waiting += 1
            try:
                self.changed.wait_for(lambda: self.done or self.listed and len(self.hits) >= offset + limit,
                                      timeout=wait)
            finally:
                self.waiting -= 1
                self.asked = time.monotonic()  # idle from the end of the last page asked for
            data = self.hits[offset : offset + limit]
            end = offset + len(data)
            more = not self.done or end < len(self.hits)
            return {
                "data": data,
                "scanned": self.scanned,
                "total_documents": self.total_documents,
                "done": self.done and not more,
                "next_cursor": f"{self.token}-{end}" if more else None,
                "hits_so_far": len(self.hits),
                "paused": self.paused and not self.done,
                "capped": self.capped,
                "cancelled": self.cancelled,
                "error": self.error,
                "skipped": self.skipped[:MAX_SKIPPED_SHOWN],
                "skipped_count": len(self.skipped),
            }

    def cancel(self):
        with self.changed:
            self.cancelled = True
            self.changed.notify_all()  # a search waiting to be asked for more stops now


class Searches:
    """The searches the server holds, by key and by cursor token."""

    def __init__(self, pool: SearchPool | None = None):
        self.pool = pool or SearchPool()
        self.lock = threading.Lock()
        self.by_key: OrderedDict = OrderedDict()

    def get_or_start(self, key, start) -> Search:
        """The search kept under `key`, else `start()`'s new search, run on its own thread."""
        with self.lock:
            self.sweep()
            search = self.by_key.get(key)
            if search is not None and not search.cancelled:
                self.by_key.move_to_end(key)
                return search
            search = start()
            self.by_key[key] = search
            while len(self.by_key) > MAX_SEARCHES:
                _, dropped = self.by_key.popitem(last=False)
                dropped.cancel()
        threading.Thread(target=search.run, args=(self.pool,), name="search", daemon=True).start()
        return search

    def reading(self) -> bool:
        """Whether a search is reading documents now (neither done nor waiting to be asked for more)."""
        with self.lock:
            return any(not (search.done or search.paused or search.cancelled) for search in self.by_key.values())

    def by_token(self, token: str) -> Search | None:
        with self.lock:
            self.sweep()
            return next((s for s in self.by_key.values() if s.token == token and not s.cancelled), None)

    def cancel(self, search: Search):
        with self.lock:
            search.cancel()
            if self.by_key.get(search.key) is search:
                del self.by_key[search.key]

    def sweep(self):
        """Drop searches nobody asked for: running ones after `IDLE_SECONDS`, finished after `KEPT_SECONDS`."""
        now = time.monotonic()
        for key, search in list(self.by_key.items()):
            if not search.waiting and now - search.asked > (KEPT_SECONDS if search.done else IDLE_SECONDS):
                search.cancel()
                del self.by_key[key]

    def close(self):
        with self.lock:
            for search in self.by_key.values():
                search.cancel()
            self.by_key.clear()
        self.pool.close()
