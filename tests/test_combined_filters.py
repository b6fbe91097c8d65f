"""Filters that combine (several flags, excluded flags, a reward range, no group key) and the picker.

Every answer is checked against a computation written here from the unfiltered rows (their flags,
annotations and group keys as listed), on the corpus and on a generated run of many tasks.
"""

import itertools
import math
from collections import Counter
from urllib.parse import urlencode

import pytest

from skycap_viewer.catalog.index import ENTRY_VALUES
from tests.support.corpus import BROKEN
from tests.support.listings import all_groups, all_rows, reward_of, walk_keys
from tests.support.records import copy_record
from tests.support.server_process import ServerProcess

ROLLOUT_RUNS = ("groups", "real-like", "spec")


def query(**params) -> str:
    pairs = [(k, v) for k, values in params.items() for v in (values if isinstance(values, list) else [values])]
    return urlencode(pairs)


def kept(rows, flags=(), exclude=(), low=None, high=None):
    """The rows every condition holds for, written out one row at a time."""
    out = []
    for row in rows:
        carried = set(row["summary"]["flags"])
        reward = reward_of(row)
        if not set(flags) <= carried or set(exclude) & carried:
            continue
        if (low is not None or high is not None) and reward is None:
            continue
        if (low is not None and reward < low) or (high is not None and reward > high):
            continue
        out.append(row)
    return out


def band_of(rows):
    return dict(Counter(flag for row in rows for flag in row["summary"]["flags"]))


def rollout_cases(rows):
    """Every pair of present flags required, each pair with one excluded, and each range edge."""
    present = sorted({flag for row in rows for flag in row["summary"]["flags"]})
    rewards = sorted({r for r in map(reward_of, rows) if r is not None})
    cases = [dict(flags=list(pair)) for pair in itertools.combinations(present, 2)]
    cases += [dict(flags=[a], exclude=[b]) for a, b in itertools.permutations(present, 2)]
    cases += [dict(low=r) for r in rewards] + [dict(high=r) for r in rewards]
    cases += [dict(low=a, high=b) for a, b in itertools.combinations(rewards, 2)]
    cases += [dict(low=rewards[0], high=rewards[-1], exclude=[present[0]], flags=present[1:2])]
    return cases


@pytest.mark.parametrize("run_id", ROLLOUT_RUNS)
@pytest.mark.slow
def test_flags_exclusions_and_reward_ranges_combine(corpus_server, run_id):
    rows = all_rows(corpus_server, run_id)
    for case in rollout_cases(rows):
        params = dict(run_id=run_id, limit=1000, flag=case.get("flags", []), exclude_flag=case.get("exclude", []))
        if "low" in case:
            params["reward_min"] = case["low"]
        if "high" in case:
            params["reward_max"] = case["high"]
        listing = corpus_server.get(f"/v1/trajectories?{query(**params)}")
        want = kept(rows, case.get("flags", ()), case.get("exclude", ()), case.get("low"), case.get("high"))
        assert sorted(r["id"] for r in listing["data"]) == sorted(r["id"] for r in want), case
        assert listing["total"] == len(want)
        # the band follows the row filters (the range) and is counted before the flags
        assert dict(listing["health"]["counts"]) == band_of(kept(rows, (), (), case.get("low"), case.get("high")))
        rewards = [reward_of(r) for r in want if reward_of(r) is not None]
        assert listing["reward_range"] == ({"min": min(rewards), "max": max(rewards)} if rewards else None)


def test_range_edges_are_inclusive_and_rows_without_a_reward_are_outside(corpus_server):
    rows = all_rows(corpus_server, "real-like")
    unrewarded = {r["id"] for r in rows if reward_of(r) is None}
    assert unrewarded, "real-like has rows without a numeric reward"
    exact = corpus_server.get("/v1/trajectories?run_id=real-like&reward_min=0.5&reward_max=0.5")
    assert [reward_of(r) for r in exact["data"]] == [0.5]
    wide = corpus_server.get("/v1/trajectories?run_id=real-like&reward_min=-inf&limit=1000")
    assert {r["id"] for r in wide["data"]} == {r["id"] for r in rows} - unrewarded
    assert corpus_server.get("/v1/trajectories?run_id=real-like&reward_min=2")["total"] == 0


@pytest.mark.parametrize("route", ["/v1/trajectories?run_id=groups", "/v1/groups?run_id=groups",
                                   "/v1/groups/1~a?run_id=groups"])
@pytest.mark.parametrize("bad", ["reward_min=high", "reward_max=", "reward_max=1e", "reward_min=nan",
                                 "flag=nonsense", "exclude_flag=nonsense", "flag=forked&flag=nonsense"])
def test_non_numbers_and_unknown_flags_are_refused(corpus_server, route, bad):
    if bad == "reward_max=":  # empty means absent, as for every other parameter
        corpus_server.get(f"{route}&{bad}")
        return
    detail = corpus_server.get(f"{route}&{bad}", expect=400)["detail"]
    assert bad.split("&")[-1].split("=")[0] in detail


def group_members(server, run_id, groups):
    """group key -> (its group flags, its member rows), from each group's own answer."""
    rows = {r["id"]: r for r in all_rows(server, run_id)}
    members = {}
    for group in groups:
        detail = server.get(f"/v1/groups/{group['key'].replace('~', '%7E')}?run_id={run_id}")
        ids = [r["id"] for r in detail["rollouts"] + detail["superseded"]]
        members[group["key"]] = (set(group["flags"]), [rows[i] for i in ids])
    return members


GROUP_FLAG_NAMES = {"no-signal", "masked", "short", "retried"}


def expected_groups(members, flags=(), exclude=(), low=None, high=None):
    """key -> matching members: the group carries its group flags, members carry rollout flags."""
    out = {}
    for key, (group_flags, rows) in members.items():
        matched = kept(rows, (), (), low, high)
        if not matched:
            continue
        if not {f for f in flags if f in GROUP_FLAG_NAMES} <= group_flags:
            continue
        if {f for f in exclude if f in GROUP_FLAG_NAMES} & group_flags:
            continue
        rollout_flags = [f for f in flags if f not in GROUP_FLAG_NAMES]
        rollout_exclude = [f for f in exclude if f not in GROUP_FLAG_NAMES]
        if rollout_flags or rollout_exclude:
            matched = kept(matched, rollout_flags, rollout_exclude)
        if matched:
            out[key] = matched
    return out


@pytest.mark.slow
def test_groups_apply_the_same_filters(corpus_server):
    everything = all_groups(corpus_server, "groups")
    members = group_members(corpus_server, "groups", everything["data"])
    present = sorted({f for g, rows in members.values() for f in g | {x for r in rows for x in r["summary"]["flags"]}}
                     - {"bridged-unknown"})
    cases = [dict(flags=list(p)) for p in itertools.combinations(present, 2)]
    cases += [dict(flags=[a], exclude=[b]) for a, b in itertools.permutations(present, 2)]
    cases += [dict(exclude=[a]) for a in present]
    cases += [dict(low=0.5), dict(high=0), dict(low=0.2, high=0.9), dict(low=0, high=1, flags=["retried"]),
              dict(low=1, exclude=["no-signal"])]
    for case in cases:
        params = dict(flag=case.get("flags", []), exclude_flag=case.get("exclude", []))
        if "low" in case:
            params["reward_min"] = case["low"]
        if "high" in case:
            params["reward_max"] = case["high"]
        listing = all_groups(corpus_server, "groups", "&" + query(**params))
        want = expected_groups(members, case.get("flags", ()), case.get("exclude", ()),
                               case.get("low"), case.get("high"))
        assert {g["key"]: g["matching"] for g in listing["data"]} == {k: len(v) for k, v in want.items()}, case
        assert listing["total"] == len(want)
        for key, rows in want.items():
            detail = corpus_server.get(f"/v1/groups/{key.replace('~', '%7E')}?run_id=groups&{query(**params)}")
            assert detail["group"]["matching"] == len(rows)
            matched = {r["id"] for r in detail["rollouts"] + detail["superseded"] if r["match"]}
            judged = "low" in case or "high" in case or any(
                f not in GROUP_FLAG_NAMES for f in case.get("flags", []) + case.get("exclude", []))
            if judged:
                assert matched == {r["id"] for r in rows}, (case, key)


def test_no_group_key_combines_with_flags_and_a_range(tmp_path):
    run = tmp_path / "mixed"
    run.mkdir()
    for index in range(12):
        def edit(document, index=index):
            meta = {"step": 1, "task_id": f"t{index % 3}", "repetition_id": index, "attempt": 0}
            if index % 2:
                meta["instance_id"] = f"i{index % 3}"  # the even ones carry no group key
            document["meta"] = meta
            document["annotations"] = {"reward": [0, 0.5, 1, "n/a"][index % 4]}
        copy_record(BROKEN, "tr_ok", run, f"tr_mix{index:02d}", edit=edit)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        rows = all_rows(server, "mixed")
        keyless = [r for r in rows if "instance_id" not in r["meta"]]
        flag = sorted({f for r in rows for f in r["summary"]["flags"]})[0]
        for params, want in [
            (dict(ungrouped="true"), keyless),
            (dict(ungrouped="true", flag=flag), kept(keyless, [flag])),
            (dict(ungrouped="true", exclude_flag=flag), kept(keyless, (), [flag])),
            (dict(ungrouped="true", reward_min=0.5), kept(keyless, low=0.5)),
            (dict(ungrouped="true", reward_max=0.5, flag=flag), kept(keyless, [flag], high=0.5)),
        ]:
            listing = server.get(f"/v1/trajectories?run_id=mixed&limit=1000&{query(**params)}")
            assert sorted(r["id"] for r in listing["data"]) == sorted(r["id"] for r in want), params
            assert dict(listing["health"]["counts"]) == band_of(
                kept(keyless, low=params.get("reward_min"), high=params.get("reward_max")))
        assert want, "the last case keeps something"
        groups = server.get(f"/v1/groups?run_id=mixed&reward_min=0.5&exclude_flag={flag}")
        assert groups["ungrouped"] == len(kept(keyless, (), [flag], low=0.5))


# -- the picker --------------------------------------------------------------------------------


def value_key(text, raw):
    number = isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw)
    return (0, raw, text) if number else (1, 0, text)


def as_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def expected_values(rows):
    tasks = Counter(r["task_id"] for r in rows if r["task_id"] is not None)
    annotations = {}
    for row in rows:
        for key, value in row["annotations"].items():
            if value is None or isinstance(value, (dict, list)):
                continue
            entry = annotations.setdefault(key, {}).setdefault(as_text(value), [value_key(as_text(value), value), 0])
            entry[1] += 1
    return (sorted(tasks.items()),
            {k: [(t, n) for t, (_, n) in sorted(v.items(), key=lambda kv: kv[1][0])] for k, v in annotations.items()})


@pytest.mark.parametrize("run_id", ["groups", "real-like", "spec"])
def test_the_picker_lists_values_with_counts_in_order(corpus_server, run_id):
    rows = [r for r in all_rows(corpus_server, run_id) if not r.get("unreadable")]
    tasks, annotations = expected_values(rows)
    answer = corpus_server.get(f"/v1/values?run_id={run_id}&limit=100")
    assert [(v["value"], v["count"]) for v in answer["tasks"]["values"]] == tasks
    assert answer["tasks"]["total"] == len(tasks)
    assert {a["key"]: [(v["value"], v["count"]) for v in a["values"]] for a in answer["annotations"]} == annotations
    assert [a["key"] for a in answer["annotations"]] == sorted(annotations)
    for entry in answer["tasks"]["values"][:2]:  # each value filters to exactly its count
        listing = corpus_server.get(f"/v1/trajectories?run_id={run_id}&{query(task_id=entry['value'])}")
        assert listing["total"] == entry["count"]
    for entry in answer["annotations"][:2]:
        for value in entry["values"]:
            listing = corpus_server.get(f"/v1/trajectories?run_id={run_id}&"
                                        f"{query(annotation=entry['key'] + '=' + value['value'])}")
            assert listing["total"] == value["count"]


@pytest.fixture(scope="module")
def many_tasks(tmp_path_factory):
    """A run of 260 tasks, rewards of every kind (numbers, a string, a bool), one annotation key per 50."""
    run = tmp_path_factory.mktemp("picker") / "tasks"
    run.mkdir()
    rewards = [10, 2, 0.5, -1, "pass", True, "Apple", 2.0]
    for index in range(260):
        def edit(document, index=index):
            document["meta"] = {"step": 1, "task_id": f"task-{index:04d}"}
            document["annotations"] = {"reward": rewards[index % len(rewards)], f"k{index // 50}": index % 7}
        copy_record(BROKEN, "tr_ok", run, f"tr_task{index:04d}", edit=edit)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        yield server


def test_a_run_entry_lists_its_first_tasks_and_counts_them_all(many_tasks):
    """A run's entry in `/v1/runs` (every page and script polls it) stays small however many tasks the run has:
    its first tasks by id with their counts, and how many there are; `/v1/values` lists them all."""
    (entry,) = many_tasks.get("/v1/runs")["data"]
    tasks, _ = expected_values(all_rows(many_tasks, "tasks"))
    assert entry["task_count"] == len(tasks) == 260
    assert [(task["id"], task["count"]) for task in entry["tasks"]] == tasks[:ENTRY_VALUES]


def test_the_picker_is_bounded_and_searchable(many_tasks):
    rows = all_rows(many_tasks, "tasks")
    tasks, annotations = expected_values(rows)
    first = many_tasks.get("/v1/values?run_id=tasks")
    assert len(first["tasks"]["values"]) == 20 and first["tasks"]["has_more"]
    assert first["tasks"]["total"] == first["tasks"]["matching"] == 260
    assert [(v["value"], v["count"]) for v in first["tasks"]["values"]] == tasks[:20]
    rewards = next(a for a in first["annotations"] if a["key"] == "reward")
    assert [v["value"] for v in rewards["values"]] == ["-1", "0.5", "2", "10", "Apple", "pass", "true"]
    assert [v["count"] for v in rewards["values"]] == [n for _, n in annotations["reward"]]
    capped = many_tasks.get("/v1/values?run_id=tasks&limit=3")
    assert len(capped["annotations"]) == 3 and capped["annotation_keys"] == {
        "total": len(annotations), "matching": len(annotations), "has_more": True}
    assert all(len(a["values"]) <= 3 for a in capped["annotations"])
    searched = many_tasks.get("/v1/values?run_id=tasks&q=TASK-012&limit=100")
    want = [(t, n) for t, n in tasks if "task-012" in t]
    assert [(v["value"], v["count"]) for v in searched["tasks"]["values"]] == want
    assert searched["tasks"]["matching"] == len(want) == 10 and not searched["tasks"]["has_more"]
    assert searched["annotations"] == []  # no annotation key or value holds it
    by_key = many_tasks.get("/v1/values?run_id=tasks&q=k4")
    assert [a["key"] for a in by_key["annotations"]] == ["k4"]
    assert [v["value"] for v in by_key["annotations"][0]["values"]] == [str(i) for i in range(7)]
    by_value = many_tasks.get("/v1/values?run_id=tasks&q=app")
    assert [(a["key"], [v["value"] for v in a["values"]]) for a in by_value["annotations"]] == [("reward", ["Apple"])]
    assert many_tasks.get("/v1/values?run_id=tasks&limit=5000")["limit"] == 100
    many_tasks.get("/v1/values?run_id=tasks&limit=many", expect=400)
    many_tasks.get("/v1/values", expect=400)
    many_tasks.get("/v1/values?run_id=nothing", expect=404)
    assert not {"mean", "average", "pass", "pass_rate", "rate"} & set(walk_keys(first))
