"""`/v1/trajectories/{id}/experts`: one node's routed experts at one layer, read without the rest.

Every dtype the format allows is written with the example writer and read back through the
endpoint; the fixtures' uint8 records are checked against their sidecars as skycap lays them out.
"""

import json

import pytest

from skycap_viewer.demo.writer import RecordBuilder
from skycap_viewer.record.document import read_document
from skycap_viewer.record.frames import compress
from skycap_viewer.views.record.experts import EXPERT_ROWS
from tests.support.server_process import ServerProcess

LAYERS, K = 3, 4
BASE = {"uint8": 200, "uint16": 60000, "int16": 30000, "int32": 2_000_000}  # near each dtype's top


def routing(dtype):
    """k distinct ids per (position, layer); layer 1 routes positions 20..23 alike (a repeat), in another order."""
    def route(position, layer):
        if layer == 1 and 20 <= position <= 23:
            ids = [BASE[dtype] + slot for slot in range(K)]
            return ids[position % K:] + ids[:position % K]
        return [BASE[dtype] + (position * 7 + layer * 3 + slot * 11) % 50 for slot in range(K)]
    return route


def write(directory, record_id, dtype="uint8", reply="the answer is 42", **options):
    builder = RecordBuilder(record_id, experts=(LAYERS, K), experts_dtype=dtype, routing=routing(dtype), **options)
    user = builder.add_client(None, "user", "what is it?")
    builder.add_model(user, reply)
    builder.write(directory)
    return read_document(directory / f"{record_id}.json.zst")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    run = tmp_path_factory.mktemp("experts") / "run"
    run.mkdir()
    for dtype in BASE:
        write(run, f"tr_{dtype}", dtype)
    write(run, "tr_long", reply="x" * (EXPERT_ROWS + 100))
    write(run, "tr_missing")
    (run / "tr_missing.experts.zst").unlink()
    write(run, "tr_damaged")
    damaged = run / "tr_damaged.experts.zst"
    damaged.write_bytes(damaged.read_bytes()[:-20])
    write(run, "tr_cut_tail", "int32", reply="y" * 6000)  # ~290 KB of rows: zstd blocks of 128 KB
    cut = run / "tr_cut_tail.experts.zst"
    cut.write_bytes(cut.read_bytes()[:-20])
    builder = RecordBuilder("tr_no_experts")
    builder.add_model(builder.add_client(None, "user", "hi"), "hello")
    builder.write(run)
    document = write(run, "tr_no_rows")
    document["nodes"][0]["tokens"].update(experts_offset=None, experts_rows=0)
    (run / "tr_no_rows.json.zst").write_bytes(compress(json.dumps(document).encode()))
    with ServerProcess([run]) as started:
        started.wait_indexed()
        yield started


def experts(server, record_id, expect=200, **params):
    query = "&".join(f"{key}={value}" for key, value in {"run_id": "run", **params}.items())
    return server.get(f"/v1/trajectories/{record_id}/experts?{query}", expect=expect)


@pytest.mark.parametrize("dtype", sorted(BASE))
def test_every_dtype_reads_back_the_ids_written_with_repeats_marked(server, dtype):
    route = routing(dtype)
    paths = server.get(f"/v1/trajectories/tr_{dtype}/paths?run_id=run")
    node_lengths = {key: len(node["token_ids"]) for key, node in paths["nodes"].items()}
    offset = node_lengths["n0"]  # node 1's rows start after node 0's
    for layer in range(LAYERS):
        answer = experts(server, f"tr_{dtype}", node="n1", layer=layer)
        assert (answer["dtype"], answer["layers"], answer["k"]) == (dtype, LAYERS, K)
        assert answer["rows"] == node_lengths["n1"] == len(answer["experts"])
        assert answer["unavailable"] is None and answer["note"] is None
        assert answer["experts"] == [route(offset + row, layer) for row in range(answer["rows"])]
        repeated = [row for row, on in enumerate(answer["repeats"]) if on]
        assert repeated == ([21 - offset, 22 - offset, 23 - offset] if layer == 1 else [])
        assert answer["part"] == {"from": 0, "to": answer["rows"], "total": answer["rows"]}


def test_a_long_node_comes_in_parts_and_a_parts_first_row_is_compared_with_the_row_before(server):
    first = experts(server, "tr_long", node="n1", layer=1)
    assert len(first["experts"]) == EXPERT_ROWS and first["part"]["next"] == EXPERT_ROWS
    rest = experts(server, "tr_long", node="n1", layer=1, **{"from": EXPERT_ROWS})
    assert rest["part"] == {"from": EXPERT_ROWS, "to": first["rows"], "total": first["rows"]}
    whole = first["experts"] + rest["experts"]
    assert len(whole) == first["rows"]
    expected = [row > 0 and set(whole[row]) == set(whole[row - 1]) for row in range(len(whole))]
    assert first["repeats"] + rest["repeats"] == expected
    assert rest["repeats"][0] == (set(whole[EXPERT_ROWS]) == set(whole[EXPERT_ROWS - 1]))


def test_bad_parameters_are_400_and_a_node_there_is_not_404(server):
    assert "node=n<id>" in experts(server, "tr_uint8", 400)["detail"]
    assert "node id like n3" in experts(server, "tr_uint8", 400, node="first")["detail"]
    assert "layer number" in experts(server, "tr_uint8", 400, node="n1", layer="-1")["detail"]
    assert "layer number" in experts(server, "tr_uint8", 400, node="n1", layer="top")["detail"]
    too_high = experts(server, "tr_uint8", 400, node="n1", layer=LAYERS)["detail"]
    assert too_high == f"layer must be in 0..{LAYERS - 1}, not {LAYERS}"
    assert "from must be" in experts(server, "tr_uint8", 400, node="n1", **{"from": 10_000})["detail"]
    assert "from must be" in experts(server, "tr_uint8", 400, node="n1", **{"from": "x"})["detail"]
    assert experts(server, "tr_uint8", 404, node="n7")["detail"] == "no node n7: the trajectory has 2 nodes"
    assert experts(server, "tr_nowhere", 404, node="n1")


@pytest.mark.parametrize(("record_id", "reason", "note"), [
    ("tr_no_experts", "not-captured", "no experts sidecar"),
    ("tr_missing", "missing", "listed but not here"),
    ("tr_no_rows", "no-rows", "no experts rows"),
    ("tr_damaged", "damaged", "tr_damaged.experts.zst"),
])
def test_an_absent_or_damaged_sidecar_is_a_note_not_an_error(server, record_id, reason, note):
    answer = experts(server, record_id, node="n0" if record_id == "tr_no_rows" else "n1")
    assert answer["unavailable"] == reason
    assert note in answer["note"]
    assert answer["experts"] == [] and answer["repeats"] == []


def test_only_the_rows_asked_are_decompressed(server):
    """The sidecar's last block is cut off: the first node's rows, before it, still read; the last ones do not."""
    route = routing("int32")
    first = experts(server, "tr_cut_tail", node="n0", layer=2)
    assert first["unavailable"] is None
    assert first["experts"] == [route(row, 2) for row in range(first["rows"])]
    reply = experts(server, "tr_cut_tail", node="n1", layer=2)
    assert reply["unavailable"] is None and reply["part"]["next"] == EXPERT_ROWS
    last = experts(server, "tr_cut_tail", node="n1", layer=2, **{"from": reply["rows"] - 10})
    assert last["unavailable"] == "damaged"
    assert "tr_cut_tail.experts.zst" in last["note"]


def test_the_fixture_routing_repeats_where_the_last_row_is_a_copy(corpus_server):
    """masks/tr_mask_experts_wide is uint8 [71, 4, 8]: node 3's last row copies the one before (format §5.2)."""
    for layer in range(4):
        answer = corpus_server.get(f"/v1/trajectories/tr_mask_experts_wide/experts?run_id=masks&node=n3&layer={layer}")
        assert (answer["dtype"], answer["layers"], answer["k"], answer["rows"]) == ("uint8", 4, 8, 17)
        assert [row for row, on in enumerate(answer["repeats"]) if on] == [16]
        assert all(len(set(ids)) == 8 for ids in answer["experts"])  # distinct per layer
    other = corpus_server.get("/v1/trajectories/tr_mask_experts_wide/experts?run_id=masks&node=n3&layer=1")
    assert other["experts"] != answer["experts"]
