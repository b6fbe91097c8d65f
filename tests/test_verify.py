"""Damage is visible where the list is: sidecars are verified in the background, as `check` does.

Listings never wait for it: rows are listed from documents first, then each record's sidecars are
read once and a damaged one is flagged `malformed-record` with its problem, so the band agrees with
`check`. What was verified is kept in the persisted index; `--no-verify` checks only what a view found.
"""

import json
import shutil

import pytest

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.pool import compute_rows_here
from skycap_viewer.catalog.watcher import VERIFY_BATCH, VERIFY_FIRST, VERIFY_SECONDS, Watcher
from skycap_viewer.record import document as documents
from skycap_viewer.server.api import Api
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.server_process import ServerProcess, wait_for


def check_problems(run):
    result = run_cli("check", "--json", run)
    records = json.loads(result.stdout)["directories"][0]["records"]
    return {record["id"]: record["problems"] for record in records}


def flagged(server, run_id="broken"):
    rows = server.get(f"/v1/trajectories?run_id={run_id}&limit=1000")["data"]
    return {row["id"]: row["record_problems"] for row in rows if "malformed-record" in row["flags"]}


def verified(server, run_id="broken"):
    run = next(r for r in server.get("/v1/runs")["data"] if r["id"] == run_id)
    return run["sidecars_verified"], run["trajectory_count"]


def test_after_verification_the_band_agrees_with_check(tmp_path):
    run = tmp_path / "broken"
    shutil.copytree(FIXTURES / "broken", run)
    expected = check_problems(run)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        wait_for(lambda: verified(server)[0] == verified(server)[1], "every record verified", timeout=60)
        found = flagged(server)
        assert set(found) == set(expected)
        sidecar_only = {"tr_truncated_sidecar", "tr_sidecar_two_frames"} & set(expected)
        assert sidecar_only, "the corpus has records whose damage only their sidecars show"
        for record_id in sidecar_only:
            assert any("sidecar" in problem for problem in found[record_id]), found[record_id]
        band = dict(server.get("/v1/trajectories?run_id=broken")["health"]["counts"])
        assert band["malformed-record"] == len(expected)
        for record_id in sidecar_only:  # the row's size is in the unit its paths can be shown in
            header = server.get(f"/v1/trajectories/{record_id}?run_id=broken")
            paths = server.get(f"/v1/trajectories/{record_id}/paths?run_id=broken")["paths"]
            assert header["size"]["unit"] == "chars" == paths[0]["unit"]


@pytest.mark.slow
def test_verification_is_remembered_across_a_restart(tmp_path):
    run = tmp_path / "broken"
    shutil.copytree(FIXTURES / "broken", run)
    with ServerProcess([run], cache_home=tmp_path / "cache") as server:
        server.wait_indexed()
        wait_for(lambda: verified(server)[0] == verified(server)[1], "every record verified", timeout=60)
        before = flagged(server)
    with ServerProcess([run], "--no-verify", cache_home=tmp_path / "cache") as server:
        server.wait_indexed()
        assert verified(server)[0] == verified(server)[1]
        assert flagged(server) == before


def test_without_verification_a_damaged_sidecar_is_flagged_once_a_view_reads_it(tmp_path):
    run = tmp_path / "broken"
    shutil.copytree(FIXTURES / "broken", run)
    with ServerProcess([run], "--no-verify") as server:
        server.wait_indexed()
        assert "tr_truncated_sidecar" not in flagged(server)
        assert verified(server)[0] < verified(server)[1]
        paths = server.get("/v1/trajectories/tr_truncated_sidecar/paths?run_id=broken")
        assert paths["text_only"] == "tokens-unreadable"
        wait_for(lambda: "tr_truncated_sidecar" in flagged(server), "the damaged record flagged", timeout=15)
        header = server.get("/v1/trajectories/tr_truncated_sidecar?run_id=broken")
        assert "malformed-record" in header["flags"]
        assert any("tokens sidecar" in problem for problem in header["record_problems"])


def test_verification_goes_a_batch_a_poll_sized_by_what_a_document_costs(tmp_path):
    """The first batch is small; later ones hold what takes about a second at the last batch's cost per
    document, so a run of big records never keeps the watcher from the next poll for long."""
    run = shutil.copytree(FIXTURES / "groups2", tmp_path / "groups2")
    catalog = Catalog([run])
    watcher = Watcher(catalog)
    watcher.poll()  # indexes the run
    total = catalog.snapshots()[0].row_count
    assert total > VERIFY_FIRST and catalog.snapshots()[0].verified == 0
    watcher.poll()
    assert catalog.snapshots()[0].verified == VERIFY_FIRST
    assert watcher.verify_batch() == min(VERIFY_BATCH, int(VERIFY_SECONDS / watcher.verify_cost))
    watcher.verify_cost = 0.25  # a document that took a quarter of a second: four a batch
    watcher.poll()
    assert catalog.snapshots()[0].verified == VERIFY_FIRST + 4
    watcher.poll()
    assert catalog.snapshots()[0].verified == min(total, VERIFY_FIRST + 4 + watcher.verify_batch())


def test_verification_waits_while_a_search_reads_even_in_the_middle_of_a_batch(tmp_path):
    """A search's documents and the background verification share the cores: while a request's documents are
    read (`requests_reading`), a poll verifies nothing, and a batch under way stops after the document at hand."""
    run = shutil.copytree(FIXTURES / "groups2", tmp_path / "groups2")
    catalog = Catalog([run])
    reading = {"now": True, "from": None}
    verified_so_far = []

    def counting(directory, names, verify=False):
        for name, row in compute_rows_here(directory, names, verify=verify):
            if verify:
                verified_so_far.append(name)
                if reading["from"] is not None and len(verified_so_far) >= reading["from"]:
                    reading["now"] = True
            yield name, row

    watcher = Watcher(catalog, compute_rows=counting, requests_reading=lambda: reading["now"])
    watcher.poll()  # indexes the run
    watcher.poll()
    watcher.poll()
    assert verified_so_far == [] and catalog.snapshots()[0].verified == 0, "nothing verified while a search reads"
    reading.update(now=False, **{"from": 3})
    watcher.poll()
    assert len(verified_so_far) == 3 < VERIFY_FIRST, "the batch stopped when a search began"
    assert catalog.snapshots()[0].verified == 3
    reading.update(now=False, **{"from": None})
    batch = watcher.verify_batch()
    watcher.poll()
    assert catalog.snapshots()[0].verified == min(catalog.snapshots()[0].row_count, 3 + batch) > 3


def test_a_record_that_lists_no_sidecar_is_verified_as_it_is_indexed(tmp_path):
    """Verifying reads a record's sidecars: one that lists none has nothing to read, so it is not parsed a
    second time for it (a million-node chain again beside the server's open copy); one that lists some is."""
    run = tmp_path / "spec"
    run.mkdir()
    for name in ("tr_text.json.zst", "tr_empty.json.zst", "tr_notext.json.zst", "tr_notext.tokens.zst"):
        shutil.copy(FIXTURES / "spec" / name, run / name)
    catalog = Catalog([run])
    Watcher(catalog).poll()  # indexes the run, verifies nothing yet
    snapshot = catalog.snapshots()[0]
    assert {row["id"]: row["_verified"] for row in snapshot.rows} == {"tr_text": True, "tr_empty": True,
                                                                      "tr_notext": False}
    assert snapshot.verified == 2


def test_a_record_opened_before_its_verification_is_verified_from_the_opens_parse(tmp_path, monkeypatch):
    """The server's background verification of a record it has just opened (the page, right after indexing)
    reads the open's parse, held in its document cache, instead of parsing the document again: a big
    record's parse is a gigabyte. Its row is verified all the same, with the sidecars read."""
    run = tmp_path / "spec"
    run.mkdir()
    for name in ("tr_notext.json.zst", "tr_notext.tokens.zst"):
        shutil.copy(FIXTURES / "spec" / name, run / name)
    parses = []
    parse = documents.parse_document_text
    monkeypatch.setattr(documents, "parse_document_text", lambda text, path: parses.append(path) or parse(text, path))
    catalog = Catalog([run])
    api = Api(catalog)
    watcher = Watcher(catalog, compute_rows=api.documents.verifying_held(compute_rows_here))
    watcher.poll()  # indexes the run: the document parsed once for its row
    assert catalog.snapshots()[0].verified == 0 and len(parses) == 1
    status, _ = api.paths("tr_notext", {})  # the page opens it: parsed by the server
    assert status == 200 and len(parses) == 2
    watcher.poll()  # the background verification: the open's parse
    assert len(parses) == 2, parses
    snapshot = catalog.snapshots()[0]
    assert snapshot.verified == 1 and snapshot.rows[0]["_verified"] is True
