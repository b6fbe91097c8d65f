"""A run's index on disk: one SQLite database per record directory, its rows never all in the heap.

Each record is a table row: its document's name and version, the columns listings filter, sort
and group on (the flags as bits), and the row itself twice, compressed: `kept` (the fields views
read, `marshal`) and `json` (the row as sent). Counts are kept as rows change, in `tally`: per
kind of filter (none, a step, a task, a status, an annotation's value or key) and per combination
of flags, the rows and their reward range, so a listing's total, health band and colour scale are
a few lookups instead of a count. Groups are kept in `groups`, each computed again from its
members when one of them changed. The text a `q` filter looks in is kept (`rowtexts`) and, once the
run's first indexing is done, indexed by trigrams (`texts`), as the sort and filter indexes are.
The run index the trainer wrote, when the directory has one (`catalog/run_index.py`), is kept too:
its files' versions (`index_files`) and rows (`index_rows`, each saying whether its record is here);
a record it lists gets what it says (`trained`, `superseded`, the `not-trained` flag) when its row
is stored, and again when an index file changes. The design, and why: `docs/scale.md`.

The watcher writes through `RunStore`, one transaction per publish, and the workers reading a big
batch write its new rows themselves (`rows_written`), compute (and keep) its groups (`groups_written`) and build
its indexes (`indexes_built_at`), so the server's own process does next to nothing a row; requests
read through `reader()`, one connection per thread, each answer inside one read transaction: one
consistent state, whatever is committed meanwhile.
"""

import json
import os
import sqlite3
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from skycap_viewer.catalog.blobs import pack, unpack
from skycap_viewer.catalog.groups import Group, group_flags, group_key_of, key_values, split_attempts
from skycap_viewer.catalog.rows import unreadable_row
from skycap_viewer.catalog.run_index import MAX_ROWS, IndexFile, Overlay, overlaid
from skycap_viewer.errors import ApiError
from skycap_viewer.flags import FLAG_ORDER, FLAGS
from skycap_viewer.printable import say
from skycap_viewer.record.document import record_id_of
from skycap_viewer.record.fields import scalar_text
from skycap_viewer.wire import encode_json

SCHEMA_VERSION = 6  # 6: each rollout's lane on its step's axis (`lanes`)
SORT_COLUMNS = ("step", "task", "reward", "turns", "tokens", "health", "trained")  # `created`: the index's own order
KEPT = ("id", "task_id", "step", "status", "meta", "annotations", "created_ts", "tokenizer", "flags",
        "unreadable", "error", "cut", "_keys", "_retokenized", "trained", "superseded")
GROUPS_AT_ONCE = 2000  # groups computed again in one go (their members in memory at once)
WRITER_CACHE_KIB = 32 * 1024  # the watcher's page cache: a big run's indexes stay in memory while it is written
MADE = "made"  # the facts' token of one database file: how a reader tells it from one made again at its path
BUSY_MS = 30_000  # how long a connection waits on another's lock (a checkpoint), at most
MODE_SWITCH_MS = 200  # how long switching a file to WAL waits: a file someone else holds is made anew instead
NEWEST_FIRST = "(created IS NULL), created DESC, id"  # the index's own order: newest first, undated last
RETOKENIZED = "retokenized"  # the `tally` kind whose `n` counts re-tokenized copies (nodes), not rows

# a group's members (its computing, `/v1/groups/{key}`); left out while the workers write a batch bigger than the run
# (`RunStore.drop_group_index`): its keys come in no order, and kept up as rows came it was a fifth of their writing
GROUP_INDEX = "CREATE INDEX IF NOT EXISTS rows_by_group ON rows (gkey) WHERE gkey IS NOT NULL"
SCHEMA = [
    "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, value)",
    """CREATE TABLE IF NOT EXISTS rows (
        rid INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        stamp INTEGER NOT NULL, id TEXT NOT NULL, created, step, task, status, reward, turns, tokens, health,
        flags INTEGER NOT NULL, trained, superseded, gkey TEXT, unreadable INTEGER NOT NULL, verified INTEGER NOT NULL,
        kept BLOB NOT NULL, json BLOB NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS rows_by_id ON rows (id)",
    GROUP_INDEX,
    "CREATE INDEX IF NOT EXISTS rows_unverified ON rows (rid) WHERE NOT verified",
    "CREATE INDEX IF NOT EXISTS rows_ungrouped ON rows (rid) WHERE gkey IS NULL",
    "CREATE INDEX IF NOT EXISTS rows_unreadable ON rows (rid) WHERE unreadable",
    f"CREATE INDEX IF NOT EXISTS rows_newest ON rows ({NEWEST_FIRST})",
    "CREATE TABLE IF NOT EXISTS annotations (rid INTEGER NOT NULL, key TEXT NOT NULL, value TEXT)",
    "CREATE INDEX IF NOT EXISTS annotations_by_row ON annotations (rid)",
    "CREATE TABLE IF NOT EXISTS rowtexts (rid INTEGER PRIMARY KEY, text TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS tally (kind TEXT NOT NULL, value NOT NULL, flags INTEGER NOT NULL,
        n INTEGER NOT NULL, low, high, PRIMARY KEY (kind, value, flags)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS groups (
        gkey TEXT PRIMARY KEY, step, task, n INTEGER NOT NULL, members INTEGER NOT NULL, flags INTEGER NOT NULL,
        member_flags INTEGER NOT NULL, reward, turns, tokens, health INTEGER NOT NULL, created, low, high,
        summary BLOB NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS groups_in_order ON groups ((step IS NULL), step DESC, (task IS NULL), task, gkey)",
    # a run's group sizes and grouped rows (`index.count_groups`, every publish) without reading the summaries:
    # at a million rows, reading them was a third of a reopen's first publish
    "CREATE INDEX IF NOT EXISTS groups_by_size ON groups (n, members)",
    # what an unfiltered groups listing counts (its band, total and reward range), without reading the summaries
    "CREATE INDEX IF NOT EXISTS groups_band ON groups (flags, member_flags, n, low, high)",
    # the run index: its files as read (`problem`: why one is ignored) and their rows (`present`: its record is here)
    """CREATE TABLE IF NOT EXISTS index_files (file TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        phase TEXT, step INTEGER, rows INTEGER NOT NULL, problem TEXT)""",
    """CREATE TABLE IF NOT EXISTS index_rows (file TEXT NOT NULL, position INTEGER NOT NULL, id TEXT NOT NULL,
        phase TEXT, step INTEGER, status TEXT, trained, superseded INTEGER NOT NULL, present INTEGER NOT NULL,
        fields BLOB NOT NULL, PRIMARY KEY (file, position)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS index_rows_by_id ON index_rows (id)",
    "CREATE INDEX IF NOT EXISTS index_rows_missing ON index_rows (phase, step, file, position) WHERE NOT present",
    # each rollout's lane on its step's axis (`catalog.rows.kept_lane`), a row's with a step: its times in Unix
    # seconds, what it says squeezed (its indexes are listing indexes: built after the first indexing)
    """CREATE TABLE IF NOT EXISTS lanes (rid INTEGER PRIMARY KEY, lane_step NOT NULL, lane_id TEXT NOT NULL, lane_start,
        lane_end, lane BLOB NOT NULL)""",
    # per step, its lanes and how many times they were written or removed (its version, `views.run.step_timeline`)
    "CREATE TABLE IF NOT EXISTS lane_steps (step PRIMARY KEY, lanes INTEGER NOT NULL, changes INTEGER NOT NULL)"
    " WITHOUT ROWID",
]
ROW_COLUMNS = ("rid, name, size, mtime_ns, stamp, id, created, step, task, status, reward, turns, tokens, health,"
               " flags, trained, superseded, gkey, unreadable, verified, kept, json")  # as `put_many` gives them
LISTING_INDEXES = [  # built once a run's first indexing is done: one bulk build costs less than a million updates
    "CREATE INDEX IF NOT EXISTS rows_oldest ON rows ((created IS NULL), created, id)",
    *(f"CREATE INDEX IF NOT EXISTS rows_by_{column}_{order} ON rows"
      f" (({column} IS NULL), {column} {order.upper()}, {NEWEST_FIRST})"
      for column in SORT_COLUMNS for order in ("asc", "desc")),
    *(f"CREATE INDEX IF NOT EXISTS rows_with_{column} ON rows ({column}, flags)"
      for column in ("step", "task", "status", "reward", "trained")),
    "CREATE INDEX IF NOT EXISTS rows_by_flags ON rows (flags)",
    "CREATE INDEX IF NOT EXISTS annotations_by_value ON annotations (key, value, rid)",
    # a step's lanes in start order, its origin and its last end (the step timeline): index walks. Kept as rows
    # came, they were a third of a worker's write a row on a cold index (lanes in random step and time order)
    "CREATE INDEX IF NOT EXISTS lanes_by_start ON lanes (lane_step, (lane_start IS NULL), lane_start, lane_id)",
    "CREATE INDEX IF NOT EXISTS lanes_by_end ON lanes (lane_step, lane_end, lane_id)",
    # the `q` filter's trigram index over `rowtexts`, built whole from it (three times faster than row by row)
    "CREATE VIRTUAL TABLE texts USING fts5 (text, content = 'rowtexts', content_rowid = 'rid', tokenize = 'trigram')",
    "INSERT INTO texts (texts) VALUES ('rebuild')",
]
LAST_LISTING_INDEX = "texts"


def order_index(key: str, order: str) -> str:
    """The index that lists rows in a sort's order (NULLs last, ties newest first, then by id)."""
    if key == "created":
        return "rows_newest" if order == "desc" else "rows_oldest"
    return f"rows_by_{key}_{order}"


def flag_bits(names) -> int:
    """Flags as one integer, a bit per flag in the catalogue's order."""
    bits = 0
    for name in names:
        bits |= 1 << FLAG_ORDER[name]
    return bits


def bit_flags(bits: int) -> list[str]:
    """The flags an integer of `flag_bits` holds, in the catalogue's order."""
    return [flag.name for position, flag in enumerate(FLAGS) if bits >> position & 1]


def stored_form(row: dict, group_by: tuple) -> tuple:
    """What the store keeps of a row, ready to insert: (its `rows` columns from `id` on, its annotations as
    (key, value as filtered), its `q` text, its `row_kinds`, its re-tokenized copies, its lane (`rows.kept_lane`;
    None when unreadable)). Plain values, so the worker that computed the row computes this too and the server's
    process only inserts it."""
    keys = row["_keys"]
    gkey = group_key_of(row, group_by)
    unreadable = bool(row.get("unreadable"))
    columns = (row["id"], keys["created"], row["step"], row["task_id"], row["status"], keys["reward"], keys["turns"],
               keys["tokens"], keys["health"], flag_bits(row["flags"]), row.get("trained"), row.get("superseded"), gkey,
               unreadable, bool(row.get("_verified")), pack({key: row[key] for key in KEPT if key in row}),
               row["_json_z"])
    annotations = [] if unreadable else [
        (key, None if isinstance(value, (dict, list)) else scalar_text(value))
        for key, value in row["annotations"].items() if value is not None]
    return columns, annotations, row["_text"], row_kinds(row, gkey), row.get("_retokenized"), row.get("_lane")


STEP, REWARD, BITS, GKEY, UNREADABLE, VERIFIED, KEPT_BLOB = 2, 5, 9, 12, 13, 14, 15  # in a `stored_form`'s columns


def form_unreadable(row) -> bool:
    """Whether a row (a dict, or its `stored_form`) is of a record that could not be read."""
    return bool(row.get("unreadable")) if isinstance(row, dict) else row[0][UNREADABLE]


def row_kinds(row: dict, gkey) -> list[tuple[str, object]]:
    """What a row is counted under in `tally`: every row, then by its values (readable rows only)."""
    kinds = [("all", ""), ("trained", trained_text(row.get("trained")))]
    if "superseded" in row:  # the run index lists it
        kinds.append(("indexed", ""))
    if row.get("unreadable"):
        kinds.append(("unreadable", ""))
    if gkey is None:
        kinds.append(("ungrouped", ""))
    if row["_keys"]["reward"] is not None:
        kinds.append(("reward", row["_keys"]["reward"]))
    if not row.get("unreadable"):
        for kind, field in (("step", "step"), ("task", "task_id"), ("status", "status"), ("tokenizer", "tokenizer")):
            if row.get(field) not in (None, ""):
                kinds.append((kind, row[field]))
        for key, value in row["annotations"].items():
            if value is None:
                continue
            kinds.append(("annotation-key", key))
            if not isinstance(value, (dict, list)):
                kinds.append(("annotation", annotation_value(key, value)))
    return kinds


def trained_text(trained) -> str:
    """How `tally` and the `trained` filter name what the run index says: true, false, null (or unlisted)."""
    return {True: "true", False: "false"}.get(trained, "null")


def annotation_value(key: str, value) -> str:
    """How `tally` names an annotation's value: the key, a NUL, the value as the filters write it."""
    return f"{key}\0{scalar_text(value)}"


class RunStore:
    """The watcher's connection to one run's database: batched writes, kept counts and groups."""

    def __init__(self, path: Path, facts: dict, group_by: tuple, fresh: bool = False):
        """Open (or create) the database at `path`; one whose `facts` differ, that SQLite cannot read,
        or that is `fresh` (what is left of one deleted under the viewer), is emptied first (an index is
        only a hint: it is rebuilt from the records)."""
        self.path = Path(path)
        self.group_by = tuple(group_by)
        self.record_directory = facts.get("directory")  # what a refused row's problem names its file in
        self.reused = False
        made = None
        try:
            self.db, wal = self.connect()
            stored = self.stored_facts()
            made = stored.pop(MADE, None)
            self.reused = not fresh and wal and made is not None and stored == facts
        except sqlite3.DatabaseError:
            self.db = None
        if not self.reused:
            self.recreate()
            made = os.urandom(8).hex()
            with self.db:
                self.db.executemany("INSERT INTO facts VALUES (?, ?)", [*facts.items(), (MADE, made)])
        self.identity = made  # what readers know this file by
        wal = self.db.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
        self.files = self.file_identities()  # the files opened (a deleted file's inode may be given again),
        self.complete = None not in self.files[:3 if wal else 1]  # all there (not deleted as they were made)
        self.text_index = False
        self.listing_indexes = self.has_text_index()
        self.in_transaction = False
        self.touched_groups: set = set()
        self.deferred: set | None = None  # while groups are computed elsewhere: those touched since taken
        self.counts: dict = {}  # (kind, value, flags) -> [rows added (negative: removed), their lowest and
        # highest reward]: what `tally` gains at the next commit
        self.stale_ranges: set = set()  # tally rows a removed row bounded: recounted at commit
        self.has_index = False  # whether any run index row is kept (else a stored row is looked up in none)
        self.index_missing = 0  # index rows whose record is not here
        self.index_summary: dict | None = None  # what `index_facts` says of the files, kept until one changes
        self.count_index()

    def connect(self) -> tuple[sqlite3.Connection, bool]:
        """A writing connection, and whether its file is in WAL mode (SQLite leaves the mode as it was,
        without an error, when another connection holds the file: readers would then block the writer)."""
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {MODE_SWITCH_MS}")
        wal = db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() == "wal"
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        db.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
        db.execute("PRAGMA synchronous = NORMAL")  # an index: rebuilt from the records if a crash loses it
        for statement in SCHEMA:
            db.execute(statement)
        return db, wal

    def stored_facts(self) -> dict:
        return dict(self.db.execute("SELECT key, value FROM facts"))

    def recreate(self):
        """Delete the database's files and make an empty one."""
        if self.db is not None:
            self.db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)
        self.db, wal = self.connect()
        if not wal:
            say(f"skycap-viewer: {self.path}: SQLite would not switch the index to WAL mode; "
                "listings may wait while it is written")

    def close(self):
        self.db.close()

    def row_count(self) -> int:
        """The stored rows, as the kept counts say (no row is counted)."""
        return self.db.execute("SELECT coalesce(sum(n), 0) FROM tally WHERE kind = 'all'").fetchone()[0]

    def file_identities(self) -> tuple:
        """(device, inode) of the database file and of the `-wal` and `-shm` SQLite keeps beside it while
        it is open (None: not there)."""
        identities = []
        for suffix in ("", "-wal", "-shm"):
            try:
                stat = os.stat(f"{self.path}{suffix}")
                identities.append((stat.st_dev, stat.st_ino))
            except OSError:
                identities.append(None)
        return tuple(identities)

    def is_current(self) -> bool:
        """Whether the database's files are still the ones this store opened: one deleted (or replaced)
        leaves the writer and new readers on different files, each seeing another database."""
        return self.complete and self.file_identities() == self.files

    # -- writing ----------------------------------------------------------------------------

    def begin(self):
        if not self.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.in_transaction = True

    def versions(self):
        """(name, size, mtime_ns, stamp, doubted) of every stored row, as a cursor (read as a listing is compared
        with it, never held). A reopened run reads the rows it doubts again: the unreadable ones, so a record whose
        permissions or bytes were repaired without a new size or mtime shows at once, and one whose stored id is
        not its file's (a database edited behind the viewer's back would list a record no one can open)."""
        return self.db.execute("SELECT name, size, mtime_ns, stamp, unreadable OR id || '.json.zst' != name"
                               " FROM rows")

    def build_listing_indexes(self):
        """Build the sort and filter indexes here (once: a run's first indexing is done)."""
        if not self.listing_indexes:
            self.commit()
            build_listing_indexes(self.db)
            self.listing_indexes = True

    def listing_indexes_built(self) -> bool:
        """Whether the sort and filter indexes are all there (another process built them: `indexes_built_at`),
        so listings may be told to use them. The text index is the last one built."""
        if not self.listing_indexes:
            self.listing_indexes = self.has_text_index()
        return self.listing_indexes

    def has_text_index(self) -> bool:
        """Whether the `q` text's trigram index exists, so stored and removed rows go in and out of it too
        (once built, it stays: asked of the database only until then, inside the writer's transaction, so
        no build by another process can come between the answer and the write)."""
        if not self.text_index:
            self.text_index = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                              (LAST_LISTING_INDEX,)).fetchone() is not None
        return self.text_index

    def put(self, name: str, size: int, mtime_ns: int, stamp: int, row: dict, replacing: bool = True):
        """Store the row of document `name` read at (size, mtime_ns, stamp: `index.change_stamp`),
        replacing the one it had unless `replacing` says it has none, with what the run index says of
        it, inside the open batch."""
        self.put_many([(name, size, mtime_ns, stamp, row, replacing)])

    def put_many(self, stored: list[tuple]):
        """`put` for several documents (distinct names) at once: their rows go in with one `executemany`
        a table, which costs a third of a statement a row (the rids are given, not read back). A row is
        given as `compute_row` made it, or as its `stored_form` (computed by the worker that read it)."""
        if not stored:
            return
        self.begin()
        for name, *_, replacing in stored:
            if replacing:
                self.remove(name)
        forms = [(name, size, mtime_ns, stamp, self.with_index_form(row)) for name, size, mtime_ns, stamp, row, _
                 in stored]
        forms = inserted_forms(self.db, forms, self.has_text_index(), self.refused_form)
        for _, _, _, _, (columns, _, _, kinds, copies, _) in forms:
            self.count_kinds(kinds, columns[REWARD], copies, columns[BITS], 1, columns[GKEY])
        if self.has_index:
            self.index_missing -= self.db.executemany(
                "UPDATE index_rows SET present = 1 WHERE id = ? AND NOT present",
                [(columns[0],) for *_, (columns, *_) in forms]).rowcount

    def refused_form(self, name: str, why: str) -> tuple:
        """The stored form of a document whose row the database refused: its record's problem, saying why."""
        where = os.path.join(self.record_directory, name) if self.record_directory else name
        row = unreadable_row(record_id_of(name), f"{where}: its row cannot be kept in the run's index ({why})")
        return self.with_index_form(row)

    def with_index_form(self, row) -> tuple:
        """The `stored_form` of a row (a dict, or its form already) with what the run index says of it."""
        if isinstance(row, dict):
            return stored_form(self.with_index(row), self.group_by)
        if not self.has_index:
            return row
        columns, _, text, _, _, lane = row
        kept = unpack(columns[KEPT_BLOB])
        kept.update(_json_z=columns[KEPT_BLOB + 1], _text=text, _verified=columns[VERIFIED], _lane=lane)
        changed = self.with_index(kept)
        return row if changed is kept else stored_form(changed, self.group_by)

    def remove(self, name: str):
        """Take the row of document `name` out, inside the open batch (nothing when it has none)."""
        self.begin()
        found = self.db.execute("SELECT rid, flags, reward, gkey, kept FROM rows WHERE name = ?", (name,)).fetchone()
        if found is None:
            return
        rid, bits, reward, gkey, kept = found
        row = unpack(kept)
        self.count_change(row, bits, -1, gkey)
        self.db.execute("DELETE FROM annotations WHERE rid = ?", (rid,))
        if self.has_text_index():
            self.db.execute("INSERT INTO texts (texts, rowid, text) SELECT 'delete', rid, text FROM rowtexts"
                            " WHERE rid = ?", (rid,))
        self.db.execute("DELETE FROM rowtexts WHERE rid = ?", (rid,))
        self.db.execute("UPDATE lane_steps SET lanes = lanes - 1, changes = changes + 1 WHERE step = (SELECT"
                        " lane_step FROM lanes WHERE rid = ?)", (rid,))
        self.db.execute("DELETE FROM lanes WHERE rid = ?", (rid,))
        self.db.execute("DELETE FROM rows WHERE rid = ?", (rid,))
        if self.has_index:
            self.index_missing += self.db.execute(
                "UPDATE index_rows SET present = 0 WHERE id = ? AND present"
                " AND NOT EXISTS (SELECT 1 FROM rows WHERE id = ?)", (row["id"], row["id"])).rowcount

    # -- the run index ---------------------------------------------------------------------

    def count_index(self):
        """What is kept of the run index, counted once (at opening); kept up to date as files change."""
        self.index_rows_held = self.db.execute("SELECT coalesce(sum(rows), 0) FROM index_files"
                                               " WHERE problem IS NULL").fetchone()[0]
        self.has_index = self.index_rows_held > 0
        self.index_missing = self.db.execute("SELECT count(*) FROM index_rows WHERE NOT present").fetchone()[0]
        self.index_summary = None

    def overlay_for(self, record_id: str) -> Overlay | None:
        """What the run index says of the record `record_id` (its latest step's row when it lists it twice)."""
        if not self.has_index:
            return None
        found = self.db.execute("SELECT trained, superseded, phase FROM index_rows WHERE id = ?"
                                " ORDER BY step DESC, file DESC, position DESC LIMIT 1", (record_id,)).fetchone()
        if found is None:
            return None
        trained, superseded, phase = found
        return Overlay(None if trained is None else bool(trained), bool(superseded), phase)

    def with_index(self, row: dict) -> dict:
        """`row` with what the run index says of it (a freshly computed row says nothing of it)."""
        overlay = self.overlay_for(row["id"])
        return row if overlay is None and "superseded" not in row else overlaid(row, overlay)

    def index_versions(self) -> dict[str, tuple[tuple[int, int], str | None]]:
        """{index file: ((size, mtime_ns) as read, why it was ignored or None)}."""
        return {name: ((size, mtime), problem) for name, size, mtime, problem in
                self.db.execute("SELECT file, size, mtime_ns, problem FROM index_files")}

    def put_index_file(self, name: str, version: tuple[int, int], read: IndexFile | None,
                       problem: str | None) -> str | None:
        """Keep the index file `name` as read (or, with a `problem`, as ignored), replacing what it
        held, and give the records it listed or lists what the index now says. Returns the problem,
        which may be that the run index would pass `MAX_ROWS` with it."""
        before = self.forget_index_file(name)
        if read is not None and self.index_rows_held + len(read.rows) > MAX_ROWS:
            read, problem = None, f"the run index would hold more than {MAX_ROWS:,} rows with it"
        try:
            with savepoint(self.db, "file"):
                self.insert_index_file(name, version, read, problem)
        except STORE_REFUSALS as error:  # a value the database cannot keep (a phase with a lone surrogate)
            read, problem = None, f"its rows cannot be kept in the run's index ({type(error).__name__}: {error})"
            self.insert_index_file(name, version, read, problem)
        rows = read.rows if read is not None else []
        present = [record_id for (record_id,) in self.db.execute(
            "SELECT id FROM index_rows WHERE file = ? AND present", (name,))]
        self.index_missing += len(rows) - len(present)
        self.index_rows_held += len(rows)
        self.has_index = self.index_rows_held > 0
        self.restamp({*before, *present})  # only rows stored: a run's first reading restamps nothing
        return problem

    def insert_index_file(self, name: str, version: tuple[int, int], read: IndexFile | None, problem: str | None):
        """The index file `name` and its rows inserted as `put_index_file` keeps them."""
        rows = read.rows if read is not None else []
        self.db.executemany(
            "INSERT INTO index_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, EXISTS (SELECT 1 FROM rows WHERE id = ?), ?)",
            [(name, entry.position, entry.id, read.phase, read.step, entry.status, entry.trained, entry.superseded,
              entry.id, encode_json(entry.fields)) for entry in rows])
        self.db.execute("INSERT INTO index_files VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (name, *version, read.phase if read else None, read.step if read else None, len(rows),
                         problem))

    def drop_index_file(self, name: str):
        """An index file is gone: its rows go, and the records it listed lose what it said."""
        self.restamp(set(self.forget_index_file(name)))

    def forget_index_file(self, name: str) -> list[str]:
        """Take the index file `name` and its rows out (in the open batch); the ids it listed whose
        record is here."""
        self.begin()
        held = self.db.execute("SELECT rows, problem FROM index_files WHERE file = ?", (name,)).fetchone()
        listed = self.db.execute("SELECT id, present FROM index_rows WHERE file = ?", (name,)).fetchall()
        self.db.execute("DELETE FROM index_rows WHERE file = ?", (name,))
        self.db.execute("DELETE FROM index_files WHERE file = ?", (name,))
        self.index_missing -= sum(1 for _, present in listed if not present)
        if held is not None and held[1] is None:
            self.index_rows_held -= held[0]
        self.has_index = self.index_rows_held > 0
        self.index_summary = None
        return [record_id for record_id, present in listed if present]

    def restamp(self, ids):
        """Give the stored rows of `ids` what the run index says of them now; only the flags, the
        index's fields and the health key change (counts and groups follow, as for a stored row)."""
        for record_id in ids:
            overlay = self.overlay_for(record_id)
            for rid, bits, gkey, kept, json_z in self.db.execute(
                    "SELECT rid, flags, gkey, kept, json FROM rows WHERE id = ?", (record_id,)).fetchall():
                row = unpack(kept)
                row["_json_z"] = json_z
                changed = overlaid(row, overlay)
                if changed is row:
                    continue
                new_bits = flag_bits(changed["flags"])
                self.count_change(row, bits, -1, gkey)
                self.count_change(changed, new_bits, 1, gkey)
                self.db.execute("UPDATE rows SET flags = ?, health = ?, trained = ?, superseded = ?, kept = ?, json = ?"
                                " WHERE rid = ?", (new_bits, changed["_keys"]["health"], changed.get("trained"),
                                                  changed.get("superseded"),
                                                  pack({key: changed[key] for key in KEPT if key in changed}),
                                                  changed["_json_z"], rid))

    def count_change(self, row: dict, bits: int, sign: int, gkey):
        """A row counted in (`sign` 1) or out (-1) of `tally` (a removed row that bounded a reward range
        marks it to be recounted), its group touched."""
        self.count_kinds(row_kinds(row, gkey), row["_keys"]["reward"], row.get("_retokenized"), bits, sign, gkey)

    def count_kinds(self, kinds: list, reward, copies: int | None, bits: int, sign: int, gkey):
        """`count_change` for a row counted under `kinds` (`row_kinds`), with its reward and re-tokenized copies."""
        ranged = counted(self.counts, kinds, reward, copies, bits, sign)
        if sign < 0:
            self.stale_ranges.update(ranged)
        if gkey is not None:
            self.touched_groups.add(gkey)

    def index_facts(self) -> dict | None:
        """What `/v1/runs` says of the run index (None: the directory has none)."""
        if self.index_summary is None:
            files = self.db.execute("SELECT file, phase, step, rows, problem FROM index_files"
                                    " ORDER BY (phase IS NULL), phase, step, file").fetchall()
            if not files:
                return None
            read = [entry for entry in files if entry[4] is None]
            self.index_summary = {
                "files": len(read),
                "phases": sorted({phase for _, phase, _, _, _ in read if phase is not None}),
                "steps": sorted({step for _, _, step, _, _ in read}),
                "rows": sum(rows for _, _, _, rows, _ in read),
                "damaged": [{"file": name, "problem": problem} for name, _, _, _, problem in files
                            if problem is not None],
            }
        listed = self.db.execute("SELECT coalesce(sum(n), 0) FROM tally WHERE kind = 'indexed'").fetchone()[0]
        return {**self.index_summary, "rows_without_record": self.index_missing, "records_listed": listed}

    @contextmanager
    def one_state(self):
        """The store's connection in a read transaction, out of any batch: what is read in it is one committed
        state, whatever the workers commit meanwhile."""
        self.commit()
        self.db.execute("BEGIN")
        try:
            yield self.db
        finally:
            self.db.execute("COMMIT")

    def mark_verified(self, names):
        """Rows whose sidecars were read and found as their rows say: verified, in the open batch."""
        self.begin()
        self.db.executemany("UPDATE rows SET verified = 1 WHERE name = ?", [(name,) for name in names])

    def commit(self):
        """End the batch: counts and touched groups brought up to date, then one commit. While groups
        are `deferred`, the touched ones are only noted (`take_deferred_groups`): another process
        computes them from what this commit holds."""
        if not self.in_transaction:
            return
        self.write_tally()
        if self.deferred is None:
            self.write_groups()
        else:
            self.deferred.update(self.touched_groups)
            self.touched_groups.clear()
        self.db.execute("COMMIT")
        self.in_transaction = False

    def defer_groups(self, deferred: bool):
        """Whether commits leave the touched groups to `take_deferred_groups` (a big batch read by the
        workers: its groups are computed there too) or compute them here (a live run's few rows)."""
        if deferred and self.deferred is None:
            self.deferred = set()
        elif not deferred and self.deferred is not None:
            self.touched_groups.update(self.deferred)  # computed here at the next commit
            self.deferred = None

    def note_written_group(self, gkey: str):
        """A row another process wrote (`Written`) is in group `gkey`: computed elsewhere like the other touched
        groups (`take_deferred_groups`), or here at the next commit once groups are no longer deferred."""
        if self.deferred is not None:
            self.deferred.add(gkey)
        else:
            self.begin()
            self.touched_groups.add(gkey)

    def take_deferred_groups(self) -> list[str]:
        """The groups committed rows touched since the last call, to be computed elsewhere (`groups_written`,
        `groups_computed`)."""
        taken = sorted(self.deferred or ())
        if self.deferred is not None:
            self.deferred.clear()
        return taken

    def keep_groups(self, keys: list[str], marks: list, records: list[tuple]):
        """Keep the groups of `keys` another process computed (`groups_computed`), in the open batch, if their
        members are still those they were computed from (`member_marks`), else touch them (computed again)."""
        self.begin()
        if member_marks(self.db, keys) == marks:
            replace_groups(self.db, keys, records)
        else:
            self.touched_groups.update(keys)

    def drop_group_index(self, adding: int):
        """Leave the group index out while the workers write a batch of `adding` rows into a run holding fewer:
        its groups are computed once they are all written (their tasks wait behind the rows), and the first of
        them builds it in one go (`groups_written`), as does `ensure_group_index` at the batch's end."""
        self.begin()
        if self.row_count() < adding:
            self.db.execute("DROP INDEX IF EXISTS rows_by_group")

    def ensure_group_index(self):
        """The group index, built if a batch left it out (`drop_group_index`): for groups computed here."""
        self.begin()
        self.db.execute(GROUP_INDEX)

    def write_tally(self):
        add_counts(self.db, self.counts)
        self.db.execute("DELETE FROM tally WHERE n <= 0")
        for entry in self.stale_ranges:
            where, values = tally_where(*entry)
            low, high = self.db.execute(f"SELECT min(reward), max(reward) FROM rows WHERE {where}", values).fetchone()
            self.db.execute("UPDATE tally SET low = ?, high = ? WHERE kind = ? AND value = ? AND flags = ?",
                            (low, high, *entry))
        self.counts.clear()
        self.stale_ranges.clear()

    def write_groups(self):
        """Compute every touched group again from its members (a gone group is deleted), `GROUPS_AT_ONCE`
        groups at a time: the first indexing of a big run touches every group at its end, and a million
        members read at once would hold gigabytes."""
        touched = sorted(self.touched_groups)
        for start in range(0, len(touched), GROUPS_AT_ONCE):
            self.write_some_groups(touched[start : start + GROUPS_AT_ONCE])
        self.touched_groups.clear()

    def write_some_groups(self, touched: list[str]):
        """`write_groups` for the groups of `touched`: three statements, not three a group."""
        self.begin()
        replace_groups(self.db, touched, computed_groups(self.db, touched, self.group_by))


def counted(counts: dict, kinds: list, reward, copies: int | None, bits: int, sign: int) -> list:
    """Count a row under `kinds` (`row_kinds`) into `counts` ((kind, value, flags) -> [rows, lowest and highest
    reward]), with its reward and re-tokenized copies, `sign` 1 in, -1 out; the entries whose reward range it
    bounds."""
    ranged = []
    for kind, value in kinds:
        entry = (kind, value, bits)
        held = counts.get(entry)
        if held is None:
            held = counts[entry] = [0, None, None]
        held[0] += sign
        if reward is None or kind == "tokenizer":  # a tokenizer is counted, never ranged
            continue
        ranged.append(entry)
        if sign < 0:
            continue
        if held[1] is None:
            held[1] = held[2] = reward
        elif reward < held[1]:
            held[1] = reward
        elif reward > held[2]:
            held[2] = reward
    if copies:  # counted in nodes, not rows: the run's facts say how many copies it holds
        held = counts.setdefault((RETOKENIZED, "", bits), [0, None, None])
        held[0] += sign * copies
    return ranged


def forms_counts(forms: list[tuple]) -> dict:
    """The counts (see `counted`) of new documents' rows, as `insert_forms` takes them."""
    counts: dict = {}
    for _, _, _, _, (columns, _, _, kinds, copies, _) in forms:
        counted(counts, kinds, columns[REWARD], copies, columns[BITS], 1)
    return counts


def add_counts(db: sqlite3.Connection, counts: dict):
    """Add `counts` (see `counted`) to `tally`."""
    db.executemany(
        "INSERT INTO tally (kind, value, flags, n, low, high) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE"
        " SET n = n + excluded.n,"
        " low = CASE WHEN low IS NULL OR excluded.low < low THEN excluded.low ELSE low END,"
        " high = CASE WHEN high IS NULL OR excluded.high > high THEN excluded.high ELSE high END",
        [(*entry, *held) for entry, held in counts.items()])


def insert_forms(db: sqlite3.Connection, forms: list[tuple], text_index: bool):
    """Insert the rows of new documents (name, size, mtime_ns, stamp, `stored_form`), with one `executemany`
    a table, which costs a third of a statement a row (the rids are given, not read back)."""
    rows, annotations, texts, lanes = [], [], [], []
    rid = db.execute("SELECT coalesce(max(rid), 0) FROM rows").fetchone()[0]
    for name, size, mtime_ns, stamp, (columns, keyed, text, _, _, lane) in forms:
        rid += 1
        rows.append((rid, name, size, mtime_ns, stamp, *columns))
        annotations += [(rid, key, value) for key, value in keyed]
        texts.append((rid, text))
        if lane is not None and columns[STEP] is not None:
            lanes.append((rid, columns[STEP], columns[0], *lane))
    db.executemany("INSERT INTO lanes VALUES (?, ?, ?, ?, ?, ?)", lanes)
    steps = Counter(lane[1] for lane in lanes)
    db.executemany("INSERT INTO lane_steps VALUES (?, ?, 1) ON CONFLICT DO UPDATE SET lanes = lanes + excluded.lanes,"
                   " changes = changes + 1", list(steps.items()))
    db.executemany(f"INSERT INTO rows ({ROW_COLUMNS}) VALUES ({', '.join('?' * len(ROW_COLUMNS.split(',')))})", rows)
    db.executemany("INSERT INTO annotations VALUES (?, ?, ?)", annotations)
    db.executemany("INSERT INTO rowtexts VALUES (?, ?)", texts)
    if text_index:
        db.executemany("INSERT INTO texts (rowid, text) VALUES (?, ?)", texts)


STORE_REFUSALS = (sqlite3.Error, OverflowError, ValueError)  # how a value is refused: a constraint, too big,
# an int past 64 bits, text without a UTF-8 form


@contextmanager
def savepoint(db: sqlite3.Connection, name: str):
    """What is written inside is kept, or, when it raises, undone whole (the open transaction goes on)."""
    db.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        db.execute(f"ROLLBACK TO {name}")
        raise
    finally:
        db.execute(f"RELEASE {name}")


def inserted_forms(db: sqlite3.Connection, forms: list[tuple], text_index: bool, refused_form) -> list[tuple]:
    """`insert_forms`, with a net: a batch SQLite refuses (one row holding a value it cannot keep) is inserted
    again row by row, and a row refused alone goes in as `refused_form(name, why)` (a row saying so), so one
    record's value is that record's problem, never its batch's. The forms as inserted. A replacement refused
    too is no record's fault (a full disk, a locked file): that is raised."""
    try:
        with savepoint(db, "batch"):
            insert_forms(db, forms, text_index)
        return forms
    except STORE_REFUSALS:
        pass
    inserted = []
    with savepoint(db, "batch"):  # what raises leaves nothing of the batch (its rows are not counted)
        for form in forms:
            try:
                with savepoint(db, "one"):
                    insert_forms(db, [form], text_index)
            except STORE_REFUSALS as error:
                form = (*form[:4], refused_form(form[0], f"{type(error).__name__}: {error}"))
                insert_forms(db, [form], text_index)
            inserted.append(form)
    return inserted


class Written(NamedTuple):
    """What comes back of a row a worker wrote into the run's database itself (`rows_written`): the key of the
    group it is in, for the server to have that group computed again (finding them in the database by rid read
    a page a row there, a tenth of the server's own work on a cold index)."""

    gkey: str | None


def rows_written(path: str, identity: str, forms: list[tuple]) -> bool:
    """Worker task's end: insert the rows of new documents (as `insert_forms` takes them) and their counts
    into the database at `path` itself, in one transaction, so the server's process neither receives nor
    inserts nor counts them. Refused (False: the server stores them) when the database is no longer the
    one made as `identity`, when a run index is kept (what it says of each row is given by the server),
    or when one of the documents has a row already (the server replaces it)."""
    def write(db: sqlite3.Connection) -> bool:
        if db.execute("SELECT EXISTS (SELECT 1 FROM index_files) OR EXISTS (SELECT 1 FROM rows WHERE name IN"
                      " (SELECT value FROM json_each(?)))", (json.dumps([form[0] for form in forms]),)).fetchone()[0]:
            return False
        text_index = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LAST_LISTING_INDEX,)).fetchone()
        insert_forms(db, forms, text_index is not None)
        add_counts(db, forms_counts(forms))
        return True

    return written_if_made(path, identity, write)


def written_if_made(path: str, identity: str, write) -> bool:
    """Worker task's writing: `write(db)` in one write transaction on the database at `path` (never made here),
    committed if it is still the one made as `identity` and `write` did not refuse (returned False); whether it
    was."""
    db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("BEGIN IMMEDIATE")
        try:
            made = db.execute("SELECT value FROM facts WHERE key = ?", (MADE,)).fetchone()
            done = made is not None and made[0] == identity and write(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT" if done else "ROLLBACK")
        return done
    finally:
        db.close()


def computed_groups(db: sqlite3.Connection, keys: list[str], group_by: tuple) -> list[tuple]:
    """The `groups` rows of the groups `keys`, computed from their members as `db` holds them."""
    members: dict[str, list] = {}
    for gkey, *found in db.execute(
            "SELECT gkey, kept, json, verified, mtime_ns FROM rows WHERE gkey IN (SELECT value FROM json_each(?))"
            " ORDER BY gkey, rid", (json.dumps(keys),)):
        members.setdefault(gkey, []).append(member_row(*found))
    return [group_record(gkey, rows, group_by) for gkey, rows in members.items()]


def groups_computed(path: str, keys: list[str], group_by: tuple) -> tuple[list, list[tuple]]:
    """Worker task: (the members' `member_marks`, the `groups` rows) of the groups `keys`, computed from one
    committed state of the database at `path` (read-only), for the server to keep (`RunStore.keep_groups`)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        db.execute("BEGIN")
        try:
            return member_marks(db, keys), computed_groups(db, keys, group_by)
        finally:
            db.execute("COMMIT")
    finally:
        db.close()


def groups_written(path: str, identity: str, keys: list[str], group_by: tuple) -> bool:
    """Worker task, while the workers write a batch's rows (the server then holds the write lock only for
    moments): the groups `keys` computed from their members and kept, in one write transaction on the database
    at `path`, so the server's process neither receives nor writes them, and what is kept is what the members
    committed before say, whichever task commits last. Computed inside the write lock, not before it and checked
    there: the check (`member_marks`, twice) cost a third of computing them. Refused (False: the server computes
    them) when the database is no longer the one made as `identity`."""
    def write(db: sqlite3.Connection) -> bool:
        db.execute(GROUP_INDEX)  # the batch's first builds it (`RunStore.drop_group_index`)
        replace_groups(db, keys, computed_groups(db, keys, group_by))
        return True

    return written_if_made(path, identity, write)


def member_marks(db: sqlite3.Connection, keys: list[str]) -> list[tuple]:
    """What a group's summary is computed from, in short: each member's rid, file version, flags and whether it
    is verified (a member added, removed, rewritten, restamped or verified changes it)."""
    return db.execute(
        "SELECT gkey, group_concat(rid || ':' || stamp || ':' || mtime_ns || ':' || flags || ':' || verified, ' ')"
        " FROM (SELECT * FROM rows WHERE gkey IN (SELECT value FROM json_each(?)) ORDER BY gkey, rid)"
        " GROUP BY gkey ORDER BY gkey", (json.dumps(keys),)).fetchall()


def replace_groups(db: sqlite3.Connection, keys: list[str], records: list[tuple]):
    """The groups of `keys` as `records` (`computed_groups`) say, in the open transaction (a key without a record
    is gone)."""
    db.execute("DELETE FROM groups WHERE gkey IN (SELECT value FROM json_each(?))", (json.dumps(keys),))
    db.executemany(f"INSERT INTO groups VALUES ({', '.join('?' * 15)})", records)


def build_listing_indexes(db: sqlite3.Connection) -> dict[str, float]:
    """Build whichever sort, filter and text indexes `db` lacks, each in a transaction of its own (a writer
    waiting meanwhile waits for one index, not all), the text index last and whole; the seconds each took."""
    seconds = {}
    statements = LISTING_INDEXES[:-2]
    for statement in [*statements, LISTING_INDEXES[-2:]]:
        started = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        try:
            if isinstance(statement, str):
                db.execute(statement)
            elif db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LAST_LISTING_INDEX,)).fetchone() is None:
                for part in statement:
                    db.execute(part)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        seconds[index_name(statement if isinstance(statement, str) else statement[0])] = \
            time.perf_counter() - started
    return seconds


def index_name(statement: str) -> str:
    """The name a CREATE statement of `LISTING_INDEXES` makes."""
    return statement.split(" ON ")[0].split(" USING ")[0].split()[-1]


def indexes_built_at(path: str, identity: str) -> dict[str, float] | None:
    """Worker task: `build_listing_indexes` in the database at `path`, if it is still the one made as
    `identity` (else None: it was deleted and is being made again, by a writer that builds its own)."""
    db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None)  # never made here
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        made = db.execute("SELECT value FROM facts WHERE key = ?", (MADE,)).fetchone()
        if made is None or made[0] != identity:
            return None
        return build_listing_indexes(db)
    finally:
        db.close()


def member_row(kept: bytes, json_z: bytes, verified, mtime_ns: int) -> dict:
    """A stored row as the views read it: its kept fields, its JSON, whether it was verified, its revision."""
    row = unpack(kept)
    row["_json_z"] = json_z
    row["_verified"] = bool(verified)
    row["revision"] = mtime_ns // 1_000_000
    return row


def build_group(gkey: str, members: list, group_by: tuple, modal_n=None) -> Group:
    group = split_attempts(gkey, key_values(members[0], group_by), members)
    group.modal_n = modal_n
    group.flags = group_flags(group.members, group.counting, modal_n)
    return group


def group_record(gkey: str, members: list, group_by: tuple) -> tuple:
    """The `groups` row of one group: its flags but `short` (which the run's modal size decides when
    asked), its sort values, and its summary as JSON without the fields the modal size changes."""
    group = build_group(gkey, members, group_by)
    keys = group.keys
    return (gkey, group.step, group.task, len(group.counting), len(group.members), flag_bits(group.flags),
            flag_bits(group.member_flags), keys["reward"], keys["turns"], keys["tokens"], keys["health"],
            keys["created"], *reward_bounds(group), listed_summary(group))


def listed_summary(group: Group) -> bytes:
    """The group's summary as JSON without what a listing adds (`run_id`) or the run's modal size
    decides (`modal_n`, `flags`)."""
    summary = group.summary("")
    for name in ("run_id", "modal_n", "flags"):
        del summary[name]
    return encode_json(summary)


def reward_bounds(group: Group) -> tuple:
    """(lowest, highest) reward of the rollouts that count, (None, None) without one."""
    rewards = [r for r in group.rewards if r is not None]
    return (min(rewards), max(rewards)) if rewards else (None, None)


def tally_where(kind: str, value, bits: int) -> tuple[str, list]:
    """The rows one `tally` entry counts, as a WHERE clause."""
    clauses = {
        "all": ("1", []),
        "unreadable": ("unreadable", []),
        "ungrouped": ("gkey IS NULL", []),
        "reward": ("reward = ?", [value]),
        "step": ("step = ? AND NOT unreadable", [value]),
        "task": ("task = ? AND NOT unreadable", [value]),
        "status": ("status = ? AND NOT unreadable", [value]),
        "trained": ({"true": "trained = 1", "false": "trained = 0"}.get(value, "trained IS NULL"), []),
        "indexed": ("superseded IS NOT NULL", []),
    }
    if kind in clauses:
        where, values = clauses[kind]
    elif kind == "annotation-key":
        where, values = "rid IN (SELECT rid FROM annotations WHERE key = ?)", [value]
    else:
        key, _, text = value.partition("\0")
        where, values = "rid IN (SELECT rid FROM annotations WHERE key = ? AND value = ?)", [key, text]
    return f"{where} AND flags = ?", [*values, bits]


class Readers:
    """Read-only connections to run databases, one per thread and database."""

    def __init__(self):
        self.local = threading.local()

    def connection(self, database: tuple) -> sqlite3.Connection:
        """This thread's connection to `database` ((path, identity): the token its file was made with,
        so a database made again at the path, even in a reused inode, is never read as the snapshot's;
        it gets a new connection, and the one to the file it replaced is closed)."""
        connections = self.local.__dict__.setdefault("connections", {})
        path, identity = database
        found = connections.get(path)
        if found is not None and found[0] == identity:
            return found[1]
        if found is not None:
            found[1].close()
            del connections[path]
        rebuilding = ApiError(503, "this run's index is being rebuilt (its database was deleted); try again")
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            made = db.execute("SELECT value FROM facts WHERE key = ?", (MADE,)).fetchone()
        except sqlite3.OperationalError:  # deleted under the viewer: the watcher builds it again
            raise rebuilding from None
        if made is None or made[0] != identity:  # the file the watcher is building anew: not this snapshot's
            db.close()
            raise rebuilding
        connections[path] = (identity, db)
        return db

    @contextmanager
    def reading(self, database: tuple):
        """One read transaction on the database: every query in it sees one committed state
        (a reading inside another is part of it)."""
        db = self.connection(database)
        if db.in_transaction:
            yield db
            return
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")


READERS = Readers()
