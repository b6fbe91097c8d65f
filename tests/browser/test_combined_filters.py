"""Filters that combine, driven as a person would: two flags required from the band, one excluded
with shift-click, a reward range typed in, a task picked by typing into the picker; the rows and the
URL follow each step, a reload of that URL shows the same view, and "clear all" removes it all."""

from urllib.parse import urlencode

from playwright.sync_api import expect

from tests.browser.tab import table_ids

RUN = "real-like"


def expect_rows(tab, server, params, count):
    """The table holds exactly the rows the server lists for `params`, and there are `count` of them."""
    expected = server.get(f"/v1/trajectories?{urlencode([('run_id', RUN), ('limit', 1000), *params])}")
    assert expected["total"] == count, (params, expected["total"])
    expect(tab.locator("tr.rollout-row")).to_have_count(count)
    assert sorted(table_ids(tab)) == sorted(r["id"] for r in expected["data"])


def test_flags_exclusion_reward_range_and_task_combine_and_survive_a_reload(page, corpus_server):
    tab = page.open(f"#/run/{RUN}")
    expect(tab.locator("tr.rollout-row")).to_have_count(13)
    band = tab.locator(".band")
    expect(band).to_have_attribute("title", "Click to require it, shift-click (or alt-click) to exclude it.")

    band.locator(".chip[data-flag=forked]").click()
    expect_rows(tab, corpus_server, [("flag", "forked")], 4)
    band.locator(".chip[data-flag=replayed]").click()
    expect_rows(tab, corpus_server, [("flag", "forked"), ("flag", "replayed")], 3)
    band.locator(".chip[data-flag=unbridged]").click(modifiers=["Shift"])
    flags = [("flag", "forked"), ("flag", "replayed"), ("exclude_flag", "unbridged")]
    expect_rows(tab, corpus_server, flags, 2)
    expect(band.locator(".chip[data-flag=unbridged]")).to_have_attribute("data-flag-state", "excluded")
    expect(band.locator(".chip[data-flag=forked]")).to_have_attribute("aria-pressed", "true")

    tab.fill("#reward-rmin", "0.5")
    tab.press("#reward-rmin", "Enter")
    expect(tab.locator(".filters [data-filter=reward]")).to_have_text("reward ≥ 0.5 ×")
    tab.fill("#reward-rmax", "1")
    tab.press("#reward-rmax", "Enter")
    expect(tab.locator(".filters [data-filter=reward]")).to_have_text("reward 0.5 to 1 ×")
    ranged = [*flags, ("reward_min", "0.5"), ("reward_max", "1")]
    expect_rows(tab, corpus_server, ranged, 2)  # 0.5 and 1.0: both edges are in

    tab.click("#picker")
    tab.type("#picker", "tex")  # typed: the picker asks the server for the values holding it
    expect(tab.locator(".picker-option[data-pick='task=text-forks']")).to_be_visible()
    tab.click(".picker-option[data-pick='task=text']")
    expect_rows(tab, corpus_server, [*ranged, ("task_id", "text")], 1)

    query = tab.evaluate("location.hash").split("?", 1)[1].split("&")
    assert query == ["task=text", "flag=forked", "flag=replayed", "xflag=unbridged", "rmin=0.5", "rmax=1"]
    chips = [f"{name}" for name in tab.locator(".filters .filter-chip").evaluate_all(
        "chips => chips.map(c => c.dataset.filter)")]
    assert chips == ["task", "reward", "flag:forked", "flag:replayed", "xflag:unbridged"]
    page.shot("combined-filters")

    tab.reload()
    tab.wait_for_selector("#main table.rows")
    expect_rows(tab, corpus_server, [*ranged, ("task_id", "text")], 1)
    expect(tab.locator("#reward-rmin")).to_have_value("0.5")
    expect(tab.locator("#reward-rmax")).to_have_value("1")
    expect(band.locator(".chip[data-flag=unbridged]")).to_have_attribute("data-flag-state", "excluded")
    expect(band.locator(".chip[data-flag=replayed]")).to_have_attribute("aria-pressed", "true")
    expect(tab.locator(".filters .filter-chip")).to_have_count(5)

    tab.locator(".filters [data-filter='xflag:unbridged']").click()  # one chip removes its one filter
    expect_rows(tab, corpus_server, [("flag", "forked"), ("flag", "replayed"), ("reward_min", "0.5"),
                                     ("reward_max", "1"), ("task_id", "text")], 1)
    assert "xflag" not in page.hash()

    tab.click(".filters [data-filter=clear]")
    expect(tab.locator("tr.rollout-row")).to_have_count(13)
    expect(tab.locator(".filters .filter-chip")).to_have_count(0)
    expect(tab.locator("#reward-rmin")).to_have_value("")
    assert page.hash() == f"#/run/{RUN}"
    expect(band.locator(".chip.active")).to_have_count(0)


def test_the_picker_adds_annotation_values_and_a_group_flag_in_groups(page, corpus_server):
    tab = page.open("#/run/groups")
    tab.locator(".band .chip[data-flag=retried]").click()
    tab.click("#picker")
    tab.type("#picker", "err")
    tab.click(".picker-option[data-pick='ann=stop_reason=error']")
    expected = corpus_server.get("/v1/groups?run_id=groups&flag=retried&annotation=stop_reason%3Derror&limit=1000")
    expect(tab.locator("tr.group-row")).to_have_count(expected["total"])
    assert sorted(tab.locator("tr.group-row").evaluate_all("rows => rows.map(r => r.dataset.key)")) == sorted(
        g["key"] for g in expected["data"])
    assert "ann=stop_reason%3Derror" in page.hash() and "flag=retried" in page.hash()
