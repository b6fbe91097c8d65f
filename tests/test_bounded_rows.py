"""Bounded rows: a record whose `meta` or `annotations` hold megabytes (a 4 M integer list fits in
a small document) is listed with those values cut and said cut, its facts read from the whole values,
and the record's own answer gives them whole; the server holds no copy of them for the session."""

import json

import pytest

from skycap_viewer.catalog.rows import (
    KEY_LIMIT,
    MAPPING_JSON_LIMIT,
    SORTED_JSON,
    STRIP_SEGMENTS,
    VALUE_JSON_LIMIT,
    bounded_mapping,
    compute_row,
    public,
)
from skycap_viewer.wire import encode_json
from tests.support.corpus import BROKEN
from tests.support.process_memory import PeakMemory, resident_bytes
from tests.support.records import atomic_write, copy_record, encode_document
from tests.support.server_process import ServerProcess, all_verified, wait_for

MIB = 2**20
BIG = 4_000_000  # integers in a huge meta value: ~30 MB of JSON, ~150 MB as Python objects
HUGE_IDS = ("tr_huge_0", "tr_huge_1")
MANY_KEYS = 100_000
LISTING_BOUND = 24 * 1024  # bytes: five rows, one of them with a full 8 KiB meta
HELD_BOUND = 200 * MIB  # the server's RSS once settled: the old rows held ~300 MiB per huge record


def huge(index):
    def edit(document):
        document["meta"] = {"step": 3, "task_id": "t-7", "attempt": 1, "big": list(range(index, BIG + index))}
        document["annotations"] = {"reward": 0.75, "blob": "x" * 5000, "stop_reason": "done"}
    return edit


def many_keys(document):
    """Many small keys, one too long to keep, and the step last: read before the keys are cut."""
    document["meta"] = {**{f"k{i}": i for i in range(MANY_KEYS)}, "y" * (KEY_LIMIT + 1): 1, "step": 5}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bounded") / "big"
    directory.mkdir()
    copy_record(BROKEN, "tr_ok", directory, "tr_ok")
    for index, record_id in enumerate(HUGE_IDS):
        copy_record(BROKEN, "tr_ok", directory, record_id, edit=huge(index))
    copy_record(BROKEN, "tr_ok", directory, "tr_many_keys", edit=many_keys)
    return directory


@pytest.fixture(scope="module")
def served_run(run):
    """(server, listing bytes, resident bytes once indexed and listed, peak resident bytes)."""
    with ServerProcess([run]) as server:
        with PeakMemory(server.process.pid) as peak:
            server.wait_indexed()
            status, _, body = server.request("/v1/trajectories?run_id=big&limit=1000")
            assert status == 200
            # what the rows hold is held by the server's own process: its indexing and verifying workers
            # are let go after 10 s idle, and while they live they hold each huge document they parsed
            # (the tree was seen at 247-264 MiB with them on CI's busy workers, 135 MiB without)
            wait_for(lambda: all_verified(server), "every record verified", timeout=180)
            held = resident_bytes(server.process.pid)
        print(f"listing {len(body)} bytes; server {held / MIB:.0f} MiB settled, tree peak {peak.bytes / MIB:.0f}")
        yield server, body, held
        assert "Traceback" not in server.output()


def rows_of(body) -> dict:
    return {row["id"]: row for row in json.loads(body)["data"]}


@pytest.mark.slow
def test_the_listing_and_the_memory_held_are_bounded(served_run):
    _, body, held = served_run
    assert len(rows_of(body)) == 4
    assert len(body) < LISTING_BOUND
    assert held < HELD_BOUND


def test_a_cut_value_is_said_cut_and_the_facts_come_from_the_whole_value(served_run):
    row = rows_of(served_run[1])["tr_huge_0"]
    big_json = len(json.dumps(list(range(BIG)), separators=(",", ":")))
    assert row["meta"] == {"step": 3, "task_id": "t-7", "attempt": 1,
                           "big": {"cut": True, "json_bytes": big_json, "type": "list"}}
    assert row["annotations"] == {"reward": 0.75, "blob": {"cut": True, "json_bytes": 5002, "type": "string"},
                                  "stop_reason": "done"}
    assert row["cut"] == {"meta": {"keys": ["big"], "dropped_keys": 0},
                          "annotations": {"keys": ["blob"], "dropped_keys": 0}}
    assert (row["step"], row["task_id"], row["reward_value"]) == (3, "t-7", 0.75)
    assert rows_of(served_run[1])["tr_ok"]["cut"] == {}


def test_keys_past_the_bound_are_left_out_and_counted(served_run):
    row = rows_of(served_run[1])["tr_many_keys"]
    kept = len(encode_json(row["meta"]))
    assert kept <= MAPPING_JSON_LIMIT
    assert row["cut"]["meta"]["keys"] == []
    assert row["cut"]["meta"]["dropped_keys"] == MANY_KEYS + 2 - len(row["meta"]) > 0
    assert row["step"] == 5, "the step is read from the whole meta, though its key was left out"


@pytest.mark.slow
def test_the_records_own_answer_gives_the_whole_values(served_run):
    server = served_run[0]
    answer = server.get("/v1/trajectories/tr_huge_1?run_id=big")
    assert answer["meta"]["big"] == list(range(1, BIG + 1))
    assert answer["annotations"]["blob"] == "x" * 5000
    assert answer["cut"] == {}
    assert len(server.get("/v1/trajectories/tr_many_keys?run_id=big")["meta"]) == MANY_KEYS + 2


def test_a_group_answer_keeps_the_values_cut(served_run):
    server = served_run[0]
    groups = server.get("/v1/groups?run_id=big&group_by=task_id")["data"]
    assert [(group["key"], group["n"]) for group in groups] == [("t-7", 2)], "grouped by the whole meta's task"
    group = server.get("/v1/groups/t-7?run_id=big&group_by=task_id")
    assert {row["id"]: row["meta"]["big"]["cut"] for row in group["rollouts"]} == dict.fromkeys(HUGE_IDS, True)


def test_the_bounds_are_exact():
    at_limit = "x" * (VALUE_JSON_LIMIT - 2)  # its JSON, quotes included, is exactly the limit
    small = {"a": 1, "b": "text"}
    assert bounded_mapping(small) == (small, None)
    assert bounded_mapping({"a": at_limit}) == ({"a": at_limit}, None)
    kept, cut = bounded_mapping({"a": at_limit + "x", "b": 2})
    assert kept == {"a": {"cut": True, "json_bytes": VALUE_JSON_LIMIT + 1, "type": "string"}, "b": 2}
    assert cut == {"keys": ["a"], "dropped_keys": 0}


@pytest.mark.parametrize("mapping", [
    {"a": "x" * (VALUE_JSON_LIMIT - 9)},  # its text exactly the limit: decided by the text alone
    {"a": "é" * (VALUE_JSON_LIMIT // 2 - 1)},  # the value's JSON exactly the limit in UTF-8, its text 3x longer
    {"a": "é" * (VALUE_JSON_LIMIT // 2)},  # one character more: cut
    {"a": [float("inf")] * 150, "b": "😀" * 80},  # Infinity written longer in the text, null in the JSON
    {f"k{n}": n for n in range(120)},  # the text's spaces make it longer than the compact JSON
])
def test_the_search_text_shortcut_gives_the_exact_bound(mapping):
    """`bounded_mapping` given the mapping's `q` text (its usual case decided at no cost) answers as it
    does from the compact JSON alone, at the limit and across it."""
    assert bounded_mapping(mapping, SORTED_JSON.encode(mapping)) == bounded_mapping(mapping)


def test_a_path_of_very_many_blocks_makes_a_bounded_strip_that_adds_up(tmp_path):
    """A text chain of 3,001 nodes (a block each): the row's strip has at most STRIP_SEGMENTS segments,
    each merged one says how many blocks it stands for, and sizes and kinds add up to the row's own."""
    count = 3001
    nodes = [{"id": i, "parent": i - 1 if i else None, "depth": i, "author": "model" if i % 2 else "client",
              "role": "assistant" if i % 2 else "user",
              "message": {"role": "assistant" if i % 2 else "user", "content": "ab" * (1 + i % 3)}}
             for i in range(count)]
    document = {"format_version": 1, "id": "tr_chain", "status": "finished", "ended": True,
                "capture": {"mode": "text"}, "meta": {"step": 1}, "annotations": {}, "nodes": nodes}
    atomic_write(tmp_path / "tr_chain.json.zst", encode_document(document))
    row = public(compute_row(str(tmp_path), "tr_chain.json.zst"))
    strip, kinds = row["summary"]["strip"], row["summary"]["kinds"]
    assert 1 < len(strip) <= STRIP_SEGMENTS
    assert sum(segment.get("blocks", 1) for segment in strip) == count, "every block in one segment"
    assert sum(segment["char_count"] for segment in strip) == sum(kinds.values())
    merged = {}
    for segment in strip:
        for kind, size in (segment.get("kinds") or {segment["kind"]: segment["char_count"]}).items():
            merged[kind] = merged.get(kind, 0) + size
    assert merged == kinds
    assert [s["start"] for s in strip] == sorted(s["start"] for s in strip)
    assert all(segment["kinds"][segment["kind"]] == max(segment["kinds"].values()) for segment in strip
               if "kinds" in segment)
