"""Fault paths while serving: runs and files that vanish, turn into something else, and come back.

The server watches the disk on its own, so each test changes the disk under a running server and
polls until the change shows (bounded; the bound only turns a hang into a failure). Throughout,
no route answers 5xx, the other runs keep serving, and the server recovers when things are put
back. A port already in use is tested with the command line in `test_serve_cli.py`.
"""

import contextlib
import os
import shutil
from urllib.parse import quote

import pytest

from tests.support.corpus import FIXTURES
from tests.support.server_process import ServerProcess, wait_for


def runs_of(server) -> dict:
    return {run["id"]: run for run in server.get("/v1/runs")["data"]}


def all_routes_answer(server, run_id: str, record_ids) -> dict:
    """Status of the run's listing and of each record's rollout; asserts none is a 5xx."""
    statuses = {}
    for target in [f"/v1/trajectories?run_id={run_id}", f"/v1/groups?run_id={run_id}"] + [
        f"/v1/trajectories/{quote(r, safe='')}/paths?run_id={run_id}" for r in record_ids
    ]:
        status, _, body = server.request(target)
        assert status < 500, (target, status, body[:300])
        statuses[target] = status
    return statuses


def serves_fully(server, run_id: str, record_ids) -> bool:
    run = runs_of(server).get(run_id)
    if not run or run.get("indexing") or run["trajectory_count"] != len(record_ids):
        return False
    return set(all_routes_answer(server, run_id, record_ids).values()) == {200}


def ids_in(directory) -> list[str]:
    return sorted(p.name[: -len(".json.zst")] for p in directory.glob("*.json.zst"))


@pytest.fixture
def served(tmp_path):
    """`root/steady` and `root/moving` (copies of two corpus runs) under one running server."""
    with serving_two(tmp_path) as served:
        yield served


@contextlib.contextmanager
def serving_two(tmp_path, as_user=False):
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "spec", root / "steady")
    shutil.copytree(FIXTURES / "groups-text", root / "moving")
    with ServerProcess([root], as_user=as_user) as server:
        server.wait_indexed()
        yield server, root, ids_in(root / "steady"), ids_in(root / "moving")
        assert "Traceback" not in server.output(), server.output()[-3000:]


def vanish_and_return(server, root, steady, moving, take_away, put_back):
    """Take the run away, check it goes (and nothing breaks), put it back, check it returns."""
    take_away()

    def gone():
        run = runs_of(server).get("moving")
        return run is None or run.get("error") or run["trajectory_count"] == 0

    wait_for(gone, "the vanished run is still listed as if nothing happened")
    run = runs_of(server).get("moving")
    print("the run gone:", run)
    if run is not None and run.get("error"):
        assert str(root / "moving") in run["error"], run["error"]
    for status in all_routes_answer(server, "moving", moving[:3]).values():
        assert status in (200, 404)
    assert serves_fully(server, "steady", steady)
    put_back()
    wait_for(lambda: serves_fully(server, "moving", moving), "the run did not come back")
    assert serves_fully(server, "steady", steady)


@pytest.mark.slow
def test_a_run_directory_moved_away_and_back(served, tmp_path):
    server, root, steady, moving = served
    aside = tmp_path / "aside"
    vanish_and_return(server, root, steady, moving,
                      lambda: os.rename(root / "moving", aside),
                      lambda: os.rename(aside, root / "moving"))


@pytest.mark.slow
def test_a_run_directory_deleted_and_recreated(served):
    server, root, steady, moving = served
    vanish_and_return(server, root, steady, moving,
                      lambda: shutil.rmtree(root / "moving"),
                      lambda: shutil.copytree(FIXTURES / "groups-text", root / "moving"))


@pytest.mark.slow
def test_a_run_directory_replaced_by_a_file(served, tmp_path):
    """As root a directory cannot be made unreadable with chmod; a file in its place can't be listed."""
    server, root, steady, moving = served
    aside = tmp_path / "aside"

    def replace():
        os.rename(root / "moving", aside)
        (root / "moving").write_text("not a directory")

    def restore():
        (root / "moving").unlink()
        os.rename(aside, root / "moving")

    vanish_and_return(server, root, steady, moving, replace, restore)


def test_a_run_directory_made_unreadable(tmp_path):
    with serving_two(tmp_path, as_user=True) as (server, root, steady, moving):
        try:
            vanish_and_return(server, root, steady, moving,
                              lambda: (root / "moving").chmod(0),
                              lambda: (root / "moving").chmod(0o755))
        finally:
            (root / "moving").chmod(0o755)


@pytest.mark.slow
def test_the_served_root_itself_disappears(tmp_path):
    """The directory named on the command line goes away: the server waits for it."""
    run = tmp_path / "only"
    shutil.copytree(FIXTURES / "spec", run)
    records = ids_in(run)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        shutil.rmtree(run)
        wait_for(lambda: all(r["trajectory_count"] == 0 or r.get("error") for r in runs_of(server).values()),
                 "the vanished root still lists its records")
        print("the root gone:", runs_of(server))
        assert server.get("/healthz")["status"] == "ok"
        for status in all_routes_answer(server, "only", records[:3]).values():
            assert status in (200, 404)
        shutil.copytree(FIXTURES / "spec", run)
        wait_for(lambda: serves_fully(server, "only", records), "the root did not come back")
        assert "Traceback" not in server.output()


def test_sidecars_that_go_away_and_come_back(served, tmp_path):
    """A mirror sync in progress: a record's tokens vanish, then return damaged, then intact."""
    server, root, steady, moving = served
    record = "tr_tokens"
    sidecar = root / "steady" / f"{record}.tokens.zst"
    kept = sidecar.read_bytes()
    url = f"/v1/trajectories/{record}/paths?run_id=steady"
    assert server.get(url)["text_only"] is None
    sidecar.unlink()
    assert server.get(url)["text_only"] == "tokens-missing"
    sidecar.write_bytes(kept[: len(kept) // 2])
    shown = server.get(url)
    assert shown["text_only"] == "tokens-unreadable" and "truncated" in shown["tokens_error"]
    sidecar.write_bytes(kept)
    assert server.get(url)["text_only"] is None
    assert serves_fully(server, "steady", steady)


@pytest.mark.slow
def test_a_document_replaced_by_a_directory_and_back(served, tmp_path):
    server, root, steady, moving = served
    document = root / "steady" / "tr_text.json.zst"
    kept = document.read_bytes()
    document.unlink()
    document.mkdir()

    def listed_unreadable():
        rows = {r["id"]: r for r in server.get("/v1/trajectories?run_id=steady&limit=1000")["data"]}
        row = rows.get("tr_text")
        return row if row and row.get("unreadable") else None

    row = wait_for(listed_unreadable, "a directory named like a document is not shown as unreadable")
    assert "directory" in row["error"]
    assert all_routes_answer(server, "steady", ["tr_text"])
    document.rmdir()
    document.write_bytes(kept)
    wait_for(lambda: serves_fully(server, "steady", steady), "the document did not come back")


@pytest.mark.slow
def test_a_vanished_root_is_reported(tmp_path):
    """The directory named on the command line goes away: the server says so once (one line)."""
    run = tmp_path / "only"
    shutil.copytree(FIXTURES / "spec", run)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        shutil.rmtree(run)
        wait_for(lambda: str(run) in server.output(), "nothing said that the served directory is gone")
        line = next(line for line in server.output().splitlines() if str(run) in line)
        assert line.startswith("skycap-viewer: ") and "Traceback" not in server.output()
        shutil.copytree(FIXTURES / "spec", run)
        wait_for(lambda: serves_fully(server, "only", ids_in(run)), "the root did not come back")
