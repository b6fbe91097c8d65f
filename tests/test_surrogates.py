"""Any valid JSON string is shown: a lone surrogate (`\\ud800`, valid JSON, no UTF-8 form) in a message
and in `meta` leaves the record readable on every route and in every command, whose output stays
valid UTF-8 (the escape written where UTF-8 has no form)."""

import json
import os
import subprocess
import sys

import pytest

from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.corpus import FIXTURES
from tests.support.in_process import InProcess
from tests.support.records import copy_record

ROUTES = ["/v1/trajectories?run_id=run", "/v1/trajectories/tr_text?run_id=run",
          "/v1/trajectories/tr_tokens/paths?run_id=run", "/v1/trajectories/tr_tokens/paths/0/messages?run_id=run",
          "/v1/trajectories/tr_text/paths/0/messages?run_id=run", "/v1/trajectories/tr_tokens/graph?run_id=run",
          "/v1/trajectories/tr_tokens/paths/0/row?run_id=run", "/v1/trajectories/tr_text/snapshot?run_id=run",
          "/v1/compare?run_id=run&a=tr_tokens&b=tr_text", "/v1/search?run_id=run&text=lone&in=message",
          "/v1/trajectories/export?run_id=run"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("surrogates")
    run = root / "run"
    run.mkdir()
    for record_id in ("tr_tokens", "tr_text"):
        copy_record(FIXTURES / "spec", record_id, run)
        path = run / f"{record_id}.json.zst"
        document = json.loads(decompress_one_frame(path.read_bytes()))
        document["nodes"][0]["message"]["content"] = "lone \ud800 here"
        document["meta"]["note"] = "meta \udfff"
        path.write_bytes(compress(json.dumps(document).encode()))  # json.dumps writes them as \u escapes
    return root


def test_every_route_answers_valid_utf8_with_the_string_as_its_escape(root):
    web = InProcess(root)
    try:
        for target in ROUTES:
            response = web.get(target)
            assert response.status == 200, (target, response.body[:200])
            response.body.decode("utf-8")  # strictly valid
        rows = web.json("/v1/trajectories?run_id=run")["data"]
        assert {row["id"]: row.get("unreadable") for row in rows} == {"tr_text": None, "tr_tokens": None}
        # the header is the record's stored row: U+FFFD where UTF-8 has no form (the messages keep the escape)
        assert web.json("/v1/trajectories/tr_text?run_id=run")["meta"]["note"] == "meta \ufffd"
        messages = web.json("/v1/trajectories/tr_text/paths/0/messages?run_id=run")["messages"]
        assert messages[0]["content"] == "lone \ud800 here"
    finally:
        web.close()


@pytest.mark.parametrize("args", [["show", "run/tr_text.json.zst"], ["show", "run/tr_tokens.json.zst", "--html"],
                                  ["diff", "run", "tr_tokens", "tr_text"], ["grep", "run", "lone", "--in", "message"],
                                  ["export", "run"], ["summary", "run"], ["check", "run"]])
def test_every_command_prints_it_without_a_traceback(root, args):
    result = subprocess.run([sys.executable, "-m", "skycap_viewer", *args], cwd=root, capture_output=True,
                            timeout=120)
    assert result.returncode == 0 and result.stderr == b"", result.stderr[-500:]
    text = result.stdout.decode("utf-8")  # strictly valid: no lone surrogate reached the output raw
    shown = {"grep": "\\ud800", "export": "meta \ufffd", "show": "lone \ufffd here"}  # escaped, or replaced
    if args[0] in shown and "--html" not in args:
        assert shown[args[0]] in text


def with_surrogates(run, record_id: str, as_name: str, change) -> None:
    """Copy `record_id` as `as_name` into `run`, its document changed by `change` (written with escapes)."""
    copy_record(FIXTURES / "spec", record_id, run, file_id=as_name)
    path = run / f"{as_name}.json.zst"
    document = json.loads(decompress_one_frame(path.read_bytes()))
    document["id"] = as_name
    change(document)
    path.write_bytes(compress(json.dumps(document).encode()))


LISTED_FIELDS = {  # every field a row keeps as a column or a count, given a lone surrogate
    "task": lambda d: d["meta"].update(task_id="task \ud800"),
    "instance": lambda d: d["meta"].update(instance_id="instance \udbff"),
    "status": lambda d: d.update(status="failed \udc00"),
    "annotation_key": lambda d: d["annotations"].update({"key \ud801": 1}),
    "annotation_value": lambda d: d["annotations"].update(judge="value \udfff"),
}


def test_a_lone_surrogate_in_a_listed_field_is_its_record_shown_replaced_never_the_runs_stall(tmp_path):
    """Each record is listed (with U+FFFD where UTF-8 has no form) and opens; the run is indexed, not
    "indexing" forever; the run index's rows with one in their id or status leave the run readable."""
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    copy_record(FIXTURES / "spec", "tr_text", run)
    for name, change in LISTED_FIELDS.items():
        with_surrogates(run, "tr_text", name, change)
    (run / "index").mkdir()
    (run / "index" / "step-1.json").write_text(json.dumps({"format_version": 1, "step": 1, "rows": [
        {"id": "task", "status": "ok \ud800", "trained": True}, {"id": "gone \udfff", "trained": False}]}))
    web = InProcess(tmp_path / "root")
    try:
        runs = web.json("/v1/runs")["data"]
        assert [run["indexing"] for run in runs] == [False], runs
        rows = {row["id"]: row for row in web.json("/v1/trajectories?run_id=run&limit=100")["data"]}
        assert set(rows) == {"tr_text", *LISTED_FIELDS}
        assert not any(row.get("unreadable") for row in rows.values())
        assert rows["task"]["task_id"] == "task \ufffd" and rows["status"]["status"] == "failed \ufffd"
        assert rows["annotation_key"]["annotations"]["key \ufffd"] == 1
        for name in LISTED_FIELDS:
            assert web.get(f"/v1/trajectories/{name}?run_id=run").status == 200, name
        assert web.get("/v1/trajectories?run_id=run&status=failed%20%EF%BF%BD").json()["data"][0]["id"] == "status"
        assert web.get("/v1/trajectories/export?run_id=run").status == 200
    finally:
        web.server.api.searches.close()
        web.server.server_close()


def test_a_lone_surrogate_escaped_in_capitals_is_stored_replaced_too(tmp_path):
    """An index row is walked for lone surrogates only when its document's text may hold one (a `\\ud` escape,
    either case: JSON's hex digits may be capitals); a document writing `\\uDFFF` is listed replaced."""
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    with_surrogates(run, "tr_text", "capitals", lambda d: d["meta"].update(task_id="task \udfff"))
    path = run / "capitals.json.zst"
    text = decompress_one_frame(path.read_bytes()).decode()
    assert "\\udfff" in text
    path.write_bytes(compress(text.replace("\\udfff", "\\uDFFF").encode()))
    web = InProcess(tmp_path / "root")
    try:
        rows = web.json("/v1/trajectories?run_id=run&limit=100")["data"]
        assert [(row["id"], row["task_id"]) for row in rows] == [("capitals", "task \ufffd")]
    finally:
        web.server.api.searches.close()
        web.server.server_close()


def test_a_file_name_that_is_not_utf8_is_named_and_the_rest_of_its_run_is_listed(tmp_path, capsys):
    """Its name has no UTF-8 form (lone surrogates once decoded), so no row of it can be stored: it is
    named once on stderr, and the run's other records are indexed, not "indexing" forever."""
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    copy_record(FIXTURES / "spec", "tr_text", run)
    os.link(run / "tr_text.json.zst", os.fsencode(run) + b"/bad\xff.json.zst")
    web = InProcess(tmp_path / "root")
    try:
        assert [run["indexing"] for run in web.json("/v1/runs")["data"]] == [False]
        assert [row["id"] for row in web.json("/v1/trajectories?run_id=run")["data"]] == ["tr_text"]
    finally:
        web.server.api.searches.close()
        web.server.server_close()
    said = capsys.readouterr().err
    assert said.count("bad\\udcff.json.zst: skipped: its file name is not UTF-8") == 1, said


def test_a_lone_surrogate_in_a_run_index_files_phase_is_shown_replaced_never_the_runs_stall(tmp_path):
    """The file's phase is kept in the run's database: written with U+FFFD, the file read, the run listed
    (the watcher failed on every poll, and nothing of the run was listed)."""
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    copy_record(FIXTURES / "spec", "tr_text", run)
    (run / "index").mkdir()
    (run / "index" / "step-1.json").write_text(json.dumps({"format_version": 1, "step": 1, "phase": "tr\ud800",
                                                           "rows": [{"id": "tr_text", "trained": False}]}))
    web = InProcess(tmp_path / "root")
    try:
        (listed,) = web.json("/v1/runs")["data"]
        assert listed["run_index"]["phases"] == ["tr\ufffd"] and listed["run_index"]["damaged"] == []
        (row,) = web.json("/v1/trajectories?run_id=run")["data"]
        assert row["trained"] is False and "not-trained" in row["flags"]
    finally:
        web.close()
