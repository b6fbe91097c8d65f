"""Headless Chromium (Debian's, driven by Playwright) on the real page of the real server.

The browser tests skip only when Chromium or Playwright is missing *and*
`SKYCAP_VIEWER_REQUIRE_BROWSER` is unset; CI sets it, so there a missing browser fails.
"""

import os
import shutil
from pathlib import Path

import pytest

from tests.browser.hostile_text import write_hostile_root
from tests.browser.tab import OPEN_TABS, Page
from tests.support.chain_record import write_chain
from tests.support.server_process import ServerProcess

CHROMIUM = os.environ.get("SKYCAP_VIEWER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report says what each of its tabs was doing: its requests not
    answered yet, its last ones, and whether its script still answers."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for number, page in enumerate(OPEN_TABS):
            report.sections.append((f"tab {number}", page.state()))


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.browser)


def _unavailable(reason):
    if os.environ.get("SKYCAP_VIEWER_REQUIRE_BROWSER"):
        pytest.fail(f"browser tests are required here but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        _unavailable(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright for Python is not installed")
    executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page_on(browser):
    """`page_on(server, **context_options)` opens a tab on that server; page errors fail the test."""
    opened = []

    def make(server, **context_options):
        page = Page(browser, server, **context_options)
        opened.append(page)
        OPEN_TABS.append(page)
        if hasattr(server, "before_stop"):  # a server the test stops itself: the tab closes first
            server.before_stop.append(page.close)
        return page

    yield make
    OPEN_TABS.clear()
    for page in opened:
        page.close()
    for page in opened:
        assert not page.dialogs, f"a dialog fired: {page.dialogs}"
        assert not page.errors, f"page errors: {page.errors}"


@pytest.fixture
def page(page_on, corpus_server):
    return page_on(corpus_server)


@pytest.fixture(scope="module")
def shared_page(browser, corpus_server):
    """One tab on the corpus for a module's read-only checks (each opens its own route, none changes what
    the next one sees): a tab and its first load once per module, not once per test. Page errors fail the
    test that was running when they came (checked after each), dialogs at the end."""
    page = Page(browser, corpus_server)
    yield page
    page.close()
    assert not page.dialogs, f"a dialog fired: {page.dialogs}"


@pytest.fixture
def read_only_page(shared_page):
    """`shared_page` for one test: its tab in the failure report, its page errors this test's."""
    OPEN_TABS.append(shared_page)
    shared_page.errors.clear()
    yield shared_page
    OPEN_TABS.remove(shared_page)
    assert not shared_page.errors, f"page errors: {shared_page.errors}"


@pytest.fixture
def temp_server(tmp_path):
    """`temp_server(dirs)` starts the real server over temporary record directories."""
    started = []

    def start(*dirs):
        server = ServerProcess(list(dirs)).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


CHAIN_NODES = 30_000  # /graph and /paths come in parts of 5,000 nodes: six each


@pytest.fixture(scope="session")
def chain_server(tmp_path_factory):
    """The real server over one run, `long`, of one 30,000-node chain record (`tests/support/chain_record.py`),
    shared by the tests that only read it: each writing and indexing its own cost seconds."""
    run = tmp_path_factory.mktemp("chain") / "long"
    write_chain(run, CHAIN_NODES)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        yield server


@pytest.fixture
def page_over(temp_server, page_on):
    """`page_over(dir, ...)`: the real server over temporary runs, indexed, and a tab on it.

    It asks for `temp_server` first so the tabs close before their servers stop (a poll in
    between would log a refused connection as a page error)."""

    def start(*dirs, **context_options):
        server = temp_server(*dirs)
        server.wait_indexed()
        return page_on(server, **context_options)

    return start


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory):
    """Runs whose records, names and file names carry markup (`hostile_text.py`)."""
    root = tmp_path_factory.mktemp("hostile")
    write_hostile_root(root)
    return root
