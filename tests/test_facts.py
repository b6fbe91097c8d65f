"""The facts the page draws come from the server, once: tree shape, which path trains a node, call
durations, a rollout's size and unit, the reward as a number, and the flag and notice catalogues.

Each is checked against skycap's own answers (`oracle.json`) or a computation written here, so the
page can draw them without deriving any of them again.
"""

import json
import math

import pytest

from tests.support.cli import run_cli
from tests.support.oracle import ORACLE, READABLE, READABLE_IDS, trained_paths


def as_number(reward):
    if isinstance(reward, bool):
        return int(reward)
    return reward if isinstance(reward, (int, float)) and math.isfinite(reward) else None


def test_the_catalogues_say_what_rows_show_and_why_text_only(corpus_server):
    info = corpus_server.get("/__viewer")
    assert [f["flag"] for f in info["flags"] if not f["row"]] == ["bridged-unknown"]
    notes = {entry["reason"]: entry for entry in info["text_only"]}
    assert set(notes) == {"tokens-missing", "tokens-unlisted", "tokens-unreadable"}
    assert all(entry["level"] in ("error", "warn", "info") and entry["note"] for entry in notes.values())
    mirror = corpus_server.get("/v1/trajectories/tr_bac9802dee51ae08/paths?run_id=mirror-text")
    assert mirror["text_only"] == "tokens-missing" and notes["tokens-missing"]["level"] == "warn"


@pytest.mark.parametrize("directory,record_id,entry", READABLE, ids=READABLE_IDS)
@pytest.mark.slow
def test_the_graph_says_children_roots_and_where_each_node_trains(corpus_server, directory, record_id, entry):
    graph = corpus_server.get(f"/v1/trajectories/{record_id}/graph?run_id={directory}")
    parents = {node["id"]: node["parent"] for node in entry["node_summary"]}
    for node in graph["nodes"]:
        own = int(node["node_id"][1:])
        assert node["child_ids"] == [f"n{n}" for n in sorted(parents) if parents[n] == own]
    assert graph["root_node_ids"] == [f"n{n}" for n in sorted(parents) if parents[n] is None]
    trained = {}
    for index, path in enumerate(trained_paths(entry)):
        for target in path["targets"]:
            trained.setdefault(target, index)
    assert {int(n["node_id"][1:]): n["trained_in"] for n in graph["nodes"] if n["trained_in"] is not None} == trained


@pytest.mark.parametrize("directory,record_id,entry", READABLE, ids=READABLE_IDS)
def test_each_call_carries_the_duration_the_calls_tab_shows(corpus_server, directory, record_id, entry):
    graph = corpus_server.get(f"/v1/trajectories/{record_id}/graph?run_id={directory}")
    exchanges = corpus_server.get(f"/v1/trajectories/{record_id}/exchanges?run_id={directory}")["data"]
    for node in graph["nodes"]:
        for call in node["calls"]:
            start, end = call.get("t_start"), call.get("t_end")
            timed = all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in (start, end))
            assert call["duration_ms"] == (round((end - start) * 1000, 3) if timed else None)
    graph_durations = sorted((n["node_id"], c["duration_ms"]) for n in graph["nodes"] for c in n["calls"])
    listed = sorted((x["node_id"], x["duration_ms"]) for x in exchanges if x["kind"] == "call")
    assert graph_durations == listed


@pytest.mark.parametrize("directory,record_id,entry", READABLE, ids=READABLE_IDS)
@pytest.mark.slow
def test_the_header_says_the_size_unit_and_reward_value(corpus_server, directory, record_id, entry):
    header = corpus_server.get(f"/v1/trajectories/{record_id}?run_id={directory}")
    payload = corpus_server.get(f"/v1/trajectories/{record_id}/paths?run_id={directory}")
    paths = payload["paths"]
    size = header["size"]
    assert header["reward_value"] == as_number(entry["annotations"].get("reward"))
    every_path_tokens = all(p["blocking"] is not None for p in paths)
    if paths:
        assert size["unit"] == ("tokens" if every_path_tokens else "chars")
    sizes = [p["token_count"] or p["char_count"] or 0 for p in paths]
    samples = [p for p in paths if p["trains"]]
    assert size["tokens"] == sum(p["token_count"] or p["char_count"] or 0 for p in samples)
    if paths:
        assert size["trainable"] == (sum(p["trainable_count"] for p in samples) if size["unit"] == "tokens" else None)
    else:  # no nodes: nothing could train, whatever the mode
        assert size["trainable"] == 0
    assert size["longest"] == max(sizes, default=0) and size["samples"] == len(samples)
    assert header["samples_rule"] == (entry.get("samples_field") or {}).get("paths")
    for path in paths:
        assert path["unit"] == ("tokens" if path["blocking"] is not None else "chars")
        counted = "token_count" if path["unit"] == "tokens" else "char_count"
        assert all(counted in block for block in path["blocks"])
    row = next(r for r in corpus_server.get(f"/v1/trajectories?run_id={directory}&limit=1000")["data"]
               if r["id"] == record_id)
    assert row["size"] == size and row["summary"]["tokens"] == size["tokens"]


def test_forks_say_their_unit(corpus_server):
    fork = corpus_server.get("/v1/trajectories/tr_86f0b750382298e2/forks?a=0&b=1&run_id=real-like")
    paths = corpus_server.get("/v1/trajectories/tr_86f0b750382298e2/paths?run_id=real-like")["paths"]
    assert fork["unit"] == paths[0]["unit"]


def test_group_rewards_carry_the_value_they_are_coloured_by(corpus_server):
    groups = corpus_server.get("/v1/groups?run_id=groups&limit=1000")["data"]
    entries = [entry for group in groups for entry in group["rewards"]]
    assert entries
    for entry in entries:
        assert entry["value"] == as_number(entry["reward"])


def test_summary_groups_by_the_keys_it_is_given(corpus):
    readable = {rid: e for rid, e in ORACLE["groups"]["records"].items() if e.get("document") == "ok"}
    steps = {e["meta"]["step"] for e in readable.values() if "step" in e["meta"]}
    result = run_cli("summary", corpus / "groups", "--json", "--group-by", "step")
    assert result.returncode == 0, result.stderr
    groups = json.loads(result.stdout)[0]["groups"]
    assert groups["by"] == ["step"] and groups["count"] == len(steps)
    assert run_cli("summary", corpus / "groups", "--group-by", " , ").returncode == 2
