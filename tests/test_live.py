"""Live updates: records and runs change on disk while the real server runs, and it follows."""

import os
import shutil

import pytest

from tests.conftest import FIXTURES
from tests.server_process import ServerProcess, wait_for


def copy_record(source_dir, record_id, target_dir, as_name=None):
    """Copy a record's sidecars first and its document last, through a temporary name (as skycap writes)."""
    files = sorted(source_dir.glob(f"{record_id}.*"), key=lambda p: p.name.endswith(".json.zst"))
    for source in files:
        name = source.name if as_name is None else source.name.replace(record_id, as_name)
        temporary = target_dir / f".{name}.tmp"
        shutil.copyfile(source, temporary)
        os.replace(temporary, target_dir / name)


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
        copy_record(FIXTURES / "spec", "tr_text", run, as_name="tr_g1a0a0")
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
