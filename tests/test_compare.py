"""Two rollouts compared, and a group lined up: checked against token ids and texts read from the
records themselves (the raw sidecar arrays and the documents), on records skycap's writer wrote."""

import json
from itertools import combinations

import pytest

from skycap_viewer.record.blocks import message_text
from skycap_viewer.record.frames import compress
from skycap_viewer.wire import encode_json
from tests.support.chain_record import chain_document
from tests.support.common_prefix import document_of, expected, node_ids, path_nodes
from tests.support.corpus import FIXTURES
from tests.support.oracle import ORACLE
from tests.support.records import copy_record
from tests.support.server_process import ServerProcess
from tests.support.small_parts import SMALL, api_over


def token_groups(directory):
    """Every GRPO group of a token run as its members' ids, from the records' own meta."""
    groups = {}
    for record_id, entry in ORACLE[directory]["records"].items():
        meta = entry["meta"]
        groups.setdefault((meta["step"], meta["instance_id"]), []).append(record_id)
    return groups


def pairs_of(directory):
    groups = token_groups(directory).values()
    return [(directory, a, b) for members in groups for a, b in combinations(sorted(members), 2)]


@pytest.mark.parametrize(("directory", "a", "b"), pairs_of("groups") + pairs_of("groups2")[::4])
def test_the_common_prefix_is_the_records_token_ids(corpus_server, directory, a, b):
    answer = corpus_server.get(f"/v1/compare?a={a}&b={b}&run_a={directory}&run_b={directory}")
    want = expected(node_ids(directory, a), node_ids(directory, b))
    assert answer["unit"] == "tokens" and answer["why_text"] is None
    assert answer["common_prefix_tokens"] == want["shared"]
    assert answer["identical"] == want["identical"]
    if want["identical"]:
        assert answer["diverge"] is None and answer["turns"] == []
        return
    for side in ("a", "b"):
        node_id, offset = want[side]
        assert (answer["diverge"][side]["node_id"], answer["diverge"][side]["offset"]) == (node_id, offset)
        assert answer["diverge"][side]["position"] == want["shared"]
    first = answer["turns"][0]
    for side in ("a", "b"):
        node_id, offset = want[side]
        if node_id is None:  # this side ends where the other goes on: it has no turn there
            assert first[side] is None
        else:
            assert (first[side]["node_id"], first[side]["shared"]) == (node_id, offset)


@pytest.mark.parametrize(("directory", "a", "b"), pairs_of("groups")[:12])
def test_diff_ranges_leave_only_equal_units_outside(corpus_server, directory, a, b):
    """Outside the `diff` ranges each pair of turns holds the same units in the same order, and every
    range holds a difference."""
    answer = corpus_server.get(f"/v1/compare?a={a}&b={b}&run_a={directory}&run_b={directory}")
    for turn in answer["turns"]:
        if turn["a"] is None or turn["b"] is None:
            continue
        units_a = answer["nodes"]["a"][turn["a"]["node_id"]]["token_ids"]
        units_b = answer["nodes"]["b"][turn["b"]["node_id"]]["token_ids"]
        kept_a, kept_b, at_a, at_b = [], [], turn["a"]["shared"], turn["b"]["shared"]
        for a0, a1, b0, b1 in turn["diff"]:
            kept_a += units_a[at_a:a0]
            kept_b += units_b[at_b:b0]
            assert units_a[a0:a1] != units_b[b0:b1]
            at_a, at_b = a1, b1
        assert kept_a + units_a[at_a:] == kept_b + units_b[at_b:]
        assert turn["same"] == (units_a == units_b and turn["a"]["role"] == turn["b"]["role"])


def test_a_record_compared_with_itself_is_identical(corpus_server):
    record = "tr_08862b0a923de527"
    answer = corpus_server.get(f"/v1/compare?a={record}&b={record}&run_a=groups&run_b=groups")
    size = sum(len(units) for _, units in node_ids("groups", record))
    assert answer["identical"] and answer["diverge"] is None and answer["turns"] == []
    assert answer["common_prefix_tokens"] == size == answer["a"]["size"]
    assert answer["itself"] is True  # said: the page tells the reader


def test_compare_takes_the_run_id_every_other_route_takes(corpus_server, tmp_path):
    for run in ("one", "two"):  # the same record id in two runs: a side needs its run
        (tmp_path / run).mkdir()
        copy_record(FIXTURES / "spec", "tr_shared_reply", tmp_path / run, "tr_shared_reply")
    with ServerProcess([tmp_path / "one", tmp_path / "two"]) as server:
        server.wait_indexed()
        answer = server.get("/v1/compare?a=tr_shared_reply&b=tr_shared_reply&run_id=two&path_b=1")
        assert answer["a"]["trajectory"]["run_id"] == answer["b"]["trajectory"]["run_id"] == "two"
    other = corpus_server.get("/v1/compare?a=tr_shared_reply&b=tr_shared_reply&run_id=spec&path_b=1")
    assert other["itself"] is False and not other["identical"]


def forked_records():
    return [(d, rid) for d in ("spec", "real-like", "rules") for rid, e in sorted(ORACLE[d]["records"].items())
            if e.get("load") == "ok" and e.get("mode") == "tokens" and len(e.get("paths") or []) > 1
            and "tokens" in e["sidecars"]["on_disk"] and e["paths"][0]["tokens"] is not None]


@pytest.mark.parametrize(("directory", "record_id"), forked_records())
def test_two_paths_of_one_record_part_where_their_tokens_do(corpus_server, directory, record_id):
    """Path 0 against every other path of a forked record: the prefix runs into the fork's nodes as
    long as their token ids agree (a resample shares its scaffold), never less than the shared nodes."""
    paths = len(ORACLE[directory]["records"][record_id]["paths"])
    for other in range(1, paths):
        answer = corpus_server.get(f"/v1/compare?a={record_id}&b={record_id}&run_a={directory}&run_b={directory}"
                                   f"&path_b={other}")
        want = expected(node_ids(directory, record_id), node_ids(directory, record_id, other))
        assert answer["common_prefix_tokens"] == want["shared"]
        forks = corpus_server.get(f"/v1/trajectories/{record_id}/forks?run_id={directory}&a=0&b={other}")
        assert answer["common_prefix_tokens"] >= forks["shared_tokens"]
        if not want["identical"]:
            assert answer["diverge"]["b"]["node_id"] == want["b"][0]


def texts_of(directory, record_id) -> list[tuple]:
    document = document_of(directory, record_id)
    return [(document["nodes"][n].get("role"), document["nodes"][n]["author"],
             message_text(document["nodes"][n].get("message"))) for n in path_nodes(directory, record_id)]


def test_text_records_compare_their_messages(corpus_server):
    a, b = "tr_g1a0a0", "tr_g1a1a0"
    answer = corpus_server.get(f"/v1/compare?a={a}&b={b}&run_a=groups-text&run_b=groups-text")
    messages_a, messages_b = texts_of("groups-text", a), texts_of("groups-text", b)
    equal = 0
    while messages_a[equal] == messages_b[equal]:
        equal += 1
    x, y = messages_a[equal][2], messages_b[equal][2]
    inside = next(i for i in range(min(len(x), len(y)) + 1) if i == min(len(x), len(y)) or x[i] != y[i])
    assert answer["unit"] == "chars" and answer["common_prefix_tokens"] is None
    assert answer["common_prefix_chars"] == sum(len(m[2]) for m in messages_a[:equal]) + inside  # ASCII texts
    assert answer["diverge"]["a"]["offset"] == inside and answer["shared_nodes"] == {"a": equal, "b": equal}
    node_a = answer["turns"][0]["a"]["node_id"]
    assert answer["nodes"]["a"][node_a]["text"] == x


def test_a_token_record_against_a_text_record_is_compared_as_text(corpus_server):
    answer = corpus_server.get("/v1/compare?a=tr_08862b0a923de527&b=tr_g1a0a0&run_a=groups&run_b=groups-text")
    assert answer["unit"] == "chars" and answer["why_text"] == "b: text mode"
    assert answer["a"]["text_only"] == "compared-as-text" and answer["common_prefix_tokens"] is None
    assert answer["a"]["size"] == sum(len(m[2]) for m in texts_of("groups", "tr_08862b0a923de527"))
    for turn in answer["turns"]:  # the token record's blocks are measured in characters too
        for side in (turn["a"], turn["b"]):
            if side is not None:
                assert sum(block["char_count"] for block in side["blocks"]) == side["end"] - side["start"]


@pytest.mark.parametrize(("query", "status", "detail"), [
    ("a=tr_08862b0a923de527", 400, "pass b"),
    ("a=tr_08862b0a923de527&b=tr_nothing&run_a=groups", 404, "no trajectory tr_nothing"),
    ("a=tr_08862b0a923de527&b=tr_08862b0a923de527&run_a=groups&run_b=groups&path_b=7", 404, "b: the trajectory"),
    ("a=tr_08862b0a923de527&b=tr_08862b0a923de527&run_a=groups&run_b=nope", 404, "no run nope"),
    ("a=tr_08862b0a923de527&b=tr_08862b0a923de527&run_a=groups&run_b=groups&path_a=x", 400, "path_a"),
])
def test_compare_refuses_what_it_cannot_answer(corpus_server, query, status, detail):
    answer = corpus_server.get(f"/v1/compare?{query}", expect=status)
    assert detail in answer["detail"]


def rewards_of(directory, members):
    return {m: ORACLE[directory]["records"][m]["annotations"].get("reward") for m in members}


def counting(directory, members):
    """The members that count: per repetition the highest attempt (the records' own meta)."""
    best = {}
    for m in members:
        meta = ORACLE[directory]["records"][m]["meta"]
        if meta["repetition_id"] not in best or meta["attempt"] > best[meta["repetition_id"]][0]:
            best[meta["repetition_id"]] = (meta["attempt"], m)
    return [m for _, m in best.values()]


GROUP_KEYS = [(d, key) for d in ("groups", "groups2") for key in sorted(token_groups(d))]


@pytest.mark.parametrize(("directory", "key"), GROUP_KEYS)
def test_a_group_lines_up_against_its_highest_reward(corpus_server, directory, key):
    step, instance = key
    members = counting(directory, token_groups(directory)[key])
    answer = corpus_server.get(f"/v1/groups/{step}~{instance}/lineup?run_id={directory}")
    rewards = rewards_of(directory, members)
    assert {m["trajectory_id"] for m in answer["members"]} == set(members)
    assert rewards[answer["anchor"]["trajectory_id"]] == max(rewards.values())
    anchor = node_ids(directory, answer["anchor"]["trajectory_id"])
    for member in answer["members"]:
        want = expected(anchor, node_ids(directory, member["trajectory_id"]))
        assert member["common_prefix_tokens"] == want["shared"] and member["identical"] == want["identical"]
        assert member["reward"] == rewards[member["trajectory_id"]]
        assert member["diverge_node_id"] == want["b"][0] and member["anchor_diverge_node_id"] == want["a"][0]
    if min(rewards.values()) < max(rewards.values()):
        assert rewards[answer["lowest"]] == min(rewards.values())
    else:
        assert answer["lowest"] is None


def test_a_chosen_anchor_is_used_and_must_be_a_member(corpus_server):
    key = (3, "a")
    members = counting("groups", token_groups("groups")[key])
    chosen = sorted(members)[-1]
    answer = corpus_server.get(f"/v1/groups/3~a/lineup?run_id=groups&anchor={chosen}")
    assert answer["anchor"] == {"trajectory_id": chosen, "reward": rewards_of("groups", [chosen])[chosen],
                                "chosen": True}
    mine = next(m for m in answer["members"] if m["trajectory_id"] == chosen)
    assert mine["identical"] and mine["diverge_node_id"] is None
    other = corpus_server.get("/v1/groups/3~a/lineup?run_id=groups&anchor=tr_08862b0a923de527", expect=400)
    assert "not a counting member" in other["detail"]


@pytest.mark.slow
def test_long_comparisons_come_in_parts(tmp_path):
    """Two 3,000-node chains that part at node 10: the turns in parts, concatenated, are every pair."""
    for name, changed in (("one", None), ("two", 10)):
        document = chain_document(3000)
        document["id"] = name
        if changed is not None:
            document["nodes"][changed]["message"]["content"] = "turn ten, said otherwise"
        folder = tmp_path / "run"
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.json.zst").write_bytes(compress(json.dumps(document).encode()))
    api = api_over(tmp_path)
    turns, start, parts = [], None, 0
    while True:
        params = {"a": ["one"], "b": ["two"], **({"from": [str(start)]} if start is not None else {})}
        _, body = api.compare(params)
        answer = json.loads(body if isinstance(body, bytes) else encode_json(body))
        assert len(encode_json(answer)) <= SMALL.bytes + 8 * 2**10
        turns += answer["turns"]
        parts += 1
        if "next" not in answer["part"]:
            break
        start = answer["part"]["next"]
    assert parts > 2 and len(turns) == 2990
    assert turns[0]["a"]["node_id"] == turns[0]["b"]["node_id"] == "n10" and not turns[0]["same"]
    assert all(turn["same"] for turn in turns[1:])


def write_text_pair(directory, count):
    """Two text chains of `count` nodes that part at their first reply."""
    directory.mkdir(parents=True)
    for name, reply in (("chain-a", "turn 1"), ("chain-b", "turn 1, said otherwise")):
        document = chain_document(count)
        document["id"] = name
        document["nodes"][1]["message"]["content"] = reply
        (directory / f"{name}.json.zst").write_bytes(compress(json.dumps(document).encode()))


def test_text_mode_turns_carry_their_own_blocks(tmp_path):
    write_text_pair(tmp_path / "long", 600)
    with ServerProcess([tmp_path]) as server:
        server.wait_indexed()
        answer = server.get("/v1/compare?a=chain-a&b=chain-b")
    assert answer["unit"] == "chars" and answer["diverge"]["a"]["node_id"] == "n1"
    assert len(answer["turns"]) == 599
    for turn in answer["turns"]:
        for side in ("a", "b"):
            own = turn[side]
            assert own["blocks"], own["node_id"]
            assert {block["node_id"] for block in own["blocks"]} == {own["node_id"]}
            assert own["blocks"][0]["start"] == own["start"] and own["blocks"][-1]["end"] == own["end"]
    assert answer["turns"][0]["diff"] == [[6, 6, 6, 22]]  # ", said otherwise" added on b
    assert all(turn["same"] for turn in answer["turns"][1:])
