"""GRPO groups on the real server: `groups/` and `groups-text/` as their fixture README describes them.

The expected groups are computed here from `oracle.json` (meta and annotations as skycap
read them), not from the server's own rows.
"""

import math
import shutil
from collections import Counter

import pytest

from tests.support.corpus import FIXTURES
from tests.support.listings import all_groups, walk_keys
from tests.support.oracle import ORACLE
from tests.support.server_process import ServerProcess

GROUP_RUNS = ("groups", "groups-text", "groups2")
SORT_KEYS = ("step", "task", "reward", "turns", "tokens", "health", "created")


def numeric(reward):
    if isinstance(reward, bool):
        return int(reward)
    return reward if isinstance(reward, (int, float)) and math.isfinite(reward) else None


def expected_groups(run_id):
    """key -> {counting ids in repetition order, superseded ids, flags}, from the oracle."""
    members = {}
    for record_id, entry in ORACLE[run_id]["records"].items():
        meta = entry["meta"]
        members.setdefault(f"{meta['step']}~{meta['instance_id']}", []).append((record_id, entry))
    groups = {}
    for key, rows in members.items():
        by_rep = {}
        for record_id, entry in rows:
            meta = entry["meta"]
            by_rep.setdefault(meta["repetition_id"], []).append((meta["attempt"], record_id))
        counting = [max(by_rep[rep])[1] for rep in sorted(by_rep)]
        superseded = sorted(rid for rep in by_rep for _, rid in sorted(by_rep[rep])[:-1])
        groups[key] = {"counting": counting, "superseded": superseded}
    sizes = Counter(len(g["counting"]) for g in groups.values())
    modal_n = max(sizes, key=lambda size: (sizes[size], size))
    for group in groups.values():
        entries = [ORACLE[run_id]["records"][rid] for rid in group["counting"]]
        rewards = [numeric(e["annotations"].get("reward")) for e in entries]
        flags = []
        if rewards and None not in rewards and len(set(rewards)) == 1:
            flags.append("no-signal")
        if any(e["annotations"].get("stop_reason") in ("agent_timeout", "error") for e in entries):
            flags.append("masked")
        if len(entries) < modal_n:
            flags.append("short")
        if group["superseded"]:
            flags.append("retried")
        group["flags"] = flags
        group["rewards"] = [e["annotations"].get("reward") for e in entries]
    return groups, modal_n


@pytest.mark.parametrize("run_id", GROUP_RUNS)
def test_groups_match_the_fixture(corpus_server, run_id):
    expected, modal_n = expected_groups(run_id)
    listing = all_groups(corpus_server, run_id)
    assert listing["modal_n"] == modal_n == 4 and listing["group_by"] == ["step", "instance_id"]
    assert {g["key"] for g in listing["data"]} == set(expected)
    for group in listing["data"]:
        want = expected[group["key"]]
        assert [r["id"] for r in group["rewards"]] == want["counting"], group["key"]
        assert [r["reward"] for r in group["rewards"]] == want["rewards"]
        assert group["n"] == len(want["counting"]) and group["modal_n"] == modal_n
        assert group["superseded_count"] == len(want["superseded"])
        assert group["flags"] == want["flags"], group["key"]
        detail = corpus_server.get(f"/v1/groups/{group['key'].replace('~', '%7E')}?run_id={run_id}")
        assert sorted(r["id"] for r in detail["superseded"]) == want["superseded"]
        assert detail["group"] == {**group, "matching": detail["group"]["matching"]}
        assert all(r["superseded_by"] in want["counting"] for r in detail["superseded"])
    assert not {"mean", "advantage", "pass", "pass_rate"} & set(walk_keys(listing))
    run = next(r for r in corpus_server.get("/v1/runs")["data"] if r["id"] == run_id)
    assert run["groupable"] and run["default_view"] == "groups"
    assert run["group_count"] == len(expected) and run["modal_group_size"] == modal_n
    sizes = [len(want["counting"]) for want in expected.values()]
    assert run["group_sizes"] == [min(sizes), max(sizes)]


def test_groups_text_is_the_original_shape(corpus_server):
    listing = all_groups(corpus_server, "groups-text")
    assert [g["key"] for g in listing["data"]] == ["2~a", "2~b", "2~c", "1~a", "1~b"]
    flags = {g["key"]: g["flags"] for g in listing["data"]}
    assert flags == {"1~a": ["retried"], "1~b": ["no-signal"], "2~a": ["short"], "2~b": ["masked"], "2~c": []}
    assert listing["health"]["unit"] == "groups"
    assert dict(listing["health"]["counts"]) == {"no-signal": 1, "masked": 1, "short": 1, "retried": 1}
    assert listing["reward_range"] == {"min": 0, "max": 1}
    one = listing["data"][3]
    assert one["task_id"] == "task-a" and one["turns"] == [1, 1] and one["binary"] is True
    assert [g["binary"] for g in listing["data"]] == [True, True, False, True, True]
    assert len(corpus_server.get("/v1/trajectories?run_id=groups-text")["data"]) == 20


def test_a_superseded_error_does_not_mask(corpus_server):
    listing = all_groups(corpus_server, "groups")
    three = next(g for g in listing["data"] if g["key"] == "3~a")
    assert three["flags"] == ["retried"] and three["superseded_count"] == 4
    assert [r["stop_reason"] for r in three["rewards"]] == ["complete"] * 4


def test_group_detail_ranks_by_reward_with_ties_in_repetition_order(corpus_server):
    detail = corpus_server.get("/v1/groups/1~a?run_id=groups-text")
    assert detail["sort"] == {"key": "reward", "order": "desc"}
    assert [r["annotations"]["reward"] for r in detail["rollouts"]] == [1, 1, 1, 0]
    assert [r["repetition_id"] for r in detail["rollouts"]] == [0, 2, 3, 1]
    assert [r["match"] for r in detail["rollouts"]] == [None] * 4
    (superseded,) = detail["superseded"]
    assert superseded["id"] == "tr_g1a2a0" and superseded["superseded_by"] == "tr_g1a2a1"
    assert detail["reward_range"] == {"min": 0, "max": 1}
    ascending = corpus_server.get("/v1/groups/1~a?run_id=groups-text&sort=reward&order=asc")
    assert [r["repetition_id"] for r in ascending["rollouts"]] == [1, 0, 2, 3]
    created = corpus_server.get("/v1/groups/2~c?run_id=groups-text&sort=created&order=asc")
    assert [r["id"] for r in created["rollouts"]] == ["tr_g2c0a0", "tr_g2c1a0", "tr_g2c2a0", "tr_g2c3a0"]
    corpus_server.get("/v1/groups/9~z?run_id=groups-text", expect=404)
    corpus_server.get("/v1/groups/1~a?run_id=groups-text&sort=mean", expect=400)


def test_filters_list_groups_with_a_matching_member(corpus_server):
    listing = all_groups(corpus_server, "groups-text", "&annotation=stop_reason%3Derror")
    assert [(g["key"], g["matching"]) for g in listing["data"]] == [("1~a", 1)]
    assert listing["total"] == 1
    detail = corpus_server.get("/v1/groups/1~a?run_id=groups-text&annotation=stop_reason%3Derror")
    assert [r["match"] for r in detail["rollouts"]] == [False] * 4
    assert [r["match"] for r in detail["superseded"]] == [True]
    rewarded = all_groups(corpus_server, "groups-text", "&annotation=reward%3D0.5")
    assert [(g["key"], g["matching"]) for g in rewarded["data"]] == [("2~c", 2)]
    stepped = all_groups(corpus_server, "groups", "&step=1")
    assert sorted(g["key"] for g in stepped["data"]) == ["1~a", "1~b"]


def test_flag_filter_after_the_band(corpus_server):
    everything = all_groups(corpus_server, "groups")
    for flag, count in everything["health"]["counts"]:
        flagged = all_groups(corpus_server, "groups", f"&flag={flag}")
        assert flagged["total"] == count, flag
        assert flagged["health"] == everything["health"]
    forked = all_groups(corpus_server, "groups", "&flag=forked")
    assert sorted(g["key"] for g in forked["data"]) == ["2~a", "2~c"]
    assert all(g["matching"] == 1 for g in forked["data"])
    detail = corpus_server.get("/v1/groups/2~c?run_id=groups&flag=forked")
    assert sum(r["match"] for r in detail["rollouts"]) == 1


def expected_group_order(groups, key, order):
    def value(group):
        rewards = [numeric(r["reward"]) for r in group["rewards"] if numeric(r["reward"]) is not None]
        return {
            "step": group["step"],
            "task": group["task_id"],
            "reward": sum(rewards) / len(rewards) if rewards else None,
            "turns": group["turns"][1] if group["turns"] else None,
            "tokens": group["tokens"][1] if group["tokens"] else None,
            "health": len(group["flags"]) + sum(group["rollup"].values()),
            "created": group["created_ts"],
        }[key]

    base = sorted(groups, key=lambda g: (g["task_id"], g["key"]))
    base.sort(key=lambda g: g["step"], reverse=True)
    present = [g for g in base if value(g) is not None]
    present.sort(key=value, reverse=order == "desc")
    return [g["key"] for g in present + [g for g in base if value(g) is None]]


@pytest.mark.parametrize("run_id", GROUP_RUNS)
@pytest.mark.parametrize("key", SORT_KEYS)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_group_sort_every_key(corpus_server, run_id, key, order):
    groups = all_groups(corpus_server, run_id)["data"]
    listing = all_groups(corpus_server, run_id, f"&sort={key}&order={order}")
    assert listing["sort"] == {"key": key, "order": order}
    assert [g["key"] for g in listing["data"]] == expected_group_order(groups, key, order)


def test_reward_sort_uses_the_mean_without_sending_it(corpus_server):
    listing = all_groups(corpus_server, "groups-text", "&sort=reward&order=desc")
    assert [g["key"] for g in listing["data"]] == ["1~b", "1~a", "2~c", "2~a", "2~b"]


def test_group_paging(corpus_server):
    first = corpus_server.get("/v1/groups?run_id=groups&limit=4")
    assert len(first["data"]) == 4 and first["has_more"] and first["total"] == 6
    second = corpus_server.get(f"/v1/groups?run_id=groups&limit=4&cursor={first['next_cursor']}")
    assert len(second["data"]) == 2 and not second["has_more"]
    assert [g["key"] for g in first["data"] + second["data"]] == [g["key"] for g in all_groups(
        corpus_server, "groups")["data"]]


def test_group_by_per_request_and_per_server(corpus_server, corpus):
    by_step = all_groups(corpus_server, "groups-text", "&group_by=step")
    assert by_step["group_by"] == ["step"]
    # repetition ids repeat across instances, so a step-only group holds 4 repetitions
    assert [(g["key"], g["n"], g["superseded_count"]) for g in by_step["data"]] == [("2", 4, 7), ("1", 4, 5)]
    not_groupable = next(r for r in corpus_server.get("/v1/runs")["data"] if r["id"] == "spec")
    assert not not_groupable["groupable"] and not_groupable["default_view"] == "rollouts"
    with ServerProcess([corpus / "groups-text"], "--group-by", "instance_id") as server:
        server.wait_indexed()
        listing = server.get("/v1/groups")
        assert listing["group_by"] == ["instance_id"]
        assert sorted(g["key"] for g in listing["data"]) == ["a", "b", "c"]


def test_groups_across_runs_and_key_collisions(corpus_server):
    everything = corpus_server.get("/v1/groups?limit=1000")
    per_run = {run_id: all_groups(corpus_server, run_id)["total"] for run_id in GROUP_RUNS}
    assert everything["total"] == sum(per_run.values())  # other runs have no step/instance_id key
    assert sorted({g["run_id"] for g in everything["data"]}) == sorted(GROUP_RUNS)
    detail = corpus_server.get("/v1/groups/1~a", expect=400)["detail"]
    assert "run_id" in detail and "groups" in detail and "groups-text" in detail
    assert corpus_server.get("/v1/groups/1~a?run_id=groups")["group"]["run_id"] == "groups"
    corpus_server.get("/v1/groups?run_id=nothing", expect=404)
    assert corpus_server.get("/v1/runs?refresh=true") == corpus_server.get("/v1/runs")


def test_rollouts_without_a_group_key_are_counted_and_listed(tmp_path):
    """A rollout without the group key is in no group: the Groups answer counts it, `ungrouped` lists it."""
    run = tmp_path / "mixed"
    shutil.copytree(FIXTURES / "groups", run)
    for path in (FIXTURES / "spec").glob("tr_t*"):  # spec records carry no instance_id
        shutil.copy(path, run / path.name)
    keyless = {p.name.split(".")[0] for p in (FIXTURES / "spec").glob("tr_t*.json.zst")}
    with ServerProcess([run]) as server:
        server.wait_indexed()
        groups = server.get("/v1/groups?run_id=mixed")
        assert groups["ungrouped"] == len(keyless)
        keyless_rows = server.get("/v1/trajectories?run_id=mixed&ungrouped=true&limit=1000")["data"]
        grouped = server.get("/v1/groups?run_id=mixed&limit=1000")["data"]
        assert groups["health"]["total"] == len(grouped) + len(keyless)  # the band covers every rollout
        band = Counter(dict(groups["health"]["counts"]))
        only_grouped = server.get("/v1/groups?run_id=mixed&annotation=stop_reason")  # every grouped row has one
        assert only_grouped["ungrouped"] == 0
        keyless_flags = Counter(f for row in keyless_rows for f in row["summary"]["flags"])
        assert band - Counter(dict(only_grouped["health"]["counts"])) == keyless_flags
        listed = server.get("/v1/trajectories?run_id=mixed&ungrouped=true&limit=1000")
        assert {row["id"] for row in listed["data"]} == keyless and listed["total"] == len(keyless)
        one = sorted(keyless)[0]
        task = server.get(f"/v1/trajectories/{one}?run_id=mixed")["task_id"]
        filtered = server.get(f"/v1/groups?run_id=mixed&task_id={task}")
        assert filtered["total"] == 0 and filtered["ungrouped"] >= 1
        assert server.get("/v1/groups?run_id=mixed&group_by=step")["ungrouped"] == sum(
            1 for rid in keyless if ORACLE["spec"]["records"][rid]["meta"].get("step") is None)
