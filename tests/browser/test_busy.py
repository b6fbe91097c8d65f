"""The page waits out a busy server: with every long answer's slot held by clients that do not read,
opening a rollout gets 503 with Retry-After, and the page asks again until the slots free up, then
shows it, no error said."""

import socket

from playwright.sync_api import expect

from skycap_viewer.server.connections import MAX_LONG_ANSWERS
from tests.support.records import write_text_record
from tests.support.stalled_clients import LONG_TEXT, stalled_connection


def test_a_rollout_opened_while_the_server_is_busy_shows_once_it_is_not(page_over, tmp_path):
    run = tmp_path / "long"
    run.mkdir()
    write_text_record(run, "tr_long", LONG_TEXT, "ok")
    write_text_record(run, "tr_short", "a short question", "a short answer")
    page = page_over(tmp_path)
    tab = page.open("#/run/long/rollouts")
    stalled = [stalled_connection(page.server.port) for _ in range(MAX_LONG_ANSWERS)]
    try:
        for connection in stalled:  # each is answered: its send stalls, holding a slot
            connection.settimeout(30)
            assert connection.recv(12, socket.MSG_PEEK) == b"HTTP/1.1 200"
        busy = []
        tab.on("response", lambda response: response.status == 503 and busy.append(response.url))
        tab.locator("tr.rollout-row", has_text="tr_short").click()
        tab.wait_for_event("response", lambda response: response.status == 503)
    finally:
        for connection in stalled:
            connection.close()
    expect(tab.locator("#drawer .traj-id")).to_have_text("tr_short", timeout=15_000)
    expect(tab.locator("#drawer .block").first).to_be_visible()
    said_busy = "Failed to load resource: the server responded with a status of 503 (Service Unavailable)"
    assert busy and page.errors and set(page.errors) == {said_busy}, (busy, page.errors)  # Chromium's own line
    page.errors.clear()
