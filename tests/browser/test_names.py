"""Odd record names and cut values on the real page: a record named with `#`, `?`, `%` or spaces
opens from its table row (the page encodes its id in the URL and the API request), and a value a
listing row kept cut is shown as cut, as text."""

from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.support.corpus import BROKEN
from tests.support.records import copy_record

ODD_IDS = ["hash#tag", "what?q=1", "100%25 sure", "ünï — 名前"]


@pytest.fixture
def odd_run(tmp_path):
    run = tmp_path / "odd"
    run.mkdir()
    for record_id in ODD_IDS:
        copy_record(BROKEN, "tr_ok", run, record_id)
    copy_record(BROKEN, "tr_ok", run, "tr_cut", edit=lambda d: d.update(annotations={"reward": "x" * 5000}))
    return run


def test_an_odd_name_opens_from_its_row(page_over, odd_run):
    page = page_over(odd_run)
    tab = page.open("#/run/odd/rollouts")
    for record_id in ODD_IDS:
        tab.locator(f'#main tr.rollout-row[data-traj="{record_id}"]').click()
        expect(tab.locator("#drawer .traj-id")).to_have_text(record_id)
        assert f"/t/{quote(record_id, safe='')}" in page.hash()
        tab.keyboard.press("Escape")


def test_a_cut_value_is_shown_as_cut(page_over, odd_run):
    tab = page_over(odd_run).open("#/run/odd/rollouts")
    cell = tab.locator('#main tr.rollout-row[data-traj="tr_cut"] .reward-num')
    expect(cell).to_have_attribute("title", "recorded as (cut: a string of 5,002 bytes of JSON; open the rollout "
                                            "for it whole)")
