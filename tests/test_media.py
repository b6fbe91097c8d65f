"""Media items (`tokens.media`, format §6) in `/paths` and in `show`, against skycap's own answers.

`tr_media` is the corpus record with images; the other records here are copies of it: with a
range past its node and a hash that is not a string, without its tokens sidecar (shown from message
text), and written before media existed (no `media` key).
"""

import json

import pytest

from skycap_viewer.views.record.trajectory import MEDIA_IN_NODE
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.media_records import IMAGE_BYTES, MANY, heavy
from tests.support.oracle import ORACLE
from tests.support.records import copy_record
from tests.support.server_process import served

SPEC = FIXTURES / "spec"
ORACLE_MEDIA = ORACLE["spec"]["records"]["tr_media"]
ESC = "\x1b"


def bad_ranges(document):
    nodes = document["nodes"]
    nodes[0]["tokens"]["media"][0].update(offset=25, length=5)  # node 0 has 27 tokens
    nodes[2]["tokens"]["media"][0]["hash"] = 7


def no_media(document):
    for node in document["nodes"]:
        del node["tokens"]["media"]


def hostile_hash(document):
    document["nodes"][0]["tokens"]["media"][0]["hash"] = "\x1b[31mred\x07<b>"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    run = tmp_path_factory.mktemp("media") / "vision"
    run.mkdir()
    copy_record(SPEC, "tr_media", run, "tr_media")
    copy_record(SPEC, "tr_media", run, "tr_media_bad", bad_ranges)
    copy_record(SPEC, "tr_media", run, "tr_media_old", no_media)
    copy_record(SPEC, "tr_media", run, "tr_media_hostile", hostile_hash)
    copy_record(SPEC, "tr_media", run, "tr_media_text")
    (run / "tr_media_text.tokens.zst").unlink()  # a mirror that left the tokens out
    return run


@pytest.fixture(scope="module")
def server(root):
    yield from served([root])


def paths_of(server, record_id):
    return server.get(f"/v1/trajectories/{record_id}/paths?run_id=vision")


def recorded(items):
    return [{key: item[key] for key in ("modality", "offset", "length", "hash")} for item in items]


def test_nodes_carry_their_media_as_skycap_reads_them(server):
    payload = paths_of(server, "tr_media")
    for node in ORACLE_MEDIA["node_summary"]:
        shown = payload["nodes"][f"n{node['id']}"]
        assert recorded(shown["media"]) == node["media"]
        for item in shown["media"]:
            assert item["label"] == f"{item['modality']} · {item['hash']} · {item['length']} tokens"
            assert item["problem"] is None
            offsets = shown["token_offsets"]  # the range is the image's placeholder tokens
            placeholder = shown["text"][offsets[item["offset"]]:offsets[item["offset"] + item["length"]]]
            assert placeholder == "<pad>" * item["length"]
    assert payload["trajectory"]["record_problems"] == []


def test_a_paths_media_shifted_into_its_tokens_are_the_samples_media(server):
    payload = paths_of(server, "tr_media")
    for path, expected in zip(payload["paths"], ORACLE_MEDIA["paths"], strict=True):
        first_block = {}
        for block in path["blocks"]:
            first_block.setdefault(block["node_id"], block["start"])
        shifted = [{**item, "offset": first_block[node_id] + item["offset"]}
                   for node_id in path["node_ids"] for item in payload["nodes"][node_id]["media"]]
        assert recorded(shifted) == expected["media"]


def test_a_range_past_its_node_is_a_record_problem_and_shown_clipped(server):
    payload = paths_of(server, "tr_media_bad")
    header = payload["trajectory"]
    assert "malformed-record" in header["flags"]
    assert header["record_problems"] == [
        "node 0 media item 0: tokens [25, 30) run past the node's 27 tokens",
        "node 2 media item 0: hash 7 is not a string",
    ]
    (first,) = payload["nodes"]["n0"]["media"]
    assert (first["offset"], first["length"]) == (25, 2)
    assert first["label"] == "image · cat · 5 tokens"
    assert first["problem"] == "tokens [25, 30) run past the node's 27 tokens: shown as [25, 27)"
    dog, cat = payload["nodes"]["n2"]["media"]
    assert dog["hash"] is None and dog["label"] == "image · (no hash) · 2 tokens"
    assert dog["problem"] == "hash 7 is not a string: shown as [8, 10)"
    assert cat["problem"] is None
    row = server.get("/v1/trajectories?run_id=vision&flag=malformed-record")["data"]
    assert [r["id"] for r in row] == ["tr_media_bad"]


def test_a_record_without_media_keys_has_none(server):
    payload = paths_of(server, "tr_media_old")
    assert all(node["media"] == [] for node in payload["nodes"].values())
    assert payload["trajectory"]["record_problems"] == []


def test_text_only_the_message_still_has_its_image(server):
    payload = paths_of(server, "tr_media_text")
    assert payload["text_only"] == "tokens-missing"
    node = payload["nodes"]["n0"]
    assert node["token_ids"] is None
    assert node["text"] == "what is this? \n[image_url]"
    assert recorded(node["media"]) == ORACLE_MEDIA["node_summary"][0]["media"]


def test_check_names_the_bad_range(root):
    result = run_cli("check", root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (f"{root}/tr_media_bad: node 0 media item 0: tokens [25, 30) run past the node's 27 tokens; "
            "node 2 media item 0: hash 7 is not a string") in result.stdout.splitlines()
    assert "tr_media:" not in result.stdout and "tr_media_old" not in result.stdout


def show(root, record_id):
    result = run_cli("show", root / f"{record_id}.json.zst")
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_show_marks_each_media_item(root):
    output = show(root, "tr_media")
    lines = output.splitlines()
    given = lines.index(next(line for line in lines if line.startswith("  given") and " n2 " in line))
    assert lines[given + 1:given + 3] == ["    media image · dog · 2 tokens  [51:53]",
                                          "    media image · cat · 3 tokens  [65:68]"]
    assert "    what is this? <img>⟦<pad><pad><pad>⟧</img></s>" in lines
    assert "    <img>⟦<pad><pad>⟧</img> and this?<img>⟦<pad><pad><pad>⟧</img></s>" in lines
    assert output.count("⟦") == 3 and output.count("media image") == 3


def test_show_says_a_clipped_item_and_escapes_a_hash(root):
    bad = show(root, "tr_media_bad")
    assert ("    media image · cat · 5 tokens  [25:27]  problem: tokens [25, 30) run past the node's 27 tokens: "
            "shown as [25, 27)") in bad.splitlines()
    lines = bad.splitlines()  # clipped to the node: its last two tokens, `</s>` and the line break
    at = lines.index("    what is this? <img><pad><pad><pad></img>⟦</s>")
    assert lines[at + 1] == "    ⟧"
    hostile = show(root, "tr_media_hostile")
    assert ESC not in hostile and "\x07" not in hostile
    assert "    media image · \\x1b[31mred\\x07<b> · 3 tokens  [21:24]" in hostile.splitlines()


def test_show_without_tokens_names_the_items_without_a_range(root):
    lines = show(root, "tr_media_text").splitlines()
    assert "    media image · cat · 3 tokens  tokens 21–24 of the node (not shown: no tokens)" in lines
    assert "⟦" not in "\n".join(lines)
    assert "    [image_url]" in lines


@pytest.fixture(scope="module")
def heavy_server(tmp_path_factory):
    run = tmp_path_factory.mktemp("media-heavy") / "vision"
    run.mkdir()
    copy_record(SPEC, "tr_media", run, "tr_media_heavy", heavy)
    yield from served([run])


def raw(server, target):
    status, _, body = server.request(f"/v1/trajectories/tr_media_heavy/{target}")
    return status, body


def test_a_node_of_many_media_items_sends_the_first_with_its_text_and_the_rest_in_parts(heavy_server):
    status, body = raw(heavy_server, "paths")
    assert status == 200 and len(body) < 4 * 2**20, len(body)
    node = json.loads(body)["nodes"]["n0"]
    assert node["media_count"] == MANY and len(node["media"]) == MEDIA_IN_NODE
    hashes, start = [], 0
    while start is not None:
        status, body = raw(heavy_server, f"media?node=n0&from={start}")
        assert status == 200 and len(body) <= 4 * 2**20, len(body)
        part = json.loads(body)
        assert part["node_id"] == "n0" and part["part"]["from"] == start and part["part"]["total"] == MANY
        hashes += [item["hash"] for item in part["media"]]
        start = part["part"].get("next")
    assert hashes == [f"h{i:06d}" for i in range(MANY)]
    assert [item["hash"] for item in node["media"]] == hashes[:MEDIA_IN_NODE]
    assert raw(heavy_server, "media?node=n1")[1] == b'{"node_id":"n1","media":[],"part":{"from":0,"to":0,"total":0}}'
    assert raw(heavy_server, "media?node=n9")[0] == 404
    assert raw(heavy_server, "media?node=n0&from=100000")[0] == 400


def test_a_message_bigger_than_a_part_is_a_placeholder_in_the_graph_and_whole_on_its_own(heavy_server):
    sizes, nodes, start = [], [], 0
    while start is not None:
        status, body = raw(heavy_server, f"graph?from={start}")
        assert status == 200
        sizes.append(len(body))
        part = json.loads(body)
        nodes += part["nodes"]
        start = part["part"].get("next")
    assert max(sizes) < 4 * 2**20, sizes
    image = nodes[2]["message"]
    assert image["cut"] is True and image["type"] == "object" and image["json_bytes"] > IMAGE_BYTES, image
    assert all("cut" not in (node["message"] or {}) for i, node in enumerate(nodes) if i != 2)
    status, body = raw(heavy_server, "message?node=n2")
    whole = json.loads(body)
    assert status == 200 and whole["node_id"] == "n2"
    assert whole["message"]["content"][1]["image_url"]["url"] == "data:image/png;base64," + "A" * IMAGE_BYTES
    assert len(json.dumps(whole["message"], separators=(",", ":"), ensure_ascii=False)) == image["json_bytes"]
    assert raw(heavy_server, "message?node=n4")[0] == 404
