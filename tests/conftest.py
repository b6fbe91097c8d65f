"""Shared test fixtures: the skycap v1 corpus, its oracle, the CLI and the real server."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server_process import ServerProcess

FIXTURES = Path(__file__).parent / "fixtures" / "skycap-v1"
ORACLE = json.loads((FIXTURES / "oracle.json").read_text())["dirs"]
RECORD_DIRS = sorted(ORACLE)


def oracle_records():
    """(directory, record id, oracle entry) for every record of the corpus."""
    return [(d, rid, entry) for d in RECORD_DIRS for rid, entry in sorted(ORACLE[d]["records"].items())]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    """A private copy of the corpus: tests may point the viewer at it, never at the source."""
    target = tmp_path_factory.mktemp("corpus") / "skycap-v1"
    shutil.copytree(FIXTURES, target)
    return target


def run_cli(*args, cwd=None, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Run `python -m skycap_viewer ARGS` as a user would, capturing its output."""
    return subprocess.run(
        [sys.executable, "-m", "skycap_viewer", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
    )


@pytest.fixture(scope="session")
def corpus_server(corpus):
    """The real server over every corpus directory, on an ephemeral port."""
    with ServerProcess([corpus]) as server:
        server.wait_indexed()
        yield server
