"""Find in a rollout and its notable tokens, in real Chromium: typing, stepping, clicking, keys."""

import re

from playwright.sync_api import expect

from tests.browser.tab import arrives

HIGHLIGHT = "() => { const h = CSS.highlights.get('find-hit'); return h && h.size ? [...h][0].toString() : null; }"


def needle_record(run):
    """A long prompt (folded on the page) with a hit near its end, and two replies with hits."""
    from skycap_viewer.demo.writer import RecordBuilder

    builder = RecordBuilder("tr_find", "tokens")
    user = builder.add_client(None, "user", "lorem ipsum dolor " * 60 + "the NEEDLE is here")
    reply = builder.add_model(user, "a needle again")
    later = builder.add_model(builder.add_client(reply, "user", "go on"), "last Needle", finish_reason="length")
    builder.write(run)
    return user, reply, later


def test_find_unfolds_a_folded_block_and_steps_through_the_hits(page_over, tmp_path):
    run = tmp_path / "find"
    run.mkdir()
    user, reply, later = needle_record(run)
    tab = page_over(run).open("#/run/find/rollouts/t/tr_find?tab=path")
    folded = tab.locator(f'.block.kind-given[data-node="n{user}"]')
    expect(folded).to_have_class(re.compile(r"\bcollapsed\b"))
    tab.locator("#drawer .traj-id").focus()
    tab.keyboard.press("f")
    box = tab.locator("#find-input")
    expect(box).to_be_focused()
    box.press_sequentially("needle")
    count = tab.locator(".find-count")
    expect(count).to_have_text("1 of 3")
    expect(folded).not_to_have_class(re.compile(r"\bcollapsed\b"))  # the hit's block unfolded
    assert "needle" in tab.evaluate(HIGHLIGHT).lower()
    assert tab.evaluate("() => [...CSS.highlights.get('find-hit')][0].startContainer.parentElement"
                        ".closest('section.block').dataset.node") == f"n{user}"
    box.press("Enter")
    expect(count).to_have_text("2 of 3")
    where = "() => [...CSS.highlights.get('find-hit')][0].startContainer.closest?.('section.block')?.dataset.node"
    assert tab.evaluate(where) == f"n{reply}"
    assert "needle" in tab.evaluate(HIGHLIGHT).lower()
    box.press("Enter")
    expect(count).to_have_text("3 of 3")
    assert tab.evaluate(where) == f"n{later}"
    box.press("Enter")
    expect(count).to_have_text("1 of 3")  # wraps
    box.press("Shift+Enter")
    expect(count).to_have_text("3 of 3")
    tab.click(".find-bar button[data-find=previous]")
    expect(count).to_have_text("2 of 3")
    box.fill("no such thing")
    expect(count).to_have_text("no match")
    box.press("Escape")
    expect(tab.locator(".find-bar")).to_have_count(0)
    expect(tab.locator("#drawer")).to_be_visible()  # Esc in the bar closes the bar, not the drawer
    tab.locator(".block").first.click()
    tab.keyboard.press("Control+f")
    expect(box).to_be_focused()
    expect(count).to_have_text("no match")


def test_find_opens_the_tree_node_that_holds_the_hit(page_over, tmp_path):
    run = tmp_path / "find"
    run.mkdir()
    _, reply, _ = needle_record(run)
    tab = page_over(run).open("#/run/find/rollouts/t/tr_find?tab=tree")
    expect(tab.locator(".tree-panel")).to_have_count(0)
    tab.locator("#drawer .traj-id").focus()
    tab.keyboard.press("f")
    tab.locator("#find-input").press_sequentially("again")
    expect(tab.locator(".find-count")).to_have_text("1 of 1")
    expect(tab.locator(f'.tree-row[data-node="n{reply}"]')).to_have_attribute("aria-expanded", "true")
    assert tab.evaluate(HIGHLIGHT).lower() == "again"


def test_notable_links_and_keys_land_on_the_token(page_over, tmp_path):
    run = tmp_path / "find"
    run.mkdir()
    needle_record(run)
    page = page_over(run)
    answer = page.server.get("/v1/trajectories/tr_find/notable?run_id=find")
    items = answer["items"]
    assert items[0]["kind"] == "length-cut" and any(i["kind"] == "lowest-logprob" for i in items)
    tab = page.open("#/run/find/rollouts/t/tr_find?tab=path")
    panel = tab.locator("details.notable")
    panel.locator("summary").click()
    expect(panel.locator("summary")).to_have_text(f"Notable tokens {len(items)}")
    legend = panel.locator(".lp-legend")
    expect(legend.locator(".t")).to_have_count(6)  # five bands and unknown
    expect(legend).to_contain_text("likely")
    expect(legend).to_contain_text("unlikely")

    def current(item):
        block = tab.locator(f'section.block[data-node="{item["node_id"]}"]')
        token = block.locator(f'span.t[data-i="{item["token_index"]}"]')
        expect(token).to_have_class(re.compile(r"\bnotable-current\b"))
        expect(tab.locator(".notable-current")).to_have_count(1)
        expect(token).to_be_in_viewport()

    lowest = next(i for i, item in enumerate(items) if item["kind"] == "lowest-logprob")
    panel.locator(f'button.notable-item[data-notable="{lowest}"]').click()
    current(items[lowest])
    tab.locator("#drawer .traj-id").focus()
    tab.keyboard.press("n")
    current(items[(lowest + 1) % len(items)])
    tab.keyboard.press("N")
    tab.keyboard.press("N")
    current(items[lowest - 1])
    expect(panel.locator(".notable-status")).to_contain_text(items[lowest - 1]["why"])


def test_find_in_the_forks_tab_highlights_a_block_of_the_comparison(page, corpus_server):
    record = "tr_86f0b750382298e2"
    fork = corpus_server.get(f"/v1/trajectories/{record}/forks?run_id=real-like&a=0&b=1")
    paths = corpus_server.get(f"/v1/trajectories/{record}/paths?run_id=real-like")
    block = fork["b_blocks"][-1]
    node = paths["nodes"][block["node_id"]]
    offsets = node["token_offsets"]
    word = node["text"][offsets[block["node_start"]]:offsets[block["node_end"]]].split()[0]
    tab = page.open(f"#/run/real-like/rollouts/t/{record}?tab=forks&fa=0&fb=1")
    expect(tab.locator(".block").first).to_be_visible()
    tab.locator("#drawer .traj-id").focus()
    tab.keyboard.press("f")
    tab.locator("#find-input").press_sequentially(word.upper())
    expect(tab.locator(".find-count")).to_contain_text(re.compile(r"^1 of \d+"))
    assert word.lower() in tab.evaluate(HIGHLIGHT).lower()


def test_find_in_a_record_loaded_in_parts_says_how_much_it_searched(page_on, chain_server):
    tab = page_on(chain_server).open("#/run/long/rollouts")
    tab.locator("tr.rollout-row", has_text="chain").click()
    arrives(tab.locator(".block"), timeout=120_000)  # the server reads 30k nodes first
    tab.locator("#drawer .traj-id").focus()
    tab.keyboard.press("f")
    tab.locator("#find-input").fill("turn 4999")
    expect(tab.locator(".find-count")).to_contain_text("(in the 5,000 of 30,000 nodes loaded)")
    expect(tab.locator(".find-count")).to_contain_text(re.compile(r"^1 of \d+"))
