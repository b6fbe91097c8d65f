"""`skycap-viewer DIR...` as a user runs it: the URL line, errors that stop it, warnings, --demo, the log."""

import shutil
import socket
import subprocess
import sys
import time

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.server_process import ServerProcess


def error_line(result) -> str:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def wait_for_output(server, text, timeout=20):
    deadline = time.monotonic() + timeout
    while text not in server.output():
        assert time.monotonic() < deadline, f"the server never said {text!r}: {server.output()!r}"
        time.sleep(0.05)


def test_first_stdout_line_is_the_url(tmp_path):
    shutil.copytree(FIXTURES / "spec", tmp_path / "spec")
    process = subprocess.Popen([sys.executable, "-m", "skycap_viewer", str(tmp_path / "spec"), "--port", "0",
                                "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        assert "http://127.0.0.1:" in first and "1 run(s)" in first
        port = int(first.split("http://127.0.0.1:")[1].split("/")[0])
        assert port != 0
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
def test_missing_or_unusable_directories_exit_2(tmp_path):
    missing = tmp_path / "nothing"
    assert error_line(run_cli(missing)) == f"skycap-viewer: not a directory: {missing}"
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert "not a directory" in error_line(run_cli(a_file))
    assert "record directories" in error_line(run_cli())
    assert "--group-by" in error_line(run_cli(tmp_path, "--group-by", " , "))


def test_unreadable_directory_exits_2(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        assert "cannot read directory" in error_line(run_cli(locked, as_user=True))
    finally:
        locked.chmod(0o755)


def test_port_in_use_exits_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = error_line(run_cli(tmp_path, "--port", port))
    assert line.startswith(f"skycap-viewer: cannot listen on 127.0.0.1:{port}")


def test_non_loopback_host_needs_a_token_and_no_token_warns(tmp_path):
    shutil.copytree(FIXTURES / "spec", tmp_path / "spec")
    with ServerProcess([tmp_path / "spec"], "--host", "0.0.0.0", "--no-token") as server:
        wait_for_output(server, "with --no-token anyone")
        (warning,) = [line for line in server.output().splitlines() if "with --no-token anyone" in line]
        assert warning.startswith("skycap-viewer: warning: listening on 0.0.0.0")
        status, _ = server.raw("GET /healthz HTTP/1.1\nHost: localhost\nConnection: close\n")
        assert status == 200  # loopback reaches a wildcard bind
    with ServerProcess([tmp_path / "spec"], "--host", "0.0.0.0") as server:
        status, _ = server.raw("GET /healthz HTTP/1.1\nHost: localhost\nConnection: close\n")
        assert server.token and status == 401


def test_loopback_host_does_not_warn(tmp_path):
    shutil.copytree(FIXTURES / "spec", tmp_path / "spec")
    with ServerProcess([tmp_path / "spec"]) as server:
        server.wait_indexed()
        server.process.terminate()
        server.process.wait(timeout=10)
        assert "authentication" not in server.output()


def test_an_empty_directory_serves_and_says_so(tmp_path):
    with ServerProcess([tmp_path]) as server:
        wait_for_output(server, "no skycap records")
        assert server.get("/v1/runs")["data"] == []


def test_demo_serves_the_example_run():
    demo = FIXTURES.parent.parent.parent / "skycap_viewer" / "demo" / "records"
    documents = sorted(p.name for p in demo.glob("*.json.zst"))
    if not documents:
        pytest.skip("the demo records are not written yet")
    with ServerProcess([], "--demo") as server:
        (run,) = server.wait_indexed()
        assert run["trajectory_count"] == len(documents) and run["unreadable"] == 0
        rows = server.get(f"/v1/trajectories?run_id={run['id']}&limit=1000")["data"]
        assert len(rows) == len(documents)


def test_serving_starts_before_indexing_ends(tmp_path):
    run = tmp_path / "big"
    run.mkdir()
    for number in range(300):
        shutil.copyfile(FIXTURES / "groups-text" / "tr_g1a0a0.json.zst", run / f"tr_{number:04d}.json.zst")
    with ServerProcess([run]) as server:
        first = server.get("/v1/runs")["data"]
        assert [r["id"] for r in first] == ["big"]
        assert first[0]["indexed"] <= 300
        assert first[0]["indexing"] or first[0]["trajectory_count"] == 300  # counted once listed
        if first[0]["indexing"]:
            assert server.get("/v1/trajectories?run_id=big")["indexing"] is True
        (done,) = server.wait_indexed()
        assert done["indexed"] == 300 and done["indexing"] is False


def test_access_log_unless_quiet(tmp_path):
    shutil.copytree(FIXTURES / "spec", tmp_path / "spec")
    process = subprocess.Popen([sys.executable, "-m", "skycap_viewer", str(tmp_path / "spec"), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline().rsplit(":", 1)[1].strip().strip("/"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            while connection.recv(65536):
                pass
        line = process.stderr.readline()
        assert line.startswith("GET /healthz 200 ") and line.strip().endswith("ms")
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_run_two_levels_down_belongs_to_the_folder_it_is_in(tmp_path):
    for place in ("root/proj/run-a", "root/direct", "root/job-7/skycap"):
        shutil.copytree(FIXTURES / "spec", tmp_path / place)
    with ServerProcess([tmp_path / "root"]) as server:
        server.wait_indexed()
        projects = {run["id"]: run["project"] for run in server.get("/v1/runs")["data"]}
    assert projects == {"run-a": "proj", "direct": "root", "job-7": "root"}
