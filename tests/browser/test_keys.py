"""The keyboard, as documented in the help: rows, opening, closing, stepping, tabs, search."""

from playwright.sync_api import expect


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
    tab.keyboard.press("Enter")
    expect(tab.locator("#drawer .traj-id")).to_have_text(ids[1])
    tab.keyboard.press("]")
    expect(tab.locator("#drawer .traj-id")).to_have_text(ids[2])
    tab.keyboard.press("[")
    tab.keyboard.press("[")
    expect(tab.locator("#drawer .traj-id")).to_have_text(ids[0])
    for key, name in [("2", "tree"), ("3", "forks"), ("4", "calls"), ("5", "json"), ("1", "path")]:
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
