"""The benchmark harness runs end to end on a tiny run and reaches every route it times.

Timing is the benchmark's business, not the tests': this only keeps `bench/run.py` working as
the server changes (a renamed route would show here as a status other than 200).
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skycap_viewer.server.web import CAPTURE, ROUTES, api_segments, match_route
from tests.support.api_paths import api_path

BENCH = Path(__file__).parent.parent / "bench" / "run.py"


@pytest.mark.slow
def test_bench_runs_and_reaches_every_route(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--rollouts", "16", "--repeat", "1", "--requests", "2", "--no-browser",
         "--run-index", "--json", "--keep", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["records"] == len(list((tmp_path / "run").glob("*.json.zst"))) >= 18  # 16 + the huge group
    assert figures["cold_index_s"] is not None and figures["floor_all_cores_s"] > 0
    assert {name: entry["status"] for name, entry in figures["latency"].items()} == {
        name: 200 for name in figures["latency"]
    }
    assert figures["latency"]["huge: paths"]["bytes"] > figures["latency"]["huge: paths"]["gzip_bytes"] > 0
    assert figures["listing_under_load"]["huge_fetches"] >= 1
    assert figures["first_paint"] == figures["chat_paint"] == {"status": "skipped"}
    search = figures["search"]
    assert search["common"]["hits"] > 0 and search["needle"]["hits"] >= 1 and search["repeat"]["status"] == 200
    compare = figures["compare"]
    assert {name: entry["status"] for name, entry in compare.items() if name.startswith("compare:")} == {
        "compare: the two longest rollouts": 200, "compare: the huge rollout and its group's other member": 200}
    assert compare["line-up of a group of 8"]["new_queries"] >= 1
    index = figures["run_index"]  # 16 rollouts: one step, every record listed but the huge pair, one lost row
    assert index["written"] == {"files": 1, "rows": 17, "records_listed": 16, "rows_without_record": 1,
                                "not_trained": 0, "superseded": 0}
    assert_run_index_measured(index, tmp_path / "run")


def assert_run_index_measured(index: dict, directory: Path):
    """--run-index took its figures on a server that applied the index as written, then removed it."""
    assert index["applied"] == {"trained_false_total": index["written"]["not_trained"],
                                "missing_total": index["written"]["rows_without_record"]}
    assert isinstance(index["cold_index_s"], float) and isinstance(index["run_index_complete_s"], float)
    assert isinstance(index["extra_per_document_us"], float)
    listings = index["listings"]
    assert {name: entry["status"] for name, entry in listings.items() if "status" in entry} == {
        "run index: rollouts trained=false": 200, "run index: rollouts sort=trained": 200,
        "run index: missing=true&limit=100, first page": 200, "run index: runs": 200,
        "run index: missing=true&limit=100, a later page": "one page only"}  # under 100 rows without a record
    assert listings["run index: missing=true&limit=100, every page"]["new_queries"] == 1
    assert len(index["rewrite"]["times_s"]) == 3 and None not in index["rewrite"]["times_s"]
    assert len(index["rewrite"]["sidecars_verified_before"]) == 3
    assert not (directory / "index").exists()


@pytest.mark.slow
def test_bench_rows_mode_reaches_every_listing_kind(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--rows", "64", "--repeat", "1", "--run-index", "--json", "--keep", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)["64"]
    assert figures["records"] == len(list((tmp_path / "rows-64").glob("*.json.zst"))) >= 64
    assert figures["bytes_per_record"] > 0 and figures["write_records_per_s"] > 0
    for name in ("cold_index_s", "cold_index_no_cache_s", "floor_all_cores_s", "index_vs_floor",
                 "cold_index_per_document_us", "reopen_s", "rss_indexed_mib", "rss_after_suite_mib",
                 "per_document_vs_smallest"):
        assert isinstance(figures[name], float), name
    listings = figures["listings"]
    assert {"rollouts limit=500", "groups step=", "one group", "search: first page",
            "rollouts sort=tokens", "rollouts reward range", "rollouts exclude_flag="} <= set(listings)
    assert {name: entry["new_status"] for name, entry in listings.items()} == {name: 200 for name in listings}
    assert all(entry["new_queries"] >= 1 and entry["new_p95_ms"] >= entry["new_p50_ms"] for entry in listings.values())
    index = figures["run_index"]  # 64 rollouts: one step, two rows without a record, groups dropped
    assert index["written"]["files"] == 1 and index["written"]["rows"] == 66
    assert index["written"]["records_listed"] == 64 and index["written"]["not_trained"] > 0
    assert_run_index_measured(index, tmp_path / "rows-64")


@pytest.mark.slow
def test_bench_rows_mode_cached_only_skips_the_uncached_cold_start_and_keeps_the_cpu_figures(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--rows", "64", "--repeat", "1", "--requests", "1", "--cached-only", "--json",
         "--keep", str(tmp_path)], capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)["64"]
    assert "cold_index_no_cache_s" not in figures and isinstance(figures["cold_index_s"], float)
    assert figures["server_cpu_per_record_us"] > 0 and figures["all_cpu_vs_floor"] > 0


def test_the_row_profile_accounts_for_compute_row(tmp_path):
    """`bench/row_profile.py` times the floor and `compute_row` on written records and lists the
    steps, each a function `compute_row` calls (a renamed step shows as a missing line)."""
    result = subprocess.run([sys.executable, str(BENCH.parent / "row_profile.py"), "--small", "--documents", "12",
                             "--rounds", "1"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("12 documents of a written sample")
    floor = float(lines[2].split()[-2])
    total = float(lines[3].split()[3])
    assert floor > 0 and total > 0  # figures, not a race between them: timing is the benchmark's business
    steps = lines[lines.index("compute_row's steps (cumulative, the profiler's shares of the measured total):") + 1:]
    named = {line.split()[2] for line in steps[: steps.index("")]}
    assert {"read_document_escaped", "trajectory_header", "summary", "slim"} <= named


def test_the_worker_row_bench_times_each_step_up_to_the_row_written(tmp_path):
    """`bench/worker_row.py` times a worker's row step by step on written records, from the read to the row
    written into a run's database as a worker writes it (a write the store refused would end it with an error)."""
    result = subprocess.run([sys.executable, str(BENCH.parent / "worker_row.py"), "--small", "--documents", "12",
                             "--rounds", "1"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("12 documents of a written sample")
    figures = {line[20:].strip(): float(line.split()[0]) for line in lines[2:-1]}
    for step in ("floor: read, decompress, parse", "parse", "structure check (schema)", "kept_lane", "stored_form",
                 "compute_row whole", "rows written (first indexing: inserted, counted, committed)",
                 "rows written later (listing and trigram indexes kept)",
                 "listing row's least: checked parse, then graph, flags, sort keys"):
        assert figures[step] > 0, step  # figures, not a race between them: timing is the benchmark's business
    assert lines[-1].startswith("the floor's multiples: compute_row whole "), lines[-1]

def test_the_write_lock_bench_times_what_a_cold_index_holds_the_lock_for(tmp_path):
    """`bench/write_lock.py` times the run database's write lock held a record, the rows written as now and staged
    then merged, and the groups, over written records (a merge or a group write the store refused ends it)."""
    result = subprocess.run([sys.executable, str(BENCH.parent / "write_lock.py"), "--small", "--documents", "600"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("600 records, ") and "groups" in lines[0], lines[0]
    figures = {line[12:].strip(): float(line.split()[0]) for line in lines[1:-1]}
    assert set(figures) == {"rows now", "rows staged (outside the lock)", "rows merged", "groups"}, figures
    assert all(value > 0 for value in figures.values()), figures
    assert lines[-1].startswith("the write lock held a record: "), lines[-1]


def test_an_api_path_is_named_from_the_route_table():
    """Every route's path, as `api_path` writes it from the table, is matched by the server to that route,
    its captures given back whole (a space or a `/` in a group key included)."""
    for route in ROUTES:
        captured = [f"id {n}/x" for n in range(route.segments.count(CAPTURE))]
        matched, given = match_route(api_segments(api_path(route.answer, *captured)))
        assert (matched, given) == (route, captured)
    with pytest.raises(KeyError, match="no route is answered by 'nothing'"):
        api_path("nothing")
    with pytest.raises(ValueError, match="captures 1 segment"):
        api_path("paths")


def test_the_bench_writes_no_api_path_by_hand():
    """The bench names its routes from the table (`api_path`): no string of its code starts an API path."""
    written = [f"{path.name}:{node.lineno}: {node.value!r}" for path in sorted(BENCH.parent.glob("*.py"))
               for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Constant)
               and isinstance(node.value, str) and node.value.startswith(("/v1", "/__viewer", "/healthz", "/api/"))]
    assert not written, "\n".join(written)
