"""A browser tab on the real server, and what the browser tests do in one (wait, download, scroll, read).

`Page` records the tab's page errors, dialogs and requests: the fixtures in `conftest.py` fail a test
on the first two and put the last in a failed test's report.
"""

import time
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
VIEWPORT = {"width": 1500, "height": 950}
OPEN_TABS = []  # the `Page`s of the test running, for `Page.state()` when it fails


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
        self.closed = False
        self.tab.on("request", lambda request: self.requests.setdefault(request, [self.since(), request.url, None]))
        self.tab.on("requestfinished", lambda request: self._ended(request, "answered"))
        self.tab.on("requestfailed", lambda request: self._ended(request, f"failed: {request.failure}"))
        self.tab.on("pageerror", lambda error: self.errors.append(str(error)))
        self.tab.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.tab.on("dialog", self._dialog)

    def close(self):
        """Close the tab's context once (its server's stop and the fixture's teardown may both ask)."""
        if not self.closed:
            self.closed = True
            self.context.close()

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


def scroll_to_the_end(tab, times=3):
    """Wheel the drawer's content down, as far as it goes, a few times over."""
    content = tab.locator(".drawer-content")
    box = content.bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(times):
        tab.mouse.wheel(0, 10**6)
        tab.wait_for_timeout(100)


def table_ids(tab):
    return tab.locator("table.rows tr.rollout-row").evaluate_all("rows => rows.map(r => r.dataset.traj)")
