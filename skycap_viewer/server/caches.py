"""The server's caches, with what each is keyed by and how it is bounded.

Every cache is keyed by everything its value depends on, so none is ever invalidated: a key that
can no longer come up (an older index generation, an older file version) just ages out.

- Listing answers (`/runs`, `/trajectories`, `/groups`): `AnswerCache` by (index generation,
  request target), `LISTING_CACHE_BYTES` in all, keys included (a request target is the client's
  text, up to the request line limit of `server/connections.py`: thousands of distinct long query
  strings must age out like answers do, not pile up as keys); held by the HTTP server.
- `/paths` answers: `AnswerCache` by the versions of the record's files, `PATHS_CACHE_BYTES`.
- Parsed documents: `DocumentCache` by the document file's version, `DOCUMENT_CACHE_SIZE` of them.
- Elsewhere, beside what they cache: a snapshot's derived views (sort orders, groupings, run
  facts) in `Snapshot.memo`, one snapshot's life long; a group's encoded summary in
  `Group.encoded`, its grouping's life long; an encoded answer's gzip form on the `RawJson`
  itself; each run's rows across restarts in the persisted index (`catalog/persisted.py`).
- Searches (`/v1/search`): `server/searches.py`, by (run, query, filters, index generation), at most
  `MAX_SEARCHES` of `MAX_HITS` hits each; unpolled ones are cancelled and dropped.
"""

import os
import threading
from collections import OrderedDict
from pathlib import Path

from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import document_path, read_document
from skycap_viewer.wire import RawJson

LISTING_CACHE_BYTES = 8 * 2**20
ENTRY_OVERHEAD_BYTES = 256  # an entry's dict slot, key tuple and objects, beside the text `key_bytes` counts
PATHS_CACHE_BYTES = 12 * 2**20  # a 66k-token rollout's /paths is ~3 MB
DOCUMENT_CACHE_SIZE = 16


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
    """A few parsed documents, keyed by the file's version, so a rewritten record is reread."""

    def __init__(self, size: int):
        self.size = size
        self.entries: OrderedDict = OrderedDict()
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
            return self.entries.get(version) is document

    def get(self, path: Path) -> dict:
        key = self.version(path)
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
        document = read_document(path)
        if self.version(path) != key:  # replaced while being read: not the version the key names
            return document
        with self.lock:
            self.entries[key] = document
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        return document


def files_version(directory, record_id: str, present: set) -> tuple | None:
    """The versions of a record's document and present sidecars (what its `/paths` answer is read
    from), or None when one cannot be read."""
    paths = [document_path(directory, record_id), *(Path(directory) / name for name in sorted(present))]
    try:
        return tuple(map(DocumentCache.version, paths))
    except RecordError:
        return None


