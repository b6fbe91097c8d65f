"""A run's rows on disk: one SQLite database per record directory (issue 14; `docs/scale.md`).

A first step, not wired into the server yet: rows are written in batches and listed by queries
that touch only the rows they return: the filters as `WHERE` clauses, each sort key with NULLs
last and the index's own order (newest first, then id) breaking ties, and keyset paging (the
next page starts after the last row's sort values, not at an offset). Its answers must be the
ones `views/listing.py` gives over the same rows (`tests/test_store.py` checks that).
"""

import json
import sqlite3
from dataclasses import dataclass

from skycap_viewer.catalog.rows import SORT_KEYS, row_json
from skycap_viewer.flags import FLAG_ORDER
from skycap_viewer.record.fields import scalar_text

SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (
    rid INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, size INTEGER, mtime_ns INTEGER, id TEXT NOT NULL,
    created REAL, step REAL, task TEXT, status TEXT, reward REAL, turns INTEGER, tokens INTEGER,
    health INTEGER, flags INTEGER NOT NULL, text TEXT NOT NULL, row BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS annotations (rid INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS annotations_by_value ON annotations (key, value, rid);
CREATE INDEX IF NOT EXISTS annotations_by_row ON annotations (rid);
CREATE INDEX IF NOT EXISTS rows_by_created ON rows ((created IS NULL), created DESC, id);
"""
COLUMNS = {"step": "step", "task": "task", "reward": "reward", "turns": "turns", "tokens": "tokens",
           "health": "health", "created": "created"}
assert set(COLUMNS) == set(SORT_KEYS)
TIE_BREAK = (("(created IS NULL)", "asc"), ("created", "desc"), ("id", "asc"))  # the index's own order


def flag_bits(names) -> int:
    """A row's flags as one integer, a bit per flag in the catalogue's order."""
    bits = 0
    for name in names:
        bits |= 1 << FLAG_ORDER[name]
    return bits


@dataclass(frozen=True)
class Query:
    """What a listing asks of the store: the row filters and flags, a sort key and order, a page."""

    step: float | None = None
    task_id: str | None = None
    status: str | None = None
    annotations: tuple = ()  # (key, value or None for "present")
    q: str | None = None  # lower-case
    reward_min: float | None = None
    reward_max: float | None = None
    flags: tuple = ()
    exclude_flags: tuple = ()
    sort: str = "created"
    order: str = "desc"

    def where(self) -> tuple[str, list]:
        clauses, values = [], []
        for column, value in (("step", self.step), ("task", self.task_id), ("status", self.status)):
            if value is not None:
                clauses.append(f"{column} = ?")
                values.append(value)
        if self.reward_min is not None:
            clauses.append("reward >= ?")
            values.append(self.reward_min)
        if self.reward_max is not None:
            clauses.append("reward <= ?")
            values.append(self.reward_max)
        for key, wanted in self.annotations:
            held = "SELECT 1 FROM annotations a WHERE a.rid = rows.rid AND a.key = ?"
            clauses.append(f"EXISTS ({held})" if wanted is None else f"EXISTS ({held} AND a.value = ?)")
            values += [key] if wanted is None else [key, wanted]
        if self.q is not None:
            clauses.append("instr(text, ?) > 0")
            values.append(self.q)
        required, excluded = flag_bits(self.flags), flag_bits(self.exclude_flags)
        if required:
            clauses.append("flags & ? = ?")
            values += [required, required]
        if excluded:
            clauses.append("flags & ? = 0")
            values.append(excluded)
        return (" AND ".join(clauses) or "1"), values

    def ordering(self) -> list[tuple[str, str]]:
        """(expression, direction) from the first sort column to the last tie break."""
        if (self.sort, self.order) == ("created", "desc"):
            return list(TIE_BREAK)
        column = COLUMNS[self.sort]
        return [(f"({column} IS NULL)", "asc"), (column, self.order), *TIE_BREAK]


def after(ordering: list[tuple[str, str]], last: list) -> tuple[str, list]:
    """The rows that sort after `last` (the sort values of a page's last row): keyset paging."""
    options, values = [], []
    for position, (expression, direction) in enumerate(ordering):
        equal = [f"{ordering[i][0]} IS ?" for i in range(position)]
        beyond = f"{expression} {'>' if direction == 'asc' else '<'} ?"
        options.append("(" + " AND ".join([*equal, beyond]) + ")")
        values += [*last[:position], last[position]]
    return "(" + " OR ".join(options) + ")", values


class RowStore:
    """One run's rows in one SQLite database (`":memory:"` for a store of one process)."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # an index, rebuilt from the records if lost
        self.db.executescript(SCHEMA)

    def put(self, items):
        """Store (name, size, mtime_ns, row) items in one transaction: a batch of the watcher's."""
        with self.db:
            self.db.execute("BEGIN")
            for name, size, mtime_ns, row in items:
                self.db.execute("DELETE FROM annotations WHERE rid = (SELECT rid FROM rows WHERE name = ?)", (name,))
                keys = row["_keys"]
                cursor = self.db.execute(
                    "INSERT INTO rows (name, size, mtime_ns, id, created, step, task, status, reward, turns, tokens,"
                    " health, flags, text, row) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (name) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,"
                    " id = excluded.id, created = excluded.created, step = excluded.step, task = excluded.task,"
                    " status = excluded.status, reward = excluded.reward, turns = excluded.turns,"
                    " tokens = excluded.tokens, health = excluded.health, flags = excluded.flags,"
                    " text = excluded.text, row = excluded.row RETURNING rid",
                    (name, size, mtime_ns, row["id"], keys["created"], row["step"], row["task_id"], row["status"],
                     keys["reward"], keys["turns"], keys["tokens"], keys["health"], flag_bits(row["flags"]),
                     row["_text"], row["_json_z"]))
                rid = cursor.fetchone()[0]
                self.db.executemany("INSERT INTO annotations VALUES (?, ?, ?)", [
                    (rid, key, scalar_text(value)) for key, value in row["annotations"].items()
                    if value is not None and not isinstance(value, (dict, list))])

    def remove(self, names):
        with self.db:
            self.db.execute("BEGIN")
            for name in names:
                self.db.execute("DELETE FROM annotations WHERE rid = (SELECT rid FROM rows WHERE name = ?)", (name,))
                self.db.execute("DELETE FROM rows WHERE name = ?", (name,))

    def count(self, query: Query) -> int:
        where, values = query.where()
        return self.db.execute(f"SELECT count(*) FROM rows WHERE {where}", values).fetchone()[0]

    def page(self, query: Query, limit: int, cursor: list | None = None) -> tuple[list[dict], list | None]:
        """(the rows of one page as sent, the cursor of the next page or None)."""
        where, values = query.where()
        ordering = query.ordering()
        if cursor is not None:
            clause, more = after(ordering, cursor)
            where, values = f"{where} AND {clause}", [*values, *more]
        order_by = ", ".join(f"{expression} {direction.upper()}" for expression, direction in ordering)
        keys = ", ".join(expression for expression, _ in ordering)
        found = self.db.execute(f"SELECT row, {keys} FROM rows WHERE {where} ORDER BY {order_by} LIMIT ?",
                                [*values, limit + 1]).fetchall()
        rows = [json.loads(row_json({"_json_z": entry[0]})) for entry in found[:limit]]
        return rows, (list(found[limit - 1][1:]) if len(found) > limit else None)
