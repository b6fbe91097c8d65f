"""The Chat tab as exact as the Path tab, read through Chromium: calls and results paired in path order
though every call is named `call_0` (on the page and in the snapshot file), and invisible characters in tool
output shown as marks, never applied."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.snapshot_files import Offline, saved, served
from tests.support.agent_records import REUSED, write_reused_ids
from tests.support.chain_record import write_chain


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


HIGHLIGHT = "() => { const h = CSS.highlights.get('find-hit'); return h && h.size ? [...h][0].toString() : null; }"


def no_raw_bidi(locator):
    """No direction control is in the drawn text itself (it would be applied): only its mark."""
    text = locator.evaluate("element => element.textContent")
    assert not re.search("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", text), text


def test_a_right_to_left_override_in_tool_output_is_a_mark_in_every_view(page_over, agents):
    run, nodes = agents
    result = f"n{nodes['rounds'][0][1]}"
    page = page_over(run)
    tab = page.open(f"#/run/agents/rollouts/t/{REUSED}?tab=chat")
    card = tab.locator(f'.chat-card[data-node="{result}"] pre.chat-text')
    expect(card).to_contain_text("evil⟨RLO⟩exe.txt")
    expect(card).to_contain_text("pass\u200dword")  # zero-width and CR only under "control chars"
    no_raw_bidi(card)
    tab.keyboard.press("f")
    tab.keyboard.type("exe.txt")
    expect(tab.locator(".find-count")).to_have_text("1 of 1")
    assert tab.evaluate(HIGHLIGHT) == "exe.txt"  # found in the record's text, marked where it is drawn
    tab.keyboard.press("Escape")
    tab.locator(".chat-tab input[data-option=controls]").check()
    expect(card).to_contain_text("pass⟨ZWJ⟩word")
    expect(card).to_contain_text("progress 10%␍progress 99%")
    expect(card).to_contain_text("evil⟨RLO⟩exe.txt")
    card.scroll_into_view_if_needed()
    page.shot("chat-invisible-marks")
    tab.click("#drawer .tab[data-tab=path]")
    block = tab.locator(f'.block[data-node="{result}"] .text')
    expect(block).to_contain_text("evil⟨RLO⟩exe.txt")
    expect(block).to_contain_text("pass⟨ZWJ⟩word")
    no_raw_bidi(block)
    tab.locator(".path-tab input[data-option=controls]").uncheck()
    expect(block).to_contain_text("evil⟨RLO⟩exe.txt")
    no_raw_bidi(block)
    tab.click("#drawer .tab[data-tab=tree]")
    tab.click(f'.tree-row[data-node="{result}"]')
    expect(tab.locator(".tree-panel pre.text")).to_contain_text("evil⟨RLO⟩exe.txt")
    no_raw_bidi(tab.locator(".tree-panel pre.text"))
    tab.click("#drawer .tab[data-tab=json]")
    expect(tab.locator("pre.json")).to_contain_text("evil⟨RLO⟩exe.txt")
    no_raw_bidi(tab.locator("pre.json"))


def test_the_snapshot_shows_the_override_as_a_mark(temp_server, offline, agents, tmp_path):
    run, nodes = agents
    result = f"n{nodes['rounds'][0][1]}"
    server = temp_server(run)
    server.wait_indexed()
    page = offline(saved(tmp_path, REUSED, served(server, REUSED, "?run_id=agents&tab=chat")))
    card = page.tab.locator(f'.chat-card[data-node="{result}"] pre.chat-text')
    expect(card).to_contain_text("evil⟨RLO⟩exe.txt")
    no_raw_bidi(card)
    page.tab.click('button.tab[data-tab="path"]')
    block = page.tab.locator(f'.block[data-node="{result}"] .text')
    expect(block).to_contain_text("evil⟨RLO⟩exe.txt")
    no_raw_bidi(block)
    page.check()


def test_a_card_says_what_the_trainer_saw(page, corpus_server):
    tab = page.open("#/run/retok/rollouts/t/tr_retok_reasoning_dropped?tab=chat&path=1")
    copy = tab.locator('#drawer .chat-card[data-node="n2"]')
    expect(copy.locator(".chat-head .retok-badge")).to_have_text("re-tokenized copy of n1")
    expect(copy.locator(".chat-tokens-differ .notice")).to_contain_text("Its tokens do not hold its reasoning")
    tokens = copy.locator("details.chat-fold.tokens")
    tokens.locator("summary").click()
    expect(tokens.locator("pre")).to_have_text("<s>assistant\nIt is 143.</s>\n")
    expect(tab.locator('#drawer .chat-card[data-node="n4"] .chat-head [data-flag=unbridged]')).to_have_text("unbridged")
    copy.locator(".retok-badge").click()  # opens its tokens beside the model's, as in the Path tab
    expect(tab.locator("#drawer")).to_contain_text("n2: re-tokenized copy of n1")
    page.shot("chat-retokenized-copy")
    tab = page.open("#/run/real-like/rollouts/t/tr_86f0b750382298e2?tab=chat&path=2")
    expect(tab.locator('#drawer .chat-card[data-node="n4"] .chat-copy')).to_have_text("edited")


SETTLED_TOP = """([selector, frames]) => new Promise((done) => {
  // the card's top below the drawer's scrolling box's top, once it has stayed put `frames` frames running
  const box = document.querySelector("#drawer-panel");
  let last = null, still = 0;
  const look = () => {
    const card = box.querySelector(selector);
    const top = card ? Math.round(card.getBoundingClientRect().top - box.getBoundingClientRect().top) : null;
    still = top !== null && top === last ? still + 1 : 0;
    last = top;
    if (still >= frames) done(top); else requestAnimationFrame(look);
  };
  look();
})"""


def long_texts(document):
    """Every message 30 lines: the cards and blocks above a link's target take their height as they are drawn."""
    for node in document["nodes"]:
        node["message"]["content"] = "\n".join(f"{node['message']['content']}, line {i}" for i in range(30))


def test_a_message_link_deep_in_a_long_chat_lands_and_stays(page_over, tmp_path):
    write_chain(tmp_path / "long", 40, edit=long_texts)
    tab = page_over(tmp_path).open("#/run/long/rollouts/t/chain?tab=chat&msg=35")
    card = tab.locator('#drawer .chat-card[data-position="35"]')
    expect(card).to_have_class(re.compile("pinned"))
    assert tab.evaluate(SETTLED_TOP, ['.chat-card[data-position="35"]', 30]) == 0  # at the top, once all settled
    expect(card).to_be_in_viewport()


def test_a_block_link_deep_in_a_long_path_lands_and_stays(page_over, tmp_path):
    write_chain(tmp_path / "long", 120, edit=long_texts)
    tab = page_over(tmp_path).open("#/run/long/rollouts/t/chain?tab=path&blk=100")
    block = tab.locator('#drawer section.block[data-blk="100"]')
    expect(block).to_have_class(re.compile("pinned"))
    top = tab.evaluate(SETTLED_TOP, ['section.block[data-blk="100"]', 30])
    box, height = tab.evaluate("""() => [document.querySelector("#drawer-panel").clientHeight,
        document.querySelector('section.block[data-blk="100"]').getBoundingClientRect().height]""")
    assert abs(top - (box - height) / 2) <= 2  # centred, once what is above has its drawn height


def test_a_rollout_compared_with_itself_says_so(page, corpus_server):
    tab = page.open("#/run/groups/compare?a=tr_08862b0a923de527&b=tr_08862b0a923de527")
    expect(tab.locator(".notice.itself")).to_contain_text("compared with itself")


def test_a_failure_placed_by_time_says_what_its_request_may_have_carried(page, corpus_server):
    tab = page.open("#/run/real-like/rollouts/t/tr_f4c44e2c3f5f9d60?tab=chat")
    later = tab.locator('#drawer .chat-card[data-node="n1"] .chat-failure-later')
    expect(later).to_have_count(2)
    expect(later.first).to_contain_text("its request may also have carried n2, recorded after this message")


def test_images_in_the_chat_tab_are_labelled_as_in_the_path_tab(page, corpus_server):
    tab = page.open("#/run/spec/rollouts/t/tr_media?tab=chat")
    card = tab.locator('#drawer .chat-card[data-node="n2"] .chat-body')
    expect(card.locator("pre")).to_have_text(["[image · dog · 2 tokens]", " and this?", "[image · cat · 3 tokens]"])
    expect(card).not_to_contain_text("[image_url]")


def test_the_record_search_finds_a_tool_call_id_and_marks_its_node(page_over, agents):
    run, nodes = agents
    tab = page_over(run).open("#/run/agents/rollouts")
    box = tab.locator("#record-search")
    box.fill("call_9")
    box.press("Enter")
    match = tab.locator(".matches .match")
    expect(match).to_have_count(1)
    expect(match.locator(".match-node")).to_contain_text(f"n{nodes['orphan']} · tool · tool_call_ids")
    match.locator(".match-traj").click()
    expect(tab.locator(f'#drawer section.block.hit-block[data-node="n{nodes["orphan"]}"]').first).to_be_visible()


def test_an_empty_record_says_nothing_trains_and_no_mode(page, corpus_server):
    tab = page.open("#/run/spec/rollouts/t/tr_empty")
    expect(tab.locator("#drawer")).to_contain_text("trainable0tokenizer")  # the facts run label, value, label
    expect(tab.locator("#drawer")).to_contain_text("mode-status")


def test_a_runs_header_says_its_groups_sizes_vary(page, corpus_server):
    run = next(r for r in corpus_server.get("/v1/runs")["data"] if r["id"] == "groups")
    assert run["group_sizes"] == [3, 4]
    tab = page.open("#/run/groups/groups")
    expect(tab.locator("#main")).to_contain_text(f"{run['group_count']} groups of 3–4 rollouts, most of 4")


def test_a_record_directory_too_deep_to_be_a_run_is_said_on_the_page(page_over, tmp_path):
    deep = tmp_path / "root" / "job" / "train" / "skycap"
    deep.mkdir(parents=True)
    write_reused_ids(deep)
    (tmp_path / "root" / "near").mkdir()
    write_reused_ids(tmp_path / "root" / "near")
    page = page_over(tmp_path / "root")
    skipped = page.server.get("/v1/runs")["skipped"]
    assert [entry["path"] for entry in skipped] == [str(deep)]
    tab = page.open("#/")
    note = tab.locator("#runs .skipped-dirs")
    expect(note).to_contain_text("skipped")
    expect(note).to_contain_text(f"{deep} · skycap records three levels below the directory given")
    expect(tab.locator("#runs a.run[data-run=near]")).to_be_visible()  # the run it did find is listed
