"""The run page's Timeline view in Chromium: a step's rollouts as lanes on one canvas, over a run whose call
times are known (`tests/support/step_timeline_run.py`): the lane list's count and order, the bars' colours by how
each call ended, superseded lanes shaded, a click on a bar opening the rollout's drawer on its Timeline tab
at that call, the keyboard's way in through the lane list, and the run page's sort, band and filters."""

from playwright.sync_api import expect

from tests.support.step_timeline_run import BY_START, CRITICAL, write_step_run

LANE_HEIGHT, AXIS_HEIGHT = 14, 22  # static/js/draw/step-canvas.js

PIXEL = """([x, y]) => {
  const canvas = document.querySelector(".st-canvas");
  const ratio = canvas.width / canvas.clientWidth;
  return [...canvas.getContext("2d").getImageData(Math.round(x * ratio), Math.round(y * ratio), 1, 1).data];
}"""
COLOUR = """(name) => {
  const probe = document.createElement("span");
  probe.style.color = `var(${name})`;
  document.body.append(probe);
  const [r, g, b] = getComputedStyle(probe).color.match(/[\\d.]+/g).map(Number);
  probe.remove();
  return [r, g, b];
}"""


def open_timeline(page_over, tmp_path, query="step=3"):
    write_step_run(tmp_path / "root" / "steps")
    page = page_over(tmp_path / "root")
    tab = page.tab
    tab.goto(f"{page.server.url}/#/run/steps/timeline?{query}")
    tab.wait_for_selector(".st-lanes button.st-lane")
    tab.wait_for_function("document.querySelector('.st-canvas')?.dataset.to !== undefined")
    return page, tab


def lane_order(tab) -> list:
    return tab.locator(".st-lanes button.st-lane").evaluate_all("(nodes) => nodes.map((n) => n.dataset.traj)")


def point(tab, lane: int, ms: float, below: float = LANE_HEIGHT / 2) -> tuple[float, float]:
    """Where `ms` of lane `lane` is drawn on the canvas, in CSS pixels from its corner."""
    view = tab.locator(".st-canvas").evaluate(
        "(c) => ({from: +c.dataset.from, to: +c.dataset.to, top: +c.dataset.top, width: c.clientWidth})")
    x = (ms - view["from"]) / (view["to"] - view["from"]) * view["width"]
    return x, AXIS_HEIGHT + (lane - view["top"]) * LANE_HEIGHT + below


def pixel(tab, lane: int, ms: float, below: float = LANE_HEIGHT / 2) -> list:
    return tab.evaluate(PIXEL, list(point(tab, lane, ms, below)))


def test_the_steps_lanes_are_listed_and_drawn_each_call_coloured_by_how_it_ended(page_over, tmp_path):
    page, tab = open_timeline(page_over, tmp_path)
    assert lane_order(tab) == BY_START
    expect(tab.locator(".st-lanes button.st-lane.critical")).to_have_attribute("data-traj", CRITICAL)
    expect(tab.locator(".view-toggle [data-view=timeline]")).to_have_attribute("aria-selected", "true")
    expect(tab.locator(".st-summary")).to_contain_text("3 lanes of 3 rollouts at step 3 · span 12.0 s")
    colour = {name: tab.evaluate(COLOUR, name) for name in
              ("--st-stop", "--st-length", "--st-tool-calls", "--st-failed", "--st-env")}
    a, c, b = range(3)
    assert pixel(tab, a, 2000)[:3] == colour["--st-stop"]  # tr_step_a's call 1000-3000: stop
    assert pixel(tab, a, 5500)[:3] == colour["--st-tool-calls"]  # 5000-6000: tool_calls
    assert pixel(tab, b, 3000)[:3] == colour["--st-length"]  # tr_step_b's call cut at max tokens
    assert pixel(tab, b, 7000, below=10)[:3] == colour["--st-failed"]  # its failure at 7000
    assert pixel(tab, a, 4000)[3] > 0 and pixel(tab, a, 4000, below=2)[3] == 0  # between calls: the thin line
    assert pixel(tab, c, 10_000, below=2)[3] > 0  # superseded: the lane shaded
    assert pixel(tab, a, 10_000, below=2)[3] == 0  # trained: not
    page.shot("step-timeline")


def test_a_bar_opens_its_rollouts_drawer_on_the_timeline_tab_at_that_call(page_over, tmp_path):
    page, tab = open_timeline(page_over, tmp_path)
    x, y = point(tab, 0, 5500)  # tr_step_a's second call, n3
    tab.locator(".st-canvas").click(position={"x": x, "y": y})
    expect(tab.locator("#drawer .tab[data-tab=timeline]")).to_have_attribute("aria-selected", "true")
    assert "/timeline/t/tr_step_a" in page.hash() and "tab=timeline" in page.hash() and "node=n3" in page.hash()
    expect(tab.locator('#drawer .tl-bar.node-selected')).to_have_attribute("data-node", "n3")


def test_the_lane_list_is_the_keyboards_way_in(page_over, tmp_path):
    page, tab = open_timeline(page_over, tmp_path)
    lanes = tab.locator(".st-lanes button.st-lane")
    assert lanes.evaluate_all("(nodes) => nodes.map((n) => n.tabIndex)") == [0, -1, -1]  # one tab stop
    tab.locator(".st-controls [data-zoom=fit]").focus()
    tab.keyboard.press("Tab")
    expect(lanes.first).to_be_focused()
    tab.keyboard.press("End")  # along the list by arrows, Home and End
    expect(tab.locator(f'.st-lanes button[data-traj="{CRITICAL}"]')).to_be_focused()
    assert lanes.evaluate_all("(nodes) => nodes.map((n) => n.tabIndex)") == [-1, -1, 0]
    expect(tab.locator(".st-readout")).to_contain_text(f"{CRITICAL} · 2.0 s → 12.0 s · 1 call · 1 failure")
    tab.keyboard.press("Enter")
    expect(tab.locator('#drawer .tl-bar.node-selected')).to_have_attribute("data-node", "n1")
    assert f"/t/{CRITICAL}" in page.hash() and "node=n1" in page.hash()


def test_the_lanes_follow_the_sort_the_band_and_the_filters(page_over, tmp_path):
    page, tab = open_timeline(page_over, tmp_path)
    tab.select_option(".st-controls select[data-sort=timeline]", "end")
    expect(tab.locator(".st-lanes button.st-lane").first).to_have_attribute("data-traj", "tr_step_b")
    assert lane_order(tab) == ["tr_step_b", "tr_step_a", "tr_step_c"] and "sort=end" in page.hash()
    tab.click(".band-box [data-flag=not-trained]")
    expect(tab.locator(".st-lanes button.st-lane")).to_have_count(1)
    assert lane_order(tab) == ["tr_step_b"] and "flag=not-trained" in page.hash()
    tab.reload()  # the URL alone brings the view back
    expect(tab.locator(".st-lanes button.st-lane")).to_have_count(1)
    expect(tab.locator(".st-summary")).to_contain_text("1 lane of 3 rollouts")
    tab.select_option(".st-controls select[data-filter=timeline-step]", "4")
    expect(tab.locator(".st-lanes li")).to_contain_text("No rollout of this step passes the filters.")


def test_the_drawing_zooms_pans_and_moves_between_lanes_by_key(page_over, tmp_path):
    page, tab = open_timeline(page_over, tmp_path)
    canvas = tab.locator(".st-canvas")
    canvas.focus()

    def window():
        return canvas.evaluate("(c) => [+c.dataset.from, +c.dataset.to]")

    assert window() == [0, 12000]
    tab.keyboard.press("+")  # around the middle
    tab.wait_for_function("() => document.querySelector('.st-canvas').dataset.to === '9000'")
    assert window() == [3000, 9000]
    tab.keyboard.press("ArrowRight")  # a tenth of the window
    tab.wait_for_function("() => document.querySelector('.st-canvas').dataset.to === '9600'")
    tab.keyboard.press("0")
    tab.wait_for_function("() => document.querySelector('.st-canvas').dataset.to === '12000'")
    tab.keyboard.press("ArrowDown")
    expect(tab.locator(".st-readout")).to_contain_text("tr_step_c · 500 ms → 2.0 s · 1 call · superseded")
    expect(canvas).to_be_focused()  # the drawing keeps the focus; the list's tab stop follows
    expect(tab.locator('.st-lanes button[data-traj="tr_step_c"]')).to_have_attribute("tabindex", "0")
    tab.keyboard.press("Enter")
    expect(tab.locator("#drawer .tab[data-tab=timeline]")).to_have_attribute("aria-selected", "true")
    assert "/t/tr_step_c" in page.hash() and "node=n1" in page.hash()
