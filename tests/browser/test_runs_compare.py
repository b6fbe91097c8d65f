"""Two runs group by group and one prompt at every step, driven as a person would, on `groups/` and `groups2/`.

What the page must show is read from `groups2-keys.json` and the server's own answers."""

import json
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.browser.layout import table_problems
from tests.support.corpus import FIXTURES
from tests.support.server_process import served

KEYS = json.loads((FIXTURES / "groups2-keys.json").read_text())
SHOTS = "/tmp"


def key_names(pairs):
    return sorted("~".join(map(str, pair)) for pair in pairs)


def listed(tab, selector, attribute="key"):
    return sorted(tab.locator(selector).evaluate_all(f"nodes => nodes.map(n => n.dataset.{attribute})"))


@pytest.fixture(scope="module")
def two_runs(corpus):
    yield from served([corpus / "groups", corpus / "groups2"])


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_two_runs_table_keeps_each_row_on_one_line_under_its_headers(page_on, two_runs, scheme):
    tab = page_on(two_runs, color_scheme=scheme).open("#/run/groups/vs/groups2")
    expect(tab.locator("tr.matched-row")).to_have_count(len(KEYS["both"]))
    assert tab.evaluate("document.documentElement.dataset.theme") == scheme
    assert table_problems(tab, "table.runs-compare", "tr.matched-row") == []


def test_run_against_run_shows_every_key_and_a_picked_pair_opens_the_compare(page_on, two_runs):
    page = page_on(two_runs)
    tab = page.open("#/run/groups")
    tab.select_option(".compare-launch select[name=vs]", "groups2")
    tab.click(".compare-launch button[data-link=compare-runs]")
    expect(tab.locator("tr.matched-row")).to_have_count(len(KEYS["both"]))
    assert page.hash() == "#/run/groups/vs/groups2"
    assert listed(tab, "tr.matched-row") == key_names(KEYS["both"])
    assert listed(tab, ".only-a li") == key_names(KEYS["only_in_groups"])
    assert listed(tab, ".only-b li") == key_names(KEYS["only_in_groups2"])
    answer = two_runs.get("/v1/compare/runs?a=groups&b=groups2")
    first = answer["matched"][0]
    row = tab.locator(f'tr.matched-row[data-key="{first["key"]}"]')
    expect(row.locator("td.side-a .dot")).to_have_count(len(first["a"]["rewards"]))
    expect(row.locator("td.side-b .dot")).to_have_count(len(first["b"]["rewards"]))

    one = first["b"]["rewards"][0]["id"]  # a dot opens that rollout in its own run
    row.locator(f'td.side-b .dot[data-traj="{one}"]').click()
    tab.wait_for_function("h => location.hash.startsWith(h)", arg=f"#/run/groups2/groups/t/{one}")
    tab.go_back()
    expect(tab.locator("tr.matched-row")).to_have_count(len(KEYS["both"]))

    row.click()
    detail = tab.locator(f'tbody.pair[data-key="{first["key"]}"] tr.pair-detail')
    expect(detail.locator("button.member-pick[data-side=a]")).to_have_count(len(first["a"]["rewards"]))
    expect(detail.locator("button.member-pick[data-side=b]")).to_have_count(len(first["b"]["rewards"]))
    a_id, b_id = first["a"]["rewards"][-1]["id"], first["b"]["rewards"][0]["id"]
    detail.locator(f'button.member-pick[data-side=a][data-traj="{a_id}"]').click()
    expect(tab.locator(f'button.member-pick.picked[data-traj="{a_id}"]')).to_have_count(1)
    tab.screenshot(path=f"{SHOTS}/runs-compare.png", full_page=True)
    detail.locator(f'button.member-pick[data-side=b][data-traj="{b_id}"]').click()
    want = f"#/run/groups/compare?a={quote(a_id)}&b={quote(b_id)}&rb=groups2"
    tab.wait_for_function("h => location.hash === h", arg=want)


def test_two_steps_of_one_run_from_the_form(page_on, two_runs):
    page = page_on(two_runs)
    tab = page.open("#/run/groups")
    tab.select_option(".compare-launch select[name=vs]", "groups")
    tab.fill(".compare-launch input[name=sa]", "1")
    tab.fill(".compare-launch input[name=sb]", "3")
    tab.press(".compare-launch input[name=sb]", "Enter")
    tab.wait_for_function("h => location.hash === h", arg="#/run/groups/vs/groups?sa=1&sb=3")
    answer = two_runs.get("/v1/compare/runs?a=groups&b=groups&step_a=1&step_b=3")
    expect(tab.locator("tr.matched-row")).to_have_count(answer["total"])
    assert listed(tab, "tr.matched-row") == sorted(m["key"] for m in answer["matched"])
    assert listed(tab, ".only-a li") == sorted(answer["only_a"])
    expect(tab.locator(".compare-summary")).to_contain_text("matched by instance_id")
    tab.reload()  # the URL holds the view
    expect(tab.locator("tr.matched-row")).to_have_count(answer["total"])
    a, b = answer["matched"][0]["a"]["rewards"][0]["id"], answer["matched"][0]["b"]["rewards"][1]["id"]
    tab.locator("tr.matched-row").first.click()
    tab.click(f'button.member-pick[data-side=a][data-traj="{a}"]')
    tab.click(f'button.member-pick[data-side=b][data-traj="{b}"]')
    tab.wait_for_function("h => location.hash === h", arg=f"#/run/groups/compare?a={a}&b={b}")


def test_one_prompt_at_every_step_from_an_open_group(page_on, two_runs):
    page = page_on(two_runs)
    tab = page.open("#/run/groups")
    tab.click('tr.group-row[data-key="2~a"]')
    tab.click('tbody.group[data-key="2~a"] a[data-link=every-step]')
    tab.wait_for_function("h => location.hash === h", arg="#/run/groups/lineage?key=instance_id&value=a")
    lineage = two_runs.get("/v1/lineage?run_id=groups&key=instance_id&value=a")
    expect(tab.locator(".lineage-step")).to_have_count(len(lineage["data"]))
    assert listed(tab, ".lineage-step", "step") == sorted(str(column["step"]) for column in lineage["data"])
    for column in lineage["data"]:
        step = tab.locator(f'.lineage-step[data-step="{column["step"]}"]')
        expect(step.locator("button.lineage-rollout")).to_have_count(len(column["rollouts"]))
        expect(step.locator("button.lineage-rollout .dot")).to_have_count(len(column["rollouts"]))
        superseded = [r["trajectory_id"] for r in column["rollouts"] if r["superseded"]]
        expect(step.locator("button.lineage-rollout.superseded")).to_have_count(len(superseded))
        expect(step.locator("button.lineage-rollout.superseded .dot.superseded")).to_have_count(len(superseded))
    first, second = lineage["data"][0]["rollouts"][0], lineage["data"][-1]["rollouts"][0]
    tab.click(f'button.lineage-rollout[data-traj="{first["trajectory_id"]}"]', modifiers=["Shift"])
    expect(tab.locator("button.lineage-rollout.picked")).to_have_count(1)
    tab.screenshot(path=f"{SHOTS}/lineage.png", full_page=True)
    tab.click(f'button.lineage-rollout[data-traj="{second["trajectory_id"]}"]', modifiers=["Shift"])
    want = f"#/run/groups/compare?a={first['trajectory_id']}&b={second['trajectory_id']}"
    tab.wait_for_function("h => location.hash === h", arg=want)
    tab.go_back()
    expect(tab.locator(".lineage-step")).to_have_count(len(lineage["data"]))
    tab.click(f'button.lineage-rollout[data-traj="{second["trajectory_id"]}"]')  # a plain click opens it
    tab.wait_for_function("h => location.hash.startsWith(h)", arg=f"#/run/groups/groups/t/{second['trajectory_id']}")
    expect(tab.locator("#drawer")).to_be_visible()


def test_the_two_routes_parse_and_format_back(page_on, two_runs):
    tab = page_on(two_runs).open("#/run/groups")
    hashes = ["#/run/groups/vs/groups2", "#/run/groups/vs/groups?sa=1&sb=3&by=instance_id",
              "#/run/a%20b/vs/c%2Fd?by=step%2Cinstance_id", "#/run/groups/lineage?key=instance_id&value=a",
              "#/run/groups/lineage?key=task&value=%2Ftasks%2Ftask-a", "#/run/groups/groups?open=1~a"]
    again = tab.evaluate("async (hashes) => { const r = await import('/js/draw/route.js');"
                         " return hashes.map((h) => r.format(r.parse(h))); }", hashes)
    assert again == hashes
    parsed = tab.evaluate("async () => (await import('/js/draw/route.js')).parse('#/run/a/vs/b?sa=2&by=instance_id')")
    assert (parsed["run"], parsed["view"], parsed["vs"], parsed["sa"], parsed["sb"], parsed["by"]) == (
        "a", "vs", "b", "2", "", "instance_id")
    pair = tab.evaluate("async () => (await import('/js/draw/route.js')).pairCompareHash('r a', 'x', 'y', 'r b')")
    assert pair == "#/run/r%20a/compare?a=x&b=y&rb=r%20b"
