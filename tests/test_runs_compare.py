"""Two runs group by group (`/v1/compare/runs`) and one prompt across steps (`/v1/lineage`), on the real server.

The expected keys come from `groups2-keys.json` and the expected rollouts from the records' own
documents (meta and annotations as written), never from the server's rows.
"""

import json
from urllib.parse import quote

import pytest

from skycap_viewer.record.document import document_path, list_record_ids, read_document
from tests.support.corpus import FIXTURES

KEYS = json.loads((FIXTURES / "groups2-keys.json").read_text())


def key_name(pair) -> str:
    """A (step, instance_id) pair as the server names its group key."""
    return "~".join(map(str, pair))


def documents(run_id: str) -> dict:
    """record id -> the record's document, read from the fixture directory itself."""
    directory = FIXTURES / run_id
    return {rid: read_document(document_path(directory, rid)) for rid in list_record_ids(directory)}


def all_pairs(server, query: str) -> dict:
    answer = server.get(f"/v1/compare/runs?{query}&limit=1000")
    assert not answer["has_more"] and len(answer["matched"]) == answer["total"]
    return answer


def test_two_runs_match_their_shared_keys_exactly(corpus_server):
    answer = all_pairs(corpus_server, "a=groups&b=groups2")
    assert answer["by"] == KEYS["key"] and (answer["a"], answer["b"]) == ("groups", "groups2")
    assert answer["step_a"] is None and answer["step_b"] is None
    assert sorted(m["key"] for m in answer["matched"]) == sorted(map(key_name, KEYS["both"]))
    assert sorted(answer["only_a"]) == sorted(map(key_name, KEYS["only_in_groups"]))
    assert sorted(answer["only_b"]) == sorted(map(key_name, KEYS["only_in_groups2"]))
    listed_a = [g["key"] for g in corpus_server.get("/v1/groups?run_id=groups&limit=1000")["data"]]
    assert [m["key"] for m in answer["matched"]] == [k for k in listed_a if k in {m["key"] for m in answer["matched"]}]
    for pair in answer["matched"]:
        for side, run_id in (("a", "groups"), ("b", "groups2")):
            summary = pair[side]
            assert summary["key"] == pair["key"] and summary["run_id"] == run_id
            detail = corpus_server.get(f"/v1/groups/{quote(pair['key'])}?run_id={run_id}")
            assert summary == detail["group"]
            listed = next(g for g in corpus_server.get(f"/v1/groups?run_id={run_id}&limit=1000")["data"]
                          if g["key"] == pair["key"])
            assert summary == listed
            per_key = KEYS["records_per_key"]["groups" if side == "a" else "groups2"]
            assert summary["matching"] == summary["n"] + summary["superseded_count"] == per_key[
                pair["key"].replace("~", "/")]
    shown = [r["value"] for pair in answer["matched"] for side in "ab" for r in pair[side]["rewards"]]
    assert answer["reward_range"] == {"min": min(shown), "max": max(shown)}


def test_matched_pairs_come_in_pages(corpus_server):
    everything = all_pairs(corpus_server, "a=groups2&b=groups")
    first = corpus_server.get("/v1/compare/runs?a=groups2&b=groups&limit=3")
    assert len(first["matched"]) == 3 and first["has_more"] and first["total"] == len(KEYS["both"])
    rest = corpus_server.get("/v1/compare/runs?a=groups2&b=groups&limit=3&offset=3")
    assert not rest["has_more"] and rest["offset"] == 3
    assert first["matched"] + rest["matched"] == everything["matched"]
    assert first["only_a"] == rest["only_a"] == everything["only_a"]  # never paged, never dropped
    assert sorted(everything["only_a"]) == sorted(map(key_name, KEYS["only_in_groups2"]))


def test_two_steps_of_one_run_by_instance(corpus_server):
    records = documents("groups")
    instances = {step: {d["meta"]["instance_id"] for d in records.values() if d["meta"]["step"] == step}
                 for step in (1, 2, 3)}
    for step_a, step_b in ((1, 2), (2, 3), (1, 3)):
        answer = all_pairs(corpus_server, f"a=groups&b=groups&step_a={step_a}&step_b={step_b}")
        assert answer["by"] == ["instance_id"] and (answer["step_a"], answer["step_b"]) == (step_a, step_b)
        assert sorted(m["key"] for m in answer["matched"]) == sorted(instances[step_a] & instances[step_b])
        assert sorted(answer["only_a"]) == sorted(instances[step_a] - instances[step_b])
        assert sorted(answer["only_b"]) == sorted(instances[step_b] - instances[step_a])
        for pair in answer["matched"]:
            for side, step in (("a", step_a), ("b", step_b)):
                ids = {r["id"] for r in pair[side]["rewards"]}
                assert all(records[rid]["meta"]["step"] == step for rid in ids)
                members = [d for d in records.values()
                           if d["meta"]["step"] == step and d["meta"]["instance_id"] == pair["key"]]
                assert pair[side]["matching"] == len(members)
    explicit = all_pairs(corpus_server, "a=groups&b=groups&step_a=1&step_b=3&by=instance_id")
    assert explicit["matched"] == all_pairs(corpus_server, "a=groups&b=groups&step_a=1&step_b=3")["matched"]


def test_compare_runs_errors(corpus_server):
    assert "a=RUN_A" in corpus_server.get("/v1/compare/runs?a=groups", expect=400)["detail"]
    corpus_server.get("/v1/compare/runs?b=groups", expect=400)
    corpus_server.get("/v1/compare/runs?a=groups&b=nothing", expect=404)
    corpus_server.get("/v1/compare/runs?a=nothing&b=groups", expect=404)
    assert "step_a" in corpus_server.get("/v1/compare/runs?a=groups&b=groups&step_a=x", expect=400)["detail"]


def expected_lineage(run_id: str, key: str, value: str) -> dict:
    """step -> {record id: (attempt, repetition, reward)} of the records whose meta (else annotations) has it."""
    by_step = {}
    for rid, document in documents(run_id).items():
        meta, annotations = document.get("meta") or {}, document.get("annotations") or {}
        found = meta.get(key, annotations.get(key))
        if found is not None and str(found) == value:
            by_step.setdefault(meta.get("step"), {})[rid] = (meta["attempt"], meta["repetition_id"],
                                                             annotations.get("reward"))
    return by_step


@pytest.mark.parametrize("value", ["a", "b", "c"])
def test_lineage_lists_one_prompt_at_every_step(corpus_server, value):
    expected = expected_lineage("groups", "instance_id", value)
    answer = corpus_server.get(f"/v1/lineage?run_id=groups&key=instance_id&value={value}")
    assert (answer["run_id"], answer["key"], answer["value"]) == ("groups", "instance_id", value)
    assert [column["step"] for column in answer["data"]] == sorted(expected)
    rewards = [reward for records in expected.values() for _, _, reward in records.values()]
    assert answer["reward_range"] == {"min": min(rewards), "max": max(rewards)}
    for column in answer["data"]:
        records = expected[column["step"]]
        rollouts = {r["trajectory_id"]: r for r in column["rollouts"]}
        assert set(rollouts) == set(records)
        for rid, (attempt, repetition, reward) in records.items():
            rollout = rollouts[rid]
            assert (rollout["attempt"], rollout["repetition_id"], rollout["reward"]) == (attempt, repetition, reward)
            later = [other for other, (a, rep, _) in records.items() if rep == repetition and a > attempt]
            assert rollout["superseded"] == bool(later)
            if later:  # the repetition's highest attempt is the one that counts instead
                assert rollout["superseded_by"] == max(later, key=lambda other: records[other][0])
            else:
                assert rollout["superseded_by"] is None


def test_lineage_marks_superseded_attempts_as_the_group_does(corpus_server):
    answer = corpus_server.get("/v1/lineage?run_id=groups&key=instance_id&value=a")
    superseded = {r["trajectory_id"]: r["superseded_by"] for column in answer["data"]
                  for r in column["rollouts"] if r["superseded"]}
    assert superseded  # step 1 rep 2 and step 3 reps 1 and 3 were run again
    for column in answer["data"]:
        group = corpus_server.get(f"/v1/groups/{column['step']}~a?run_id=groups")
        assert {r["id"]: r["superseded_by"] for r in group["superseded"]} == {
            r["trajectory_id"]: r["superseded_by"] for r in column["rollouts"] if r["superseded"]}
        assert [r["id"] for r in group["group"]["rewards"]] == [
            r["trajectory_id"] for r in column["rollouts"] if not r["superseded"]]
        values = {r["id"]: r["reward_value"] for r in group["rollouts"]}
        assert all(values[r["trajectory_id"]] == r["reward_value"] for r in column["rollouts"] if not r["superseded"])


def test_lineage_errors_and_unknown_values(corpus_server):
    for query in ("key=instance_id&value=a", "run_id=groups&value=a", "run_id=groups&key=instance_id"):
        corpus_server.get(f"/v1/lineage?{query}", expect=400)
    corpus_server.get("/v1/lineage?run_id=nothing&key=instance_id&value=a", expect=404)
    assert corpus_server.get("/v1/lineage?run_id=groups&key=instance_id&value=zz")["data"] == []
    by_task = corpus_server.get("/v1/lineage?run_id=groups&key=task&value=%2Ftasks%2Ftask-a")
    assert by_task["data"] == corpus_server.get("/v1/lineage?run_id=groups&key=instance_id&value=a")["data"]
