"""Live updates: records and runs change on disk while the real server runs, and it follows."""

import json
import os
import shutil

import pytest

from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.corpus import FIXTURES
from tests.support.in_process import InProcess
from tests.support.records import copy_record
from tests.support.server_process import ServerProcess, wait_for


def ids(server, run_id):
    return {row["id"] for row in server.get(f"/v1/trajectories?run_id={run_id}&limit=1000")["data"]}


@pytest.mark.slow
def test_records_and_runs_appear_change_and_go(tmp_path):
    root = tmp_path / "runs"
    run = root / "live"
    run.mkdir(parents=True)
    copy_record(FIXTURES / "groups-text", "tr_g1a0a0", run)
    with ServerProcess([root]) as server:
        server.wait_indexed()
        assert ids(server, "live") == {"tr_g1a0a0"}
        _, headers, _ = server.request("/v1/trajectories?run_id=live")
        etag = headers["ETag"]

        copy_record(FIXTURES / "groups-text", "tr_g1a1a0", run)
        wait_for(lambda: ids(server, "live") == {"tr_g1a0a0", "tr_g1a1a0"}, "a new record")
        status, _, _ = server.request("/v1/trajectories?run_id=live", headers={"If-None-Match": etag})
        assert status == 200, "a changed listing must not answer 304"

        before = server.get("/v1/trajectories/tr_g1a0a0?run_id=live")
        assert before["annotations"]["reward"] == 1
        # rewrite tr_g1a0a0 with another record's content (same id in the file name, so malformed)
        copy_record(FIXTURES / "spec", "tr_text", run, file_id="tr_g1a0a0")
        def rewritten():
            row = server.get("/v1/trajectories/tr_g1a0a0?run_id=live")
            return row if row["revision"] != before["revision"] else None

        changed = wait_for(rewritten, "a rewritten record")
        assert changed["annotations"] == {"reward": 0.0}
        assert changed["record_problems"], "its document id differs from its file name"
        flagged = server.get("/v1/trajectories?run_id=live&flag=malformed-record")["data"]
        assert [row["id"] for row in flagged] == ["tr_g1a0a0"]
        paths = server.get("/v1/trajectories/tr_g1a0a0/paths?run_id=live")
        assert paths["trajectory"]["annotations"] == {"reward": 0.0}

        (run / "tr_g1a1a0.json.zst").unlink()
        wait_for(lambda: ids(server, "live") == {"tr_g1a0a0"}, "a deleted record")
        server.get("/v1/trajectories/tr_g1a1a0?run_id=live", expect=404)

        (run / "broken.json.zst").write_bytes(b"\x00not a record")
        wait_for(lambda: "broken" in ids(server, "live"), "an unreadable record")
        assert server.get("/v1/trajectories/broken?run_id=live")["unreadable"] is True

        second = root / "second"
        second.mkdir()
        copy_record(FIXTURES / "spec", "tr_tokens", second)
        runs = wait_for(
            lambda: {r["id"]: r for r in server.get("/v1/runs")["data"] if not r["indexing"]}.get("second"),
            "a new run directory")
        assert runs["trajectory_count"] == 1 and ids(server, "second") == {"tr_tokens"}

        shutil.rmtree(second)
        wait_for(lambda: "second" not in {r["id"] for r in server.get("/v1/runs")["data"]}, "a removed run")


def test_a_rewrite_that_keeps_size_and_mtime_is_noticed(tmp_path):
    """A record rewritten through a temporary file and a rename, its mtime set back (`utime`), and of the
    same size: the index reads it again (its inode and status-change time moved)."""
    run = tmp_path / "run"
    run.mkdir()
    copy_record(FIXTURES / "groups-text", "tr_g1a0a0", run)
    path = run / "tr_g1a0a0.json.zst"
    document = json.loads(decompress_one_frame(path.read_bytes()))
    assert document["annotations"]["reward"] == 1
    document["annotations"]["reward"] = 0
    written = compress(json.dumps(document, separators=(",", ":")).encode())
    for pad in range(200):  # the same number of bytes as the file it replaces
        if len(written) == path.stat().st_size:
            break
        document["meta"]["pad"] = "x" * pad
        written = compress(json.dumps(document, separators=(",", ":")).encode())
    assert len(written) == path.stat().st_size
    an_hour_ago = path.stat().st_mtime_ns - 3600 * 10**9  # long settled: no "written just now" re-read covers it
    os.utime(path, ns=(an_hour_ago, an_hour_ago))
    web = InProcess(tmp_path)
    try:
        listed = lambda: web.json("/v1/trajectories?run_id=run")["data"][0]["annotations"]["reward"]  # noqa: E731
        assert listed() == 1
        web.watcher.poll()  # verified now: only a new version of the file makes it read again
        before = path.stat()
        temporary = run / ".tr_g1a0a0.json.zst.tmp"
        temporary.write_bytes(written)
        os.replace(temporary, path)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        web.watcher.poll()
        assert listed() == 0
    finally:
        web.close()
