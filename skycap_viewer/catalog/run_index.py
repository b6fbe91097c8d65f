"""A record directory's run index: which rollouts the trainer trained (optional, written by the trainer).

A pulled run can carry one plain JSON file per step, one row per rollout of the step: its `attempt`,
whether a later attempt `superseded` it, whether it was `trained` (true, false, or null when the
trainer did not say) and where its `record` lives. Two layouts, both inside the record directory:

- newer (what a pull writes): the directory is one phase's, and holds `index/step-<N>.json`;
- older: `index/<phase>/step-<N>.json`.

The index is never trusted to be complete (it need not list every record here, and a row's record
need not be here), and never needed: without one nothing changes. A file that cannot be read as the
format says (not JSON, another `format_version`, a row without an `id`, too big) is named once and
ignored; the rest are used. Reading is bounded: at most `MAX_FILES` files, `MAX_FILE_BYTES` each,
`MAX_FILE_ROWS` rows, `MAX_FILE_CONTAINERS` JSON objects and arrays and `MAX_FILE_VALUES` values a file,
counted before it is parsed by the guard documents have (`items_past`), so one file's parse costs a
bounded memory whatever its bytes hold (16 MiB of `{"id":"r1"},` would be 1.1 GB once kept, of `"ab",` 3.4 M strings),
`MAX_ROWS` rows in all, each row's values cut as a listing row's are.

This module only reads and shapes: `store.py` keeps the rows (table `index_rows`) and applies them
to the records' rows (`overlaid`); the watcher lists the files (`index_files`) every poll and reads a
file again only when its (size, mtime) changed.
"""

import json
import os
import re
from dataclasses import dataclass, field

from skycap_viewer.catalog.blobs import squeezed, unsqueezed
from skycap_viewer.catalog.rows import bounded_mapping
from skycap_viewer.flags import ordered, row_flags
from skycap_viewer.printable import say
from skycap_viewer.record.document import BYTES_PER_VALUE, items_past
from skycap_viewer.record.fields import cut_marker
from skycap_viewer.wire import encodable, encode_json

INDEX_DIRECTORY = "index"
STEP_FILE = re.compile(r"step-(0|[1-9][0-9]{0,17})\.json")
MAX_FILES = 20_000  # step files read, both layouts together (more are named once and left out)
MAX_PHASES = 64  # subdirectories of `index/` looked into (the older layout: train, eval)
MAX_FILE_BYTES = 16 * 2**20  # a step of 40k rollouts; a bigger file is named and ignored
MAX_FILE_ROWS = 100_000  # rows of one file, 2.5 steps of 40k rollouts: each costs ~0.6 KB while it is read
MAX_FILE_CONTAINERS = MAX_FILE_BYTES // 32  # JSON objects and arrays of one file: a row holds 2 to 5
MAX_FILE_VALUES = MAX_FILE_BYTES // BYTES_PER_VALUE  # JSON values of one file, as a document's: a row holds ~20
MAX_ROWS = 2_000_000  # rows in all: a file that would pass it is named and ignored
ID_LIMIT = 512  # characters of an id (a record's file name is shorter)
RECORD_JSON_LIMIT = 4096  # bytes of a row's `record` as kept: a longer one is kept as a cut marker
NOT_TRAINED = "not-trained"
PHASES = ("train", "eval")
ROW_FIELDS = ("id", "instance_id", "repetition_id", "attempt", "status", "annotations", "superseded", "trained",
              "record")


class IndexProblem(Exception):
    """Why one index file is ignored."""


@dataclass(frozen=True)
class IndexRow:
    id: str
    position: int  # in its file
    trained: bool | None
    superseded: bool
    status: str | None
    fields: dict  # the row as listed (`ROW_FIELDS`, values bounded)


@dataclass(frozen=True)
class IndexFile:
    """One step file as read: its place (`name` relative to the record directory), phase, step and rows."""

    name: str
    phase: str | None
    step: int
    rows: list


def index_files(directory) -> tuple[dict[str, tuple[int, int]] | None, str | None]:
    """({file name relative to `directory`: (size, mtime_ns)} of every step file of both layouts, at most
    `MAX_FILES`; why some were left out, or None). One stat a file; nothing without an `index/`, and
    None when `index/` is there but cannot be listed now (what was read stays)."""
    found: dict[str, tuple[int, int]] = {}
    left_out = None
    top = os.path.join(directory, INDEX_DIRECTORY)
    try:
        with os.scandir(top) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):  # no index: the usual case
        return found, None
    except OSError:
        return None, None
    phases = 0
    for entry in entries:
        if len(found) >= MAX_FILES:
            left_out = f"more than {MAX_FILES} run index files; only the first {MAX_FILES} are read"
            break
        try:
            if STEP_FILE.fullmatch(entry.name) and entry.is_file():
                stat = entry.stat()
                found[f"{INDEX_DIRECTORY}/{entry.name}"] = (stat.st_size, stat.st_mtime_ns)
            elif entry.is_dir() and not entry.name.startswith("."):
                phases += 1
                if phases > MAX_PHASES:
                    left_out = f"more than {MAX_PHASES} phase folders; only the first {MAX_PHASES} are read"
                    continue
                with os.scandir(entry.path) as inside:
                    for step_entry in sorted(inside, key=lambda e: e.name):
                        if len(found) >= MAX_FILES:
                            left_out = f"more than {MAX_FILES} run index files; only the first {MAX_FILES} are read"
                            break
                        if STEP_FILE.fullmatch(step_entry.name) and step_entry.is_file():
                            stat = step_entry.stat()
                            found[f"{INDEX_DIRECTORY}/{entry.name}/{step_entry.name}"] = (stat.st_size,
                                                                                         stat.st_mtime_ns)
        except OSError:  # gone between the listing and the stat: not there
            continue
    return found, left_out


def read_index_file(directory, name: str) -> IndexFile:
    """The step file `name` (as `index_files` names it) read and checked; `IndexProblem` says why not."""
    parts = name.split("/")
    step = int(STEP_FILE.fullmatch(parts[-1]).group(1))
    folder_phase = parts[1] if len(parts) == 3 else None
    path = os.path.join(directory, *parts)
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise IndexProblem(f"cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_FILE_BYTES:
        raise IndexProblem(f"larger than {MAX_FILE_BYTES // 2**20} MiB")
    try:
        text = data.decode(json.detect_encoding(data), "surrogatepass")  # as `json.loads` reads bytes
    except UnicodeDecodeError as error:
        raise IndexProblem(f"not JSON (not {error.encoding}: {error.reason} at byte {error.start})") from None
    del data
    found = items_past(text, MAX_FILE_CONTAINERS, MAX_FILE_VALUES)
    if found is not None and found[0] > MAX_FILE_CONTAINERS:
        raise IndexProblem(f"holds {found[0]:,} JSON objects and arrays, past the {MAX_FILE_CONTAINERS:,} a file may")
    if found is not None:
        raise IndexProblem(f"holds {found[1]:,} JSON values (strings, numbers, objects, arrays), past the "
                           f"{MAX_FILE_VALUES:,} a file may")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise IndexProblem(f"not JSON ({str(error)[:200]})") from None
    try:
        return checked_file(document, name, step, folder_phase, phase_directory(directory))
    except RecursionError:  # a value nested too deeply to look at
        raise IndexProblem("holds values nested too deeply") from None


def phase_directory(directory) -> str | None:
    """The phase a record directory of the newer layout is named for (`run/train`, `run/eval`), if any."""
    name = os.path.basename(os.path.normpath(directory))
    return name if name in PHASES else None


def checked_file(document, name: str, step: int, folder_phase: str | None, named_phase: str | None = None) -> IndexFile:
    if not isinstance(document, dict):
        raise IndexProblem("not a JSON object")
    if document.get("format_version") != 1:
        raise IndexProblem(f"format_version is {short(document.get('format_version'))}, not 1")
    if document.get("step", step) != step or isinstance(document.get("step"), bool):
        raise IndexProblem(f"says step {short(document.get('step'))} but is named step-{step}.json")
    phase = encodable(document.get("phase", folder_phase or named_phase))  # a file that does not say: where it is
    if phase is not None and not isinstance(phase, str):
        raise IndexProblem(f"phase is {short(phase)}, not a name")
    if folder_phase is not None and phase != folder_phase:
        raise IndexProblem(f"says phase {short(phase)} but is in the folder {folder_phase}/")
    rows = document.get("rows")
    if not isinstance(rows, list):
        raise IndexProblem("has no list of rows")
    if len(rows) > MAX_FILE_ROWS:
        raise IndexProblem(f"holds {len(rows):,} rows, past the {MAX_FILE_ROWS:,} a file may")
    return IndexFile(name, phase, step, [checked_row(row, position) for position, row in enumerate(rows)])


def checked_row(row, position: int) -> IndexRow:
    """One row as kept; a row the format does not allow makes its whole file ignored."""
    where = f"row {position}"
    if not isinstance(row, dict):
        raise IndexProblem(f"{where} is not an object")
    row = encodable(row)  # kept in the run's database: a lone surrogate (valid JSON) has no UTF-8 form
    record_id = row.get("id")
    if not isinstance(record_id, str) or not record_id or len(record_id) > ID_LIMIT:
        raise IndexProblem(f"{where} has no id (a string of 1 to {ID_LIMIT} characters)")
    trained, superseded = row.get("trained"), row.get("superseded", False)
    if trained not in (True, False, None) or not isinstance(trained, (bool, type(None))):
        raise IndexProblem(f"{where} ({record_id}): trained is {short(trained)}, not true, false or null")
    if not isinstance(superseded, bool):
        raise IndexProblem(f"{where} ({record_id}): superseded is {short(superseded)}, not true or false")
    fields = {}
    for key in ROW_FIELDS:
        value = row.get(key)
        if key == "annotations" and isinstance(value, dict):
            value = bounded_mapping(value)[0]
        elif key == "record" and value is not None:
            size = len(encode_json(value))
            value = value if isinstance(value, dict) and size <= RECORD_JSON_LIMIT else cut_marker(value, size)
        elif isinstance(value, (dict, list)) or (isinstance(value, str) and len(value) > ID_LIMIT):
            value = cut_marker(value, len(encode_json(value)))
        fields[key] = value
    fields["superseded"] = superseded
    status = fields["status"] if isinstance(fields["status"], str) else None
    return IndexRow(record_id, position, trained, superseded, status, fields)


def short(value) -> str:
    """A value as a problem names it: its JSON, cut to 60 characters."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def say_ignored(directory, name: str, problem: str):
    """The one line that names a damaged index file."""
    path = os.path.join(directory, *name.split("/"))
    say(f"skycap-viewer: {path}: run index file ignored: {problem}")


def say_left_out(directory, why: str):
    """The one line that says index files were left out."""
    say(f"skycap-viewer: {os.path.join(directory, INDEX_DIRECTORY)}: {why}")


# -- applying it to the records' rows ---------------------------------------------------------------


@dataclass(frozen=True)
class Overlay:
    """What the run index says of one record: its row's `trained` and `superseded`, and whether that
    makes the `not-trained` flag (not trained, not superseded, not eval: eval rollouts never train)."""

    trained: bool | None
    superseded: bool
    phase: str | None

    @property
    def not_trained(self) -> bool:
        return self.trained is False and not self.superseded and self.phase != "eval"


def overlaid(row: dict, overlay: Overlay | None) -> dict:
    """`row` (a row as `rows.compute_row` makes it, or as kept) with what the index says of it, or
    without it when `overlay` is None: `trained` and `superseded` fields, the `not-trained` flag, the
    health sort key. Only the fields the index touches change; it is idempotent."""
    flags = [name for name in row["flags"] if name != NOT_TRAINED]
    if overlay is not None and overlay.not_trained:
        flags = ordered([*flags, NOT_TRAINED])
    trained = None if overlay is None else overlay.trained
    superseded = None if overlay is None else overlay.superseded
    if (flags == row["flags"] and row.get("trained") == trained and row.get("superseded") == superseded
            and ("superseded" in row) == (overlay is not None)):
        return row
    public = json.loads(unsqueezed(row["_json_z"]))
    public["flags"] = flags
    if isinstance(public.get("summary"), dict):
        public["summary"]["flags"] = flags
    for key, value in (("trained", trained), ("superseded", superseded)):
        if overlay is None:
            public.pop(key, None)
        else:
            public[key] = value
    changed = {**row, "flags": flags, "_json_z": squeezed(encode_json(public)),
               "_keys": {**row["_keys"], "health": len(row_flags(flags)), "trained": trained}}
    for key, value in (("trained", trained), ("superseded", superseded)):
        if overlay is None:
            changed.pop(key, None)
        else:
            changed[key] = value
    return changed


def where_it_lives(fields: dict) -> str:
    """Why an index row is listed without its record, and where the record is, as one line."""
    record = fields.get("record")
    if not isinstance(record, dict) or record.get("cut"):
        return "the run index lists it, but its record is not in this copy, and the index says nowhere else"
    places = []
    if isinstance(record.get("path"), str):
        host = record.get("host")
        places.append(f"on {host}'s disk at {record['path']}" if isinstance(host, str) else f"at {record['path']}")
    if isinstance(record.get("mirror"), str):
        places.append(f"mirrored at {record['mirror']}")
    if not places:
        return "the run index lists it, but its record is not in this copy, and the index says nowhere else"
    return "the run index lists it, but its record is not in this copy: " + "; ".join(places)


# -- read whole, for `summary` ----------------------------------------------------------------------


@dataclass
class RunIndexSummary:
    """What a directory's run index says of the records in it, read once without a store (`summary`)."""

    files: int = 0
    phases: set = field(default_factory=set)
    steps: set = field(default_factory=set)
    rows: int = 0
    rows_without_record: int = 0
    overlays: dict = field(default_factory=dict)  # record id (of the records here) -> Overlay
    damaged: list = field(default_factory=list)  # [{"file", "problem"}]
    left_out: str | None = None

    def facts(self, record_count: int) -> dict:
        trained = {"true": 0, "false": 0, "null": 0}
        for overlay in self.overlays.values():
            trained[{True: "true", False: "false"}.get(overlay.trained, "null")] += 1
        return {
            "files": self.files,
            "phases": sorted(self.phases),
            "steps": sorted(self.steps),
            "rows": self.rows,
            "rows_without_record": self.rows_without_record,
            "records_listed": len(self.overlays),
            "records_not_listed": record_count - len(self.overlays),
            "trained": trained,
            "superseded": sum(1 for overlay in self.overlays.values() if overlay.superseded),
            "not_trained": sum(1 for overlay in self.overlays.values() if overlay.not_trained),
            "damaged": self.damaged,
        }


def summarise_run_index(directory, record_ids: set) -> RunIndexSummary | None:
    """The run index of `directory` as the server reads it (same limits; a damaged file named once on
    stderr and ignored; a record listed twice takes its latest step's row), against the ids of the
    records here; None without an index. Only what the records here need is kept."""
    listed, left_out = index_files(directory)
    if not listed:
        return None
    found = RunIndexSummary(left_out=left_out)
    if left_out is not None:
        say_left_out(directory, left_out)
    read_files = []
    for name in listed:
        try:
            read = read_index_file(directory, name)
            if found.rows + len(read.rows) > MAX_ROWS:
                raise IndexProblem(f"the run index would hold more than {MAX_ROWS:,} rows with it")
        except IndexProblem as problem:
            say_ignored(directory, name, str(problem))
            found.damaged.append({"file": name, "problem": str(problem)})
            continue
        found.files += 1
        found.rows += len(read.rows)
        if read.phase is not None:
            found.phases.add(read.phase)
        found.steps.add(read.step)
        found.rows_without_record += sum(1 for entry in read.rows if entry.id not in record_ids)
        read_files.append((read.step, name, read.phase, [(entry.id, entry.trained, entry.superseded)
                                                         for entry in read.rows if entry.id in record_ids]))
    for _, _, phase, rows in sorted(read_files, key=lambda item: item[:2]):  # the latest step's row wins
        for record_id, trained, superseded in rows:
            found.overlays[record_id] = Overlay(trained, superseded, phase)
    return found
