"""Links to a place: a pinned token or block in the URL (`tok`, `blk`), brought back by a reload or a
pasted link (into a later part, into a long block drawn lazily), the Path tab's options across a
reload, and a block copied as Markdown."""

import re

from playwright.sync_api import expect

FORKED = "tr_86f0b750382298e2"  # real-like: the corpus's longest rollout, 5 paths
GROUPED = "tr_fea17a04aa9905d5"  # groups: token mode, logprobs
WAIT = 120_000  # ms: the server reads 30k nodes per part while the page polls (slow on a loaded machine)
CLIPBOARD = ["clipboard-read", "clipboard-write"]
PINNED = re.compile(r"\bpinned\b")


def last_sampled(paths, path_index=0):
    """(block, node, node token index, path position) of the last sampled token of a path."""
    block = [b for b in paths["paths"][path_index]["blocks"] if b["kind"] == "sampled"][-1]
    return block, paths["nodes"][block["node_id"]], block["node_end"] - 1, block["end"] - 1


def long_reply_record(run):
    """A folded prompt, a reply of 1,200 lines (many chunks, drawn as they come near), then a reply
    holding a code fence and a tab."""
    from skycap_viewer.demo.writer import RecordBuilder

    builder = RecordBuilder("tr_long", "tokens")
    user = builder.add_client(None, "user", "please plan it out " * 40)
    reply = builder.add_model(user, "".join(f"line {k:04d} of the plan\n" for k in range(1200)))
    builder.add_model(builder.add_client(reply, "user", "show the code"), "here:\n```py\nx\t= 1\n```\ndone")
    builder.write(run)


def test_clicking_a_token_pins_it_and_a_reload_scrolls_back_to_it(page_on, corpus_server):
    paths = corpus_server.get(f"/v1/trajectories/{FORKED}/paths?run_id=real-like")
    block, node, index, position = last_sampled(paths)
    page = page_on(corpus_server, viewport={"width": 1500, "height": 500})  # short: the token is below the fold
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=path")
    section = tab.locator(f'.block[data-node="{block["node_id"]}"][data-start="{block["start"]}"]')
    token = section.locator(f'span.t[data-i="{index}"]')
    token.scroll_into_view_if_needed()
    token.click()
    assert f"tok={position}" in page.hash()
    expect(token).to_have_class(PINNED)
    readout = tab.locator("#readout")
    expect(readout).to_contain_text("pinned · ")
    expect(readout).to_contain_text(f"#{position}")
    expect(readout).to_contain_text(f"id {node['token_ids'][index]}")
    tab.locator(".block span.t").first.hover()  # the readout stays on the pinned token
    expect(readout).to_contain_text(f"#{position}")

    tab.reload()
    section = tab.locator(f'.block[data-node="{block["node_id"]}"][data-start="{block["start"]}"]')
    token = section.locator(f'span.t[data-i="{index}"]')
    expect(token).to_have_class(PINNED)
    expect(token).to_be_in_viewport()
    assert tab.locator(".drawer-content").evaluate("(box) => box.scrollTop") > 0
    expect(tab.locator("span.t.pinned")).to_have_count(1)
    page.shot("token-link")

    token.click()  # again: unpinned
    expect(token).not_to_have_class(PINNED)
    assert "tok=" not in page.hash()
    expect(readout).to_have_text("hover a token")
    token.click()
    assert f"tok={position}" in page.hash()
    tab.keyboard.press("Escape")  # Esc unpins first, then closes
    expect(tab.locator("span.t.pinned")).to_have_count(0)
    assert "tok=" not in page.hash()
    expect(tab.locator("#drawer")).to_be_visible()
    tab.keyboard.press("Escape")
    expect(tab.locator("#drawer")).to_be_hidden()


def test_a_block_pin_and_a_token_link_into_hidden_given_blocks(page, corpus_server):
    paths = corpus_server.get(f"/v1/trajectories/{GROUPED}/paths?run_id=groups")
    blocks = paths["paths"][0]["blocks"]
    at = max(i for i, b in enumerate(blocks) if b["kind"] == "sampled")
    tab = page.open(f"#/run/groups/rollouts/t/{GROUPED}?tab=path")
    tab.locator(f'.block[data-blk="{at}"] button.pin-block').click()
    assert f"blk={at}" in page.hash()
    expect(tab.locator(f'.block[data-blk="{at}"]')).to_have_class(PINNED)
    tab.reload()
    expect(tab.locator(f'.block[data-blk="{at}"]')).to_have_class(PINNED)
    tab.locator(f'.block[data-blk="{at}"] button.pin-block').click()
    expect(tab.locator(".block.pinned")).to_have_count(0)
    assert "blk=" not in page.hash()

    given = next(b for b in blocks if b["kind"] == "given")  # hidden by hide=given: the link shows them
    tab = page.open(f"#/run/groups/rollouts/t/{GROUPED}?tab=path&hide=given&tok={given['start']}")
    expect(tab.locator("span.t.pinned")).to_have_count(1)
    pinned = tab.locator(f'.block[data-start="{given["start"]}"] span.t.pinned')
    expect(pinned).to_have_attribute("data-i", str(given["node_start"]))
    expect(tab.locator("input[data-option=given]")).to_be_checked()


def test_a_token_past_the_end_says_so(page, corpus_server):
    paths = corpus_server.get(f"/v1/trajectories/{GROUPED}/paths?run_id=groups")
    size = paths["paths"][0]["token_count"]
    tab = page.open(f"#/run/groups/rollouts/t/{GROUPED}?tab=path&tok={size}")
    expect(tab.locator(".notice.pin-past")).to_have_text(
        f"token {size:,} does not exist: path 0 has {size:,} tokens (0–{size - 1:,}).")
    expect(tab.locator(".block").first).to_be_visible()  # the path is still shown
    expect(tab.locator(".pinned")).to_have_count(0)
    tab = page.open(f"#/run/groups/rollouts/t/{GROUPED}?tab=path&blk=999")
    expect(tab.locator(".notice.pin-past")).to_contain_text("block 999 does not exist: path 0 has")
    tab = page.open(f"#/run/groups/rollouts/t/{GROUPED}?tab=bogus")  # a tab there is not: said, the Path shown
    expect(tab.locator("#drawer .notice.bad-tab")).to_contain_text('asks for a tab "bogus", which there is not')
    expect(tab.locator("button[data-tab=path][aria-selected=true]")).to_have_count(1)
    tab.locator("button[data-tab=tree]").click()
    expect(tab.locator("#drawer .notice.bad-tab")).to_have_count(0)


def test_a_pasted_link_to_a_token_in_a_long_lazily_drawn_block(page_over, page_on, tmp_path):
    run = tmp_path / "long"
    run.mkdir()
    long_reply_record(run)
    page = page_over(run)
    paths = page.server.get("/v1/trajectories/tr_long/paths?run_id=long")
    reply = next(b for b in paths["paths"][0]["blocks"] if b["kind"] == "sampled" and b["token_count"] > 20_000)
    index = reply["node_end"] - 30  # in the block's last chunk: far below what is drawn at first
    position = reply["start"] + (index - reply["node_start"])
    tab = page.open("#/run/long/rollouts/t/tr_long?tab=path")
    section = tab.locator(f'.block[data-start="{reply["start"]}"]')
    expect(section.locator(".chunk").last).not_to_have_class(re.compile(r"\btokens\b"))  # not drawn yet
    assert section.locator(f'span.t[data-i="{index}"]').count() == 0

    fresh = page_on(page.server).open(f"#/run/long/rollouts/t/tr_long?tab=path&tok={position}")
    token = fresh.locator(f'.block[data-start="{reply["start"]}"] span.t[data-i="{index}"]')
    expect(token).to_have_class(PINNED)
    expect(token).to_be_in_viewport()
    node = paths["nodes"][reply["node_id"]]
    expect(token).to_have_text(node["text"][node["token_offsets"][index]:node["token_offsets"][index + 1]])


def test_a_pasted_link_to_a_token_in_a_part_not_loaded_yet(page_on, chain_server):
    later = chain_server.get("/v1/trajectories/chain/paths?run_id=long&path=0&from=25000")["blocks"][0]
    assert later["node_id"] == "n25000"
    position = later["start"] + 2  # text mode: a character position, its block pinned
    tab = page_on(chain_server).open(f"#/run/long/rollouts/t/chain?tab=path&tok={position}")
    block = tab.locator('.block.pinned[data-node="n25000"]')
    expect(block).to_have_count(1, timeout=WAIT)  # a count, not a state of a missing element: see `arrives`
    expect(block).to_be_in_viewport()
    assert tab.evaluate("() => CSS.highlights.get('pinned') && [...CSS.highlights.get('pinned')][0].toString()") == \
        "turn 25000"[2]
    expect(tab.locator("button.more")).to_have_count(0)  # its part was the last: every part was fetched


def test_the_path_options_survive_a_reload(page, corpus_server):
    tab = page.open(f"#/run/groups/rollouts/t/{GROUPED}?tab=path")
    tab.uncheck("input[data-option=given]")
    tab.check("input[data-option=controls]")
    tab.check("input[data-option=logprobs]")
    tab.check("input[data-option=experts]")
    for key in ("hide=given", "controls=1", "lp=1", "experts=1"):
        assert key in page.hash()
    tab.reload()
    expect(tab.locator("input[data-option=given]")).not_to_be_checked()
    for name in ("controls", "logprobs", "experts"):
        expect(tab.locator(f"input[data-option={name}]")).to_be_checked()
    expect(tab.locator(".block.kind-given")).to_have_count(0)
    expect(tab.locator(".block.kind-sampled span.t[class*=lp-]").first).to_be_visible()
    expect(tab.locator(".experts-lane, .experts-note").first).to_be_visible()


def test_copy_as_markdown_copies_the_block_as_recorded(page_over, page_on, corpus_server, tmp_path):
    run = tmp_path / "long"
    run.mkdir()
    long_reply_record(run)
    page = page_over(run, permissions=CLIPBOARD)
    paths = page.server.get("/v1/trajectories/tr_long/paths?run_id=long")
    block = [b for b in paths["paths"][0]["blocks"] if b["kind"] == "sampled"][-1]
    node = paths["nodes"][block["node_id"]]
    text = node["text"][node["token_offsets"][block["node_start"]]:node["token_offsets"][block["node_end"]]]
    assert "```" in text and "\t" in text
    tab = page.open("#/run/long/rollouts/t/tr_long?tab=path&controls=1")  # shown as ↵ and →, copied as they are
    button = tab.locator(f'.block[data-start="{block["start"]}"] button.copy-md')
    button.click()
    expect(button).to_have_text("copied")
    assert tab.evaluate("navigator.clipboard.readText()") == (
        f"**sampled** · assistant · model {block['node_id']} · tokens [{block['start']}:{block['end']}]"
        f" of path 0 of tr_long\n\n````\n{text}\n````\n")

    text_paths = corpus_server.get("/v1/trajectories/tr_g1a0a0/paths?run_id=groups-text")
    first = text_paths["paths"][0]["blocks"][0]
    message = text_paths["nodes"][first["node_id"]]["text"][first["node_start"]:first["node_end"]]
    tab = page_on(corpus_server, permissions=CLIPBOARD).open("#/run/groups-text/rollouts/t/tr_g1a0a0?tab=path")
    tab.locator('.block[data-blk="0"] button.copy-md').click()
    ending = "" if message.endswith("\n") else "\n"
    assert tab.evaluate("navigator.clipboard.readText()") == (
        f"**{first['kind']}** · {first['role']} · {first['author']} {first['node_id']}"
        f" · chars [{first['start']}:{first['end']}] of path 0 of tr_g1a0a0\n\n```\n{message}{ending}```\n")
