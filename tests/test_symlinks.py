"""Symlinks: followed wherever they lead (a folder of links to runs on other disks is a common way to
gather runs), but never silently: a run or a document whose real file is outside its root or run
directory says where it is, in `/v1/runs`, its rows, `check` and `summary`. A directory reached twice
(a second link, a loop) is one run, and no loop can hang discovery."""

import json
import os

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import BROKEN
from tests.support.records import copy_record
from tests.support.server_process import served


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """`root/local` (a real run, one document linked from elsewhere), `root/far` (a link to a run on
    "another disk"), `root/far-again` (a second link to it) and loops back up."""
    base = tmp_path_factory.mktemp("links")
    far = base / "disk2" / "run-far"
    far.mkdir(parents=True)
    copy_record(BROKEN, "tr_ok", far, "tr_far")
    shelf = base / "shelf"
    shelf.mkdir()
    copy_record(BROKEN, "tr_ok", shelf, "tr_linked")
    root = base / "root"
    local = root / "local"
    local.mkdir(parents=True)
    copy_record(BROKEN, "tr_ok", local, "tr_ok")
    for file in shelf.iterdir():  # the document and its sidecars, as git-annex or a dedup tool links them
        (local / file.name).symlink_to(file)
    (root / "far").symlink_to(far, target_is_directory=True)
    (root / "far-again").symlink_to(far, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    (local / "self").symlink_to(local, target_is_directory=True)
    return root, os.path.realpath(far), os.path.realpath(shelf / "tr_linked.json.zst")


@pytest.fixture(scope="module")
def server(tree):
    yield from served([tree[0]])


def test_a_linked_run_is_served_once_and_says_where_it_is(server, tree):
    root, far, _ = tree
    runs = {run["id"]: run for run in server.get("/v1/runs")["data"]}
    assert set(runs) == {"local", "far"}, "no second run through far-again or the loop"
    assert runs["far"]["path"] == str(root / "far")
    assert runs["far"]["symlink_to"] == far
    assert runs["local"]["symlink_to"] is None


def test_a_linked_document_is_read_and_says_where_it_is(server, tree):
    linked = tree[2]
    rows = {row["id"]: row for row in server.get("/v1/trajectories?run_id=local")["data"]}
    assert set(rows) == {"tr_ok", "tr_linked"}
    assert rows["tr_linked"]["symlink_to"] == linked and not rows["tr_linked"].get("unreadable")
    assert rows["tr_ok"]["symlink_to"] is None
    assert server.get("/v1/trajectories/tr_linked?run_id=local")["symlink_to"] == linked
    paths = server.get("/v1/trajectories/tr_linked/paths?run_id=local")
    assert paths["paths"] and not paths.get("tokens_error"), "its linked sidecars are read too"


def test_check_says_what_it_followed(tree):
    root, far, linked = tree
    result = run_cli("check", root, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    summaries = [line for line in result.stdout.splitlines() if "with problems" in line]
    assert len(summaries) == 2, summaries
    assert any(line.startswith(f"{root / 'far'} (symlink to {far}): 1 document") for line in summaries)
    assert any(f"1 document linked out of the directory, followed: tr_linked (symlink to {linked})" in line
               for line in summaries)
    payload = json.loads(run_cli("check", "--json", root, timeout=60).stdout)
    by_directory = {entry["directory"]: entry for entry in payload["directories"]}
    assert by_directory[str(root / "far")]["symlink_to"] == far
    assert by_directory[str(root / "local")]["symlinks"] == {"tr_linked": linked}


def test_summary_says_what_it_followed(tree):
    root, far, linked = tree
    result = run_cli("summary", root, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"far  ({root / 'far'} (symlink to {far}))" in result.stdout.splitlines()
    assert f"  symlinks            1 document linked out of the directory, followed: tr_linked (symlink to {linked})" \
        in result.stdout.splitlines()
    assert "far-again" not in result.stdout and "loop" not in result.stdout
