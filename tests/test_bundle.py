"""`skycap-viewer bundle`, run as a user runs it: what it writes (the server's answers, under the names the
page reads them by), what it refuses, what it leaves out and says, and that it writes only into OUT.

The page reading the bundle from a static host is tests/browser/test_bundle.py.
"""

import gzip
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from skycap_viewer.commands.bundle import LAST_BYTES_A_ROLLOUT, LAST_FILES_BYTES, PAGE_ROWS
from skycap_viewer.commands.bundle_names import bundle_file
from skycap_viewer.server.in_process import InProcessApi
from skycap_viewer.server.web import CONTENT_SECURITY_POLICY, static_files
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES

RUN = "groups"
STATIC = Path(__file__).resolve().parents[1] / "static"


@pytest.fixture
def run(tmp_path):
    return shutil.copytree(FIXTURES / RUN, tmp_path / "records" / RUN)


def files_of(directory: Path) -> dict:
    """Every file under `directory` with its bytes and mtime: what a write into it would change."""
    return {path.relative_to(directory): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(directory.rglob("*")) if path.is_file()}


def answer_in(out: Path, segments, params: dict) -> dict:
    return json.loads(gzip.decompress((out / bundle_file(segments, params)).read_bytes()))


@pytest.mark.slow
def test_the_answers_are_the_servers_for_the_filters_under_the_pages_requests(run, tmp_path):
    before = files_of(run.parent)
    out = tmp_path / "out"
    done = run_cli("bundle", run, "-o", out, "--step", "2", "--flag", "forked")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"skycap-viewer: wrote {out}: 2 rollouts (filters: step=2 flag=forked)")
    assert files_of(run.parent) == before  # nothing written beside the records, none rewritten
    api = InProcessApi([run], ("step", "instance_id"))
    filters = {"step": ["2"], "flag": ["forked"]}
    for sort, order in [(None, None), ("tokens", "asc"), ("reward", "desc")]:
        page = {"run_id": RUN, "sort": sort, "order": order, "limit": PAGE_ROWS}
        asked = {**filters, "run_id": [RUN], "limit": [str(PAGE_ROWS)], **({"sort": [sort], "order": [order]}
                                                                          if sort else {})}
        assert answer_in(out, ["trajectories"], page) == json.loads(api.ask(("trajectories",), asked))
        assert answer_in(out, ["groups"], page) == json.loads(api.ask(("groups",), asked))
    listing = answer_in(out, ["trajectories"], {"run_id": RUN, "limit": PAGE_ROWS})
    assert listing["total"] == 2 and all("forked" in row["summary"]["flags"] for row in listing["data"])
    record = listing["data"][0]["id"]
    for segments, params in [([], {}), (["paths"], {}), (["graph"], {}), (["exchanges"], {}), (["timeline"], {}),
                             (["paths", "1", "chat"], {}), (["notable"], {"path": 1}), (["forks"], {"a": 0, "b": 1})]:
        asked = {name: [str(value)] for name, value in {"run_id": RUN, **params}.items()}
        assert answer_in(out, ["trajectories", record, *segments], {"run_id": RUN, **params}) == json.loads(
            api.ask(("trajectories", record, *segments), asked))
    viewer = json.loads((out / "__viewer").read_text())
    assert viewer["bundle"] == {"filters": filters, "rollouts": 2, "left_out": [], "budget_mib": None}
    assert viewer["flags"] == json.loads(api.ask(("__viewer",), {}))["flags"]
    assert [run["id"] for run in answer_in(out, ["runs"], {})["data"]] == [RUN]


def test_the_page_files_are_the_servers_unchanged(run, tmp_path):
    assert run_cli("bundle", run, "-o", tmp_path / "out", "--step", "1").returncode == 0
    page = {path.relative_to(STATIC) for path in STATIC.rglob("*") if path.is_file() and "__" not in str(path)}
    for name in page:
        assert (tmp_path / "out" / name).read_bytes() == static_files()[f"/{name.as_posix()}"][0].read_bytes(), name
    assert (tmp_path / "out" / ".nojekyll").exists()  # GitHub Pages serves `__viewer` only then


def test_the_page_asks_pages_of_the_rows_the_bundle_writes():
    limit = re.search(r"^const LIMIT = (\d+);", (STATIC / "js" / "app" / "run-page.js").read_text(), re.M)
    assert int(limit.group(1)) == PAGE_ROWS


def test_the_pages_meta_policy_is_the_servers_header():
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">',
                     (STATIC / "index.html").read_text())
    header = [part.strip() for part in CONTENT_SECURITY_POLICY.split(";")]
    assert [" ".join(part.split()) for part in meta.group(1).split(";")] == [
        part for part in header if not part.startswith("frame-ancestors")]  # a header's only


@pytest.mark.slow
def test_a_non_empty_out_is_refused_unless_forced(run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    done = run_cli("bundle", run, "-o", out, "--step", "1")
    assert done.returncode == 2 and done.stderr == f"skycap-viewer: {out} is not empty: pass --force to write over it\n"
    assert run_cli("bundle", run, "-o", out, "--step", "1", "--force").returncode == 0
    assert run_cli("bundle", run, "-o", out, "--step", "2", "--force").returncode == 0
    assert run_cli("bundle", run, "-o", tmp_path / "fresh", "--step", "2").returncode == 0
    assert files_of(out / "data").keys() == files_of(tmp_path / "fresh" / "data").keys()  # none of step 1's left
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("where", ["inside", "around"])
def test_a_record_directory_is_never_written_into(run, where):
    out = run / "bundle" if where == "inside" else run.parent
    before = files_of(run)
    done = run_cli("bundle", run, "-o", out, "--force")
    assert done.returncode == 2
    assert done.stderr == f"skycap-viewer: {out} is inside or holds the record directory {run}: pick another OUT\n"
    assert files_of(run) == before


@pytest.mark.slow
def test_too_many_rollouts_or_none_are_refused(run, tmp_path):
    done = run_cli("bundle", run, "-o", tmp_path / "a", "--max-rollouts", "10")
    assert done.returncode == 2
    assert done.stderr == ("skycap-viewer: the filters (none) keep 28 rollouts, more than --max-rollouts 10: "
                           "narrow them or raise --max-rollouts\n")
    done = run_cli("bundle", run, "-o", tmp_path / "b", "--step", "9")
    assert done.returncode == 2 and done.stderr == "skycap-viewer: the filters (step=9) keep no rollout\n"
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # refused before anything is written
    done = run_cli("bundle", run, "-o", tmp_path / "c", "--step", "2", "--max-mib", "0.01")
    assert done.returncode == 2
    assert re.fullmatch(r"skycap-viewer: the page and the listings alone take 0\.\d MiB, more than --max-mib 0\.01: "
                        r"raise it, or narrow the filters\n", done.stderr)


@pytest.mark.slow
def test_a_size_budget_leaves_drawers_out_and_says_which(run, tmp_path):
    assert run_cli("bundle", run, "-o", tmp_path / "whole", "--step", "2").returncode == 0
    whole = sum(path.stat().st_size for path in (tmp_path / "whole").rglob("*") if path.is_file())
    budget = round((whole + LAST_FILES_BYTES + 11 * LAST_BYTES_A_ROLLOUT - 12_000) / 2**20, 4)  # a drawer or so short
    out = tmp_path / "out"
    done = run_cli("bundle", run, "-o", out, "--step", "2", "--max-mib", budget)
    assert done.returncode == 0, done.stderr
    left = json.loads((out / "__viewer").read_text())["bundle"]["left_out"]
    assert 0 < len(left) < 11 and all(item["why"] == f"past the size budget (--max-mib {budget:g})" for item in left)
    assert [line for line in done.stderr.splitlines() if "left out" in line] == [
        f"skycap-viewer: left out {item['id']}'s drawer: past the size budget (--max-mib {budget:g})" for item in left]
    assert sum(path.stat().st_size for path in out.rglob("*") if path.is_file() and path.name != "__viewer") <= (
        budget * 2**20)
    listing = answer_in(out, ["trajectories"], {"run_id": RUN, "limit": PAGE_ROWS})
    assert listing["total"] == 11  # every kept rollout is listed, its drawer or not
    for item in left:
        assert not (out / bundle_file(["trajectories", item["id"], "paths"], {"run_id": RUN})).exists()
    search = answer_in(out, ["search"], {"run_id": RUN})
    assert {skipped["trajectory_id"] for skipped in search["skipped"]} == {item["id"] for item in left}


@pytest.mark.slow
def test_zip_writes_the_same_files_as_one_archive(run, tmp_path):
    assert run_cli("bundle", run, "-o", tmp_path / "folder", "--step", "3").returncode == 0
    assert run_cli("bundle", run, "-o", tmp_path / "bundle.zip", "--step", "3", "--zip").returncode == 0
    with zipfile.ZipFile(tmp_path / "bundle.zip") as archive:
        held = {name: archive.read(name) for name in archive.namelist()}
    written = {str(path.relative_to(tmp_path / "folder")): path.read_bytes()
               for path in (tmp_path / "folder").rglob("*") if path.is_file()}
    assert held == written
    again = run_cli("bundle", run, "-o", tmp_path / "bundle.zip", "--step", "3", "--zip")
    assert again.returncode == 2 and again.stderr == f"skycap-viewer: {tmp_path / 'bundle.zip'} exists: pass --force " \
                                                     "to replace it\n"


def test_it_reads_no_sidecar_of_a_rollout_it_leaves_out(run, tmp_path):
    api = InProcessApi([run], ("step", "instance_id"))
    kept = {row["id"] for row in json.loads(api.ask(("trajectories",), {"run_id": [RUN], "step": ["3"]}))["data"]}
    for path in run.iterdir():
        if not path.name.endswith(".json.zst") and path.name.split(".")[0] not in kept:
            path.unlink()  # another rollout's sidecars: gone, so a read of one would fail the command or flag it
    done = run_cli("bundle", run, "-o", tmp_path / "out", "--step", "3")
    assert done.returncode == 0 and "left out" not in done.stderr
    rows = answer_in(tmp_path / "out", ["trajectories"], {"run_id": RUN, "limit": PAGE_ROWS})["data"]
    assert {row["id"] for row in rows} == kept
    assert all("malformed-record" not in row["summary"]["flags"] for row in rows)


@pytest.mark.slow
def test_unreadable_records_are_listed_said_and_skipped_by_the_search(tmp_path):
    broken = shutil.copytree(FIXTURES / "broken", tmp_path / "broken")
    out = tmp_path / "out"
    done = run_cli("bundle", broken, "-o", out)
    assert done.returncode == 0 and "left out" not in done.stderr, done.stderr
    api = InProcessApi([broken], ("step", "instance_id"))
    listing = json.loads(api.ask(("trajectories",), {"run_id": ["broken"], "limit": ["1000"]}))
    unreadable = {row["id"]: row["error"] for row in listing["data"] if row.get("unreadable")}
    assert unreadable
    for record_id in unreadable:
        header = answer_in(out, ["trajectories", record_id], {"run_id": "broken"})
        assert header["unreadable"] is True  # the drawer says why from its header
    skipped = answer_in(out, ["search"], {"run_id": "broken"})["skipped"]
    assert skipped == [{"trajectory_id": record_id, "reason": f"unreadable: {error}"}
                       for record_id, error in unreadable.items()]  # as the server's search says them


@pytest.mark.slow
def test_the_bundle_bench_runs_end_to_end(tmp_path):
    bench = Path(__file__).resolve().parents[1] / "bench" / "bundle.py"
    done = subprocess.run([sys.executable, str(bench), "--rollouts", "16", "--keep", str(tmp_path / "run"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout)
    assert figures["rollouts"] == len(list((tmp_path / "run").glob("*.json.zst"))) >= 16
    assert figures["answers"] > 10 * figures["rollouts"] and figures["write_s"] > 0 and figures["zip_mib"] > 0
