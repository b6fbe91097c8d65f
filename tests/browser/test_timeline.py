"""The drawer's Timeline tab: calls as bars on lanes, failures at their time, idle spans, calls
without time listed; a bar selects its node in Path and Tree, and the tab and node are in the URL."""

from playwright.sync_api import expect

from tests.browser.tab import scroll_to_the_end
from tests.support.chain_record import write_chain
from tests.support.timeline_record import RECORD, write_timeline_record

FORKED = "tr_86f0b750382298e2"  # real-like: two roots, five paths


def test_the_timeline_draws_every_call_on_its_roots_lane_and_a_bar_selects_its_node(page, corpus_server):
    timeline = corpus_server.get(f"/v1/trajectories/{FORKED}/timeline?run_id=real-like")
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}")
    tab.click("#drawer .tab[data-tab=timeline]")
    assert "tab=timeline" in page.hash()
    bars = tab.locator(".timeline .tl-bar.call")
    expect(bars).to_have_count(timeline["call_count"])
    lanes = tab.locator(".timeline .tl-lane[data-lane]:not([data-lane=idle])")
    expect(lanes).to_have_count(len(timeline["lanes"]))
    for lane in timeline["lanes"]:
        on_lane = [item["node_id"] for item in timeline["data"] if item["lane"] == lane["lane"]]
        drawn = tab.locator(f'.tl-lane[data-lane="{lane["lane"]}"] .tl-bar')
        expect(drawn).to_have_count(len(on_lane))
        assert [drawn.nth(i).get_attribute("data-node") for i in range(len(on_lane))] == on_lane
        label = tab.locator(f'.tl-lane[data-lane="{lane["lane"]}"] .tl-label')
        expect(label).to_contain_text(f"root {lane['root_node_id']}")
    expect(tab.locator(".tl-idle .tl-gap")).to_have_count(timeline["gap_count"])
    last = timeline["data"][-1]  # the subagent's call: on the second root's lane
    assert last["lane"] == 1
    bar = tab.locator(f'.tl-bar[data-node="{last["node_id"]}"]')
    expect(bar).to_have_attribute(
        "title", f'{last["node_id"]} · policy · finish stop · bridged false · 1.2 ms · started {last["started_at"]}')
    bar.click()
    expect(bar).to_have_class("tl-bar call unbridged node-selected")
    assert f"node={last['node_id']}" in page.hash() and f"path={last['path']}" in page.hash()
    expect(tab.locator(".tl-selection")).to_contain_text(f"selected {last['node_id']}")
    page.shot("timeline-forked")

    tab.click(".tl-selection [data-show=path]")
    expect(tab.locator("#drawer .tab[data-tab=path]")).to_have_attribute("aria-selected", "true")
    expect(tab.locator(f'.picker .pick[data-path="{last["path"]}"]')).to_have_attribute("aria-selected", "true")
    selected = tab.locator(".path-tab .block.node-selected")
    expect(selected.first).to_be_visible()
    assert {selected.nth(i).get_attribute("data-node") for i in range(selected.count())} == {last["node_id"]}

    tab.click("#drawer .tab[data-tab=tree]")
    row = tab.locator(".tree-row.node-selected")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-node", last["node_id"])
    expect(row).to_have_attribute("aria-expanded", "true")  # its panel open

    tab.reload()  # the URL alone brings the selection back
    tab.wait_for_selector(".tree-row.node-selected")
    tab.click("#drawer .tab[data-tab=timeline]")
    expect(tab.locator(f'.tl-bar.node-selected[data-node="{last["node_id"]}"]')).to_be_visible()


def test_overlapping_calls_take_sub_lanes_a_failure_sits_at_its_time_and_a_call_without_time_is_listed(page_over,
                                                                                                       tmp_path):
    run = tmp_path / "overlap"
    run.mkdir()
    ids = write_timeline_record(run)
    page = page_over(run)
    tab = page.open(f"#/run/overlap/rollouts/t/{RECORD}?tab=timeline")
    main = tab.locator('.tl-lane[data-lane="0"]')
    expect(main.locator(".tl-bar")).to_have_count(3)
    long_bar = main.locator(f'.tl-bar[data-node="n{ids["long"]}"]')
    short_bar = main.locator(f'.tl-bar[data-node="n{ids["short"]}"]')
    assert long_bar.bounding_box()["y"] != short_bar.bounding_box()["y"]  # same start, one above the other
    assert abs(long_bar.bounding_box()["x"] - short_bar.bounding_box()["x"]) < 1
    sub = tab.locator('.tl-lane[data-lane="1"]')
    expect(sub.locator(".tl-label")).to_contain_text(f"root n{ids['sub_root']}")
    expect(sub.locator(".tl-bar")).to_have_attribute("data-node", f"n{ids['sub']}")
    failure = tab.locator(".tl-bar.failure")
    expect(failure).to_have_count(1)
    expect(failure).to_have_attribute(
        "title", "failed call · status 504 · no node · started 2026-09-21T14:13:30.000Z\nupstream timeout")
    expect(tab.locator('.tl-lane[data-lane="2"] .tl-label')).to_contain_text("no node")
    gap = tab.locator(".tl-idle .tl-gap")
    expect(gap).to_have_count(1)
    expect(gap).to_have_text("idle 15.0 s")
    track = tab.locator('.tl-lane[data-lane="0"] .tl-track').bounding_box()
    gap_box, failure_box = gap.bounding_box(), failure.bounding_box()
    assert abs(gap_box["x"] - (track["x"] + track["width"] * 5 / 21)) < 2  # idle from 5 s of the 21 s span
    assert gap_box["x"] < failure_box["x"] + failure_box["width"] / 2 < gap_box["x"] + gap_box["width"]
    listed = tab.locator(".tl-no-time li")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text(f"call n{ids['untimed']}: t_end is not a time")
    expect(tab.locator(f'.timeline [data-node="n{ids["untimed"]}"]')).to_have_count(0)  # not drawn at 0
    expect(tab.locator(".timeline-tab > p.muted").first).to_contain_text("1 without time")
    page.shot("timeline")
    listed.locator("button").click()
    assert f"node=n{ids['untimed']}" in page.hash()


def test_a_timeline_of_more_calls_than_a_part_draws_one_part_until_asked(page_over, tmp_path):
    write_chain(tmp_path / "long", 12_000)  # 6,000 calls: two parts
    page = page_over(tmp_path / "long")
    tab = page.open("#/run/long/rollouts/t/chain?tab=timeline")
    bars = tab.locator(".tl-bar")
    expect(bars).to_have_count(5000, timeout=60_000)
    more = tab.locator("button.more[data-more=calls]")
    expect(more).to_have_text("5,000 of 6,000 calls shown · show more")
    scroll_to_the_end(tab)
    expect(bars).to_have_count(5000)  # in sight, the row is not clicked for the reader: the drawing stays bounded
    more.click(timeout=60_000)  # the page is busy drawing 5,000 bars on a loaded machine
    expect(bars).to_have_count(6000, timeout=60_000)
    expect(more).to_have_count(0)
    expect(tab.locator('.tl-bar[data-node="n11999"]')).to_have_count(1)
