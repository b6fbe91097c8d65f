"""The keyboard, as documented in the help: rows, opening, closing, stepping, tabs, search."""

import re

from playwright.sync_api import expect

from tests.browser.rollout_checks import check_tab_keys


def current(tab):
    return tab.locator("tr.nav.current")


def test_keys_move_open_step_switch_tabs_and_close(page, corpus_server):
    tab = page.open("#/run/real-like")
    ids = [r["id"] for r in corpus_server.get("/v1/trajectories?run_id=real-like")["data"]]
    tab.locator("table.rollouts").wait_for()
    tab.keyboard.press("j")
    expect(current(tab)).to_have_attribute("data-traj", ids[0])
    tab.keyboard.press("j")
    tab.keyboard.press("j")
    tab.keyboard.press("k")
    expect(current(tab)).to_have_attribute("data-traj", ids[1])
    expect(current(tab)).to_be_focused()  # a roving tabindex: the row j/k reached is the one Tab comes back to
    expect(tab.locator("tr.nav[tabindex='0']")).to_have_count(1)
    expect(current(tab)).to_have_attribute("tabindex", "0")
    tab.keyboard.press("Enter")
    expect(tab.locator("#drawer .traj-id")).to_have_text(ids[1])
    tab.keyboard.press("]")
    expect(tab.locator("#drawer .traj-id")).to_have_text(ids[2])
    tab.keyboard.press("[")
    tab.keyboard.press("[")
    expect(tab.locator("#drawer .traj-id")).to_have_text(ids[0])
    for key, name in [("2", "chat"), ("3", "tree"), ("4", "forks"), ("5", "calls"), ("6", "timeline"), ("7", "json"),
                      ("1", "path")]:
        tab.keyboard.press(key)
        expect(tab.locator(f"#drawer .tab[data-tab={name}]")).to_have_attribute("aria-selected", "true")
    tab.keyboard.press("Escape")
    expect(tab.locator("#drawer")).to_be_hidden()

    tab.keyboard.press("?")
    expect(tab.locator("#help")).to_be_visible()
    expect(tab.locator("#help")).to_contain_text("previous / next rollout")
    page.shot("help")
    tab.keyboard.press("Escape")
    expect(tab.locator("#help")).to_be_hidden()

    tab.keyboard.press("/")
    expect(tab.locator("#search")).to_be_focused()
    before = current(tab).get_attribute("data-traj")
    tab.keyboard.type("jk")  # typed into the box, not taken as keys
    expect(tab.locator("#search")).to_have_value("jk")
    assert current(tab).get_attribute("data-traj") == before
    expect(tab.locator("#drawer")).to_be_hidden()


def test_enter_expands_a_group(page, corpus_server):
    tab = page.open("#/run/groups")
    first = corpus_server.get("/v1/groups?run_id=groups")["data"][0]["key"]
    tab.locator("tr.group-row").first.wait_for()
    tab.keyboard.press("j")
    tab.keyboard.press("Enter")
    expect(tab.locator(f'tbody.group[data-key="{first}"] tr.sub.rollout-row').first).to_be_visible()
    tab.keyboard.press("j")  # into the group's rollouts
    tab.keyboard.press("Enter")
    expect(tab.locator("#drawer")).to_be_visible()


def focused(tab, selector):
    """Whether the focused element matches `selector`."""
    return tab.evaluate(f"document.activeElement?.matches({selector!r}) ?? false")


def test_the_drawer_tabs_are_a_tablist_the_arrows_walk(page, corpus_server):
    tab = page.open("#/run/real-like/rollouts/t/tr_86f0b750382298e2")
    tablist = tab.locator("#drawer [role=tablist]")
    expect(tablist.locator("[role=tab]")).to_have_count(7)
    for name in ("path", "chat", "tree", "forks", "calls", "timeline", "json"):
        expect(tablist.locator(f"[data-tab={name}]")).to_have_attribute("aria-controls", "drawer-panel")
    expect(tab.locator("#drawer-panel")).to_have_attribute("role", "tabpanel")
    expect(tab.locator("#drawer-panel")).to_have_attribute("aria-labelledby", "drawer-tab-path")
    check_tab_keys(tab, "#drawer", "drawer-tab", "drawer-panel",
                   ["path", "chat", "tree", "forks", "calls", "timeline", "json"])


def test_the_drawer_takes_the_focus_and_gives_it_back_to_the_row(page, corpus_server):
    ids = [r["id"] for r in corpus_server.get("/v1/trajectories?run_id=real-like")["data"]]
    tab = page.open("#/run/real-like/rollouts")
    tab.locator(f'tr.rollout-row[data-traj="{ids[2]}"]').click()
    expect(tab.locator("#drawer .traj-id")).to_have_text(ids[2])
    expect(tab.locator("#drawer .traj-id")).to_be_focused()
    tab.keyboard.press("Escape")
    expect(tab.locator("#drawer")).to_be_hidden()
    expect(tab.locator(f'tr.rollout-row[data-traj="{ids[2]}"]')).to_be_focused()
    tab.keyboard.press("j")  # the keys carry on from the row the drawer showed
    expect(current(tab)).to_have_attribute("data-traj", ids[3])
    tab.locator(f'tr.rollout-row[data-traj="{ids[0]}"]').click()
    expect(tab.locator("#drawer .traj-id")).to_be_focused()
    tab.locator("#drawer button.close").click()
    expect(tab.locator(f'tr.rollout-row[data-traj="{ids[0]}"]')).to_be_focused()


def test_a_redraw_after_a_chip_or_a_sort_keeps_the_focus_on_that_control(page, corpus_server):
    tab = page.open("#/run/real-like/rollouts")
    chip = tab.locator(".band .chip").first
    flag = chip.get_attribute("data-flag")
    chip.focus()
    tab.keyboard.press("Enter")
    expect(tab.locator(f'.band .chip[data-flag="{flag}"]')).to_have_attribute("aria-pressed", "true")
    expect(tab.locator(f'.band .chip[data-flag="{flag}"]')).to_be_focused()
    tab.keyboard.press("Enter")
    expect(tab.locator(f'.band .chip[data-flag="{flag}"]')).to_have_attribute("aria-pressed", "false")
    expect(tab.locator(f'.band .chip[data-flag="{flag}"]')).to_be_focused()
    tab.locator("button.sort[data-sort=reward]").click()
    expect(tab.locator("th.sortable", has=tab.locator("[data-sort=reward]"))).not_to_have_attribute("aria-sort", "none")
    expect(tab.locator("button.sort[data-sort=reward]")).to_be_focused()
    tab.locator("select[data-filter=status]").focus()
    tab.locator("select[data-filter=status]").select_option(index=1)
    assert "status=" in page.hash()
    expect(tab.locator("select[data-filter=status]")).to_be_focused()


def test_the_help_takes_the_focus_and_esc_gives_it_back(page, corpus_server):
    tab = page.open("#/run/real-like/rollouts")
    tab.locator("button.sort[data-sort=turns]").focus()
    tab.keyboard.press("?")
    expect(tab.locator("#help")).to_be_visible()
    assert tab.evaluate("document.getElementById('help').contains(document.activeElement)")
    tab.keyboard.press("Escape")
    expect(tab.locator("#help")).to_be_hidden()
    expect(tab.locator("button.sort[data-sort=turns]")).to_be_focused()
    tab.locator("#keys-button").click()
    assert tab.evaluate("document.getElementById('help').contains(document.activeElement)")
    tab.keyboard.press("Escape")
    expect(tab.locator("#keys-button")).to_be_focused()


CONTRAST = """selector => {
  const rgba = (text) => {
    const m = text.match(/[\\d.]+/g).map(Number);
    return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, bottom) => top.slice(0, 3).map((c, i) => c * top[3] + bottom[i] * (1 - top[3]));
  const lum = (rgb) => {
    const l = rgb.map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
  const node = document.querySelector(selector);
  const layers = [];
  for (let at = node; at; at = at.parentElement) layers.push(rgba(getComputedStyle(at).backgroundColor));
  let back = [255, 255, 255];
  for (const layer of layers.reverse()) back = over(layer, back);
  const fore = over(rgba(getComputedStyle(node).color), back);
  const [a, b] = [lum(fore), lum(back)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def test_given_and_amber_text_reach_wcag_aa_in_both_themes(page_on, corpus_server):
    for scheme in ("light", "dark"):
        tab = page_on(corpus_server, color_scheme=scheme).open("#/run/real-like/rollouts/t/tr_86f0b750382298e2")
        assert tab.evaluate("document.documentElement.dataset.theme") == scheme
        tab.locator(".block.kind-given .kind-badge").first.wait_for()
        checks = {".block.kind-given .kind-badge": "given kind", ".band .chip.level-warn": "amber chip",
                  "#drawer .badge.level-warn": "amber badge"}
        for selector, what in checks.items():
            ratio = tab.evaluate(CONTRAST, selector)
            assert ratio >= 4.5, f"{scheme}: {what} {ratio:.2f}:1"
        tab.locator("#drawer [data-tab=tree]").click()
        for selector in (".tree-row .role-badge.client", ".tree-row .role-badge.model"):
            ratio = tab.evaluate(CONTRAST, selector)
            assert ratio >= 4.5, f"{scheme}: {selector} {ratio:.2f}:1"
        dot = tab.locator("#drawer .reward .dot").first
        expect(dot).to_have_attribute("aria-label", re.compile(r"^reward "))
        expect(tab.locator("#drawer .reward .reward-num").first).to_have_text(re.compile(r"\d|-"))


def test_brackets_cross_a_page_and_a_group_edge(page_over, tmp_path, corpus_server, page_on):
    """`]` on a page's last rollout shows the next page and opens its first; on an open group's last
    member it opens the next group and its first member; `[` comes back."""
    from skycap_viewer.demo.writer import RecordBuilder

    run = tmp_path / "big"
    run.mkdir()
    for number in range(130):
        builder = RecordBuilder(f"tr_page{number:04d}", "text", meta={"task": f"t{number % 7}"},
                                created_at=1_790_000_000.0 + number)
        builder.add_model(builder.add_client(None, "user", f"question {number}"), f"answer {number}")
        builder.write(run)
    page = page_over(run)
    first = page.server.get("/v1/trajectories?run_id=big")
    second = page.server.get(f"/v1/trajectories?run_id=big&cursor={first['next_cursor']}")
    last = first["data"][-1]["id"]
    tab = page.open(f"#/run/big/rollouts/t/{last}")
    expect(tab.locator("#drawer .traj-id")).to_have_text(last)
    tab.keyboard.press("]")
    expect(tab.locator("#drawer .traj-id")).to_have_text(second["data"][0]["id"])
    assert "page=2" in page.hash()
    tab.keyboard.press("[")
    expect(tab.locator("#drawer .traj-id")).to_have_text(last)

    tab = page_on(corpus_server).open("#/run/groups/groups")
    keys = tab.locator("tr.group-row").evaluate_all("rows => rows.map((row) => row.dataset.key)")
    tab.locator(f'tr.group-row[data-key="{keys[0]}"]').click()
    members = tab.locator("tr.rollout-row[data-traj]")
    expect(members.first).to_be_visible()
    shown = members.evaluate_all("rows => rows.map((row) => row.dataset.traj)")
    members.last.click()
    expect(tab.locator("#drawer .traj-id")).to_have_text(shown[-1])
    tab.keyboard.press("]")  # past the open group's last member: the next group opens, its first member too
    expect(tab.locator(f'tr.group-row[data-key="{keys[1]}"]')).to_have_attribute("aria-expanded", "true")
    expect(tab.locator("#drawer .traj-id")).not_to_have_text(shown[-1])  # opened once the group's rows came
    after = [traj for traj in members.evaluate_all("rows => rows.map((row) => row.dataset.traj)")
             if traj not in shown]
    expect(tab.locator("#drawer .traj-id")).to_have_text(after[0])
