"""A row the run's database refuses (here an integer past SQLite's 64 bits: valid JSON, a finite number) is
its record's problem: its batch is stored again row by row, the record listed as unreadable saying why and
naming its file, the rest of the batch stored, whether the server's process or an indexing worker wrote it.
A database that refuses every row (no record's fault) is not blamed on the records."""

import json
import sqlite3

import pytest

from skycap_viewer.catalog.discovery import discover_runs
from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY
from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.persisted import IndexFiles
from skycap_viewer.catalog.pool import RowPool
from skycap_viewer.catalog.rows import compute_row
from skycap_viewer.catalog.store import RunStore
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.corpus import FIXTURES
from tests.support.records import copy_record

TOO_BIG = 2**70  # a JSON integer SQLite cannot keep in an INTEGER column
REFUSED = {  # every field a row keeps as an INTEGER column
    "reward": lambda d: d["annotations"].update(reward=TOO_BIG),
    "step": lambda d: d["meta"].update(step=TOO_BIG),
    "created": lambda d: d.update(created_at=TOO_BIG),
}
WHY = "its row cannot be kept in the run's index (OverflowError: Python int too large to convert to SQLite INTEGER)"


def run_with(run, good: int) -> None:
    """`good` copies of an intact record, and one record per field of `REFUSED` holding a value there that the
    database refuses."""
    run.mkdir(parents=True)
    for n in range(good):
        copy_record(FIXTURES / "spec", "tr_text", run, file_id=f"good{n:03}")
    for name, change in REFUSED.items():
        copy_record(FIXTURES / "spec", "tr_text", run, file_id=name)
        path = run / f"{name}.json.zst"
        document = json.loads(decompress_one_frame(path.read_bytes()))
        document["id"] = name
        change(document)
        path.write_bytes(compress(json.dumps(document).encode()))


def listed(catalog: Catalog) -> dict:
    """{record id: its error or None} of the one run, and whether it is still said to be indexing."""
    (snapshot,) = catalog.snapshots()
    return {row["id"]: row.get("error") for row in snapshot.rows}, snapshot.indexing


def assert_only_the_refused_are_problems(catalog: Catalog, run, good: int):
    rows, indexing = listed(catalog)
    assert not indexing
    assert {name: rows[name] for name in REFUSED} == {name: f"{run / name}.json.zst: {WHY}" for name in REFUSED}
    assert sorted(name for name, error in rows.items() if error is None) == [f"good{n:03}" for n in range(good)]
    (snapshot,) = catalog.snapshots()
    assert snapshot.facts["unreadable"] == len(REFUSED) and snapshot.row_count == good + len(REFUSED)


def test_a_refused_row_is_its_records_problem_and_its_batch_is_stored(tmp_path):
    run = tmp_path / "root" / "run"
    run_with(run, good=5)
    catalog = Catalog([tmp_path / "root"], IndexFiles(tmp_path / "cache"))
    watcher = Watcher(catalog, verify=False)
    watcher.poll()
    assert_only_the_refused_are_problems(catalog, run, good=5)
    watcher.poll()  # nothing left to store: the refused records are not read again and again meanwhile
    assert_only_the_refused_are_problems(catalog, run, good=5)


@pytest.mark.slow
def test_a_row_a_worker_cannot_write_is_stored_by_the_server_as_its_records_problem(tmp_path):
    """A big batch's chunk is written by a worker: the database refusing one of its rows gives the chunk back,
    and the server's process stores it, the refused row as its record's problem."""
    run = tmp_path / "root" / "run"
    run_with(run, good=70)
    catalog = Catalog([tmp_path / "root"], IndexFiles(tmp_path / "cache"))
    pool = RowPool(workers=2, small_batch=0)
    try:
        Watcher(catalog, compute_rows=pool.compute_rows, verify=False, offload=pool.submit, stored_forms=True).poll()
    finally:
        pool.close()
    assert_only_the_refused_are_problems(catalog, run, good=70)


def test_a_database_refusing_every_row_blames_no_record(tmp_path):
    """What refuses a record's row as well as the row saying so is the database's problem (a full disk, a
    trigger): raised, with nothing of the batch stored (not the rows before it either) and no record called
    unreadable."""
    store = RunStore(tmp_path / "run.sqlite", {"directory": str(FIXTURES / "spec")}, DEFAULT_GROUP_BY)
    store.db.execute("CREATE TRIGGER refuse BEFORE INSERT ON rows WHEN NEW.name = 'tr_tokens.json.zst'"
                     " BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    rows = [(name, 1, 1, 1, compute_row(str(FIXTURES / "spec"), name), False)
            for name in ("tr_text.json.zst", "tr_tokens.json.zst")]
    with pytest.raises(sqlite3.IntegrityError, match="disk full"):
        store.put_many(rows)
    assert store.db.execute("SELECT count(*) FROM rows").fetchone()[0] == 0
    assert store.db.execute("SELECT count(*) FROM rowtexts").fetchone()[0] == 0


def test_a_run_index_file_whose_rows_the_database_refuses_is_ignored_saying_why(tmp_path):
    """One file's rows refused (here by a constraint on one id) make that file ignored with the reason, in
    `run_index.damaged`; the other files are kept and the run is listed."""
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    copy_record(FIXTURES / "spec", "tr_text", run)
    (run / "index").mkdir()
    for step, record_id in ((1, "refused"), (2, "tr_text")):
        (run / "index" / f"step-{step}.json").write_text(json.dumps(
            {"format_version": 1, "step": step, "rows": [{"id": record_id, "trained": False}]}))
    catalog = Catalog([tmp_path / "root"], IndexFiles(tmp_path / "cache"))
    (indexed,) = catalog.set_runs(discover_runs(catalog.roots, {}, []))
    indexed.store.db.execute("CREATE TRIGGER refuse BEFORE INSERT ON index_rows WHEN NEW.id = 'refused'"
                             " BEGIN SELECT RAISE(ABORT, 'refused'); END")
    Watcher(catalog, verify=False).poll()
    (snapshot,) = catalog.snapshots()
    assert snapshot.run_index["damaged"] == [{"file": "index/step-1.json", "problem":
                                              "its rows cannot be kept in the run's index (IntegrityError: refused)"}]
    assert snapshot.run_index["files"] == 1 and snapshot.rows[0]["trained"] is False
