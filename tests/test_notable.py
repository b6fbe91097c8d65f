"""`/v1/trajectories/{id}/notable`: a path's notable tokens, checked against the sidecar arrays.

The expected items are computed here from the raw tokens sidecar and skycap's oracle (the paths,
their nodes and what each trains), not from the viewer's blocks."""

import json
import math
import re

import pytest

from skycap_viewer.record.frames import decompress_one_frame
from skycap_viewer.record.sidecars import read_sidecar
from tests.support.corpus import FIXTURES
from tests.support.oracle import oracle_records, trained_paths


def token_records():
    return [(d, rid, e) for d, rid, e in oracle_records()
            if d != "broken" and e.get("mode") == "tokens" and e.get("paths") and e.get("load") == "ok"
            and "tokens" in e["sidecars"]["on_disk"] and e["paths"][0]["tokens"] is not None]


def document_of(directory, record_id):
    return json.loads(decompress_one_frame((FIXTURES / directory / f"{record_id}.json.zst").read_bytes()))


def expected_tokens(directory, record_id, entry, index):
    """Every sampled token of path `index` as (position, node, token index, text, logprob or None, trained),
    and the path's nodes cut at their length limit with their positions, from the raw arrays."""
    document = document_of(directory, record_id)
    manifest = document["sidecars"]["tokens"]
    arrays = read_sidecar(FIXTURES / directory / manifest["file"], manifest)
    text = bytes(arrays["text"])
    path = trained_paths(entry)[index]
    sampled, cut, position = [], [], 0
    for node_id in path["path"]:
        node = document["nodes"][node_id]
        t = node["tokens"]
        starts = list(arrays["text_offsets"][t["offset"]:t["offset"] + t["length"]]) + [t.get("text_bytes", 0)]
        at = t.get("text_offset")
        raw = text[at:at + t.get("text_bytes", 0)] if at is not None else None
        first = t.get("sampled_start") or 0
        if node["author"] == "model":
            for i in range(first, t["length"]):
                value = arrays["logprobs"][t["offset"] + i]
                piece = raw[starts[i]:starts[i + 1]].decode() if raw is not None else None
                sampled.append((position + i, f"n{node_id}", i, piece, None if math.isnan(value) else value,
                                node_id in path["targets"]))
            if any(call.get("finish_reason") == "length" for call in node.get("calls") or []):
                cut.append((f"n{node_id}", [position + i for i in range(max(first, t["length"] - 5), t["length"])]))
        position += t["length"]
    return sampled, cut


@pytest.mark.parametrize(("directory", "record_id", "entry"), token_records(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_notable_agrees_with_the_sidecar(corpus_server, directory, record_id, entry):
    for index in range(len(entry["paths"])):
        answer = corpus_server.get(f"/v1/trajectories/{record_id}/notable?run_id={directory}&path={index}")
        sampled, cut = expected_tokens(directory, record_id, entry, index)
        items = answer["items"]
        assert answer["path"] == index and answer["unit"] == "tokens"
        for item in items:  # each item is the token the record has there
            match = next(s for s in sampled if s[0] == item["position"])
            assert (item["node_id"], item["token_index"], item["text"], item["logprob"]) == match[1:5]

        lowest = [i for i in items if i["kind"] == "lowest-logprob"]
        known = sorted((s for s in sampled if s[4] is not None), key=lambda s: (s[4], s[0]))
        assert [i["position"] for i in lowest] == [s[0] for s in known[:20]]
        assert answer["counts"]["lowest-logprob"] == len(known)
        if len(known) > 20:  # really the lowest: nothing left out is lower than the last kept
            assert all(s[4] >= lowest[-1]["logprob"] for s in known[20:])

        missing = [i["position"] for i in items if i["kind"] == "missing-logprob"]
        assert missing == [s[0] for s in sampled if s[4] is None and s[5]][:50]

        cuts = [i for i in items if i["kind"] == "length-cut"]
        assert [(i["node_id"], i["position"]) for i in cuts] == [(n, p) for n, ps in cut for p in ps]
        assert answer["counts"]["length-cut"] == len(cut)

        for item in items:
            if item["kind"] == "special-token":
                assert re.fullmatch(r"\s*(<\|.*\|>|</?\w+>)\s*", item["text"])


def test_a_truncated_call_lists_its_last_tokens(corpus_server):
    answer = corpus_server.get("/v1/trajectories/tr_truncated/notable?run_id=spec")
    cut = [i for i in answer["items"] if i["kind"] == "length-cut"]
    assert [i["node_id"] for i in cut] == ["n1"] * 5
    assert "".join(i["text"] for i in cut) == "ut sh"  # "this reply was cut sh": where the limit struck
    assert "length limit" in cut[-1]["why"]


def test_nan_logprobs_in_the_loss_are_found(corpus_server):
    answer = corpus_server.get("/v1/trajectories/tr_notext/notable?run_id=spec")
    missing = [i for i in answer["items"] if i["kind"] == "missing-logprob"]
    assert [(i["node_id"], i["token_index"], i["logprob"]) for i in missing] == [("n1", 1, None), ("n1", 2, None)]
    assert answer["counts"]["lowest-logprob"] == 0 and answer["notes"]


def test_a_text_only_record_says_why(corpus_server):
    answer = corpus_server.get("/v1/trajectories/tr_bac9802dee51ae08/notable?run_id=mirror-text")
    assert answer["unit"] == "chars" and "Text only (tokens-missing)" in answer["notes"][0]
    assert all(i["kind"] == "length-cut" for i in answer["items"])


def test_notable_refuses_a_path_there_is_not(corpus_server):
    corpus_server.get("/v1/trajectories/tr_truncated/notable?run_id=spec&path=7", expect=404)
    corpus_server.get("/v1/trajectories/tr_truncated/notable?run_id=spec&path=x", expect=400)


def test_the_special_token_rule():
    from skycap_viewer.views.record.notable import SPECIAL

    for piece in ("<|im_end|>", "</tool_call>", " <think>", "<|eot_id|>\n", "<tool_call>"):
        assert SPECIAL.fullmatch(piece), piece
    for piece in ("a<b>", "<", "< b>", "x", "<|", "1 < 2 >"):
        assert not SPECIAL.fullmatch(piece), piece
