"""A run's index on disk: one SQLite database per record directory, its rows never all in the heap.

Each record is a table row: its document's name and version, the columns listings filter, sort
and group on (the flags as bits), and the row itself twice, compressed: `kept` (the fields views
read, `marshal`) and `json` (the row as sent). Counts are kept as rows change, in `tally`: per
kind of filter (none, a step, a task, a status, an annotation's value or key) and per combination
of flags, the rows and their reward range, so a listing's total, health band and colour scale are
a few lookups instead of a count. Groups are kept in `groups`, each computed again from its
members when one of them changed. The text a `q` filter looks in is kept (`rowtexts`) and, once the
run's first indexing is done, indexed by trigrams (`texts`), as the sort and filter indexes are.
The design, and why: `docs/scale.md`.

Only the watcher writes, through `RunStore`, one transaction per publish; requests read through
`reader()`, one connection per thread, each answer inside one read transaction: one consistent
generation, whatever the watcher commits meanwhile.
"""

import marshal
import sqlite3
import threading
import zlib
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from skycap_viewer.catalog.groups import Group, group_flags, group_key_of, key_values, split_attempts
from skycap_viewer.errors import ApiError
from skycap_viewer.flags import FLAG_ORDER, FLAGS
from skycap_viewer.record.fields import scalar_text
from skycap_viewer.wire import encode_json

SCHEMA_VERSION = 1
SORT_COLUMNS = ("step", "task", "reward", "turns", "tokens", "health")  # `created`: the index's own order
KEPT = ("id", "task_id", "step", "status", "meta", "annotations", "created_ts", "tokenizer", "flags",
        "unreadable", "error", "cut", "_keys")
WRITER_CACHE_KIB = 32 * 1024  # the watcher's page cache: a big run's indexes stay in memory while it is written
BUSY_MS = 30_000  # how long a connection waits on another's lock (a checkpoint), at most
NEWEST_FIRST = "(created IS NULL), created DESC, id"  # the index's own order: newest first, undated last

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, value)",
    """CREATE TABLE IF NOT EXISTS rows (
        rid INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        id TEXT NOT NULL, created, step, task, status, reward, turns, tokens, health, flags INTEGER NOT NULL,
        gkey TEXT, unreadable INTEGER NOT NULL, verified INTEGER NOT NULL, kept BLOB NOT NULL, json BLOB NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS rows_by_id ON rows (id)",
    "CREATE INDEX IF NOT EXISTS rows_by_group ON rows (gkey) WHERE gkey IS NOT NULL",
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
    "CREATE INDEX IF NOT EXISTS groups_by_size ON groups (n)",
]
LISTING_INDEXES = [  # built once a run's first indexing is done: one bulk build costs less than a million updates
    "CREATE INDEX IF NOT EXISTS rows_oldest ON rows ((created IS NULL), created, id)",
    *(f"CREATE INDEX IF NOT EXISTS rows_by_{column}_{order} ON rows"
      f" (({column} IS NULL), {column} {order.upper()}, {NEWEST_FIRST})"
      for column in SORT_COLUMNS for order in ("asc", "desc")),
    *(f"CREATE INDEX IF NOT EXISTS rows_with_{column} ON rows ({column}, flags)"
      for column in ("step", "task", "status", "reward")),
    "CREATE INDEX IF NOT EXISTS rows_by_flags ON rows (flags)",
    "CREATE INDEX IF NOT EXISTS annotations_by_value ON annotations (key, value, rid)",
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


def pack(value) -> bytes:
    return zlib.compress(marshal.dumps(value), 1)


def unpack(blob: bytes):
    return marshal.loads(zlib.decompress(blob))


def row_kinds(row: dict, gkey) -> list[tuple[str, object]]:
    """What a row is counted under in `tally`: every row, then by its values (readable rows only)."""
    kinds = [("all", "")]
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


def annotation_value(key: str, value) -> str:
    """How `tally` names an annotation's value: the key, a NUL, the value as the filters write it."""
    return f"{key}\0{scalar_text(value)}"


class RunStore:
    """The watcher's connection to one run's database: batched writes, kept counts and groups."""

    def __init__(self, path: Path, facts: dict, group_by: tuple):
        """Open (or create) the database at `path`; one whose `facts` differ, or that SQLite cannot
        read, is emptied first (an index is only a hint: it is rebuilt from the records)."""
        self.path = Path(path)
        self.group_by = tuple(group_by)
        self.reused = False
        try:
            self.db = self.connect()
            self.reused = self.stored_facts() == facts
        except sqlite3.DatabaseError:
            self.db = None
        if not self.reused:
            self.recreate()
            with self.db:
                self.db.executemany("INSERT INTO facts VALUES (?, ?)", facts.items())
        stat = self.path.stat()
        self.identity = (stat.st_dev, stat.st_ino)  # what readers know this file by
        self.listing_indexes = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                               (LAST_LISTING_INDEX,)).fetchone() is not None
        self.in_transaction = False
        self.touched_groups: set = set()
        self.tally: Counter = Counter()  # (kind, value, flags) -> rows added (negative: removed)
        self.ranges: dict = {}  # (kind, value, flags) -> (low, high) of the added rows' rewards
        self.stale_ranges: set = set()  # tally rows a removed row bounded: recounted at commit

    def connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        db.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")  # an index: rebuilt from the records if a crash loses it
        for statement in SCHEMA:
            db.execute(statement)
        return db

    def stored_facts(self) -> dict:
        return dict(self.db.execute("SELECT key, value FROM facts"))

    def recreate(self):
        """Delete the database's files and make an empty one."""
        if self.db is not None:
            self.db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)
        self.db = self.connect()

    def close(self):
        self.db.close()

    def row_count(self) -> int:
        """The stored rows, as the kept counts say (no row is counted)."""
        return self.db.execute("SELECT coalesce(sum(n), 0) FROM tally WHERE kind = 'all'").fetchone()[0]

    def is_current(self) -> bool:
        """Whether the database file is still the one this store opened (not deleted, not replaced)."""
        try:
            stat = self.path.stat()
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self.identity

    # -- writing ----------------------------------------------------------------------------

    def begin(self):
        if not self.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.in_transaction = True

    def versions(self):
        """(name, size, mtime_ns) of every stored readable row (read once, when a run is reopened):
        unreadable ones are read again, so a record whose permissions or bytes were repaired without
        a new size or mtime shows at once."""
        return self.db.execute("SELECT name, size, mtime_ns FROM rows WHERE NOT unreadable")

    def build_listing_indexes(self):
        """Build the sort and filter indexes (once: a run's first indexing is done)."""
        if not self.listing_indexes:
            self.commit()
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                if self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'texts'").fetchone() is None:
                    for statement in LISTING_INDEXES:
                        self.db.execute(statement)
            self.listing_indexes = True

    def put(self, name: str, size: int, mtime_ns: int, row: dict, replacing: bool = True):
        """Store the row of document `name` (replacing the one it had unless `replacing` says it has
        none), inside the open batch."""
        self.begin()
        if replacing:
            self.remove(name)
        keys = row["_keys"]
        gkey = group_key_of(row, self.group_by)
        bits = flag_bits(row["flags"])
        kept = {key: row[key] for key in KEPT if key in row}
        rid = self.db.execute(
            "INSERT INTO rows (name, size, mtime_ns, id, created, step, task, status, reward, turns, tokens, health,"
            f" flags, gkey, unreadable, verified, kept, json) VALUES ({', '.join('?' * 18)})",
            (name, size, mtime_ns, row["id"], keys["created"], row["step"], row["task_id"], row["status"],
             keys["reward"], keys["turns"], keys["tokens"], keys["health"], bits, gkey,
             bool(row.get("unreadable")), bool(row.get("_verified")), pack(kept), row["_json_z"])).lastrowid
        if not row.get("unreadable"):
            self.db.executemany("INSERT INTO annotations VALUES (?, ?, ?)", [
                (rid, key, None if isinstance(value, (dict, list)) else scalar_text(value))
                for key, value in row["annotations"].items() if value is not None])
        self.db.execute("INSERT INTO rowtexts VALUES (?, ?)", (rid, row["_text"]))
        if self.listing_indexes:
            self.db.execute("INSERT INTO texts (rowid, text) VALUES (?, ?)", (rid, row["_text"]))
        reward = keys["reward"]
        for kind, value in row_kinds(row, gkey):
            entry = (kind, value, bits)
            self.tally[entry] += 1
            if reward is not None and kind != "tokenizer":  # a tokenizer is counted, never ranged
                low, high = self.ranges.get(entry, (reward, reward))
                self.ranges[entry] = (min(low, reward), max(high, reward))
        if gkey is not None:
            self.touched_groups.add(gkey)

    def remove(self, name: str):
        """Take the row of document `name` out, inside the open batch (nothing when it has none)."""
        self.begin()
        found = self.db.execute("SELECT rid, flags, reward, gkey, kept FROM rows WHERE name = ?", (name,)).fetchone()
        if found is None:
            return
        rid, bits, reward, gkey, kept = found
        row = unpack(kept)
        for kind, value in row_kinds(row, gkey):
            entry = (kind, value, bits)
            self.tally[entry] -= 1
            if reward is not None and kind != "tokenizer":
                self.stale_ranges.add(entry)
        if gkey is not None:
            self.touched_groups.add(gkey)
        self.db.execute("DELETE FROM annotations WHERE rid = ?", (rid,))
        if self.listing_indexes:
            self.db.execute("INSERT INTO texts (texts, rowid, text) SELECT 'delete', rid, text FROM rowtexts"
                            " WHERE rid = ?", (rid,))
        self.db.execute("DELETE FROM rowtexts WHERE rid = ?", (rid,))
        self.db.execute("DELETE FROM rows WHERE rid = ?", (rid,))

    def mark_verified(self, names):
        """Rows whose sidecars were read and found as their rows say: verified, in the open batch."""
        self.begin()
        self.db.executemany("UPDATE rows SET verified = 1 WHERE name = ?", [(name,) for name in names])

    def commit(self):
        """End the batch: counts and touched groups brought up to date, then one commit."""
        if not self.in_transaction:
            return
        self.write_tally()
        self.write_groups()
        self.db.execute("COMMIT")
        self.in_transaction = False

    def write_tally(self):
        self.db.executemany(
            "INSERT INTO tally (kind, value, flags, n, low, high) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE"
            " SET n = n + excluded.n,"
            " low = CASE WHEN low IS NULL OR excluded.low < low THEN excluded.low ELSE low END,"
            " high = CASE WHEN high IS NULL OR excluded.high > high THEN excluded.high ELSE high END",
            [(*entry, n, *self.ranges.get(entry, (None, None))) for entry, n in self.tally.items()])
        self.db.execute("DELETE FROM tally WHERE n <= 0")
        for entry in self.stale_ranges:
            where, values = tally_where(*entry)
            low, high = self.db.execute(f"SELECT min(reward), max(reward) FROM rows WHERE {where}", values).fetchone()
            self.db.execute("UPDATE tally SET low = ?, high = ? WHERE kind = ? AND value = ? AND flags = ?",
                            (low, high, *entry))
        self.tally.clear()
        self.ranges.clear()
        self.stale_ranges.clear()

    def write_groups(self):
        """Compute every touched group again from its members (a gone group is deleted)."""
        for gkey in self.touched_groups:
            members = [member_row(*found) for found in self.db.execute(
                "SELECT kept, json, verified, mtime_ns FROM rows WHERE gkey = ?", (gkey,))]
            self.db.execute("DELETE FROM groups WHERE gkey = ?", (gkey,))
            if members:
                self.db.execute("INSERT INTO groups VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                group_record(gkey, members, self.group_by))
        self.touched_groups.clear()


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
        """This thread's connection to `database` ((path, identity): a database rebuilt in a new file
        gets a new connection, and the one to the file it replaced is closed)."""
        connections = self.local.__dict__.setdefault("connections", {})
        path, identity = database
        found = connections.get(path)
        if found is not None and found[0] == identity:
            return found[1]
        if found is not None:
            found[1].close()
            del connections[path]
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        except sqlite3.OperationalError:  # deleted under the viewer: the watcher builds it again
            raise ApiError(503, "this run's index is being rebuilt (its database was deleted); try again") from None
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
