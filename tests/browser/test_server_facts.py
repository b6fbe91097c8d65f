"""The page draws the facts the server states (tests/test_facts.py) instead of deriving them again:
the header's size, where a node trains, call durations, the tree's shape, units, rewards, the
flags a row shows, the block kinds and the text-only notes. Also: the Path tab's options live in
the URL, so a reload (or a pasted link) keeps them.
"""

import json
import re

from playwright.sync_api import expect

FORKED = "tr_86f0b750382298e2"  # real-like: 5 paths, 2 branch points


def js_percent(part, whole):
    """Math.round(part / whole * 100) as the page computes it (Python's round() rounds half to even)."""
    return int(part / whole * 100 + 0.5)


def fact(tab, label):
    return tab.locator("#drawer .fact", has=tab.locator("dt", has_text=label)).locator("dd")


def test_the_header_trainable_figure_is_the_servers_size(read_only_page, corpus_server):
    page = read_only_page
    size = corpus_server.get(f"/v1/trajectories/{FORKED}?run_id=real-like")["size"]
    assert size["unit"] == "tokens" and size["tokens"]
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}")
    expect(fact(tab, "trainable")).to_have_text(
        f"{size['trainable']:,}/{size['tokens']:,} {js_percent(size['trainable'], size['tokens'])}%")

    mirror = corpus_server.get("/v1/trajectories/tr_bac9802dee51ae08?run_id=mirror-text")["size"]
    assert mirror["unit"] == "chars"
    tab = page.open("#/run/mirror-text/rollouts/t/tr_bac9802dee51ae08")
    expect(fact(tab, "trainable")).to_have_text(f"- (no tokens: {mirror['tokens']:,} ch)")
    row = tab.locator('tr.rollout-row[data-traj="tr_bac9802dee51ae08"]')
    expect(row.locator("td:nth-child(5)")).to_have_text(f"{mirror['tokens']:,} ch")


def test_the_tree_says_which_later_path_trains_a_node(read_only_page, corpus_server):
    page = read_only_page
    graph = corpus_server.get(f"/v1/trajectories/{FORKED}/graph?run_id=real-like")
    node = next(n for n in graph["nodes"] if n["trained_in"] is not None and n["trained_in"] > 0)
    timed = next(n for n in graph["nodes"] if any(c["duration_ms"] is not None for c in n["calls"]))
    tab = page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=tree")
    expect(tab.locator(".tree-tab > p.muted").first).to_have_text(
        f"{len(graph['nodes'])} nodes, {len(graph['leaf_node_ids'])} leaves, "
        f"{len(graph['branch_points'])} branch points")
    for leaf in graph["leaf_node_ids"]:
        expect(tab.locator(f'.tree-row[data-node="{leaf}"]')).to_contain_text("· leaf")
    tab.click(f'.tree-row[data-node="{node["node_id"]}"]')
    expect(tab.locator(".tree-panel")).to_contain_text(f"trains in path {node['trained_in']}")
    tab.click(f'.tree-row[data-node="{timed["node_id"]}"]')
    call = next(c for c in timed["calls"] if c["duration_ms"] is not None)
    expect(tab.locator(".tree-panel ul.calls")).to_contain_text(f"{round(call['duration_ms'])} ms")
    rows = tab.locator(".tree-row").evaluate_all("rows => rows.map(r => r.dataset.node)")
    assert rows[0] == graph["root_node_ids"][0]
    assert set(rows) == {n["node_id"] for n in graph["nodes"]}


def test_path_options_survive_a_reload(page, corpus_server):
    tab = page.open("#/run/groups/rollouts/t/tr_fea17a04aa9905d5")
    tab.check("input[data-option=logprobs]")
    expect(tab.locator(".block.kind-sampled span.t[class*=lp-]").first).to_be_visible()
    assert "lp=1" in page.hash()
    tab.uncheck("input[data-option=given]")
    assert "hide=given" in page.hash()
    tab.reload()
    expect(tab.locator("#drawer .traj-id")).to_have_text("tr_fea17a04aa9905d5")
    expect(tab.locator("input[data-option=logprobs]")).to_be_checked()
    expect(tab.locator("input[data-option=given]")).not_to_be_checked()
    expect(tab.locator(".block.kind-sampled span.t[class*=lp-]").first).to_be_visible()
    expect(tab.locator(".block.kind-given")).to_have_count(0)
    tab.check("input[data-option=controls]")
    assert "controls=1" in page.hash()
    tab.check("input[data-option=given]")
    tab.uncheck("input[data-option=logprobs]")
    assert "hide=" not in page.hash() and "lp=" not in page.hash()
    tab.keyboard.press("Escape")  # options belong to an open rollout: closing it drops them from the URL
    expect(tab.locator("#drawer")).to_be_hidden()
    assert "controls=" not in page.hash()


def test_text_only_notes_are_the_servers_catalogue(read_only_page, corpus_server):
    page = read_only_page
    notes = {entry["reason"]: entry for entry in corpus_server.get("/__viewer")["text_only"]}
    paths = corpus_server.get("/v1/trajectories/tr_truncated_sidecar/paths?run_id=broken")
    assert paths["text_only"] == "tokens-unreadable" and paths["tokens_error"]
    note = notes["tokens-unreadable"]
    tab = page.open("#/run/broken/rollouts/t/tr_truncated_sidecar")
    for where in ("#drawer .drawer-head", "#drawer .path-tab"):
        shown = tab.locator(f"{where} .notice.{note['level']}.text-only")
        expect(shown).to_contain_text(note["note"][1:])
        expect(shown).to_contain_text(paths["tokens_error"])
    tab = page.open("#/run/mirror-text/rollouts/t/tr_bac9802dee51ae08")
    missing = notes["tokens-missing"]
    expect(tab.locator(f"#drawer .path-tab .notice.{missing['level']}.text-only")).to_contain_text(missing["note"][1:])


def test_rows_hide_the_flags_the_catalogue_keeps_off_rows(page_over, tmp_path, corpus_server):
    from skycap_viewer.demo.writer import RecordBuilder

    hidden = [f["flag"] for f in corpus_server.get("/__viewer")["flags"] if not f["row"]]
    assert hidden
    run = tmp_path / "old"
    run.mkdir()
    builder = RecordBuilder("tr_old", "tokens")
    builder.add_model(builder.add_client(None, "user", "hi"), "hello")
    for node in builder.nodes:  # an old record: calls without `bridged`
        for call in node["calls"]:
            del call["bridged"]
    builder.write(run)
    tab = page_over(run).open("#/run/old/rollouts/t/tr_old")
    for flag in hidden:
        expect(tab.locator("#drawer .drawer-head .flags")).to_contain_text(flag)
        expect(tab.locator('tr.rollout-row[data-traj="tr_old"] td.flags')).not_to_contain_text(flag)


def num(value):
    """format.js num() for a number: grouped when whole, else two decimals."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.2f}"


def recorded(raw):
    """reward.js recordedReward(): a number as num() shows it, anything else as JSON."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return num(raw)
    return json.dumps(raw, separators=(",", ":"))


def test_the_kind_legend_is_the_servers_list(read_only_page, corpus_server):
    page = read_only_page
    kinds = [entry["kind"] for entry in corpus_server.get("/__viewer")["block_kinds"]]
    tab = page.open("#/run/groups/rollouts")
    expect(tab.locator(".legend.kinds .legend-item")).to_have_text(kinds)


def test_rewards_show_the_servers_number_and_hover_the_recorded_value(read_only_page, corpus_server):
    page = read_only_page
    rows = corpus_server.get("/v1/trajectories?run_id=groups&limit=1000")["data"]
    tab = page.open("#/run/groups/rollouts")
    for row in rows[:5]:
        cell = tab.locator(f'tr.rollout-row[data-traj="{row["id"]}"] .reward-num')
        value = row["reward_value"]
        expect(cell).to_have_text("-" if value is None else num(value))
        expect(cell).to_have_attribute("title", f"recorded as {recorded(row['annotations'].get('reward'))}"
                                       if "reward" in row["annotations"] else "recorded as -")
    group = corpus_server.get("/v1/groups?run_id=groups&limit=1000")["data"][0]
    tab = page.open("#/run/groups/groups")
    dots = tab.locator(f'tr.group-row[data-key="{group["key"]}"] .dots .dot')
    expect(dots).to_have_count(len(group["rewards"]))
    dash = lambda value: "-" if value is None else value  # noqa: E731
    for i, entry in enumerate(group["rewards"]):
        expect(dots.nth(i)).to_have_attribute(
            "title", f"rep {dash(entry['repetition_id'])} · attempt {dash(entry['attempt'])}"
                     f" · reward {recorded(entry['reward'])} · stop {dash(entry['stop_reason'])}")
        expect(dots.nth(i)).to_have_class(re.compile("hollow") if entry["value"] is None else re.compile(r"^dot$"))


def test_the_drawer_loads_each_fork_pair_once_and_the_tab_only_draws(page, corpus_server):
    asked = []
    tab = page.tab
    tab.on("request", lambda request: "/forks?" in request.url and asked.append(
        tuple(int(part.split("=")[1]) for part in request.url.split("?")[1].split("&") if part[0] in "ab")))
    page.open(f"#/run/real-like/rollouts/t/{FORKED}?tab=forks")
    sentence = tab.locator(".fork-sentence")
    expect(sentence).to_contain_text("up to")
    tab.select_option("select[data-fork=b]", "3")
    expect(tab.locator("select[data-fork=b]")).to_have_value("3")
    tab.select_option("select[data-fork=a]", "1")
    fork = corpus_server.get(f"/v1/trajectories/{FORKED}/forks?a=1&b=3&run_id=real-like")
    expect(sentence).to_contain_text(f"from {fork['a_node_id_first']}")
    tab.select_option("select[data-fork=a]", "0")
    expect(tab.locator("select[data-fork=a]")).to_have_value("0")
    expect(sentence).to_be_visible()
    tab.click("#drawer .tab[data-tab=path]")
    expect(tab.locator(".path-tab")).to_be_visible()
    tab.click("#drawer .tab[data-tab=forks]")
    tab.select_option("select[data-fork=a]", "1")
    expect(sentence).to_contain_text(f"from {fork['a_node_id_first']}")
    assert asked == [(0, 1), (0, 3), (1, 3)]
