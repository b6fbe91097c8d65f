"""Shared fixtures and hooks: the corpus copy, the real server over it, and reports of failed tests.

What the tests share besides fixtures (the corpus, the oracle, the servers, record writers) is in
`tests/support/`: a test module imports from there, never from another test module or a conftest.
"""

import os
from pathlib import Path

import pytest

from tests.support import server_process
from tests.support.corpus import copy_corpus
from tests.support.server_process import ServerProcess


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


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    """A private copy of the corpus: tests may point the viewer at it, never at the source."""
    return copy_corpus(tmp_path_factory.mktemp("corpus") / "skycap-v1")


@pytest.fixture(scope="session")
def corpus_server(corpus):
    """The real server over every corpus directory, on an ephemeral port."""
    with ServerProcess([corpus]) as server:
        server.wait_indexed()
        yield server
