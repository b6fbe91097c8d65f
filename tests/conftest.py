"""Shared test fixtures: the skycap v1 corpus, its oracle, the CLI and the real server."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import server_process
from tests.server_process import AS_A_USER, ServerProcess

FIXTURES = Path(__file__).parent / "fixtures" / "skycap-v1"
ORACLE_ALL = json.loads((FIXTURES / "oracle.json").read_text())["dirs"]
# `pulled/` (two run-index layouts over byte-for-byte copies of groups/ and groups2/ records) is tested on
# its own, against `pulled-expected.json` (tests/test_run_index.py); it is kept out of the corpus the other
# tests serve and compare with the oracle: its newer layout's record directory is three levels down, where
# discovery does not look, and its records are the same as those of groups/ and groups2/.
PULLED = FIXTURES / "pulled"
NOT_CORPUS = ("pulled", "pulled-expected.json")
ORACLE = {d: entry for d, entry in ORACLE_ALL.items()
          if (FIXTURES / d).is_dir() and d.split("/")[0] not in NOT_CORPUS}  # the directories copied here
RECORD_DIRS = sorted(ORACLE)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: two workers a core. Most tests wait on a server, a browser or a subprocess more than they
    compute (a 2-core run used one core on average), so a second worker per core fills the waits."""
    return 2 * (os.cpu_count() or 1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the stacks of the servers still running: a stuck server shows where."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for number, server in enumerate(list(server_process.LIVE)):
            report.sections.append((f"server {number} stacks", server.stacks()))


def copy_corpus(target: Path, *ignored: str, **options) -> Path:
    """Copy the corpus the oracle describes (without `pulled/`) to `target`."""
    shutil.copytree(FIXTURES, target, ignore=shutil.ignore_patterns(*NOT_CORPUS, *ignored), **options)
    return target


def oracle_records():
    """(directory, record id, oracle entry) for every record of the corpus."""
    return [(d, rid, entry) for d in RECORD_DIRS for rid, entry in sorted(ORACLE[d]["records"].items())]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    """A private copy of the corpus: tests may point the viewer at it, never at the source."""
    return copy_corpus(tmp_path_factory.mktemp("corpus") / "skycap-v1")


def run_cli(*args, cwd=None, env=None, timeout=120, as_user=False) -> subprocess.CompletedProcess:
    """Run `python -m skycap_viewer ARGS` as a user would, capturing its output (`as_user`: without root's
    power to read what file permissions refuse)."""
    return subprocess.run(
        [*(AS_A_USER if as_user else []), sys.executable, "-m", "skycap_viewer", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
    )


@pytest.fixture(scope="session")
def corpus_server(corpus):
    """The real server over every corpus directory, on an ephemeral port."""
    with ServerProcess([corpus]) as server:
        server.wait_indexed()
        yield server


def trained_paths(entry: dict) -> list[dict]:
    """The oracle's paths (skycap's `all` rule, leaf order) with what the record's own `samples` train.

    A path that is no `samples` row trains nothing (`trains` false, no targets, 0 trained tokens); a
    row's trained tokens are its targets' sampled tokens (`node_summary`). Without `samples` the
    `all` rule stands. Where skycap's `trained_by_samples` is given, each row's figure must agree."""
    rows = (entry.get("samples_field") or {}).get("rows")
    if rows is None:
        return [{**path, "trains": True} for path in entry["paths"]]
    nodes = {node["id"]: node for node in entry["node_summary"]}
    first_path = {}
    for index, path in enumerate(entry["paths"]):
        for node in path["path"]:
            first_path.setdefault(node, index)
    trained_in = {target: first_path[row["leaf"]] for row in rows for target in row["targets"]}
    sampled = {n: nodes[n]["tokens"] - (nodes[n]["sampled_start"] or 0) for n in trained_in
               if nodes[n]["tokens"] is not None}
    for row, skycap in zip(rows, entry.get("trained_by_samples") or [], strict=False):
        if skycap["trained_tokens"] is not None:
            assert skycap["trained_tokens"] == sum(sampled[t] for t in row["targets"]), "the oracle disagrees"
    expected = []
    for index, path in enumerate(entry["paths"]):
        targets = [n for n in path["path"] if trained_in.get(n) == index]
        elsewhere = {str(n): trained_in[n] for n in path["path"] if n in trained_in and trained_in[n] != index}
        trains = any(first_path[row["leaf"]] == index for row in rows)
        trained = None if path["tokens"] is None else sum(sampled[n] for n in targets)
        expected.append({**path, "targets": targets, "sampled_elsewhere": elsewhere, "trains": trains,
                         "trained_tokens": trained})
    return expected
