"""A rollout's snapshot file in the browser: asked of the server, saved elsewhere, opened where nothing but
that file may load (the snapshot tests and the Chat tab's)."""

import urllib.request

from tests.browser.hostile_text import DANGEROUS
from tests.browser.tab import ARTIFACTS, VIEWPORT


class Offline:
    """One tab on a snapshot file, in a context where nothing but that file may load."""

    def __init__(self, browser, file):
        self.url = file.as_uri()
        self.context = browser.new_context(viewport=VIEWPORT, java_script_enabled=True)
        self.requests, self.errors = [], []
        self.context.route("**/*", self.refuse)
        self.tab = self.context.new_page()
        self.tab.set_default_timeout(10_000)
        self.tab.on("console", lambda note: note.type in ("error", "warning") and self.errors.append(note.text))
        self.tab.on("pageerror", lambda error: self.errors.append(str(error)))
        self.tab.goto(self.url)
        self.tab.wait_for_selector("#snapshot .tabs")

    def refuse(self, route):
        self.requests.append(route.request.url)
        if route.request.url == self.url:
            route.continue_()
        else:
            route.abort()

    def shot(self, name):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.tab.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def check(self):
        """Nothing was asked for but the file, nothing logged an error, nothing made from record text ran."""
        assert self.requests == [self.url]
        assert self.errors == []
        assert self.tab.evaluate("typeof window.__pwned") == "undefined"
        made = self.tab.locator(DANGEROUS).evaluate_all("nodes => nodes.map(n => n.outerHTML.slice(0, 120))")
        assert len(made) == 1 and made[0].startswith('<meta http-equiv="Content-Security-Policy" '), made  # its own


def served(server, record_id, query="") -> bytes:
    with urllib.request.urlopen(f"{server.url}/v1/trajectories/{record_id}/snapshot{query}") as answer:
        assert answer.headers["Content-Disposition"] == f'attachment; filename="{record_id}.html"'
        return answer.read()


def saved(tmp_path, name, body: bytes):
    file = tmp_path / "elsewhere" / f"{name}.html"
    file.parent.mkdir(exist_ok=True)
    file.write_bytes(body)
    return file
