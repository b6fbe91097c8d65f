"""What trained is what the record says: a document's `samples` rows, not a re-run of the `all` rule.

Checked on records skycap finished with `final` and custom path rules (`rules/`, `spec/tr_final_rule`)
against skycap's own `trained_by_samples`, and on records made here whose rows do not fit the graph.
"""

import json
import shutil

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.oracle import ORACLE
from tests.support.sampled_records import inner_row_record, with_samples
from tests.support.server_process import ServerProcess

RULES = ORACLE["rules"]["records"]


def paths_of(server, run, record_id):
    return server.get(f"/v1/trajectories/{record_id}/paths?run_id={run}")


def test_a_final_rule_record_trains_only_its_final_path(corpus_server):
    payload = paths_of(corpus_server, "spec", "tr_final_rule")
    discarded, final = payload["paths"]
    assert not discarded["trains"] and discarded["trainable_count"] == 0 and discarded["targets"] == []
    kinds = {block["kind"] for block in discarded["blocks"]}
    assert "sampled-untrained" in kinds and "sampled" not in kinds
    assert final["trains"] and final["targets"] == ["n2", "n4"]
    header = payload["trajectory"]
    assert header["samples_rule"] == "final" and header["size"]["samples"] == 1
    assert header["size"]["trainable"] == final["trainable_count"]
    assert "no-train" not in header["flags"]  # a path the rule leaves out is no sample: nothing to flag
    graph = corpus_server.get("/v1/trajectories/tr_final_rule/graph?run_id=spec")
    assert graph["train_once"]["holds"] and graph["train_once"]["untrained"] == ["n1"]
    assert graph["train_once"]["rule"] == "final" and graph["train_once"]["rule_recorded"]


@pytest.mark.parametrize("record_id", sorted(RULES))
def test_rule_records_total_what_skycap_says_the_trainer_gets(corpus_server, record_id):
    entry = RULES[record_id]
    header = paths_of(corpus_server, "rules", record_id)["trajectory"]
    rows = entry["trained_by_samples"]
    assert header["samples_rule"] == entry["samples_field"]["paths"]
    assert header["size"]["samples"] == len(rows)
    if entry["mode"] != "text":
        assert header["size"]["tokens"] == sum(row["tokens"] for row in rows)
        assert header["size"]["trainable"] == sum(row["trained_tokens"] for row in rows)
    else:  # nothing to count trained tokens in: null, not 0 (which a notebook would read as "trains nothing")
        assert header["size"]["unit"] == "chars" and header["size"]["trainable"] is None
    assert ("no-train" in header["flags"]) == (not rows or any(r["trained_tokens"] == 0 for r in rows))


def test_a_rule_with_no_rows_trains_nothing_and_says_so(corpus_server):
    payload = paths_of(corpus_server, "rules", "tr_rule_no_rows")
    assert [p["trains"] for p in payload["paths"]] == [False]
    assert payload["trajectory"]["size"]["trainable"] == 0 and "no-train" in payload["trajectory"]["flags"]
    assert {b["kind"] for b in payload["paths"][0]["blocks"]} & {"sampled", "sampled-elsewhere"} == set()


def test_rows_in_the_rules_order_train_the_paths_they_name(corpus_server):
    payload = paths_of(corpus_server, "rules", "tr_rule_two_rows")
    trains = {p["leaf_node_id"]: (p["trains"], p["targets"]) for p in payload["paths"]}
    assert trains == {"n3": (True, ["n1"]), "n5": (False, []), "n7": (True, ["n7"])}
    middle = next(p for p in payload["paths"] if p["leaf_node_id"] == "n5")
    model_kinds = {b["kind"] for b in middle["blocks"] if b["author"] == "model"} - {"scaffold"}
    assert model_kinds == {"sampled-elsewhere", "sampled-untrained"}


def test_summary_totals_the_samples(corpus):
    result = run_cli("summary", corpus / "rules", "--json")
    assert result.returncode == 0, result.stderr
    samples = json.loads(result.stdout)[0]["samples"]
    tokens = [row for e in RULES.values() if e["mode"] != "text" for row in e["trained_by_samples"]]
    assert samples["sequences"] == sum(len(e["trained_by_samples"]) for e in RULES.values())
    assert samples["tokens"] == sum(row["tokens"] for row in tokens)
    assert samples["trained_tokens"] == sum(row["trained_tokens"] for row in tokens)
    assert samples["with_tokens"] == len(tokens) < samples["sequences"]  # the text-mode rule record's are not


def test_text_mode_trained_tokens_are_null_in_the_rows_the_export_and_the_summary(tmp_path, corpus):
    """A text-mode record has no tokens to count a loss in: its `trainable` is null (the page's `-`),
    in the row, the export and `summary --json`, and it is not flagged `no-train`."""
    for item in (corpus / "real-like").glob("tr_175c734c42332c87*"):
        (tmp_path / item.name).write_bytes(item.read_bytes())
    exported = run_cli("export", tmp_path)
    assert exported.returncode == 0, exported.stderr
    [row] = [json.loads(line) for line in exported.stdout.splitlines()]
    assert row["mode"] == "text" and row["size"]["unit"] == "chars"
    assert row["size"]["trainable"] is None and row["summary"]["trainable"] is None
    assert "no-train" not in row["flags"]
    summary = run_cli("summary", tmp_path, "--json")
    assert json.loads(summary.stdout)[0]["samples"] == {"sequences": row["size"]["samples"], "with_tokens": 0,
                                                        "tokens": None, "trained_tokens": None}
    assert "no tokens (text mode)" in run_cli("summary", tmp_path).stdout


@pytest.mark.parametrize("samples,problem", [
    ({"paths": "custom", "rows": [{"leaf": 99, "targets": [1]}]}, "leaf 99 names a node the graph doesn't have"),
    ({"paths": "custom", "rows": [{"leaf": 1, "targets": [0]}]}, "target 0 is not model-authored"),
    ({"paths": "custom", "rows": [{"leaf": 1, "targets": [7]}]}, "target 7 is not on the path to node 1"),
    ({"paths": "custom", "rows": [{"leaf": 1, "targets": [1]}, {"leaf": 1, "targets": [1]}]},
     "target 1 is already trained by this or an earlier row"),
    ({"paths": "custom", "rows": "all of them"}, "`samples` is not an object with a list of `rows`"),
])
@pytest.mark.slow
def test_samples_that_do_not_fit_the_graph_are_record_problems(tmp_path, samples, problem):
    run = tmp_path / "run"
    run.mkdir()
    for path in (FIXTURES / "spec").glob("tr_tokens.*"):
        shutil.copy(path, run / path.name)
    with_samples(FIXTURES / "spec" / "tr_tokens.json.zst", run / "tr_tokens.json.zst", samples)
    check = run_cli("check", run)
    assert check.returncode == 1 and problem in check.stdout
    with ServerProcess([run]) as server:
        server.wait_indexed()
        row = server.get("/v1/trajectories?run_id=run")["data"][0]
        assert "malformed-record" in row["flags"] and any(problem in p for p in row["record_problems"])


def test_a_row_ending_at_an_inner_node_is_a_sample_of_its_own(tmp_path):
    """Two rows on one path are two samples (skycap's sample builder: `input_ids[:end]` through each row's
    leaf, the loss on its targets), in the row's size, the path's summary, `show` and `summary`."""
    run = tmp_path / "inner"
    run.mkdir()
    document = inner_row_record(run)
    lengths = [node["tokens"]["length"] for node in document["nodes"]]
    sampled = [node["tokens"]["length"] - (node["tokens"]["sampled_start"] or 0) for node in document["nodes"]]
    first, whole = sum(lengths[:2]), sum(lengths)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        row = server.get("/v1/trajectories/tr_inner_row?run_id=inner")
        payload = paths_of(server, "inner", "tr_inner_row")
    assert row["size"]["samples"] == 2 and row["size"]["tokens"] == first + whole
    assert row["size"]["trainable"] == sampled[1] + sampled[5] and "no-train" not in row["flags"]
    [path] = payload["paths"]
    assert path["samples"] == [
        {"row": 0, "leaf_node_id": "n1", "targets": ["n1"], "size": first, "trainable": sampled[1]},
        {"row": 1, "leaf_node_id": "n5", "targets": ["n5"], "size": whole, "trainable": sampled[5]}]
    shown = run_cli("show", run / "tr_inner_row.json.zst").stdout
    loss = sampled[1] + sampled[5]
    assert f"custom rule (the record's samples): 2 samples, {first + whole} tokens, {loss} in the loss" in shown
    assert f"  sample            row 0: through n1, {first} tok, {sampled[1]} in the loss (targets n1)" in shown
    assert f"  sample            row 1: through n5, {whole} tok, {sampled[5]} in the loss (targets n5)" in shown
    summary = json.loads(run_cli("summary", run, "--json").stdout)[0]["samples"]
    assert (summary["sequences"], summary["tokens"]) == (2, first + whole)
    [line] = [json.loads(text) for text in run_cli("export", run, "--format", "rows").stdout.splitlines()]
    rows = line["rows"]  # one a sample: input_ids[:end] through its leaf, the loss on its own target
    assert [(r["sample"], r["leaf_node_id"], r["token_count"], r["trained_count"]) for r in rows] == [
        (0, "n1", first, sampled[1]), (1, "n5", whole, sampled[5])]
    for entry, target in zip(rows, (1, 5), strict=True):
        assert len(entry["input_ids"]) == len(entry["loss_mask"]) == len(entry["logprobs"]) == entry["token_count"]
        start = sum(lengths[:target]) + document["nodes"][target]["tokens"]["sampled_start"]
        assert [i for i, on in enumerate(entry["loss_mask"]) if on] == list(range(start, sum(lengths[:target + 1])))
    assert rows[1]["input_ids"][:first] == rows[0]["input_ids"]
