"""A shared viewer in the browser: the printed link opens the page and leaves the address bar
without its token, a reload is let in by the cookie, and a browser without it sees the 401 page."""

import pytest
from playwright.sync_api import expect

from tests.browser.tab import Page
from tests.support.corpus import FIXTURES
from tests.support.server_process import ServerProcess

TOKEN = "a-browser-token"


@pytest.fixture
def guarded():
    with ServerProcess([FIXTURES / "spec"], "--token", TOKEN) as server:
        server.wait_indexed()
        yield server


def test_the_token_link_then_the_cookie_then_nothing(browser, guarded):
    page = Page(browser, guarded)
    try:
        tab = page.tab
        tab.goto(f"{guarded.url}/?token={TOKEN}#/run/spec/rollouts")
        expect(tab.locator("#main table.rows")).to_be_visible()
        assert tab.evaluate("location.search") == "" and tab.evaluate("location.hash") == "#/run/spec/rollouts"
        assert TOKEN not in tab.url
        cookies = page.context.cookies()
        assert [(c["name"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
            (f"skycap_viewer_{guarded.port}", True, "Strict")]
        assert TOKEN not in cookies[0]["value"]  # every port of the host is sent it: it is not the token
        assert tab.evaluate("document.cookie") == ""  # HttpOnly: no script of the page can read it
        tab.reload()
        expect(tab.locator("#main table.rows")).to_be_visible()
        tab.locator("tr.rollout-row").first.click()  # the API answers the page's requests too
        expect(tab.locator("#drawer .traj-id")).to_be_visible()
        assert not page.errors, page.errors
    finally:
        page.context.close()
    stranger = browser.new_context()
    try:
        tab = stranger.new_page()
        answer = tab.goto(f"{guarded.url}/#/run/spec/rollouts")
        assert answer.status == 401
        expect(tab.locator("h1")).to_have_text("This viewer needs its token")
        assert tab.locator("#main").count() == 0
    finally:
        stranger.close()
