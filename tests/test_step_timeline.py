"""A step on one time axis: `/v1/steps/timeline` and `skycap-viewer timeline`, against a run whose call times
are known (`tests/support/step_timeline_run.py`) with a run index marking trained and superseded attempts.

Served by the real handler in process (`tests/test_web.py`'s seam); the command is run as a user runs it.
"""

import json
import os
import sqlite3
from contextlib import contextmanager

import pytest

from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY
from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.persisted import IndexFiles
from skycap_viewer.catalog.store import RunStore
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.record.lane import rollout_lane, time_order, times
from skycap_viewer.views.record.trajectory import WHOLE, PartLimit
from skycap_viewer.views.run.step_timeline import step_timeline_answer
from skycap_viewer.wire import encode_json
from tests.support.cli import run_cli
from tests.support.in_process import InProcess
from tests.support.step_timeline_run import BY_START, CRITICAL, STEP, rollout, write_step_run

LANE_A = {
    "trajectory_id": "tr_step_a", "group_key": "3~t1", "task_id": "t1", "status": "finished", "reward": 1,
    "started_at": "2026-09-21T14:13:20.000Z", "ended_at": "2026-09-21T14:13:27.000Z", "start_ms": 0.0,
    "end_ms": 7000.0, "trained": True, "superseded": False, "flags": [], "longest_gap_ms": 2000.0,
    "calls": [{"start_ms": 1000.0, "end_ms": 3000.0, "node_id": "n1", "finish_reason": "stop", "tokens": 2},
              {"start_ms": 5000.0, "end_ms": 6000.0, "node_id": "n3", "finish_reason": "tool_calls", "tokens": 2}],
    "failures": [],
}


def serve(directory):
    return InProcess(directory)


@pytest.fixture
def run_dir(tmp_path):
    return write_step_run(tmp_path / "root" / "steps")


@pytest.fixture
def web(run_dir):
    server = serve(run_dir.parent)
    yield server
    server.server.api.searches.close()
    server.server.server_close()


def timeline(web, query: str = "", status: int = 200):
    return web.json(f"/v1/steps/timeline?run_id=steps&step={STEP}{query}", status)


def ids(answer) -> list:
    return [lane["trajectory_id"] for lane in answer["lanes"]]


def test_every_rollout_of_the_step_is_a_lane_in_ms_from_the_steps_origin(web):
    answer = timeline(web)
    assert ids(answer) == BY_START  # by start; tr_step_d is at step 4
    assert answer["lanes"][0] == LANE_A
    assert {key: answer[key] for key in ("step", "origin_at", "span_ms", "lanes_total", "rollouts", "critical")} == {
        "step": 3, "origin_at": "2026-09-21T14:13:20.000Z", "span_ms": 12000.0, "lanes_total": 3, "rollouts": 3,
        "critical": CRITICAL}
    assert answer["part"] == {"from": 0, "to": 3, "total": 3}
    c, b = answer["lanes"][1:]
    assert (c["start_ms"], c["end_ms"], c["trained"], c["superseded"]) == (500.0, 2000.0, False, True)
    assert [call["start_ms"] for call in c["calls"]] == [500.0]
    # the critical rollout ends at its finished_at (12 s), after its call (4 s) and its failure (7 s)
    assert (b["start_ms"], b["end_ms"], b["status"], b["reward"]) == (2000.0, 12000.0, "failed", 0.5)
    assert [(call["finish_reason"], call["end_ms"]) for call in b["calls"]] == [("length", 4000.0)]
    failure = b["failures"][0]
    assert (failure["at_ms"], failure["end_ms"], failure["status"]) == (7000.0, 7000.0, 504)
    assert failure["message"].startswith("upstream timeout") and len(failure["message"]) == 300  # cut
    assert (b["trained"], b["superseded"]) == (False, False) and "not-trained" in b["flags"]
    other = web.json("/v1/steps/timeline?run_id=steps&step=4")
    assert ids(other) == ["tr_step_d"] and other["critical"] == "tr_step_d" and other["span_ms"] == 40000.0


@pytest.mark.parametrize(("query", "expected"), [
    ("&sort=end", ["tr_step_b", "tr_step_a", "tr_step_c"]),
    ("&sort=end&order=asc", ["tr_step_c", "tr_step_a", "tr_step_b"]),
    ("&sort=duration", ["tr_step_b", "tr_step_a", "tr_step_c"]),
    ("&sort=reward", ["tr_step_a", "tr_step_b", "tr_step_c"]),
    ("&sort=task&order=asc", ["tr_step_a", "tr_step_b", "tr_step_c"]),
    ("&sort=start&order=desc", ["tr_step_b", "tr_step_c", "tr_step_a"]),
])
def test_sort_orders_the_lanes(web, query, expected):
    assert ids(timeline(web, query)) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("&flag=not-trained", ["tr_step_b"]),
    ("&exclude_flag=not-trained", ["tr_step_a", "tr_step_c"]),
    ("&task_id=t2", ["tr_step_c"]),
    ("&status=failed", ["tr_step_b"]),
    ("&trained=true", ["tr_step_a"]),
    ("&reward_min=0.5", ["tr_step_a", "tr_step_b"]),
    ("&q=tr_step_c", ["tr_step_c"]),
])
def test_the_listings_filters_keep_lanes_on_the_steps_own_axis(web, query, expected):
    answer = timeline(web, query)
    assert ids(answer) == expected and answer["lanes_total"] == len(expected)
    # the axis is the step's: its origin, span and critical rollout do not move with the filters
    assert (answer["origin_at"], answer["span_ms"], answer["critical"]) == ("2026-09-21T14:13:20.000Z", 12000.0,
                                                                           CRITICAL)


@pytest.mark.parametrize(("target", "status", "says"), [
    ("/v1/steps/timeline?run_id=steps", 400, "pass step"),
    ("/v1/steps/timeline?step=3", 400, "pass run_id"),
    ("/v1/steps/timeline?run_id=nope&step=3", 404, "no run nope"),
    ("/v1/steps/timeline?run_id=steps&step=three", 400, "step must be a number"),
    ("/v1/steps/timeline?run_id=steps&step=3&sort=tokens", 400, "sort must be one of start|end|duration|reward|task"),
    ("/v1/steps/timeline?run_id=steps&step=3&flag=bogus", 400, "flag must be one of"),
    ("/v1/steps/timeline?run_id=steps&step=3&from=3", 400, "from must be a position in 0..2"),
])
def test_a_bad_request_says_what_is_wrong(web, target, status, says):
    assert says in web.json(target, status)["detail"]


def test_past_a_part_the_lanes_come_in_parts_from_next(web):
    web.server.api.part_limit = PartLimit(items=2)
    first = timeline(web)
    assert ids(first) == BY_START[:2] and first["part"] == {"from": 0, "to": 2, "total": 3, "next": 2}
    rest = timeline(web, f"&from={first['part']['next']}")
    assert ids(rest) == BY_START[2:] and rest["part"] == {"from": 2, "to": 3, "total": 3}
    assert "critical" not in rest and "origin_at" not in rest  # the first part's


def test_the_lanes_come_from_the_store_never_from_the_documents_or_sidecars(web, run_dir):
    """Every lane was computed when the run was indexed: with every file of the run damaged after that
    (the watcher not yet told), the step answers whole, in every sort and part."""
    for path in run_dir.iterdir():
        if path.is_file():
            path.write_bytes(b"not zstd at all")
    answer = timeline(web)
    assert ids(answer) == BY_START and answer["lanes"][0] == LANE_A and answer["critical"] == CRITICAL
    assert ids(timeline(web, "&sort=end")) == ["tr_step_b", "tr_step_a", "tr_step_c"]
    assert ids(timeline(web, "&from=1")) == BY_START[1:]


@contextmanager
def unreadable(path):
    """`path` damaged while the block runs (the watcher not told), then as it was."""
    kept = path.read_bytes()
    path.write_bytes(b"not zstd at all")
    try:
        yield
    finally:
        path.write_bytes(kept)


def test_records_a_live_run_adds_get_their_lanes_as_they_are_indexed(web, run_dir):
    """A live run's few new records are indexed in the server's own process: their lanes are computed
    there, as they are read (each document is damaged before the step is asked: never read again)."""
    first = timeline(web)
    rollout(run_dir, "tr_step_f", created=0, calls=[(0, 1, "stop")], finished=2, step=4)  # a new generation...
    web.watcher.poll()
    kept = timeline(web, "&sort=duration&order=asc")
    assert ids(kept) == ["tr_step_c", "tr_step_a", "tr_step_b"] and kept["version"] == first["version"]  # ...not 3's
    with unreadable(run_dir / "tr_step_f.json.zst"):
        assert ids(web.json("/v1/steps/timeline?run_id=steps&step=4")) == ["tr_step_d", "tr_step_f"]
    rollout(run_dir, "tr_step_e", created=20, calls=[(20, 25, "stop")], finished=26)  # one of step 3
    web.watcher.poll()
    with unreadable(run_dir / "tr_step_e.json.zst"):
        again = timeline(web)
    assert ids(again) == [*BY_START, "tr_step_e"] and again["critical"] == "tr_step_e"
    assert again["version"] != first["version"] and again["lanes"][0] == LANE_A
    assert (again["lanes"][-1]["start_ms"], again["lanes"][-1]["end_ms"], again["span_ms"]) == (20000.0, 26000.0,
                                                                                                 26000.0)
    rollout(run_dir, "tr_step_0", created=-5, calls=[(-4, -3, "stop")], finished=-2)  # before the origin:
    web.watcher.poll()
    with unreadable(run_dir / "tr_step_0.json.zst"):
        moved = timeline(web)
    assert ids(moved) == ["tr_step_0", *BY_START, "tr_step_e"] and moved["span_ms"] == 31000.0
    assert moved["origin_at"] == "2026-09-21T14:13:15.000Z"
    assert moved["lanes"][1]["calls"][0]["start_ms"] == 6000.0  # every lane on the new axis


def test_what_the_run_index_says_now_is_on_the_lanes_and_moves_the_version(web, run_dir):
    first = timeline(web)
    written = run_dir / "index" / f"step-{STEP}.json"
    index = json.loads(written.read_text())
    index["rows"][1]["trained"] = True  # tr_step_b, trained after all
    written.write_text(json.dumps(index, indent=1))  # another size: read again
    web.watcher.poll()
    again = timeline(web)
    b = again["lanes"][2]
    assert (b["trajectory_id"], b["trained"], "not-trained" in b["flags"]) == ("tr_step_b", True, False)
    assert again["version"] != first["version"] and ids(timeline(web, "&trained=true")) == ["tr_step_a", "tr_step_b"]


def test_a_rollout_written_again_is_its_new_lane_and_moves_the_version(web, run_dir):
    first = timeline(web)
    path = run_dir / "tr_step_c.json.zst"
    mtime = path.stat().st_mtime_ns
    rollout(run_dir, "tr_step_c", created=0.5, calls=[(0.5, 1.5, "stop")], finished=2, task="t2", status="failed")
    os.utime(path, ns=(mtime + 10**9, mtime + 10**9))  # a new version even on a coarse clock
    web.watcher.poll()
    again = timeline(web)
    assert again["version"] != first["version"] and ids(again) == BY_START
    assert again["lanes"][1]["status"] == "failed" and again["lanes"][1]["calls"] == first["lanes"][1]["calls"]


def test_a_rollout_deleted_leaves_its_step_and_the_axis_follows(web, run_dir):
    (run_dir / f"{CRITICAL}.json.zst").unlink()
    web.watcher.poll()
    answer = timeline(web)
    assert ids(answer) == ["tr_step_a", "tr_step_c"] and answer["rollouts"] == 2
    assert (answer["critical"], answer["span_ms"]) == ("tr_step_a", 7000.0)


def test_without_a_run_index_trained_and_superseded_are_null(tmp_path):
    run_dir = write_step_run(tmp_path / "root" / "steps", with_index=False)
    web = serve(run_dir.parent)
    lanes = timeline(web)["lanes"]
    assert {(lane["trained"], lane["superseded"]) for lane in lanes} == {(None, None)}


def test_a_document_damaged_after_indexing_leaves_the_step_once_read_again(web, run_dir):
    (run_dir / "tr_step_c.json.zst").write_bytes(b"not zstd at all")
    web.watcher.poll()  # its row is now unreadable: no step to be on, listed in the run with its error
    answer = timeline(web)
    assert ids(answer) == ["tr_step_a", "tr_step_b"] and answer["rollouts"] == 2 and answer["lanes_total"] == 2
    listed = web.json("/v1/trajectories?run_id=steps&flag=malformed-record")["data"]
    assert [row["id"] for row in listed] == ["tr_step_c"]


def test_an_index_made_before_lanes_were_kept_is_built_again(run_dir, tmp_path):
    cache = tmp_path / "cache"
    catalog = Catalog([run_dir], IndexFiles(cache))
    Watcher(catalog, verify=False).poll()
    for run in catalog.runs.values():
        run.store.close()
    path = IndexFiles(cache).database_for(run_dir, catalog.group_by)[0]
    with sqlite3.connect(path) as db:  # as the viewer before this schema left it
        db.execute("DROP TABLE lanes")
        db.execute("UPDATE facts SET value = 5 WHERE key = 'schema'")
    catalog = Catalog([run_dir], IndexFiles(cache))
    Watcher(catalog, verify=False).poll()
    answer = step_timeline_answer(catalog.snapshot("steps"), {"step": [str(STEP)]}, WHOLE)
    assert json.loads(encode_json(answer))["lanes"][0] == LANE_A and answer["critical"] == CRITICAL


def test_while_a_run_is_first_indexed_the_lanes_have_no_index_and_the_answer_is_the_same(run_dir, tmp_path):
    """The lanes' indexes are listing indexes, built once a run's first indexing is done (kept row by row, they
    were a third of a worker's write): the step timeline meanwhile scans the step's lanes, and says the same."""
    catalog = Catalog([run_dir], IndexFiles(tmp_path / "cache"))
    Watcher(catalog, verify=False).poll()
    (run,) = catalog.runs.values()
    snapshot = catalog.snapshot("steps")
    params = {"step": [str(STEP)], "sort": ["end"], "order": ["desc"]}
    indexed = [encode_json(step_timeline_answer(snapshot, query, WHOLE)) for query in ({"step": [str(STEP)]}, params)]
    with snapshot.reading() as db:
        assert {"lanes_by_start", "lanes_by_end"} <= {name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index'")}
    run.store.db.execute("DROP INDEX lanes_by_start")
    run.store.db.execute("DROP INDEX lanes_by_end")
    scanned = [encode_json(step_timeline_answer(snapshot, query, WHOLE)) for query in ({"step": [str(STEP)]}, params)]
    assert scanned == indexed
    fresh = RunStore(tmp_path / "fresh.sqlite", {"run": "fresh"}, DEFAULT_GROUP_BY)
    assert not any("lanes" in name for (name,) in fresh.db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index'")), "not kept while a run is first indexed"


def test_the_command_prints_a_line_per_lane_the_critical_rollout_first(run_dir):
    done = run_cli("timeline", run_dir, "--step", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("step 3 · 3 rollouts · span 12000 ms from 2026-09-21T14:13:20.000Z")
    assert lines[1:] == [
        "tr_step_b  start 2000 ms  end 12000 ms  calls 1  failures 1  longest gap -  (critical: ended last)",
        "tr_step_a  start 0 ms  end 7000 ms  calls 2  failures 0  longest gap 2000 ms",
        "tr_step_c  start 500 ms  end 2000 ms  calls 1  failures 0  longest gap -",
    ]


def test_the_commands_json_is_the_routes_answer_whole(run_dir, web):
    done = run_cli("timeline", run_dir, "--step", "3", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == timeline(web)


@pytest.mark.parametrize(("args", "says"), [
    (["--step", "three"], "step must be a number, not 'three'"),
    (["--step", "9"], "no rollouts at step 9"),
])
def test_the_command_refuses_a_step_in_one_line(run_dir, args, says):
    done = run_cli("timeline", run_dir, *args)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_lane_holds_the_calls_and_failures_the_rollouts_timeline_draws_in_its_order():
    """A lane times each call once and sorts by start (`rollout_lane`); the Timeline tab walks `time_order` and
    `times`: ties, calls out of order, times that are no times and ends before starts give both the same."""
    calls = [[{"t_start": 5, "t_end": 6.0}, {"t_start": 2.0, "t_end": 3}], [{"t_start": 2, "t_end": 2.5}],
             [{"t_start": True, "t_end": 9}, {"t_start": 4, "t_end": 1}, {"t_start": 10**400, "t_end": 1},
              {"t_start": 1, "t_end": float("nan")}, {"t_start": 0.5, "t_end": "x"}, {"t_start": 7, "t_end": 8}]]
    document = {"nodes": [{"id": n, "calls": node_calls} for n, node_calls in enumerate(calls)] + [{"id": 3}],
                "failures": [{"t": 6.5, "status": 500}, {"t": None}, {"t": 2, "status": 429, "error": "slow"}]}
    drawn = [(n, at, times(document, n, at)) for n, at in time_order(document)]
    expected_calls = [(start, end, f"n{n}") for n, at, (start, end, _) in drawn if n is not None and start is not None]
    expected_failures = [(start, document["failures"][at]["status"]) for n, at, (start, _, _) in drawn
                         if n is None and start is not None]
    says = rollout_lane(document)[2]
    assert [call[:3] for call in says[4]] == expected_calls == [(2.0, 3, "n0"), (2, 2.5, "n1"), (5, 6.0, "n0"),
                                                                (7, 8, "n2")]
    assert [failure[:2] for failure in says[5]] == expected_failures == [(2, 429), (6.5, 500)]
