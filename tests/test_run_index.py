"""The trainer's run index: both layouts of `pulled/` against `pulled-expected.json`.

Rows the index lists get its `trained` and `superseded`, a record it says was not trained (and not
superseded, not eval) the `not-trained` flag; its rows whose record is not here are listed on request
with where the record lives; `/v1/runs` and `summary` say what it holds. A damaged index file is named
once and ignored; a directory without an index is listed as before. Served by the real handler in
process (`tests/support/in_process.py`) over copies of the fixtures, and by the real server for stderr.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.parse

import pytest

from skycap_viewer.catalog import index as catalog_index
from skycap_viewer.catalog import run_index, store
from skycap_viewer.catalog.run_index import IndexProblem, read_index_file
from skycap_viewer.record.document import structure_counts
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES, PULLED
from tests.support.in_process import InProcess, in_process_fixture
from tests.support.process_memory import GIB, PeakMemory
from tests.support.server_process import ServerProcess

EXPECTED = json.loads((FIXTURES / "pulled-expected.json").read_text())["layouts"]
RUN_OF = {"new": "train", "old": "old"}  # the run id each layout's record directory is served as
LAYOUTS = sorted(EXPECTED)


def not_trained(entry: dict) -> bool:
    return entry["in_index"] and entry["trained"] is False and entry["superseded"] is False


@pytest.fixture
def pulled(tmp_path):
    """A private copy of `pulled/`: `ROOT/new/train` (newer layout) and `ROOT/old` (older layout)."""
    root = tmp_path / "pulled"
    shutil.copytree(PULLED, root)
    return root


web = in_process_fixture("pulled")


def record_dir(root, layout: str):
    return root / os.path.relpath(FIXTURES / EXPECTED[layout]["record_dir"], PULLED)


def rows_of(web, run_id: str, query: str = "") -> dict:
    listing = web.json(f"/v1/trajectories?run_id={run_id}&limit=1000{query}")
    assert len(listing["data"]) == listing["total"]
    return {row["id"]: row for row in listing["data"]}


def band(listing: dict) -> dict:
    return dict(listing["health"]["counts"])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rows_carry_what_the_index_says_of_them(web, layout):
    expected = EXPECTED[layout]["records"]
    rows = rows_of(web, RUN_OF[layout])
    assert set(rows) == set(expected), "every record here is listed, in the index or not"
    for record_id, entry in expected.items():
        row = rows[record_id]
        if entry["in_index"]:
            assert (row["trained"], row["superseded"]) == (entry["trained"], entry["superseded"]), record_id
        else:
            assert "trained" not in row and "superseded" not in row, record_id
        assert ("not-trained" in row["flags"]) == not_trained(entry), record_id
        assert row["flags"] == row["summary"]["flags"]
        detail = web.json(f"/v1/trajectories/{record_id}?run_id={RUN_OF[layout]}")
        assert detail.get("trained") == row.get("trained") and detail["flags"] == row["flags"]
    assert sorted(EXPECTED[layout]["records_not_in_index"]) == sorted(
        record_id for record_id, row in rows.items() if "superseded" not in row)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_trained_filter_its_counts_and_sort(web, layout):
    run_id, expected = RUN_OF[layout], EXPECTED[layout]["records"]
    for value, wanted in (("true", True), ("false", False), ("null", None)):
        listing = web.json(f"/v1/trajectories?run_id={run_id}&trained={value}&limit=1000")
        ids = {row["id"] for row in listing["data"]}
        assert ids == {record_id for record_id, entry in expected.items() if entry["trained"] is wanted}, value
        assert listing["total"] == len(ids)
        assert band(listing).get("not-trained", 0) == sum(1 for r in ids if not_trained(expected[r]))
        both = web.json(f"/v1/trajectories?run_id={run_id}&trained={value}&step=2&limit=1000")
        assert {row["id"] for row in both["data"]} == {r for r in ids if expected[r]["step"] == 2}
        assert both["total"] == len(both["data"])
    everything = web.json(f"/v1/trajectories?run_id={run_id}&limit=1000")
    assert band(everything).get("not-trained", 0) == sum(1 for entry in expected.values() if not_trained(entry))
    flagged = web.json(f"/v1/trajectories?run_id={run_id}&flag=not-trained&limit=1000")
    assert {row["id"] for row in flagged["data"]} == {r for r, entry in expected.items() if not_trained(entry)}
    for order, rank in (("desc", {True: 0, False: 1, None: 2}), ("asc", {False: 0, True: 1, None: 2})):
        listed = web.json(f"/v1/trajectories?run_id={run_id}&sort=trained&order={order}&limit=1000")["data"]
        assert [rank[row.get("trained")] for row in listed] == sorted(rank[row.get("trained")] for row in listed)
        paged, cursor = [], ""
        while cursor is not None:  # keyset pages of 3 give the same order
            page = web.json(f"/v1/trajectories?run_id={run_id}&sort=trained&order={order}&limit=3{cursor}")
            paged += [row["id"] for row in page["data"]]
            cursor = f"&cursor={page['next_cursor']}" if page["next_cursor"] else None
        assert paged == [row["id"] for row in listed]
    assert "trained must be one of" in web.json(f"/v1/trajectories?run_id={run_id}&trained=yes", 400)["detail"]


def test_not_trained_is_in_the_flag_catalogue(web):
    flags = {flag["flag"]: flag for flag in web.json("/__viewer")["flags"]}
    assert flags["not-trained"]["unit"] == "rollout" and flags["not-trained"]["row"]
    assert "run index" in flags["not-trained"]["why"] and "did not train" in flags["not-trained"]["why"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_rows_without_a_record_are_listed_with_where_it_lives(web, layout):
    run_id, expected = RUN_OF[layout], EXPECTED[layout]
    missing = web.json(f"/v1/trajectories?run_id={run_id}&missing=true&limit=1000")
    wanted = expected["rows_without_record_here"]
    assert [row["id"] for row in missing["data"]] == [row["id"] for row in wanted], "in the index's order"
    assert missing["total"] == len(wanted) and not missing["has_more"]
    for row, entry in zip(missing["data"], wanted, strict=True):
        for key in ("step", "instance_id", "repetition_id", "attempt", "status", "trained", "superseded"):
            assert row[key] == entry[key], (row["id"], key)
        assert row["missing"] is True and row["phase"] == expected["phase"]
        assert row["index_file"] in [os.path.relpath(FIXTURES / f, FIXTURES / expected["record_dir"])
                                     for f in expected["index_files"]]
        assert (row["record"] is None) == entry["record_null"]
        if row["record"] is None:
            assert "says nowhere else" in row["why"]
        else:
            assert row["record"]["path"] in row["why"] and row["record"]["host"] in row["why"]
            assert ("files" in row["record"]) == (layout == "new"), "record.files: only in the newer layout"
            if row["record"].get("mirror"):
                assert row["record"]["mirror"] in row["why"]
        assert row["opens_from_mirror"] is bool(row["record"] and row["record"].get("mirror")), row  # all gs://
    pages, cursor = [], "0"
    while cursor is not None:
        page = web.json(f"/v1/trajectories?run_id={run_id}&missing=true&limit=5&cursor={cursor}")
        pages += [row["id"] for row in page["data"]]
        cursor = page["next_cursor"]
    assert pages == [row["id"] for row in wanted]
    step = wanted[-1]["step"]
    stepped = web.json(f"/v1/trajectories?run_id={run_id}&missing=true&step={step}&trained=true")
    assert [row["id"] for row in stepped["data"]] == [
        row["id"] for row in wanted if row["step"] == step and row["trained"] is True]
    assert "only step, status and trained" in web.json(
        f"/v1/trajectories?run_id={run_id}&missing=true&q=tr_", 400)["detail"]
    assert "pass run_id" in web.json("/v1/trajectories?missing=true", 400)["detail"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_runs_say_what_the_index_holds(web, layout):
    expected = EXPECTED[layout]
    entry = next(run for run in web.json("/v1/runs")["data"] if run["id"] == RUN_OF[layout])
    assert entry["run_index"] == {
        "files": len(expected["index_files"]),
        "phases": [expected["phase"]],
        "steps": expected["steps"],
        "rows": sum(step["rows"] for step in expected["counts_per_step"].values()),
        "damaged": [],
        "rows_without_record": len(expected["rows_without_record_here"]),
        "records_listed": sum(1 for record in expected["records"].values() if record["in_index"]),
    }


def test_a_directory_without_an_index_is_listed_as_before(tmp_path, pulled):
    with_index = InProcess(pulled)
    shutil.rmtree(record_dir(pulled, "new") / "index")
    shutil.copytree(FIXTURES / "groups", tmp_path / "plain" / "groups")
    without = InProcess(pulled)
    plain = InProcess(tmp_path / "plain")
    try:
        runs = {run["id"]: run for run in without.json("/v1/runs")["data"]}
        assert "run_index" not in runs["train"] and "run_index" in runs["old"]
        assert "run_index" not in plain.json("/v1/runs")["data"][0]
        listed = rows_of(with_index, "train")
        for record_id, row in rows_of(without, "train").items():
            assert "trained" not in row and "superseded" not in row and "not-trained" not in row["flags"]
            if "superseded" not in listed[record_id]:  # a record the index did not list: the same row
                assert row == listed[record_id]
        groups = rows_of(plain, "groups")
        assert all("trained" not in row for row in groups.values())
        assert set(rows_of(plain, "groups", "&trained=null")) == set(groups), "null: the index says nothing"
        assert plain.json("/v1/trajectories?run_id=groups&trained=true")["total"] == 0
        assert plain.json("/v1/trajectories?run_id=groups&missing=true")["data"] == []
    finally:
        for server in (with_index, without, plain):
            server.close()


DAMAGES = {
    "not JSON": (b'{"format_version": 1, "rows": [', "not JSON"),
    "another format": (json.dumps({"format_version": 2, "rows": []}).encode(), "format_version is 2, not 1"),
    "no rows": (json.dumps({"format_version": 1, "step": 3}).encode(), "has no list of rows"),
    "another step": (json.dumps({"format_version": 1, "step": 4, "rows": []}).encode(),
                     "says step 4 but is named step-3.json"),
    "a row without id": (json.dumps({"format_version": 1, "rows": [{"trained": True}]}).encode(), "row 0 has no id"),
    "trained as text": (json.dumps({"format_version": 1, "rows": [{"id": "tr_x", "trained": "yes",
                                                                    "superseded": False}]}).encode(),
                        "trained is \"yes\""),
    "deep": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    "not an object": (b"[]", "not a JSON object"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_index_file_says_why(tmp_path, damage):
    data, problem = DAMAGES[damage]
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "step-3.json").write_bytes(data)
    with pytest.raises(IndexProblem) as raised:
        read_index_file(tmp_path, "index/step-3.json")
    assert problem in str(raised.value)


def test_a_big_index_file_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(run_index, "MAX_FILE_BYTES", 1000)
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "step-1.json").write_bytes(b" " * 1001)
    with pytest.raises(IndexProblem, match="larger than"):
        read_index_file(tmp_path, "index/step-1.json")


def test_an_index_file_of_too_many_rows_containers_or_values_is_refused(tmp_path, monkeypatch):
    """Each bound names what it counted; a file within them is read. Brackets and commas inside strings are
    not counted (a row's long path full of commas is not refused)."""
    monkeypatch.setattr(run_index, "MAX_FILE_ROWS", 3)
    monkeypatch.setattr(run_index, "MAX_FILE_CONTAINERS", 12)
    monkeypatch.setattr(run_index, "MAX_FILE_VALUES", 30)
    (tmp_path / "index").mkdir()
    step = tmp_path / "index" / "step-1.json"

    def read(rows, extra=()):
        step.write_text(json.dumps({"format_version": 1, "rows": [{"id": f"r{i}"} for i in range(rows)],
                                    "extra": list(extra)}))
        return read_index_file(tmp_path, "index/step-1.json")

    assert len(read(3).rows) == 3
    with pytest.raises(IndexProblem, match="holds 4 rows, past the 3 a file may"):
        read(4)
    with pytest.raises(IndexProblem, match="holds 15 JSON objects and arrays, past the 12 a file may"):
        read(2, extra=[[]] * 10)
    with pytest.raises(IndexProblem, match=r"holds 31 JSON values \(strings, numbers, objects, arrays\), past the 30"):
        read(2, extra=["ab"] * 23)  # counted: 5 objects and arrays, 25 commas, and one
    assert len(read(2, extra=["ab"] * 22).rows) == 2
    assert len(read(2, extra=["[{,,,}]" * 1000]).rows) == 2


INDEX_BOMBS = {  # a run index file under the byte cap of one value after another: ~1.5 M to 4 M of them
    "strings": b'"ab"',  # 3.4 M strings, ~200 MB once parsed
    "numbers": b"1.5",  # 4.2 M floats, ~130 MB once parsed
}


def index_bomb(step: int, item: bytes) -> bytes:
    """A step file that lists one record and then, in a field the format does not have, `item`s up to the cap."""
    head = f'{{"format_version":1,"step":{step},"rows":[{{"id":"nobody","trained":false}}],"extra":['.encode()
    count = (run_index.MAX_FILE_BYTES - len(head) - 2) // (len(item) + 1)
    return head + b",".join([item] * count) + b"]}"


@pytest.mark.parametrize("kind", INDEX_BOMBS)
def test_an_index_file_of_millions_of_small_values_is_refused_unparsed_and_the_rest_used(pulled, capsys, kind):
    """Within the byte cap and with few brackets, it holds more values than a file may: named in one line
    before it is parsed, the other files used, every record listed."""
    directory = record_dir(pulled, "new")
    bomb = directory / "index" / "step-9.json"
    bomb.write_bytes(index_bomb(9, INDEX_BOMBS[kind]))
    assert len(bomb.read_bytes()) <= run_index.MAX_FILE_BYTES
    web = InProcess(pulled)
    try:
        named = [line for line in capsys.readouterr().err.splitlines() if "step-9.json" in line]
        assert len(named) == 1 and named[0].startswith(f"skycap-viewer: {bomb}: run index file ignored: holds "), named
        assert f"JSON values (strings, numbers, objects, arrays), past the {run_index.MAX_FILE_VALUES:,} a file may" \
            in named[0]
        facts = next(run for run in web.json("/v1/runs")["data"] if run["id"] == "train")["run_index"]
        assert facts["files"] == 2 and [entry["file"] for entry in facts["damaged"]] == ["index/step-9.json"]
        rows = rows_of(web, "train")
        assert set(rows) == set(EXPECTED["new"]["records"])
        assert all(rows[r].get("trained") == e["trained"] for r, e in EXPECTED["new"]["records"].items()
                   if e["in_index"])
    finally:
        web.close()


def heavy_legal_index(step: int) -> bytes:
    """A step file at the byte cap that passes every bound and costs the most to keep: the most rows
    a file may hold, four containers each, then short strings (a new object each) up to the values a file
    may hold, and one long string to the cap."""
    rows = ",".join(f'{{"id":"r{step}-{i:06d}","annotations":{{"a":[]}},"record":{{"files":[]}}}}'
                    for i in range(run_index.MAX_FILE_ROWS))
    head = f'{{"format_version":1,"step":{step},"rows":[{rows}],"extra":['
    count = run_index.MAX_FILE_VALUES - structure_counts(head + '""]}')[1]  # strings that fit besides the long one
    strings = '"ab",' * count
    pad = run_index.MAX_FILE_BYTES - len(head) - len(strings) - len('""]}')
    return (head + strings + '"' + "x" * pad + '"]}').encode()


def tiny_rows_index(step: int) -> bytes:
    """A step file at the byte cap of the smallest rows: 840k of them, about 1 GB once read and kept."""
    count = (run_index.MAX_FILE_BYTES - 64) // len('{"id":"r5-0000000"},')
    rows = ",".join(f'{{"id":"r{step}-{i:07d}"}}' for i in range(count))
    return f'{{"format_version":1,"step":{step},"rows":[{rows}]}}'.encode()


@pytest.mark.slow
def test_index_files_at_the_cap_cost_less_than_a_gib(pulled):
    """Two files at the byte cap of the smallest rows are refused before they are parsed; two of the
    heaviest a file may be are read: `summary` and the server, whole process trees, stay under 1 GiB."""
    directory = record_dir(pulled, "new")
    rows_before = sum(len(json.loads(path.read_text())["rows"]) for path in (directory / "index").iterdir())
    for step in (5, 6):
        (directory / "index" / f"step-{step}.json").write_bytes(tiny_rows_index(step))
    for step in (7, 8):
        (directory / "index" / f"step-{step}.json").write_bytes(heavy_legal_index(step))
    assert all(len(path.read_bytes()) <= run_index.MAX_FILE_BYTES for path in (directory / "index").iterdir())
    process = subprocess.Popen([sys.executable, "-m", "skycap_viewer", "summary", "--json", str(directory)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with PeakMemory(process.pid) as peak:
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert peak.bytes < GIB, f"summary peaked at {peak.bytes / 2**20:.0f} MiB"
    for step in (5, 6):
        assert f"step-{step}.json: run index file ignored: holds 838,8" in err, err
    facts = json.loads(out)[0]["run_index"]
    assert facts["rows"] == rows_before + 2 * run_index.MAX_FILE_ROWS, facts
    with ServerProcess([directory]) as server, PeakMemory(server.process.pid) as peak:
        server.wait_indexed(timeout=240)  # 200k index rows: 15 s idle, past 60 s on CI's four busy workers
        served = server.get("/v1/runs")["data"][0]["run_index"]
        assert served["rows"] == facts["rows"] and len(served["damaged"]) == 2, served
        assert "Traceback" not in server.output()
    assert peak.bytes < GIB, f"the server peaked at {peak.bytes / 2**20:.0f} MiB"


def damage_step_3(root):
    path = record_dir(root, "new") / "index" / "step-3.json"
    path.write_text('{"format_version": 1, "rows": [')
    return path


def test_a_damaged_index_file_is_named_once_and_ignored(pulled, capsys):
    damaged = damage_step_3(pulled)
    web = InProcess(pulled)
    web.watcher.poll()
    web.watcher.poll()
    named = [line for line in capsys.readouterr().err.splitlines() if "step-3.json" in line]
    assert named == [f"skycap-viewer: {damaged}: run index file ignored: not JSON (Expecting value: line 1 "
                     "column 32 (char 31))"]
    expected = EXPECTED["new"]["records"]
    rows = rows_of(web, "train")
    for record_id, entry in expected.items():  # step 2's file still says what it says; step 3's is ignored
        if entry["in_index"] and entry["step"] == 2:
            assert rows[record_id]["trained"] == entry["trained"]
        else:
            assert "trained" not in rows[record_id]
    facts = next(run for run in web.json("/v1/runs")["data"] if run["id"] == "train")["run_index"]
    assert facts["files"] == 1 and facts["steps"] == [2] and facts["rows"] == 11
    assert facts["damaged"] == [{"file": "index/step-3.json", "problem": named[0].split("ignored: ")[1]}]
    assert facts["rows_without_record"] == sum(1 for row in EXPECTED["new"]["rows_without_record_here"]
                                               if row["step"] == 2)
    shutil.copy(PULLED / "new" / "train" / "index" / "step-3.json", damaged)  # repaired: read again at once
    web.watcher.poll()
    assert capsys.readouterr().err == ""
    rows = rows_of(web, "train")
    assert all(rows[r].get("trained") == e["trained"] for r, e in expected.items() if e["in_index"])
    facts = next(run for run in web.json("/v1/runs")["data"] if run["id"] == "train")["run_index"]
    assert facts["damaged"] == [] and facts["files"] == 2


@pytest.mark.slow
def test_the_real_server_names_a_damaged_index_file_once(pulled):
    damaged = damage_step_3(pulled)
    with ServerProcess([pulled]) as server:
        server.wait_indexed()
        time.sleep(5)  # two more polls
        trained = [r for r, entry in EXPECTED["new"]["records"].items() if entry["step"] == 2 and entry["trained"]]
        assert server.get("/v1/trajectories?run_id=train&trained=true")["total"] == len(trained)  # step 3: ignored
        output = server.output()
    assert output.count(str(damaged)) == 1, output
    assert "Traceback" not in output


def test_an_index_that_changes_changes_the_rows(web, pulled):
    directory = record_dir(pulled, "old")
    step_2 = directory / "index" / "train" / "step-2.json"
    document = json.loads(step_2.read_text())
    trained_one = next(row for row in document["rows"] if row["trained"] is True
                       and row["id"] in EXPECTED["old"]["records"])
    trained_one["trained"] = False
    step_2.write_text(json.dumps(document))
    web.watcher.poll()
    row = rows_of(web, "old")[trained_one["id"]]
    assert row["trained"] is False and "not-trained" in row["flags"]
    flagged = web.json("/v1/trajectories?run_id=old&flag=not-trained")
    assert flagged["total"] == 1 + sum(1 for entry in EXPECTED["old"]["records"].values() if not_trained(entry))
    assert band(flagged)["not-trained"] == flagged["total"]
    group = next(group for group in web.json("/v1/groups?run_id=old&limit=1000")["data"]
                 if trained_one["id"] in [member["id"] for member in group["rewards"]])
    assert group["rollup"].get("not-trained", 0) >= 1, "its group was computed again"
    shutil.rmtree(directory / "index")
    web.watcher.poll()
    rows = rows_of(web, "old")
    assert all("trained" not in row and "not-trained" not in row["flags"] for row in rows.values())
    assert "run_index" not in next(run for run in web.json("/v1/runs")["data"] if run["id"] == "old")
    assert web.json("/v1/trajectories?run_id=old&flag=not-trained")["total"] == 0


def test_index_files_are_read_again_only_when_they_change(pulled, monkeypatch):
    reads = []

    def counting(directory, name):
        reads.append(name)
        return read_index_file(directory, name)

    monkeypatch.setattr(catalog_index, "read_index_file", counting)
    web = InProcess(pulled)
    assert sorted(reads) == ["index/step-2.json", "index/step-3.json", "index/train/step-1.json",
                             "index/train/step-2.json"]
    web.watcher.poll()
    assert len(reads) == 4
    path = record_dir(pulled, "new") / "index" / "step-2.json"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    web.watcher.poll()
    assert reads[4:] == ["index/step-2.json"]


def test_the_run_index_is_bounded_in_rows(pulled, monkeypatch, capsys):
    monkeypatch.setattr(store, "MAX_ROWS", 15)  # step-2.json (11 rows) fits; step-3.json (9 more) does not
    web = InProcess(pulled)
    err = capsys.readouterr().err
    assert err.count("run index file ignored: the run index would hold more than 15 rows with it") == 3
    facts = {run["id"]: run.get("run_index") for run in web.json("/v1/runs")["data"]}
    assert facts["train"]["rows"] == 11 and [d["file"] for d in facts["train"]["damaged"]] == ["index/step-3.json"]
    assert facts["old"]["rows"] == 0 and facts["old"]["files"] == 0  # 16 and 18 rows: each over 15


def test_a_reopened_index_is_kept_and_still_named(pulled, tmp_path, capsys):
    damage_step_3(pulled)
    from skycap_viewer.catalog.index import Catalog
    from skycap_viewer.catalog.persisted import IndexFiles
    from skycap_viewer.catalog.watcher import Watcher

    def serve():
        catalog = Catalog([pulled], IndexFiles(tmp_path / "cache"))
        Watcher(catalog, verify=False).poll()
        return {snapshot.id: snapshot for snapshot in catalog.snapshots()}

    first = serve()
    second = serve()
    assert capsys.readouterr().err.count("step-3.json") == 2, "named once by each process"
    assert second["train"].run_index == first["train"].run_index
    assert {row["id"]: row.get("trained") for row in second["old"].rows} == {
        row["id"]: row.get("trained") for row in first["old"].rows}
    for snapshot in second.values():
        with sqlite3.connect(snapshot.database[0]) as db:
            assert db.execute("SELECT count(*) FROM index_files").fetchone()[0] == 2


@pytest.mark.parametrize("layout", LAYOUTS)
def test_summary_reports_the_same(pulled, layout):
    expected = EXPECTED[layout]
    directory = record_dir(pulled, layout)
    result = run_cli("summary", "--json", directory)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)[0]
    listed = [entry for entry in expected["records"].values() if entry["in_index"]]
    assert summary["run_index"] == {
        "files": len(expected["index_files"]),
        "phases": [expected["phase"]],
        "steps": expected["steps"],
        "rows": sum(step["rows"] for step in expected["counts_per_step"].values()),
        "rows_without_record": len(expected["rows_without_record_here"]),
        "records_listed": len(listed),
        "records_not_listed": len(expected["records_not_in_index"]),
        "trained": {name: sum(1 for entry in listed if entry["trained"] is value)
                    for name, value in (("true", True), ("false", False), ("null", None))},
        "superseded": sum(1 for entry in listed if entry["superseded"]),
        "not_trained": sum(1 for entry in listed if not_trained(entry)),
        "damaged": [],
    }
    assert summary["flags"]["not-trained"] == summary["run_index"]["not_trained"]
    text = run_cli("summary", directory)
    assert text.returncode == 0 and "run index" in text.stdout and "not-trained" in text.stdout
    assert f"{len(expected['rows_without_record_here'])} without a record here" in text.stdout


def test_summary_names_a_damaged_index_file_and_a_directory_without_one_is_unchanged(pulled):
    damaged = damage_step_3(pulled)
    result = run_cli("summary", "--json", record_dir(pulled, "new"))
    assert result.stderr.count(str(damaged)) == 1
    facts = json.loads(result.stdout)[0]["run_index"]
    assert facts["files"] == 1 and facts["damaged"][0]["file"] == "index/step-3.json"
    assert "run_index" not in json.loads(run_cli("summary", "--json", FIXTURES / "groups").stdout)[0]


def test_verifying_an_indexed_run_keeps_its_rows(pulled, monkeypatch):
    web = InProcess(pulled)  # the first poll indexes; the next one reads every record's sidecars
    before = {layout: rows_of(web, RUN_OF[layout]) for layout in LAYOUTS}
    stored = []
    put = store.RunStore.put
    monkeypatch.setattr(store.RunStore, "put", lambda self, name, *rest, **options: (
        stored.append(name), put(self, name, *rest, **options))[1])
    web.watcher.poll()
    assert all(s.verified == s.row_count for s in web.catalog.snapshots())
    assert stored == [], "a verified row equal to the stored one (what the index says included) is only marked"
    assert {layout: rows_of(web, RUN_OF[layout]) for layout in LAYOUTS} == before


def test_eval_rollouts_are_never_flagged_not_trained():
    assert run_index.Overlay(False, False, "train").not_trained
    assert not run_index.Overlay(False, False, "eval").not_trained
    assert not run_index.Overlay(False, True, "train").not_trained
    assert not run_index.Overlay(None, False, None).not_trained


def test_a_record_that_comes_and_goes_moves_between_the_rows_and_the_missing(web, pulled):
    directory = record_dir(pulled, "old")
    gone = next(r for r, entry in EXPECTED["old"]["records"].items() if not_trained(entry))
    kept = pulled.parent / "kept"
    kept.mkdir()
    for path in directory.glob(f"{gone}.*"):
        shutil.move(path, kept / path.name)
    web.watcher.poll()
    missing = web.json("/v1/trajectories?run_id=old&missing=true&limit=1000")
    assert gone in [row["id"] for row in missing["data"]]
    assert missing["total"] == len(EXPECTED["old"]["rows_without_record_here"]) + 1
    facts = next(run for run in web.json("/v1/runs")["data"] if run["id"] == "old")["run_index"]
    assert facts["rows_without_record"] == missing["total"]
    for path in kept.iterdir():
        shutil.move(path, directory / path.name)
    web.watcher.poll()
    assert web.json("/v1/trajectories?run_id=old&missing=true")["total"] == len(
        EXPECTED["old"]["rows_without_record_here"])
    assert "not-trained" in rows_of(web, "old")[gone]["flags"]


def test_a_record_listed_at_two_steps_takes_the_later_row(pulled):
    directory = record_dir(pulled, "new")
    step_2, step_3 = (directory / "index" / f"step-{n}.json" for n in (2, 3))
    early, late = json.loads(step_2.read_text()), json.loads(step_3.read_text())
    record_id = next(r for r, entry in EXPECTED["new"]["records"].items() if entry["step"] == 2 and entry["trained"])
    again = {**next(row for row in early["rows"] if row["id"] == record_id), "trained": False}
    late["rows"].append(again)
    step_3.write_text(json.dumps(late))
    web = InProcess(pulled)
    row = rows_of(web, "train")[record_id]
    assert row["trained"] is False and "not-trained" in row["flags"]
    result = run_cli("summary", "--json", directory)
    assert json.loads(result.stdout)[0]["run_index"]["not_trained"] == 1, "summary takes the same row"


def test_too_many_index_files_are_left_out_and_said_once(pulled, monkeypatch, capsys):
    monkeypatch.setattr(run_index, "MAX_FILES", 1)
    web = InProcess(pulled)
    web.watcher.poll()
    said = [line for line in capsys.readouterr().err.splitlines() if "run index files; only the first 1" in line]
    assert len(said) == 2, said  # once per run
    assert {run["id"]: run["run_index"]["files"] for run in web.json("/v1/runs")["data"]} == {"train": 1, "old": 1}


def test_a_file_that_does_not_say_its_phase_takes_its_place(tmp_path):
    for directory, phase in ((tmp_path / "run" / "eval", "eval"), (tmp_path / "records", None)):
        (directory / "index").mkdir(parents=True)
        (directory / "index" / "step-1.json").write_text(json.dumps({"format_version": 1, "rows": []}))
        assert read_index_file(directory, "index/step-1.json").phase == phase
    (tmp_path / "records" / "index" / "eval").mkdir()
    (tmp_path / "records" / "index" / "eval" / "step-1.json").write_text(json.dumps({"format_version": 1, "rows": []}))
    assert read_index_file(tmp_path / "records", "index/eval/step-1.json").phase == "eval"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_attempts_the_index_supersedes_do_not_count_in_their_groups(web, pulled, layout):
    """An attempt the run index calls superseded is listed under its group as one (`superseded_by` the
    attempt that replaced it, or null when that one is not in this copy), never counted, never raising
    `masked`; `summary` groups them the same."""
    run = RUN_OF[layout]
    said = {rid for rid, entry in EXPECTED[layout]["records"].items() if entry["in_index"] and entry["superseded"]}
    groups = web.json(f"/v1/groups?run_id={run}&limit=1000")["data"]
    counted = {member["id"] for group in groups for member in group["rewards"]}
    assert said and not said & counted
    shown_superseded = set()
    for group in groups:
        detail = web.json(f"/v1/groups/{urllib.parse.quote(group['key'], safe='')}?run_id={run}")
        shown_superseded |= {row["id"] for row in detail["superseded"]}
        stops = [member["stop_reason"] for member in group["rewards"]]
        assert ("masked" in group["flags"]) == any(stop in ("agent_timeout", "error") for stop in stops)
        assert group["n"] == len(group["rewards"]) and group["superseded_count"] == len(detail["superseded"])
    grouped = {row["id"] for row in rows_of(web, run).values() if row["annotations"] is not None} - {
        row["id"] for row in web.json(f"/v1/trajectories?run_id={run}&ungrouped=true&limit=1000")["data"]}
    assert said & grouped <= shown_superseded
    summary = json.loads(run_cli("summary", "--json", record_dir(pulled, layout)).stdout)[0]["groups"]
    sizes = {}
    for group in groups:
        sizes[str(group["n"])] = sizes.get(str(group["n"]), 0) + 1
    assert summary["count"] == len(groups) and summary["sizes"] == dict(sorted(sizes.items()))


def test_what_the_server_says_on_stderr_of_a_hostile_index_file_cannot_drive_the_terminal(tmp_path):
    """A damaged run index file is named on stderr with the row's id in it: an id holding a title set,
    a screen clear, a C1 CSI and a newline (a fake log line) is written escaped, on one line."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "spec", run)
    (run / "index").mkdir()
    hostile = "r\x1b]0;owned\x07\x1b[2J\x9b31m\nGET /fake 200"
    (run / "index" / "step-1.json").write_text(json.dumps({"format_version": 1, "step": 1,
                                                           "rows": [{"id": hostile, "trained": "yes"}]}))
    with ServerProcess([run]) as server:
        server.wait_indexed()
        said = server.output()
    line = next(text for text in said.splitlines() if "run index file ignored" in text)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x0aGET /fake 200" in line, line
    assert not any(ord(character) < 32 or 0x7f <= ord(character) <= 0x9f for character in said.replace("\n", ""))
