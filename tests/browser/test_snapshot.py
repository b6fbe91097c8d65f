"""A rollout's snapshot opened from disk (file://) in headless Chromium with every request refused.

The file comes from the real server (`/snapshot`) or from `show --html`, is written to a temporary
directory and opened from there, as on a machine that never saw the viewer: every request but the
file itself is aborted and recorded (there must be none), and any console error (a CSP violation
logs one) or page error fails the test. Driven by clicking and hovering, as a reader would.
"""

import re
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.browser.hostile_text import HOSTILE, PAYLOADS, SCAFFOLD, dress_up
from tests.browser.rollout_checks import Answers, check_rollout, check_tab_keys
from tests.browser.snapshot_files import Offline, saved, served
from tests.browser.tab import downloaded
from tests.support.chain_record import write_chain
from tests.support.corpus import FIXTURES
from tests.support.records import write_text_record, write_token_record

FORKED = "tr_86f0b750382298e2"


@pytest.fixture
def offline(browser):
    opened = []

    def open_file(file):
        page = Offline(browser, file)
        opened.append(page)
        return page

    yield open_file
    for page in opened:
        page.context.close()


def test_a_forked_rollout_opens_offline_on_its_path_and_shows_what_the_drawer_shows(corpus_server, offline, tmp_path):
    page = offline(saved(tmp_path, FORKED, served(corpus_server, FORKED, "?run_id=real-like&path=2")))
    tab = page.tab
    expect(tab.locator("#snapshot .made-by")).to_contain_text("in one file that fetches nothing")
    expect(tab.locator("button.pick.active")).to_have_attribute("data-path", "2")  # the state it was asked for
    assert tab.locator("section.block").first.evaluate("e => getComputedStyle(e).display") == "grid"  # its hash matched
    page.shot("snapshot-forked-path-2")
    check_rollout(tab.locator("#snapshot"), Answers.of(corpus_server, FORKED, "real-like"), path=0)
    tab.click('button.tab[data-tab="path"]')
    tab.check('input[data-option="logprobs"]')
    expect(tab.locator("section.block.kind-sampled .t.lp-0").first).to_be_visible()
    tab.click('button.tab[data-tab="tree"]')
    page.shot("snapshot-forked-tree")
    tab.click('button.tab[data-tab="calls"]')
    page.shot("snapshot-forked-calls")
    page.check()


def test_a_text_record_opens_on_its_tab_with_its_text(corpus_server, offline, tmp_path):
    record = "tr_e9a50d7c21a4ff0b"
    page = offline(saved(tmp_path, record, served(corpus_server, record, "?path=1&tab=calls")))
    tab = page.tab
    expect(tab.locator("button.tab.active")).to_have_attribute("data-tab", "calls")
    tab.click('button.tab[data-tab="path"]')
    expect(tab.locator("button.pick.active")).to_have_attribute("data-path", "1")
    expect(tab.locator('[data-fact="mode"] dd')).to_have_text("text")
    expect(tab.locator(".blocks .t")).to_have_count(0)  # characters, no tokens
    expect(tab.locator('input[data-option="logprobs"]')).to_have_count(0)
    tab.check('input[data-option="controls"]')
    expect(tab.locator(".blocks")).to_contain_text("résultat: 42 ✓")
    expect(tab.locator(".blocks section.block").first.locator(".text")).not_to_be_empty()
    page.shot("snapshot-text")
    page.check()


def test_hostile_text_stays_text_in_every_tab(offline, tmp_path):
    run = tmp_path / "hostile"
    run.mkdir()
    texts = {0: (f"<s>user\n{HOSTILE}</s>\n", None), 1: (f"{SCAFFOLD}{HOSTILE}</s>", len(SCAFFOLD))}
    write_token_record(run, "tr_hostile_tokens", texts, edit=dress_up)
    write_text_record(run, "tr_hostile_text", HOSTILE, f"reply {HOSTILE}", edit=dress_up)
    for record in ("tr_hostile_tokens", "tr_hostile_text"):
        shown = subprocess.run([sys.executable, "-m", "skycap_viewer", "show", str(run / record), "--html"],
                               capture_output=True, timeout=120, check=True)
        page = offline(saved(tmp_path, record, shown.stdout))
        tab = page.tab
        content = tab.locator(".snapshot-content")
        for payload in PAYLOADS:
            expect(content).to_contain_text(payload)
        expect(tab.locator(".drawer-head")).to_contain_text(PAYLOADS[0])  # the task
        tab.click('button.tab[data-tab="tree"]')
        tab.click('.tree-row[data-node="n1"]')
        expect(tab.locator(".tree-panel")).to_contain_text(PAYLOADS[1])
        tab.click('button.tab[data-tab="calls"]')
        calls = tab.locator("table.calls")
        expect(calls).to_contain_text(PAYLOADS[4])  # the finish reason; the model and the failure's error, as titles:
        assert PAYLOADS[0] in calls.locator("td[title]").evaluate_all("cells => cells.map(cell => cell.title)")
        expect(calls.locator("tr.failure .badge")).to_have_attribute("title", HOSTILE)
        page.shot(f"snapshot-{record}")
        page.check()


def test_a_huge_record_opens_cut_and_says_so(offline, tmp_path):
    write_chain(tmp_path / "chain", 30_000)
    shown = subprocess.run([sys.executable, "-m", "skycap_viewer", "show", str(tmp_path / "chain" / "chain"), "--html"],
                           capture_output=True, timeout=120, check=True)
    page = offline(saved(tmp_path, "chain", shown.stdout))
    tab = page.tab
    expect(tab.locator(".notice.cut")).to_contain_text("of this path (2,000 of its 30,000 nodes)")
    expect(tab.locator(".blocks section.block")).to_have_count(2000)
    tab.click('button.tab[data-tab="tree"]')
    cut = "cut: this snapshot holds the first 2,000 of the 30,000 nodes of the tree"
    expect(tab.locator(".notice.cut")).to_have_text(cut)
    expect(tab.locator(".tree-row")).to_have_count(2000)
    tab.click('button.tab[data-tab="calls"]')
    expect(tab.locator(".notice.cut")).to_have_text("cut: this snapshot holds the first 1,000 of the 15,000 calls")
    page.shot("snapshot-chain-calls")
    page.check()


def test_the_fixture_corpus_records_open_without_an_error(corpus_server, offline, tmp_path):
    """Records whose tokens are not here or damaged, with no node, no text, an empty token, images, masks."""
    cases = (("broken", "tr_missing_tokens"), ("broken", "tr_misaligned"), ("spec", "tr_empty"),
             ("spec", "tr_tokens"), ("spec", "tr_notext"), ("spec", "tr_media"), ("masks", "tr_mask_forced"),
             ("broken", "tr_mask_out_of_range"))
    for directory, record in cases:
        assert (FIXTURES / directory / f"{record}.json.zst").exists()
        page = offline(saved(tmp_path, record, served(corpus_server, record, f"?run_id={directory}")))
        for name in ("tree", "calls", "path"):
            page.tab.click(f'button.tab[data-tab="{name}"]')
            expect(page.tab.locator(".snapshot-content")).not_to_be_empty()
        if record == "tr_media":  # its images: labelled on their node's first block, placeholder tokens framed
            expect(page.tab.locator(".gutter .media-item")).to_have_text(
                ["image · cat · 3 tokens", "image · dog · 2 tokens", "image · cat · 3 tokens"])
            expect(page.tab.locator(".t.media")).to_have_count(8)
            page.tab.locator(".t.media-first").first.hover()
            expect(page.tab.locator(".readout")).to_contain_text("placeholder of image · cat · 3 tokens")
            page.shot("snapshot-media")
        page.check()


def test_the_drawers_snapshot_link_saves_the_file_of_the_path_and_tab_shown(page, offline, tmp_path):
    """Opened on the Tree of path 2, the drawer's `snapshot` link saves the file that opens there,
    offline; on a tab the file has not (Timeline), it opens on the Path."""
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=tree&path=2")
    link = tab.locator("#drawer a[data-link=snapshot]")
    expect(link).to_be_visible()
    name, body = downloaded(tab, link)
    assert name == f"{FORKED}.html"
    file = saved(tmp_path, "from-the-drawer", body)
    opened = offline(file)
    expect(opened.tab.locator('button.tab[data-tab="tree"]')).to_have_class(re.compile(r"\bactive\b"))
    opened.tab.click('button.tab[data-tab="path"]')
    expect(opened.tab.locator("button.pick.active")).to_have_attribute("data-path", "2")
    opened.check()
    tab.click("#drawer button[data-tab=timeline]")
    expect(link).to_have_attribute("href", re.compile(r"tab=path"))
    assert page.errors == []


def test_the_chat_tab_of_a_snapshot_reads_offline(corpus_server, offline, tmp_path):
    record = "tr_75f4b514aac0a32f"  # a tool call and its result
    page = offline(saved(tmp_path, record, served(corpus_server, record, "?run_id=real-like&tab=chat")))
    tab = page.tab
    expect(tab.locator("button.tab.active")).to_have_attribute("data-tab", "chat")
    messages = corpus_server.get(f"/v1/trajectories/{record}/paths/0/messages?run_id=real-like")
    cards = tab.locator(".chat-card")
    expect(cards).to_have_count(len(messages["messages"]))
    expect(tab.locator('.chat-card[data-node="n2"] .chat-call-head strong')).to_have_text("search")
    tab.locator('.chat-card[data-node="n2"] .chat-jump').click()
    expect(tab.locator('.chat-card[data-node="n3"]')).to_have_class(re.compile("node-selected"))
    expect(tab.locator('.chat-card[data-node="n2"] .chat-facts')).to_contain_text("trained on this path")
    page.shot("snapshot-chat")
    tab.locator('.chat-card[data-node="n4"] .node-link').click()  # its node, in the file's Path tab
    expect(tab.locator("button.tab.active")).to_have_attribute("data-tab", "path")
    page.check()


def test_the_snapshot_tabs_are_the_drawers_tab_bar_the_arrows_walk(corpus_server, offline, tmp_path):
    page = offline(saved(tmp_path, FORKED, served(corpus_server, FORKED, "?run_id=real-like")))
    check_tab_keys(page.tab, "#snapshot", "snapshot-tab", "snapshot-panel", ["path", "chat", "tree", "calls"])
    page.check()
