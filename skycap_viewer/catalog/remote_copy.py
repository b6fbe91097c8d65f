"""A store prefix kept as a local copy in the viewer's cache: what lets every reader read a mirror.

`RemoteCopy.sync()` lists the prefix (one listing by pages) and fetches what a listing needs, in
parallel: record documents, run index files and a skyrl-capture manifest, each again only when the
store's version of it (ETag, generation) changes. Sidecars are not fetched to list: each copied
directory's `record/copies.py` file says which ones the store holds, and a rollout's are fetched
when it is opened (`fetch_sidecar`), kept within `cache_bytes` (the least recently fetched go first).
Objects gone from the store go from the copy. The copy is laid out as the prefix is, under
`<cache>/remote/<hash of the URL>/<bucket>/<path>`, so discovery, run names and the persisted
index work as for a directory.

`poll()` syncs every few seconds in a thread of its own, less often for a prefix that takes long to
list, and backs off when the store cannot be reached; what went wrong is said once on stderr and kept
on the copy (each run's `/v1/runs` entry says it), and the rows already indexed stay listed.
"""

import hashlib
import json
import os
import threading
import time
from pathlib import Path

from skycap_viewer.catalog.discovery import SKYRL_MANIFEST, SKYRL_SHARDS
from skycap_viewer.catalog.object_store import ObjectStore, describe
from skycap_viewer.catalog.run_index import INDEX_DIRECTORY, MAX_FILE_BYTES, STEP_FILE
from skycap_viewer.errors import RecordError, UsageError
from skycap_viewer.printable import say
from skycap_viewer.record.copies import COPY_FILE, copy_listing, honour_copies_in, mark_root, register_fetcher
from skycap_viewer.record.document import is_document_name
from skycap_viewer.record.frames import file_limit
from skycap_viewer.record.schema import is_plain_file_name

DEPTH = 3  # path segments of a record file under the prefix: the prefix, a child, a grandchild (as discovery)
SIDECAR_SUFFIX = ".zst"
MANIFEST_BYTES = 1 * 2**20  # a skyrl-capture manifest fetched at most this big (discovery reads its first 64 KiB)
POLL_SECONDS = 5.0  # between listings, at least
POLL_SHARE = 10  # ... and at least this many times what the last listing took: a huge prefix is listed less often
MOST_SECONDS = 120.0  # between listings, at most, however slow, and between tries when the store fails
DEFAULT_CACHE_BYTES = 4 * 2**30  # of fetched sidecars
FAILED_FETCH_SECONDS = 10.0  # a sidecar whose fetch failed answers that error this long, the store not asked again


def copy_directory(cache: Path, url: str) -> Path:
    """Where the copy of `url` lives: named by a hash of the URL, then the URL's own path."""
    digest = hashlib.blake2b(url.rstrip("/").encode(), digest_size=8).hexdigest()
    path = url.rstrip("/").split("://", 1)[1]
    parts = [part for part in path.split("/") if part not in ("", ".", "..")]
    return cache / "remote" / digest / Path(*parts)


def kind_of(name: str, manifests: frozenset = frozenset()) -> str | None:
    """What the copy does with the object `name` (relative to the prefix): `fetch` it (a document, a run
    index file, a skyrl-capture manifest), `list` it (a sidecar: fetched when its rollout is opened),
    `shard` (inside a skyrl-capture directory: one of `manifests`, the folders holding a manifest), or
    None (anything else, or deeper than discovery looks)."""
    parts = name.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return None
    last = parts[-1]
    if shards_folder(name, manifests) is not None:
        return "shard"  # a skyrl-capture directory: its `committed/` folder is made, nothing in it fetched
    if len(parts) <= DEPTH and is_document_name(last):
        return "fetch"
    if len(parts) <= DEPTH and last.endswith(SIDECAR_SUFFIX):
        return "list"
    if STEP_FILE.fullmatch(last) and INDEX_DIRECTORY in parts[-3:-1] and len(parts) <= DEPTH + 2:
        return "fetch"
    if last == SKYRL_MANIFEST and len(parts) <= DEPTH:
        return "fetch"
    return None


def shards_folder(name: str, manifests: frozenset) -> str | None:
    """The `committed/` folder of a skyrl-capture directory (a folder of `manifests`) that `name` lies in,
    where discovery looks for one (the prefix, a child, a grandchild), or None."""
    parts = name.split("/")[:-1]
    for at, part in enumerate(parts[:DEPTH]):
        if part == SKYRL_SHARDS and "/".join(parts[:at]) in manifests:
            return "/".join(parts[: at + 1])
    return None


def too_big_to_fetch(name: str, size: int) -> bool:
    """A document past the file limit is not fetched: a sparse file of its size stands for it, and the
    reader refuses it by its size on disk, naming the limit (as it would refuse the real file)."""
    last = name.rsplit("/", 1)[-1]
    if is_document_name(last):
        return size > file_limit()
    if last == SKYRL_MANIFEST:
        return size > MANIFEST_BYTES
    return size > MAX_FILE_BYTES  # a run index file: refused unread above this anyway


def disk_bytes(status: os.stat_result) -> int:
    """What a file takes on disk (a sparse one, what is written of it)."""
    return status.st_blocks * 512


def remove_file(path: Path):
    """Remove the file (or symlink: never what it points to) at `path`, if there is one; a folder stays."""
    try:
        path.unlink()
    except (FileNotFoundError, IsADirectoryError, PermissionError, NotADirectoryError):
        pass


class RemoteCopy:
    """The local copy of one store prefix, synced on demand (`sync`) or in the background (`poll`)."""

    def __init__(self, store: ObjectStore, cache: Path, cache_bytes: int = DEFAULT_CACHE_BYTES,
                 record_id: str | None = None):
        self.store = store
        self.url = store.url
        self.record_id = record_id  # only this record's files (`show` of one record's URL), the rest kept as they are
        self.cache = cache
        honour_copies_in(cache)
        self.directory = copy_directory(cache, self.url)
        self.cache_bytes = cache_bytes
        self.problem: str | None = None
        self.listed_in = 0.0  # seconds the last listing took
        self.lock = threading.Lock()  # one sync at a time
        self.guard = threading.Lock()  # over `fetching` and `fetched_bytes`
        self.fetching: dict[Path, threading.Lock] = {}  # one fetch of a sidecar at a time, others in parallel
        self.fetched_bytes: int | None = None  # of the sidecars on disk, counted at the first fetch
        self.failed: dict[Path, tuple[float, str]] = {}  # sidecar -> (when its fetch failed, why)
        self.stopped = threading.Event()
        self.polling = False
        self.synced = True  # False: an earlier session's copy, not listed yet (its first poll is at once)
        self.registered: set[Path] = set()
        for marker in self.directory.rglob(COPY_FILE) if self.directory.is_dir() else ():
            self.register(marker.parent)  # a copy from an earlier session: its sidecars can be fetched at once

    def register(self, local: Path):
        """Let readers in this process fetch the sidecars of the copied folder `local`."""
        if local not in self.registered:
            folder = local.relative_to(self.directory).as_posix()
            folder = "" if folder == "." else folder
            register_fetcher(local, lambda base: self.fetch_sidecar(local, folder, base))
            self.registered.add(local)

    # -- syncing ----------------------------------------------------------------------------------

    def sync(self) -> bool:
        """List the prefix and bring the copy to match it; whether the listing worked (when not, what
        went wrong is `problem`, said on stderr when it is new, and the copy stays as it was)."""
        with self.lock:
            started = time.monotonic()
            try:
                listing = self.store.list(self.record_id)
            except Exception as error:  # noqa: BLE001 - a store's client raises its own kinds
                self.say_problem(f"cannot list {self.url}: {describe(error)}")
                return False
            self.listed_in = time.monotonic() - started
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                self.own_folder(self.directory)
                mark_root(self.directory, self.url)
            except OSError as error:
                self.say_problem(f"cannot copy {self.url}: {describe(error)}")
                return False
            manifests = frozenset(name.rpartition("/")[0] for name in listing
                                  if name.rpartition("/")[2] == SKYRL_MANIFEST)
            by_directory: dict[str, dict] = {}
            for name, entry in listing.items():
                kind = kind_of(name, manifests)
                if kind is None:
                    continue
                folder, _, base = name.rpartition("/")
                if kind == "shard":
                    (self.directory / shards_folder(name, manifests)).mkdir(parents=True, exist_ok=True)
                    continue
                by_directory.setdefault(folder, {})[base] = entry
            failures = []
            for folder, objects in sorted(by_directory.items()):
                try:
                    failures += self.sync_directory(folder, objects)
                except OSError as error:  # the folder itself (a name too long, a document where it goes, a full disk)
                    failures += [(f"{folder}/{base}" if folder else base, error) for base in objects]
            if self.record_id is None:
                self.remove_gone(by_directory)
            if failures:
                self.say_problem(f"cannot fetch {len(failures)} object(s) of {self.url}, first "
                                 f"{self.store.child_url(failures[0][0])}: {describe(failures[0][1])}")
            elif self.problem is not None:
                if self.polling:
                    say(f"skycap-viewer: {self.url}: listed again")
                self.problem = None
                self.write_problems()
            return True

    def sync_directory(self, folder: str, objects: dict[str, tuple[int, str]]) -> list:
        """Fetch the changed documents (and index files) of one listed folder, drop the sidecars whose
        version changed, then write what the store holds there; the objects that failed, with why."""
        local = self.directory / folder if folder else self.directory
        local.mkdir(parents=True, exist_ok=True)
        self.own_folder(local)
        before = {base: entry for base, entry in ((copy_listing(local) or {}).get("objects", {})).items()
                  if is_plain_file_name(base)}  # a planted `../x` names nothing of the copy's
        if self.record_id is not None:  # the folder's other records stay as an earlier sync left them
            objects = {**{base: (*entry[:2], entry[2] if len(entry) > 2 else None) for base, entry in before.items()
                          if not base.startswith(f"{self.record_id}.")}, **objects}
        wanted, failures, done = [], [], {}
        for base, (size, version, written) in objects.items():
            name = f"{folder}/{base}" if folder else base
            kind = kind_of(name)
            target = local / base
            current = before.get(base, [])[:2] == [size, version] and os.path.lexists(target)
            if kind == "list":
                if not current:
                    remove_file(target)  # a rewrite's sidecar: fetched again when its rollout is opened
                done[base] = [size, version, written]
            elif current:
                done[base] = [size, version, written]
            elif too_big_to_fetch(name, size):
                try:
                    self.write_file(target, None, size, written)
                except OSError as error:  # a size the file system refuses, a full disk
                    failures.append((name, error))
                    continue
                done[base] = [size, version, written]
            else:
                wanted.append(name)
        lock = threading.Lock()

        def landed(name, data):
            base = name.rpartition("/")[2]
            if isinstance(data, Exception):
                with lock:
                    failures.append((name, data))
                return
            try:
                self.write_file(local / base, data, written=objects[base][2])
            except OSError as error:  # a name the file system refuses, a folder where it goes, a full disk
                with lock:
                    failures.append((name, error))
                return
            with lock:
                done[base] = list(objects[base])

        # what the store holds is said before its documents land, so the watcher reading one finds its
        # sidecars present; one being fetched is said at no version, so a failed fetch is tried again
        if wanted:
            self.write_listing(local, self.store.child_url(folder), {
                **done, **{name.rpartition("/")[2]: [objects[name.rpartition("/")[2]][0], None, None]
                           for name in wanted}})
        self.store.get_many(wanted, landed)
        for base in before.keys() - objects.keys():  # gone from the store: gone from the copy
            remove_file(local / base)
        for name, _ in failures:  # not fetched: an older copy of it stays, under its old version
            base = name.rpartition("/")[2]
            if base in before and os.path.lexists(local / base):
                done[base] = before[base]
        self.write_listing(local, self.store.child_url(folder), done)
        self.register(local)
        return failures

    def own_folder(self, local: Path):
        """Raise unless `local` is a folder of the copy itself: no symlink on the way from the cache's
        `remote/` folder (one planted there would take the documents written into it anywhere)."""
        path = self.cache / "remote"
        for part in local.relative_to(path).parts:
            path = path / part
            if path.is_symlink() or not path.is_dir():
                raise NotADirectoryError(f"{path} is not a folder of the viewer's copy (a symlink or a file)")

    def remove_gone(self, listed: dict[str, dict]):
        """Copied folders whose objects are all gone from the store lose their record files (the copied
        folders are the registered ones: no walk of the copy at each poll)."""
        for local in list(self.registered):
            folder = local.relative_to(self.directory).as_posix()
            if ("" if folder == "." else folder) in listed:
                continue
            for base in (copy_listing(local) or {}).get("objects", {}):
                if is_plain_file_name(base):  # a planted `../x` names nothing of the copy's
                    remove_file(local / base)
            remove_file(local / COPY_FILE)
            self.registered.discard(local)

    def write_file(self, target: Path, data: bytes | None, size: int = 0, written: int | None = None):
        """`data` at `target`, replaced whole (a reader sees the old file or the new one), dated as the
        store dates the object (`written`, in ns: a mirror's sidecars are older than their document, as
        skycap writes them, so a sidecar fetched after its document is not taken for a rewrite's);
        None: a sparse file of `size` bytes that stands for an object too big to fetch.

        The temporary file is named by a hash of the name (a name near NAME_MAX has no room for a
        prefix) and made new, never opened through what is there (`O_EXCL | O_NOFOLLOW`): a symlink
        planted at its name is removed, not written through."""
        temporary = target.with_name(f".fetching-{hashlib.blake2b(target.name.encode(), digest_size=8).hexdigest()}")
        remove_file(temporary)  # a leftover of a stopped fetch, or something planted
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            with open(os.open(temporary, flags, 0o644), "wb") as file:
                if data is None:
                    file.truncate(size)
                else:
                    file.write(data)
            if written is not None:
                os.utime(temporary, ns=(written, written))
            os.replace(temporary, target)
        except OSError:
            remove_file(temporary)
            raise

    def write_listing(self, local: Path, url: str, objects: dict):
        """Say what the store holds in `local`, unless that is said already: a poll that finds nothing
        new writes nothing (the watcher would take a rewritten file for a changed run)."""
        payload = {"url": url, "objects": dict(sorted(objects.items())), "problem": self.problem}
        if copy_listing(local) == json.loads(json.dumps(payload)):
            return
        self.write_file(local / COPY_FILE, json.dumps(payload, separators=(",", ":")).encode())

    def write_problems(self):
        """Say (or clear) `problem` on every copied folder, so each run's entry shows it."""
        for local in list(self.registered):
            listing = copy_listing(local)
            if listing is not None and listing.get("problem") != self.problem:
                try:
                    self.write_listing(local, listing["url"], listing["objects"])
                except OSError:  # a full disk: the problem is still kept here and said on stderr
                    continue

    def say_problem(self, problem: str):
        """Keep `problem` on the copy; while polling, also say it on stderr when it is new."""
        if problem != self.problem:
            if self.polling:
                say(f"skycap-viewer: {problem}; trying again")
            self.problem = problem
            self.write_problems()

    # -- sidecars ---------------------------------------------------------------------------------

    def fetch_sidecar(self, local: Path, folder: str, base: str):
        """Fetch one sidecar a rollout being opened needs, then keep the fetched sidecars within
        `cache_bytes`; a store error is the record's (`RecordError`), the rollout shown without it."""
        name = f"{folder}/{base}" if folder else base
        listed = (copy_listing(local) or {}).get("objects", {}).get(base)
        written = listed[2] if listed is not None and len(listed) > 2 else None
        if listed is not None and listed[0] > file_limit():
            self.write_file(local / base, None, listed[0], written)  # refused by its size, as a local one is
            return
        with self.guard:
            lock = self.fetching.setdefault(local / base, threading.Lock())
        with lock:
            if os.path.lexists(local / base):
                return
            failed = self.failed.get(local / base)
            if failed is not None and time.monotonic() - failed[0] < FAILED_FETCH_SECONDS:
                raise RecordError(local / base, failed[1])  # the store said so a moment ago: not asked again
            try:
                data = self.store.get(name)
                self.write_file(local / base, data, written=written)
            except Exception as error:  # noqa: BLE001 - a store's client raises its own kinds
                why = f"cannot fetch {self.store.child_url(name)}: {describe(error)}"
                with self.guard:
                    self.failed[local / base] = (time.monotonic(), why)
                raise RecordError(local / base, why) from None
        with self.guard:
            self.fetching.pop(local / base, None)
            self.failed.pop(local / base, None)
            if self.fetched_bytes is None:
                self.fetched_bytes = sum(size for _, size, _ in self.fetched_sidecars())
            else:
                self.fetched_bytes += disk_bytes(os.stat(local / base))
            if self.fetched_bytes > self.cache_bytes:
                self.keep_within_bound(local / base)

    def fetched_sidecars(self) -> list[tuple[int, int, Path]]:
        """(fetched at, bytes on disk, path) of every sidecar in the copy: fetched when its inode last
        changed (its modification time is the store's)."""
        fetched = []
        for path in self.directory.rglob(f"*{SIDECAR_SUFFIX}"):
            if path.name.startswith(".") or is_document_name(path.name):
                continue
            try:
                status = path.stat()
            except OSError:
                continue
            fetched.append((status.st_ctime_ns, disk_bytes(status), path))
        return fetched

    def keep_within_bound(self, newest: Path):
        """Delete the least recently fetched sidecars until those left take at most `cache_bytes`."""
        fetched = self.fetched_sidecars()
        total = sum(size for _, size, _ in fetched)
        for _, size, path in sorted(fetched):
            if total <= self.cache_bytes:
                break
            if path != newest:
                path.unlink(missing_ok=True)
                total -= size
        self.fetched_bytes = total

    # -- polling ----------------------------------------------------------------------------------

    def poll(self):
        """Sync in the background until `stop`: every `POLL_SECONDS` or `POLL_SHARE` times the last
        listing, whichever is longer (at once first, for a copy not yet listed); after a failure, twice
        as long each time, up to `MOST_SECONDS`."""
        self.polling = True

        def loop():
            pause = 0 if not self.synced else POLL_SECONDS
            while not self.stopped.wait(pause):
                if self.synced_safely():
                    pause = min(max(POLL_SECONDS, POLL_SHARE * self.listed_in), MOST_SECONDS)
                else:
                    pause = min(max(pause, POLL_SECONDS / 2) * 2, MOST_SECONDS)
                self.synced = True

        thread = threading.Thread(target=loop, name=f"sync {self.url}", daemon=True)
        thread.start()
        return thread

    def synced_safely(self) -> bool:
        """`sync`, whatever it meets: the poll thread must not die (the store would never be listed again)."""
        try:
            return self.sync()
        except Exception as error:  # noqa: BLE001 - anything left unforeseen is said, and tried again
            self.say_problem(f"cannot copy {self.url}: {describe(error)}")
            return False

    def stop(self):
        self.stopped.set()


def synced_copy(url: str, storage_options: dict, cache: Path, cache_bytes: int = DEFAULT_CACHE_BYTES,
                record_id: str | None = None, serving: bool = False) -> tuple[RemoteCopy, str | None]:
    """(the local copy of the prefix `url`, or of its one record `record_id`, synced now; what to say of
    the store, or None). When the store cannot be listed an earlier copy is read as it is, and `serving`
    reads one at once (its first poll syncs it); with no copy to read it is a `UsageError`. What the
    command line and the Python API share, so a store URL means the same to both."""
    copy = RemoteCopy(ObjectStore(url, storage_options), cache, cache_bytes, record_id)
    if serving and copy.directory.is_dir():
        copy.synced = False  # listed by its first poll, right away
        return copy, None
    if not copy.synced_safely():
        if not copy.directory.is_dir():
            raise UsageError(copy.problem)
        return copy, f"{copy.problem}; reading the copy made before"
    return copy, copy.problem  # listed, but some objects could not be fetched: said


class Mirrors:
    """Records opened from the mirror a run index names (`record.mirror`), each its record's copy: the
    store's options and the cache are the ones given on the command line."""

    def __init__(self, cache: Path, storage_options: dict | None = None, cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.cache, self.storage_options, self.cache_bytes = cache, storage_options or {}, cache_bytes
        self.lock = threading.Lock()

    def open_record(self, url: str) -> Path:
        """The copied folder holding the record whose document is at `url`, fetched now (its sidecars
        when it is opened); `UsageError` when the store's package is missing, `RecordError` when the
        store cannot be read or holds no such document."""
        folder, _, name = url.rpartition("/")
        record_id = name.removesuffix(".json.zst")
        copy = RemoteCopy(ObjectStore(folder, self.storage_options), self.cache, self.cache_bytes, record_id)
        with self.lock:
            if not copy.synced_safely():
                raise RecordError(url, copy.problem)
        if not (copy.directory / name).is_file():
            raise RecordError(url, "the mirror holds no such document")
        return copy.directory
