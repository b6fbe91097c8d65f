"""The Python API answers what the HTTP API answers: the same questions put to both, over every run of
the corpus, compared whole. The server runs as a process (`tests/server_process.py`); the Python API
is the package's `open()` in this process. Both are told not to verify sidecars in the background, so
neither answer changes while they are compared.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from html import escape
from html.parser import HTMLParser
from urllib.parse import quote, urlencode

import pytest

import skycap_viewer
from skycap_viewer.errors import ApiError
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.oracle import RECORD_DIRS
from tests.support.server_process import served

pytestmark = pytest.mark.slow  # a server and a viewer over the whole corpus, every record asked


@pytest.fixture(scope="module")
def server(corpus):
    yield from served([corpus], "--no-verify")


@pytest.fixture(scope="module")
def viewer(corpus):
    with skycap_viewer.open(corpus, cache=False, verify=False) as opened:
        yield opened


def http(server, path: str, **params):
    """(status, answer) of a GET: its JSON, or a file's bytes."""
    query = urlencode([(name, as_text(item)) for name, value in params.items() if value is not None
                       for item in (value if isinstance(value, list) else [value])])
    status, headers, body = server.request(path + ("?" + query if query else ""))
    return status, body if headers.get("Content-Type", "").startswith("text/html") else json.loads(body)


def as_text(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def python(ask):
    """(status, answer) of a Python call, a refusal as HTTP sends it."""
    try:
        return 200, ask()
    except ApiError as error:
        return error.status, {"detail": error.detail}


def every_page(server, path: str, **params) -> list:
    page = http(server, path, **params)[1]
    rows = list(page["data"])
    while page["next_cursor"] is not None:
        page = http(server, path, **params, cursor=page["next_cursor"])[1]
        rows += page["data"]
    return rows


RUNS = [directory.replace("/", "-") for directory in RECORD_DIRS]


def run_ids(server) -> list[str]:
    return sorted(run["id"] for run in server.get("/v1/runs")["data"])


def test_the_runs_are_the_servers(server, viewer):
    assert viewer.runs() == server.get("/v1/runs")["data"]
    assert len(viewer.runs()) == len(RECORD_DIRS)


FILTERS = [{}, {"step": 1}, {"flag": "truncated"}, {"exclude_flag": ["forked", "truncated"]},
           {"status": "finished", "sort": "reward", "order": "asc"}, {"reward_min": 0.5, "limit": 2},
           {"annotation": "stop_reason=error"}, {"q": "task"}, {"sort": "tokens", "limit": 3}]


@pytest.mark.parametrize("filters", FILTERS, ids=lambda filters: urlencode(filters, doseq=True) or "all")
def test_rollouts_and_groups_are_the_servers_on_every_run(server, viewer, filters):
    for run in run_ids(server):
        assert list(viewer.rollouts(run, **filters)) == every_page(server, "/v1/trajectories", run_id=run, **filters)
        assert list(viewer.groups(run, **filters)) == every_page(server, "/v1/groups", run_id=run, **filters)
    assert list(viewer.rollouts(**filters)) == every_page(server, "/v1/trajectories", **filters)


def test_a_listing_page_is_the_servers_whole(server, viewer):
    for run in run_ids(server):
        assert viewer.listing(run, limit=2) == http(server, "/v1/trajectories", run_id=run, limit=2)[1]


def test_a_bad_filter_is_the_servers_refusal(server, viewer):
    asked = python(lambda: list(viewer.rollouts(reward_min="lots")))
    assert asked == http(server, "/v1/trajectories", reward_min="lots") == (
        400, {"detail": "reward_min must be a number, not 'lots'"})
    with pytest.raises(TypeError, match="unknown parameter.*stpe"):
        list(viewer.rollouts(stpe=3))


def record_questions(record_id: str, run: str, path_count: int):
    """(Python call, HTTP path and params) pairs about one record: every route the Rollout asks."""
    base = f"/v1/trajectories/{quote(record_id, safe='')}"
    scope = {"run_id": run}
    yield "header", lambda v: v.rollout(record_id, run).header, base, scope
    yield "paths", lambda v: v.rollout(record_id, run).paths(), base + "/paths", {**scope, "text": "false"}
    yield "graph", lambda v: v.rollout(record_id, run).graph(), base + "/graph", scope
    yield "calls", lambda v: v.rollout(record_id, run).calls(), base + "/exchanges", scope
    yield "snapshot", lambda v: v.rollout(record_id, run).snapshot(), base + "/snapshot", scope
    for number in range(min(path_count, 3)):
        path = f"{base}/paths/{number}"
        yield f"row {number}", lambda v, n=number: v.rollout(record_id, run).path(n).row(), path + "/row", scope
        yield f"chat {number}", lambda v, n=number: v.rollout(record_id, run).path(n).chat(), path + "/chat", scope
        yield (f"messages {number}", lambda v, n=number: v.rollout(record_id, run).path(n).messages(),
               path + "/messages", scope)


def without_part(answer):
    return {key: value for key, value in answer.items() if key != "part"} if isinstance(answer, dict) else answer


def test_every_record_answers_as_the_server_does(server, viewer):
    asked = 0
    for run in run_ids(server):
        for row in every_page(server, "/v1/trajectories", run_id=run, limit=1000):
            paths = (row.get("summary") or {}).get("paths") or 1
            for name, call, path, params in record_questions(row["id"], run, paths):
                status, answer = http(server, path, **params)
                if name == "paths" and status == 200:
                    answer = answer["paths"]
                mine = python(lambda call=call: call(viewer))
                assert (mine[0], without_part(mine[1])) == (status, without_part(answer)), (run, row["id"], name)
                asked += 1
    assert asked > 500


def test_a_paths_text_is_its_nodes_text_as_the_server_sends_it(server, viewer):
    for run in run_ids(server):
        for row in every_page(server, "/v1/trajectories", run_id=run, limit=1000)[:3]:
            if row.get("unreadable"):
                continue
            answer = http(server, f"/v1/trajectories/{quote(row['id'], safe='')}/paths", run_id=run)[1]
            first = answer["paths"][0]
            shown = "".join(answer["nodes"][node_id]["text"] or "" for node_id in first["node_ids"])
            assert viewer.rollout(row["id"], run).path(0).text() == shown


def test_a_search_streams_the_servers_hits(server, viewer):
    for run, text, options in (("groups", "solve", {"kind": "given"}), ("spec", "e[a-z]", {"regex": True})):
        mine = list(viewer.search(text, run, **options))
        theirs = []
        page = http(server, "/v1/search", run_id=run, text=text, **options, limit=5)[1]
        theirs += page["data"]
        while page["next_cursor"]:
            page = http(server, "/v1/search", run_id=run, text=text, **options, cursor=page["next_cursor"])[1]
            theirs += page["data"]
        key = lambda hit: (hit["trajectory_id"], hit["node_id"], hit["start"])  # noqa: E731 (finish order varies)
        assert sorted(mine, key=key) == sorted(theirs, key=key)
        assert mine


def test_check_is_the_check_commands_verdict(corpus, viewer):
    for directory in ("broken", "spec"):
        done = run_cli("check", corpus / directory, "--json", "--forks")
        listed = {entry["id"]: entry for entry in json.loads(done.stdout)["directories"][0]["records"]}
        ids = [row["id"] for row in viewer.rollouts(directory)]
        for record_id in ids:
            verdict = viewer.rollout(record_id, directory).check()
            assert verdict == listed.get(record_id, {"id": record_id, "problems": [], "findings": [], "forks": []})
        assert listed and set(listed) <= set(ids)


def test_trainer_rows_are_the_exports_lines(server, viewer):
    for run in ("groups", "rules", "groups-text"):
        status, _, body = server.request(f"/v1/trajectories/export?run_id={run}&format=rows")
        assert status == 200
        lines = [json.loads(line) for line in body.splitlines()]
        assert list(viewer.trainer_rows(viewer.rollouts(run))) == lines


class Frames(HTMLParser):
    def __init__(self):
        super().__init__()
        self.frames = []

    def handle_starttag(self, tag, attrs):
        self.frames.append((tag, dict(attrs)))


def test_a_rollout_shows_in_a_notebook_as_its_snapshot_in_one_sandboxed_frame(viewer):
    rollout = viewer.rollout(next(viewer.rollouts("groups"))["id"], "groups")
    parser = Frames()
    parser.feed(rollout._repr_html_())
    parser.close()
    assert [tag for tag, _ in parser.frames] == ["iframe"]
    attributes = parser.frames[0][1]
    assert attributes["sandbox"] == "allow-scripts"
    document = attributes["srcdoc"]
    assert document == rollout.snapshot().decode("utf-8")
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'' in document
    assert rollout.id in document


def test_rows_become_a_frame_only_with_the_users_library(viewer):
    rows = viewer.runs()
    for name, make in (("pandas", rows.to_pandas), ("polars", rows.to_polars)):
        try:
            __import__(name)
        except ImportError:
            with pytest.raises(ImportError, match=f"pip install {name}"):
                make()
        else:
            assert len(make()) == len(rows)


def test_the_viewers_threads_are_daemons_and_stop_when_it_closes(corpus):
    with skycap_viewer.open(corpus / "groups", cache=False) as opened:
        assert opened.watcher.daemon and opened.watcher.is_alive()
    assert not opened.watcher.is_alive()


def test_a_directory_that_is_not_there_is_said_in_one_line(tmp_path):
    with pytest.raises(NotADirectoryError, match="not a directory: .*nowhere"):
        skycap_viewer.open(tmp_path / "nowhere")


def test_a_plain_install_needs_nothing_for_the_api():
    """`import skycap_viewer; skycap_viewer.open` in a fresh interpreter, no test extra imported."""
    script = "import skycap_viewer, sys; skycap_viewer.open; print('pandas' in sys.modules, 'mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_an_unreadable_rollout_shows_why_instead_of_a_snapshot(viewer):
    unreadable = [row for row in viewer.rollouts("broken") if row.get("unreadable")]
    assert unreadable
    rollout = viewer.rollout(unreadable[0]["id"], "broken")
    with pytest.raises(ApiError) as refused:
        rollout.snapshot()
    assert refused.value.status == 422
    assert rollout._repr_html_() == f"<p>rollout {escape(rollout.id)}: {escape(refused.value.detail)}</p>"


def test_a_record_written_while_the_viewer_is_open_is_listed(tmp_path):
    source = FIXTURES / "groups"
    names = sorted(path.name for path in source.iterdir() if path.is_file())
    held = names[0].split(".")[0]
    run = tmp_path / "live"
    run.mkdir()
    for name in names:
        if not name.startswith(held):
            shutil.copy2(source / name, run / name)
    with skycap_viewer.open(run, cache=False) as opened:
        before = [row["id"] for row in opened.rollouts()]
        assert held not in before
        for name in names:
            if name.startswith(held):
                shutil.copy2(source / name, run / f".{name}")
                os.replace(run / f".{name}", run / name)  # as skycap writes: renamed in whole
        deadline = time.monotonic() + 30
        while held not in [row["id"] for row in opened.rollouts()]:
            assert time.monotonic() < deadline, "the new record was never listed"
            time.sleep(0.05)
        assert opened.rollout(held).header["id"] == held


def test_a_store_url_opens_as_its_directory_does(tmp_path, monkeypatch):
    from tests.support.s3_store import S3Store

    store = S3Store(tmp_path / "cache")
    try:
        for name, value in store.env.items():
            monkeypatch.setenv(name, value)
        url = store.upload(FIXTURES / "groups", "job/groups")
        with skycap_viewer.open(url) as remote, skycap_viewer.open(FIXTURES / "groups", cache=False) as here:
            rows = list(here.rollouts(sort="reward"))
            assert [row["id"] for row in remote.rollouts(sort="reward")] == [row["id"] for row in rows]
            assert remote.runs()[0]["source"]["url"] == url
            assert remote.rollout(rows[0]["id"]).path(0).row() == here.rollout(rows[0]["id"]).path(0).row()
        assert (tmp_path / "cache" / "skycap-viewer" / "remote").is_dir()
    finally:
        store.stop()
