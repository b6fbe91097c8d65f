"""The run index on the page: the run's header says what it holds, its rows without a record are listed
greyed above the Rollouts table with why (as text), and the not-trained flag shows as any flag does."""

import json
import re
import shutil
from urllib.parse import quote

from playwright.sync_api import expect

from tests.support.corpus import FIXTURES, PULLED

EXPECTED = json.loads((FIXTURES / "pulled-expected.json").read_text())["layouts"]
MARKUP = "<img src=x onerror=alert(1)>"


def test_index_rows_without_a_record_are_greyed_with_why(page_over, tmp_path):
    root = tmp_path / "pulled"
    shutil.copytree(PULLED, root)
    step_3 = root / "new" / "train" / "index" / "step-3.json"
    document = json.loads(step_3.read_text())
    hostile = next(row for row in document["rows"] if row["record"] and row["id"] not in EXPECTED["new"]["records"])
    hostile["record"]["path"] = f"/scratch/{MARKUP}"
    step_3.write_text(json.dumps(document))
    page = page_over(root)
    tab = page.open("#/run/train/rollouts")
    expect(tab.locator(".run-head .facts")).to_contain_text("run index: steps 2..3 · 20 rows · 8 without a record here")
    missing = EXPECTED["new"]["rows_without_record_here"]
    expect(tab.locator(".missing-notice")).to_contain_text(f"{len(missing)} rows of the run index have no record")
    tab.locator('a[data-link="missing"]').click()
    rows = tab.locator("table.missing tr.missing-row")
    expect(rows).to_have_count(len(missing))
    expect(rows.first).to_contain_text("on node-2's disk at /scratch/skycap/grpo-demo/train/")
    expect(tab.locator(f'table.missing tr.missing-row[title*="{MARKUP}"]')).to_have_count(1)
    expect(tab.locator("table.missing td.why", has_text=MARKUP)).to_have_count(1)  # the characters, as text
    assert tab.locator("table.missing img").count() == 0
    page.shot("run-index-missing")
    tab.locator('a[data-link="missing"]').click()
    expect(rows).to_have_count(0)

    tab = page.open("#/run/old/rollouts")
    flagged = sum(1 for entry in EXPECTED["old"]["records"].values()
                  if entry["in_index"] and entry["trained"] is False and not entry["superseded"])
    expect(tab.locator('tr.rollout-row .badge[data-flag="not-trained"]')).to_have_count(flagged)
    assert "did not train" in tab.locator('.band-box [data-flag="not-trained"]').first.get_attribute("title")
    assert page.errors == [] and page.dialogs == []


def said(entry) -> str:
    """The trained column's text for a record, from pulled-expected.json."""
    if not entry["in_index"]:
        return "-"
    trained = {True: "yes", False: "no", None: "not said"}[entry["trained"]]
    return f"{trained} · superseded" if entry["superseded"] else trained


def test_the_trained_column_and_the_drawer_say_what_the_index_says(page_over, tmp_path):
    page = page_over(shutil.copytree(PULLED, tmp_path / "pulled"))
    records = EXPECTED["old"]["records"]
    tab = page.open("#/run/old/rollouts")
    rows = tab.locator("tr.rollout-row")
    expect(rows).to_have_count(len(records))
    shown = dict(zip(rows.evaluate_all("rows => rows.map((row) => row.dataset.traj)"),
                     tab.locator("tr.rollout-row td.trained").all_inner_texts(), strict=True))
    assert shown == {record_id: said(entry) for record_id, entry in records.items()}
    tab.locator('button.sort[data-sort="trained"]').click()
    expect(tab.locator('th[aria-sort="descending"] button[data-sort="trained"]')).to_have_count(1)
    assert "sort=trained" in page.hash()
    expect(rows.first.locator("td.trained")).to_have_text(re.compile("^yes"))
    texts = tab.locator("tr.rollout-row td.trained").all_inner_texts()
    rank = [{"yes": 0, "no": 1}.get(text.split(" ")[0], 2) for text in texts]
    assert rank == sorted(rank) and set(rank) == {0, 1, 2}  # trained first, then not trained, then not said
    record_id, entry = next((i, e) for i, e in records.items() if e["in_index"] and e["trained"] is False)
    tab.locator(f'tr.rollout-row[data-traj="{record_id}"]').click()
    expect(tab.locator('.drawer-head [data-fact="trained (run index)"] dd')).to_have_text(said(entry))
    assert page.errors == [] and page.dialogs == []


def test_a_run_without_an_index_has_no_trained_column(page_over, tmp_path):
    page = page_over(shutil.copytree(FIXTURES / "groups", tmp_path / "groups"))
    tab = page.open("#/run/groups/rollouts")
    expect(tab.locator("tr.rollout-row").first).to_be_visible()
    assert tab.locator('button.sort[data-sort="trained"]').count() == 0
    assert tab.locator("td.trained").count() == 0
    expect(tab.locator(".run-head .facts")).not_to_contain_text("run index")
    expect(tab.locator(".run-head .facts")).to_contain_text(" · tokenizer fake")  # labelled, not a bare `· fake`


def test_an_attempt_the_index_supersedes_is_greyed_under_its_group(page_over, tmp_path):
    """Its retry is not in this copy: it is still shown under its group, `↳` and greyed, and not counted."""
    page = page_over(shutil.copytree(PULLED, tmp_path / "pulled"))
    said = {rid for rid, entry in EXPECTED["old"]["records"].items() if entry["in_index"] and entry["superseded"]}
    groups = page.server.get("/v1/groups?run_id=old&limit=1000")["data"]
    def superseded(group):
        return page.server.get(f"/v1/groups/{quote(group['key'], safe='')}?run_id=old")["superseded"]

    group, record_id = next((group, row["id"]) for group in groups for row in superseded(group)
                            if row["id"] in said and row["superseded_by"] is None)
    tab = page.open("#/run/old/groups")
    tab.locator(f'tr.group-row[data-key="{group["key"]}"]').click()
    row = tab.locator(f'tr.rollout-row.superseded[data-traj="{record_id}"]')
    expect(row).to_have_count(1)
    expect(row.locator("td.member")).to_contain_text("↳")
    assert "not in this copy" in row.get_attribute("title")
    assert record_id not in {member["id"] for member in group["rewards"]}
