"""The viewer is read-only: record directories are byte-for-byte the same after it has run.

A fingerprint of a tree is every entry's kind, permission bits, modification time, and content
hash (or link target). Each session test takes a fresh copy of the corpus, fingerprints it, then does
what a user does (serves it without and with the persisted index, even with the cache directory
pointed into a run, polling and opening every rollout in every view; or runs `check`, `summary`
and `show`) and fingerprints it again. A guard fixture checks at the very end of the test
session that the copy every other server test used still equals the source fixtures, and that
the source equals the commit.
"""

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES, NOT_CORPUS, PULLED, copy_corpus
from tests.support.server_process import ServerProcess


def fingerprint(root: Path) -> dict:
    """relative path -> (kind, mode, mtime, content hash or link target) for every entry."""
    entries = {}
    for directory, names, files in os.walk(root):
        for name in names + files:
            path = Path(directory) / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                what = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                what = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                what = None
            entries[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode),
                                                     info.st_mtime_ns, what)
    top = root.lstat()
    entries["."] = (stat.S_IFMT(top.st_mode), stat.S_IMODE(top.st_mode), top.st_mtime_ns, None)
    return entries


def contents(root: Path) -> dict:
    """relative path -> content hash: what a copy must share with its source."""
    return {name: entry[3] for name, entry in fingerprint(root).items() if entry[0] != stat.S_IFDIR}


def differences(before: dict, after: dict) -> list[str]:
    return [f"{name}: {before.get(name)} -> {after.get(name)}"
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]


def use_everything(server) -> int:
    """Every route the page uses, on every run, group and rollout; returns how many rollouts."""
    opened = 0
    for route in ("/healthz", "/__viewer", "/", "/v1/runs?refresh=true"):
        assert server.request(route)[0] == 200
    for run in server.get("/v1/runs")["data"]:
        run_id = run["id"]
        server.get(f"/v1/trajectories?run_id={run_id}&limit=1000&sort=health")
        for group in server.get(f"/v1/groups?run_id={run_id}&limit=1000")["data"]:
            server.get(f"/v1/groups/{quote(group['key'], safe='')}?run_id={run_id}")
        for row in server.get(f"/v1/trajectories?run_id={run_id}&limit=1000")["data"]:
            base = f"/v1/trajectories/{quote(row['id'], safe='')}"
            for view in ("", "/paths", "/paths?text=false", "/graph", "/exchanges", "/forks?a=0&b=1",
                         "/paths/0/row", "/paths/0/messages"):
                separator = "&" if "?" in view else "?"
                status, _, body = server.request(f"{base}{view}{separator}run_id={run_id}")
                assert status < 500, body[:300]
            assert server.request(f"{base}/paths?run_id={run_id}", method="HEAD")[0] < 500
            opened += 1
    return opened


def serve_and_use(records: Path, home: Path, cache_home: Path | None = None) -> int:
    """One server session over `records`; `cache_home` None runs it with `--no-cache`."""
    with ServerProcess([records], env={"HOME": str(home)}, cache_home=cache_home) as server:
        server.wait_indexed()
        opened = use_everything(server)
        assert "Traceback" not in server.output()
    return opened


def served_without_the_persisted_index(records: Path, home: Path):
    assert serve_and_use(records, home) == len(list(records.rglob("*.json.zst")))


def served_with_the_persisted_index_twice(records: Path, home: Path):
    serve_and_use(records, home, cache_home=home / ".cache")
    assert any((home / ".cache").rglob("*")), "the persisted index was not written where it belongs"
    serve_and_use(records, home, cache_home=home / ".cache")  # a second start reads what the first persisted


def served_with_the_cache_pointed_into_a_run(records: Path, home: Path):
    serve_and_use(records, home, cache_home=records / "spec")  # it must not land there


def read_by_the_terminal_commands(records: Path, home: Path):
    run_dirs = sorted({p.parent for p in records.rglob("*.json.zst")})
    for arguments in (["check", *run_dirs], ["check", "--json", *run_dirs], ["summary", *run_dirs],
                      ["summary", "--json", *run_dirs]):
        result = run_cli(*arguments, env={**os.environ, "HOME": str(home)})
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
    for document in [sorted(directory.glob("*.json.zst"))[-1] for directory in run_dirs]:
        for extra in ([], ["--json"]):
            result = run_cli("show", document, *extra, env={**os.environ, "HOME": str(home)})
            assert "Traceback" not in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("session", [served_without_the_persisted_index, served_with_the_persisted_index_twice,
                                     served_with_the_cache_pointed_into_a_run, read_by_the_terminal_commands],
                         ids=lambda session: session.__name__)
@pytest.mark.slow
def test_a_full_session_leaves_every_record_file_untouched(tmp_path, session):
    """Each kind of session on its own fresh copy (so they can run side by side)."""
    records, home = tmp_path / "records", tmp_path / "home"
    copy_corpus(records, symlinks=True)
    for layout in ("new", "old"):  # runs with a run index (`index/`), in both layouts: read, never written
        shutil.copytree(PULLED / layout, records / f"pulled-{layout}", symlinks=True)
    home.mkdir()
    source_before, before = fingerprint(FIXTURES), fingerprint(records)
    session(records, home)
    assert differences(before, fingerprint(records)) == []
    assert differences(source_before, fingerprint(FIXTURES)) == []


def assert_source_is_committed():
    """The source fixtures equal the commit: no changed, added or ignored file (needs git)."""
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--ignored", "--", str(FIXTURES)],
                                capture_output=True, text=True, cwd=FIXTURES, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "git is not available"
    if status.returncode != 0:
        return "not a git checkout"
    assert status.stdout == "", f"the source fixtures changed:\n{status.stdout}"
    return None


def source_corpus() -> dict:
    """What the shared corpus copy holds of the source: all of it but `pulled/` (see `copy_corpus`)."""
    return {name: digest for name, digest in contents(FIXTURES).items() if name.split("/")[0] not in NOT_CORPUS}


@pytest.fixture(scope="session")
def corpus_guard(corpus):
    """Torn down when the whole session ends: the shared corpus copy is still the source."""
    assert contents(corpus) == source_corpus()
    yield
    assert differences(source_corpus(), contents(corpus)) == [], "a test session wrote into the corpus"
    assert_source_is_committed()


def test_the_corpus_every_server_test_uses_is_the_source(corpus_guard):
    reason = assert_source_is_committed()
    if reason:
        pytest.skip(f"cannot compare the source fixtures with the commit: {reason}")
