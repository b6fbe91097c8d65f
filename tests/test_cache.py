"""The persisted index: a restart reads only what changed, a damaged or foreign cache is never trusted,
`--no-cache` leaves it alone, and it never lands in a record directory."""

import json
import os
import shutil
import subprocess
import sys
import time
import zlib

import pytest

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.persisted import MAGIC, PersistedIndex, cache_directory, decode, encode
from skycap_viewer.catalog.pool import compute_rows_here
from skycap_viewer.catalog.watcher import Watcher
from tests.conftest import FIXTURES, RECORD_DIRS
from tests.server_process import ServerProcess

REWRITTEN = ("groups", "tr_08862b0a923de527.json.zst")  # rewritten between two starts
DELETED = ("real-like", "tr_175c734c42332c87.json.zst")  # deleted between two starts
POISONED = ("groups", "tr_0e32dadf1ca07c39.json.zst")  # its cached row is altered behind the viewer's back


@pytest.fixture
def runs(tmp_path):
    """A private copy of the whole corpus (these tests change records)."""
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("*.json"))
    return root


def index_once(root, cache):
    """One watcher pass over `root` with `cache`: (catalog, names whose rows were computed)."""
    catalog = Catalog([root])
    computed = []

    def counting(directory, names):
        for name, row in compute_rows_here(directory, names):
            computed.append((directory.name, name))
            yield name, row

    Watcher(catalog, compute_rows=counting, cache=cache).poll()
    return catalog, computed


def all_rows(catalog) -> dict:
    return {(run.directory.name, name): row for run in catalog.runs.values() for name, row in run.rows.items()}


def rewrite_and_delete(root):
    """Rewrite one record with new content (another record's document under its name), delete another."""
    target = root.joinpath(*REWRITTEN)
    target.write_bytes(root.joinpath("spec", "tr_text.json.zst").read_bytes())
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a new version even on coarse clocks
    root.joinpath(*DELETED).unlink()


def test_a_restart_computes_only_what_changed(runs, tmp_path):
    cold, computed = index_once(runs, PersistedIndex(tmp_path / "cache"))
    every = set(all_rows(cold))
    assert set(computed) == every and len(computed) == len(every) > 100

    unreadable = {key for key, row in all_rows(cold).items() if row.get("unreadable")}
    assert unreadable, "the corpus's unreadable records are part of the test"
    again, computed = index_once(runs, PersistedIndex(tmp_path / "cache"))
    assert set(computed) == unreadable, "only unreadable records are read again: every other row is cached"
    assert all_rows(again) == all_rows(cold), "rows survive the cache exactly"

    rewrite_and_delete(runs)
    changed, computed = index_once(runs, PersistedIndex(tmp_path / "cache"))
    assert set(computed) == unreadable | {REWRITTEN}
    fresh, _ = index_once(runs, None)
    assert all_rows(changed) == all_rows(fresh)
    assert DELETED not in all_rows(changed)

    _, computed = index_once(runs, PersistedIndex(tmp_path / "cache"))
    assert set(computed) == unreadable, "the change was saved too"
    files = os.listdir(tmp_path / "cache")
    assert len(files) == len(RECORD_DIRS) and all(f.endswith(".index") for f in files), "one file a run, no leftovers"


def cache_file(cache_home, run_directory):
    return PersistedIndex(cache_home / "skycap-viewer").file_for(run_directory)


def with_header(data: bytes, **changes) -> bytes:
    line, _, payload = data[len(MAGIC):].partition(b"\n")
    return MAGIC + json.dumps({**json.loads(line), **changes}).encode() + b"\n" + payload


def flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0xFF])


def reencoded(data: bytes, directory, change) -> bytes:
    entries = decode(directory, data)
    change(entries)
    return encode(directory, entries)


def row_moved(entries):
    """The first record's row also under the second's name, its size and mtime kept: a cache that
    lists the first record twice and hides the second."""
    first, second = sorted(entries)[:2]
    entries[second] = (*entries[second][:2], entries[first][2])


DAMAGES = {
    "truncated": lambda data, directory: data[: len(data) // 2],
    "empty": lambda data, directory: b"",
    "garbage": lambda data, directory: os.urandom(len(data)),
    "no header": lambda data, directory: MAGIC + b"\n" + data,
    "other schema": lambda data, directory: with_header(data, schema=999),
    "other viewer version": lambda data, directory: with_header(data, viewer="0.0.1"),
    "other code": lambda data, directory: with_header(data, code="0" * 32),
    "another directory": lambda data, directory: with_header(data, directory="/somewhere/else"),
    "payload flipped": lambda data, directory: flip_last_byte(data),
    "digest matches, content does not": lambda data, directory: encode(directory, {"x.json.zst": ("not", "a row")}),
    "entry count wrong": lambda data, directory: with_header(data, entries=1),
    "planted: another directory's cache relabelled": lambda data, directory: with_header(
        encode(directory.parent / "elsewhere", decode(directory, data)), directory=str(directory)),
    "one record's row under another's name": lambda data, directory: reencoded(data, directory, row_moved),
    "a row that is not a dict": lambda data, directory: reencoded(
        data, directory, lambda entries: entries.update({"y.json.zst": (1, 2, [])})),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_or_foreign_cache_is_ignored_and_rebuilt(runs, tmp_path, damage, capsys):
    cache_home = tmp_path / "cache"
    run = runs / "groups"
    index_once(run, PersistedIndex(cache_home))
    path = PersistedIndex(cache_home).file_for(run)
    good = path.read_bytes()
    path.write_bytes(DAMAGES[damage](good, run))
    capsys.readouterr()

    catalog, computed = index_once(run, PersistedIndex(cache_home))
    assert len(computed) == len(catalog.runs["groups"].rows) > 0, "nothing from the damaged cache is used"
    assert f"ignoring the persisted index {path}" in capsys.readouterr().err
    assert decode(run, path.read_bytes()) == decode(run, good), "rebuilt with the same rows"


def test_an_unwritable_cache_directory_is_left_alone(runs, tmp_path, capsys):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would go")
    catalog, computed = index_once(runs / "spec", PersistedIndex(blocker / "skycap-viewer"))
    assert len(computed) == len(catalog.runs["spec"].rows) > 0
    assert "not using the persisted index" in capsys.readouterr().err


def test_the_cache_directory_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "skycap-viewer"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the spec says: ignore it
    assert cache_directory() == tmp_path / "home" / ".cache" / "skycap-viewer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_directory() == tmp_path / "home" / ".cache" / "skycap-viewer"


def tree(path) -> set:
    return {(str(p.relative_to(path)), p.stat().st_mtime_ns) for p in path.rglob("*")}


def test_a_cache_inside_a_record_directory_is_refused(runs, capsys):
    run = runs / "groups"
    before = tree(run)
    index_once(run, PersistedIndex(run / "cache" / "skycap-viewer"))
    assert "not using the persisted index" in capsys.readouterr().err
    assert tree(run) == before


def listings(server) -> dict:
    """Every run's entry and its full rollout listing, as the API gives them."""
    return {
        run["id"]: (run, server.get(f"/v1/trajectories?run_id={run['id']}&limit=1000")["data"])
        for run in server.wait_indexed()
    }


def test_a_cached_restart_lists_what_a_cold_start_lists(runs, tmp_path):
    cache_home = tmp_path / "cache"
    with ServerProcess([runs], cache_home=cache_home) as first:
        first_listing = listings(first)
    assert len(os.listdir(cache_home / "skycap-viewer")) == len(RECORD_DIRS), "saved before showing as indexed"
    with ServerProcess([runs], cache_home=cache_home) as reopened:
        assert listings(reopened) == first_listing

    rewrite_and_delete(runs)
    with ServerProcess([runs], cache_home=cache_home) as cached, ServerProcess([runs]) as cold:
        cached_listing, cold_listing = listings(cached), listings(cold)
    assert cached_listing == cold_listing
    assert cached_listing != first_listing
    for server_output in (first.output(), reopened.output(), cached.output()):
        assert "Traceback" not in server_output and "persisted index" not in server_output


POISON_STATUS = "poisoned-by-the-test"


def poison(cache_home, runs):
    """Give POISONED's cached row another status (its size and mtime kept): only a server that trusts
    the cache lists that status."""
    path = cache_file(cache_home, runs / POISONED[0])

    def change(entries):
        size, mtime_ns, row = entries[POISONED[1]]
        shown = {**json.loads(zlib.decompress(row["_json_z"])), "status": POISON_STATUS}
        row = {**row, "status": POISON_STATUS, "_json_z": zlib.compress(json.dumps(shown).encode())}
        entries[POISONED[1]] = (size, mtime_ns, row)

    path.write_bytes(reencoded(path.read_bytes(), runs / POISONED[0], change))
    return path


def poisoned_status(server) -> str:
    server.wait_indexed()
    listing = server.get(f"/v1/trajectories?run_id={POISONED[0]}&limit=1000")["data"]
    return next(row["status"] for row in listing if row["id"] == POISONED[1].removesuffix(".json.zst"))


def test_no_cache_neither_reads_nor_writes_it(runs, tmp_path):
    cache_home = tmp_path / "cache"
    with ServerProcess([runs], cache_home=cache_home) as server:
        assert poisoned_status(server) != POISON_STATUS
    path = poison(cache_home, runs)
    saved = {p.name: p.read_bytes() for p in path.parent.iterdir()}
    runs.joinpath(*DELETED).unlink()  # a change a cache-using server would save

    with ServerProcess([runs], env={"XDG_CACHE_HOME": str(cache_home)}) as server:  # --no-cache
        assert poisoned_status(server) != POISON_STATUS, "--no-cache must not read the cache"
    assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == saved, "--no-cache must not write it"

    with ServerProcess([runs], cache_home=cache_home) as server:
        assert poisoned_status(server) == POISON_STATUS, "with the cache, an unchanged record is not read again"


def test_the_server_never_writes_into_record_directories(runs, tmp_path):
    before = tree(runs)
    inside = runs / "groups" / "cache-home"
    with ServerProcess([runs], cache_home=inside) as server:
        server.wait_indexed()
    assert "not using the persisted index" in server.output()
    assert tree(runs) == before


def test_a_killed_save_leaves_no_temporary_for_good(tmp_path):
    """`kill -9` during a save leaves its temporary: the next start removes it, and only it, never a
    temporary another live server sharing the directory may be writing."""
    cache = tmp_path / "skycap-viewer"
    cache.mkdir()
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    key = "0" * 32 + ".index"
    files = {
        f".{key}.{killed.pid}.abc123.tmp": (120, False),  # a dead writer's, a while ago
        f".{key}.{killed.pid}.def456.tmp": (1, True),  # a dead pid but just written: maybe another namespace
        f".{key}.{alive.pid}.ghi789.tmp": (120, True),  # a live server's (say it is stopped mid-write)
        f".{key}.{alive.pid}.jkl012.tmp": (2 * 86_400, False),  # a live pid's, but abandoned for two days
        f".{key}.mno345.tmp": (2 * 86_400, False),  # an earlier viewer's, with no pid: by age alone
        f".{key}.pqr678.tmp": (120, True),
        "notes.tmp": (2 * 86_400, True),  # not a temporary of this cache
        key: (2 * 86_400, True),
    }
    now = time.time()
    for name, (age, _) in files.items():
        (cache / name).write_bytes(b"partial")
        os.utime(cache / name, (now - age, now - age))
    try:
        PersistedIndex(cache)
    finally:
        alive.kill()
        alive.wait()
    assert sorted(os.listdir(cache)) == sorted(name for name, (_, kept) in files.items() if kept)


def test_a_server_removes_a_dead_servers_temporary_at_start(runs, tmp_path):
    cache_home = tmp_path / "cache"
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()
    leftover = cache_file(cache_home, runs / "groups").with_suffix(f".index.{killed.pid}.x1y2z3.tmp")
    leftover = leftover.with_name("." + leftover.name)
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"half a cache")
    os.utime(leftover, (time.time() - 3600, time.time() - 3600))
    with ServerProcess([runs], cache_home=cache_home) as server:
        server.wait_indexed()
        assert not leftover.exists()
    assert all(name.endswith(".index") for name in os.listdir(leftover.parent))
