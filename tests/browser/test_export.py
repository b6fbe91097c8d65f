"""The export on the real page: filters set by clicking, then the export link downloads exactly the
rollouts they keep (the server's JSON lines, the listing's total), under a file name of the run."""

import json

from playwright.sync_api import expect

from tests.browser.tab import downloaded
from tests.support.corpus import BROKEN
from tests.support.records import copy_record

RUN = "groups"


def test_export_downloads_the_filtered_rollouts(page, corpus_server):
    tab = page.open(f"#/run/{RUN}/rollouts")
    tab.select_option(".filters select[data-filter=step]", "2")
    tab.locator(".band .chip[data-flag=forked]").click(modifiers=["Shift"])  # excluded
    query = "step=2&exclude_flag=forked"
    listing = corpus_server.get(f"/v1/trajectories?run_id={RUN}&limit=1000&{query}")
    expect(tab.locator("tr.rollout-row")).to_have_count(listing["total"])
    assert 0 < listing["total"] < corpus_server.get(f"/v1/trajectories?run_id={RUN}")["total"]
    tab.locator("button[data-sort=reward]").click()  # the export follows the table's order too
    expect(tab.locator("th:has(button[data-sort=reward])")).to_have_attribute("aria-sort", "descending")
    page.shot("export-links")

    name, body = downloaded(tab, "#main a[data-link=export-rollouts]")
    assert name == f"{RUN}-rollouts.jsonl"
    lines = [json.loads(line) for line in body.splitlines()]
    ordered = corpus_server.get(f"/v1/trajectories?run_id={RUN}&limit=1000&{query}&sort=reward&order=desc")
    assert lines == ordered["data"] and len(lines) == listing["total"]

    name, body = downloaded(tab, "#main a[data-link=export-rows]")
    assert name == f"{RUN}-rows.jsonl"
    with_rows = [json.loads(line) for line in body.splitlines()]
    assert [line["id"] for line in with_rows] == [line["id"] for line in lines]
    assert all(len(row["input_ids"]) == len(row["loss_mask"]) for line in with_rows for row in line["rows"])


def test_a_record_named_export_opens_from_its_row(page_over, tmp_path):
    run = tmp_path / "names"
    run.mkdir()
    copy_record(BROKEN, "tr_ok", run, "export")
    tab = page_over(run).open("#/run/names/rollouts")
    tab.locator('#main tr.rollout-row[data-traj="export"]').click()
    expect(tab.locator("#drawer .traj-id")).to_have_text("export")
    expect(tab.locator("#drawer .notice.error")).to_have_count(0)
