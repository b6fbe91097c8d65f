"""Layout where it carries meaning, in both themes: the listings' rows each on one line with every cell
under its header, and the compare view's two sides side by side (`layout.py`)."""

import pytest
from playwright.sync_api import expect

from tests.browser.layout import side_by_side_problems, table_problems

SCHEMES = ["light", "dark"]


def themed(page_on, server, scheme, route):
    page = page_on(server, color_scheme=scheme)
    tab = page.open(route)
    assert tab.evaluate("document.documentElement.dataset.theme") == scheme
    return page, tab


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_rollouts_and_groups_tables_keep_their_columns(page_on, corpus_server, scheme):
    page, tab = themed(page_on, corpus_server, scheme, "#/run/groups/rollouts")
    expect(tab.locator("table.rollouts tr.rollout-row").first).to_be_visible()
    assert table_problems(tab, "table.rollouts", "tr.rollout-row") == []
    page.open("#/run/groups/groups")
    expect(tab.locator("table.groups tr.group-row").first).to_be_visible()
    assert table_problems(tab, "table.groups", "tr.group-row") == []


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_compare_view_shows_its_two_sides_side_by_side(page_on, corpus_server, scheme):
    ids = [row["id"] for row in corpus_server.get("/v1/trajectories?run_id=groups")["data"]]
    tab = themed(page_on, corpus_server, scheme, f"#/run/groups/compare?a={ids[0]}&b={ids[2]}")[1]
    tab.locator(".pair-view .pair-shared").wait_for()
    expect(tab.locator(".pair-view .pair-row").first).to_be_visible()
    assert side_by_side_problems(tab, ".pair-view .pair-row") == []


ID_CUT = """(cell) => {
  const box = cell.querySelector('.fit-id');
  const text = box.querySelector('.id-text').getBoundingClientRect();
  return {text: cell.innerText, cut: box.scrollWidth > box.clientWidth,
          end_shown: text.right <= box.getBoundingClientRect().right + 1,
          lines: Math.round(box.getBoundingClientRect().height / parseFloat(getComputedStyle(cell).lineHeight))};
}"""


def test_ids_are_cut_only_when_they_do_not_fit(page_over, tmp_path):
    """A usual id is whole (it fits); a very long one is cut at its head, its end (where ids differ)
    shown; one line either way, and the whole id is the cell's one text (what a copy takes)."""
    from skycap_viewer.demo.writer import RecordBuilder

    run = tmp_path / "ids"
    run.mkdir()
    ids = ["tr_0123456789abcdef", "tr_" + "long" * 16 + "_tail1234"]
    for number, record_id in enumerate(ids):
        builder = RecordBuilder(record_id, "text", meta={"task": "ids"}, created_at=1_790_000_000.0 + number)
        builder.add_model(builder.add_client(None, "user", "question"), "answer")
        builder.write(run)
    tab = page_over(run).open("#/run/ids/rollouts")
    shown = {}
    for record_id in ids:
        cell = tab.locator(f'tr.rollout-row[data-traj="{record_id}"] td.id')
        expect(cell).to_be_visible()
        shown[record_id] = cell.evaluate(ID_CUT)
    assert [shown[record_id]["text"] for record_id in ids] == ids
    assert all(entry["lines"] == 1 for entry in shown.values()), shown
    assert [shown[record_id]["cut"] for record_id in ids] == [False, True]
    assert all(entry["end_shown"] for entry in shown.values()), shown
