"""The Path tab's take-away buttons: the trainer's row downloaded, the chat copied and downloaded."""

import json

from playwright.sync_api import expect

from tests.browser.tab import downloaded
from tests.support.corpus import FIXTURES
from tests.support.records import copy_record

CLIPBOARD = ["clipboard-read", "clipboard-write"]


def test_download_row_saves_the_paths_row_as_the_api_sends_it(page, corpus_server):
    record, run, path = "tr_rule_two_rows", "rules", 2
    tab = page.open(f"#/run/{run}/rollouts/t/{record}?tab=path&path={path}")
    button = tab.locator("#drawer [data-takeaway=row]")
    expect(button).to_be_enabled()
    name, body = downloaded(tab, button)
    assert name == f"{record}-path{path}-row.json"
    saved = json.loads(body)
    assert saved == corpus_server.get(f"/v1/trajectories/{record}/paths/{path}/row?run_id={run}")
    assert saved["path"] == path and sum(saved["loss_mask"]) == saved["trained_count"] > 0
    page.shot("takeaway-row")


def test_copy_and_download_messages_give_the_paths_chat(page_on, corpus_server):
    page = page_on(corpus_server, permissions=CLIPBOARD)
    record, run, path = "tr_86f0b750382298e2", "real-like", 3
    answer = corpus_server.get(f"/v1/trajectories/{record}/paths/{path}/messages?run_id={run}")
    tab = page.open(f"#/run/{run}/rollouts/t/{record}?tab=path&path={path}")
    copy = tab.locator("#drawer [data-takeaway=copy-messages]")
    copy.click()
    expect(copy).to_have_text("copied")
    assert json.loads(tab.evaluate("navigator.clipboard.readText()")) == answer["messages"]
    name, body = downloaded(tab, "#drawer [data-takeaway=messages]")
    assert name == f"{record}-path{path}-messages.json"
    assert json.loads(body) == answer


def test_a_text_mode_path_offers_its_chat_but_no_row(page_on, corpus_server):
    page = page_on(corpus_server, permissions=CLIPBOARD)
    record, run = "tr_rule_text_final", "rules"
    tab = page.open(f"#/run/{run}/rollouts/t/{record}?tab=path&path=1")
    row = tab.locator("#drawer [data-takeaway=row]")
    expect(row).to_be_disabled()
    expect(row).to_have_attribute("title", "no token row: this path is shown from message text")
    tab.locator("#drawer [data-takeaway=copy-messages]").click()
    expect(tab.locator("#drawer [data-takeaway=copy-messages]")).to_have_text("copied")
    messages = corpus_server.get(f"/v1/trajectories/{record}/paths/1/messages?run_id={run}")["messages"]
    assert json.loads(tab.evaluate("navigator.clipboard.readText()")) == messages


def test_a_refused_row_says_why_beside_the_buttons(page_over, tmp_path):
    """The tokens sidecar goes away after the rollout was drawn: the row the button asks for is refused."""
    run = tmp_path / "run"
    run.mkdir()
    copy_record(FIXTURES / "rules", "tr_rule_two_rows", run)
    page = page_over(run)
    tab = page.open("#/run/run/rollouts/t/tr_rule_two_rows?tab=path")
    button = tab.locator("#drawer [data-takeaway=row]")
    expect(button).to_be_enabled()
    (run / "tr_rule_two_rows.tokens.zst").unlink()
    button.click()
    expect(tab.locator("#drawer .takeaway-status")).to_have_text(
        "row: trajectory tr_rule_two_rows path 0 has no token row: "
        "its tokens sidecar is listed but not in this directory (a mirror that left it out?)")
    page.errors[:] = [e for e in page.errors if "status of 400" not in e]  # the browser logs the refusal it asked for
