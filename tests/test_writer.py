"""The example writer: records it writes match skycap's own writer and read back exactly."""

import importlib.util
import json
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skycap_viewer.demo.writer import GENERATION_PROMPT, RecordBuilder, render
from skycap_viewer.record.document import read_document
from skycap_viewer.record.frames import decompress_one_frame
from skycap_viewer.record.manifest import layout_problems
from skycap_viewer.record.rollout import Rollout
from skycap_viewer.record.sidecars import read_present_sidecar, read_tokens
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES

DOCUMENT_KEYS = [
    "id", "status", "meta", "capture", "ended", "annotations", "created_at", "finished_at", "tools",
    "failures", "retries", "samples", "nodes", "format_version", "sidecars",
]
# Records of skycap's own writer (fake renderer) rebuilt from their messages: linear with a truncated
# reply, tools, forks (resample, edited reply, summary, subagent root), multi-byte UTF-8.
SKYCAP_RECORDS = [
    ("spec", "tr_truncated"), ("real-like", "tr_75f4b514aac0a32f"), ("real-like", "tr_86f0b750382298e2"),
    ("spec", "tr_utf8"),
]


def sampled_logprobs(tokens, node) -> list[float]:
    t = node["tokens"]
    return tokens.logprobs_of(t)[t["sampled_start"]:]


def rebuild(reference: dict, tokens) -> RecordBuilder:
    tool_lists = list(reference["tools"].values())
    builder = RecordBuilder(reference["id"], meta=reference["meta"], annotations=reference["annotations"],
                            tools=tool_lists[0] if tool_lists else None)
    for node in reference["nodes"]:
        if node["author"] == "client":
            builder.add_client(node["parent"], node["role"], message=node["message"])
        else:
            finish_reason = node["calls"][0]["finish_reason"]
            builder.add_model(node["parent"], message=node["message"], finish_reason=finish_reason,
                              logprobs=sampled_logprobs(tokens, node))
    return builder


@pytest.mark.parametrize(("directory", "record_id"), SKYCAP_RECORDS)
def test_rebuilt_skycap_record_has_the_same_tokens_and_layout(tmp_path, directory, record_id):
    source = FIXTURES / directory
    reference = read_document(source / f"{record_id}.json.zst")
    reference_tokens = read_tokens(source, reference)
    rebuild(reference, reference_tokens).write(tmp_path)

    written = read_document(tmp_path / f"{record_id}.json.zst")
    tokens = read_tokens(tmp_path, written)
    assert list(written) == list(reference)
    assert written["sidecars"]["tokens"]["arrays"] == reference["sidecars"]["tokens"]["arrays"]
    assert tokens.token_ids.tobytes() == reference_tokens.token_ids.tobytes()
    assert tokens.text_offsets.tobytes() == reference_tokens.text_offsets.tobytes()
    assert tokens.text == reference_tokens.text
    everything = {"offset": 0, "length": len(tokens.token_ids)}
    assert tokens.logprobs_of(everything) == reference_tokens.logprobs_of(everything)  # NaN read as None
    for mine, theirs in zip(written["nodes"], reference["nodes"], strict=True):
        assert list(mine) == list(theirs)
        assert mine["tokens"] == theirs["tokens"] | {
            key: mine["tokens"][key] for key in ("experts_offset", "experts_rows", "mask_offset", "mask_rows")
        }
        assert [(c["usage"], c["finish_reason"], c["bridged"]) for c in mine["calls"]] == [
            (c["usage"], c["finish_reason"], c["bridged"]) for c in theirs["calls"]
        ]
        assert [list(c) for c in mine["calls"]] == [list(c) for c in theirs["calls"]]
    assert written["samples"] == reference["samples"]
    assert Rollout(written).flags == Rollout(reference).flags


def forked_record(**options) -> RecordBuilder:
    """A token record with every sidecar: a resample, an edited reply, a truncation and a failure."""
    builder = RecordBuilder("tr_writer", meta={"step": 2, "instance_id": "a"}, annotations={"reward": 1},
                            experts=(2, 2), sampling_mask=True, **options)
    system = builder.add_client(None, "system", "be brief")
    user = builder.add_client(system, "user", "count to three ✓")
    first = builder.add_model(user, "1 2 3", logprobs=[-0.5, -0.25, -0.125, -1.0, -2.0, -0.75])
    builder.add_model(user, "one two", sampling={"temperature": 1.0})  # a resample: path 2
    edited = builder.add_client(user, "assistant", "1, 2, 3")  # the harness sent the reply back edited
    follow = builder.add_client(edited, "user", "more")
    builder.add_failure(503, "overloaded")
    cut = builder.add_model(follow, "4 5 6 7 8", finish_reason="length", logprobs=None)
    builder.add_client(cut, "user", "go on")
    return builder, first


def test_written_files_are_one_frame_each_sidecars_first_aligned(tmp_path):
    builder, _ = forked_record()
    written = builder.write(tmp_path)
    assert [p.name for p in written] == [
        "tr_writer.tokens.zst", "tr_writer.experts.zst", "tr_writer.sampling_mask.zst", "tr_writer.json.zst",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)  # no temporary left
    document = read_document(written[-1])
    assert list(document) == DOCUMENT_KEYS
    assert layout_problems(document, "tr_writer") == []
    for kind, manifest in document["sidecars"].items():
        payload = decompress_one_frame((tmp_path / manifest["file"]).read_bytes())
        specs = list(manifest["arrays"].values())
        assert all(spec["offset"] % 8 == 0 for spec in specs), kind
        assert [s["offset"] for s in specs] == sorted(s["offset"] for s in specs)
        assert len(payload) >= specs[-1]["offset"]


def test_token_record_reads_back_exactly(tmp_path):
    builder, first = forked_record()
    builder.write(tmp_path)
    document = read_document(tmp_path / "tr_writer.json.zst")
    tokens = read_tokens(tmp_path, document)
    nodes = document["nodes"]

    for node in nodes:
        t = node["tokens"]
        text = tokens.text_bytes(t).decode()
        assert "".join(tokens.pieces(t)) == text
        assert len(tokens.ids(t)) == t["length"]
        if node["author"] == "client":
            assert text.endswith(render(node["role"], node["message"]))
            assert tokens.logprobs_of(t) == [None] * t["length"]
        else:
            assert "".join(tokens.pieces(t)[: t["sampled_start"]]) == GENERATION_PROMPT
    model = nodes[first]["tokens"]
    assert tokens.logprobs_of(model) == [0.0] * 11 + [-0.5, -0.25, -0.125, -1.0, -2.0, -0.75]
    assert "".join(tokens.pieces(model)[11:]) == "1 2 3</s>"
    cut = next(n for n in nodes if n["calls"] and n["calls"][0]["finish_reason"] == "length")
    assert tokens.logprobs_of(cut["tokens"]) == [None] * cut["tokens"]["length"]
    assert not cut["tokens"]["has_logprobs"]
    after_cut = nodes[cut["id"] + 1]
    assert tokens.pieces(after_cut["tokens"])[:2] == ["</s>", "\n"]  # the end token the model never sampled

    experts = read_present_sidecar(tmp_path, document, "experts")["routed_experts"]
    assert len(experts) == len(tokens.token_ids) * 4
    mask = read_present_sidecar(tmp_path, document, "sampling_mask")
    rows = sum(n["tokens"]["mask_rows"] for n in nodes)
    assert len(mask["offsets"]) == rows + 1 and mask["offsets"][-1] == len(mask["ids"])
    assert [n["tokens"]["mask_offset"] is None for n in nodes] == [n["author"] == "client" for n in nodes]


def test_rollout_sees_the_graph_the_builder_made(tmp_path):
    builder, first = forked_record()
    builder.write(tmp_path)
    document = read_document(tmp_path / "tr_writer.json.zst")
    rollout = Rollout(document, {p.name for p in tmp_path.iterdir()}, "tr_writer")
    assert [p.info.nodes for p in rollout.paths] == [[0, 1, 2], [0, 1, 3], [0, 1, 4, 5, 6, 7]]
    assert [p.info.targets for p in rollout.paths] == [[first], [3], [6]]
    assert {"forked", "truncated", "failed-calls", "unbridged", "no-logprobs"} <= set(rollout.flags)
    assert [c["bridged"] for c in rollout.calls] == [None, False, False]
    assert document["failures"] == [{"t": document["failures"][0]["t"], "status": 503, "error": "overloaded",
                                      "input_leaf": None}]
    rows = [{"leaf": 2, "targets": [2]}, {"leaf": 3, "targets": [3]}, {"leaf": 7, "targets": [6]}]
    assert document["samples"] == {"paths": "all", "rows": rows}


def test_text_record_has_no_sidecars(tmp_path):
    builder = RecordBuilder("tr_text_mode", "text", status="open", ended=False)
    user = builder.add_client(None, "user", "héllo")
    builder.add_model(user, "wörld")
    assert [p.name for p in builder.write(tmp_path)] == ["tr_text_mode.json.zst"]
    document = read_document(tmp_path / "tr_text_mode.json.zst")
    assert document["sidecars"] == {} and document["capture"] == {"mode": "text"}
    assert [n["tokens"] for n in document["nodes"]] == [None, None]
    assert document["nodes"][1]["calls"][0]["bridged"] is None
    assert document["samples"] is None and document["finished_at"] is None
    assert Rollout(document).flags == ["incomplete"]


def test_same_input_writes_identical_bytes(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        forked_record()[0].write(tmp_path / name)
    for file in (tmp_path / "a").iterdir():
        assert file.read_bytes() == (tmp_path / "b" / file.name).read_bytes(), file.name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(max_size=40), min_size=2, max_size=6))
def test_any_text_round_trips_through_the_tokens_sidecar(tmp_path_factory, texts):
    directory = tmp_path_factory.mktemp("prop")
    builder = RecordBuilder("tr_prop")
    parent = None
    for turn, text in enumerate(texts):
        parent = (builder.add_model(parent, text) if turn % 2 else builder.add_client(parent, "user", text))
    builder.write(directory)
    document = read_document(directory / "tr_prop.json.zst")
    assert layout_problems(document, "tr_prop") == []
    tokens = read_tokens(directory, document)
    for node, text in zip(document["nodes"], texts, strict=True):
        decoded = tokens.text_bytes(node["tokens"]).decode()
        assert "".join(tokens.pieces(node["tokens"])) == decoded
        assert text in decoded and node["message"]["content"] == text
        logprobs = tokens.logprobs_of(node["tokens"])
        if node["author"] == "model":
            assert logprobs[:11] == [0.0] * 11 and all(v is not None and v <= 0 for v in logprobs[11:])
        else:
            assert all(v is None for v in logprobs)


def load_bench_synth():
    """`bench/synth.py` (the benchmark is not a package)."""
    path = Path(__file__).parent.parent / "bench" / "synth.py"
    spec = importlib.util.spec_from_file_location("bench_synth", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_run_is_valid_and_shaped_as_asked(tmp_path):
    synth = load_bench_synth()
    records, _, _ = synth.write_chunk((synth.rollout_builders, str(tmp_path), 3, 0, 24))  # 3 groups of 8, here
    synth.huge_rollout(3).write(tmp_path)
    result = run_cli("check", "--json", tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]
    assert json.loads(result.stdout)["directories"][0]["documents"] == records + 1

    repetitions = defaultdict(set)
    for path in tmp_path.glob("*.json.zst"):
        document = read_document(path)
        rollout = Rollout(document, None, document["id"])
        if document["id"] == synth.HUGE_ID:
            assert (len(document["nodes"]), len(rollout.paths)) == (153, 21)
            assert 60_000 <= rollout.longest <= 72_000
            assert synth.HUGE_MARKER in document["nodes"][0]["message"]["content"]
        else:
            meta = document["meta"]
            repetitions[meta["step"], meta["instance_id"]].add(meta["repetition_id"])
    assert list(map(len, repetitions.values())) == [synth.GROUP_SIZE] * 3


def test_small_benchmark_run_is_valid_and_shaped_as_asked(tmp_path):
    synth = load_bench_synth()
    records, written, _ = synth.write_chunk((synth.small_builders, str(tmp_path), 3, 0, 256))  # 32 groups
    result = run_cli("check", "--json", tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]
    assert json.loads(result.stdout)["directories"][0]["documents"] == records >= 256
    assert written / records < 4096  # a million fit in a few GB

    repetitions, calls, statuses = defaultdict(set), set(), set()
    for path in tmp_path.glob("*.json.zst"):
        document = read_document(path)
        assert document["capture"]["mode"] == "tokens"
        meta = document["meta"]
        assert set(meta) == {"task", "instance_id", "repetition_id", "step", "attempt"}
        repetitions[meta["step"], meta["instance_id"]].add(meta["repetition_id"])
        calls.add(sum(len(node["calls"]) for node in document["nodes"]))
        statuses.add(document["status"])
        if document["status"] == "finished":
            assert set(document["annotations"]) == {"reward", "stop_reason"}
    assert list(map(len, repetitions.values())) == [synth.GROUP_SIZE] * 32
    assert calls == {1, 2} and "finished" in statuses
