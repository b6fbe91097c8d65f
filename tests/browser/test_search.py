"""The record text search on the run page, against the real `/v1/search` over a run of known text.

The run's messages are written here, so every expected match is counted from those texts: a
text-mode record (astral characters before the match, so code points and UTF-16 differ), a long
prompt that starts folded, a token record whose token text wraps the message in a scaffold, and
a record without the word. The page must list exactly those matches, walk them with keys, open
each one marked (on the tokens that hold it in a token record) and scrolled into view, rerun the
search from a reloaded URL, show a bad regex's 400 inline, and stop a search that is still reading.
"""

import re

import pytest
from playwright.sync_api import expect

from tests.support.chain_record import write_chain
from tests.support.records import write_text_record, write_token_record

RUN = "searchable"
SCAFFOLD = "<s>assistant\n"
LONG = "filler words " * 80 + "and a needle at the end of a long prompt"
TEXTS = {  # record -> (user text, reply text), as the messages hold them
    "tr_s_text": ("where is the needle?", "😀😀 The NEEDLE is here, and one more needle."),
    "tr_s_long": (LONG, "no match in this reply"),
    "tr_s_none": ("nothing to see", "nothing at all"),
}
TOKEN_USER = "find a needle in tokens"
TOKEN_REPLY = "🙂 the needle sits in token text"


def expected(word, case=False):
    """(record, node, matched text) of every match of `word` in the run's messages, as written."""
    texts = {**TEXTS, "tr_s_tokens": (TOKEN_USER, TOKEN_REPLY + "</s>")}
    found = []
    for record, pair in texts.items():
        for node, text in zip(("n0", "n1"), pair, strict=True):
            flags = 0 if case else re.IGNORECASE
            found += [(record, node, m.group()) for m in re.finditer(re.escape(word), text, flags)]
    return sorted(found)


@pytest.fixture
def search_page(page_over, tmp_path):
    run = tmp_path / RUN
    run.mkdir()
    for record, (user, reply) in TEXTS.items():
        write_text_record(run, record, user, reply)
    write_token_record(run, "tr_s_tokens", {0: (TOKEN_USER, None), 1: (SCAFFOLD + TOKEN_REPLY + "</s>", len(SCAFFOLD))})
    return page_over(tmp_path)


def listed(tab):
    """(record, node, marked text) of every match the list shows."""
    rows = tab.locator(".matches .match")
    return sorted((row.locator(".match-traj").inner_text(), row.locator(".match-node").inner_text().split(" · ")[0],
                   row.locator(".snippet mark").inner_text()) for row in rows.all())


def search(tab, text):
    box = tab.locator("#record-search")
    box.fill(text)
    box.press("Enter")


IN_VIEW = """(selector) => {
  const target = document.querySelector(selector);
  if (!target) return false;
  const box = document.querySelector('#drawer .drawer-content').getBoundingClientRect();
  const r = target.getBoundingClientRect();
  return r.height > 0 && r.top >= box.top && r.bottom <= box.bottom;
}"""


def in_view(tab, selector):
    """Whether the first element matching `selector` lies inside the drawer's scrolled panel."""
    return tab.evaluate(IN_VIEW, selector)


def open_match(tab, record, node):
    row = tab.locator(".matches .match", has=tab.locator(".match-traj", has_text=record)).filter(
        has=tab.locator(".match-node", has_text=node)).first
    row.locator(".match-traj").click()  # the row's left end: an open drawer covers the right of the page
    expect(tab.locator("#drawer .traj-id")).to_have_text(record)
    expect(tab.locator("#drawer .tab[data-tab=path]")).to_have_attribute("aria-selected", "true")


def test_a_search_lists_the_matches_of_the_records_text_and_a_click_marks_it(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts")
    search(tab, "needle")
    want = expected("needle")
    expect(tab.locator(".search-progress")).to_have_text(f"searched 4 of 4 records · {len(want)} matches")
    assert listed(tab) == want
    assert "search=needle" in search_page.hash()
    open_match(tab, "tr_s_text", "n1")
    marks = tab.locator('#drawer .block[data-node="n1"] mark.hit')
    expect(marks.first).to_have_text(re.compile("^needle$", re.IGNORECASE))
    assert in_view(tab, "#drawer mark.hit")
    search_page.shot("search-text-mark")


def test_a_match_in_a_token_record_marks_the_tokens_that_hold_it(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts?search=needle")
    expect(tab.locator(".matches .match")).to_have_count(len(expected("needle")))
    open_match(tab, "tr_s_tokens", "n1")
    tokens = tab.locator('#drawer .block[data-node="n1"] span.t.hit')
    expect(tokens).to_have_count(len("needle"))  # one token a character in this record
    assert "".join(tokens.all_inner_texts()) == "needle"
    assert in_view(tab, "#drawer span.t.hit")
    open_match(tab, "tr_s_tokens", "n0")
    expect(tab.locator('#drawer .block[data-node="n0"] span.t.hit')).to_have_count(len("needle"))


def test_a_match_in_a_folded_prompt_unfolds_it_and_scrolls_to_it(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts?search=needle")
    expect(tab.locator(".matches .match")).to_have_count(len(expected("needle")))
    open_match(tab, "tr_s_long", "n0")
    block = tab.locator('#drawer .block[data-node="n0"]')
    expect(block).not_to_have_class(re.compile("collapsed"))
    expect(block.locator("mark.hit")).to_have_text("needle")
    tab.wait_for_function(f"() => ({IN_VIEW})('#drawer mark.hit')")


def test_a_match_in_a_hidden_given_block_shows_the_given_blocks_once(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts/t/tr_s_text?search=needle&hide=given")
    given = tab.locator('#drawer input[data-option="given"]')
    expect(given).not_to_be_checked()
    expect(tab.locator(".matches .match")).to_have_count(len(expected("needle")))
    open_match(tab, "tr_s_text", "n0")  # the user's message: a given block
    expect(given).to_be_checked()
    expect(tab.locator('#drawer .block[data-node="n0"] mark.hit')).to_have_text("needle")
    given.uncheck()  # the reader's choice after that stays theirs
    expect(tab.locator('#drawer .block[data-node="n0"]')).to_have_count(0)
    expect(given).not_to_be_checked()


def test_the_match_list_walks_with_keys_and_enter_opens_the_match(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts?search=needle")
    matches = tab.locator(".matches .match")
    expect(matches).to_have_count(len(expected("needle")))
    tab.locator(".matches").focus()
    tab.keyboard.press("j")
    expect(matches.nth(0)).to_have_class(re.compile("current"))
    tab.keyboard.press("j")
    tab.keyboard.press("ArrowDown")
    tab.keyboard.press("k")
    expect(matches.nth(1)).to_have_class(re.compile("current"))
    assert tab.locator("tr.nav.current").count() == 0  # the table's j / k did not move
    record = matches.nth(1).locator(".match-traj").inner_text()
    tab.keyboard.press("Enter")
    expect(tab.locator("#drawer .traj-id")).to_have_text(record)
    expect(tab.locator("#drawer .hit").first).to_be_visible()
    expect(tab.locator(".matches")).to_be_focused()  # so the next match is one key away
    tab.keyboard.press("j")
    tab.keyboard.press("Enter")
    expect(tab.locator("#drawer .traj-id")).to_have_text(matches.nth(2).locator(".match-traj").inner_text())
    tab.locator("body").click(position={"x": 5, "y": 5})
    tab.keyboard.press("?")
    expect(tab.locator("#help")).to_contain_text("in the match list")


def test_a_reload_reruns_the_search_with_its_options_from_the_url(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts")
    search(tab, "needle")
    tab.locator('.record-search input[data-option="scase"]').check()
    want = expected("needle", case=True)
    expect(tab.locator(".search-progress")).to_have_text(f"searched 4 of 4 records · {len(want)} matches")
    tab.locator('.record-search select[data-option="srole"]').select_option("assistant")
    want = [m for m in want if m[1] == "n1"]
    expect(tab.locator(".search-progress")).to_have_text(f"searched 4 of 4 records · {len(want)} matches")
    assert "scase=1" in search_page.hash() and "srole=assistant" in search_page.hash()
    tab.reload()
    expect(tab.locator(".search-progress")).to_have_text(f"searched 4 of 4 records · {len(want)} matches")
    assert listed(tab) == want
    expect(tab.locator("#record-search")).to_have_value("needle")
    expect(tab.locator('.record-search input[data-option="scase"]')).to_be_checked()


def test_the_search_runs_inside_the_filters(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts?q=tr_s_text&search=needle")
    want = [m for m in expected("needle") if m[0] == "tr_s_text"]
    expect(tab.locator(".search-progress")).to_have_text(f"searched 1 of 1 record · {len(want)} matches")
    assert listed(tab) == want


def test_a_bad_regex_shows_the_servers_reason(search_page):
    tab = search_page.open(f"#/run/{RUN}/rollouts")
    tab.locator('.record-search input[data-option="sre"]').check()
    search(tab, "needle(")
    expect(tab.locator(".search-error")).to_be_visible()
    expect(tab.locator(".search-error")).to_contain_text("bad regex: missing ), unterminated subpattern")
    expect(tab.locator(".matches .match")).to_have_count(0)
    search(tab, "ne+dle")
    expect(tab.locator(".search-error")).to_have_count(0)
    expect(tab.locator(".matches .match")).to_have_count(len(expected("needle")))
    bad_request = [e for e in search_page.errors if "status of 400" in e]
    assert len(bad_request) == 1  # the browser logs the 400 the page asked for; nothing else failed
    search_page.errors.remove(bad_request[0])


def test_stop_stops_a_search_that_is_still_reading(page_over, tmp_path):
    run = tmp_path / "slow"
    run.mkdir()
    for i in range(8):  # each takes the search's full per-document deadline (2 s) on this regex
        write_text_record(run, f"tr_slow_{i}", "a" * 40 + "!", "nothing")
    page = page_over(tmp_path)
    asked = []
    page.tab.on("request", lambda request: "/v1/search" in request.url and asked.append(request.url))
    tab = page.open("#/run/slow/rollouts?sre=1")
    search(tab, "(a+)+$")
    stop = tab.locator('.record-search button[data-option="stop"]')
    expect(stop).to_be_visible()
    expect(tab.locator(".search-progress")).to_contain_text("of 8 records", timeout=5000)
    stop.click()
    expect(stop).to_be_hidden()
    expect(tab.locator(".search-progress")).to_contain_text("stopped")
    tab.wait_for_timeout(2500)  # the page that was coming when Stop was pressed has come
    assert any("cancel=true" in url for url in asked)
    count = len(asked)
    assert "searched 8 of 8" not in tab.locator(".search-progress").inner_text()
    tab.wait_for_timeout(3000)
    assert len(asked) == count  # no more polling after the cancel


def test_a_match_in_a_later_part_of_a_huge_record_is_fetched_marked_and_shown(page_over, tmp_path):
    write_chain(tmp_path / "long", 12_000)  # /paths sends 5000 nodes a part: node 11998 is in the third
    page = page_over(tmp_path / "long")
    tab = page.open("#/run/long/rollouts?search=turn%2011998")
    expect(tab.locator(".search-progress")).to_have_text("searched 1 of 1 record · 1 match", timeout=30_000)
    tab.locator(".matches .match .match-traj").click()
    # a page-side wait: a Playwright locator polled over 12,000 blocks starved the page's own loading here
    tab.wait_for_function("() => document.querySelector('#drawer .block[data-node=\"n11998\"] mark.hit')?.textContent"
                          " === 'turn 11998'", timeout=60_000)
    tab.wait_for_function(f"() => ({IN_VIEW})('#drawer mark.hit')")


def sampled_as_written(document):
    """The model's reply as skycap parses it: a tool call, where its tokens say `CALL:search:{}`."""
    document["nodes"][1]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}


def test_the_search_finds_what_the_path_tab_shows_and_says_what_it_searched(page_over, tmp_path):
    run = tmp_path / RUN
    run.mkdir()
    write_token_record(run, "tr_s_call", {0: ("look it up", None), 1: (SCAFFOLD + "CALL:search:{}</s>", len(SCAFFOLD))},
                       sampled_as_written)
    tab = page_over(tmp_path).open(f"#/run/{RUN}/rollouts")
    expect(tab.locator(".search-what")).to_contain_text("decoded tokens")
    search(tab, "CALL:search")
    expect(tab.locator(".search-progress")).to_have_text("searched 1 of 1 record · 1 match")
    expect(tab.locator(".match-node")).to_have_text("n1 · assistant · tokens")
    open_match(tab, "tr_s_call", "n1")
    marked = tab.locator('#drawer .block[data-node="n1"] span.t.hit')
    expect(marked).to_have_count(len("CALL:search"))
    assert "".join(marked.all_inner_texts()) == "CALL:search"

    tab.locator('.record-search select[data-option="sin"]').select_option("message")
    expect(tab.locator(".search-what")).to_contain_text("message text")
    expect(tab.locator(".search-progress")).to_have_text("searched 1 of 1 record · 0 matches")
    search(tab, "search({})")
    expect(tab.locator(".match-node")).to_have_text("n1 · assistant · message")
    assert "sin=message" in tab.evaluate("location.hash")
    open_match(tab, "tr_s_call", "n1")  # the message's form is not in the tokens: its blocks are marked
    expect(tab.locator('#drawer .block[data-node="n1"].hit-block').first).to_be_visible()
