"""Listing requests: filters as SQL over a run's store, sorts (nulls last), paging, health counts,
rows as sent, and the rows a text search reads.

A listing touches only the rows it returns: filters are WHERE clauses, sorts follow the store's
indexes, and a page starts after the last row of the one before (keyset paging). Totals, bands
and reward ranges of the common listings (no filter, or one) are the counts the store keeps.
"""

import base64
import json
import math
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from skycap_viewer.catalog.blobs import unpack
from skycap_viewer.catalog.rows import SORT_KEYS, json_of, public
from skycap_viewer.catalog.store import NEWEST_FIRST, annotation_value, bit_flags, flag_bits, order_index
from skycap_viewer.errors import ApiError
from skycap_viewer.flags import FLAG_BY_NAME, FLAG_ORDER
from skycap_viewer.views.params import number, one
from skycap_viewer.wire import encode_json

TRAINED_VALUES = ("true", "false", "null")
TRAINED_WHERE = {"true": "trained = 1", "false": "trained = 0", "null": "trained IS NULL"}


def equal_clauses(pairs, trained: str | None) -> tuple[list[str], list]:
    """(`column = ?` clauses, their values) for the (column, value) pairs whose value is given, and the
    `trained` filter's clause: what the listing and the run index's rows without a record share."""
    given = [(column, value) for column, value in pairs if value is not None]
    clauses = [f"{column} = ?" for column, _ in given]
    if trained is not None:
        clauses.append(TRAINED_WHERE[trained])
    return clauses, [value for _, value in given]


def trained_value(params: dict) -> str | None:
    """The `trained` filter: what the run index says (`null`: it does not say, or does not list the record)."""
    value = one(params, "trained")
    if value is not None and value not in TRAINED_VALUES:
        raise ApiError(400, f"trained must be one of {'|'.join(TRAINED_VALUES)}, not {value!r}")
    return value


def flag_names(params: dict, name: str) -> tuple[str, ...]:
    """The distinct flags a repeatable parameter names, in the order given; an unknown one is a 400."""
    names = tuple(dict.fromkeys(value for value in params.get(name, []) if value))
    for flag in names:
        if flag not in FLAG_BY_NAME:
            raise ApiError(400, f"{name} must be one of {', '.join(FLAG_BY_NAME)}")
    return names


# A row's annotation, looked up by the row: (key, value, rid) is a seek for a value, but for a key alone
# SQLite would walk every row's entry of that key in it (a million at 1M rows) for each row it tests.
HOLDS = "SELECT 1 FROM annotations a WHERE a.key = ? AND a.value = ? AND a.rid = rows.rid"
PRESENT = "SELECT 1 FROM annotations a INDEXED BY annotations_by_row WHERE a.rid = rows.rid AND a.key = ?"


@dataclass
class Filters:
    """What a listing keeps: the row filters (`where`, before the health band is counted) and
    the flags every kept row must carry and must not carry (`flagged`, after it), so the band
    shows what choosing a flag would keep. All of them must hold."""

    step: float | None = None
    task_id: str | None = None
    status: str | None = None
    annotations: list = field(default_factory=list)  # (key, value or None for "present")
    q: str | None = None
    reward_min: float | None = None  # inclusive; a row without a numeric reward is outside any range
    reward_max: float | None = None
    flags: tuple = ()  # required
    exclude_flags: tuple = ()
    text_index: bool = False  # whether the run's `q` text is indexed yet (`on`)
    text_rids: str | None = None  # the rows holding `q`, as a JSON list, once looked up (`with_text_matches`)
    trained: str | None = None  # true | false | null, as the run index says (`null` also: not listed, no index)

    @classmethod
    def parse(cls, params: dict) -> "Filters":
        annotations = []
        for value in params.get("annotation", []):
            if value:
                key, sep, wanted = value.partition("=")
                annotations.append((key, wanted if sep else None))
        q = one(params, "q")
        return cls(number(params, "step"), one(params, "task_id"), one(params, "status"), annotations,
                   q.lower() if q else None, number(params, "reward_min"), number(params, "reward_max"),
                   flag_names(params, "flag"), flag_names(params, "exclude_flag"), trained=trained_value(params))

    def __bool__(self):
        """Whether a row filter is set (the flags are not row filters: see `flagged`)."""
        values = (self.step, self.task_id, self.status, self.q, self.reward_min, self.reward_max, self.trained)
        return any(v is not None for v in values) or bool(self.annotations)

    @property
    def by_flag(self) -> bool:
        return bool(self.flags or self.exclude_flags)

    def on(self, snapshot) -> "Filters":
        """These filters for one run's store: its text index is used once it is built."""
        return replace(self, text_index=snapshot.sorted)

    def rollout_only(self) -> "Filters":
        """The same filters with only the rollout flags: what a group's members are judged by."""
        return replace(self, flags=tuple(f for f in self.flags if is_rollout_flag(f)),
                       exclude_flags=tuple(f for f in self.exclude_flags if is_rollout_flag(f)))

    def where(self) -> tuple[str, list]:
        """The row filters as a WHERE clause over the store's `rows` (see `catalog/store.py`)."""
        clauses, values = equal_clauses((("step", self.step), ("task", self.task_id), ("status", self.status)),
                                        self.trained)
        if self.reward_min is not None:
            clauses.append("reward >= ?")
            values.append(self.reward_min)
        if self.reward_max is not None:
            clauses.append("reward <= ?")
            values.append(self.reward_max)
        for key, wanted in self.annotations:
            clauses.append(f"EXISTS ({PRESENT})" if wanted is None else f"EXISTS ({HOLDS})")
            values += [key] if wanted is None else [key, wanted]
        if self.q is not None:
            if self.text_rids is not None:
                clauses.append("rid IN (SELECT value FROM json_each(?))")
                values.append(self.text_rids)
            elif self.indexed_text():  # the trigram index finds it
                clauses.append("rid IN (SELECT rowid FROM texts WHERE texts MATCH ?)")
                values.append(self.text_phrase())
            else:
                clauses.append("rid IN (SELECT rid FROM rowtexts WHERE instr(text, ?) > 0)")
                values.append(self.q)
        return (" AND ".join(clauses) or "1"), values

    def with_text_matches(self, db, most: int) -> "Filters":
        """These filters with the rows holding `q` looked up once, when the text index finds at most `most`:
        a listing counts and pages them without asking the index again (each asking reads the lists of
        the rows holding each of the text's trigrams, a million entries each for a common one)."""
        if not self.indexed_text():
            return self
        found = db.execute("SELECT rowid FROM texts WHERE texts MATCH ? LIMIT ?", (self.text_phrase(), most + 1))
        rids = [rid for (rid,) in found]
        return self if len(rids) > most else replace(self, text_rids=json.dumps(rids))

    def indexed_text(self) -> bool:
        """Whether `q` is found through the trigram index (built, and three characters or more)."""
        return self.text_index and self.q is not None and len(self.q) >= 3

    def text_phrase(self) -> str:
        """`q` as a trigram phrase query: matches the text holding it anywhere."""
        return '"' + self.q.replace('"', '""') + '"'

    def flag_where(self) -> tuple[str, list]:
        """The flags as a WHERE clause over a `flags` column of bits."""
        clauses, values = [], []
        required, excluded = flag_bits(self.flags), flag_bits(self.exclude_flags)
        if required:
            clauses.append("flags & ? = ?")
            values += [required, required]
        if excluded:
            clauses.append("flags & ? = 0")
            values.append(excluded)
        return (" AND ".join(clauses) or "1"), values

    def keeps_bits(self, bits: int) -> bool:
        """Whether a row carrying the flags `bits` passes the flag filters."""
        required = flag_bits(self.flags)
        return bits & required == required and not bits & flag_bits(self.exclude_flags)

    def source(self, db) -> tuple[str, list] | None:
        """A query of the rids of (a superset of) the matching rows through an index, the most
        selective filter's: a value (step, task, status, annotation), the text, the reward range, an
        annotation key's presence, else the flag combinations the flag filters keep."""
        for column, value in (("step", self.step), ("task", self.task_id), ("status", self.status)):
            if value is not None:
                return f"SELECT rid FROM rows WHERE {column} = ?", [value]
        for key, wanted in self.annotations:
            if wanted is not None:
                return "SELECT rid FROM annotations WHERE key = ? AND value = ?", [key, wanted]
        if self.trained is not None:
            return f"SELECT rid FROM rows WHERE {TRAINED_WHERE[self.trained]}", []
        if self.text_rids is not None:
            return "SELECT value AS rid FROM json_each(?)", [self.text_rids]
        if self.indexed_text():
            return "SELECT rowid AS rid FROM texts WHERE texts MATCH ?", [self.text_phrase()]
        if self.reward_interval() is not None:
            return "SELECT rid FROM rows WHERE reward BETWEEN ? AND ?", list(self.reward_interval())
        if self.annotations:  # only keys' presence is left (a value returned above)
            return "SELECT rid FROM annotations WHERE key = ?", [self.annotations[0][0]]
        if self.by_flag:
            combinations = [bits for (bits,) in db.execute("SELECT DISTINCT flags FROM tally WHERE kind = 'all'")
                            if self.keeps_bits(bits)]
            return "SELECT rid FROM rows WHERE flags IN (SELECT value FROM json_each(?))", [json.dumps(combinations)]
        return None

    def reward_interval(self) -> tuple[float, float] | None:
        """(lowest, highest) reward kept, when a reward range is asked."""
        if self.reward_min is None and self.reward_max is None:
            return None
        return (self.reward_min if self.reward_min is not None else -math.inf,
                self.reward_max if self.reward_max is not None else math.inf)

    def reward_bounds(self) -> tuple[float, float] | None:
        """The reward interval, when it is the only row filter."""
        if any(v is not None for v in (self.step, self.task_id, self.status, self.q, self.trained)) \
                or self.annotations:
            return None
        return self.reward_interval()

    def tally_entry(self) -> tuple[str, object] | None:
        """The one `tally` kind these row filters are (counts kept, not counted), or None."""
        set_filters = [(kind, value) for kind, value in (("step", self.step), ("task", self.task_id),
                                                         ("status", self.status), ("trained", self.trained))
                       if value is not None]
        others = (self.q, self.reward_min, self.reward_max)
        if any(v is not None for v in others) or len(set_filters) + len(self.annotations) > 1:
            return None
        if set_filters:
            return set_filters[0]
        if self.annotations:
            key, wanted = self.annotations[0]
            return ("annotation-key", key) if wanted is None else ("annotation", annotation_value(key, wanted))
        return ("all", "")


def is_rollout_flag(flag: str | None) -> bool:
    return flag is not None and FLAG_BY_NAME[flag].unit == "rollout"


def health(by_bits: dict, unit: str, scanned: int, total: int) -> dict:
    """How many rows carry each flag, in flag order, from the counts of each combination of flags."""
    counts = Counter()
    for bits, n in by_bits.items():
        for flag in bit_flags(bits):
            counts[flag] += n
    return {
        "scanned": scanned,
        "total": total,
        "unit": unit,
        "counts": [[flag, counts[flag]] for flag in sorted(counts, key=FLAG_ORDER.__getitem__)],
    }


def reward_range(rewards) -> dict | None:
    values = [r for r in rewards if r is not None]
    return {"min": min(values), "max": max(values)} if values else None


def page(items: list, limit: int, offset: int) -> dict:
    chunk = items[offset: offset + limit]
    more = offset + limit < len(items)
    return {"data": chunk, "next_cursor": str(offset + limit) if more else None, "has_more": more}


SORT_COLUMNS = {key: key for key in SORT_KEYS}
TIE_BREAK = (("(created IS NULL)", "asc"), ("created", "desc"), ("id", "asc"))  # the index's own order


def ordering(key: str, order: str) -> list[tuple[str, str]]:
    """(expression, direction) from the sort key to the last tie break: NULLs last, ties newest
    first, then by id (the store has an index for each)."""
    if (key, order) == ("created", "desc"):
        return list(TIE_BREAK)
    if key == "created":
        return [("(created IS NULL)", "asc"), ("created", "asc"), ("id", "asc")]
    column = SORT_COLUMNS[key]
    return [(f"({column} IS NULL)", "asc"), (column, order), *TIE_BREAK]


def after(order: list[tuple[str, str]], last: list) -> tuple[str, list]:
    """The rows that sort after `last` (the sort values of a page's last row): keyset paging."""
    options, values = [], []
    for position, (expression, direction) in enumerate(order):
        equal = [f"{order[i][0]} IS ?" for i in range(position)]
        beyond = f"{expression} {'>' if direction == 'asc' else '<'} ?"
        options.append("(" + " AND ".join([*equal, beyond]) + ")")
        values += [*last[:position], last[position]]
    return "(" + " OR ".join(options) + ")", values


@dataclass
class Cursor:
    """Where a page starts: an offset (what a page number asks), and the sort values of the row before
    it when the page before was listed (`next_cursor`), so the store seeks there instead of counting."""

    offset: int = 0
    last: list | None = None

    @classmethod
    def parse(cls, text: str | None) -> "Cursor":
        offset, _, rest = (text or "").partition(".")
        try:
            start = max(int(offset), 0)
        except ValueError:
            return cls()
        try:
            last = json.loads(base64.urlsafe_b64decode(rest.encode())) if rest else None
        except ValueError:
            last = None
        return cls(start, last if isinstance(last, list) else None)

    def next(self, limit: int, last: list | None) -> str:
        following = str(self.offset + limit)
        if last is None:
            return following
        return following + "." + base64.urlsafe_b64encode(json.dumps(last).encode()).decode()


def with_run(row: dict, runs: dict) -> dict:
    """The row as sent, with its run's id and project and the version it was read at."""
    location = runs[row["_run"]]
    return {**public(row), "revision": row["revision"], "run_id": location.id, "project": location.project}


def row_encoder(runs: dict):
    """`encode(run id, compressed JSON, mtime_ns)`: a listed row as sent, with its run's id and project
    and the version it was read at, joined from the row's encoded JSON instead of encoding it again."""
    prefixes = {run_id: b'{"run_id":' + encode_json(location.id) + b',"project":' + encode_json(location.project)
                + b',"revision":' for run_id, location in runs.items()}

    def encode(run_id: str, json_z: bytes, mtime_ns: int) -> bytes:
        return prefixes[run_id] + str(mtime_ns // 1_000_000).encode() + b"," + json_of(json_z)[1:]
    return encode


def counted(db, filters: Filters, where: tuple[str, list] | None = None, entry: tuple | None = None) -> dict:
    """{flag bits: (rows, lowest reward, highest reward)} of the rows the row filters keep (and `where`):
    the store's kept counts when the filters are one of their kinds (or `entry` names them), else one
    pass over the matches."""
    entry = entry or (filters.tally_entry() if where is None else None)
    rewards = filters.reward_bounds() if where is None else None
    if entry is not None:
        found = db.execute("SELECT flags, n, low, high FROM tally WHERE kind = ? AND value = ? AND n > 0", entry)
    elif rewards is not None:  # the rows per reward value are counted too: a range sums a few of them
        found = db.execute("SELECT flags, sum(n), min(low), max(high) FROM tally WHERE kind = 'reward'"
                           " AND value BETWEEN ? AND ? AND n > 0 GROUP BY flags", rewards)
    else:
        clause, values = filters.where()
        if where is not None:
            clause, values = f"{clause} AND {where[0]}", [*values, *where[1]]
        found = db.execute(f"SELECT flags, count(*), min(reward), max(reward) FROM rows WHERE {clause} GROUP BY flags",
                           values)
    return {bits: (n, low, high) for bits, n, low, high in found}


def kept_counts(counts: dict, filters: Filters) -> tuple[int, dict | None]:
    """(rows, reward range) of the counted rows that pass the flag filters."""
    kept = [value for bits, value in counts.items() if filters.keeps_bits(bits)]
    lows = [low for _, low, _ in kept if low is not None]
    highs = [high for _, _, high in kept if high is not None]
    return sum(n for n, _, _ in kept), ({"min": min(lows), "max": max(highs)} if lows else None)


SPARSE_SHARE = 0.05  # a listing keeping less of the run than this reads its matches first, then sorts them


def sparse_rows(snapshot) -> int:
    """Fewer matching rows than this make a sparse listing: its matches are found first (`listed_rows`)."""
    return int(SPARSE_SHARE * snapshot.row_count)


def listed_rows(db, filters: Filters, key: str, order: str, limit: int, cursor: Cursor,
                where: tuple[str, list] | None = None, sparse: bool = False,
                indexed: bool = False) -> tuple[list, list | None]:
    """(up to `limit` rows as (json, mtime_ns, sort values) from `cursor` on, the last one's sort values
    when more follow).

    Most listings walk the sort's index and stop after a page. When few rows match (`sparse`: the
    counts say so), that walk would cross the whole run to find them, so the matches are found first
    through the most selective index a filter has, and only they are sorted. Otherwise the walk is
    told to use the order's index (`indexed`: once it is built), which SQLite might trade for a
    filter's index and then sort every match."""
    source = None
    if sparse:
        source = (f"SELECT rid FROM rows WHERE {where[0]}", where[1]) if where is not None else filters.source(db)
    clause, values = filters.where()
    flag_clause, flag_values = filters.flag_where()
    clause, values = f"{clause} AND {flag_clause}", [*values, *flag_values]
    if where is not None:
        clause, values = f"{clause} AND {where[0]}", [*values, *where[1]]
    sort = ordering(key, order)
    offset = cursor.offset
    if cursor.last is not None and len(cursor.last) == len(sort):
        seek, more = after(sort, cursor.last)
        clause, values, offset = f"{clause} AND {seek}", [*values, *more], 0
    order_by = ", ".join(f"{expression} {direction.upper()}" for expression, direction in sort)
    keys = ", ".join(expression for expression, _ in sort)
    if source is not None:
        tables = f"(SELECT rid AS picked FROM ({source[0]})) CROSS JOIN rows ON rows.rid = picked"
    else:
        tables = f"rows INDEXED BY {order_index(key, order)}" if indexed else "rows"
    found = db.execute(f"SELECT json, mtime_ns, {keys} FROM {tables} WHERE {clause} ORDER BY {order_by}"
                       " LIMIT ? OFFSET ?", [*(source[1] if source else ()), *values, limit + 1, offset]).fetchall()
    return found[:limit], (list(found[limit - 1][2:]) if len(found) > limit else None)


@contextmanager
def searched_ids(snapshot, filters: Filters):
    """(how many readable rows the filters keep, the unreadable ones with why they are skipped, an iterator over
    the readable ones' ids, newest first): what a text search reads, in one read transaction held while it is
    iterated. The ids come from the order's index as the search reads on, a few thousand at a time: a million
    of them listed at once cost a second before the first document was read."""
    filters = filters.on(snapshot)
    where, values = filters.where()
    flag_where, flag_values = filters.flag_where()
    kept = f"{where} AND {flag_where}", [*values, *flag_values]
    with snapshot.reading() as db:
        count, _ = kept_counts(counted(db, filters), filters)
        # the unreadable are a few, found by their own index and then sorted: SQLite would rather walk the
        # order's index over every row (3 s at a million)
        broken = {record_id: unpack(fields).get("error") for record_id, fields in db.execute(
            f"SELECT id, kept FROM rows INDEXED BY rows_unreadable WHERE unreadable AND {kept[0]} "
            f"ORDER BY {NEWEST_FIRST}", kept[1])}
        unreadable = [{"trajectory_id": record_id, "reason": f"unreadable: {why}"} for record_id, why in broken.items()]
        ids = db.execute(f"SELECT id FROM rows WHERE {kept[0]} ORDER BY {NEWEST_FIRST}", kept[1])
        yield count - len(broken), unreadable, (record_id for (record_id,) in ids if record_id not in broken)
