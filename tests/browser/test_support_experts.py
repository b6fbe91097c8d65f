"""The Path's sampling support on hover, and the experts lane, in the real page on the masks/ records."""

import re

from playwright.sync_api import expect

OUTSIDE = re.compile(r"\bout-of-support\b")
REPEAT = re.compile(r"\brepeat\b")


def path_holding(paths, node_id):
    return next(p["index"] for p in paths["paths"] if node_id in p["node_ids"])


def test_hovering_a_sampled_token_reads_its_support_and_whether_its_id_is_in_it(page, corpus_server):
    record = "tr_mask_out_of_support"
    paths = corpus_server.get(f"/v1/trajectories/{record}/paths?run_id=masks")
    node = paths["nodes"]["n2"]
    start = node["sampled_start"]
    tab = page.open(f"#/run/masks/rollouts/t/{record}?tab=path&path={path_holding(paths, 'n2')}")
    block = tab.locator('.block.kind-sampled[data-node="n2"]')
    readout = tab.locator("#readout")
    empty = block.locator('span.t[data-i="14"]')  # an empty support: necessarily outside it
    empty.hover()
    assert node["support_sizes"][14 - start] == 0
    expect(readout).to_contain_text("support 0 ids, sampled id NOT in it")
    expect(empty).to_have_class(OUTSIDE)
    block.locator('span.t[data-i="16"]').hover()  # support {9}, sampled 2
    expect(readout).to_contain_text("support 1 id, sampled id NOT in it")
    inside = block.locator('span.t[data-i="13"]')
    inside.hover()
    expect(readout).to_contain_text(f"support {node['support_sizes'][13 - start]} ids, sampled id in it")
    expect(inside).not_to_have_class(OUTSIDE)
    tab.locator(".block.kind-given span.t").first.hover()
    expect(readout).not_to_contain_text("support")

    mirror = "tr_fad25da9b0582945"  # mirror-training: its mask is listed, and was not copied
    unmasked = corpus_server.get(f"/v1/trajectories/{mirror}/paths?run_id=mirror-training")
    sampled = next(b for b in unmasked["paths"][0]["blocks"] if b["kind"] == "sampled")
    tab = page.open(f"#/run/mirror-training/rollouts/t/{mirror}?tab=path")
    block = tab.locator(f'.block.kind-sampled[data-node="{sampled["node_id"]}"]').first
    block.locator(f'span.t[data-i="{sampled["node_start"]}"]').hover()
    expect(tab.locator("#readout")).to_contain_text("no support recorded")


def test_the_experts_lane_shows_a_layers_routing_with_repeats_shaded(page, corpus_server):
    record = "tr_mask_experts_wide"
    answers = [corpus_server.get(f"/v1/trajectories/{record}/experts?run_id=masks&node=n3&layer={layer}")
               for layer in range(4)]
    tab = page.open(f"#/run/masks/rollouts/t/{record}?tab=path")
    expect(tab.locator(".experts-lane")).to_have_count(0)  # nothing fetched until it is asked for
    tab.locator('input[data-option="experts"]').check()
    lane = tab.locator(".experts-lane")
    expect(lane.locator(".experts-shape")).to_contain_text("of 4 layers · k 8 · uint8 · 17 rows")
    expect(lane.locator("select.experts-node")).to_have_value("n1")  # the path's first reply
    assert "experts=1" in page.hash()
    lane.locator("select.experts-node").select_option("n3")
    cells = lane.locator(".experts-cell")
    expect(cells).to_have_count(17)
    expect(cells.nth(0).locator(".experts-ids")).to_have_text(" ".join(map(str, answers[0]["experts"][0])))
    expect(lane.locator(".experts-cell.repeat")).to_have_count(1)
    expect(cells.nth(16)).to_have_class(REPEAT)  # the turn's last row copies the one before
    lane.locator("select.experts-layer").select_option("2")
    expect(cells.nth(0).locator(".experts-ids")).to_have_text(" ".join(map(str, answers[2]["experts"][0])))
    expect(cells.nth(5).locator(".experts-ids")).to_have_text(" ".join(map(str, answers[2]["experts"][5])))
    expect(lane.locator(".experts-cell.repeat")).to_have_count(1)
    expect(cells.nth(16)).to_have_class(REPEAT)
    lane.locator(".experts-cell").nth(3).scroll_into_view_if_needed()
    page.shot("experts-lane")

    tab = page.open("#/run/mirror-training/rollouts/t/tr_fad25da9b0582945?tab=path&experts=1")
    expect(tab.locator(".experts-lane .experts-note")).to_contain_text("listed but not here")
