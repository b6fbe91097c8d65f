"""Every corpus record read by this project agrees with skycap's own reader (`oracle.json`).

Records skycap reads correctly are compared number by number. Records skycap refuses, or reads
silently wrong, are classified from `_notes.json` (what the damage is) and the oracle (what
skycap said), and our reader must report them instead of showing numbers.
"""

import os
from pathlib import Path

import pytest

from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import document_path, read_document
from skycap_viewer.record.manifest import EXPECTED_ARRAYS, token_nodes
from skycap_viewer.record.rollout import ABSENT, Rollout, bridged_value
from skycap_viewer.record.sidecars import mask_problems, read_sidecar, read_tokens
from tests.support.corpus import FIXTURES
from tests.support.oracle import ALLOWED, DAMAGED, NOTES, oracle_records, trained_paths

RECORDS = oracle_records()


def reader_problems(directory: Path, record_id: str) -> list[str]:
    """Everything the reader modules report about one record (document, layout, sidecars)."""
    try:
        document = read_document(document_path(directory, record_id))
    except RecordError as error:
        return [f"unreadable: {error.problem}"]
    present = set(os.listdir(directory))
    problems = list(Rollout(document, present, record_id).record_problems)
    try:
        read_tokens(directory, document)
    except RecordError as error:
        problems.append(f"tokens: {error.problem}")
    for kind, manifest in document["sidecars"].items():
        if kind == "tokens" or manifest["file"] not in present or kind not in EXPECTED_ARRAYS:
            continue
        try:
            arrays = read_sidecar(directory / manifest["file"], manifest)
        except RecordError as error:
            problems.append(f"{kind}: {error.problem}")
            continue
        if kind == "sampling_mask":
            problems += mask_problems(arrays)
    return problems


def ids(records):
    return [f"{d}/{rid}" for d, rid, _ in records]


def test_the_corpus_is_classified():
    """Both classes are populated, and every broken/ record has a note (no silent skips)."""
    assert set(NOTES) == {rid for d, rid, _ in RECORDS if d == "broken"}
    assert len(DAMAGED) >= 20 and len(ALLOWED) >= 70
    assert {rid for d, rid, _ in ALLOWED if d == "broken"} >= {"tr_ok", "tr_future_fields", "tr_bad_call"}


@pytest.mark.parametrize(("directory", "record_id", "oracle"), DAMAGED, ids=ids(DAMAGED))
def test_damaged_records_are_reported(directory, record_id, oracle):
    problems = reader_problems(FIXTURES / directory, record_id)
    assert problems, f"{record_id} ({NOTES[record_id]}) read without any problem"
    if oracle["check"]["error"] is not None or oracle["document"] != "ok":
        # skycap's own check cannot read it: neither can we, and we say so with our error type
        with pytest.raises(RecordError):
            read_document(document_path(FIXTURES / directory, record_id))


@pytest.mark.parametrize(("directory", "record_id", "oracle"), ALLOWED, ids=ids(ALLOWED))
def test_valid_records_match_skycap(directory, record_id, oracle):
    folder = FIXTURES / directory
    assert reader_problems(folder, record_id) == []
    document = read_document(document_path(folder, record_id))
    assert document["id"] == oracle["document_id"]
    assert document["status"] == oracle["status"]
    if "paths" not in oracle:  # skycap's reader refused a record the format allows (tr_bad_call)
        assert oracle["load"] != "ok"
        return
    rollout = Rollout(document, set(os.listdir(folder)), record_id)
    graph = rollout.graph
    assert len(rollout.nodes) == oracle["nodes"]
    assert len(rollout.calls) == oracle["calls"]
    assert graph.leaves == oracle["leaves"]
    assert graph.branch_points == oracle["branch_points"]
    # skycap's CallInfo has no "absent": a call without the key reads as None there
    assert [None if b == ABSENT else b for b in map(bridged_value, rollout.calls)] == oracle["bridged"]
    assert sum(1 for c in rollout.calls if c.get("bridged") is False) == oracle["unbridged"]
    assert [c.get("finish_reason") for c in rollout.calls] == oracle["finish_reasons"]
    shadowed = {str(n["id"]): n["shadowed_by"] for n in rollout.nodes if n.get("shadowed_by") is not None}
    assert shadowed == oracle["shadowed_by"]

    tokens = None if rollout.text_only else read_tokens(folder, document)
    read_token_nodes = token_nodes(document) if tokens is not None else []
    assert len(read_token_nodes) == oracle["token_nodes"]

    assert len(rollout.paths) == len(oracle["paths"])
    for path, expected in zip(rollout.paths, trained_paths(oracle), strict=True):
        info = path.info
        assert info.leaf == expected["leaf"]
        assert info.nodes == expected["path"]
        assert info.targets == expected["targets"] and info.trains == expected["trains"]
        assert {str(k): v for k, v in info.sampled_elsewhere.items()} == expected["sampled_elsewhere"]
        if expected["tokens"] is None:
            assert not path.token_blocked
        else:
            assert path.token_blocked
            assert path.token_count == expected["tokens"]
            assert path.trainable_count == expected["trained_tokens"]
            assert sum(b.size for b in path.blocks if b.kind == "sampled") == expected["trained_tokens"]

    for summary in oracle["node_summary"]:
        node = rollout.nodes[summary["id"]]
        assert (node.get("parent"), node.get("role"), node["author"]) == (
            summary["parent"], summary["role"], summary["author"]
        )
        assert len(node.get("calls") or []) == summary["calls"]
        if summary["tokens"] is not None:
            slices = node["tokens"]
            assert slices["length"] == summary["tokens"]
            assert slices.get("sampled_start") == summary["sampled_start"]
            assert bool(slices.get("has_logprobs")) == summary["has_logprobs"]
            assert (slices.get("text_offset") is not None) == summary["has_text"]

    texts = {}
    if tokens is not None:
        for node in read_token_nodes:
            raw = tokens.text_bytes(node["tokens"])
            if raw is not None:
                texts[str(node["id"])] = raw.decode("utf-8")
                assert "".join(tokens.pieces(node["tokens"])) == texts[str(node["id"])]
    assert texts == oracle["node_text"]
