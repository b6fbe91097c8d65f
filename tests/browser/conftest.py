"""Headless Chromium (Debian's, driven by Playwright) on the real page of the real server.

The browser tests skip only when Chromium or Playwright is missing *and*
`SKYCAP_VIEWER_REQUIRE_BROWSER` is unset; CI sets it, so there a missing browser fails.
"""

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.chain import write_chain
from tests.server_process import ServerProcess

CHROMIUM = os.environ.get("SKYCAP_VIEWER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
VIEWPORT = {"width": 1500, "height": 950}
OPEN_TABS = []  # the `Page`s of the test running, for `Page.state()` when it fails


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


class Page:
    """One browser tab on a server, with the page errors and dialogs it met."""

    def __init__(self, browser, server, **context_options):
        self.server = server
        self.context = browser.new_context(**{"viewport": VIEWPORT, **context_options})
        self.tab = self.context.new_page()
        self.tab.set_default_timeout(10_000)
        self.errors = []
        self.dialogs = []
        self.requests = {}  # Playwright request -> [seconds since the tab opened, URL, how it ended]
        self.opened = time.monotonic()
        self.tab.on("request", lambda request: self.requests.setdefault(request, [self.since(), request.url, None]))
        self.tab.on("requestfinished", lambda request: self._ended(request, "answered"))
        self.tab.on("requestfailed", lambda request: self._ended(request, f"failed: {request.failure}"))
        self.tab.on("pageerror", lambda error: self.errors.append(str(error)))
        self.tab.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.tab.on("dialog", self._dialog)

    def since(self) -> float:
        return round(time.monotonic() - self.opened, 1)

    def _ended(self, request, how: str):
        if request in self.requests:
            self.requests[request][2] = f"{how} at {self.since()} s"

    def state(self) -> str:
        """What the tab is doing now (for a failed test's report): requests not answered, the last ones
        answered, and whether its script answers within five seconds (a busy page does not)."""
        started = time.monotonic()
        try:
            self.tab.wait_for_function("true", timeout=5000)
            script = f"its script answers ({time.monotonic() - started:.1f} s)"
        except Exception as error:  # noqa: BLE001 — a report, whatever went wrong
            script = f"its script does not answer: {type(error).__name__}: {str(error)[:200]}"
        lines = [f"at {self.since()} s: {script}"]
        if "does not answer" in script:
            lines.append(self.script_stack())
        lines += [f"  {when} s {url} {how or 'NOT ANSWERED'}" for when, url, how in list(self.requests.values())[-25:]]
        return "\n".join(lines)

    def script_stack(self) -> str:
        """The stack of the next script the tab runs, paused through the DevTools protocol. The debugger is
        only enabled now, so a task already running is not interrupted: the stack is where the page goes
        once that task ends (a long task ending is told apart from a page that never comes back)."""
        paused = []
        try:
            session = self.context.new_cdp_session(self.tab)
            session.on("Debugger.paused", lambda event: paused.append(event))
            session.send("Debugger.enable")
            session.send("Debugger.pause")
            deadline = time.monotonic() + 10
            while not paused and time.monotonic() < deadline:
                self.tab.wait_for_timeout(100)
        except Exception as error:  # noqa: BLE001 — a report, whatever went wrong
            return f"  its script could not be paused: {type(error).__name__}: {str(error)[:200]}"
        if not paused:
            return "  no script of it ran within 10 s (one long task still running, or a page that is stuck)"
        return "\n".join(f"  next ran: {frame['functionName'] or '(anonymous)'} {frame['url'].rsplit('/', 1)[-1]}:"
                         f"{frame['location']['lineNumber'] + 1}" for frame in paused[0]["callFrames"])

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, hash_route=""):
        self.tab.goto(f"{self.server.url}/{hash_route}")
        self.tab.wait_for_selector("#main table.rows, #main .notice, .empty-state")
        return self.tab

    def hash(self):
        return self.tab.evaluate("location.hash")

    def shot(self, name):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.tab.screenshot(path=str(ARTIFACTS / f"{name}.png"))


@pytest.fixture
def page_on(browser):
    """`page_on(server, **context_options)` opens a tab on that server; page errors fail the test."""
    opened = []

    def make(server, **context_options):
        page = Page(browser, server, **context_options)
        opened.append(page)
        OPEN_TABS.append(page)
        return page

    yield make
    OPEN_TABS.clear()
    for page in opened:
        page.context.close()
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
    page.context.close()
    assert not page.dialogs, f"a dialog fired: {page.dialogs}"


@pytest.fixture
def read_only_page(shared_page):
    """`shared_page` for one test: its tab in the failure report, its page errors this test's."""
    OPEN_TABS.append(shared_page)
    shared_page.errors.clear()
    yield shared_page
    OPEN_TABS.remove(shared_page)
    assert not shared_page.errors, f"page errors: {shared_page.errors}"


def arrives(locator, timeout: float | None = None, state: str = "visible"):
    """Wait for `locator`'s first element to be `state` on a page holding a huge record. Not `expect`: each
    of its polls that fails snapshots the whole page's accessibility tree for the error it would raise
    (Playwright 1.5x), near a second of the page's own script per poll on a 67k-token rollout, so the
    wait held up what it waited for (CI: a block's tokens not drawn in 5 s; 0.2 s when not polled so)."""
    locator.first.wait_for(state=state, timeout=timeout)


def downloaded(tab, locator) -> tuple[str, bytes]:
    """(the suggested file name, the bytes) of what clicking `locator` (a selector or a locator) saves."""
    with tab.expect_download() as caught:
        (tab.locator(locator) if isinstance(locator, str) else locator).click()
    download = caught.value
    with open(download.path(), "rb") as saved:
        return download.suggested_filename, saved.read()


def read_record(path: Path) -> dict:
    return json.loads(decompress_one_frame(path.read_bytes()))


def write_record(directory: Path, document: dict):
    """Write a document as skycap does: one zstd frame named after its id."""
    (directory / f"{document['id']}.json.zst").write_bytes(compress(json.dumps(document).encode()))


def copy_record(source_dir: Path, record_id: str, target_dir: Path):
    """Copy a record with its sidecars."""
    for item in source_dir.iterdir():
        if re.fullmatch(rf"{re.escape(record_id)}\.[a-z_]+(\.json)?\.zst", item.name):
            shutil.copy2(item, target_dir / item.name)


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
    """The real server over one run, `long`, of one 30,000-node chain record (`tests/chain.py`), shared by the
    tests that only read it: each writing and indexing its own cost seconds."""
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
