"""`/v1/trajectories/{id}/timeline`: every call and failure placed in time, from the real server.

What each test expects is computed here from the record's document (or, for the fixed-clock
records, written out): the order by start, the lane of each call's root, sub-lanes that never
overlap, failures at their `t`, the idle spans where no call ran, and calls without valid times
listed, not drawn."""

import pytest

from skycap_viewer.demo.writer import RecordBuilder
from skycap_viewer.record.document import read_document
from tests.support.corpus import FIXTURES
from tests.support.oracle import READABLE, READABLE_IDS
from tests.support.server_process import ServerProcess
from tests.support.timeline_record import RECORD, T0, write_timeline_record


def timeline_of(server, directory: str, record_id: str) -> dict:
    return server.get(f"/v1/trajectories/{record_id}/timeline?run_id={directory}")


def document_of(directory: str, record_id: str) -> dict:
    return read_document(FIXTURES / directory / f"{record_id}.json.zst")


def root_of(nodes: list[dict], node_id: int) -> int:
    while nodes[node_id]["parent"] is not None:
        node_id = nodes[node_id]["parent"]
    return node_id


def calls_in_time(document: dict) -> list[tuple]:
    """(start, end, node id) of every call the record times, by start, ties by node id."""
    calls = [(call["t_start"], call["t_end"], node["id"]) for node in document["nodes"]
             for call in node.get("calls") or []]
    return sorted(calls, key=lambda call: (call[0], call[2]))


def idle_spans(intervals: list[tuple]) -> list[tuple]:
    """(from, to) of every span no interval covers, between the first start and the last end."""
    spans, covered_to = [], None
    for start, end in sorted(intervals):
        if covered_to is not None and start > covered_to:
            spans.append((covered_to, start))
        covered_to = end if covered_to is None else max(covered_to, end)
    return spans


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


@pytest.mark.parametrize("directory,record_id,entry", READABLE, ids=READABLE_IDS)
def test_every_call_is_drawn_from_its_start_on_its_root_s_lane(corpus_server, directory, record_id, entry):
    timeline = timeline_of(corpus_server, directory, record_id)
    document = document_of(directory, record_id)
    nodes = document["nodes"]
    calls = calls_in_time(document)
    failures = document.get("failures") or []
    items = timeline["data"]
    assert timeline["call_count"] == len(calls) and timeline["failure_count"] == len(failures)
    assert [item["sequence"] for item in items] == list(range(len(items)))
    assert [item["node_id"] for item in items if item["kind"] == "call"] == [f"n{n}" for _, _, n in calls]
    if not items:
        assert timeline["lanes"] == [] and timeline["origin_at"] is None
        return
    origin = min([start for start, _, _ in calls] + [f["t"] for f in failures])
    drawn_calls = [item for item in items if item["kind"] == "call"]
    for item, (start, end, node_id) in zip(drawn_calls, calls, strict=True):
        assert (item["start_ms"], item["end_ms"]) == (ms(start - origin), ms(end - origin))
        lane = timeline["lanes"][item["lane"]]
        assert lane["root_node_id"] == f"n{root_of(nodes, node_id)}"
    roots = [lane["root_node_id"] for lane in timeline["lanes"]]
    assert len(set(roots)) == len(roots) == timeline["lane_count"]  # one lane per root
    starts = [item["start_ms"] for item in items]
    assert starts == sorted(starts)
    idle = idle_spans([(start, end) for start, end, _ in calls])
    assert [(item["idle_from_ms"], item["idle_ms"]) for item in items if item["idle_ms"] is not None] == [
        (ms(a - origin), ms(b - a)) for a, b in idle]
    assert timeline["gap_count"] == len(idle) and timeline["no_time_count"] == 0
    assert timeline["span_ms"] == max(item["end_ms"] for item in items)


def check_sub_lanes(timeline: dict):
    """Items on one sub-lane never overlap, and a lane has as many sub-lanes as items run at once on it."""
    for lane in timeline["lanes"]:
        on_lane = [item for item in timeline["data"] if item["lane"] == lane["lane"]]
        assert len(on_lane) == lane["call_count"] + lane["failure_count"]
        for sub in range(lane["sub_lanes"]):
            spans = sorted((i["start_ms"], i["end_ms"]) for i in on_lane if i["sub_lane"] == sub)
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
        at_once = max(sum(i["start_ms"] <= item["start_ms"] < i["end_ms"] or i is item for i in on_lane)
                      for item in on_lane)
        assert lane["sub_lanes"] == at_once


@pytest.mark.parametrize("directory,record_id,entry", READABLE, ids=READABLE_IDS)
def test_calls_on_one_sub_lane_never_overlap(corpus_server, directory, record_id, entry):
    check_sub_lanes(timeline_of(corpus_server, directory, record_id))


def test_a_fixed_clock_record_is_placed_to_the_millisecond(corpus_server):
    """rules/tr_rule_final_tree3: n1, then n2 (asked twice: two calls) with n3 in between, 25 ms apart."""
    timeline = timeline_of(corpus_server, "rules", "tr_rule_final_tree3")
    assert timeline["origin_at"] == "2026-08-06T07:18:27.162Z"
    assert [(i["node_id"], i["start_ms"], i["end_ms"]) for i in timeline["data"]] == [
        ("n1", 0.0, 12.5), ("n2", 37.5, 50.0), ("n3", 75.0, 87.5), ("n2", 112.5, 125.0)]
    assert [(i["idle_from_ms"], i["idle_ms"]) for i in timeline["data"]] == [
        (None, None), (12.5, 25.0), (50.0, 25.0), (87.5, 25.0)]
    assert (timeline["span_ms"], timeline["idle_ms"], timeline["gap_count"]) == (125.0, 75.0, 3)
    assert timeline["lanes"] == [{"lane": 0, "root_node_id": "n0", "sub_lanes": 1, "call_count": 4,
                                  "failure_count": 0, "from_ms": 0.0, "to_ms": 125.0}]


def test_a_subagent_s_calls_run_on_their_own_lane(corpus_server):
    """real-like/tr_86f0b750382298e2: the main conversation under n0, a second root n12 (its call n14)."""
    timeline = timeline_of(corpus_server, "real-like", "tr_86f0b750382298e2")
    assert [(lane["root_node_id"], lane["call_count"]) for lane in timeline["lanes"]] == [("n0", 5), ("n12", 1)]
    assert [(i["node_id"], i["lane"], i["path"]) for i in timeline["data"]] == [
        ("n2", 0, 0), ("n3", 0, 1), ("n6", 0, 2), ("n8", 0, 2), ("n11", 0, 3), ("n14", 1, 4)]
    last = timeline["data"][-1]
    assert (last["model"], last["finish_reason"], last["bridged"]) == ("policy", "stop", False)


def test_failed_calls_are_marked_at_their_time_and_do_not_end_an_idle_span(corpus_server):
    """real-like/tr_f4c44e2c3f5f9d60: two failures between the two calls; they name no node."""
    timeline = timeline_of(corpus_server, "real-like", "tr_f4c44e2c3f5f9d60")
    document = document_of("real-like", "tr_f4c44e2c3f5f9d60")
    origin = document["nodes"][1]["calls"][0]["t_start"]
    assert [i["kind"] for i in timeline["data"]] == ["call", "failure", "failure", "call"]
    failures = timeline["data"][1:3]
    for item, failure in zip(failures, document["failures"], strict=True):
        assert item["start_ms"] == item["end_ms"] == ms(failure["t"] - origin)
        assert (item["http_status"], item["error"]) == (500, failure["error"])
        assert item["node_id"] is None and item["path"] is None  # input_leaf null: nothing to select
        assert item["idle_ms"] is None
    no_node = timeline["lanes"][failures[0]["lane"]]
    assert no_node["root_node_id"] is None and no_node["failure_count"] == 2 and no_node["call_count"] == 0
    first, last = timeline["data"][0], timeline["data"][3]
    idle = document["nodes"][3]["calls"][0]["t_start"] - document["nodes"][1]["calls"][0]["t_end"]
    assert (last["idle_from_ms"], last["idle_ms"]) == (first["end_ms"], ms(idle))  # across both failures
    assert timeline["gap_count"] == 1


@pytest.fixture(scope="module")
def overlap_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("timeline")
    (root / "overlap").mkdir()
    ids = write_timeline_record(root / "overlap")
    with ServerProcess([root]) as server:
        server.wait_indexed()
        yield server, ids


def test_overlapping_calls_of_one_root_take_sub_lanes_ties_by_node_id(overlap_server):
    server, ids = overlap_server
    timeline = timeline_of(server, "overlap", RECORD)
    placed = {i["node_id"]: (i["lane"], i["sub_lane"], i["start_ms"], i["end_ms"])
              for i in timeline["data"] if i["kind"] == "call"}
    assert [i["node_id"] for i in timeline["data"]][:3] == [f"n{ids['long']}", f"n{ids['short']}", f"n{ids['sub']}"]
    assert placed[f"n{ids['long']}"] == (0, 0, 0.0, 5000.0)
    assert placed[f"n{ids['short']}"] == (0, 1, 0.0, 2000.0)  # same start: the higher id, one sub-lane down
    assert placed[f"n{ids['sub']}"] == (1, 0, 1000.0, 3000.0)  # the subagent: its own lane, overlapping
    assert placed[f"n{ids['last']}"] == (0, 0, 20000.0, 21000.0)  # sub-lane 0 is free again
    check_sub_lanes(timeline)
    assert [(lane["root_node_id"], lane["sub_lanes"]) for lane in timeline["lanes"]] == [
        (f"n{ids['system']}", 2), (f"n{ids['sub_root']}", 1), (None, 1)]
    failure = next(i for i in timeline["data"] if i["kind"] == "failure")
    assert (failure["lane"], failure["start_ms"]) == (2, 10000.0)
    assert (failure["http_status"], failure["error"]) == (504, "upstream timeout")
    assert failure["started_at"] == "2026-09-21T14:13:30.000Z"


def test_the_idle_span_is_where_no_call_runs_on_any_lane(overlap_server):
    server, ids = overlap_server
    timeline = timeline_of(server, "overlap", RECORD)
    idle = [(i["node_id"], i["idle_from_ms"], i["idle_ms"]) for i in timeline["data"] if i["idle_ms"] is not None]
    assert idle == [(f"n{ids['last']}", 5000.0, 15000.0)]  # the subagent ran inside the long call: no gap at 3 s
    assert (timeline["span_ms"], timeline["idle_ms"], timeline["gap_count"]) == (21000.0, 15000.0, 1)


def test_a_call_without_a_valid_time_is_listed_last_and_not_drawn(overlap_server):
    server, ids = overlap_server
    timeline = timeline_of(server, "overlap", RECORD)
    untimed = timeline["data"][-1]
    assert untimed["node_id"] == f"n{ids['untimed']}" and untimed["no_time"] == "t_end is not a time"
    assert all(untimed[key] is None for key in ("lane", "sub_lane", "start_ms", "end_ms", "duration_ms"))
    assert timeline["no_time_count"] == 1 and timeline["call_count"] == 5
    assert all(i["no_time"] is None for i in timeline["data"][:-1])
    assert untimed["started_at"] == "2026-09-21T14:13:41.400Z"  # its t_start, as the record has it


def test_bad_times_are_named_never_drawn_at_zero(tmp_path):
    builder = RecordBuilder("tr_odd_times", "text", created_at=T0)
    user = builder.add_client(None, "user", "hi")
    null_start = builder.add_model(user, "one")
    backwards = builder.add_model(builder.add_client(null_start, "user", "more"), "two")
    good = builder.add_model(builder.add_client(backwards, "user", "again"), "three")
    builder.add_failure()
    builder.nodes[null_start]["calls"][0]["t_start"] = None  # a graph-API record may leave times null
    call = builder.nodes[backwards]["calls"][0]
    call["t_end"] = call["t_start"] - 1
    builder.failures[0]["t"] = "soon"
    (tmp_path / "odd").mkdir()
    builder.write(tmp_path / "odd")
    with ServerProcess([tmp_path]) as server:
        server.wait_indexed()
        timeline = timeline_of(server, "odd", "tr_odd_times")
    assert [(i["kind"], i["node_id"], i["no_time"]) for i in timeline["data"]] == [
        ("call", f"n{backwards}", "t_end is before t_start"), ("call", f"n{good}", None),
        ("call", f"n{null_start}", "t_start is not a time"), ("failure", None, "t is not a time")]
    drawn = timeline["data"][1]
    assert (drawn["start_ms"], drawn["lane"], drawn["idle_ms"]) == (0.0, 0, None)  # the one timed call is the origin
    assert timeline["origin_at"] == drawn["started_at"] and timeline["no_time_count"] == 3
    assert [lane["call_count"] for lane in timeline["lanes"]] == [1]
