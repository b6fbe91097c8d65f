"""A re-tokenized copy on the page: its badge in the Path and Tree tabs opens the model node's tokens
beside the copy's, index by index, the first difference marked where skycap's oracle says; the run's
header counts the copies and filters by them."""

import re
import shutil

from playwright.sync_api import expect

from tests.support.corpus import FIXTURES
from tests.support.oracle import ORACLE

RETOK = ORACLE["retok"]["records"]


def oracle_pair(record: str) -> dict:
    (pair,) = RETOK[record]["retokenized"]
    return {"model": f"n{pair['model_node_id']}", "copy": f"n{pair['copy_node_id']}", "at": pair["first_difference"]}


def piece(node: dict, index: int) -> str:
    offsets = node["token_offsets"]
    return node["text"][offsets[index]:offsets[index + 1]]


def test_the_copy_badge_in_the_path_opens_both_streams_marked_at_the_first_difference(page, corpus_server):
    record = "tr_retok_reasoning_dropped"
    pair = oracle_pair(record)
    nodes = corpus_server.get(f"/v1/trajectories/{record}/paths?run_id=retok")["nodes"]
    sizes = {f"n{node['id']}": node["tokens"] for node in RETOK[record]["node_summary"]}
    tab = page.open(f"#/run/retok/rollouts/t/{record}?path=1")
    badge = tab.locator(f'section.block[data-node="{pair["copy"]}"] .retok-badge')
    expect(badge).to_have_text(f"re-tokenized copy of {pair['model']}")
    badge.click()
    panel = tab.locator(".retok-diff")
    expect(panel).to_be_visible()
    assert re.search(rf"[?&]retok={pair['copy']}(&|$)", page.hash())
    expect(panel.locator(".retok-facts")).to_have_text(
        f"model {pair['model']}: {sizes[pair['model']]} tokens · copy {pair['copy']}: {sizes[pair['copy']]} tokens"
        f" · first difference at token {pair['at']}")
    marked = panel.locator("tr.retok-first")
    expect(marked).to_have_count(1)
    expect(marked).to_have_attribute("data-index", str(pair["at"]))
    model, copy = nodes[pair["model"]], nodes[pair["copy"]]
    cells = marked.locator("td")
    expect(cells.nth(1)).to_have_text(piece(model, pair["at"]))
    expect(cells.nth(2)).to_have_text(str(model["token_ids"][pair["at"]]))
    expect(cells.nth(3)).to_have_text(piece(copy, pair["at"]))
    expect(cells.nth(4)).to_have_text(str(copy["token_ids"][pair["at"]]))
    expect(marked.locator("span.t.diff")).to_have_count(2)
    before = panel.locator(f'tr[data-index="{pair["at"] - 1}"] td')  # the same token on both sides
    expect(before.nth(2)).to_have_text(str(model["token_ids"][pair["at"] - 1]))
    expect(before.nth(4)).to_have_text(str(copy["token_ids"][pair["at"] - 1]))
    expect(panel.locator(".retok-call")).to_contain_text(f"did not reproduce {pair['model']}'s tokens")
    rows = panel.locator("tbody tr")
    assert rows.count() <= 2 * 32 + 1  # a window around the difference, not the whole streams
    page.shot("retokenized-diff")
    tab.reload()  # the open copy is in the URL
    expect(tab.locator(".retok-diff tr.retok-first")).to_have_attribute("data-index", str(pair["at"]))
    tab.locator(".retok-diff .retok-close").click()
    expect(tab.locator(".retok-diff")).to_have_count(0)
    assert "retok=" not in page.hash()


def test_the_copy_badge_in_the_tree_opens_the_streams_without_opening_the_row(page):
    record = "tr_retok_byte_fallback"
    pair = oracle_pair(record)
    tab = page.open(f"#/run/retok/rollouts/t/{record}?tab=tree")
    row = tab.locator(f'.tree-row[data-node="{pair["copy"]}"]')
    row.locator(".retok-badge").click()
    expect(tab.locator(".retok-diff tr.retok-first")).to_have_attribute("data-index", str(pair["at"]))
    expect(row).to_have_attribute("aria-expanded", "false")
    marked = tab.locator(".retok-diff tr.retok-first span.t.diff")
    expect(marked).to_have_text(["B", "B"])  # the byte-fallback token and the canonical one: the same text


def test_a_rollout_without_copies_has_no_badge(page):
    tab = page.open("#/run/real-like/rollouts/t/tr_1ea8573438194800?tab=tree")
    expect(tab.locator(".tree-row").first).to_be_visible()
    expect(tab.locator(".tree-row", has_text="shadowed by")).to_have_count(1)  # shadowed by a model node: no copy
    expect(tab.locator(".retok-badge")).to_have_count(0)


def test_the_run_header_counts_the_copies_and_filters_by_them(page):
    tab = page.open("#/run/retok/rollouts")
    chip = tab.locator(".run-head .retok-chip")
    copies = sum(len(entry["retokenized"]) for entry in RETOK.values())
    copied = sum(1 for entry in RETOK.values() if entry["retokenized"])
    expect(chip).to_have_text(f"{copies} re-tokenized copies in {copied} rollouts")
    chip.click()
    assert "flag=re-tokenized" in page.hash()
    expect(tab.locator("table.rows tbody tr")).to_have_count(copied)
    expect(tab.locator(".band .chip[data-flag=re-tokenized]")).to_have_attribute("data-flag-state", "required")
    page.shot("retokenized-run-chip")
    tab.locator(".run-head .retok-chip").click()
    assert "flag=re-tokenized" not in page.hash()
    expect(tab.locator("table.rows tbody tr")).to_have_count(len(RETOK))
    tab = page.open("#/run/real-like/rollouts")
    expect(tab.locator(".run-head .facts")).to_be_visible()
    expect(tab.locator(".run-head .retok-chip")).to_have_count(0)


def test_a_pasted_link_to_a_copy_without_its_tokens_says_it_cannot_compare(page_over, tmp_path):
    record = "tr_retok_byte_fallback"
    pair = oracle_pair(record)
    run = tmp_path / "mirror"
    run.mkdir()
    for item in (FIXTURES / "retok").glob(f"{record}.*"):
        if not item.name.endswith(".tokens.zst"):  # a mirror that left the tokens out
            shutil.copy(item, run / item.name)
    sizes = {f"n{node['id']}": node["tokens"] for node in RETOK[record]["node_summary"]}
    tab = page_over(run).open(f"#/run/mirror/rollouts/t/{record}?path=1&retok={pair['copy']}")
    panel = tab.locator(".retok-diff")
    expect(panel.locator(".retok-facts")).to_have_text(
        f"model {pair['model']}: {sizes[pair['model']]} tokens · copy {pair['copy']}: {sizes[pair['copy']]} tokens"
        " · not compared: the token ids are not readable")
    expect(panel.locator(".notice")).to_contain_text("first_difference is unknown")
    expect(panel.locator("table")).to_have_count(0)
    expect(tab.locator(f'section.block[data-node="{pair["copy"]}"] .retok-badge')).to_be_visible()
