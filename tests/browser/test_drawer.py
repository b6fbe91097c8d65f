"""The rollout drawer: opened from a pasted URL, read token by token, Tree, Forks, Calls and JSON."""

import json
import math
import re

from playwright.sync_api import expect

from tests.browser.rollout_checks import Answers, check_rollout
from tests.browser.tab import downloaded

FORKED = "tr_86f0b750382298e2"  # real-like: 5 paths, 2 branch points
FAILURES = "tr_f4c44e2c3f5f9d60"  # real-like: calls that failed


def sampled_token(paths, path_index=0):
    """(node, node token index, absolute position) of the first sampled token of a path."""
    block = next(b for b in paths["paths"][path_index]["blocks"] if b["kind"] == "sampled")
    return paths["nodes"][block["node_id"]], block["node_start"], block["start"]


def test_a_pasted_url_opens_the_rollout_and_hovering_a_token_reads_its_logprob(page, corpus_server):
    record = "tr_fea17a04aa9905d5"
    paths = corpus_server.get(f"/v1/trajectories/{record}/paths?run_id=groups")
    node, index, position = sampled_token(paths)
    tab = page.open(f"#/run/groups/groups/t/{record}?tab=path")
    expect(tab.locator("#drawer .traj-id")).to_have_text(record)
    expect(tab.locator("#drawer .tab[data-tab=path]")).to_have_attribute("aria-selected", "true")
    block = tab.locator(".block.kind-sampled").first
    token = block.locator(f'span.t[data-i="{index}"]')
    token.hover()
    readout = tab.locator("#readout")
    logprob = node["logprobs"][index]
    expect(readout).to_contain_text(f"logprob {logprob:.4f}")
    expect(readout).to_contain_text(f"p {math.exp(logprob):.3f}")
    expect(readout).to_contain_text(f"#{position}")
    expect(readout).to_contain_text(f"id {node['token_ids'][index]}")
    expect(readout).to_contain_text("in the loss")
    piece = node["text"][node["token_offsets"][index]:node["token_offsets"][index + 1]]
    expect(token).to_have_text(piece)
    page.shot("path")
    tab.locator(".block.kind-given span.t").first.hover()
    expect(readout).to_contain_text("masked")
    expect(readout).not_to_contain_text("logprob")


def test_a_forked_rollouts_header_path_tree_and_calls_show_the_servers_answers(page, corpus_server):
    """The checks the rollout's snapshot file is held to as well (tests/browser/test_snapshot.py)."""
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}")
    check_rollout(tab.locator("#drawer"), Answers.of(corpus_server, FORKED, "real-like"), path=2)
    assert page.errors == []


def test_tokens_tile_the_text_and_a_token_without_a_character_is_still_hoverable(page, corpus_server):
    paths = corpus_server.get("/v1/trajectories/tr_tokens/paths?run_id=spec")
    tab = page.open("#/run/spec/rollouts/t/tr_tokens")
    for block in paths["paths"][0]["blocks"]:
        node = paths["nodes"][block["node_id"]]
        shown = tab.locator(f'.block[data-start="{block["start"]}"] .text')
        offsets = node["token_offsets"]
        expected = node["text"][offsets[block["node_start"]]:offsets[block["node_end"]]]
        expect(shown).to_have_text(expected)
        expect(shown.locator("span.t")).to_have_count(block["token_count"])
    node = paths["nodes"]["n1"]
    offsets = node["token_offsets"]
    empty = [i for i in range(len(node["token_ids"])) if offsets[i] == offsets[i + 1]]
    assert empty, "the fixture has a token that owns no character"
    sliver = tab.locator(f'.block.kind-sampled span.t.sliver[data-i="{empty[0]}"]')
    box = sliver.bounding_box()
    assert box["width"] > 0
    sliver.hover()
    expect(tab.locator("#readout")).to_contain_text("owns no whole character")
    expect(tab.locator("#readout")).to_contain_text(f"logprob {node['logprobs'][empty[0]]:.4f}")


def test_path_options_and_notices(page, corpus_server):
    tab = page.open("#/run/groups/rollouts/t/tr_fea17a04aa9905d5")
    expect(tab.locator(".block.kind-given")).not_to_have_count(0)
    tab.uncheck("input[data-option=given]")
    expect(tab.locator(".block.kind-given")).to_have_count(0)
    tab.check("input[data-option=given]")
    tab.check("input[data-option=controls]")
    expect(tab.locator(".block.kind-given .text").first).to_contain_text("↵")
    tab.uncheck("input[data-option=controls]")
    tab.check("input[data-option=logprobs]")
    expect(tab.locator(".block.kind-sampled span.t[class*=lp-]").first).to_be_visible()
    tab.uncheck("input[data-option=logprobs]")

    tab = page.open("#/run/mirror-text/rollouts/t/tr_bac9802dee51ae08")
    expect(tab.locator("#drawer .notice.warn").first).to_contain_text("message text only")
    tab = page.open("#/run/groups-text/rollouts/t/tr_g1a0a0")
    expect(tab.locator("#drawer .notice").first).to_contain_text("Text mode")


def test_a_forked_rollout_picks_paths_and_says_where_they_part(page, corpus_server):
    paths = corpus_server.get(f"/v1/trajectories/{FORKED}/paths?run_id=real-like")["paths"]
    later = next(p for p in paths if p["index"] > 0 and p["fork_from"])
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}")
    expect(tab.locator(".picker .pick")).to_have_count(len(paths))
    pick = tab.locator(f'.picker .pick[data-path="{later["index"]}"]')
    pick.click()
    expect(pick).to_have_attribute("aria-selected", "true")
    expect(tab.locator("#drawer")).to_contain_text(f"leaves the earlier ones after {later['fork_from']}")
    assert f"path={later['index']}" in page.hash()


def test_tokens_trained_on_another_path_are_marked_sampled_elsewhere(page, corpus_server):
    paths = corpus_server.get("/v1/trajectories/tr_shared_reply/paths?run_id=spec&text=false")["paths"]
    path = next(p for p in paths if any(b["kind"] == "sampled-elsewhere" for b in p["blocks"]))
    block = next(b for b in path["blocks"] if b["kind"] == "sampled-elsewhere")
    tab = page.open(f"#/run/spec/rollouts/t/tr_shared_reply?path={path['index']}")
    shown = tab.locator(f'.block.kind-sampled-elsewhere[data-start="{block["start"]}"]')
    expect(shown).to_contain_text(f"trained in path {block['trained_in']}")
    expect(tab.locator("#drawer .notice", has_text="Train-once")).to_contain_text(f"path {block['trained_in']}")
    shown.locator("span.t").first.hover()
    expect(tab.locator("#readout")).to_contain_text(f"masked (trained in path {block['trained_in']})")


def test_tree_opens_a_branch_point_side_by_side(page, corpus_server):
    graph = corpus_server.get(f"/v1/trajectories/{FORKED}/graph?run_id=real-like")
    point = max(graph["branch_points"], key=lambda b: b["child_count"])
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=tree")
    expect(tab.locator(".tree-row")).to_have_count(len(graph["nodes"]))
    expect(tab.locator(".tree-row.branch-point")).to_have_count(len(graph["branch_points"]))
    tab.click(f'.tree-row[data-node="{point["node_id"]}"]')
    panel = tab.locator(".tree-panel")
    expect(panel.locator(".branch")).to_have_count(point["child_count"])
    assert panel.locator(".branch").evaluate_all("bs => bs.map(b => b.dataset.node)") == point["child_ids"]
    expect(panel).to_contain_text(f"branches into {point['child_count']}")
    expect(tab.locator(".train-once")).to_contain_text("Train-once holds")
    unbridged = [n["node_id"] for n in graph["nodes"] if n["signs"]["unbridged"]]
    for node_id in unbridged:
        expect(tab.locator(f'.tree-row[data-node="{node_id}"]')).to_contain_text("unbridged")
    page.shot("tree")


def test_forks_compares_two_paths(page, corpus_server):
    fork = corpus_server.get(f"/v1/trajectories/{FORKED}/forks?a=1&b=3&run_id=real-like")
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=forks")
    tab.select_option("select[data-fork=a]", "1")
    tab.select_option("select[data-fork=b]", "3")
    sentence = tab.locator(".fork-sentence")
    expect(sentence).to_contain_text(f"up to {fork['last_shared_node_id']}")
    expect(sentence).to_contain_text(f"from {fork['a_node_id_first']}")
    expect(sentence).to_contain_text(f"from {fork['b_node_id_first']}")
    expect(tab.locator('.fork-side[data-side="a"] .block')).to_have_count(len(fork["a_blocks"]))
    expect(tab.locator('.fork-side[data-side="b"] .block')).to_have_count(len(fork["b_blocks"]))
    expect(tab.locator(".shared-blocks .block.dim")).to_have_count(len(fork["shared_blocks"]))
    assert "fa=1" in page.hash() and "fb=3" in page.hash()
    page.shot("forks")


def test_calls_lists_calls_and_failures(page, corpus_server):
    exchanges = corpus_server.get(f"/v1/trajectories/{FAILURES}/exchanges?run_id=real-like")["data"]
    tab = page.open(f"#/run/real-like/rollouts/t/{FAILURES}?tab=calls")
    calls = [e for e in exchanges if e["kind"] == "call"]
    failures = [e for e in exchanges if e["kind"] == "failure"]
    expect(tab.locator("table.calls tr.call")).to_have_count(len(calls))
    expect(tab.locator("table.calls tr.failure")).to_have_count(len(failures))
    failed = tab.locator("table.calls tr.failure").first
    expect(failed).to_contain_text(f"failed {failures[0]['http_status']}")
    first = tab.locator("table.calls tr.call").first
    expect(first).to_contain_text(calls[0]["model"])
    expect(first).to_contain_text(str(calls[0]["usage"]["prompt_tokens"]))
    expect(first).to_contain_text(calls[0]["completion_reason"])
    page.shot("calls")


def test_json_tab_shows_the_record_with_copy_and_download(page, corpus_server):
    tab = page.open(f"#/run/real-like/rollouts/t/{FAILURES}?tab=json")
    expect(tab.locator("pre.json")).to_contain_text(f'"id": "{FAILURES}"')
    expect(tab.locator("pre.json")).to_contain_text('"message"')
    name, body = downloaded(tab, "text=download")
    assert name == f"{FAILURES}.json"
    saved = json.loads(body)  # what the tab shows: the header, graph and calls the server sent
    assert saved["trajectory"]["id"] == FAILURES
    assert saved["exchanges"] == corpus_server.get(f"/v1/trajectories/{FAILURES}/exchanges?run_id=real-like")["data"]


def test_the_drawer_resizes_and_esc_closes_it(page, corpus_server):
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}")
    drawer = tab.locator("#drawer")
    before = drawer.bounding_box()["width"]
    grip = tab.locator("#drawer-grip").bounding_box()
    tab.mouse.move(grip["x"] + 2, grip["y"] + 200)
    tab.mouse.down()
    tab.mouse.move(grip["x"] - 150, grip["y"] + 200)
    tab.mouse.up()
    assert drawer.bounding_box()["width"] > before + 100
    tab.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    assert "/t/" not in page.hash()
    tab.go_back()
    expect(drawer).to_be_visible()


def test_tree_badges_a_re_tokenized_copy_and_an_inferred_unbridged_call(page_over, tmp_path):
    from skycap_viewer.demo.writer import RecordBuilder

    run = tmp_path / "signs"
    run.mkdir()
    builder = RecordBuilder("tr_signs", "tokens")
    user = builder.add_client(None, "user", "say hi")
    reply = builder.add_model(user, "hi there")
    copy = builder.add_client(user, "assistant", "hi there")  # the reply as the harness re-sent it
    later = builder.add_model(builder.add_client(copy, "user", "again"), "hi again")
    builder.nodes[copy]["shadowed_by"] = reply
    for node in builder.nodes:  # an old record: calls without `bridged`
        for call in node["calls"]:
            del call["bridged"]
    builder.write(run)
    tab = page_over(run).open("#/run/signs/rollouts/t/tr_signs?tab=tree")
    expect(tab.locator(f'.tree-row[data-node="n{copy}"]')).to_contain_text(f"re-tokenized copy of n{reply}")
    expect(tab.locator(f'.tree-row[data-node="n{later}"]')).to_contain_text("unbridged (inferred)")
    expect(tab.locator("#drawer .drawer-head .flags")).to_contain_text("unbridged-inferred")
    expect(tab.locator("#drawer .drawer-head .flags")).to_contain_text("bridged-unknown")
    tab.click("#drawer .tab[data-tab=calls]")
    expect(tab.locator("table.calls tr.call").first).to_contain_text("bridged unknown")


def test_tree_badges_a_shadowed_model_node(page, corpus_server):
    graph = corpus_server.get("/v1/trajectories/tr_1ea8573438194800/graph?run_id=real-like")
    shadowed = next(n for n in graph["nodes"] if n["shadowed_by"] and not n["signs"]["retokenized"])
    tab = page.open("#/run/real-like/rollouts/t/tr_1ea8573438194800?tab=tree")
    row = tab.locator(f'.tree-row[data-node="{shadowed["node_id"]}"]')
    expect(row).to_contain_text(f"shadowed by {shadowed['shadowed_by']}")


def test_a_rollout_opened_by_editing_the_url_loads_once_and_draws(page, corpus_server):
    """Changing the hash on a loaded page (not a fresh load) draws the rollout, without errors."""
    tab = page.open("#/run/groups/groups")
    for record in ("tr_fea17a04aa9905d5", "tr_495b9ec2e4f562da"):
        tab.evaluate(f"location.hash = '#/run/groups/t/{record}?tab=path'")
        expect(tab.locator("#drawer .traj-id")).to_have_text(record)
        expect(tab.locator("#drawer .block").first).to_be_visible()
    assert page.errors == []


def test_the_header_names_the_rule_and_a_path_no_sample_trains_says_so(page, corpus_server):
    record = corpus_server.get("/v1/trajectories/tr_final_rule?run_id=spec")
    paths = corpus_server.get("/v1/trajectories/tr_final_rule/paths?run_id=spec")["paths"]
    assert record["samples_rule"] == "final" and paths[0]["trains"] is False
    tab = page.open("#/run/spec/rollouts/t/tr_final_rule?path=0")
    head = tab.locator("#drawer .drawer-head")
    expect(head.locator(".fact[data-fact=trains]")).to_contain_text("final rule (the record's samples)")
    size = record["size"]
    samples = f"{size['samples']} · longest {size['longest']} tok"
    expect(head.locator(".fact[data-fact=samples]")).to_contain_text(samples)
    expect(tab.locator("#drawer .notice.no-train-path")).to_contain_text("samples do not train this path")
    expect(tab.locator("#drawer .block.kind-sampled")).to_have_count(0)
    expect(tab.locator("#drawer .block.kind-sampled-untrained")).not_to_have_count(0)
    trained = next(p["index"] for p in paths if p["trains"])
    tab.locator(f'.picker .pick[data-path="{trained}"]').click()
    expect(tab.locator("#drawer .block.kind-sampled")).not_to_have_count(0)
    expect(tab.locator("#drawer .notice.no-train-path")).to_have_count(0)


def test_a_record_without_samples_says_the_viewer_applied_all(page, corpus_server):
    rows = corpus_server.get("/v1/trajectories?run_id=spec&limit=200")["data"]
    bare = next(row for row in rows if row.get("samples_rule") is None and not row.get("unreadable"))
    tab = page.open(f"#/run/spec/rollouts/t/{bare['id']}")
    expect(tab.locator("#drawer .fact[data-fact=trains]")).to_contain_text(
        "all rule (applied by the viewer: the record has no samples)")


def test_forks_are_named_in_the_tree_the_forks_tab_and_the_flag(page, corpus_server):
    graph = corpus_server.get(f"/v1/trajectories/{FORKED}/graph?run_id=real-like")
    forks = graph["forks"]
    assert {f["kind"] for f in forks} >= {"resample", "edited reply", "different message"}
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=tree")
    for fork in forks:
        badge = tab.locator(f'.tree-row[data-node="{fork["node_id"]}"] .fork-kind')
        expect(badge).to_have_text(fork["kind"])
        expect(badge).to_have_attribute("title", fork["detail"])
    expect(tab.locator(".tree-row .fork-kind")).to_have_count(len(forks))
    flag = tab.locator('#drawer .flags [data-flag="forked"]')
    for kind in {f["kind"] for f in forks}:
        expect(flag).to_have_attribute("title", re.compile(re.escape(kind)))
    paths = corpus_server.get(f"/v1/trajectories/{FORKED}/paths?run_id=real-like")["paths"]
    fork = next(f for f in forks if f["kind"] == "edited reply")
    a = next(p["index"] for p in paths if fork["sibling_id"] in p["node_ids"])
    b = next(p["index"] for p in paths if fork["node_id"] in p["node_ids"])
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=forks&fa={a}&fb={b}")
    sentence = tab.locator(".fork-sentence")
    expect(sentence).to_contain_text(
        f"They fork there: edited reply at {fork['node_id']} beside {fork['sibling_id']} ({fork['detail']})")
    expect(sentence.locator(".fork-kind")).to_have_attribute("title", fork["detail"])


def test_the_tree_keeps_the_main_line_on_rail_0_and_each_branch_beside_it(page, corpus_server):
    graph = corpus_server.get(f"/v1/trajectories/{FORKED}/graph?run_id=real-like")
    paths = corpus_server.get(f"/v1/trajectories/{FORKED}/paths?run_id=real-like")["paths"]
    parent = {kid: node["node_id"] for node in graph["nodes"] for kid in node.get("child_ids") or []}
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=tree")
    expect(tab.locator(".tree-row")).to_have_count(len(graph["nodes"]))
    rails = dict(tab.locator(".tree-row").evaluate_all(
        "rows => rows.map(r => [r.dataset.node, Number(r.dataset.rail)])"))
    assert all(rails[node] == 0 for node in paths[0]["node_ids"]), rails
    roots = [path["diverges_at"] for path in paths[1:] if path["diverges_at"] not in parent]
    assert roots  # this record has a second root: a tree of its own on rail 0, said, with no rail into it
    for root in roots:
        row = tab.locator(f'.tree-row.new-root[data-node="{root}"]')
        expect(row).to_contain_text("new root")
        assert rails[root] == 0 and row.locator(".rails").inner_text().strip() == "•"  # no rail runs into it
    for path in paths[1:]:
        first = path["diverges_at"]
        if first in roots:
            continue
        assert rails[first] >= 1, (path["index"], rails)
        assert rails[parent[first]] < rails[first]
        for node in path["node_ids"][path["node_ids"].index(first):]:
            assert rails[node] == rails[first], "a branch stays on its rail until it forks again"
    order = tab.locator(".tree-row").evaluate_all("rows => rows.map(r => r.dataset.node)")
    for point in graph["branch_points"]:  # siblings: one indentation, right under their parent
        kids = point["child_ids"]
        assert len({rails[kid] for kid in kids[1:]}) == 1 and rails[kids[1]] == rails[point["node_id"]] + 1
        assert order.index(kids[1]) == order.index(point["node_id"]) + 1
        expect(tab.locator(f'.tree-row[data-node="{kids[1]}"] .rails')).to_contain_text("├─")
    drawn = tab.locator(".tree-row .rails").all_inner_texts()
    main = paths[0]["node_ids"]
    for above, below in zip(main, main[1:], strict=False):  # the main line is one unbroken rail
        start, end = order.index(above), order.index(below)
        assert drawn[end].startswith("•") and all(drawn[i][0] in "├│" for i in range(start + 1, end)), (above, below)
    page.shot("tree-rails")


def test_a_pasted_path_past_the_last_says_which_path_it_shows(page, corpus_server):
    paths = corpus_server.get("/v1/trajectories/tr_forked_unbridged/paths?run_id=spec")["paths"]
    assert len(paths) == 3
    tab = page.open("#/run/spec/rollouts/t/tr_forked_unbridged?path=99")
    expect(tab.locator("#drawer .notice.past-last")).to_have_text("path 99 does not exist: showing path 2 of 0–2.")
    expect(tab.locator('.picker .pick[data-path="2"]')).to_have_attribute("aria-selected", "true")
    tab.locator('.picker .pick[data-path="1"]').click()
    expect(tab.locator("#drawer .notice.past-last")).to_have_count(0)


def test_a_drawer_whose_record_is_deleted_says_it_is_gone(page_over, corpus, tmp_path):
    from tests.support.records import copy_record

    run = tmp_path / "going"
    run.mkdir()
    for record in ("tr_tokens", "tr_utf8"):
        copy_record(corpus / "spec", record, run)
    page = page_over(run)
    tab = page.open("#/run/going/rollouts/t/tr_tokens")
    expect(tab.locator("#drawer .traj-id")).to_have_text("tr_tokens")
    expect(tab.locator("#drawer .notice.gone")).to_have_count(0)
    for item in run.glob("tr_tokens.*"):
        item.unlink()
    expect(tab.locator("#drawer .notice.gone")).to_contain_text("gone from disk", timeout=20_000)
    expect(tab.locator("#drawer .traj-id")).to_have_text("tr_tokens")
    # the browser logs the poll's 404 itself: that one is expected here, nothing else is
    page.errors[:] = [e for e in page.errors if "status of 404" not in e]


STRAY_NULLS = """() => {
  const walker = document.createTreeWalker(document.querySelector("#drawer"), NodeFilter.SHOW_TEXT);
  let count = 0;
  while (walker.nextNode()) if (walker.currentNode.nodeValue === "null") count += 1;
  return count;
}"""


def test_a_record_in_one_part_has_no_more_row_and_no_stray_text(page, corpus_server):
    for tab_name, drawn in (("path", ".block"), ("tree", ".tree-row"), ("timeline", ".tl-bar")):
        tab = page.open(f"#/run/groups/rollouts/t/tr_fea17a04aa9905d5?tab={tab_name}")
        expect(tab.locator(drawn).first).to_be_visible()
        expect(tab.locator("button.more")).to_have_count(0)
        assert tab.evaluate(STRAY_NULLS) == 0, f"the {tab_name} tab shows a stray 'null'"


def test_the_path_picker_keeps_the_picked_path_in_view(page_over, tmp_path):
    """Path 20 of 21 opened from a link: its entry is scrolled into the picker's own view."""
    from skycap_viewer.demo.writer import RecordBuilder

    run = tmp_path / "wide"
    run.mkdir()
    builder = RecordBuilder("tr_wide", "tokens", meta={"task": "wide"})
    user = builder.add_client(builder.add_client(None, "system", "be brief"), "user", "say something")
    for number in range(21):  # 21 replies to one question: 21 paths
        builder.add_model(user, f"reply {number}")
    builder.write(run)
    tab = page_over(run).open("#/run/wide/rollouts/t/tr_wide?tab=path&path=20")
    picked = tab.locator('.picker .pick[data-path="20"]')
    expect(picked).to_have_attribute("aria-selected", "true")
    tab.wait_for_function("""() => {
        const list = document.querySelector('.path-tab .picker');
        const pick = list.querySelector('.pick[data-path="20"]').getBoundingClientRect();
        const box = list.getBoundingClientRect();
        return list.scrollHeight > list.clientHeight && pick.top >= box.top && pick.bottom <= box.bottom + 1;
    }""", timeout=5000)


def test_a_path_carrying_two_samples_says_so(page_over, tmp_path):
    """A custom rule's row ending at an inner node: the header counts two samples, and the Path says
    which rows it carries, each a sample of its own."""
    from tests.support.sampled_records import inner_row_record

    run = tmp_path / "inner"
    run.mkdir()
    inner_row_record(run)
    page = page_over(run)
    row = page.server.get("/v1/trajectories/tr_inner_row?run_id=inner")
    [path] = page.server.get("/v1/trajectories/tr_inner_row/paths?run_id=inner")["paths"]
    tab = page.open("#/run/inner/rollouts/t/tr_inner_row")
    expect(tab.locator('.drawer-head [data-fact="samples"] dd')).to_have_text(
        f"2 · longest {row['size']['longest']} tok")
    listed = tab.locator('.drawer-head [data-fact="samples"] dd').get_attribute("title").splitlines()
    assert listed == [f"row {sample['row']} through {sample['leaf_node_id']}: {sample['size']} tok, "
                      f"{sample['trainable']} in the loss" for sample in path["samples"]]  # the header lists them
    notice = tab.locator(".notice.path-samples")
    expect(notice).to_contain_text("This path carries 2 samples of the record's rows")
    for sample in path["samples"]:
        expect(notice).to_contain_text(f"row {sample['row']} through {sample['leaf_node_id']}, {sample['size']} tok,"
                                       f" {sample['trainable']} in the loss")
