"""The read API: one function per route, each taking the parsed request and returning (status, payload).

Records are found through the catalog's in-memory index by id, never by a path taken from
the request. Listings read only snapshots; the detail routes read one document (cached by
path, size and mtime) and `/paths` with text also reads the tokens sidecar.
"""

import os
import re
import threading
from collections import OrderedDict
from pathlib import Path

from skycap_viewer import __version__
from skycap_viewer.blocks import BLOCK_KIND_WHY
from skycap_viewer.errors import RecordError
from skycap_viewer.flags import flag_catalogue
from skycap_viewer.index import Catalog, Snapshot
from skycap_viewer.payloads import paths_payload
from skycap_viewer.query import (
    ApiError,
    Filters,
    health,
    one,
    page,
    parse_flag,
    parse_page,
    parse_sort,
    reward_range,
    rows_in_order,
)
from skycap_viewer.reader import document_path, read_document
from skycap_viewer.rows import present_sidecars, public

RECORD_ID = re.compile(r"^[A-Za-z0-9_.~-]+$")
DOCUMENT_CACHE_SIZE = 16


class Api:
    """Route functions over one catalog, safe to call from many request threads at once."""

    RECORD_VIEWS = ("paths",)  # /v1/trajectories/{id}/<view>

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.documents = DocumentCache(DOCUMENT_CACHE_SIZE)

    # -- the server and its runs --------------------------------------------------------

    def healthz(self, params):
        roots = " ".join(str(root) for root in self.catalog.roots)
        return 200, {"status": "ok", "source": "record", "record": roots}

    def viewer(self, params):
        return 200, {
            "api": "records",
            "roots": [str(root) for root in self.catalog.roots],
            "version": __version__,
            "flags": flag_catalogue(),
            "block_kinds": [{"kind": kind, "why": why} for kind, why in BLOCK_KIND_WHY.items()],
        }

    def runs(self, params):
        entries = [self.run_entry(snapshot) for snapshot in self.catalog.snapshots()]
        entries.sort(key=lambda e: e["id"])
        entries.sort(key=lambda e: e.get("created_at") or e.get("updated_at") or "", reverse=True)
        return 200, {"data": entries}

    def run_entry(self, snapshot: Snapshot) -> dict:
        location = snapshot.location
        entry = {
            "id": location.id,
            "project": location.project,
            "path": str(location.path),
            "indexing": snapshot.indexing,
            "indexed": len(snapshot.rows),
            "updated_at": snapshot.updated_at,
            "trajectory_count": snapshot.file_count,
            "error": snapshot.scan_error,
            **snapshot.facts,
        }
        return entry

    # -- rollouts ---------------------------------------------------------------------------

    def scope(self, params) -> list[Snapshot]:
        """The runs a listing covers: `run_id`'s, or every run."""
        run_id = one(params, "run_id")
        if run_id is None:
            return list(self.catalog.snapshots())
        snapshot = self.catalog.snapshot(run_id)
        if snapshot is None:
            raise ApiError(404, f"no run {run_id}")
        return [snapshot]

    def trajectories(self, params):
        snapshots = self.scope(params)
        filters = Filters.parse(params)
        flag = parse_flag(params)
        key, order, _ = parse_sort(params)
        limit, offset = parse_page(params)
        ordered = rows_in_order(snapshots, key, order)
        matching = [row for row in ordered if filters.matches(row)] if filters else ordered
        band = health(matching, "rollouts", *coverage(snapshots))
        if flag is not None:
            matching = [row for row in matching if flag in row["summary"]["flags"]]
        runs = {s.id: s.location for s in snapshots}
        listing = page(matching, limit, offset)
        listing["data"] = [with_run(row, runs) for row in listing["data"]]
        return 200, {
            **listing,
            "total": len(matching),
            "indexing": any(s.indexing for s in snapshots),
            "indexed_trajectories": sum(len(s.rows) for s in snapshots),
            "health": band,
            "sort": {"key": key, "order": order},
            "reward_range": reward_range(row["_keys"]["reward"] for row in matching),
        }

    def find(self, record_id: str, params) -> tuple[Snapshot, dict]:
        """The index row of `record_id`; `run_id` is required when the id is in several runs."""
        if not RECORD_ID.match(record_id):
            raise ApiError(400, f"bad trajectory id {record_id!r}: ids match {RECORD_ID.pattern}")
        scope = self.scope(params)
        found = [(s, s.by_id[record_id]) for s in scope if record_id in s.by_id]
        if not found:
            raise ApiError(404, f"no trajectory {record_id}")
        if len(found) > 1:
            runs = ", ".join(s.id for s, _ in found)
            raise ApiError(400, f"trajectory {record_id} is in several runs ({runs}): pass run_id")
        return found[0]

    def trajectory(self, record_id: str, params):
        snapshot, row = self.find(record_id, params)
        header = with_run(row, {snapshot.id: snapshot.location})
        header.pop("summary", None)
        header.pop("created_ts", None)
        return 200, header

    def load(self, record_id: str, params):
        """(snapshot, row, directory, document) of a readable record."""
        snapshot, row = self.find(record_id, params)
        if row.get("unreadable"):
            raise ApiError(404, f"trajectory {record_id} cannot be read: {row['error']}")
        directory = snapshot.location.path
        try:
            document = self.documents.get(document_path(directory, record_id))
        except RecordError as error:
            raise ApiError(404, f"trajectory {record_id} cannot be read: {error}") from None
        return snapshot, row, directory, document

    def paths(self, record_id: str, params):
        snapshot, row, directory, document = self.load(record_id, params)
        text = one(params, "text") != "false"
        payload = paths_payload(
            directory, document, present_sidecars(directory, document), record_id, text=text,
            run_id=snapshot.id, project=snapshot.location.project, revision=row["revision"],
        )
        return 200, payload


def coverage(snapshots) -> tuple[int, int]:
    """(rows indexed, documents listed) over `snapshots`: the band's `scanned` and `total`."""
    return sum(len(s.rows) for s in snapshots), sum(s.file_count for s in snapshots)


def with_run(row: dict, runs: dict) -> dict:
    """The row as sent, with its run's id and project."""
    location = runs[row["_run"]]
    return {**public(row), "run_id": location.id, "project": location.project}


class DocumentCache:
    """A few parsed documents, keyed by path, size and mtime, so a rewritten record is reread."""

    def __init__(self, size: int):
        self.size = size
        self.entries: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, path: Path) -> dict:
        try:
            stat = os.stat(path)
        except OSError as error:
            raise RecordError(path, f"cannot read the file ({error.strerror or error})") from None
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
        document = read_document(path)
        with self.lock:
            self.entries[key] = document
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        return document
