"""The persisted index: a restart reads only what changed, a damaged or foreign database is never
trusted, `--no-cache` leaves it alone, and it never lands in a record directory."""

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from skycap_viewer.catalog.index import Catalog, IndexedRun
from skycap_viewer.catalog.persisted import IndexFiles
from skycap_viewer.catalog.pool import compute_rows_here
from skycap_viewer.catalog.watcher import POLL_SECONDS, Watcher
from skycap_viewer.record.copies import cache_directory
from tests.support.corpus import BROKEN, copy_corpus
from tests.support.oracle import RECORD_DIRS
from tests.support.records import BASE_ID, copy_record
from tests.support.server_process import ServerProcess, wait_for

REWRITTEN = ("groups", "tr_08862b0a923de527.json.zst")  # rewritten between two starts
DELETED = ("real-like", "tr_175c734c42332c87.json.zst")  # deleted between two starts
POISONED = ("groups", "tr_0e32dadf1ca07c39.json.zst")  # its stored row is altered behind the viewer's back


@pytest.fixture
def runs(tmp_path):
    """A private copy of the whole corpus (these tests change records)."""
    root = tmp_path / "runs"
    copy_corpus(root, "*.json")
    return root


def watched(root, cache_directory_path):
    """(catalog, poll) over `root`, its databases in `cache_directory_path` (None: a temporary directory): `poll()`
    runs one watcher pass and gives the names whose rows it computed."""
    catalog = Catalog([root], IndexFiles(cache_directory_path))
    polls = []

    def counting(directory, names, verify=False):
        for name, row in compute_rows_here(directory, names, verify=verify):
            if not verify:
                polls[-1].append((directory.name, name))
            yield name, row

    watcher = Watcher(catalog, compute_rows=counting, verify=False)

    def poll():
        polls.append([])
        watcher.poll()
        return polls[-1]

    return catalog, poll


def index_once(root, cache_directory_path):
    """One watcher pass over `root` with its databases in `cache_directory_path` (None: a temporary
    directory): (catalog, names whose rows were computed)."""
    catalog, poll = watched(root, cache_directory_path)
    return catalog, poll()


def all_rows(catalog) -> dict:
    """(run directory name, record id) -> the row as listed, of every run."""
    return {(snapshot.location.path.name, row["id"]): {k: v for k, v in row.items() if k != "_verified"}
            for snapshot in catalog.snapshots() for row in snapshot.rows}


def rewrite_and_delete(root):
    """Rewrite one record with new content (another record's document under its name), delete another."""
    target = root.joinpath(*REWRITTEN)
    target.write_bytes(root.joinpath("spec", "tr_text.json.zst").read_bytes())
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a new version even on coarse clocks
    root.joinpath(*DELETED).unlink()


def test_a_reopened_run_is_served_as_it_was_until_its_directory_is_listed(runs, tmp_path):
    """A run reopened from its database is published at once, as it was (`listed` false, not indexing), and
    says `listed` only once what changed on disk meanwhile is in its rows: a client waiting for `listed` and
    not `indexing` never takes the stale rows for settled ones."""
    before, _ = index_once(runs, tmp_path / "cache")
    rows_before = before.snapshot(DELETED[0]).row_count
    rewrite_and_delete(runs)
    catalog = Catalog([runs], IndexFiles(tmp_path / "cache"))
    published, publish = [], catalog.publish

    def recording(changed, indexing):  # each run's snapshot as it was published (its rows are read when asked)
        publish(changed, indexing)
        snapshots = [catalog.snapshot(run.location.id) for run in changed]
        published.extend((s.listed, s.indexing, s.row_count) for s in snapshots if s.location.path.name == DELETED[0])

    catalog.publish = recording
    Watcher(catalog, compute_rows=compute_rows_here, verify=False).poll()
    assert published[0] == (False, False, rows_before), "served at once, as it was"
    settled = [rows for listed, indexing, rows in published if listed and not indexing]
    assert settled and set(settled) == {rows_before - 1}, published


def test_a_reopened_run_is_prepared_before_the_first_request_is_let_in(runs, tmp_path):
    """What every request asks of a reopened run (`/v1/runs` encodes its entry) is computed before the first request
    is let in, and before the run's versions are read: at a million rows that read shared the GIL with the
    encoding, and the first answer took twice as long."""
    index_once(runs, tmp_path / "cache")
    catalog = Catalog([runs], IndexFiles(tmp_path / "cache"))
    events = []
    watcher = Watcher(catalog, compute_rows=compute_rows_here, verify=False,
                      prepare=lambda snapshot: events.append(snapshot.id))
    let_in = watcher.discovered.set
    watcher.discovered.set = lambda: events.append("let in") or let_in()
    watcher.poll()
    reopened = {snapshot.id for snapshot in catalog.snapshots()}
    assert len(reopened) > 2 and set(events[: events.index("let in")]) == reopened


def test_a_restart_computes_only_what_changed(runs, tmp_path):
    cold, computed = index_once(runs, tmp_path / "cache")
    every = {(run, name) for run, name in computed}
    assert len(computed) == len(every) == sum(s.row_count for s in cold.snapshots()) > 100

    unreadable = {(s.location.path.name, row["id"] + ".json.zst") for s in cold.snapshots() for row in s.rows
                  if row.get("unreadable")}
    assert unreadable, "the corpus's unreadable records are part of the test"
    again, computed = index_once(runs, tmp_path / "cache")
    assert set(computed) == unreadable, "only unreadable records are read again: every other row is kept"
    assert all_rows(again) == all_rows(cold), "rows survive a restart exactly"

    rewrite_and_delete(runs)
    changed, computed = index_once(runs, tmp_path / "cache")
    assert set(computed) == unreadable | {REWRITTEN}
    fresh, _ = index_once(runs, None)
    assert all_rows(changed) == all_rows(fresh)
    assert (DELETED[0], DELETED[1].removesuffix(".json.zst")) not in all_rows(changed)

    _, computed = index_once(runs, tmp_path / "cache")
    assert set(computed) == unreadable, "the change was kept too"
    files = [name for name in os.listdir(tmp_path / "cache") if name.endswith(".sqlite")]
    assert len(files) == len(RECORD_DIRS), "one database a run"


def test_the_watcher_keeps_nothing_a_document_between_polls(runs, tmp_path):
    """What each document was indexed at is in the run's database, compared with each listing there: the watcher
    holds nothing a document once a poll is done (a million documents' versions in a dict were 152 MiB)."""
    catalog, poll = watched(runs, tmp_path / "cache")
    poll()
    poll()
    sizes = []
    for run in catalog.runs.values():
        documents = run.store.row_count()
        held = {name: len(value) for name, value in vars(run).items() if isinstance(value, (dict, set, list, tuple))}
        assert documents < 2 or max(held.values()) < documents, f"{run.directory.name}: {held}, {documents} documents"
        sizes.append(documents)
    assert max(sizes) > 20


def test_a_reopened_run_reads_its_doubted_rows_again_once_and_then_only_what_changes(runs, tmp_path):
    """The unreadable rows a reopen doubts are read again at its first listing, not at every poll; after that a
    poll reads what changed since the last, and nothing when nothing did (its listing's digest is the stored one)."""
    cold, _ = index_once(runs, tmp_path / "cache")
    catalog, poll = watched(runs, tmp_path / "cache")
    unreadable = {(s.location.path.name, row["id"] + ".json.zst") for s in cold.snapshots() for row in s.rows
                  if row.get("unreadable")}
    assert unreadable and set(poll()) == unreadable
    assert poll() == []
    rewrite_and_delete(runs)
    assert poll() == [REWRITTEN]
    assert poll() == []
    fresh, _ = index_once(runs, None)
    assert all_rows(catalog) == all_rows(fresh)


def test_an_unreadable_record_deleted_while_no_viewer_ran_is_gone_when_reopened(runs, tmp_path):
    cold, _ = index_once(runs, tmp_path / "cache")
    unreadable = sorted((s.location.path, row["id"]) for s in cold.snapshots() for row in s.rows
                        if row.get("unreadable"))
    directory, record_id = unreadable[0]
    (directory / f"{record_id}.json.zst").unlink()
    again, _ = index_once(runs, tmp_path / "cache")
    assert (directory.name, record_id) not in all_rows(again)
    fresh, _ = index_once(runs, None)
    assert all_rows(again) == all_rows(fresh)


def test_a_poll_that_stops_before_every_change_is_stored_reads_the_rest_at_the_next(runs, tmp_path, monkeypatch):
    """A listing's changes count as stored only once every one of them is: a batch that failed midway (a bug, a
    database error) leaves the rest to the next poll, though the directory lists as it did."""
    catalog, poll = watched(runs, tmp_path / "cache")
    poll()
    rewrite_and_delete(runs)
    stored_rows = IndexedRun.store_rows

    def failing_store_rows(run, computed):
        if computed:
            raise sqlite3.OperationalError("disk I/O error")
        stored_rows(run, computed)

    monkeypatch.setattr(IndexedRun, "store_rows", failing_store_rows)
    with pytest.raises(sqlite3.OperationalError):
        poll()
    monkeypatch.setattr(IndexedRun, "store_rows", stored_rows)
    assert poll() == [REWRITTEN]
    assert poll() == []
    fresh, _ = index_once(runs, None)
    assert all_rows(catalog) == all_rows(fresh)


def database(cache_home, run_directory):
    return IndexFiles(cache_home).database_for(run_directory, ("step", "instance_id"))[0]


def set_fact(path, key, value):
    with sqlite3.connect(path) as db:
        db.execute("UPDATE facts SET value = ? WHERE key = ?", (value, key))


DAMAGES = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: 4096]),
    "empty": lambda path: path.write_bytes(b""),
    "garbage": lambda path: path.write_bytes(os.urandom(path.stat().st_size)),
    "other schema": lambda path: set_fact(path, "schema", 999),
    "other viewer version": lambda path: set_fact(path, "viewer", "0.0.1"),
    "other code": lambda path: set_fact(path, "code", "0" * 32),
    "another directory": lambda path: set_fact(path, "directory", "/somewhere/else"),
    "other group keys": lambda path: set_fact(path, "group_by", "step"),
    "no facts": lambda path: sqlite3.connect(path).execute("DELETE FROM facts").connection.commit(),
}


def checkpointed(path):
    """The database in one file (its write-ahead log folded in), as a damage would find it."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.slow
def test_a_damaged_or_foreign_database_is_ignored_and_rebuilt(runs, tmp_path, damage):
    cache_home = tmp_path / "cache"
    run = runs / "groups"
    first, _ = index_once(run, cache_home)
    expected = all_rows(first)
    for snapshot_run in first.runs.values():
        snapshot_run.store.close()
    path = database(cache_home, run)
    checkpointed(path)
    DAMAGES[damage](path)

    catalog, computed = index_once(run, cache_home)
    assert len(computed) == catalog.snapshot("groups").row_count > 0, "nothing from the damaged database is used"
    assert all_rows(catalog) == expected, "rebuilt with the same rows"
    modes = {run.store.db.execute("PRAGMA journal_mode").fetchone()[0] for run in catalog.runs.values()}
    assert modes == {"wal"}, "a file a reader still held is made anew, not written in rollback mode"


def test_a_stored_row_whose_id_is_not_its_files_is_read_again(runs, tmp_path):
    cache = tmp_path / "cache"
    index_once(runs, cache)
    catalog, again = index_once(runs, cache)  # a restart reads the unreadable records again, and only them
    wanted = all_rows(catalog)[POISONED[0], POISONED[1].removesuffix(".json.zst")]
    with sqlite3.connect(database(cache, runs / POISONED[0])) as db:
        assert db.execute("UPDATE rows SET id = 'tr_edited' WHERE name = ?", (POISONED[1],)).rowcount == 1
    catalog, computed = index_once(runs, cache)
    assert sorted(computed) == sorted([*again, POISONED])  # and the edited one: listed by its own id again
    rows = all_rows(catalog)
    assert rows[POISONED[0], POISONED[1].removesuffix(".json.zst")] == wanted
    assert (POISONED[0], "tr_edited") not in rows


def test_an_unwritable_cache_directory_is_left_alone(runs, tmp_path, capsys):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would go")
    catalog, computed = index_once(runs / "spec", blocker / "skycap-viewer")
    assert len(computed) == catalog.snapshot("spec").row_count > 0
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
    index_once(run, run / "cache" / "skycap-viewer")
    assert "not using the persisted index" in capsys.readouterr().err
    assert tree(run) == before


@pytest.mark.parametrize("beside", ["", "-wal", "-journal"])
def test_a_database_symlinked_out_of_the_cache_is_not_followed(runs, tmp_path, capsys, beside):
    """A dangling symlink in place of a run's database (or of a file SQLite keeps beside it) that points
    into the record directory: the run is indexed in a temporary directory, and nothing is created there."""
    run = runs / "groups"
    cache = tmp_path / "cache"
    database, _ = IndexFiles(cache).database_for(run, ("step",))  # makes the cache directory
    target = run / "planted.sqlite"
    Path(f"{database}{beside}").symlink_to(target)
    before = tree(run)
    catalog, computed = index_once(run, cache)
    assert f"{database}{beside} is a symlink out of the cache directory" in capsys.readouterr().err
    assert not os.path.lexists(target) and tree(run) == before
    assert catalog.runs["groups"].store.db.execute("SELECT count(*) FROM rows").fetchone()[0] == len(computed) > 0


def listings(server) -> dict:
    """Every run's entry and its full rollout listing, as the API gives them once the server has settled:
    indexed, and its background verification done (until then an entry's `sidecars_verified` moves on, and
    a listing taken before it compared with one taken after never matches)."""
    return wait_for(lambda: settled_listings(server), "every run's sidecars verified, in one generation", timeout=60)


def settled_listings(server) -> dict | None:
    """`listings` if the server has settled and every answer was computed at one index generation, else None.
    An entry of one generation beside the rows of another compares as neither: the `/v1/runs` answer taken
    before a deleted database is noticed (the old rows, verified) beside the rows of the database built again,
    not yet indexed, was a listing no generation ever published, and failed a test on a loaded machine."""
    generation, runs = answer(server, "/v1/runs")
    if not runs or not all(run["listed"] and not run["indexing"] for run in runs) or not verified(runs):
        return None
    found = {}
    for run in runs:
        at, rows = answer(server, f"/v1/trajectories?run_id={run['id']}&limit=1000")
        if at != generation:
            return None
        found[run["id"]] = (run, rows)
    return found


def answer(server, path: str) -> tuple[str | None, list | None]:
    """(the index generation a listing was computed at, its `data`); (None, None) while its run's database is
    being rebuilt (503). The generation is what the answer's ETag starts with (`W/"<generation>-<target>"`)."""
    status, headers, body = server.request(path)
    if status == 503:
        return None, None
    assert status == 200, f"GET {path}: {status} {body[:300]!r}"
    return headers["ETag"].removeprefix('W/"').split("-")[0], json.loads(body)["data"]


def differences(these: dict, those: dict) -> list:
    """What differs between two `listings`: (run, the row's id or None for the run's entry, {field: (this,
    that)}), so a failure says which field moved, not only that two large values differ."""
    found = []
    for run_id in sorted(set(these) | set(those)):
        (entry_a, rows_a), (entry_b, rows_b) = these.get(run_id, ({}, [])), those.get(run_id, ({}, []))
        pairs = [(None, entry_a, entry_b)]
        by_id = {row["id"]: row for row in rows_b}
        pairs += [(row["id"], row, by_id.get(row["id"], {})) for row in rows_a]
        listed = {row["id"] for row in rows_a}
        pairs += [(row["id"], {}, row) for row in rows_b if row["id"] not in listed]  # only in `those`
        for row_id, a, b in pairs:
            fields = {key: (a.get(key), b.get(key)) for key in set(a) | set(b) if a.get(key) != b.get(key)}
            if fields:
                found.append((run_id, row_id, fields))
    return found


def verified(runs: list[dict]) -> list[dict] | None:
    """The run entries, if every run's rows are all verified (else None)."""
    return runs if all(run["sidecars_verified"] == run["indexed"] for run in runs) else None


def test_listings_compared_are_those_the_server_settles_on(runs):
    """What the tests below compare does not move on afterwards: the same listings a while later (they
    were taken before the background verification, whose count moved on: the database-deleted tests then
    had to catch its state in the poll before verification, and missed it on a loaded machine)."""
    with ServerProcess([runs / "groups"]) as server:
        first = listings(server)
        time.sleep(2 * POLL_SECONDS)
        assert listings(server) == first


@pytest.mark.slow
def test_a_cached_restart_lists_what_a_cold_start_lists(runs, tmp_path):
    cache_home = tmp_path / "cache"
    with ServerProcess([runs], cache_home=cache_home) as first:
        first_listing = listings(first)
    databases = [n for n in os.listdir(cache_home / "skycap-viewer") if n.endswith(".sqlite")]
    assert len(databases) == len(RECORD_DIRS), "one database a run"
    with ServerProcess([runs], cache_home=cache_home) as reopened:
        assert listings(reopened) == first_listing

    rewrite_and_delete(runs)
    with ServerProcess([runs], cache_home=cache_home) as cached, ServerProcess([runs]) as cold:
        cached_listing, cold_listing = listings(cached), listings(cold)
    assert cached_listing == cold_listing, differences(cached_listing, cold_listing)
    assert cached_listing != first_listing
    for server_output in (first.output(), reopened.output(), cached.output()):
        assert "Traceback" not in server_output and "persisted index" not in server_output


POISON_STATUS = "poisoned-by-the-test"


def poison(cache_home, runs):
    """Give POISONED's stored row another status (its size and mtime kept): only a server that trusts
    the database lists that status."""
    path = database(cache_home / "skycap-viewer", runs / POISONED[0])
    with sqlite3.connect(path) as db:
        assert db.execute("UPDATE rows SET status = ? WHERE name = ?", (POISON_STATUS, POISONED[1])).rowcount == 1
    return path


def poisoned_status(server) -> str:
    server.wait_indexed()
    listing = server.get(f"/v1/trajectories?run_id={POISONED[0]}&status={POISON_STATUS}&limit=1000")["data"]
    return POISON_STATUS if listing else "not poisoned"


def files_in(directory) -> dict:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


@pytest.mark.slow
def test_no_cache_neither_reads_nor_writes_it(runs, tmp_path):
    cache_home = tmp_path / "cache"
    with ServerProcess([runs], cache_home=cache_home) as server:
        assert poisoned_status(server) != POISON_STATUS
    path = poison(cache_home, runs)
    saved = files_in(path.parent)
    runs.joinpath(*DELETED).unlink()  # a change a cache-using server would keep

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    with ServerProcess([runs], env={"XDG_CACHE_HOME": str(cache_home), "TMPDIR": str(temporary)}) as server:
        assert poisoned_status(server) != POISON_STATUS, "--no-cache must not read the cache"
        assert list(temporary.glob("skycap-viewer-index-*/*.sqlite")), "its index is in a temporary directory"
    assert files_in(path.parent) == saved, "--no-cache must not write it"
    assert not list(temporary.glob("skycap-viewer-index-*")), "the temporary index is deleted on exit"

    with ServerProcess([runs], cache_home=cache_home) as server:
        assert poisoned_status(server) == POISON_STATUS, "with the cache, an unchanged record is not read again"


def test_the_server_never_writes_into_record_directories(runs, tmp_path):
    before = tree(runs)
    inside = runs / "groups" / "cache-home"
    with ServerProcess([runs], cache_home=inside) as server:
        server.wait_indexed()
    assert "not using the persisted index" in server.output()
    assert tree(runs) == before


@pytest.mark.slow
def test_the_database_is_safe_to_delete_while_serving(runs, tmp_path):
    """Deleted under a running server, a run's database is built again and the run listed as before."""
    cache_home = tmp_path / "cache"
    with ServerProcess([runs / "groups"], cache_home=cache_home) as server:
        before = listings(server)
        settled_at, _ = answer(server, "/v1/runs")
        for path in (cache_home / "skycap-viewer").iterdir():
            path.unlink()
        wait_for(lambda: any((cache_home / "skycap-viewer").glob("*.sqlite")), "the database made again", timeout=30)
        status, _, _ = server.request("/v1/trajectories?run_id=groups")
        assert status in (200, 503), "a request meanwhile is answered, never a crash"
        # the deletion noticed (the settled server publishes nothing else): else `before` is still served as it was
        wait_for(lambda: answer(server, "/v1/runs")[0] != settled_at, "the database built again published", timeout=30)
        after = listed_again(server, before)
        assert after == before, (differences(after or {}, before), server.output()[-3000:])
        (lock,) = (cache_home / "skycap-viewer").glob("*.sqlite.lock")
        assert lock.read_text() == str(server.process.pid), "the rebuilt database is locked again, by this viewer"
    assert "Traceback" not in server.output()



def test_a_listing_never_pairs_an_entry_with_the_rows_of_another_generation(runs, tmp_path):
    """The race the test above lost on a loaded machine, made certain: just after `/v1/runs` is answered, the
    database is deleted and built again, and published, before the rows are asked (all records but one are
    moved away meanwhile, so the new database's rows differ from the settled ones until they are back). The
    listing compared is still one the server published: never the settled entry beside the new rows."""
    cache_home, run, away = tmp_path / "cache", runs / "groups", tmp_path / "away"
    rows_asked = "/v1/trajectories?run_id=groups&limit=1000"
    with ServerProcess([run], cache_home=cache_home) as server:
        before = listings(server)
        asked, steps, listed_at = server.request, [], []

        def racing(path, *args, **kwargs):
            reply = asked(path, *args, **kwargs)
            if path == "/v1/runs" and not steps:
                steps.append("rebuilt")
                listed_at.append(run.stat())
                away.mkdir()
                for document in sorted(run.glob("*.json.zst"))[1:]:
                    document.rename(away / document.name)
                for file in (cache_home / "skycap-viewer").iterdir():
                    file.unlink()
                wait_for(lambda: one_row(asked(rows_asked)), "the new database's one row published", timeout=30)
            elif path.startswith("/v1/trajectories") and steps == ["rebuilt"]:
                steps.append("back")
                for document in away.iterdir():
                    document.rename(run / document.name)
                os.utime(run, ns=(listed_at[0].st_atime_ns, listed_at[0].st_mtime_ns))  # `updated_at` as it was
            return reply

        server.request = racing
        assert listings(server) == before
        assert steps == ["rebuilt", "back"]
    assert "Traceback" not in server.output()


def one_row(reply) -> bool:
    """Whether a `request`'s reply is a listing of one row."""
    status, _, body = reply
    return status == 200 and len(json.loads(body)["data"]) == 1


def listed_again(server, before: dict, seconds=30) -> dict:
    """The listings once they equal `before` again, or the last ones after `seconds` (a request answered
    503 while the index is rebuilt counts as not yet)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            now = listings(server)
        except AssertionError:  # 503: being rebuilt
            now = None
        if now == before or time.monotonic() > deadline:
            return now
        time.sleep(0.2)


@pytest.mark.parametrize("first", ["", "-wal"])
def test_the_database_deleted_in_two_steps_while_serving(runs, tmp_path, first):
    """`rm` racing the watcher: one of the database's files is deleted, the watcher makes the database
    again, and only then are the others deleted (the new ones, under the new writer): built again."""
    cache_home = tmp_path / "cache"
    with ServerProcess([runs / "groups"], cache_home=cache_home) as server:
        before = listings(server)
        (database,) = (cache_home / "skycap-viewer").glob("*.sqlite")
        files = {suffix: Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm")}
        made = {suffix: path.stat().st_ino for suffix, path in files.items()}
        files[first].unlink()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not files[first].exists() or files[first].stat().st_ino == made[first]):
            time.sleep(0.02)
        for suffix, path in files.items():
            if suffix != first:
                path.unlink(missing_ok=True)
        assert listed_again(server, before) == before
    assert "Traceback" not in server.output()


SHARED_RECORDS = 300


@pytest.mark.slow
def test_two_viewers_started_at_once_on_one_cache_do_not_fight_over_an_index(tmp_path):
    """The first writes the run's database (its lock file holds its pid); the second starts from a copy of
    it in a temporary directory and says so: both list every record once, with no UNIQUE error, no
    rebuild of a file the other made (`database deleted` 503s for a minute before), no traceback."""
    run = tmp_path / "runs" / "shared"
    run.mkdir(parents=True)
    for number in range(SHARED_RECORDS):
        copy_record(BROKEN, BASE_ID, run, f"tr_{number:04d}")
    cache = tmp_path / "cache"
    with ServerProcess([run.parent], cache_home=cache) as first, \
            ServerProcess([run.parent], cache_home=cache) as second:
        for server in (first, second):
            server.wait_indexed(timeout=120)
            assert server.get("/v1/runs")["data"][0]["indexed"] == SHARED_RECORDS
            assert len(server.get(f"/v1/trajectories?limit={SHARED_RECORDS + 10}")["data"]) == SHARED_RECORDS
        said = first.output() + second.output()
        for trouble in ("UNIQUE", "Traceback", "disk I/O", "being rebuilt"):
            assert trouble not in said, said[-3000:]
        assert "its index is written by another viewer (pid" in second.output(), second.output()[-2000:]
    locks = list((cache / "skycap-viewer").glob("*.sqlite.lock"))
    assert len(locks) == 1 and locks[0].read_text() == str(first.process.pid)
