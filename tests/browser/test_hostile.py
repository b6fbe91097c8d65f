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

from tests.badrecords import write_text_record, write_token_record

PAYLOADS = [
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    "<script>window.__pwned=2;alert(2)</script>",
    '<a href="javascript:window.__pwned=3;alert(3)">click me</a>',
    "[a link](javascript:window.__pwned=4)",
    "javascript:alert(5)",
    "<svg onload=alert(6)><iframe src=javascript:alert(7)>",
    "&lt;b&gt;not bold&lt;/b&gt; &amp;",
]
HOSTILE = " ".join(PAYLOADS)
DANGEROUS = ("img, iframe, object, embed, svg image, [onerror], [onload], [onclick], "
             "a[href^='javascript'], a[href^=' javascript'], form, base, meta[http-equiv]")
SCAFFOLD = "<s>assistant\n"
RUN = "hostile"
ODD_RUN = "<img src=x onerror=alert(9)>"


def dress_up(document):
    """Markup wherever the tables, tree, calls and JSON tabs show record fields."""
    document["meta"] = {"task": f"/tasks/{PAYLOADS[0]}", "instance_id": PAYLOADS[1], "step": 1,
                        "repetition_id": 0}
    document["annotations"] = {"reward": 1, "stop_reason": PAYLOADS[2], PAYLOADS[5]: PAYLOADS[3]}
    document["failures"] = [{"t": 1.0, "status": 500, "error": HOSTILE, "input_leaf": None}]
    call = document["nodes"][1]["calls"][0]
    call.update(model=PAYLOADS[0], finish_reason=PAYLOADS[4])
    document["nodes"][1]["message"]["tool_calls"] = [
        {"id": PAYLOADS[1], "type": "function", "function": {"name": PAYLOADS[0], "arguments": HOSTILE}}]


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    (root / RUN).mkdir()
    texts = {0: (f"<s>user\n{HOSTILE}</s>\n", None), 1: (f"{SCAFFOLD}{HOSTILE}</s>", len(SCAFFOLD))}
    write_token_record(root / RUN, "tr_hostile_tokens", texts, edit=dress_up)
    write_text_record(root / RUN, "tr_hostile_text", HOSTILE, f"reply {HOSTILE}", edit=dress_up)
    (root / RUN / 'tr_x"><img src=x onerror=alert(10)>.json.zst').write_bytes(b"not a record")
    (root / ODD_RUN).mkdir()
    write_text_record(root / ODD_RUN, "tr_odd_run", "plain", "plain")
    return root


def assert_inert(page, tab):
    """Nothing in the page was made from record text, and nothing ran."""
    assert tab.evaluate("typeof window.__pwned") == "undefined"
    made = tab.locator(DANGEROUS).evaluate_all(  # but index.html's own policy, the first in the head
        "nodes => nodes.filter(n => n !== document.head.querySelector('meta[http-equiv]'))"
        ".map(n => n.outerHTML.slice(0, 120))")
    assert made == []
    scripts = tab.evaluate("[...document.scripts].map(s => s.src || 'inline: ' + s.textContent.slice(0, 60))")
    assert all(src.startswith(page.server.url) for src in scripts), scripts
    assert page.dialogs == []


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
