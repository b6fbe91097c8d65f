"""Records in object storage: the corpus uploaded to a real S3 server on loopback, read where it is.

Every answer of the server over the store's URL must be the local directory's (the files' paths
aside: a store's are named by their URL), and so must every command's. Sidecars are fetched only
when a rollout is opened; a second start downloads nothing; the prefix is polled, so records added,
rewritten and deleted in the store are seen; a missing credential and an unreachable endpoint are
named in one line. `tests/support/s3_store.py` runs the store (moto's server mode).
"""

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from skycap_viewer.catalog.object_store import ATTEMPTS, ObjectStore
from skycap_viewer.catalog.remote_copy import RemoteCopy, copy_directory
from skycap_viewer.record.copies import ensure_local
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES, PULLED, copy_corpus
from tests.support.in_process import InProcess
from tests.support.mirrors import LOCAL_MIRROR, MIRRORED, ON_GCS, pulled_with_a_mirror
from tests.support.records import copy_record, encode_document, load_document
from tests.support.s3_store import S3Store, ThrottlingStore
from tests.support.server_process import ServerProcess, wait_for
from tests.support.skyrl_capture import capture_tree

ROUTES = ("paths", "graph", "exchanges", "timeline", "paths/0/messages", "paths/0/row", "retokenized", "notable")
CHANGING = ("revision", "updated_at", "path", "source")  # what the copy says differently: when and where it was read


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = S3Store(tmp_path_factory.mktemp("s3-cache"))
    yield store
    store.stop()


@pytest.fixture(scope="module")
def corpus_url(store, tmp_path_factory):
    """The corpus at `s3://records/skycap-v1` (its project named as the local copy's)."""
    local = copy_corpus(tmp_path_factory.mktemp("s3-corpus") / "skycap-v1")
    return store.upload(local, "skycap-v1"), local


@pytest.fixture(scope="module")
def servers(store, corpus_url):
    url, local = corpus_url
    # a store's sidecars are not fetched to verify them: the directory is served as with --no-verify
    with ServerProcess([url], env=store.env) as remote, ServerProcess([local], "--no-verify") as here:
        remote.wait_indexed()
        here.wait_indexed()
        yield remote, here, url, local
        assert "Traceback" not in remote.output(), remote.output()[-3000:]


def same(body: bytes, root: str):
    """An answer with its local root named ROOT, and the fields that say when and where it was read left out."""
    value = json.loads(body.decode().replace(root, "ROOT"))

    def strip(item):
        if isinstance(item, dict):
            return {key: strip(v) for key, v in item.items() if key not in CHANGING}
        if isinstance(item, list):
            return [strip(v) for v in item]
        return item

    return strip(value)


def agreed(remote, here, target: str, url: str, local: str, timeout: float = 30):
    """((status, answer) of the store's server, of the directory's): as soon as they agree, or as they are
    after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        (status_a, _, a), (status_b, _, b) = remote.request(target), here.request(target)
        answers = (status_a, same(a, url)), (status_b, same(b, local))
        if answers[0] == answers[1] or time.monotonic() > deadline:
            return answers
        time.sleep(0.2)


@pytest.mark.slow
def test_every_answer_over_the_store_is_the_directorys(servers):
    remote, here, url, local = servers
    assert same(remote.request("/v1/runs")[2], url) == same(here.request("/v1/runs")[2], str(local))
    sources = {run["id"]: run["source"] for run in remote.get("/v1/runs")["data"]}
    assert sources["groups"] == {"url": f"{url}/groups", "problem": None}
    assert all("source" not in run for run in here.get("/v1/runs")["data"])
    compared = 0
    for run in [entry["id"] for entry in here.get("/v1/runs")["data"]]:
        listing = f"/v1/trajectories?run_id={run}&limit=1000"
        assert same(remote.request(listing)[2], url) == same(here.request(listing)[2], str(local)), run
        for row in here.get(listing)["data"]:
            for route in ROUTES:
                target = f"/v1/trajectories/{row['id']}/{route}?run_id={run}"
                # a damaged sidecar met by a request is verified at each watcher's next poll (its verdict then in
                # the header): each server in its own time, so the two are compared once they agree or at the end
                (status_a, a), (status_b, b) = agreed(remote, here, target, url, str(local))
                assert status_a == status_b, target
                assert a == b, target
                compared += 1
    assert compared > 500


def two_records(store, tmp_path, prefix: str) -> tuple:
    """Two copies of one record, `tr_a` and `tr_b`, uploaded to `prefix`: (their local folder, its URL)."""
    local = tmp_path / "run"
    local.mkdir()
    for record_id in ("tr_a", "tr_b"):
        copy_record(FIXTURES / "groups", "tr_0e32dadf1ca07c39", local, record_id)
    return local, store.upload(local, prefix)


def test_sidecars_are_fetched_when_a_rollout_is_opened(store, tmp_path):
    local, url = two_records(store, tmp_path, "opened/run")
    copy = copy_directory(tmp_path / "cache" / "skycap-viewer", url)
    env = {**store.env, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with ServerProcess([url], env=env, cache_home=tmp_path / "cache") as server:
        server.wait_indexed()
        assert sorted(p.name for p in copy.iterdir() if not p.name.startswith(".")) == ["tr_a.json.zst",
                                                                                        "tr_b.json.zst"]
        paths = server.get("/v1/trajectories/tr_a/paths")
        assert paths["text_only"] is None and paths["nodes"]["n0"]["token_ids"], "tokens read from the store"
        fetched = sorted(p.name for p in copy.iterdir() if not p.name.startswith("."))
        assert fetched == ["tr_a.experts.zst", "tr_a.json.zst", "tr_a.sampling_mask.zst", "tr_a.tokens.zst",
                           "tr_b.json.zst"]
    documents = {p.name: p.stat().st_ino for p in copy.glob("*.json.zst")}
    with ServerProcess([url], env=env, cache_home=tmp_path / "cache") as server:  # a reopen: nothing downloaded
        rows = server.wait_indexed()
        assert rows[0]["indexed"] == 2
        store.put("opened/run/tr_c.json.zst", (local / "tr_a.json.zst").read_bytes())  # seen once it lists again
        wait_for(lambda: len(server.get("/v1/trajectories?limit=10")["data"]) == 3, "the store listed again")
        assert {p.name: p.stat().st_ino for p in copy.glob("*.json.zst") if p.name != "tr_c.json.zst"} == documents
        tokens = server.get("/v1/trajectories/tr_a/paths")["nodes"]["n0"]["token_ids"]
        assert tokens == paths["nodes"]["n0"]["token_ids"]


@pytest.mark.slow
def test_records_added_rewritten_and_deleted_in_the_store_are_seen(store, tmp_path):
    local, url = two_records(store, tmp_path, "live/run")
    with ServerProcess([url], env={**store.env, "XDG_CACHE_HOME": str(tmp_path / "cache")}) as server:
        server.wait_indexed()
        copy_record(FIXTURES / "groups", "tr_0e32dadf1ca07c39", tmp_path, "tr_c")
        for name in ("tr_c.tokens.zst", "tr_c.experts.zst", "tr_c.sampling_mask.zst", "tr_c.json.zst"):
            store.put(f"live/run/{name}", (tmp_path / name).read_bytes())  # sidecars first, as a mirror copies
        document = load_document(local / "tr_a.json.zst")
        document["annotations"]["reward"] = 0.25
        store.put("live/run/tr_a.json.zst", encode_document(document))
        store.delete("live/run/tr_b.json.zst")

        def seen():
            rows = {row["id"]: row for row in server.get("/v1/trajectories?limit=10")["data"]}
            return rows if set(rows) == {"tr_a", "tr_c"} and rows["tr_a"]["reward_value"] == 0.25 else None

        wait_for(seen, "the store's changes in the listing", timeout=30)
        assert server.get("/v1/trajectories/tr_c/paths")["nodes"]["n0"]["token_ids"]


@pytest.mark.slow
def test_the_commands_over_the_store_say_what_they_say_over_the_directory(store, corpus_url):
    url, local = corpus_url
    env = {**os.environ, **store.env}
    for args in (("summary", "--json"), ("check",), ("check", "--json"), ("grep", "--json"), ("export",)):
        for run in ("broken", "spec"):  # damaged records and sidecars; media, modes and rules (groups: above)
            tail = ("the",) if args[0] == "grep" else ()
            remote = run_cli(*args, f"{url}/{run}", *tail, env=env)
            here = run_cli(*args, local / run, *tail)
            assert remote.returncode == here.returncode, (args, run, remote.stderr)
            assert remote.stderr.replace(url, "ROOT") == here.stderr.replace(str(local), "ROOT"), (args, run)
            if args[0] == "summary":
                assert same(remote.stdout.encode(), url) == same(here.stdout.encode(), str(local)), run
            elif args[0] == "export":
                lines = [same(line.encode(), url) for line in remote.stdout.splitlines()]
                assert lines == [same(line.encode(), str(local)) for line in here.stdout.splitlines()], run
            else:
                assert remote.stdout.replace(url, "ROOT") == here.stdout.replace(str(local), "ROOT"), (args, run)
    record = f"{url}/spec/tr_media.json.zst"
    for args in ((), ("--json",), ("--row", "--path", "0"), ("--messages", "--path", "0")):
        remote, here = run_cli("show", record, *args, env=env), run_cli("show", local / "spec/tr_media.json.zst", *args)
        assert (remote.returncode, remote.stdout) == (here.returncode, here.stdout), args
    remote = run_cli("diff", f"{url}/groups/tr_0e32dadf1ca07c39.json.zst", f"{url}/groups/tr_65eb484a7fe5e02f.json.zst",
                     env=env)
    here = run_cli("diff", local / "groups/tr_0e32dadf1ca07c39.json.zst", local / "groups/tr_65eb484a7fe5e02f.json.zst")
    assert (remote.returncode, remote.stdout) == (here.returncode, here.stdout)


def test_a_run_index_in_the_store_marks_its_rows(store, tmp_path):
    url = store.upload(PULLED, "pulled")
    env = {**os.environ, **store.env}
    remote = json.loads(run_cli("summary", "--json", url, env=env).stdout)
    here = json.loads(run_cli("summary", "--json", PULLED).stdout)
    assert [run["run_index"] for run in remote] == [run["run_index"] for run in here]
    assert all(run["run_index"]["files"] for run in remote)


@pytest.mark.slow
def test_a_missing_credential_and_an_unreachable_endpoint_are_named(store, corpus_url, tmp_path):
    url = corpus_url[0] + "/groups"
    bare = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    no_keys = {**bare, "AWS_ENDPOINT_URL": store.endpoint, "AWS_CONFIG_FILE": os.devnull, "XDG_CACHE_HOME":
               str(tmp_path / "a"), "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_EC2_METADATA_DISABLED": "true"}
    done = run_cli("summary", url, env=no_keys)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"skycap-viewer: cannot list {url}: no credentials for the store"), done.stderr
    closed = {**os.environ, **store.env, "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
              "XDG_CACHE_HOME": str(tmp_path / "b")}
    options = json.dumps({"config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1}})
    done = run_cli("check", url, "--storage-options", options, env=closed)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"skycap-viewer: cannot list {url}: cannot reach the store"), done.stderr
    cached = {**os.environ, **store.env, "XDG_CACHE_HOME": str(tmp_path / "c")}
    assert run_cli("summary", url, env=cached).returncode == 0
    with ServerProcess([url, "--storage-options", options], env={**cached, "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}) \
            as server:  # unreachable now: the copy made before is served, and the run says why it may be old
        assert server.wait_indexed()[0]["indexed"] == 28  # served at once from the copy, listed in the background
        run = wait_for(lambda: next((r for r in server.get("/v1/runs")["data"] if r["source"]["problem"]), None),
                       "the store's problem on its run")
        assert run["indexed"] == 28 and run["source"]["url"] == url
        assert run["source"]["problem"].startswith(f"cannot list {url}: cannot reach the store"), run
        wait_for(lambda: "; trying again" in server.output(), "the problem said on stderr")


def test_a_url_without_its_package_names_the_extra(tmp_path):
    done = run_cli("summary", "gs://bucket/run")
    assert (done.returncode, done.stderr) == (2, "skycap-viewer: gs://bucket/run: the gs:// protocol needs gcsfs: "
                                                 "pip install 'skycap-viewer[gcs]'\n"), done.stderr
    without_fsspec = "import sys; sys.modules['fsspec'] = None; from skycap_viewer.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", without_fsspec, "summary", "s3://bucket/run"], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, "skycap-viewer: s3://bucket/run: reading an object store needs "
                                                 "fsspec: pip install 'skycap-viewer[s3]'\n"), done.stderr


def test_fetched_sidecars_are_kept_within_the_cache_bound(store, tmp_path):
    """The least recently fetched go first; a reopened rollout fetches its own again."""
    local, url = two_records(store, tmp_path, "bounded/run")
    sidecars = {record_id: sorted(p.name for p in local.glob(f"{record_id}.*.zst") if ".json." not in p.name)
                for record_id in ("tr_a", "tr_b")}
    blocks = sum(-(-(local / name).stat().st_size // 4096) * 4096 for name in sidecars["tr_a"])  # bytes on disk
    copy = RemoteCopy(ObjectStore(url, {"endpoint_url": store.endpoint}), tmp_path / "cache", cache_bytes=blocks)
    assert copy.sync()
    for name in sidecars["tr_a"]:
        ensure_local(copy.directory / name)
    assert all((copy.directory / name).exists() for name in sidecars["tr_a"])
    for name in sidecars["tr_b"]:
        ensure_local(copy.directory / name)
    assert all((copy.directory / name).exists() for name in sidecars["tr_b"])
    assert not any((copy.directory / name).exists() for name in sidecars["tr_a"]), "the older ones went"
    assert (copy.directory / "tr_a.json.zst").exists(), "documents stay: they are the listing"


def test_a_run_index_row_whose_record_is_mirrored_opens_from_the_mirror(store, tmp_path):
    train, mirror = pulled_with_a_mirror(store, tmp_path)
    with ServerProcess([train], env=store.env) as server:
        server.wait_indexed()
        missing = {row["id"]: row for row in server.get("/v1/trajectories?run_id=train&missing=true")["data"]}
        assert missing[MIRRORED]["record"]["mirror"] == f"{mirror}/{MIRRORED}.json.zst"
        opened = server.get(f"/v1/trajectories/{MIRRORED}/mirror?run_id=train")
        assert opened["id"] == MIRRORED and opened["run_id"] != "train", opened
        runs = {run["id"]: run for run in server.get("/v1/runs")["data"]}
        assert runs[opened["run_id"]]["source"]["url"] == mirror, runs
        paths = server.get(f"/v1/trajectories/{MIRRORED}/paths?run_id={opened['run_id']}")
        assert paths["nodes"]["n0"]["token_ids"], "its sidecars fetched from the mirror"
        status, _, body = server.request(f"/v1/trajectories/{ON_GCS}/mirror?run_id=train")
        assert status == 501 and b"needs gcsfs: pip install 'skycap-viewer[gcs]'" in body, body
        status, _, body = server.request(f"/v1/trajectories/{LOCAL_MIRROR}/mirror?run_id=train")
        assert status == 400 and b"is not a store URL of its document" in body, body
        status, _, body = server.request("/v1/trajectories/tr_495b9ec2e4f562da/mirror?run_id=train")
        assert status == 404 and b"names no mirror" in body, body
        status, _, body = server.request("/v1/trajectories/tr_0e32dadf1ca07c39/mirror?run_id=train")
        assert status == 404 and b"not a row of the run index without its record" in body, body
        assert "Traceback" not in server.output()


def test_discovery_over_a_store_is_the_directorys(store, tmp_path):
    """A record directory two levels down is a run; a skyrl-capture directory beside it is skipped and said,
    named by its URL, and nothing under its `committed/` shards is fetched."""
    root = tmp_path / "root"
    (root / "team" / "job-7").mkdir(parents=True)
    copy_record(FIXTURES / "spec", "tr_tokens", root / "team" / "job-7", "tr_tokens")
    capture_tree(root / "capture")
    url = store.upload(root, f"discovery/{tmp_path.name}")
    env = {**os.environ, **store.env, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    remote, here = run_cli("summary", "--json", url, env=env), run_cli("summary", "--json", root)
    runs = [run["run"] for run in json.loads(remote.stdout)]
    assert runs == [run["run"] for run in json.loads(here.stdout)] == ["job-7"]
    assert remote.stderr == here.stderr.replace(str(root), url), remote.stderr
    copy = copy_directory(tmp_path / "cache" / "skycap-viewer", url)
    assert (copy / "capture" / "committed").is_dir() and not any((copy / "capture" / "committed").iterdir())
    with ServerProcess([url], env=env, cache_home=tmp_path / "cache") as server:  # a folder of runs: named by its URL
        server.wait_indexed()
        assert server.get("/__viewer")["roots"] == [url]
        assert server.get("/healthz")["record"] == url


LONG = "a" * 250  # a name under NAME_MAX (255) that a prefixed temporary name passes
HOSTILE_KEYS = {  # an object of the store the copy cannot hold as a file, and why
    f"hostile/run/{'b' * 250}.json.zst": "over NAME_MAX",
    f"hostile/run/{LONG}.json.zst": "under NAME_MAX, over it with `.fetching-`",
    "hostile/run/tr_a.json.zst/tr_z.json.zst": "a folder where a document is",
    f"hostile/{'c' * 300}/tr_q.json.zst": "a folder name over NAME_MAX",
}


@pytest.mark.slow
def test_objects_the_copy_cannot_hold_are_named_once_and_the_rest_is_served(store, tmp_path):
    """The server starts (a traceback and exit 1 before), lists the good records, names what it could not
    copy in `/v1/runs` `source.problem` and on stderr once; such an object arriving while it runs leaves
    the poll thread alive: a record added after it is listed too."""
    local, url = two_records(store, tmp_path, "hostile/run")
    document = (local / "tr_a.json.zst").read_bytes()
    for key in list(HOSTILE_KEYS)[:3]:
        store.put(key, document)
    url = url.rsplit("/", 1)[0]  # the folder of runs: the long folder name is in it
    with ServerProcess([url], env={**store.env, "XDG_CACHE_HOME": str(tmp_path / "cache")}) as server:
        runs = server.wait_indexed()
        assert {row["id"] for row in server.get("/v1/trajectories?run_id=run&limit=10")["data"]} == {"tr_a", "tr_b"}
        problem = runs[0]["source"]["problem"]
        assert problem and "cannot fetch" in problem and "object(s)" in problem, runs
        store.put(list(HOSTILE_KEYS)[3], document)  # while it runs
        store.put("hostile/run/tr_c.json.zst", document)
        wait_for(lambda: "tr_c" in {row["id"] for row in server.get("/v1/trajectories?run_id=run&limit=10")["data"]},
                 "the record added after the hostile ones", timeout=60)
        said = server.output()
        assert "Traceback" not in said, said[-3000:]
        assert said.count("cannot fetch") <= 2, said[-3000:]  # once at start, once when the fourth is new


def planted_copy(store, tmp_path, prefix: str) -> tuple:
    """Two records at `prefix`, and where the viewer's copy of them lives in a cache under `tmp_path`."""
    _, url = two_records(store, tmp_path, prefix)
    cache = tmp_path / "cache"
    return url, cache, copy_directory(cache, url)


def test_a_symlink_planted_in_the_copy_is_never_written_through(store, tmp_path):
    url, cache, copy = planted_copy(store, tmp_path, "planted/run")
    outside = tmp_path / "outside.txt"
    outside.write_text("mine")
    copy.mkdir(parents=True)
    for name in ("tr_a.json.zst", ".skycap-viewer-copy.json"):  # the temporary name of each, both spellings
        digest = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
        for planted in (f".fetching-{digest}", f".fetching-{name}"):
            (copy / planted).symlink_to(outside)
    RemoteCopy(ObjectStore(url, {"endpoint_url": store.endpoint}), cache).sync()
    assert outside.read_text() == "mine"
    assert (copy / "tr_a.json.zst").is_file() and not (copy / "tr_a.json.zst").is_symlink()


def test_a_listed_path_out_of_the_copy_is_never_deleted(store, tmp_path):
    url, cache, copy = planted_copy(store, tmp_path, "listed/run")
    RemoteCopy(ObjectStore(url, {"endpoint_url": store.endpoint}), cache).sync()
    outside = tmp_path / "outside.json.zst"
    outside.write_text("mine")
    listing = json.loads((copy / ".skycap-viewer-copy.json").read_text())
    listing["objects"][os.path.relpath(outside, copy)] = [1, "x", None]
    (copy / ".skycap-viewer-copy.json").write_text(json.dumps(listing))
    # gone from the store, as the planted entry says: it removes nothing outside
    RemoteCopy(ObjectStore(url, {"endpoint_url": store.endpoint}), cache).sync()
    assert outside.read_text() == "mine"
    run = subprocess.run([sys.executable, "-m", "skycap_viewer", "check", url], capture_output=True, timeout=120,
                         env={**os.environ, **store.env, "XDG_CACHE_HOME": str(cache.parent / "check-cache")})
    assert outside.read_text() == "mine", run.stderr[-500:]


def test_a_copy_folder_that_is_a_symlink_receives_nothing(store, tmp_path):
    url, cache, copy = planted_copy(store, tmp_path, "linked/run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy.parent.mkdir(parents=True)
    copy.symlink_to(elsewhere)
    remote = RemoteCopy(ObjectStore(url, {"endpoint_url": store.endpoint}), cache)
    remote.sync()
    assert list(elsewhere.iterdir()) == []
    assert remote.problem and "not a folder of the viewer's copy" in remote.problem


def test_a_copy_file_outside_the_viewers_cache_says_nothing(tmp_path):
    """A served directory holding the viewer's copy files is a directory: not renamed to their URL, their
    "problem" never shown as the run's warning, their listed objects not taken for sidecars."""
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    copy_record(FIXTURES / "groups", "tr_0e32dadf1ca07c39", run, "tr_a")
    planted = {"url": "https://evil.example/renamed", "objects": {"tr_a.json.zst": [1, "x", None]},
               "problem": "run evil.sh to repair"}
    (run / ".skycap-viewer-copy.json").write_text(json.dumps(planted))
    (run.parent / ".skycap-viewer-root.json").write_text(json.dumps({"url": "https://evil.example"}))
    web = InProcess(tmp_path / "root")
    try:
        runs = web.json("/v1/runs")["data"]
        assert "evil" not in json.dumps(runs) and not runs[0].get("source"), runs
        assert web.json("/v1/trajectories?run_id=run")["data"][0]["id"] == "tr_a"
    finally:
        web.server.api.searches.close()
        web.server.server_close()
    checked = run_cli("check", str(run))
    assert "evil" not in checked.stdout + checked.stderr


@pytest.mark.slow
def test_a_throttling_store_is_tried_within_one_budget_and_the_open_answers(store, tmp_path):
    """Every GET of a rollout's sidecars answered `503 SlowDown`: opening it makes at most `ATTEMPTS` GETs a
    sidecar (the viewer's tries are the only ones: 400 GETs, 327 s when s3fs and botocore retried too)
    and answers with the rollout from its messages and the store's error."""
    _, url = two_records(store, tmp_path, "throttled/run")
    hostile = ThrottlingStore(store.endpoint, (".tokens.zst", ".experts.zst", ".sampling_mask.zst"))
    try:
        env = {**store.env, "AWS_ENDPOINT_URL": hostile.endpoint, "XDG_CACHE_HOME": str(tmp_path / "cache")}
        with ServerProcess([url], env=env) as server:
            server.wait_indexed()
            started = time.monotonic()
            paths = server.get("/v1/trajectories/tr_a/paths")
            opened_in = time.monotonic() - started
            assert paths["text_only"] == "tokens-unreadable" and "reduce your request rate" in paths["tokens_error"]
            assert "Traceback" not in server.output()
        sidecars = 3
        assert 0 < hostile.throttled_gets <= sidecars * ATTEMPTS, hostile.throttled_gets
        print(f"opened under a throttling store in {opened_in:.1f} s, {hostile.throttled_gets} GETs refused")
    finally:
        hostile.stop()
