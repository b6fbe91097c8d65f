"""Comparing rollouts in the page, driven as a reader would: a group lined up and a member opened
beside its anchor, A and B picked with the keys, a text-mode pair, a pasted pair link."""

import json
import re

from playwright.sync_api import expect

from skycap_viewer.record.frames import compress
from tests.support.chain_record import chain_document

GROUP = "2~c"  # groups/, step 2 task c: rewards 0.2, 0.5, 0.9, 0.5; rep 3 forked (two paths)


def pair_shown(tab):
    tab.locator(".pair-view .pair-shared").wait_for()
    return tab


def test_a_lined_up_member_opens_beside_the_anchor_with_its_differences_marked(page, corpus_server):
    lineup = corpus_server.get(f"/v1/groups/{GROUP}/lineup?run_id=groups")
    anchor = lineup["anchor"]["trajectory_id"]
    tab = page.open("#/run/groups/groups")
    tab.locator(f'tr.group-row[data-key="{GROUP}"]').click()
    tab.locator("button[data-link=line-up]").click()
    expect(tab.locator(".lineup-table")).to_be_visible()
    assert f"lu={GROUP}" in page.hash().replace("%7E", "~")
    rows = tab.locator("tr.lineup-row")
    expect(rows).to_have_count(len(lineup["members"]))
    expect(tab.locator("tr.lineup-row.anchor")).to_have_attribute("data-member", anchor)
    for member in lineup["members"]:  # the figures as the server says them, per record
        row = tab.locator(f'tr.lineup-row[data-member="{member["trajectory_id"]}"]')
        expect(row.locator("td[data-shared]")).to_have_attribute("data-shared", str(member["common_prefix_tokens"]))
        expect(row).to_contain_text(f"rep {member['repetition_id']}")
    page.shot("lineup")

    member = next(m for m in lineup["members"] if m["trajectory_id"] == lineup["lowest"])
    tab.locator(f'tr.lineup-row[data-member="{member["trajectory_id"]}"]').click()
    pair_shown(tab)
    assert page.hash() == f"#/run/groups/compare?a={anchor}&b={member['trajectory_id']}"
    answer = corpus_server.get(f"/v1/compare?a={anchor}&b={member['trajectory_id']}")
    assert answer["common_prefix_tokens"] == member["common_prefix_tokens"]
    expect(tab.locator(".pair-shared")).to_have_attribute("data-shared", str(answer["common_prefix_tokens"]))
    expect(tab.locator(".pair-shared")).to_contain_text(f"{answer['common_prefix_tokens']} tokens")
    diverge = tab.locator(".pair-row-box.diverge")
    expect(diverge).to_have_count(1)
    expect(diverge).to_contain_text("they part here")
    parting = answer["diverge"]["a"]["node_id"]
    expect(diverge.locator('.pair-cell[data-side="a"]')).to_have_attribute("data-node", parting)
    expect(tab.locator(".pair-diverge")).to_contain_text(f"+{answer['diverge']['a']['offset']}")
    first = answer["turns"][0]
    expect(diverge.locator('.pair-cell[data-side="a"] span.t.still-shared')).to_have_count(first["a"]["shared"])
    for side, at in (("a", 0), ("b", 2)):  # every differing token of every turn, and only those, marked
        marked = sum(d[at + 1] - d[at] for turn in answer["turns"] for d in turn["diff"])
        expect(tab.locator(f'.pair-cell[data-side="{side}"] span.t.diff')).to_have_count(marked)
        node = answer["nodes"][side][first[side]["node_id"]]
        start, end = first["diff"][0][at], first["diff"][0][at + 1]
        expected = node["text"][node["token_offsets"][start]:node["token_offsets"][end]]
        expect(diverge.locator(f'.pair-cell[data-side="{side}"] span.t.diff').first).to_have_text(expected)
    tab.locator(".pair-shared-fold > summary").click()  # the shared messages, read when unfolded
    paths = corpus_server.get(f"/v1/trajectories/{anchor}/paths?run_id=groups")
    shared = paths["paths"][0]["node_ids"][:answer["shared_nodes"]["a"]]
    expect(tab.locator(".shared-blocks section.block")).to_have_count(
        sum(block["node_id"] in shared for block in paths["paths"][0]["blocks"]))
    expect(tab.locator(".shared-blocks")).to_contain_text(paths["nodes"][shared[0]]["text"].split("\n")[1])
    same = [turn for turn in answer["turns"] if turn["same"]]
    expect(tab.locator("details.pair-row-box.same")).to_have_count(len(same))
    page.shot("pair")


def test_pass_vs_fail_pairs_the_anchor_with_the_lowest_reward(page, corpus_server):
    lineup = corpus_server.get(f"/v1/groups/{GROUP}/lineup?run_id=groups")
    tab = page.open(f"#/run/groups/groups?open={GROUP}&lu={GROUP}")
    tab.locator("button[data-link=pass-vs-fail]").click()
    pair_shown(tab)
    assert page.hash() == f"#/run/groups/compare?a={lineup['anchor']['trajectory_id']}&b={lineup['lowest']}"
    tab.go_back()
    expect(tab.locator(".lineup-table")).to_be_visible()
    ends = (lineup["anchor"]["trajectory_id"], lineup["lowest"])
    other = next(m for m in lineup["members"] if m["trajectory_id"] not in ends)
    tab.locator(f'tr.lineup-row[data-member="{other["trajectory_id"]}"] button[data-link=make-anchor]').click()
    expect(tab.locator("tr.lineup-row.anchor")).to_have_attribute("data-member", other["trajectory_id"])
    assert f"la={other['trajectory_id']}" in page.hash()


def test_a_and_b_picked_with_the_keys_open_side_by_side(page, corpus_server):
    ids = [r["id"] for r in corpus_server.get("/v1/trajectories?run_id=groups")["data"]]
    tab = page.open("#/run/groups/rollouts")
    tab.locator("table.rollouts").wait_for()
    tab.keyboard.press("j")
    tab.keyboard.press("a")
    tab.keyboard.press("j")
    tab.keyboard.press("j")
    tab.keyboard.press("b")
    bar = tab.locator(".pick-bar")
    expect(bar).to_contain_text("A: ")
    expect(bar).to_contain_text(ids[0][-8:])
    expect(bar).to_contain_text(ids[2][-8:])
    expect(tab.locator("tr.pick-a")).to_have_attribute("data-traj", ids[0])
    expect(tab.locator("tr.pick-b")).to_have_attribute("data-traj", ids[2])
    assert f"ca={ids[0]}" in page.hash() and f"cb={ids[2]}" in page.hash()
    tab.keyboard.press("c")
    pair_shown(tab)
    assert page.hash() == f"#/run/groups/compare?a={ids[0]}&b={ids[2]}"
    expect(tab.locator('.pair-head[data-side="a"] .traj-link')).to_have_text(ids[0])
    expect(tab.locator('.pair-head[data-side="b"] .traj-link')).to_have_text(ids[2])
    tab.go_back()  # the picks are where they were
    expect(tab.locator(".pick-bar")).to_contain_text(ids[2][-8:])
    tab.locator("button[data-link=clear-picks]").click()
    expect(tab.locator(".pick-bar")).to_have_count(0)

    tab.locator(f'tr.rollout-row[data-traj="{ids[3]}"]').click()  # the drawer's buttons pick the open rollout
    tab.locator("#drawer button[data-pick=b]").click()
    expect(tab.locator(".pick-bar")).to_contain_text(ids[3][-8:])
    expect(tab.locator("button.compare-picked")).to_be_disabled()
    tab.keyboard.press("Escape")
    tab.keyboard.press("?")
    expect(tab.locator("#help")).to_contain_text("pick the current rollout")


def test_a_text_mode_pair_is_compared_in_characters(page, corpus_server):
    lineup = corpus_server.get("/v1/groups/1~a/lineup?run_id=groups-text")
    assert lineup["unit"] == "chars"
    tab = page.open("#/run/groups-text/groups?open=1~a&lu=1~a")
    low = tab.locator(f'tr.lineup-row[data-member="{lineup["lowest"]}"]')
    member = next(m for m in lineup["members"] if m["trajectory_id"] == lineup["lowest"])
    expect(low.locator("td[data-shared]")).to_have_text(str(member["common_prefix_chars"]))
    expect(tab.locator(".lineup-table thead")).to_contain_text("shared chars")
    tab.locator("button[data-link=pass-vs-fail]").click()
    pair_shown(tab)
    anchor = lineup["anchor"]["trajectory_id"]
    answer = corpus_server.get(f"/v1/compare?a={anchor}&b={lineup['lowest']}&run_a=groups-text")
    assert answer["unit"] == "chars" and answer["common_prefix_tokens"] is None
    expect(tab.locator(".pair-shared")).to_contain_text(f"{answer['common_prefix_chars']} chars")
    expect(tab.locator(".why-text")).to_contain_text(answer["why_text"])
    expect(tab.locator(".readout")).to_be_hidden()  # no tokens to hover
    first = answer["turns"][0]
    for side, at in (("a", 0), ("b", 2)):
        node = answer["nodes"][side][first[side]["node_id"]]
        start, end = first["diff"][0][at], first["diff"][0][at + 1]
        expect(tab.locator(f'.pair-cell[data-side="{side}"] mark.diff').first).to_have_text(node["text"][start:end])
        still = node["text"][:first[side]["shared"]]
        expect(tab.locator(f'.pair-cell[data-side="{side}"] mark.still-shared')).to_have_text(still)
    page.shot("pair-text")


def test_a_pasted_pair_link_shows_the_same_pair_and_its_path_picker_is_in_the_url(page, corpus_server):
    forked = "tr_b5aea061e7495048"  # groups/ 2~c rep 3: two paths
    other = "tr_c5a6f8d00d2ca344"
    tab = page.tab
    tab.goto(f"{corpus_server.url}/#/run/groups/compare?a={forked}&b={other}")
    pair_shown(tab)
    picker = tab.locator("select[data-pair-path=a]")
    expect(picker).to_have_value("0")
    picker.select_option("1")
    expect(tab.locator(".pair-shared")).to_have_attribute("data-shared",
        str(corpus_server.get(f"/v1/compare?a={forked}&b={other}&path_a=1")["common_prefix_tokens"]))
    assert page.hash() == f"#/run/groups/compare?a={forked}&b={other}&pa=1"
    text = "view => view.textContent"  # not innerText: that holds only what content-visibility has laid out
    shown = tab.locator(".pair-view").evaluate(text)
    tab.reload()
    pair_shown(tab)
    expect(tab.locator("select[data-pair-path=a]")).to_have_value("1")
    assert tab.locator(".pair-view").evaluate(text) == shown

    tab.goto(f"{corpus_server.url}/#/run/groups/compare?a=tr_no_such_rollout&b={other}")
    expect(tab.locator(".pair-view .notice.error")).to_have_text(re.compile(r"Cannot compare: .*tr_no_such_rollout"))
    page.errors[:] = [e for e in page.errors if "status of 404" not in e]  # the browser logs the answer asked for


def test_later_turns_of_a_long_pair_load_on_scroll(page_over, tmp_path):
    """Two 6,000-node chains that part at their first reply: the turns come in parts (of 5,000 turns
    at most, and 1 MiB), the later ones as the view scrolls to them."""
    run = tmp_path / "long"
    for name, reply in (("chain-a", "turn 1"), ("chain-b", "turn 1, said otherwise")):
        document = chain_document(6000)
        document["id"] = name
        document["nodes"][1]["message"]["content"] = reply
        run.mkdir(exist_ok=True)
        (run / f"{name}.json.zst").write_bytes(compress(json.dumps(document).encode()))
    page = page_over(run)
    tab = page.tab
    tab.goto(f"{page.server.url}/#/run/long/compare?a=chain-a&b=chain-b")
    pair_shown(tab)
    more = tab.locator(".pair-turns button.more")
    expect(more).to_contain_text("of 5,999 turns shown")
    expect(tab.locator('.pair-cell[data-side="b"][data-node="n5999"]')).to_have_count(0)
    last = tab.locator('.pair-cell[data-side="b"][data-node="n5999"]')
    for _ in range(20):  # each scroll to the end brings the next part
        tab.locator("#main").evaluate("main => main.scrollTo(0, main.scrollHeight)")
        tab.wait_for_timeout(300)
        if last.count():
            break
    expect(last).to_have_count(1, timeout=30_000)
    expect(more).to_have_count(0)
    expect(tab.locator(".pair-row-box.diverge mark.diff").first).to_have_text(", said otherwise")
