"""A path taken away: `/paths/{n}/row` against skycap's own sample builder, `/paths/{n}/messages`
against the document's messages, and `show --row` / `--messages` against both.

The oracle is skycap's (`oracle.json`: the `all` rule's `paths`, and per `samples` row what its
sample trains, `trained_by_samples`). The expected token ids, logprobs and loss-mask positions are
computed here from the document's node slices and the sidecar's raw bytes, not by the viewer's code.
"""

import json
import math
import struct

import pytest

from skycap_viewer.demo.writer import RecordBuilder
from skycap_viewer.errors import ApiError
from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.oracle import ORACLE, oracle_records
from tests.support.server_process import served

CORPUS = [(d, rid, entry) for d, rid, entry in oracle_records() if d != "broken"]
STRUCT_CODES = {"int32": "i", "float64": "d"}
FORKED = "tr_86f0b750382298e2"  # real-like: 5 paths, tool calls and tool results on them


def document_of(directory: str, record_id: str) -> dict:
    return json.loads(decompress_one_frame((FIXTURES / directory / f"{record_id}.json.zst").read_bytes()))


def raw_array(directory: str, document: dict, name: str) -> tuple:
    """One array of the tokens sidecar, unpacked from its bytes at the manifest's offset."""
    manifest = document["sidecars"]["tokens"]
    payload = decompress_one_frame((FIXTURES / directory / manifest["file"]).read_bytes())
    spec = manifest["arrays"][name]
    return struct.unpack_from(f"<{math.prod(spec['shape'])}{STRUCT_CODES[spec['dtype']]}", payload, spec["offset"])


def expected_row(directory: str, document: dict, nodes: list[int], targets: list[int]) -> dict:
    """input_ids, logprobs (NaN as None) and loss_mask of a path with `targets`, from the node slices:
    the mask is 1 exactly on [sampled_start, length) of each target's range in the path."""
    ids, logprobs = raw_array(directory, document, "token_ids"), raw_array(directory, document, "logprobs")
    row = {"input_ids": [], "logprobs": [], "loss_mask": []}
    for node_id in nodes:
        tokens = document["nodes"][node_id]["tokens"]
        start, length = tokens["offset"], tokens["length"]
        row["input_ids"] += ids[start:start + length]
        row["logprobs"] += [None if math.isnan(v) else v for v in logprobs[start:start + length]]
        trained_from = tokens["sampled_start"] if node_id in targets else length
        row["loss_mask"] += [0] * trained_from + [1] * (length - trained_from)
    return row


def trainer_rows(entry: dict) -> dict[int, dict]:
    """Path index -> the sample skycap builds for it ({targets, tokens, trained_tokens}): one per
    `samples` row (on the path that ends at its leaf), or per path under the `all` rule without samples."""
    paths = entry["paths"]
    if (entry.get("samples_field") or {}).get("rows") is None:
        return {i: {"targets": p["targets"], "tokens": p["tokens"], "trained_tokens": p["trained_tokens"]}
                for i, p in enumerate(paths)}
    by_leaf = {p["leaf"]: i for i, p in enumerate(paths)}
    if "trained_by_samples" not in entry:  # skycap's figures per row not recorded: its rows' targets, on the path
        return {by_leaf[row["leaf"]]: {"targets": row["targets"], "tokens": paths[by_leaf[row["leaf"]]]["tokens"],
                                       "trained_tokens": None} for row in entry["samples_field"]["rows"]}
    return {by_leaf[row["leaf"]]: row for row in entry["trained_by_samples"]}


def row_of(server, directory: str, record_id: str, path: int, expect: int = 200) -> dict:
    return server.get(f"/v1/trajectories/{record_id}/paths/{path}/row?run_id={directory}", expect)


@pytest.mark.parametrize(("directory", "record_id", "entry"), CORPUS, ids=[f"{d}/{r}" for d, r, _ in CORPUS])
def test_every_paths_row_is_skycaps_sample(corpus_server, directory, record_id, entry):
    document = document_of(directory, record_id)
    samples = trainer_rows(entry)
    for index, path in enumerate(entry["paths"]):
        if path["tokens"] is None:  # skycap's sample has no token arrays: the viewer says why
            detail = row_of(corpus_server, directory, record_id, index, 400)["detail"]
            assert "has no token row" in detail and "\n" not in detail
            continue
        row = row_of(corpus_server, directory, record_id, index)
        sample = samples.get(index)
        targets = sample["targets"] if sample else []
        assert len(row["input_ids"]) == row["token_count"] == path["tokens"]
        assert sum(row["loss_mask"]) == row["trained_count"]
        if sample:
            assert len(row["input_ids"]) == sample["tokens"]
        if sample and sample["trained_tokens"] is not None:
            assert sum(row["loss_mask"]) == row["trained_count"] == sample["trained_tokens"]
        assert sum(row["loss_mask"]) == sum(
            document["nodes"][n]["tokens"]["length"] - document["nodes"][n]["tokens"]["sampled_start"] for n in targets)
        assert {key: row[key] for key in ("input_ids", "logprobs", "loss_mask")} == expected_row(
            directory, document, path["path"], targets)
        assert row["trains"] == (sample is not None)
        rows = (entry.get("samples_field") or {}).get("rows")
        assert row["samples_rows"] == (None if rows is None else [
            {"row": k, "leaf_node_id": f"n{r['leaf']}", "targets": [f"n{t}" for t in r["targets"]],
             "end": path["tokens"]} for k, r in enumerate(rows) if r["leaf"] == path["leaf"]])
        assert row["rule"] == (entry.get("samples_field") or {}).get("paths", "all")
        assert (row["path"], row["path_count"], row["leaf_node_id"]) == (index, len(entry["paths"]), f"n{path['leaf']}")
        ends = [(block["start"], block["end"]) for block in row["blocks"]]
        assert ends[0][0] == 0 and ends[-1][1] == len(row["input_ids"])
        assert all(a[1] == b[0] for a, b in zip(ends, ends[1:], strict=False))  # the blocks tile the row
        for block in row["blocks"]:
            assert set(row["loss_mask"][block["start"]:block["end"]]) == {int(block["trainable"])}
            assert int(block["node_id"][1:]) in path["path"]


def test_final_and_custom_rules_train_only_their_rows(corpus_server):
    final = [sum(row_of(corpus_server, "rules", "tr_rule_final_tree3", i)["loss_mask"]) for i in range(3)]
    assert final == [0, 6, 0]  # the rule's one row: the path of the last call
    custom = row_of(corpus_server, "rules", "tr_rule_last_model_only", 0)
    assert sum(custom["loss_mask"]) == 7 and custom["rule"] == "longest_last"  # only node 7, not 1, 3 and 5
    trained = {block["node_id"] for block in custom["blocks"] if block["trainable"]}
    assert trained == {"n7"}
    untrained = {block["node_id"] for block in custom["blocks"] if block["kind"] == "sampled-untrained"}
    assert untrained == {"n1", "n3", "n5"}
    assert custom["not_included"] == ["routed_experts", "sampling_mask"]
    assert row_of(corpus_server, "spec", "tr_media", 0)["not_included"] == ["routed_experts", "sampling_mask", "media"]
    assert row_of(corpus_server, "real-like", "tr_5f0c53ea430e32db", 0)["not_included"] == []  # tokens only


def test_a_path_without_a_token_row_is_refused_with_the_reason(corpus_server):
    text = row_of(corpus_server, "rules", "tr_rule_text_final", 0, 400)["detail"]
    assert text == ("trajectory tr_rule_text_final path 0 has no token row: "
                    "the record was captured in text mode (no token ids)")
    mirror = row_of(corpus_server, "mirror-text", "tr_bac9802dee51ae08", 0, 400)["detail"]
    assert "tokens sidecar is listed but not in this directory" in mirror
    missing = row_of(corpus_server, "broken", "tr_missing_tokens", 0, 400)["detail"]
    assert "tokens sidecar is listed but not in this directory" in missing
    damaged = row_of(corpus_server, "broken", "tr_truncated_sidecar", 0, 400)["detail"]
    assert "tr_truncated_sidecar.tokens.zst: truncated zstd frame" in damaged
    assert "\n" not in text + mirror + missing + damaged


def test_path_numbers_are_checked_as_the_path_routes_check_them(corpus_server):
    paths = len(ORACLE["rules"]["records"]["tr_rule_two_rows"]["paths"])
    for answer in ("row", "messages"):
        base = "/v1/trajectories/tr_rule_two_rows/paths"
        assert corpus_server.get(f"{base}/{paths}/{answer}", 404)["detail"].startswith("no such path")
        assert corpus_server.get(f"{base}/-1/{answer}", 404)["detail"].startswith("no such path")
        assert corpus_server.get(f"{base}/one/{answer}", 400)["detail"] == "the path must be a path index, not 'one'"
        assert corpus_server.get(f"/v1/trajectories/tr_none/paths/0/{answer}", 404)["detail"] == "no trajectory tr_none"
        assert corpus_server.get(f"/api{base}/0/{answer}") == corpus_server.get(f"{base}/0/{answer}")
    corpus_server.get("/v1/trajectories/tr_tokens/paths/0/row?run_id=nope", 404)


@pytest.mark.parametrize(("directory", "record_id", "entry"), CORPUS, ids=[f"{d}/{r}" for d, r, _ in CORPUS])
def test_messages_are_the_documents_messages_in_path_order(corpus_server, directory, record_id, entry):
    document = document_of(directory, record_id)
    for index, path in enumerate(entry["paths"]):
        answer = corpus_server.get(f"/v1/trajectories/{record_id}/paths/{index}/messages?run_id={directory}")
        assert answer["messages"] == [document["nodes"][n]["message"] for n in path["path"]]
        assert answer["node_ids"] == [f"n{n}" for n in path["path"]]
        assert answer["authors"] == [document["nodes"][n]["author"] for n in path["path"]]


def test_messages_carry_tool_calls_tool_results_and_the_tool_set(corpus_server):
    document = document_of("real-like", "tr_75f4b514aac0a32f")
    answer = corpus_server.get("/v1/trajectories/tr_75f4b514aac0a32f/paths/0/messages?run_id=real-like")
    assert any(m.get("tool_calls") for m in answer["messages"]) and any(m["role"] == "tool" for m in answer["messages"])
    last_call = [node for node in document["nodes"] if node["calls"]][-1]["calls"][-1]
    assert answer["tools"] == (document["tools"][last_call["tools"]] if last_call["tools"] else None)


def test_show_prints_what_the_api_sends(corpus_server):
    for directory, record_id, path in (("rules", "tr_rule_final_resample", 1), ("rules", "tr_rule_two_rows", 0),
                                        ("real-like", FORKED, 3)):
        record = FIXTURES / directory / f"{record_id}.json.zst"
        for answer in ("row", "messages"):
            shown = run_cli("show", record, "--path", path, f"--{answer}")
            assert shown.returncode == 0, shown.stderr
            api = corpus_server.get(f"/v1/trajectories/{record_id}/paths/{path}/{answer}?run_id={directory}")
            assert json.loads(shown.stdout) == api


def test_show_refuses_a_row_it_cannot_print(corpus_server):
    text = run_cli("show", FIXTURES / "rules" / "tr_rule_text_final.json.zst", "--path", "0", "--row")
    assert text.returncode == 2 and text.stdout == ""
    assert text.stderr == ("skycap-viewer: --path 0 --row: trajectory tr_rule_text_final path 0 has no token row: "
                           "the record was captured in text mode (no token ids)\n")
    beyond = run_cli("show", FIXTURES / "rules" / "tr_rule_two_rows", "--path", "3", "--messages")
    assert beyond.returncode == 2 and "no such path: the trajectory has 3 path(s)" in beyond.stderr
    bare = run_cli("show", FIXTURES / "rules" / "tr_rule_two_rows", "--row")
    assert bare.returncode == 2 and bare.stderr == "skycap-viewer: --row prints one path: give --path N\n"


# -- big records -----------------------------------------------------------------------------------

LONG_PATH = 30_000  # characters of one user message: one token each
PAST_THE_LIMIT = 2**20 + 1  # tokens: one more than a row answer holds


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("big") / "big"
    directory.mkdir()
    long = RecordBuilder("tr_long")
    reply = long.add_model(long.add_client(None, "user", "x" * LONG_PATH), "y" * 500)
    long.add_model(long.add_client(reply, "user", "again"), "z" * 200)
    long.write(directory)
    huge = RecordBuilder("tr_huge")
    huge.add_model(huge.add_client(None, "user", "w" * PAST_THE_LIMIT), "ok")
    huge.write(directory)
    per_turn = RecordBuilder("tr_per_turn")
    first = per_turn.add_model(per_turn.add_client(None, "user", "one"), "a reply")
    per_turn.add_model(per_turn.add_client(first, "user", "two"), "another")
    per_turn.write(directory)
    document = json.loads(decompress_one_frame((directory / "tr_per_turn.json.zst").read_bytes()))
    document["samples"] = {"paths": "per_turn", "rows": [{"leaf": 1, "targets": [1]}, {"leaf": 3, "targets": [3]}]}
    (directory / "tr_per_turn.json.zst").write_bytes(compress(json.dumps(document).encode()))
    yield from served([directory])


def test_a_30k_token_path_is_one_row_answer(big_server):
    row = big_server.get("/v1/trajectories/tr_long/paths/0/row")
    assert len(row["input_ids"]) == len(row["loss_mask"]) == len(row["logprobs"]) == row["token_count"] > LONG_PATH
    assert sum(row["loss_mask"]) == row["trained_count"] == (500 + 1) + (200 + 1)  # each reply and its </s>
    assert row["logprobs"][0] is None and row["loss_mask"][-1] == 1


def test_a_row_past_the_limit_is_refused_naming_it(big_server):
    detail = big_server.get("/v1/trajectories/tr_huge/paths/0/row", 413)["detail"]
    tokens = 8 + PAST_THE_LIMIT + 14  # `<s>user\n` and `</s>\n` around the message, then `<s>assistant\nok</s>`
    assert detail == (f"trajectory tr_huge path 0 has {tokens:,} tokens, "
                      "past the 1,048,576 one row answer holds (the row limit)")
    assert len(big_server.get("/v1/trajectories/tr_huge/paths/0/messages")["messages"][0]["content"]) == PAST_THE_LIMIT


def test_messages_past_their_limit_are_refused_naming_it():
    from skycap_viewer.views.record.row import path_messages
    from skycap_viewer.views.record.trajectory import RecordView

    directory = FIXTURES / "real-like"
    view = RecordView(directory, document_of("real-like", FORKED), {p.name for p in directory.iterdir()}, FORKED, {})
    assert len(path_messages(view, 3)["messages"]) == len(ORACLE["real-like"]["records"][FORKED]["paths"][3]["path"])
    with pytest.raises(ApiError) as refused:
        path_messages(view, 3, limit=64)  # the first message alone is under 64 bytes, the path's are not
    assert refused.value.status == 413
    assert refused.value.detail == (f"trajectory {FORKED} path 3: its messages pass the 64 bytes of JSON one "
                                    "messages answer holds (the messages limit)")


def test_a_path_carrying_two_samples_says_where_each_ends(big_server):
    """A custom rule training each turn as its own sample: two rows on one path, the first ending at n1."""
    row = big_server.get("/v1/trajectories/tr_per_turn/paths/0/row")
    first_end = 8 + len("one") + 11 + len("a reply") + 1  # the user turn, then the reply and its </s>
    assert row["samples_rows"] == [{"row": 0, "leaf_node_id": "n1", "targets": ["n1"], "end": first_end},
                                   {"row": 1, "leaf_node_id": "n3", "targets": ["n3"], "end": row["token_count"]}]
    assert row["loss_mask"][:first_end] == [0] * (first_end - len("a reply") - 1) + [1] * (len("a reply") + 1)
    assert sum(row["loss_mask"]) == len("a reply") + 1 + len("another") + 1  # the path trains both rows' targets
