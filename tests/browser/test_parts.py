"""A record too big for one answer, read as a reader would: opened from its run's table, its Tree
and Path tabs scrolled to the end, and later nodes arriving in the next parts (the Path tab's after
the blocks it drew, which stay as they were)."""

from playwright.sync_api import expect

from tests.browser.tab import arrives, scroll_to_the_end

WAIT = 120_000  # ms: the server reads 30k nodes for the first parts while the page polls (slow on a loaded machine)


def test_scrolling_the_tree_and_the_path_brings_later_nodes(page_on, chain_server):
    tab = page_on(chain_server).open("#/run/long/rollouts")
    tab.set_default_timeout(WAIT)  # laying out 10,000 more rows holds the page's script for seconds on a loaded machine
    tab.locator("tr.rollout-row", has_text="chain").click()
    arrives(tab.locator("button[data-tab=tree]"), timeout=WAIT)  # the server reads 30k nodes first
    tab.locator("button[data-tab=tree]").click()  # CSS, not roles: an accessibility query over 5000 rows is slow
    rows = tab.locator(".tree-row")
    arrives(rows)
    expect(tab.locator(".tree-tab > p.muted").first).to_contain_text("30,000 nodes")
    more = tab.locator("button.more")
    expect(more).to_have_text("5,000 of 30,000 nodes shown · show more")
    expect(tab.locator('.tree-row[data-node="n5000"]')).to_have_count(0)
    scroll_to_the_end(tab)
    expect(tab.locator('.tree-row[data-node="n5000"]')).to_have_count(1, timeout=WAIT)
    expect(more).to_contain_text("of 30,000 nodes shown")
    before = rows.count()
    more.click()  # the row is a button too
    expect(rows).not_to_have_count(before, timeout=WAIT)

    tab.locator("button[data-tab=path]").click()
    expect(tab.locator('.block[data-node="n4999"]')).to_have_count(1, timeout=WAIT)
    expect(tab.locator('.block[data-node="n5001"]')).to_have_count(0)
    expect(tab.locator("button.more")).to_have_text("5,000 of 30,000 nodes shown · show more")
    first = tab.locator('.block[data-node="n0"]')
    first.evaluate("block => { block.dataset.drawnFirst = 'yes'; }")
    scroll_to_the_end(tab)
    later = tab.locator('.block[data-node="n5001"]')
    expect(later).to_have_count(1, timeout=WAIT)
    expect(later).to_contain_text("turn 5001")
    expect(first).to_have_attribute("data-drawn-first", "yes")  # the same element: the part came after it
    expect(tab.locator("button[data-tab=calls]")).to_have_text("Calls 15000")  # the record's count, not the rows loaded
