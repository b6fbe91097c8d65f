"""The Chat tab, read as a user reads an agent rollout: every message a card in order, tool calls
linked to their results, reasoning and long texts folded, the node links to the Path tab and back,
pins, the find bar, the model-turn keys, forks, failures and cut replies, text mode, and a 30k-node
record scrolled to its end."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.tab import arrives
from tests.support.chain_record import write_chain
from tests.support.records import write_text_record

TOOLS = "tr_75f4b514aac0a32f"  # real-like: a system prompt, a tool call, its result, three more turns


def open_chat(tab, record, run="real-like", query=""):
    tab.goto(f"{tab.url.split('#')[0]}#/run/{run}/rollouts/t/{record}?tab=chat{query}")
    expect(tab.locator("#drawer .chat-tab")).to_be_visible()
    return tab.locator("#drawer .chat-card")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_message_is_a_card_and_tool_calls_link_to_their_results(page_on, corpus_server, scheme):
    page = page_on(corpus_server, color_scheme=scheme)
    tab = page.open(f"#/run/real-like/rollouts/t/{TOOLS}")
    tab.click("#drawer .tab[data-tab=chat]")
    messages = corpus_server.get(f"/v1/trajectories/{TOOLS}/paths/0/messages?run_id=real-like")
    cards = tab.locator("#drawer .chat-card")
    expect(cards).to_have_count(len(messages["messages"]))
    assert cards.evaluate_all("cs => cs.map(c => c.dataset.role)") == [m["role"] for m in messages["messages"]]
    assert cards.evaluate_all("cs => cs.map(c => c.dataset.node)") == messages["node_ids"]
    call = tab.locator('.chat-card[data-node="n2"] .chat-piece.call')
    expect(call.locator(".chat-call-head strong")).to_have_text("search")
    expect(call).to_contain_text("arguments (JSON, pretty-printed)")
    expect(call.locator("pre")).to_have_text("{}")
    expect(tab.locator('.chat-card[data-node="n2"] .chat-facts')).to_contain_text("trained on this path")
    expect(tab.locator('.chat-card[data-node="n2"] .chat-facts')).to_contain_text("finish: tool_calls")
    expect(tab.locator('.chat-card[data-node="n2"] .chat-facts')).to_contain_text(re.compile(r"lowest logprob -\d"))
    expect(tab.locator('.chat-card[data-node="n0"] .chat-facts')).to_have_count(0)  # a client message has none
    result = tab.locator('.chat-card[data-node="n3"]')
    expect(result).to_contain_text("result of tool call call_0")
    expect(result.locator("pre")).to_have_text("found x")
    call.locator(".chat-jump").click()  # "result in n3 →"
    expect(result).to_have_class(re.compile("node-selected"))
    result.locator(".chat-jump").click()  # "← the call in n2"
    expect(tab.locator('.chat-card[data-node="n2"]')).to_have_class(re.compile("node-selected"))
    tools = tab.locator("details.chat-fold.tools")
    expect(tools.locator("summary")).to_contain_text("search")
    expect(tools.locator("pre")).not_to_be_visible()  # folded at the top
    tools.locator("summary").click()
    expect(tools.locator("pre")).to_contain_text('"parameters"')
    page.shot(f"chat-tools-{scheme}")


def test_a_card_opens_its_node_in_the_path_tab_and_back(page, corpus_server):
    tab = page.open("#/")
    open_chat(tab, TOOLS)
    tab.locator('.chat-card[data-node="n4"] .node-link').click()
    expect(tab.locator("#drawer .tab[data-tab=path]")).to_have_attribute("aria-selected", "true")
    expect(tab.locator('.block[data-node="n4"]').first).to_have_class(re.compile("node-selected"))
    tab.go_back()
    expect(tab.locator("#drawer .tab[data-tab=chat]")).to_have_attribute("aria-selected", "true")
    tab.click("#drawer .tab[data-tab=path]")
    tab.locator('.block[data-node="n6"] .to-chat').first.click()  # from a block of the Path tab to its card
    expect(tab.locator('.chat-card[data-node="n6"]')).to_have_class(re.compile("node-selected"))
    expect(tab.locator('.chat-card[data-node="n6"]')).to_be_in_viewport()


def test_reasoning_and_long_texts_fold_and_unfold(page_over, tmp_path):
    thought = "\n".join(f"step {i} of the plan" for i in range(30))
    result = "\n".join(f"line {i} of the tool's output" for i in range(40))

    def agent(document):
        document["nodes"][1]["message"]["reasoning_content"] = thought
        document["nodes"][0]["message"]["content"] = result

    (tmp_path / "run").mkdir()
    write_text_record(tmp_path / "run", "tr_reason", "", "<think>inline thought</think>the answer", edit=agent)
    tab = page_over(tmp_path / "run").open("#/")
    cards = open_chat(tab, "tr_reason", run="run")
    reply = cards.nth(1)
    folds = reply.locator("details.chat-fold.reasoning")
    expect(folds).to_have_count(2)  # the reasoning field, and the <think> kept in the text
    expect(folds.first.locator("summary")).to_have_text(f"reasoning · {len(thought):,} chars, 30 lines")
    expect(folds.nth(1).locator("summary")).to_contain_text("<think> in the text")
    expect(folds.first.locator("pre")).not_to_be_visible()
    folds.first.locator("summary").click()
    expect(folds.first.locator("pre")).to_contain_text("step 29 of the plan")
    expect(reply.locator(".chat-piece.text pre")).to_have_text("the answer")
    long = cards.nth(0).locator(".chat-piece.text pre")
    expect(long).to_have_class(re.compile("folded"))
    folded_height = long.evaluate("e => e.clientHeight")
    cards.nth(0).locator(".show-all").click()
    expect(long).not_to_have_class(re.compile("folded"))
    assert long.evaluate("e => e.clientHeight") > folded_height
    expect(reply.locator(".chat-facts")).to_contain_text("chars")  # text mode: characters, not tokens


def test_a_pinned_message_is_in_the_link_and_marked_when_opened(page, corpus_server):
    tab = page.open("#/")
    cards = open_chat(tab, TOOLS)
    cards.nth(6).locator(".pin-msg").click()
    expect(cards.nth(6)).to_have_class(re.compile("pinned"))
    assert "msg=6" in page.hash()
    link = tab.url
    fresh = page.context.new_page()
    fresh.goto(link)
    pinned = fresh.locator(".chat-card.pinned")
    expect(pinned).to_have_attribute("data-node", "n6")
    expect(pinned).to_be_in_viewport()
    fresh.close()
    tab.keyboard.press("Escape")  # unpins, as it does a token; the drawer stays open
    expect(tab.locator(".chat-card.pinned")).to_have_count(0)
    assert "msg=" not in page.hash()
    expect(cards.first).to_be_visible()
    cards.nth(2).locator(".pin-msg").click()
    expect(cards.nth(2)).to_have_class(re.compile("pinned"))
    cards.nth(2).locator(".pin-msg").click()  # a second click unpins it
    expect(tab.locator(".chat-card.pinned")).to_have_count(0)
    assert "msg=" not in page.hash()


def test_find_and_the_model_turn_keys_work_in_the_chat_tab(page, corpus_server):
    tab = page.open("#/")
    open_chat(tab, TOOLS)
    tab.locator("#drawer-panel").focus()
    turns = []
    for _ in range(4):
        tab.keyboard.press("m")
        turns.append(tab.evaluate("document.activeElement.closest('.chat-card')?.dataset.node"))
    assert turns == ["n2", "n4", "n6", "n8"]
    tab.keyboard.press("M")
    expect(tab.locator(".chat-card:has(.node-link:focus)")).to_have_attribute("data-node", "n6")
    tab.keyboard.press("f")
    tab.keyboard.type("step 1")
    expect(tab.locator(".find-count")).to_have_text("1 of 1")
    assert tab.evaluate("CSS.highlights.get('find-hit')?.size") == 1
    tab.keyboard.press("Enter")
    expect(tab.locator('.chat-card[data-node="n7"]')).to_be_in_viewport()


def test_a_fork_folds_what_it_shares_and_cut_replies_and_failures_are_marked(page, corpus_server):
    tab = page.open("#/")
    open_chat(tab, "tr_shared_reply", run="spec", query="&path=1")
    shared = tab.locator("details.chat-shared")
    expect(shared.locator("summary")).to_have_text("same as path 0 up to n1 (2 messages): show")
    expect(tab.locator('.chat-card[data-node="n1"]')).not_to_be_visible()
    shared.locator("summary").click()
    expect(tab.locator('.chat-card[data-node="n1"] .chat-facts')).to_contain_text("trained in path 0")
    expect(tab.locator('.chat-cards .chat-card[data-node="n5"] .chat-facts')).to_contain_text("trained on this path")

    open_chat(tab, "tr_truncated", run="spec")
    expect(tab.locator('.chat-card[data-node="n1"] .chat-facts')).to_contain_text("cut at max tokens (finish: length)")
    open_chat(tab, "tr_f4c44e2c3f5f9d60")
    expect(tab.locator('.chat-card[data-node="n1"] .chat-failures')).to_contain_text(
        'a call failed after this message (placed by time) 500: {"error": "boom"}')


def test_a_30k_node_chat_scrolls_to_its_end(page_on, chain_server):
    tab = page_on(chain_server).open("#/run/long/rollouts/t/chain?tab=chat")
    tab.set_default_timeout(120_000)  # the server reads 30k nodes for the first part
    arrives(tab.locator(".chat-card"))
    more = tab.locator("button.more")
    expect(more).to_have_text("5,000 of 30,000 messages shown · show more")
    content = tab.locator(".drawer-content")
    box = content.bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    last = tab.locator('.chat-card[data-node="n29999"]')
    for _ in range(2000):  # each wheel brings the "more" row into sight, which asks for the next part
        if last.count():
            break
        tab.mouse.wheel(0, 10**7)
        tab.wait_for_timeout(50)
    last.scroll_into_view_if_needed()
    expect(last).to_contain_text("turn 29999")
    expect(tab.locator("button.more")).to_have_count(0)


def tool_call_across_parts(document):
    """The last message of the first part (5,000 messages) calls a tool; its result opens the second."""
    nodes = document["nodes"]
    nodes[4999]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c4999", "type": "function", "function": {"name": "look_up", "arguments": "{\"q\": 1}"}}]}
    nodes[5000]["role"] = "tool"
    nodes[5000]["message"] = {"role": "tool", "tool_call_id": "c4999", "content": "found it"}


def test_a_later_part_comes_after_the_cards_drawn_and_links_a_call_to_its_result(page_over, tmp_path):
    write_chain(tmp_path / "long", 5002, edit=tool_call_across_parts)
    tab = page_over(tmp_path).open("#/run/long/rollouts/t/chain?tab=chat")
    arrives(tab.locator(".chat-card"))
    call = tab.locator('.chat-card[data-node="n4999"]')
    call.scroll_into_view_if_needed()  # its body is drawn now, and the "more" row in sight asks for the rest
    call.evaluate("card => { card.dataset.drawnFirst = 'yes'; }")
    arrives(tab.locator('.chat-card[data-node="n5001"]'), state="attached")
    expect(tab.locator("button.more")).to_have_count(0)
    expect(tab.locator(".chat-card")).to_have_count(5002)
    expect(call).to_have_attribute("data-drawn-first", "yes")  # the same element: the first part was not drawn again
    link = call.locator('.chat-piece.call button[data-jump="n5000"]')
    expect(link).to_have_text("result in n5000 →")  # the call said "no result" until its result came
    link.click()
    result = tab.locator('.chat-card[data-node="n5000"]')
    expect(result).to_have_class(re.compile(r"\bnode-selected\b"))
    expect(result).to_contain_text("found it")
    expect(result.locator('button[data-jump="n4999"]')).to_have_text("← the call in n4999")


def test_pinning_a_message_deep_in_a_long_chat_leaves_it_where_it_is(page_on, chain_server):
    """A pin is marked on the cards drawn, not drawn again: the cards above it, whose bodies a redraw
    would leave undrawn, kept their height, so the card stays under the pointer."""
    page = page_on(chain_server)
    tab = page.open("#/run/long/rollouts/t/chain?tab=chat")
    tab.set_default_timeout(120_000)  # the server reads 30k nodes for the first part
    card = tab.locator('.chat-card[data-node="n3001"]')
    arrives(card, state="attached")
    card.scroll_into_view_if_needed()
    arrives(card.locator(".chat-text"))  # its body is drawn
    expect(card.locator(".chat-text")).to_have_text("turn 3001")
    top = card.bounding_box()["y"]
    card.locator(".pin-msg").click()
    expect(card).to_have_class(re.compile(r"\bpinned\b"))
    assert "msg=3001" in page.hash()
    assert abs(card.bounding_box()["y"] - top) < 1
    card.locator(".pin-msg").click()
    expect(tab.locator(".chat-card.pinned")).to_have_count(0)
    assert abs(card.bounding_box()["y"] - top) < 1
