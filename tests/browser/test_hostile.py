"""Hostile record content in the real page: markup and `javascript:` links render as inert text.

Model output and tool results are attacker-controlled. Records here carry markup, event
handlers, `javascript:` links and HTML entities in the token text (the tokens sidecar, split into
one-character tokens), in message text, in task names, annotation keys and values, call fields,
failure messages, a run directory's name and an unreadable record's file name. The page must show
all of it as text: no element is created from it, no script runs (each payload would also set
`window.__pwned`), no dialog opens and clicking the link text goes nowhere. (`test_live.py` covers
plain markup in text-mode messages.)
"""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.hostile_text import ODD_RUN, PAYLOADS, RUN, assert_inert


@pytest.mark.parametrize("record", ["tr_hostile_tokens", "tr_hostile_text"])
def test_hostile_rollout_text_is_inert_in_every_tab(temp_server, page_on, hostile_root, record):
    server = temp_server(hostile_root)
    server.wait_indexed()
    page = page_on(server)
    tab = page.open(f"#/run/{RUN}/rollouts/t/{record}")
    drawer = tab.locator("#drawer")
    for payload in PAYLOADS:
        expect(drawer).to_contain_text(payload)
    assert_inert(page, tab)
    tab.click("#drawer .tab[data-tab=timeline]")  # the call's model and the failure's error, in the bars' titles
    expect(drawer.locator(".tl-bar.call").first).to_have_attribute("title", re.compile(re.escape(PAYLOADS[0])))
    expect(drawer.locator(".tl-bar.failure").first).to_have_attribute("title", re.compile(re.escape(PAYLOADS[1])))
    assert_inert(page, tab)
    for name in ("tree", "calls", "json", "chat", "path"):
        tab.click(f"#drawer .tab[data-tab={name}]")
        if name == "tree":
            tab.click('.tree-row[data-node="n1"]')
        if name == "chat":  # every card's text drawn and unfolded: the reply's tool call, the messages
            for fold in drawer.locator("details").all():
                fold.evaluate("d => { d.open = true; }")
            expect(drawer.locator(".chat-call-head strong")).to_have_text(PAYLOADS[0])
            expect(drawer.locator(".chat-card").first).to_contain_text(PAYLOADS[6])
        expect(drawer).to_contain_text(PAYLOADS[0] if name != "json" else "onerror")
        assert_inert(page, tab)
    url = tab.url
    drawer.get_by_text("javascript:alert(5)").first.click()
    drawer.get_by_text("click me").first.click()
    tab.wait_for_timeout(300)  # a handler or a navigation would have happened by now
    assert tab.url.startswith(server.url) and tab.url.split("#")[0] == url.split("#")[0]
    assert_inert(page, tab)
    page.shot(f"hostile-{record}")


def test_hostile_fields_in_tables_and_names_are_inert(temp_server, page_on, hostile_root):
    server = temp_server(hostile_root)
    server.wait_indexed()
    page = page_on(server)
    for view in ("rollouts", "groups"):
        tab = page.open(f"#/run/{RUN}/{view}")
        expect(tab.locator("#main")).to_contain_text("onerror")
        assert_inert(page, tab)
    expect(tab.locator("body")).to_contain_text(ODD_RUN)  # the run's directory name, as text
    assert_inert(page, tab)
    page.shot("hostile-tables")


def test_hostile_text_side_by_side_is_inert(temp_server, page_on, hostile_root):
    """The pair view draws both records' text, differing ranges wrapped in marks, as text."""
    server = temp_server(hostile_root)
    server.wait_indexed()
    page = page_on(server)
    tab = page.tab
    tab.goto(f"{server.url}/#/run/{RUN}/compare?a=tr_hostile_tokens&b=tr_hostile_text")
    view = tab.locator(".pair-view")
    expect(view.locator(".pair-shared")).to_be_visible()
    expect(view.locator(".pair-turns")).to_contain_text(PAYLOADS[0])
    expect(view.locator("mark.diff").first).to_be_visible()
    assert_inert(page, tab)
