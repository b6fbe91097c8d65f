"""The Chat tab as exact as the Path tab, read through Chromium: calls and results paired in path order
though every call is named `call_0` (on the page and in the snapshot file), and invisible characters in tool
output shown as marks, never applied."""

import re

import pytest
from playwright.sync_api import expect

from tests.agent_records import REUSED, write_reused_ids
from tests.browser.test_snapshot import Offline, saved, served


@pytest.fixture
def offline(browser):
    opened = []

    def open_file(file):
        opened.append(Offline(browser, file))
        return opened[-1]

    yield open_file
    for page in opened:
        page.context.close()


@pytest.fixture
def agents(tmp_path):
    run = tmp_path / "agents"
    run.mkdir()
    return run, write_reused_ids(run)


def check_pairs(tab, nodes):
    """Each call links to its own result and each result to its own call, in path order."""
    for caller, result in nodes["rounds"].values():
        call = tab.locator(f'.chat-card[data-node="n{caller}"] .chat-piece.call')
        expect(call.locator(".chat-jump")).to_have_text(f"result in n{result} →")
        expect(tab.locator(f'.chat-card[data-node="n{result}"] .chat-result-of .chat-jump')) \
            .to_have_text(f"← the call in n{caller}")
    parallel = tab.locator(f'.chat-card[data-node="n{nodes["parallel"]}"] .chat-piece.call .chat-jump')
    expect(parallel).to_have_text([f"result in n{nodes['first']} →", f"result in n{nodes['second']} →"])
    expect(tab.locator(f'.chat-card[data-node="n{nodes["orphan"]}"] .chat-result-of')) \
        .to_contain_text("no call with this id before it on this path")


def test_calls_named_call_0_link_to_their_own_results(page_over, agents):
    run, nodes = agents
    tab = page_over(run).open(f"#/run/agents/rollouts/t/{REUSED}?tab=chat")
    expect(tab.locator("#drawer .chat-card")).to_have_count(19)
    check_pairs(tab, nodes)
    caller, result = nodes["rounds"][1]
    tab.locator(f'.chat-card[data-node="n{result}"] .chat-jump').click()
    expect(tab.locator(f'.chat-card[data-node="n{caller}"]')).to_have_class(re.compile("node-selected"))


def test_the_snapshot_pairs_them_as_the_page_does(temp_server, offline, agents, tmp_path):
    run, nodes = agents
    server = temp_server(run)
    server.wait_indexed()
    page = offline(saved(tmp_path, REUSED, served(server, REUSED, "?run_id=agents&tab=chat")))
    expect(page.tab.locator(".chat-card")).to_have_count(19)
    check_pairs(page.tab, nodes)
    page.check()
