"""How long a cold index holds the run database's write lock a record: the part no number of cores divides.

    python bench/write_lock.py --small                     # 20,000 small records, as `run.py --rows` writes them
    python bench/write_lock.py --small --documents 5000    # fewer
    python bench/write_lock.py --run DIR                   # the documents of a run on disk (at most --documents)

The workers compute rows in parallel, but every row, every count and every group they keep is written into one
SQLite database, one writer at a time: whatever a worker does between `BEGIN IMMEDIATE` and `COMMIT` is serial.
This times that in wall time, one process, the rows computed first:
- the rows as a worker writes them (`store.rows_written`: inserted, counted, committed), in tasks of
  `INDEX_CHUNK` into the run as it fills (the first half of the rows written before any is timed), the group
  index left out as a cold index leaves it;
- the same tasks written first into a staging file of their own, outside the lock, then merged into the run
  under it (`ATTACH` and `INSERT ... SELECT` per table, counts as now; without the look for names already
  stored that `rows_written` makes, which a merge would make too): the issue-36 item 1 design, measured;
- the groups as the workers keep them (`store.groups_written`: computed from their members inside the lock),
  in tasks of `GROUPS_PER_TASK` keys once every row is written: each group once (a cold index computes some
  again as their members come), so a lower bound.
The least wall time a cold index can take on any number of cores is the rows' and the groups' time a record
held, times the records.
"""

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

from row_profile import sample_documents, sample_options  # noqa: E402

from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY  # noqa: E402
from skycap_viewer.catalog.pool import INDEX_CHUNK  # noqa: E402
from skycap_viewer.catalog.rows import compute_row  # noqa: E402
from skycap_viewer.catalog.store import (  # noqa: E402
    ROW_COLUMNS,
    SCHEMA,
    RunStore,
    add_counts,
    forms_counts,
    groups_written,
    insert_forms,
    rows_written,
    stored_form,
)
from skycap_viewer.catalog.watcher import GROUPS_PER_TASK  # noqa: E402

STAGED_TABLES = {  # what `insert_forms` writes a row, each row's rid moved past the run's last one at the merge
    "rows": ROW_COLUMNS,
    "annotations": "rid, key, value",
    "rowtexts": "rid, text",
    "lanes": "rid, lane_step, lane_id, lane_start, lane_end, lane",
}


def written(path: Path, identity: str, tasks: list[list[tuple]]) -> None:
    """The tasks' rows written as a worker writes them (`rows_written`: its connection opened and closed too, ~1 µs
    a row of it outside the lock)."""
    for task in tasks:
        if not rows_written(str(path), identity, task):
            raise SystemExit("the rows were not written")


def staged(path: Path, forms: list[tuple]) -> None:
    """A task's rows written into a staging file of their own (its tables, none of the run's indexes)."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = OFF")
        for statement in SCHEMA:
            if statement.lstrip().startswith("CREATE TABLE"):
                db.execute(statement)
        db.execute("BEGIN")
        insert_forms(db, forms, False)
        db.execute("COMMIT")
    finally:
        db.close()


def merged(db: sqlite3.Connection, forms: list[tuple]) -> None:
    """The staged rows (attached as `staged`) moved into the run, its lane steps and counts added."""
    offset = db.execute("SELECT coalesce(max(rid), 0) FROM main.rows").fetchone()[0]
    for table, columns in STAGED_TABLES.items():
        rest = columns.split(", ", 1)[1]
        db.execute(f"INSERT INTO main.{table} ({columns}) SELECT rid + ?, {rest} FROM staged.{table}", (offset,))
    db.execute("INSERT INTO main.lane_steps SELECT step, lanes, 1 FROM staged.lane_steps WHERE true"
               " ON CONFLICT DO UPDATE SET lanes = lanes + excluded.lanes, changes = changes + 1")
    add_counts(db, forms_counts(forms))


def stored_tables(db: sqlite3.Connection) -> dict:
    """What a run holds of its rows, table by table: the rows counted, and their counts in `tally` and `lane_steps`."""
    found = {table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in STAGED_TABLES}
    found["tally"] = db.execute("SELECT kind, value, flags, n, low, high FROM tally ORDER BY 1, 2, 3").fetchall()
    found["lane_steps"] = db.execute("SELECT * FROM lane_steps ORDER BY step").fetchall()
    return found


def measured(forms: list[tuple], scratch: Path) -> dict[str, float]:
    """Seconds a record each way (see the module doc), and the records and groups they were over."""
    tasks = [forms[first : first + INDEX_CHUNK] for first in range(0, len(forms), INDEX_CHUNK)]
    before, timed = tasks[: len(tasks) // 2], tasks[len(tasks) // 2 :]
    timed_rows = sum(map(len, timed))
    stores = {way: RunStore(scratch / f"{way}.sqlite", {"directory": str(scratch)}, DEFAULT_GROUP_BY)
              for way in ("now", "staged")}
    for store in stores.values():
        store.drop_group_index(len(forms))  # as a cold index writes its rows: the first group task builds it
        store.commit()
        written(store.path, store.identity, before)
    now, merged_into = stores["now"], stores["staged"]
    figures = {"records": len(forms)}
    started = time.perf_counter()
    written(now.path, now.identity, timed)
    figures["rows now"] = (time.perf_counter() - started) / timed_rows
    staging, merging = 0.0, 0.0
    for number, task in enumerate(timed):
        stage = scratch / f"stage-{number}.sqlite"
        started = time.perf_counter()
        staged(stage, task)
        staging += time.perf_counter() - started
        db = sqlite3.connect(merged_into.path, isolation_level=None)
        try:
            db.execute("ATTACH ? AS staged", (str(stage),))
            db.execute("BEGIN IMMEDIATE")
            started = time.perf_counter()
            merged(db, task)
            db.execute("COMMIT")
            merging += time.perf_counter() - started
        finally:
            db.close()
        os.unlink(stage)
    figures["rows staged (outside the lock)"] = staging / timed_rows
    figures["rows merged"] = merging / timed_rows
    held_now, held_merged = stored_tables(now.db), stored_tables(merged_into.db)
    differing = [table for table in held_now if held_now[table] != held_merged[table]]
    if differing:
        raise SystemExit(f"the merge kept other {', '.join(differing)} than the rows written as now")
    keys = [key for (key,) in now.db.execute("SELECT DISTINCT gkey FROM rows WHERE gkey IS NOT NULL")]
    started = time.perf_counter()
    for first in range(0, len(keys), GROUPS_PER_TASK):
        if not groups_written(str(now.path), now.identity, keys[first : first + GROUPS_PER_TASK], DEFAULT_GROUP_BY):
            raise SystemExit("the groups were not written")
    figures["groups"] = (time.perf_counter() - started) / len(forms)
    figures["group count"] = len(keys)
    for store in stores.values():
        store.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sample_options(parser, "written", documents=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="write-lock-") as scratch:
        records = Path(scratch) / "records"
        records.mkdir()
        directory, names = sample_documents(args, str(records))
        forms = [(name, 1, 1, 1, stored_form(compute_row(str(directory), name), DEFAULT_GROUP_BY)) for name in names]
        figures = measured(forms, Path(scratch))
    print(f"{figures['records']} records, {figures['group count']} groups: µs a record, wall, one process")
    for label in ("rows now", "rows staged (outside the lock)", "rows merged", "groups"):
        print(f"  {figures[label] * 1e6:8.1f}  {label}")
    serial = figures["rows now"] + figures["groups"]
    print(f"the write lock held a record: {serial * 1e6:.1f} µs now (rows and groups), "
          f"{(figures['rows merged'] + figures['groups']) * 1e6:.1f} µs with the rows staged and merged; "
          f"100,000 records: at least {serial * 1e5:.1f} s on any number of cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
