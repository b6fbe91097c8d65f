"""Sampling support: each sampled token's support size and whether its id is in it, and the flags.

The facts are checked against skycap's own reading of the `masks/` records (`mask_facts` in
`oracle.json`); the flags, which only the sidecars can raise, come from the background verification
(listings never wait for it) or from a view that read the mask.
"""

import pytest

from skycap_viewer.demo.writer import RecordBuilder
from skycap_viewer.flags import FORCED_RUN_TOKENS
from tests.support.corpus import copy_corpus
from tests.support.oracle import ORACLE
from tests.support.server_process import ServerProcess, all_verified, wait_for

MASKS = ORACLE["masks"]["records"]


def listed(server, run_id, **filters):
    query = "".join(f"&{key}={value}" for key, value in filters.items())
    return {row["id"] for row in server.get(f"/v1/trajectories?run_id={run_id}&limit=1000{query}")["data"]}


@pytest.mark.parametrize("record_id", sorted(MASKS))
def test_each_sampled_tokens_support_is_what_skycap_reads(corpus_server, record_id):
    facts = MASKS[record_id]["mask_facts"]["nodes"]
    nodes = corpus_server.get(f"/v1/trajectories/{record_id}/paths?run_id=masks")["nodes"]
    for key, node in nodes.items():
        expected = facts.get(key[1:])
        if expected is None:  # a client node: no mask rows
            assert node["support_sizes"] is None and node["outside_support"] is None, key
            continue
        sizes, start = node["support_sizes"], node["sampled_start"]
        assert start == expected["sampled_start"]
        assert len(sizes) == expected["mask_rows"] == expected["sampled"]
        assert {"min": min(sizes), "max": max(sizes)} == expected["support_sizes"]
        assert [start + row for row, size in enumerate(sizes) if size == 1] == expected["support_size_1"]
        assert [start + row for row, size in enumerate(sizes) if size == 0] == expected["support_size_0"]
        assert node["outside_support"] == [item["pos"] for item in expected["outside_support"]]
        for item in expected["outside_support"]:
            assert node["token_ids"][item["pos"]] == item["token"]
            assert sizes[item["row"]] == len(item["support"])


def test_an_empty_support_counts_as_outside_it(corpus_server):
    """tr_mask_out_of_support n2 row 3 has no ids at all: its sampled token is outside."""
    node = corpus_server.get("/v1/trajectories/tr_mask_out_of_support/paths?run_id=masks")["nodes"]["n2"]
    empty = [node["sampled_start"] + row for row, size in enumerate(node["support_sizes"]) if size == 0]
    assert empty == [14]
    assert 14 in node["outside_support"]


def test_no_mask_and_an_empty_mask_read_as_no_support_recorded(corpus_server):
    empty = corpus_server.get("/v1/trajectories/tr_empty_mask/paths?run_id=spec")  # mask_rows 0, no file
    model = next(node for node in empty["nodes"].values() if node["sampled_start"] is not None)
    assert model["token_ids"] and model["support_sizes"] is None and model["outside_support"] is None
    assert "mask_error" not in empty
    # the mask is listed, and not copied
    mirror = corpus_server.get("/v1/trajectories/tr_fad25da9b0582945/paths?run_id=mirror-training")
    assert all(node["support_sizes"] is None for node in mirror["nodes"].values())


@pytest.fixture(scope="module")
def verified_corpus(tmp_path_factory):
    corpus = copy_corpus(tmp_path_factory.mktemp("support") / "skycap-v1")
    with ServerProcess([corpus]) as server:
        server.wait_indexed()
        wait_for(lambda: all_verified(server), "every record verified", timeout=90)
        yield server


@pytest.mark.slow
def test_after_verification_the_flags_list_exactly_the_records_their_masks_say(verified_corpus):
    runs = [run["id"] for run in verified_corpus.get("/v1/runs")["data"]]
    outside = {(run, rid) for run in runs for rid in listed(verified_corpus, run, flag="out-of-support")}
    forced = {(run, rid) for run in runs for rid in listed(verified_corpus, run, flag="forced-run")}
    assert outside == {("masks", rid) for rid, entry in MASKS.items() if entry["mask_facts"]["any_outside_support"]}
    assert outside == {("masks", "tr_mask_out_of_support")}
    assert forced == {("masks", "tr_mask_forced")}  # runs of 6 and 4 supports of one id
    band = dict(verified_corpus.get("/v1/trajectories?run_id=masks")["health"]["counts"])
    assert band["out-of-support"] == 1 and band["forced-run"] == 1
    header = verified_corpus.get("/v1/trajectories/tr_mask_out_of_support?run_id=masks")
    assert "out-of-support" in header["flags"] and "malformed-record" not in header["flags"]
    assert "tr_mask_out_of_support" not in listed(verified_corpus, "masks", exclude_flag="out-of-support")


def test_a_damaged_mask_is_a_record_problem_and_raises_no_support_flag(verified_corpus):
    """broken/tr_mask_out_of_range slices past its mask: malformed, and nothing read of the mask."""
    header = verified_corpus.get("/v1/trajectories/tr_mask_out_of_range?run_id=broken")
    assert "malformed-record" in header["flags"]
    assert "out-of-support" not in header["flags"] and "forced-run" not in header["flags"]
    paths = verified_corpus.get("/v1/trajectories/tr_mask_out_of_range/paths?run_id=broken")
    assert all(node.get("support_sizes") is None for node in paths["nodes"].values())


def write_supports(directory, record_id, support, **options):
    """A record of one reply `abcdefgh` whose sampled tokens have the supports `support(row, id)`."""
    builder = RecordBuilder(record_id, sampling_mask=True, support=lambda node, row, token: support(row, token),
                            **options)
    user = builder.add_client(None, "user", "go")
    builder.add_model(user, "abcdefgh")
    builder.write(directory)


@pytest.mark.slow
def test_without_verification_the_flags_come_once_a_view_reads_the_mask(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    write_supports(run, "tr_forced_short", lambda row, token: [token] if row < FORCED_RUN_TOKENS - 1 else [token, 0])
    write_supports(run, "tr_forced", lambda row, token: [token] if 2 <= row < 2 + FORCED_RUN_TOKENS else [token, 0])
    write_supports(run, "tr_empty_support", lambda row, token: [] if row == 3 else [token, token + 1])
    write_supports(run, "tr_no_mask", lambda row, token: [token])
    (run / "tr_no_mask.sampling_mask.zst").unlink()  # listed, not here: nothing known of the support
    write_supports(run, "tr_damaged_mask", lambda row, token: [token + 1])
    mask = run / "tr_damaged_mask.sampling_mask.zst"
    mask.write_bytes(mask.read_bytes()[:-6])
    with ServerProcess([run], "--no-verify") as server:
        server.wait_indexed()
        assert listed(server, "run", flag="out-of-support") == set() == listed(server, "run", flag="forced-run")
        for record_id in ("tr_forced_short", "tr_forced", "tr_empty_support", "tr_no_mask"):
            paths = server.get(f"/v1/trajectories/{record_id}/paths?run_id=run")
            assert "mask_error" not in paths
        assert server.get("/v1/trajectories/tr_no_mask/paths?run_id=run")["nodes"]["n1"]["support_sizes"] is None
        paths = server.get("/v1/trajectories/tr_damaged_mask/paths?run_id=run")
        assert "tr_damaged_mask.sampling_mask.zst" in paths["mask_error"]
        model = paths["nodes"]["n1"]
        assert model["token_ids"] and model["support_sizes"] is None  # the tokens are still shown
        wait_for(lambda: listed(server, "run", flag="malformed-record") == {"tr_damaged_mask"}, "the damaged mask")
        wait_for(lambda: listed(server, "run", flag="out-of-support") == {"tr_empty_support"}, "out-of-support")
        wait_for(lambda: listed(server, "run", flag="forced-run") == {"tr_forced"}, "forced-run")
        header = server.get("/v1/trajectories/tr_damaged_mask?run_id=run")
        assert [p for p in header["record_problems"] if "sampling_mask" in p]
        assert "out-of-support" not in header["flags"]  # what it flags is the damage, once


def test_the_flags_are_in_the_catalogue_with_their_levels(corpus_server):
    catalogue = {flag["flag"]: flag for flag in corpus_server.get("/__viewer")["flags"]}
    assert catalogue["out-of-support"]["level"] == "error"
    assert "logprobs_mode" in catalogue["out-of-support"]["why"]
    assert catalogue["forced-run"]["level"] == "info"
    assert f"{FORCED_RUN_TOKENS} or more" in catalogue["forced-run"]["why"]
