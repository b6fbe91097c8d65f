"""A directory skyrl-capture wrote is not a skycap v1 record directory: skipped whole and said once.

skyrl-capture (a neighbouring tool) keeps `manifest.json` (with a `record_version`) and its shards
under `committed/<shard>/`. Here the shards hold real skycap records, copied, so only the guard keeps
them from being listed as runs; a manifest without `record_version` (the control) lets them through.
"""

import json
import os
import shutil

import pytest

from skycap_viewer.catalog.discovery import discover_runs, skyrl_capture_version
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.in_process import InProcess
from tests.support.records import copy_record
from tests.support.server_process import ServerProcess, wait_for
from tests.support.skyrl_capture import capture_tree

SPEC = FIXTURES / "spec"


@pytest.fixture
def root(tmp_path):
    """`job-7` (a skycap run) beside `capture` (skyrl-capture's)."""
    root = tmp_path / "root"
    (root / "job-7").mkdir(parents=True)
    copy_record(SPEC, "tr_tokens", root / "job-7", "tr_tokens")
    capture_tree(root / "capture")
    return root


def said(directory) -> str:
    return (f"skycap-viewer: {directory}: written by skyrl-capture (record_version 3), "
            "not a skycap v1 record directory: skipped")


def test_its_shards_are_runs_only_without_the_guard(tmp_path):
    guarded = capture_tree(tmp_path / "guarded")
    skipped = []
    assert discover_runs([guarded], skipped=skipped) == []
    assert [entry.line() for entry in skipped] == [said(guarded)]
    control = capture_tree(tmp_path / "control", b'{"shards": []}')  # no record_version: not skyrl-capture's
    assert [run.id for run in discover_runs([control])] == ["shard-0000", "shard-0001"]


def test_a_strange_manifest_costs_a_bounded_read_and_never_fails(tmp_path):
    huge = capture_tree(tmp_path / "huge", b'{"record_version": 3, "pad": "')
    with open(huge / "manifest.json", "r+b") as handle:
        handle.truncate(2**34)  # 16 GiB, sparse: read whole, it would never fit
    assert skyrl_capture_version(huge) == "3"
    late = capture_tree(tmp_path / "late", b'{"pad": "' + b" " * 2**17 + b'", "record_version": 3}')
    assert skyrl_capture_version(late) is None  # past the first 64 KiB: not looked for
    assert skyrl_capture_version(capture_tree(tmp_path / "not-json", b"\x00\xff record_version")) is None
    assert skyrl_capture_version(capture_tree(tmp_path / "text", b'"record_version": "2.1-rc"')) == "2.1-rc"
    folder = capture_tree(tmp_path / "folder", b"")
    (folder / "manifest.json").unlink()
    (folder / "manifest.json").mkdir()
    fifo = capture_tree(tmp_path / "fifo", b"")
    (fifo / "manifest.json").unlink()
    os.mkfifo(fifo / "manifest.json")  # opened without blocking, and not read
    for directory in (folder, fifo):
        assert skyrl_capture_version(directory) is None
        assert [run.id for run in discover_runs([directory])] == ["shard-0000", "shard-0001"]


def test_summary_names_it_once_and_lists_the_run_beside_it(root):
    result = run_cli("summary", root, root / "capture")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"job-7  ({root / 'job-7'})")
    assert "shard" not in result.stdout and "tr_shard" not in result.stdout
    assert result.stderr.splitlines() == [said(root / "capture")]
    as_json = run_cli("summary", root, "--json")
    assert [run["run"] for run in json.loads(as_json.stdout)] == ["job-7"]
    alone = run_cli("summary", root / "capture")
    assert alone.returncode == 2
    assert alone.stderr.splitlines()[0] == said(root / "capture")
    assert "no skycap records" in alone.stderr


def test_check_names_it_once_and_checks_the_run_beside_it(root):
    result = run_cli("check", root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [f"{root / 'job-7'}: 1 document, 0 with problems"]
    assert result.stderr.splitlines() == [said(root / "capture")]
    as_json = run_cli("check", root, "--json")
    assert [d["directory"] for d in json.loads(as_json.stdout)["directories"]] == [str(root / "job-7")]
    alone = run_cli("check", root / "capture" / "")
    assert alone.returncode == 2
    assert "no skycap records" in alone.stderr and "skyrl-capture (record_version 3)" in alone.stderr


def test_the_watcher_says_it_once_not_every_poll(root, capsys):
    web = InProcess(root)
    web.watcher.poll()
    web.watcher.poll()
    assert capsys.readouterr().err.splitlines() == [said(root / "capture")]
    assert [run["id"] for run in web.json("/v1/runs")["data"]] == ["job-7"]
    web.close()


def test_the_server_lists_no_shard_and_says_it_once(root):
    with ServerProcess([root, root / "capture"]) as server:  # the second root would find its shards
        server.wait_indexed()
        assert [run["id"] for run in server.get("/v1/runs")["data"]] == ["job-7"]
        shutil.copytree(root / "job-7", root / "job-8")  # a new run: listed once a later poll has run
        wait_for(lambda: len(server.get("/v1/runs")["data"]) == 2, "job-8 listed")
        ids = [run["id"] for run in server.get("/v1/runs")["data"]]
        output = server.output()
    assert sorted(ids) == ["job-7", "job-8"]  # a run still indexing is ordered by its directory's time
    assert output.count("skyrl-capture") == 1, output
    assert said(root / "capture") in output.splitlines()
    assert "Traceback" not in output
