"""One header: a record's flags, problems and sizes are the same facts in the listing row, in
`/trajectories/{id}`, in `trajectory` of `/paths` and `/graph`, and in `show --json`, on records whose
verdicts only the sidecars give (a `forced-run`, a damaged tokens sidecar)."""

import json
import subprocess
import sys

import pytest

from tests.support.corpus import FIXTURES
from tests.support.records import copy_record
from tests.support.server_process import ServerProcess, all_verified, wait_for

FACTS = ("flags", "record_problems", "size", "missing_sidecars")
RECORDS = [("masks", "tr_mask_forced"), ("broken", "tr_truncated_sidecar")]


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    root = tmp_path_factory.mktemp("header")
    for run, record_id in RECORDS:
        (root / run).mkdir(exist_ok=True)
        copy_record(FIXTURES / run, record_id, root / run, record_id)
    with ServerProcess([root / run for run, _ in RECORDS]) as server:
        server.wait_indexed()
        wait_for(lambda: all_verified(server), "every record verified", timeout=60)
        yield root, server


def facts(header):
    return {key: header.get(key) for key in FACTS}


@pytest.mark.parametrize(("run", "record_id"), RECORDS)
def test_the_paths_header_says_what_the_listing_and_show_say(verified, run, record_id):
    root, server = verified
    row = next(r for r in server.get(f"/v1/trajectories?run_id={run}")["data"] if r["id"] == record_id)
    shown = subprocess.run([sys.executable, "-m", "skycap_viewer", "show", str(root / run / record_id), "--json"],
                           capture_output=True, timeout=120)
    show = json.loads(shown.stdout)["trajectory"]
    expected = facts(row)
    assert facts(show) == expected
    assert facts(server.get(f"/v1/trajectories/{record_id}?run_id={run}")) == expected
    assert facts(server.get(f"/v1/trajectories/{record_id}/paths?run_id={run}")["trajectory"]) == expected
    assert facts(server.get(f"/v1/trajectories/{record_id}/paths?run_id={run}&text=false")["trajectory"]) == expected
    assert facts(server.get(f"/v1/trajectories/{record_id}/graph?run_id={run}")["trajectory"]) == expected
    verdict = "forced-run" if record_id == "tr_mask_forced" else "malformed-record"
    assert verdict in expected["flags"]


def test_a_record_with_no_nodes_says_nothing_trains_and_claims_no_mode(corpus_server):
    header = corpus_server.get("/v1/trajectories/tr_empty?run_id=spec")
    assert header["mode"] is None  # no node and no capture mode: "text" would be a guess
    assert header["size"]["trainable"] == 0 and header["size"]["tokens"] == 0
    paths = corpus_server.get("/v1/trajectories/tr_empty/paths?run_id=spec")
    assert paths["mode"] is None and paths["trajectory"]["size"]["trainable"] == 0
    shown = subprocess.run([sys.executable, "-m", "skycap_viewer", "show", str(FIXTURES / "spec" / "tr_empty")],
                           capture_output=True, timeout=120, text=True)
    assert "no mode recorded" in shown.stdout.splitlines()[0]
