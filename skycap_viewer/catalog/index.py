"""The run index: per run, document file name -> row, updated incrementally by (size, mtime).

`RunIndex.changes(listing)` says what to (re)compute; the rows themselves come from
`rows.compute_row`, which the watcher may run anywhere (a process pool, a persisted cache).
`publish()` freezes the current rows into an immutable `Snapshot`: requests only ever read a
snapshot, so they never wait for the watcher nor touch the disk.
"""

import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from skycap_viewer.catalog.discovery import RunLocation
from skycap_viewer.catalog.rows import interned
from skycap_viewer.record.document import is_document_name
from skycap_viewer.record.fields import iso_time, scalar_text

MAX_ANNOTATION_VALUES = 50


@dataclass(frozen=True)
class FileVersion:
    size: int
    mtime_ns: int


def scan_directory(directory) -> dict[str, FileVersion]:
    """Document file name -> version for every record document in `directory` (one stat each)."""
    listing = {}
    with os.scandir(directory) as entries:
        for entry in entries:
            if not is_document_name(entry.name):
                continue
            try:
                stat = entry.stat()
            except OSError:
                try:  # a dangling link is listed (reading it says why); a deleted file is not
                    stat = entry.stat(follow_symlinks=False)
                except OSError:  # deleted between the listing and the stat
                    continue
            listing[entry.name] = FileVersion(stat.st_size, stat.st_mtime_ns)
    return listing


@dataclass
class Changes:
    compute: list[str]  # new or changed documents, smallest first
    removed: list[str]

    def __bool__(self):
        return bool(self.compute or self.removed)


def default_order_key(row: dict):
    """Newest first by `created_at`, records without one last, then by id."""
    created = row["created_ts"]
    return (created is None, -(created or 0), row["id"])


@dataclass(frozen=True)
class Snapshot:
    """One run's rows at one moment, in the default order, with the run's facts."""

    location: RunLocation
    rows: tuple
    by_id: dict
    generation: int
    indexing: bool
    file_count: int
    updated_at: str | None
    scan_error: str | None = None
    verified: int = 0  # rows whose sidecars have been read and checked (the background verification)
    memo: dict = field(default_factory=dict, compare=False)  # derived views, computed once per snapshot

    @property
    def id(self) -> str:
        return self.location.id

    def memoized(self, key, compute):
        """`compute()` once per snapshot and key (sort orders, groupings)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    @property
    def facts(self) -> dict:
        return self.memoized(("facts",), self.count_facts)

    def count_facts(self) -> dict:
        """The run entry's counts over its rows (original §5.3), counted in C by `Counter` (a new
        snapshot appears every half second while a big run is indexed, and each one is asked)."""
        readable = [row for row in self.rows if not row.get("unreadable")]
        tasks = Counter(row["task_id"] for row in readable)
        tasks.pop(None, None)
        steps = Counter(row["step"] for row in readable)
        steps.pop(None, None)
        pairs = Counter((key, type(value) is bool, value) for row in readable  # True is not 1 here
                        for key, value in row["annotations"].items()
                        if value is not None and not isinstance(value, (dict, list)))
        annotations = {}
        for (key, _, value), count in pairs.items():  # in first-seen order, as the rows list them
            values = annotations.setdefault(key, {})
            text = scalar_text(value)
            if text in values or len(values) < MAX_ANNOTATION_VALUES:
                values[text] = values.get(text, 0) + count
        created = [row["created_ts"] for row in readable if row["created_ts"] is not None]
        tokenizer = next((row["tokenizer"] for row in readable if row["tokenizer"]), None)
        return {
            "created_at": iso_time(min(created)) if created else None,
            "task_count": len(tasks),
            "tasks": [{"id": task, "count": tasks[task]} for task in sorted(tasks)],
            "steps": sorted(steps),
            "step_counts": {scalar_text(step): steps[step] for step in sorted(steps)},
            "statuses": dict(Counter(row["status"] for row in readable)),
            "annotations": annotations,
            "upstream": {"model": tokenizer} if tokenizer else None,
            "unreadable": len(self.rows) - len(readable),
        }


class RunIndex:
    """Rows of one run directory, keyed by document file name, with the version each was read at."""

    def __init__(self, location: RunLocation):
        self.location = location
        self.versions: dict[str, FileVersion] = {}
        self.rows: dict[str, dict] = {}
        self.listing: dict[str, FileVersion] = {}
        self.updated_at: str | None = None
        self.scan_error: str | None = None
        self.indexed_once = False
        self.snapshot: Snapshot | None = None
        self.rows_changed = True  # since the last snapshot
        self.verify_first: set[str] = set()  # documents a request found damaged: verified before the rest
        self.unsaved_verifications = False  # rows marked verified in place since the last save

    @property
    def directory(self) -> Path:
        return self.location.path

    def changes(self, listing: dict[str, FileVersion]) -> Changes:
        """What must be read to match `listing`: new or changed files, and vanished ones."""
        self.listing = listing
        compute = [name for name, version in listing.items() if self.versions.get(name) != version]
        compute.sort(key=lambda name: listing[name].size)
        removed = [name for name in self.versions if name not in listing]
        return Changes(compute, removed)

    def store(self, name: str, version: FileVersion, row: dict):
        if row.get("unreadable") and not os.path.lexists(self.directory / name):
            self.remove(name)  # deleted between the listing and the read: gone, not unreadable
            return
        row = interned(row)
        row["revision"] = version.mtime_ns // 1_000_000
        row["_run"] = self.location.id
        self.versions[name] = version
        self.rows[name] = row
        self.rows_changed = True

    def unverified(self, limit: int) -> list[str]:
        """Up to `limit` documents whose sidecars are still to be checked, those a request reported first."""
        first = [name for name in self.verify_first if name in self.rows]
        self.verify_first.difference_update(first)
        rest = (name for name, row in self.rows.items() if not row.get("_verified") and name not in first)
        return first + list(islice(rest, max(limit - len(first), 0)))

    def mark_verified(self, name: str, row: dict):
        """Keep a verified row: in place when it found nothing new (every view of the row stays), else stored."""
        kept = self.rows.get(name)
        if kept is not None and kept["_json_z"] == row["_json_z"]:
            kept["_verified"] = True
            self.unsaved_verifications = True
        else:
            self.store(name, self.versions[name], row)

    def remove(self, name: str):
        self.versions.pop(name, None)
        if self.rows.pop(name, None) is not None:
            self.rows_changed = True

    def publish(self, generation: int, indexing: bool) -> Snapshot:
        """A new snapshot; when no row changed, it shares the last one's rows and derived views
        (facts, sort orders, groupings), so a run reopened from the persisted index is counted once."""
        previous = self.snapshot
        file_count = max(len(self.listing), len(self.rows))
        if previous is not None and not self.rows_changed and previous.file_count == file_count:
            rows, by_id, memo = previous.rows, previous.by_id, previous.memo
        else:
            rows = tuple(sorted(self.rows.values(), key=default_order_key))
            by_id, memo = {row["id"]: row for row in rows}, {}
        self.rows_changed = False
        self.snapshot = Snapshot(
            location=self.location,
            rows=rows,
            by_id=by_id,
            generation=generation,
            indexing=indexing,
            file_count=file_count,
            updated_at=self.updated_at,
            scan_error=self.scan_error,
            verified=sum(1 for row in rows if row.get("_verified")),
            memo=memo,
        )
        return self.snapshot


class Catalog:
    """Every run the viewer serves. The watcher writes it; requests read `snapshots()`."""

    def __init__(self, roots):
        self.roots = [Path(root).absolute() for root in roots]
        self.runs: dict[str, RunIndex] = {}
        self.generation = 0
        self.lock = threading.Lock()
        self._published: tuple[Snapshot, ...] = ()

    def snapshots(self) -> tuple[Snapshot, ...]:
        """Every run's latest snapshot (an immutable tuple; safe to read from any thread)."""
        return self._published

    def snapshot(self, run_id: str) -> Snapshot | None:
        return next((s for s in self._published if s.id == run_id), None)

    def publish(self, changed: list[RunIndex], indexing: set[str]):
        """Freeze the changed runs' rows and make them visible to requests at once."""
        with self.lock:
            generation = self.generation + 1
            for run in changed:
                run.publish(generation, run.location.id in indexing)
            self._published = tuple(run.snapshot for run in self.runs.values() if run.snapshot is not None)
            # only now: a request that reads the new number (answers are cached by it) finds these snapshots
            self.generation = generation

    def set_runs(self, locations: list[RunLocation]):
        """Keep known runs, add new ones, drop vanished ones; returns the new RunIndex objects."""
        by_path = {run.location.path: run for run in self.runs.values()}
        fresh = []
        runs = {}
        for location in locations:
            run = by_path.get(location.path)
            if run is None:
                run = RunIndex(location)
                fresh.append(run)
            runs[location.id] = run
        self.runs = runs
        return fresh

    def verify_soon(self, run_id: str, name: str):
        """A request found the record's sidecars damaged: the watcher checks it on its next poll."""
        run = self.runs.get(run_id)
        if run is not None:
            run.verify_first.add(name)

    def known_ids(self) -> dict[Path, str]:
        return {run.location.path: run_id for run_id, run in self.runs.items()}
