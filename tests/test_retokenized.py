"""Re-tokenized copies on the real server: `/retokenized` against skycap's oracle, the flag and the
run's count through the index, a text-only record, and shadowed nodes that are no copy."""

import json
import shutil

import pytest

from skycap_viewer.demo.writer import RecordBuilder
from skycap_viewer.views.record.retokenized import first_difference
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.oracle import ORACLE
from tests.support.server_process import ServerProcess, wait_for

RETOK = ORACLE["retok"]["records"]


def wire(node: int) -> str:
    return f"n{node}"


def node_tokens(server, run: str, record: str) -> dict:
    """{node id: (token ids, text pieces)} from `/paths`, as the Path tab draws them."""
    paths = server.get(f"/v1/trajectories/{record}/paths?run_id={run}")
    tokens = {}
    for node_id, node in paths["nodes"].items():
        offsets, text = node["token_offsets"], node["text"]
        tokens[node_id] = (node["token_ids"], [text[a:b] for a, b in zip(offsets, offsets[1:], strict=False)])
    return tokens


@pytest.mark.parametrize("record", sorted(RETOK))
def test_each_copy_is_paired_with_its_model_node_as_skycap_says(corpus_server, record):
    entry = RETOK[record]
    answer = corpus_server.get(f"/v1/trajectories/{record}/retokenized?run_id=retok")
    expected = [{"model_node_id": wire(e["model_node_id"]), "copy_node_id": wire(e["copy_node_id"]),
                 "first_difference": e["first_difference"]} for e in entry["retokenized"]]
    assert [{key: copy[key] for key in ("model_node_id", "copy_node_id", "first_difference")}
            for copy in answer["copies"]] == expected
    sizes = {wire(node["id"]): node["tokens"] for node in entry["node_summary"]}
    tokens = node_tokens(corpus_server, "retok", record)
    for copy in answer["copies"]:
        assert copy["compared"] is True and copy["identical"] is False
        assert copy["model_token_count"] == sizes[copy["model_node_id"]]
        assert copy["copy_token_count"] == sizes[copy["copy_node_id"]]
        at, window = copy["first_difference"], copy["window"]
        assert window["from"] == max(at - answer["around"], 0)
        for side in ("model", "copy"):
            ids, pieces = tokens[copy[f"{side}_node_id"]]
            shown = window[side]
            assert [t["index"] for t in shown] == list(range(window["from"], min(at + answer["around"] + 1, len(ids))))
            assert [(t["id"], t["text"]) for t in shown] == [(ids[t["index"]], pieces[t["index"]]) for t in shown]
        model, copied = ({t["index"]: t["id"] for t in window[side]} for side in ("model", "copy"))
        assert model[at] != copied[at]
        assert all(model[i] == copied[i] for i in range(window["from"], at))


def test_the_bridged_control_has_no_copy_and_no_unbridged_call(corpus_server):
    answer = corpus_server.get("/v1/trajectories/tr_retok_bridged_control/retokenized?run_id=retok")
    assert answer["copies"] == [] and answer["unbridged_calls"] == [] and answer["notes"] == []
    assert RETOK["tr_retok_bridged_control"]["retokenized"] == []


@pytest.mark.parametrize("record", ["tr_retok_byte_fallback", "tr_retok_reasoning_dropped"])
def test_an_unbridged_call_past_a_copy_did_not_reproduce_the_model_tokens(corpus_server, record):
    answer = corpus_server.get(f"/v1/trajectories/{record}/retokenized?run_id=retok")
    entry = RETOK[record]
    calls = [(wire(node["id"]), i) for node in entry["node_summary"] for i in range(node["calls"])]  # node order
    unbridged = [call for call, bridged in zip(calls, entry["bridged"], strict=True) if bridged is False]
    assert unbridged and [(c["node_id"], c["call_index"]) for c in answer["unbridged_calls"]] == unbridged
    (copy,) = entry["retokenized"]
    assert all(c["bridged"] is False and c["reproduced"] is False and c["copy_node_id"] == wire(copy["copy_node_id"])
               and c["model_node_id"] == wire(copy["model_node_id"]) for c in answer["unbridged_calls"])
    assert "format §8" in answer["reproduced_rule"]


def test_an_unbridged_call_with_no_copy_on_its_prompt_reproduced_the_tokens(corpus_server):
    answer = corpus_server.get("/v1/trajectories/tr_1ea8573438194800/retokenized?run_id=real-like")
    entry = ORACLE["real-like"]["records"]["tr_1ea8573438194800"]
    assert len(answer["unbridged_calls"]) == entry["unbridged"] == 1
    assert answer["unbridged_calls"][0] == {"node_id": "n2", "call_index": 0, "bridged": False, "reproduced": True,
                                            "copy_node_id": None, "model_node_id": None}


@pytest.mark.parametrize(("run", "record"), [
    ("real-like", "tr_1ea8573438194800"),  # tokens: a model node shadowed by a model node
    ("real-like", "tr_175c734c42332c87"),  # text mode: a model node shadowed by a model node
    ("rules", "tr_rule_text_final"),  # text mode
])
def test_a_shadowed_node_that_is_no_copy_is_not_listed(corpus_server, run, record):
    assert ORACLE[run]["records"][record]["shadowed_by"], "the fixture has a shadowed node"
    answer = corpus_server.get(f"/v1/trajectories/{record}/retokenized?run_id={run}")
    assert answer["copies"] == []
    header = corpus_server.get(f"/v1/trajectories/{record}?run_id={run}")
    assert header["skycap"]["retokenized"] == [] and "re-tokenized" not in header["flags"]
    graph = corpus_server.get(f"/v1/trajectories/{record}/graph?run_id={run}")
    assert not any(node["signs"]["retokenized"] for node in graph["nodes"])
    assert any(node["shadowed_by"] for node in graph["nodes"])
    if header["mode"] == "text":
        assert answer["notes"] == ["Text mode: no token ids were captured, so no reply is a re-tokenized copy."]


def copied_record(tmp_path, record: str, *, tokens: bytes | None) -> tuple:
    """A run holding the retok record `record`, its tokens sidecar left out (None) or replaced."""
    run = tmp_path / "copy"
    run.mkdir()
    for item in (FIXTURES / "retok").glob(f"{record}.*"):
        if not item.name.endswith(".tokens.zst"):
            shutil.copy(item, run / item.name)
    if tokens is not None:
        (run / f"{record}.tokens.zst").write_bytes(tokens)
    return run


@pytest.mark.parametrize(("tokens", "reason"), [(None, "tokens-missing"), (b"not zstd at all", "tokens-unreadable")])
def test_without_readable_tokens_the_copies_are_listed_but_not_compared(tmp_path, tokens, reason):
    record = "tr_retok_reasoning_dropped"
    entry = RETOK[record]
    with ServerProcess([copied_record(tmp_path, record, tokens=tokens)]) as server:
        server.wait_indexed()
        answer = server.get(f"/v1/trajectories/{record}/retokenized")
    assert answer["text_only"] == reason
    assert (reason == "tokens-unreadable") == ("tokens_error" in answer)
    sizes = {wire(node["id"]): node["tokens"] for node in entry["node_summary"]}
    (copy,) = answer["copies"]
    assert copy == {"model_node_id": "n1", "copy_node_id": "n2", "parent_node_id": "n0",
                    "model_token_count": sizes["n1"], "copy_token_count": sizes["n2"],
                    "compared": False, "identical": None, "first_difference": None, "window": None}
    (note,) = answer["notes"]
    assert reason in note or "cannot be read" in note
    assert "unknown" in note and "not identical" in note
    assert [c["reproduced"] for c in answer["unbridged_calls"]] == [False]  # from the document alone


def test_around_bounds_the_window(corpus_server):
    base = "/v1/trajectories/tr_retok_byte_fallback/retokenized?run_id=retok"
    (copy,) = corpus_server.get(f"{base}&around=0")["copies"]
    assert [t["index"] for t in copy["window"]["model"]] == [copy["first_difference"]]
    (copy,) = corpus_server.get(f"{base}&around=256")["copies"]
    assert len(copy["window"]["copy"]) == copy["copy_token_count"]  # the whole node: shorter than the window
    for bad in ("257", "-1", "many"):
        assert corpus_server.get(f"{base}&around={bad}", expect=400)["detail"].startswith("around must be")


def test_first_difference_of_equal_prefixed_and_empty_lists():
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2], [1, 2, 3]) == 2
    assert first_difference([1, 2, 3], [1]) == 1
    assert first_difference([], [4]) == 0
    assert first_difference([5, 2], [1, 2]) == 0


def test_the_flag_and_the_run_count_come_through_the_index(corpus_server):
    rows = corpus_server.get("/v1/trajectories?run_id=retok&flag=re-tokenized")
    copied = {rid for rid, entry in RETOK.items() if entry["retokenized"]}
    assert {row["id"] for row in rows["data"]} == copied and rows["total"] == len(copied)
    assert all(row["summary"]["retokenized"] == len(RETOK[row["id"]]["retokenized"]) for row in rows["data"])
    unflagged = corpus_server.get("/v1/trajectories?run_id=retok&exclude_flag=re-tokenized")["data"]
    assert [row["id"] for row in unflagged] == ["tr_retok_bridged_control"]
    health = dict(corpus_server.get("/v1/trajectories?run_id=retok")["health"]["counts"])
    assert health["re-tokenized"] == len(copied)
    runs = {run["id"]: run for run in corpus_server.get("/v1/runs")["data"]}
    assert runs["retok"]["retokenized"] == {"copies": 2, "rollouts": 2}
    for name, run in runs.items():  # no other corpus record has a copy: every shadowed node there is no copy
        copies = sum(len(e.get("retokenized") or []) for e in ORACLE[name]["records"].values())
        assert run["retokenized"]["copies"] == copies, name
    info = {flag["flag"]: flag for flag in corpus_server.get("/__viewer")["flags"]}
    assert info["re-tokenized"]["level"] == "info" and "sampled" in info["re-tokenized"]["why"]


def written_run(tmp_path):
    """Three written token records: one with two copies, one with one, and a text record whose
    harness-written reply is shadowed by the model's (no copy); the run holds 3 copies in 2 rollouts."""
    run = tmp_path / "written"
    run.mkdir()
    for record, copies in (("tr_two_copies", 2), ("tr_one_copy", 1)):
        builder = RecordBuilder(record, "tokens")
        parent = builder.add_client(None, "user", "say hi")
        for turn in range(copies):
            reply = builder.add_model(parent, f"hi {turn}")
            copy = builder.add_client(parent, "assistant", f"hi {turn}")  # the reply as the render gave it back
            builder.nodes[copy]["shadowed_by"] = reply
            parent = builder.add_client(copy, "user", "again")
        builder.add_model(parent, "bye")
        builder.write(run)
    text = RecordBuilder("tr_text_shadow", "text")
    user = text.add_client(None, "user", "say hi")
    written = text.add_client(user, "assistant", "hi")
    sampled = text.add_model(user, "hi")
    text.nodes[written]["shadowed_by"] = sampled
    text.write(run)
    return run


def test_copies_are_counted_in_nodes_across_the_run(tmp_path):
    run = written_run(tmp_path)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        (entry,) = server.get("/v1/runs")["data"]
        assert entry["retokenized"] == {"copies": 3, "rollouts": 2}
        rows = {row["id"]: row for row in server.get("/v1/trajectories?flag=re-tokenized")["data"]}
        assert {rid: row["summary"]["retokenized"] for rid, row in rows.items()} == {"tr_two_copies": 2,
                                                                                     "tr_one_copy": 1}
        answer = server.get("/v1/trajectories/tr_two_copies/retokenized")
        assert [(c["model_node_id"], c["copy_node_id"]) for c in answer["copies"]] == [("n1", "n2"), ("n4", "n5")]
        tokens = node_tokens(server, "written", "tr_two_copies")
        for copy in answer["copies"]:
            assert copy["first_difference"] == first_difference(tokens[copy["model_node_id"]][0],
                                                                tokens[copy["copy_node_id"]][0])
        assert server.get("/v1/trajectories/tr_text_shadow/retokenized")["copies"] == []
    summary = json.loads(run_cli("summary", run, "--json").stdout)[0]
    assert summary["flags"]["re-tokenized"] == 2
    shown = run_cli("show", run / "tr_one_copy.json.zst").stdout
    assert "re-tokenized (info)" in shown


def test_an_old_record_call_inferred_unbridged_is_listed_as_not_reproduced(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    builder = RecordBuilder("tr_old", "tokens")
    user = builder.add_client(None, "user", "say hi")
    reply = builder.add_model(user, "hi there")
    copy = builder.add_client(user, "assistant", "hi there")
    builder.nodes[copy]["shadowed_by"] = reply
    later = builder.add_model(builder.add_client(copy, "user", "again"), "hi again")
    for node in builder.nodes:  # written before calls said `bridged`
        for call in node["calls"]:
            del call["bridged"]
    builder.write(run)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        answer = server.get("/v1/trajectories/tr_old/retokenized")
        flags = server.get("/v1/trajectories/tr_old")["flags"]
    assert {"unbridged-inferred", "re-tokenized"} <= set(flags)
    assert answer["unbridged_calls"] == [{
        "node_id": wire(later), "call_index": 0, "bridged": "absent", "reproduced": False,
        "copy_node_id": wire(copy), "model_node_id": wire(reply)}]


@pytest.mark.slow
def test_the_run_count_follows_records_that_go_and_come_back(tmp_path):
    run = written_run(tmp_path)
    kept = tmp_path / "kept"
    kept.mkdir()
    with ServerProcess([run], cache_home=tmp_path / "cache") as server:
        server.wait_indexed()
        for item in run.glob("tr_two_copies.*"):
            item.rename(kept / item.name)
        wait_for(lambda: server.get("/v1/runs")["data"][0]["retokenized"] == {"copies": 1, "rollouts": 1},
                 "the removed record's copies taken out of the run's count")
        for item in kept.iterdir():
            item.rename(run / item.name)
        wait_for(lambda: server.get("/v1/runs")["data"][0]["retokenized"] == {"copies": 3, "rollouts": 2},
                 "the record's copies counted again")
    with ServerProcess([run], cache_home=tmp_path / "cache") as reopened:  # kept in the persisted index
        reopened.wait_indexed()
        assert reopened.get("/v1/runs")["data"][0]["retokenized"] == {"copies": 3, "rollouts": 2}
