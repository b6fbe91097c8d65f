"""What a drawn rollout shows, checked against the server's answers for it: called on the drawer
(test_drawer.py) and on the rollout's snapshot file (test_snapshot.py), which draw with the same
modules, so the two are held to one set of assertions.

`scope` is the locator of the rollout (`#drawer`, `#snapshot`); its tabs are `.tab[data-tab=…]`.
"""

from dataclasses import dataclass

from playwright.sync_api import expect


@dataclass
class Answers:
    """The server's answers for one rollout, as the page fetches them."""

    trajectory: dict
    paths: dict
    graph: dict
    exchanges: dict

    @classmethod
    def of(cls, server, record_id: str, run_id: str) -> "Answers":
        base = f"/v1/trajectories/{record_id}"
        query = f"?run_id={run_id}"
        return cls(*(server.get(f"{base}{route}{query}") for route in ("", "/paths", "/graph", "/exchanges")))


def check_header(scope, answers: Answers):
    """The id, the facts, the flags and the tab labels (paths and calls counted)."""
    t = answers.trajectory
    head = scope.locator(".drawer-head")
    expect(head.locator(".traj-id")).to_have_text(t["id"])
    expect(head.locator('[data-fact="mode"] dd')).to_have_text(t["mode"])
    expect(head.locator('[data-fact="task"] dd')).to_have_text(t["task_id"])
    status = t["status"] + (" (not ended)" if t["ended"] is False else "")
    expect(head.locator('[data-fact="status"] dd')).to_have_text(status)
    rule = f"{t['samples_rule']} rule (the record's samples)" if t["samples_rule"] else "all rule"
    expect(head.locator('[data-fact="trains"] dd')).to_contain_text(rule)
    expect(head.locator(".flags [data-flag]")).to_have_text(t["flags"])
    count = len(answers.paths["paths"])
    expect(scope.locator('.tab[data-tab="tree"]')).to_have_text(f"Tree {count}" if count > 1 else "Tree")
    expect(scope.locator('.tab[data-tab="calls"]')).to_have_text(f"Calls {answers.exchanges['part']['total']}")


def check_path(scope, answers: Answers, index: int):
    """Path `index` picked: its blocks in order, a sampled token's readout, the control characters."""
    paths = answers.paths["paths"]
    scope.locator('.tab[data-tab="path"]').click()
    pick = scope.locator(f'.picker .pick[data-path="{index}"]')
    pick.click()
    expect(pick).to_have_attribute("aria-selected", "true")
    expect(scope.locator(".picker .pick")).to_have_count(len(paths))
    blocks = paths[index]["blocks"]
    sections = scope.locator(".blocks section.block")
    expect(sections).to_have_count(len(blocks))
    kind_of = "s => [...s.classList].find(c => c.startsWith('kind-'))"
    drawn = sections.evaluate_all(f"all => all.map(s => [s.dataset.start, ({kind_of})(s)])")
    assert drawn == [[str(block["start"]), f"kind-{block['kind']}"] for block in blocks]
    sampled = next(block for block in blocks if block["kind"] == "sampled")
    node, i = answers.paths["nodes"][sampled["node_id"]], sampled["node_start"]
    scope.locator(f'section.block[data-start="{sampled["start"]}"] span.t[data-i="{i}"]').hover()
    readout = scope.locator(".readout")
    expect(readout).to_contain_text(f'#{sampled["start"]} · id {node["token_ids"][i]} · in the loss')
    expect(readout).to_contain_text(f'logprob {node["logprobs"][i]:.4f}')
    expect(sections.first).not_to_contain_text("↵")
    scope.locator('input[data-option="controls"]').check()
    expect(sections.first).to_contain_text("↵")
    scope.locator('input[data-option="controls"]').uncheck()
    expect(sections.first).not_to_contain_text("↵")


def check_tree(scope, answers: Answers):
    """Every node a row, the branch points and forks named, a branch point opened on its branches."""
    graph = answers.graph
    scope.locator('.tab[data-tab="tree"]').click()
    expect(scope.locator(".tree-row")).to_have_count(len(graph["nodes"]))
    expect(scope.locator(".tree-row.branch-point")).to_have_count(len(graph["branch_points"]))
    expect(scope.locator(".tree-row .fork-kind")).to_have_text([fork["kind"] for fork in sorted(
        graph["forks"], key=lambda fork: order_of(scope, fork["node_id"]))])
    point = max(graph["branch_points"], key=lambda b: b["child_count"])
    row = scope.locator(f'.tree-row[data-node="{point["node_id"]}"]')
    row.click()
    expect(row).to_have_attribute("aria-expanded", "true")
    branches = scope.locator(".tree-panel .branch")
    expect(branches).to_have_count(point["child_count"])
    assert branches.evaluate_all("bs => bs.map(b => b.dataset.node)") == point["child_ids"]
    row.click()
    expect(scope.locator(".tree-panel")).to_have_count(0)


def order_of(scope, node_id: str) -> int:
    """Where node `node_id`'s row is in the drawn tree."""
    return scope.locator(".tree-row").evaluate_all("rows => rows.map(r => r.dataset.node)").index(node_id)


def check_calls(scope, answers: Answers):
    """Every call and failure a row, in order, with its model."""
    rows = answers.exchanges["data"]
    scope.locator('.tab[data-tab="calls"]').click()
    drawn = scope.locator("table.calls tbody tr")
    expect(drawn).to_have_count(len(rows))
    assert drawn.evaluate_all("rows => rows.map(r => r.className)") == [row["kind"] for row in rows]
    first = next(row for row in rows if row["kind"] == "call")
    expect(scope.locator("table.calls tr.call").first).to_contain_text(first["model"][-31:])


def check_rollout(scope, answers: Answers, path: int):
    """The header, then the Path tab on path `path`, the Tree and the Calls."""
    check_header(scope, answers)
    check_path(scope, answers, path)
    check_tree(scope, answers)
    check_calls(scope, answers)


def check_tab_keys(tab, scope: str, prefix: str, panel: str, names: list[str]):
    """The rollout's tablist (the drawer's and the snapshot's are one tab bar) walked by its keys from
    the first tab: ← → move (wrapping), Home and End go to the ends; each move selects the tab, gives
    it the focus and the one Tab stop (a roving tabindex), and names it as the panel's label."""
    tablist = tab.locator(f"{scope} [role=tablist]")
    expect(tablist.locator("[role=tab]")).to_have_count(len(names))
    expect(tablist.locator("[tabindex='0']")).to_have_count(1)
    expect(tablist.locator(f"[data-tab={names[0]}]")).to_have_attribute("tabindex", "0")
    expect(tablist.locator(f"[data-tab={names[2]}]")).to_have_attribute("tabindex", "-1")
    tablist.locator(f"[data-tab={names[0]}]").focus()
    last = len(names) - 1
    for key, at in [("ArrowRight", 1), ("ArrowRight", 2), ("ArrowLeft", 1), ("End", last), ("ArrowRight", 0),
                    ("ArrowLeft", last), ("Home", 0)]:
        tab.keyboard.press(key)
        selected = tablist.locator(f"[data-tab={names[at]}]")
        expect(selected).to_have_attribute("aria-selected", "true")
        expect(selected).to_be_focused()
        expect(selected).to_have_attribute("tabindex", "0")
        expect(tablist.locator("[tabindex='0']")).to_have_count(1)
        expect(tab.locator(f"#{panel}")).to_have_attribute("aria-labelledby", f"{prefix}-{names[at]}")
