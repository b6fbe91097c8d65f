"""The server's caches, with what each is keyed by and how it is bounded.

Every cache is keyed by everything its value depends on, so none is ever invalidated: a key that
can no longer come up (an older index generation, an older file version) just ages out.

- Listing answers (`/runs`, `/trajectories`, `/groups`): `AnswerCache` by (index generation,
  request target), `LISTING_CACHE_BYTES` in all, keys included (a request target is the client's
  text, up to the request line limit of `server/connections.py`: thousands of distinct long query
  strings must age out like answers do, not pile up as keys); held by the HTTP server.
- `/paths` answers: `AnswerCache` by the versions of the record's files, `PATHS_CACHE_BYTES`.
- Parsed documents: `DocumentCache` by the document file's version, `DOCUMENT_CACHE_BYTES` of what
  their parses hold (`record.document.parsed_bytes`, a bound from their JSON text; the last one read
  kept whatever its size); readers of one version share one read, and so does the background
  verification of a record just opened (`DocumentCache.verifying_held`).
- A record's derived structures (`views.record.trajectory.RecordView`: its document, rollout, tokens, block
  bounds): `ViewCache` by its files' versions and run fields, `RECORD_VIEW_CACHE_SIZE` of them and at
  most `RECORD_VIEW_CACHE_BYTES` of what their documents' parses hold (the last one made kept whatever
  its size), so each part of a big record's answers does not build its rollout again. Weighed in
  bytes, not nodes: a few nodes can hold 100 MB of JSON in an unknown field, and the view holds its
  document (its derived structures grow with its nodes, which its JSON holds too).
- Elsewhere, beside what they cache: a snapshot's derived answers (the picker's value tables) in
  `Snapshot.memo`, one snapshot's life long; an encoded answer's gzip form on the `RawJson`
  itself; each run's rows, counts and groups, across restarts, in its SQLite database
  (`catalog/store.py`, placed by `catalog/persisted.py`).
- Searches (`/v1/search`): `server/searches.py`, by (run, query, filters, index generation), at most
  `MAX_SEARCHES` of `MAX_HITS` hits each; unpolled ones are cancelled and dropped.
"""

import os
import threading
from collections import OrderedDict
from pathlib import Path

from skycap_viewer.catalog.pool import as_stored
from skycap_viewer.catalog.rows import compute_row
from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import document_path, read_document_sized
from skycap_viewer.wire import RawJson

LISTING_CACHE_BYTES = 8 * 2**20
ENTRY_OVERHEAD_BYTES = 256  # an entry's dict slot, key tuple and objects, beside the text `key_bytes` counts
PATHS_CACHE_BYTES = 12 * 2**20  # a 66k-token rollout's /paths is ~3 MB
DOCUMENT_CACHE_BYTES = 256 * 2**20  # held once parsed: a few hundred ordinary documents, or one big one
RECORD_VIEW_CACHE_SIZE = 4  # rollouts being looked at...
RECORD_VIEW_CACHE_BYTES = 256 * 2**20  # ...and what their documents hold parsed (shared with `DocumentCache`)


class AnswerCache:
    """Encoded answers by a key that names everything they depend on: listings by (index generation,
    request target), a rollout's paths by its files' versions. A poll that changes nothing, a page
    flipped back or a rollout opened again is sent without computing it again. Bounded in bytes;
    entries whose key can no longer come up (an older generation, an older file) age out. The budget
    counts each key with its answer (`entry_bytes`): a key is a client's request target, as long as
    the request line allows, so an answer of a few bytes under a long key costs what the key does."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.entries: OrderedDict = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    @staticmethod
    def entry_bytes(key, body: RawJson) -> int:
        """What one entry holds: its answer, the text of its key, and a fixed overhead per entry."""
        return len(body) + key_bytes(key) + ENTRY_OVERHEAD_BYTES

    def get(self, key) -> RawJson | None:
        with self.lock:
            body = self.entries.get(key)
            if body is not None:
                self.entries.move_to_end(key)
            return body

    def put(self, key, body: RawJson):
        size = self.entry_bytes(key, body)
        if size > self.max_bytes // 4:
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = body
            self.size += size
            while self.size > self.max_bytes:
                old_key, old = self.entries.popitem(last=False)
                self.size -= self.entry_bytes(old_key, old)


def key_bytes(key) -> int:
    """The length of the text in a cache key (strings and bytes, through nested tuples); numbers are
    in the per-entry overhead."""
    if isinstance(key, (str, bytes)):
        return len(key)
    if isinstance(key, tuple):
        return sum(map(key_bytes, key))
    return 0


class DocumentCache:
    """Parsed documents by the file's version, so a rewritten record is reread, at most `max_bytes` of
    what their parses hold (`parsed_bytes`): the one read last is
    kept whatever its size, as it is the record being looked at. Requests that miss together (the page
    asks for a record's paths, graph and calls at once) share one read, under the version's own lock."""

    def __init__(self, max_bytes: int, before_reading=lambda: None):
        """`before_reading()` is called before a document is read: what else holds parsed documents lets
        go of its heavy ones then (`ViewCache.drop_oversized`), so two are never held while one is parsed."""
        self.max_bytes = max_bytes
        self.before_reading = before_reading
        self.entries: OrderedDict = OrderedDict()  # version -> (document, parsed_bytes)
        self.size = 0
        self.reading: dict = {}  # version -> the lock its one reader holds
        self.lock = threading.Lock()

    @staticmethod
    def version(path: Path) -> tuple:
        """Path, inode, size and times: a rename over the file changes at least the inode."""
        try:
            stat = os.stat(path)
        except OSError as error:
            raise RecordError(path, f"cannot read the file ({error.strerror or error})") from None
        return str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns  # [3]: mtime

    def holds(self, version: tuple, document: dict) -> bool:
        """Whether `document` is the cached parse of that version of its file."""
        with self.lock:
            entry = self.entries.get(version)
            return entry is not None and entry[0] is document

    def cached(self, key: tuple) -> tuple[dict, int] | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return None
            self.entries.move_to_end(key)
            return entry

    def get(self, path: Path) -> dict:
        return self.get_sized(path)[0]

    def get_sized(self, path: Path) -> tuple[dict, int]:
        """`get`, and what its parse holds (`parsed_bytes`: what a view of it weighs)."""
        key = self.version(path)
        entry = self.cached(key)
        if entry is not None:
            return entry
        with self.lock:
            reading = self.reading.setdefault(key, threading.Lock())
        with reading:
            try:
                entry = self.cached(key)  # read by the request this one waited for
                if entry is not None:
                    return entry
                self.drop_oversized()
                self.before_reading()
                document, size = read_document_sized(path)
                if self.version(path) == key:  # not replaced while being read: the version the key names
                    self.keep(key, document, size)
                return document, size
            finally:
                with self.lock:
                    self.reading.pop(key, None)

    def held(self, path: Path) -> dict | None:
        """The parse of the file's current version this cache holds, once the read of it under way (an
        open's) is done if there is one; None when it holds none. Not a use: the kept order stays."""
        try:
            key = self.version(path)
        except RecordError:
            return None
        with self.lock:
            reading = self.reading.get(key)
        if reading is not None:
            with reading:
                pass
        with self.lock:
            entry = self.entries.get(key)
        return None if entry is None else entry[0]

    def verifying_held(self, compute_rows):
        """`compute_rows` (the index's: `catalog.pool.RowPool.compute_rows`), but a record verified while this
        cache holds its parse (it was just opened) is verified from that parse, in this process: else its
        background verification parses it again, a million-node record's gigabyte beside the open's."""

        def compute(directory, names, verify: bool = False, **options):
            rest = []
            with self.lock:  # the paths it may hold: no stat for the others (a whole run's, verified in turn)
                paths = {key[0] for key in (*self.entries, *self.reading)}
            for name in names if verify else ():
                path = Path(directory, name)
                document = self.held(path) if str(path) in paths else None
                if document is None:
                    rest.append(name)
                else:
                    yield name, as_stored(compute_row(str(directory), name, True, document), options.get("group_by"))
            if rest or not verify:
                yield from compute_rows(directory, rest if verify else names, verify, **options)

        return compute

    def drop_oversized(self):
        """Let go of a kept document heavier than the budget alone (kept as the last read) before reading
        another: else both are held while the new one is parsed, twice the heaviest record."""
        with self.lock:
            if self.size > self.max_bytes:
                self.entries.clear()
                self.size = 0

    def keep(self, key: tuple, document: dict, size: int):
        with self.lock:
            self.entries[key] = (document, size)
            self.size += size
            while self.size > self.max_bytes and len(self.entries) > 1:
                _, (_, old) = self.entries.popitem(last=False)
                self.size -= old


def files_version(directory, record_id: str, present: set) -> tuple | None:
    """The versions of a record's document and present sidecars (what its `/paths` answer is read
    from), or None when one cannot be read."""
    paths = [document_path(directory, record_id), *(Path(directory) / name for name in sorted(present))]
    try:
        return tuple(map(DocumentCache.version, paths))
    except RecordError:
        return None




class ViewCache:
    """The last few values made for a key (least recently used out), at most `size` of them and at most
    `max_weight` by the weight their maker said each has (the one made last is kept whatever it weighs).
    Requests
    that miss together wait for one to make it (a page asks for a record's paths, graph and calls at once: one rollout
    is built, not three), under the key's own lock, so other keys are not held up."""

    def __init__(self, size: int, max_weight: float = float("inf")):
        self.size = size
        self.max_weight = max_weight
        self.entries: OrderedDict = OrderedDict()  # key -> [lock, value or None, weight]
        self.lock = threading.Lock()

    def get(self, key, make):
        """The value kept for `key`, else the one `make()` makes: it returns (the value, what it weighs)."""
        with self.lock:
            slot = self.entries.get(key)
            if slot is None:
                self.drop_oversized_locked()
                slot = self.entries[key] = [threading.Lock(), None, 0]
                while len(self.entries) > self.size:
                    self.entries.popitem(last=False)
            else:
                self.entries.move_to_end(key)
        with slot[0]:
            if slot[1] is None:
                slot[1], slot[2] = make()
                self.trim(key)
            return slot[1]

    def drop_oversized(self):
        """Let go of what weighs more than the budget (one heavier than it alone, kept as the last made), so
        it is not held while another is made, nor while a document is read for another (`DocumentCache`)."""
        with self.lock:
            self.drop_oversized_locked()

    def drop_oversized_locked(self):
        if sum(slot[2] for slot in self.entries.values()) > self.max_weight:
            self.entries.clear()

    def trim(self, newest):
        """Drop the least recently used values until the rest weigh at most `max_weight`."""
        with self.lock:
            weight = sum(slot[2] for slot in self.entries.values())
            for key in list(self.entries):
                if weight <= self.max_weight:
                    break
                if key != newest:
                    weight -= self.entries.pop(key)[2]

    def drop(self, key):
        with self.lock:
            self.entries.pop(key, None)
