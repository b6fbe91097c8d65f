"""The viewer's index of each run (an `IndexedRun`): its rows in a `RunStore` (SQLite), updated by (size, mtime).

`IndexedRun.changes(listing)` says what to (re)compute, and `IndexedRun.update_run_index()` reads the
trainer's run index files that changed (`catalog/run_index.py`); the rows themselves come from
`rows.compute_row`, which the watcher may run anywhere (a process pool). `publish()` commits the
batch and freezes the run's facts into an immutable `Snapshot`: requests read a snapshot's facts
and query its database in a read transaction, so they never wait for the watcher nor list the disk.
"""

import itertools
import json
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from skycap_viewer.catalog.discovery import RunLocation
from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY, modal
from skycap_viewer.catalog.persisted import IndexFiles
from skycap_viewer.catalog.run_index import (
    IndexProblem,
    index_files,
    read_index_file,
    say_ignored,
    say_left_out,
)
from skycap_viewer.catalog.store import (
    NEWEST_FIRST,
    READERS,
    RETOKENIZED,
    RunStore,
    flag_bits,
    form_unreadable,
    member_row,
)
from skycap_viewer.printable import say
from skycap_viewer.record.copies import copy_listing
from skycap_viewer.record.document import is_document_name
from skycap_viewer.record.fields import iso_time, scalar_text

ENTRY_VALUES = 50  # a run entry lists this many tasks (the first by id), and values of each annotation key, at most
FACTS_SECONDS = 2.0  # while a run is first indexed, its facts are counted again at most this often (see `facts_now`)
FACTS_COST_FACTOR = 50  # ...and so that counting them takes at most a fiftieth of the time


def file_version(size: int, mtime_ns: int, stamp: int = 0) -> int:
    """A document's (size, mtime_ns, `change_stamp`) as one int: a million of them are kept, a third of
    the room of tuples."""
    return (size << 64 | (mtime_ns + 2**63)) << 64 | stamp


def change_stamp(stat: os.stat_result) -> int:
    """The file's inode and status-change time folded into 63 bits: a rewrite by rename (a new inode)
    or in place (a new ctime, which `utime` cannot set back) changes it though size and mtime are
    set back as they were."""
    return (stat.st_ctime_ns * 1_000_003 ^ stat.st_ino) & (2**63 - 1)


def version_size(version: int) -> int:
    return version >> 128


def version_parts(version: int) -> tuple[int, int, int]:
    """(size, mtime_ns, stamp) of a `file_version`."""
    return version >> 128, ((version >> 64) & (2**64 - 1)) - 2**63, version & (2**64 - 1)


def scan_directory(directory, limit: int | None = None) -> dict[str, int]:
    """Document file name -> `file_version` for every record document in `directory` (one stat each), or for the
    first `limit` it lists (in its own order)."""
    listing = {}
    for entry in itertools.islice(document_entries(directory), limit):
        version = file_version_now(entry.path)
        if version is not None:  # else deleted between the listing and the stat
            listing[entry.name] = version
    return listing


def file_version_now(path) -> int | None:
    """The `file_version` of the file at `path` (a dangling link's own: listed, and reading it says why); None:
    gone. The one way a file is stated, by the watcher's listing and by a worker just before it reads the file."""
    try:
        status = os.stat(path)
    except OSError:
        try:
            status = os.lstat(path)
        except OSError:
            return None
    return file_version(status.st_size, status.st_mtime_ns, change_stamp(status))


def listing_digest(listing: dict[str, int | None]) -> int | None:
    """What a stated listing (`scan_directory`) holds, as one number: any document added, removed or changed makes
    another (each (name, version) hashed to 64 bits and summed: two listings that differ sum alike with a chance of
    about 2**-61). None for a listing by name only (`list_names`), or an empty one."""
    if next(iter(listing.values()), None) is None:
        return None
    return sum(map(hash, listing.items()))


def list_names(directory) -> dict[str, None]:
    """Document file name -> None (its version not known) for every record document in `directory`, without
    a stat each: a run's first listing when the workers read it, state each file as they read it and give its
    version back with its row (`pool.compute_chunk`); the stat was 4.4 µs a document in the server's process,
    a third of its own work a record on a cold index."""
    return {entry.name: None for entry in document_entries(directory)}


STAT_SAMPLE = 64  # documents stated to estimate what stating all of them costs


def stated_listing_seconds(directory, names: dict, listed_seconds: float) -> float:
    """What listing `directory` with a stat a document (`scan_directory`) would have taken, from the seconds
    its `names` took to list (`list_names`) and the median stat of a sample of them (not their sum: on a busy
    machine one stat waiting for the CPU, times the documents, would make a small directory look huge)."""
    seconds = []
    for name in itertools.islice(names, STAT_SAMPLE):
        started = time.monotonic()
        file_version_now(os.path.join(directory, name))
        seconds.append(time.monotonic() - started)
    return listed_seconds + (statistics.median(seconds) if seconds else 0.0) * len(names)


def document_entries(directory):
    """The directory entries of the record documents in `directory` whose names the index can keep."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if not is_document_name(entry.name):
                continue
            if not entry.name.isascii() and not storable_name(entry.name):
                say_once(f"skycap-viewer: {os.path.join(directory, entry.name)}: skipped: its file name is "
                         "not UTF-8, and the index keeps names as text")
                continue
            yield entry


def storable_name(name: str) -> bool:
    """Whether a file name has a UTF-8 form (a name that is not UTF-8 on disk is decoded with lone
    surrogates, which SQLite refuses: its row could never be stored, and its run's writes would fail)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


SAID: set[str] = set()  # lines said once for the process's life


def say_once(line: str):
    if line not in SAID:
        SAID.add(line)
        say(line)


def directory_updated_at(directory) -> str:
    """When the directory last changed (a document added or removed), as the run entry says it."""
    return iso_time(os.stat(directory).st_mtime)


@dataclass
class Changes:
    compute: list[str]  # new or changed documents, smallest first (their sizes known)
    removed: list[str]
    size: int = 0  # the bytes of `compute` (0 when not stated): a poll reads the smaller runs' first

    def __bool__(self):
        return bool(self.compute or self.removed)


@dataclass(frozen=True)
class Snapshot:
    """One run at one moment: its facts, and the database a request queries for its rows."""

    location: RunLocation
    database: tuple  # (path, identity) of the run's database file: `RunStore.identity`, its token
    generation: int
    indexing: bool
    file_count: int
    updated_at: str | None
    row_count: int
    facts: dict
    groups: dict  # the server's grouping: group_count, modal_n, grouped_rows
    scan_error: str | None = None
    sorted: bool = False  # the sort and filter indexes are built (see `RunStore.build_listing_indexes`)
    verified: int = 0  # rows whose sidecars have been read and checked (the background verification)
    listed: bool = False  # its directory listed since the server started: a run reopened from its database is
    # served at once, as it was, and what changed on disk meanwhile shows from its first listing on
    run_index: dict | None = None  # what the trainer's run index holds (`RunStore.index_facts`); None: no index
    memo: dict = field(default_factory=dict, compare=False)  # derived answers, computed once per snapshot

    @property
    def id(self) -> str:
        return self.location.id

    def memoized(self, key, compute):
        """`compute()` once per snapshot and key."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def reading(self):
        """A read transaction on the run's database (`with snapshot.reading() as db:`)."""
        return READERS.reading(self.database)

    def rows_where(self, where: str = "1", values=(), order: str = NEWEST_FIRST) -> list:
        """The rows matching a WHERE clause, decoded, in the index's order: for views that need
        every row of a selection (a grouping by other keys, a lineage), not for listings."""
        with self.reading() as db:
            found = db.execute(f"SELECT kept, json, verified, mtime_ns FROM rows WHERE {where} ORDER BY {order}",
                               list(values)).fetchall()
        return [self.with_run(member_row(*entry)) for entry in found]

    @property
    def rows(self) -> list:
        """Every row, decoded: for the answers that need the whole run (a grouping by a request's own
        keys, the rows in no such group, a side of a runs comparison), and for tests."""
        return self.rows_where()

    def with_run(self, row: dict) -> dict:
        row["_run"] = self.location.id
        return row


def count_facts(db) -> dict:
    """The run entry's counts (original §5.3), from the kept counts. Its tasks are the first `ENTRY_VALUES` by id
    and their number: a million rollouts of 125,000 tasks made every entry of `/v1/runs` megabytes, counted at
    each publish, encoded, sent to the page and parsed there at each change; `/v1/values` lists and searches
    them all."""
    def counts(kind, limit=-1):
        return db.execute("SELECT value, sum(n) FROM tally WHERE kind = ? GROUP BY value ORDER BY value LIMIT ?",
                          (kind, limit)).fetchall()

    tasks = counts("task", ENTRY_VALUES)
    steps = counts("step")
    annotations: dict = {}
    for value, n in counts("annotation"):
        key, _, text = value.partition("\0")
        values = annotations.setdefault(key, {})
        if len(values) < ENTRY_VALUES:
            values[text] = n
    # the earliest: the end of the newest-first index's dated rows (that index is there while a run is first indexed)
    created = db.execute("SELECT created FROM rows INDEXED BY rows_newest WHERE (created IS NULL) = 0"
                         " ORDER BY created LIMIT 1").fetchone()
    tokenizer = db.execute("SELECT value FROM tally WHERE kind = 'tokenizer' LIMIT 1").fetchone()
    unreadable = db.execute("SELECT coalesce(sum(n), 0) FROM tally WHERE kind = 'unreadable'").fetchone()[0]
    copies = db.execute("SELECT coalesce(sum(n), 0) FROM tally WHERE kind = ?", (RETOKENIZED,)).fetchone()[0]
    copied = db.execute("SELECT coalesce(sum(n), 0) FROM tally WHERE kind = 'all' AND flags & ?",
                        (flag_bits(["re-tokenized"]),)).fetchone()[0]
    return {
        "created_at": iso_time(created[0]) if created and created[0] is not None else None,
        "task_count": db.execute("SELECT count(DISTINCT value) FROM tally WHERE kind = 'task'").fetchone()[0],
        "tasks": [{"id": task, "count": n} for task, n in tasks],
        "steps": [step for step, _ in steps],
        "step_counts": {scalar_text(step): n for step, n in steps},
        "statuses": dict(counts("status")),
        "annotations": annotations,
        "upstream": {"model": tokenizer[0]} if tokenizer else None,
        "unreadable": unreadable,
        "retokenized": {"copies": copies, "rollouts": copied},
    }


def count_groups(db) -> dict:
    sizes = dict(db.execute("SELECT n, count(*) FROM groups GROUP BY n"))
    grouped = db.execute("SELECT coalesce(sum(members), 0) FROM groups").fetchone()[0]
    return {"group_count": sum(sizes.values()), "modal_n": modal(sizes), "grouped_rows": grouped,
            "sizes": [min(sizes, default=None), max(sizes, default=None)]}


class IndexedRun:
    """One run directory's rows, in its database, with the version each document was read at."""

    def __init__(self, location: RunLocation, database: Path, facts: dict, group_by=DEFAULT_GROUP_BY,
                 fresh: bool = False):
        self.location = location
        self.store = RunStore(database, facts, group_by, fresh)
        self.reopened = self.store.reused and self.has_rows()
        self.changed: dict[str, int | None] = {}  # the last listing's new or changed documents, their versions
        self.replacing: set[str] = set()  # ...those of them that have a row stored (replaced when read again)
        self.doubts_read = not self.reopened  # whether the rows a reopen doubts were read again (`changes`)
        self.glimpsed: set[str] = set()  # documents read before its directory was first listed (`Watcher.glimpse`)
        self.listed_digest: int | None = None  # the last stated listing's `listing_digest`...
        self.stored_digest: int | None = None  # ...once every change it listed is stored: the database's versions
        self.file_count = self.store.row_count() if self.reopened else 0
        self.updated_at: str | None = None
        if self.reopened:  # listed at once as it was: its directory's time is one stat
            try:
                self.updated_at = directory_updated_at(location.path)
            except OSError:
                pass
        self.scan_error: str | None = None
        self.indexed_once = False
        self.listed_once = False  # its directory listed by this server (`Snapshot.listed`)
        self.snapshot: Snapshot | None = None
        self.facts: tuple[float, dict] | None = None  # (when, the run's facts as `count_facts` counted them then)
        self.facts_interval = FACTS_SECONDS  # while indexing, counted again no sooner than this (`facts_now`)
        self.verify_first: set[str] = set()  # documents a request found damaged: verified before the rest
        self.listed_mtime: int | None = None  # the directory's mtime when it was last listed...
        self.listing_cost = 0.0  # ...what listing it took, in seconds...
        self.next_full_listing = 0.0  # ...and when it is listed again even if its mtime did not move
        self.named: dict = {}  # damaged run index file -> the version it was named at (once each)
        self.indexes_building = None  # the future of its listing indexes built in a worker, until it is done

    @property
    def directory(self) -> Path:
        return self.location.path

    def has_rows(self) -> bool:
        return self.store.db.execute("SELECT EXISTS (SELECT 1 FROM rows)").fetchone()[0] == 1

    def changes(self, listing: dict[str, int | None]) -> Changes:
        """What must be read to match `listing`: new or changed files, and vanished ones. Compared with the
        versions the database keeps, read as they are compared (the watcher keeps nothing of a run's size between
        listings: a million documents' versions held in a dict were 152 MiB), unless the listing's digest is the
        database's (`listing_digest`): then nothing changed, and a poll of an unchanged run reads no row. At a
        reopened run's first listing the rows it doubts (`RunStore.versions`) are read again too. They are read
        smallest first when their sizes are stated (`list_names` states none), and in name order among equals: a
        chunk of a cold index then holds neighbouring names and ids, whose index entries its commit writes on a
        few pages, not one page each (a directory's own order is a hash's: 25 µs more a row at 100k rows)."""
        self.file_count = len(listing)
        self.listed_digest = listing_digest(listing)
        if self.listed_digest is not None and self.listed_digest == self.stored_digest:
            return Changes([], [])
        changed, removed, replacing = dict(listing), [], set()
        read_doubts, self.doubts_read = not self.doubts_read, True
        for name, size, mtime_ns, stamp, doubted in self.store.versions():
            listed = changed.get(name, False)
            if listed is False:
                removed.append(name)
            elif listed is not None and listed == file_version(size, mtime_ns, stamp) and not (read_doubts and doubted):
                del changed[name]
            elif listed is None and name in self.glimpsed:  # stated and read moments before this listing by name
                del changed[name]
            else:
                replacing.add(name)
        self.changed, self.replacing, self.glimpsed = changed, replacing, set()
        self.stored_digest = self.listed_digest if not changed and not removed else None
        compute = sorted(changed)
        size = 0
        if self.listed_digest is not None:
            sizes = {name: version_size(changed[name]) for name in compute}
            compute.sort(key=sizes.__getitem__)
            size = sum(sizes.values())
        return Changes(compute, removed, size)

    def update_run_index(self) -> bool:
        """Read the run index files that are new or changed since they were read, forget the gone ones
        (one listing of `index/`, a stat a file); whether anything changed. A damaged file is named
        once (per version) and ignored; an `index/` that cannot be listed now keeps what was read."""
        listed, left_out = index_files(self.directory)
        if listed is None:
            return False
        kept = self.store.index_versions()
        changed = False
        for name, version in listed.items():
            previous = kept.get(name)
            if previous is not None and previous[0] == version:
                problem = previous[1]
            else:
                try:
                    read, problem = read_index_file(self.directory, name), None
                except IndexProblem as error:
                    read, problem = None, str(error)
                problem = self.store.put_index_file(name, version, read, problem)
                changed = True
            if problem is not None and self.named.get(name) != version:
                say_ignored(self.directory, name, problem)
                self.named[name] = version
        for name in kept.keys() - listed.keys():
            self.store.drop_index_file(name)
            self.named.pop(name, None)
            changed = True
        if left_out is not None and self.named.get(None) != left_out:
            say_left_out(self.directory, left_out)
            self.named[None] = left_out
        return changed

    def store_row(self, name: str, version: int, row: dict):
        self.store_rows([(name, version, row)])

    def store_rows(self, computed: list[tuple[str, int | None, dict]]):
        """Keep the rows of some documents (name, version, row), in one batch of writes; a document
        given twice keeps its last row. A row given as None is in the database already, with its version (a worker
        wrote it: `store.rows_written`). A version None (not stated) is stated now."""
        latest = {}
        for name, version, row in computed:
            latest.pop(name, None)
            latest[name] = version, row
        stored = []
        for name, (version, row) in latest.items():
            if version is None:  # stated neither by the listing nor where it was read (a worker killed reading it)
                version = file_version_now(self.directory / name)
                if version is None:  # gone meanwhile
                    self.store.remove(name)
                    continue
            replacing = name in self.replacing or name not in self.changed  # not listed as new: it may have a row
            self.replacing.discard(name)
            self.changed.pop(name, None)
            if row is None:
                continue
            if form_unreadable(row) and not os.path.lexists(self.directory / name):
                self.store.remove(name)  # deleted between the listing and the read: gone, not unreadable
                continue
            stored.append((name, *version_parts(version), row, replacing))
        self.store.put_many(stored)
        if not self.changed:  # every change listed is stored (the removed ones were taken out first)
            self.stored_digest = self.listed_digest

    def unverified(self, limit: int) -> list[str]:
        """Up to `limit` documents whose sidecars are still to be checked, those a request reported first;
        of a store's copy only those (opened, so fetched): the others' sidecars are not fetched to verify."""
        first = [name for (name,) in self.store.db.execute(
            "SELECT name FROM rows WHERE name IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(self.verify_first)),))] if self.verify_first else []  # at every poll: most have none
        self.verify_first.difference_update(first)
        if copy_listing(self.location.path) is not None:
            return first
        rest = [name for (name,) in self.store.db.execute(
            "SELECT name FROM rows WHERE NOT verified LIMIT ?", (max(limit, 0) + len(first),)) if name not in first]
        return first + rest[:max(limit - len(first), 0)]

    def mark_verified(self, name: str, row: dict):
        """Keep a verified row: only marked when it found nothing new, else stored again (at the version it was
        stored at); nothing when its row is gone meanwhile."""
        kept = self.store.db.execute("SELECT json, size, mtime_ns, stamp FROM rows WHERE name = ?", (name,)).fetchone()
        if kept is None:
            return
        if kept[0] == self.store.with_index(row)["_json_z"]:
            self.store.mark_verified([name])
        else:
            self.store_row(name, file_version(*kept[1:]), row)

    def facts_now(self, indexing: bool) -> dict:
        """The run's facts (`count_facts`), counted again at every publish, but while the run is first indexed at
        most every `FACTS_SECONDS`: counting them costs what the run's tasks, steps and values cost (3 ms at 20k
        small records), and a run is published twice a second while it is indexed, however slowly its rows come;
        its rows and their count are published every time, and its last publish counts them all. A big run's count
        is spaced by what it cost (`FACTS_COST_FACTOR`): a million rows' 125,000 tasks took 0.1-0.4 s a count,
        every 2 s a twentieth to a fifth of a core."""
        now = time.monotonic()
        if not indexing or self.facts is None or now - self.facts[0] >= self.facts_interval:
            self.facts = now, count_facts(self.store.db)
            self.facts_interval = max(FACTS_SECONDS, FACTS_COST_FACTOR * (time.monotonic() - now))
        return self.facts[1]

    def publish(self, generation: int, indexing: bool) -> Snapshot:
        """Commit the batch and freeze the run's facts (counted from what the database keeps, in one committed
        state: the workers commit rows meanwhile, and counts read a moment apart disagreed, as many as two of
        their chunks more unverified rows than rows, a verified count below zero)."""
        with self.store.one_state() as db:
            self.snapshot = self.frozen(db, generation, indexing)
        return self.snapshot

    def frozen(self, db, generation: int, indexing: bool) -> Snapshot:
        """`publish`'s snapshot, read from `db` in one transaction."""
        row_count = self.store.row_count()
        return Snapshot(
            location=self.location,
            database=(self.store.path, self.store.identity),
            generation=generation,
            indexing=indexing,
            file_count=max(self.file_count, row_count),
            updated_at=self.updated_at,
            row_count=row_count,
            facts=self.facts_now(indexing),
            groups=count_groups(db),
            scan_error=self.scan_error,
            sorted=self.store.listing_indexes,
            verified=row_count - db.execute("SELECT count(*) FROM rows WHERE NOT verified").fetchone()[0],
            run_index=self.store.index_facts(),
            listed=self.listed_once,
        )


class Catalog:
    """Every run the viewer serves. The watcher writes it; requests read `snapshots()`."""

    def __init__(self, roots, index_files=None, group_by=DEFAULT_GROUP_BY):
        self.roots = [Path(root).absolute() for root in roots]
        self.index_files = index_files if index_files is not None else IndexFiles(None)
        for root in self.roots:  # runs may appear anywhere under them
            self.index_files.refuse_inside(root, "directory served")
        self.group_by = tuple(group_by)
        self.runs: dict[str, IndexedRun] = {}
        self.generation = 0
        self.lock = threading.Lock()
        self._published: tuple[Snapshot, ...] = ()
        self.skipped: tuple = ()  # the directories under the roots not served, and why (`discovery.Skipped`)

    def add_root(self, root: Path):
        """Serve `root` too (a record's copy from a mirror): its run is found at the watcher's next poll."""
        root = Path(root).absolute()
        with self.lock:
            if root not in self.roots:
                self.roots = [*self.roots, root]

    def snapshots(self) -> tuple[Snapshot, ...]:
        """Every run's latest snapshot (an immutable tuple; safe to read from any thread)."""
        return self._published

    def snapshot(self, run_id: str) -> Snapshot | None:
        return next((s for s in self._published if s.id == run_id), None)

    def publish(self, changed: list[IndexedRun], indexing: set[str]):
        """Commit the changed runs' batches and make them visible to requests at once."""
        with self.lock:
            generation = self.generation + 1
            for run in changed:
                run.publish(generation, run.location.id in indexing)
            self._published = tuple(run.snapshot for run in self.runs.values() if run.snapshot is not None)
            # only now: a request that reads the new number (answers are cached by it) finds these snapshots
            self.generation = generation

    def set_runs(self, locations: list[RunLocation]):
        """Keep known runs, add new ones, drop vanished ones; returns the new IndexedRun objects."""
        by_path = {run.location.path: run for run in self.runs.values()}
        fresh = []
        runs = {}
        for location in locations:
            run = by_path.pop(location.path, None)
            deleted = run is not None and not run.store.is_current()
            if deleted:  # a file of its database was deleted: built again, from nothing
                run.store.close()
                run = None
            if run is None:
                run = IndexedRun(location, *self.index_files.database_for(location.path, self.group_by),
                                 group_by=self.group_by, fresh=deleted)
                fresh.append(run)
            runs[location.id] = run
        for gone in by_path.values():
            gone.store.close()
        self.runs = runs
        return fresh

    def verify_soon(self, run_id: str, name: str):
        """A request found the record's sidecars damaged: the watcher checks it on its next poll."""
        run = self.runs.get(run_id)
        if run is not None:
            run.verify_first.add(name)

    def known_ids(self) -> dict[Path, str]:
        return {run.location.path: run_id for run_id, run in self.runs.items()}
