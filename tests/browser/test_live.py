"""Records that arrive while the page is open (and one rewritten while read deep in its Path or Chat
tab), markup in record text, big rollouts, no records at all."""

import os
import re
import shutil

import pytest
from playwright.sync_api import expect

from tests.browser.tab import arrives
from tests.support.chain_record import write_chain
from tests.support.corpus import FIXTURES
from tests.support.records import copy_record, load_document, write_record

GROUPS_TEXT = FIXTURES / "groups-text"
MARKUP = "<img src=x onerror=alert(1)>"


def test_new_records_appear_without_a_reload_keeping_the_open_group_and_drawer(page_over, tmp_path):
    run = tmp_path / "live"
    run.mkdir()
    first = ["tr_g1a0a0", "tr_g1a1a0", "tr_g1a2a0", "tr_g1a2a1",
             "tr_g1b0a0", "tr_g1b1a0", "tr_g1b2a0", "tr_g1b3a0"]
    every = sorted(p.name.split(".")[0] for p in GROUPS_TEXT.glob("tr_g*.json.zst"))
    later = [record for record in every if record not in first]
    for record in first:
        copy_record(GROUPS_TEXT, record, run)
    page = page_over(run, viewport={"width": 1500, "height": 420})  # short, so the table scrolls
    tab = page.open("#/run/live/groups/t/tr_g1a0a0?open=1~a")
    group = tab.locator('tbody.group[data-key="1~a"]')
    expect(group.locator("tr.sub.rollout-row:not(.superseded)")).to_have_count(3)
    expect(tab.locator("tr.group-row")).to_have_count(2)
    expect(tab.locator("#drawer .traj-id")).to_have_text("tr_g1a0a0")
    tab.locator("#main").evaluate("main => main.scrollTop = 120")
    scrolled = tab.locator("#main").evaluate("main => main.scrollTop")
    assert scrolled > 0
    hash_before = page.hash()

    for record in later:
        copy_record(GROUPS_TEXT, record, run)

    expected = len({(r[4], r[5]) for r in first + later})
    expect(tab.locator("tr.group-row")).to_have_count(expected, timeout=20_000)
    expect(group.locator("tr.sub.rollout-row:not(.superseded)")).to_have_count(4, timeout=20_000)
    expect(tab.locator('tr.group-row[data-key="1~a"] .dot')).to_have_count(4)
    expect(tab.locator("#drawer .traj-id")).to_have_text("tr_g1a0a0")
    expect(tab.locator('#runs a.run[data-run="live"] .count')).to_have_text(str(len(first) + len(later)))
    assert tab.locator("#main").evaluate("main => main.scrollTop") == scrolled
    assert page.hash() == hash_before
    page.shot("live-after")

    document = load_document(run / "tr_g1a0a0.json.zst")  # the open rollout is rewritten
    document["nodes"][1]["message"]["content"] = "answer 0, revised"
    write_record(run, document)
    expect(tab.locator(".block.kind-sampled .text")).to_have_text("answer 0, revised", timeout=20_000)


def test_markup_in_a_record_shows_as_text_and_never_runs(page_over, tmp_path):
    run = tmp_path / "markup"
    run.mkdir()
    document = load_document(GROUPS_TEXT / "tr_g1a0a0.json.zst")
    document["id"] = "tr_markup"
    document["nodes"][0]["message"]["content"] = MARKUP
    document["nodes"][1]["message"]["content"] = f"reply {MARKUP}"
    document["meta"]["task"] = f"/tasks/{MARKUP}"
    write_record(run, document)
    page = page_over(run)
    tab = page.open("#/run/markup/rollouts/t/tr_markup")
    expect(tab.locator(".block.kind-given .text")).to_have_text(MARKUP)
    expect(tab.locator(".block.kind-sampled .text")).to_have_text(f"reply {MARKUP}")
    tab.click("#drawer .tab[data-tab=tree]")
    tab.click('.tree-row[data-node="n0"]')
    expect(tab.locator(".tree-panel pre.text")).to_have_text(MARKUP)
    tab.click("#drawer .tab[data-tab=json]")
    expect(tab.locator("pre.json")).to_contain_text(MARKUP)
    assert tab.locator("img").count() == 0
    tab.wait_for_timeout(300)  # an onerror handler would have fired by now
    assert page.dialogs == []
    page.shot("markup")


def test_a_huge_rollout_opens_and_renders_its_tokens_as_they_come_into_view(page_over, tmp_path):
    from bench.synth import HUGE_ID, huge_rollout

    run = tmp_path / "huge"
    run.mkdir()
    huge_rollout(1).write(run)
    page = page_over(run)
    paths = page.server.get(f"/v1/trajectories/{HUGE_ID}/paths?run_id=huge&text=false")["paths"]
    tab = page.open(f"#/run/huge/rollouts/t/{HUGE_ID}")
    expect(tab.locator(".picker .pick")).to_have_count(len(paths))
    last = max(paths, key=lambda p: p["token_count"])
    tab.click(f'.picker .pick[data-path="{last["index"]}"]')
    blocks = tab.locator(".blocks .block")
    expect(blocks).to_have_count(len(last["blocks"]))
    spans = tab.locator("span.t").count()
    assert spans < last["token_count"], "tokens far from view are plain text until they come near"
    folded = tab.locator(".block.kind-given.collapsed").first  # long prompts start folded
    folded_start = folded.get_attribute("data-start")
    folded.locator("button.fold").click()
    expect(tab.locator(f'.block[data-start="{folded_start}"]')).not_to_have_class(re.compile(r"\bcollapsed\b"))
    characters = tab.locator(".blocks").evaluate("blocks => blocks.textContent.length")
    assert characters >= last["token_count"] // 2  # the text is in the page, so Ctrl+F finds it
    final = blocks.last
    final.scroll_into_view_if_needed()
    arrives(final.locator("span.t"), state="attached")
    final.locator("span.t").last.hover()
    expect(tab.locator("#readout")).to_contain_text(f"#{last['token_count'] - 1}")
    page.shot("huge")


def test_no_records_yet_says_where_they_will_appear(temp_server, page_on, tmp_path):
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    page = page_on(temp_server(empty))
    tab = page.open()
    expect(tab.locator(".empty-state")).to_contain_text("No skycap records found yet")
    expect(tab.locator(".empty-state")).to_contain_text(str(empty))
    expect(tab.locator("#runs")).to_contain_text("no runs yet")
    page.shot("empty")
    shutil.copytree(GROUPS_TEXT, empty / "first-run")
    expect(tab.locator('#runs a.run[data-run="first-run"]')).to_be_visible(timeout=20_000)
    expect(tab.locator("tr.group-row").first).to_be_visible(timeout=20_000)


@pytest.mark.parametrize("tab_name, item", [("chat", ".chat-card"), ("path", "section.block")])
def test_a_record_rewritten_while_read_deep_in_keeps_what_is_read_in_place(page_over, tmp_path, tab_name, item):
    """The poll draws the tab again for the record's new node: what is read stays where it was, though
    what is above it is drawn (a card's body) and sized (`content-visibility`) only as it comes near."""
    write_chain(tmp_path / "long", 3000)
    tab = page_over(tmp_path).open(f"#/run/long/rollouts/t/chain?tab={tab_name}")
    read = f'{item}[data-node="n2001"]'
    card = tab.locator(read)
    arrives(card, state="attached")
    card.scroll_into_view_if_needed()
    arrives(card.locator(".chat-text" if tab_name == "chat" else ".text"))
    top = card.bounding_box()["y"]
    write_chain(tmp_path / "next", 3001)  # one node more, renamed in as skycap writes
    os.replace(tmp_path / "next" / "chain.json.zst", tmp_path / "long" / "chain.json.zst")
    arrives(tab.locator(f'{item}[data-node="n3000"]'), timeout=30_000, state="attached")
    tab.wait_for_function("""([read, top]) => {  // where it was, for ten frames running: settled, not passing by
      const at = document.querySelector(read).getBoundingClientRect().top;
      window.steadyFrames = Math.abs(at - top) < 1 ? (window.steadyFrames || 0) + 1 : 0;
      return window.steadyFrames >= 10;
    }""", arg=[read, top], polling="raf", timeout=10_000)
