// A snapshot of one rollout (views/snapshot.py): draws the server's answers kept in #data, offline.
// One plain script, inline in the file under its CSP: no module, no request, and record text only
// ever goes in as text (textContent, text nodes). The page's own `dom.js` and `facts.js` come first
// in the same script (`el`, `num`, `plural`, `visible`, `tokenFacts`, ...), so the file says things
// in the page's words. The facts (blocks, kinds, what trains, token
// ids, logprobs, support) are the server's; this only lays them out as the page's drawer does.
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("data").textContent);
  const state = {path: data.initial.path, tab: data.initial.tab, controls: false, logprobs: false, open: null};
  const root = document.getElementById("snapshot");
  const flagInfo = new Map(data.flags.map((flag) => [flag.flag, flag]));
  const kindWhy = new Map(data.block_kinds.map((item) => [item.kind, item.why]));
  const drawn = new WeakMap();  // a block's text box -> {block, node}: what a hovered token is

  if (matchMedia("(prefers-color-scheme: dark)").matches) document.documentElement.dataset.theme = "dark";
  document.title = `${data.record_id} · skycap-viewer snapshot`;

  function cutNote(text) {
    return el("p", {className: "notice warn cut"}, `cut: this snapshot holds ${text}`);
  }

  // -- the header -------------------------------------------------------------------------------

  function header() {
    const t = data.trajectory;
    const size = t.size || {};
    const bridged = t.skycap?.bridged || {};
    const reward = t.annotations?.reward;
    const facts = [
      ["mode", data.mode ?? "-"], ["status", `${t.status ?? "-"}${t.ended === false ? " (not ended)" : ""}`],
      ["task", t.task_id ?? "-"], ["step", num(t.step)],
      ["reward", reward === undefined ? "-" : typeof reward === "number" ? num(reward) : JSON.stringify(reward)],
      ["trains", t.samples_rule ? `${t.samples_rule} rule (the record's samples)`
        : "all rule (applied by the viewer: the record has no samples)"],
      ["samples", `${num(size.samples)} · longest ${num(size.longest)} ${unitShort(size.unit)}`],
      ["tokens", size.unit === "tokens" ? `${num(size.tokens)} · ${num(size.trainable)} in the loss`
        : `- (no tokens: ${num(size.tokens)} ch)`],
      ["tokenizer", t.tokenizer ?? "-"],
      ["calls", `${num(t.capture?.exchange_count ?? 0)} · bridged true=${bridged.true ?? 0} false=${bridged.false ?? 0}`
        + ` null=${bridged.null ?? 0} absent=${bridged.absent ?? 0} · ${plural(t.capture?.failure_count ?? 0, "failed call")}`],
      ["created", t.created_at ? String(t.created_at).replace("T", " ").slice(0, 19) : "-"],
    ];
    const notes = [];
    for (const problem of t.record_problems || []) notes.push(el("p", {className: "notice error"}, `Malformed record: ${problem}.`));
    if ((t.missing_sidecars || []).length) {
      notes.push(el("p", {className: "notice warn"}, `Listed sidecars not here: ${t.missing_sidecars.join(", ")}.`));
    }
    if (data.text_only) {
      const entry = data.text_only_reasons.find((item) => item.reason === data.text_only)
        || {level: "warn", note: `message text only (${data.text_only})`};
      const note = `${entry.note.charAt(0).toUpperCase()}${entry.note.slice(1)}`;
      notes.push(el("p", {className: `notice ${entry.level}`}, `${note}${data.tokens_error ? ` (${data.tokens_error})` : ""}.`));
    }
    if (data.mask_error) notes.push(el("p", {className: "notice error"}, `The sampling mask cannot be read: ${data.mask_error}.`));
    return el("header", {className: "drawer-head snapshot-head"},
      el("p", {className: "muted small made-by"}, `A snapshot made by ${data.made_by}: what the viewer showed of this`
        + " record, in one file that fetches nothing."),
      el("h1", {className: "traj-id"}, data.record_id),
      el("dl", {className: "facts"}, facts.map(([label, value]) =>
        el("div", {className: "fact", dataset: {fact: label}}, el("dt", {}, label), el("dd", {}, value)))),
      flagList(t.flags || []),
      notes);
  }

  /** Each flag with its level and what it means. */
  function flagList(names) {
    if (!names.length) return el("p", {className: "muted small flags"}, "no flags");
    return el("ul", {className: "flag-list"}, names.map((name) => {
      const flag = flagInfo.get(name) || {level: "info", why: ""};
      return el("li", {dataset: {flag: name}}, el("span", {className: `badge level-${flag.level}`}, name),
        el("span", {className: "muted small"}, `${flag.level}: ${flag.why}`));
    }));
  }

  function tabs() {
    const labels = {path: "Path", tree: `Tree ${num(data.graph.part.total)}`, calls: `Calls ${num(data.exchanges.part.total)}`};
    return el("div", {className: "tabs", role: "tablist", "aria-label": "rollout views"},
      Object.entries(labels).map(([tab, label]) => el("button", {
        type: "button", role: "tab", className: `tab${tab === state.tab ? " active" : ""}`, dataset: {tab},
        "aria-selected": tab === state.tab ? "true" : "false",
        onclick: () => { state.tab = tab; draw(); },
      }, label)));
  }

  // -- the Path tab -----------------------------------------------------------------------------

  function pathSize(path) {
    if (path.unit !== "tokens") return `${num(path.char_count)} ch`;
    return `${num(path.token_count)} tok, ${num(path.trainable_count)} trainable`;
  }

  function pathTab() {
    const path = data.paths.find((item) => item.index === state.path) || data.paths[0];
    if (!path) return el("p", {className: "notice"}, "This trajectory has no path to show (no nodes).");
    const box = el("div", {className: "path-tab"});
    box.append(el("div", {className: "picker", role: "group", "aria-label": "paths"}, data.paths.map((item) =>
      el("button", {type: "button", className: `pick${item.index === path.index ? " active" : ""}`, dataset: {path: item.index},
        onclick: () => { state.path = item.index; draw(); }},
      el("span", {}, `path ${item.index}`), el("span", {className: "node-id"}, `leaf ${item.leaf_node_id}`),
      el("span", {}, pathSize(item)), el("span", {className: "muted"}, item.trains ? "a sample" : "not a sample")))));
    if (data.path_count > data.paths.length) box.append(cutNote(`${data.paths.length} of the ${num(data.path_count)} paths`));
    const where = path.diverges_at ? ` · first new node ${path.diverges_at}${path.fork_from ? ` after ${path.fork_from}` : " (a new root)"}` : "";
    box.append(el("p", {className: "path-facts"}, `path ${path.index} · leaf ${path.leaf_node_id} · ${pathSize(path)}`
      + ` · ${plural(path.node_count, "node")}${path.stop_reason ? ` · stop: ${path.stop_reason}` : ""}${where}`));
    if (path.cut) {
      box.append(cutNote(`the first ${num(path.cut.shown)} of the ${num(path.cut.total)} ${path.cut.unit} of this path`
        + ` (${num(path.cut.nodes_shown)} of its ${plural(path.cut.nodes, "node")})`));
    }
    box.append(el("div", {className: "toolbar"}, toggle("controls", "control chars", "show line breaks, tabs and control characters"),
      path.unit === "tokens" ? toggle("logprobs", "logprobs", "shade sampled tokens by their probability") : null), kindLegend(path));
    const blocks = el("div", {className: "blocks"}, path.blocks.map((block) => blockElement(block, data.nodes[block.node_id], path.unit)));
    if (!path.blocks.length) blocks.append(el("p", {className: "muted"}, "(no blocks)"));
    if (path.unit === "tokens") {
      const readout = el("div", {className: "readout", "aria-live": "polite"}, "hover a token: its position, id, logprob and whether it is in the loss");
      hoverReadout(blocks, readout, describe);
      box.append(readout);
    }
    box.append(blocks);
    return box;
  }

  /** The block kinds this path has, each with what it means (the server's words). */
  function kindLegend(path) {
    const kinds = new Set(path.blocks.map((block) => block.kind));
    return el("ul", {className: "kind-legend small"}, data.block_kinds.filter((item) => kinds.has(item.kind)).map((item) =>
      el("li", {}, el("span", {className: `swatch kind-${item.kind}`}), el("span", {className: `kind-badge kind-${item.kind}`}, item.kind),
        el("span", {className: "muted"}, item.why))));
  }

  function toggle(name, label, title) {
    const input = el("input", {type: "checkbox", dataset: {option: name}, onchange: (event) => { state[name] = event.target.checked; draw(); }});
    input.checked = state[name];
    return el("label", {className: "option", title}, input, ` ${label}`);
  }

  function blockElement(block, node, unit) {
    const gutter = el("div", {className: "gutter"},
      el("span", {className: `kind-badge kind-${block.kind}`, title: kindWhy.get(block.kind) || ""}, block.kind),
      el("span", {className: "role"}, block.role ?? "(no role)", block.author === "model" ? " · model" : ""),
      block.trained_in !== undefined && block.trained_in !== null ? el("span", {className: "trained-in"}, `trained in path ${block.trained_in}`) : null,
      el("span", {className: "node-id"}, block.node_id),
      el("span", {className: "range"}, `[${block.start}:${block.end}]`),
      el("span", {className: "size muted"}, `${num(unit === "tokens" ? block.token_count : block.char_count)} ${unitShort(unit)}`));
    const text = el("div", {className: "text"});
    const end = block.shown_end ?? block.node_end;
    if (!node) {
      text.append(el("span", {className: "muted"}, "(text not in this snapshot)"));
    } else if (unit === "tokens" && node.token_ids) {
      drawn.set(text, {block, node});
      tokenSpans(text, block, node, end);
    } else {
      const piece = (node.text ?? "").slice(block.node_start ?? 0, end);
      text.append(piece ? visible(piece, state.controls) : el("span", {className: "muted"}, node.text === null ? "(no text recorded)" : "(empty)"));
    }
    const media = node?.media || [];
    if (media.length && block.node_start === 0) {
      gutter.append(el("div", {className: "media-items"}, media.map((item) =>
        el("span", {className: `media-item${item.problem ? " bad" : ""}`}, item.label, item.problem ? ` (${item.problem})` : ""))));
    }
    if (block.shown_end !== undefined) {
      text.append(el("span", {className: "muted cut-here"}, ` … cut after ${num(end - block.node_start)} of ${num(block.node_end - block.node_start)} ${unitShort(unit)}`));
    }
    return el("section", {className: `block kind-${block.kind}`, dataset: {node: block.node_id, start: block.start}}, gutter, text);
  }

  /** One span per token, its text as the page shows it (its id when no text is recorded). */
  function tokenSpans(box, block, node, end) {
    const hasText = node.text !== null && node.text !== undefined && node.token_offsets;
    const shade = state.logprobs && node.logprobs && node.sampled_start !== null && node.sampled_start !== undefined;
    const outside = new Set(node.outside_support || []);
    for (let i = block.node_start; i < end; i += 1) {
      const piece = hasText ? node.text.slice(node.token_offsets[i], node.token_offsets[i + 1]) : `${node.token_ids[i]} `;
      const span = document.createElement("span");
      span.className = `t${piece ? "" : " sliver"}`;
      if (shade && i >= node.sampled_start) span.classList.add(logprobBand(node.logprobs[i]));
      if (outside.has(i)) span.classList.add("out-of-support");
      const item = mediaAt(node, i);
      if (item) span.classList.add("media", ...(i === item.offset ? ["media-first"] : []), ...(i === item.offset + item.length - 1 ? ["media-last"] : []));
      span.dataset.i = i;
      span.textContent = visible(piece, state.controls);
      box.append(span);
    }
  }

  /** What a hovered token is (the page's words: `tokenFacts`). */
  function describe(span) {
    const info = drawn.get(span.parentElement);
    return info ? tokenFacts(info.block, info.node, Number(span.dataset.i)) : null;
  }


  // -- the Tree tab -----------------------------------------------------------------------------

  /** Rows in drawing order, [{id, rail, starts}]: a node's child on the earliest path continues its
   *  rail, the others open a branch one rail to the right (`starts`), drawn once that line ends. */
  function treeRows(byId) {
    const earliest = new Map();
    for (const path of data.paths) for (const id of path.node_ids) if (!earliest.has(id)) earliest.set(id, path.index);
    const order = (ids) => ids.filter((id) => byId.has(id))
      .map((id, i) => [earliest.get(id) ?? Infinity, i, id]).sort((x, y) => x[0] - y[0] || x[1] - y[1]).map((x) => x[2]);
    const rows = [];
    const stack = order(data.graph.root_node_ids || []).map((id, i) => [id, i ? 1 : 0, i > 0]).reverse();
    while (stack.length) {
      let [id, rail, starts] = stack.pop();
      while (id !== undefined) {
        rows.push({id, rail, starts});
        const [main, ...others] = order(byId.get(id).child_ids || []);
        for (const other of others.reverse()) stack.push([other, rail + 1, true]);
        [id, starts] = [main, false];
      }
    }
    return rows;
  }

  function treeTab() {
    const graph = data.graph;
    const byId = new Map(graph.nodes.map((node) => [node.node_id, node]));
    const leaves = new Set(graph.leaf_node_ids || []);
    const branchPoints = new Set((graph.branch_points || []).map((point) => point.node_id));
    const forkOf = new Map((graph.forks || []).map((fork) => [fork.node_id, fork]));
    const unit = data.trajectory.size?.unit;
    const box = el("div", {className: "tree-tab"},
      el("p", {className: "muted"}, `${plural(graph.part.total, "node")}, ${plural(leaves.size, "leaf", "leaves")}, ${plural(branchPoints.size, "branch point")}`),
      trainOnce(graph.train_once));
    if (graph.part.next !== undefined) box.append(cutNote(`the first ${num(graph.part.to)} of the ${num(graph.part.total)} nodes of the tree`));
    if (!graph.nodes.length) {
      box.append(el("p", {className: "notice"}, "This trajectory has no nodes."));
      return box;
    }
    const list = el("div", {className: "tree", role: "tree"});
    for (const {id, rail, starts} of treeRows(byId)) {
      const node = byId.get(id);
      const open = state.open === id;
      const sizeText = `${num(unit === "tokens" ? node.token_count : node.char_count)} ${unitShort(unit)}`;
      const row = el("div", {className: `tree-row${branchPoints.has(id) ? " branch-point" : ""}${open ? " open" : ""}`,
        role: "treeitem", tabindex: "0", dataset: {node: id}, "aria-expanded": open ? "true" : "false",
        onclick: () => openNode(open ? null : id),
        onkeydown: (event) => { if (event.key === "Enter") openNode(open ? null : id); }},
      el("span", {className: "caret"}, open ? "▾" : "▸"),
      starts ? el("span", {className: "branch-from muted small"}, node.parent_node_id ? `↳ from ${node.parent_node_id}` : "↳ a new root") : null,
      el("span", {className: `role-badge ${node.author === "model" ? "model" : "client"}`}, node.role ?? "(no role)"),
      el("span", {className: "muted small"}, node.author),
      forkOf.has(id) ? el("span", {className: "badge level-info"}, forkOf.get(id).kind) : null,
      node.signs?.unbridged ? el("span", {className: "badge level-warn"}, "unbridged") : null,
      node.signs?.retokenized ? el("span", {className: "badge level-info"}, "re-tokenized") : null,
      el("span", {className: "muted small"}, `${sizeText}${leaves.has(id) ? " · leaf" : ""}`),
      branchPoints.has(id) ? el("span", {className: "branches"}, `${(node.child_ids || []).length} branches`) : null,
      trainedText(node) ? el("span", {className: "trained-in small"}, trainedText(node)) : null,
      el("span", {className: "node-id"}, id));
      row.style.paddingLeft = `${4 + rail * 18}px`;
      list.append(row);
      if (open) list.append(treePanel(node, byId));
    }
    box.append(list);
    return box;
  }

  function trainedText(node) {
    if (node.author !== "model") return "";
    return node.trained_in === null || node.trained_in === undefined ? "trains on no path" : `trained in path ${node.trained_in}`;
  }

  function trainOnce(check) {
    if (!check) return null;
    if (check.holds) {
      return el("p", {className: "notice ok"}, `Train once holds: each of the ${plural(check.model_nodes, "model node")} trains on one path at most`
        + ` (${check.rule} rule${check.rule_recorded ? ", the record's samples" : ""}).`);
    }
    return el("p", {className: "notice error"}, `Train once broken: ${check.violations.map((v) => `${v.node_id} trains on paths ${v.paths.join(", ")}`).join("; ")}.`);
  }

  function openNode(id) {
    state.open = id;
    draw();
    if (id) document.querySelector(`.tree-row[data-node="${CSS.escape(id)}"]`)?.focus();
  }

  function linkTo(id, byId) {
    if (!byId.has(id)) return el("span", {className: "node-id"}, id);
    return el("button", {type: "button", className: "ghost node-link", dataset: {to: id}, onclick: (event) => { event.stopPropagation(); openNode(id); }}, id);
  }

  function treePanel(node, byId) {
    const text = data.nodes[node.node_id];
    const calls = node.calls || [];
    return el("div", {className: "tree-panel"},
      el("p", {className: "small"}, "parent ", node.parent_node_id ? linkTo(node.parent_node_id, byId) : "none (a root)",
        " · children ", (node.child_ids || []).length ? (node.child_ids || []).map((id) => linkTo(id, byId)) : "none",
        ` · depth ${num(node.depth)}`),
      calls.length ? el("ul", {className: "calls"}, calls.map((call, i) => el("li", {}, `call ${i}: ${call.model ?? "-"} · `
        + `${call.duration_ms === null || call.duration_ms === undefined ? "-" : `${Math.round(call.duration_ms)} ms`} · finish ${call.finish_reason ?? "-"}`
        + ` · bridged ${String(call.bridged)} · ${call.usage?.prompt_tokens ?? "-"} prompt / ${call.usage?.completion_tokens ?? "-"} completion tokens`))) : null,
      text ? el("pre", {className: "text"}, visible(text.text ?? `⟨ids ${(text.token_ids || []).join(" ")}⟩`, state.controls),
        text.cut_at !== undefined ? el("span", {className: "muted cut-here"}, ` … cut after ${num(text.cut_at)}`) : null)
        : el("p", {className: "muted"}, "(its text is not in this snapshot: no path shown reaches it)"));
  }

  // -- the Calls tab ----------------------------------------------------------------------------

  function callsTab() {
    const exchanges = data.exchanges;
    const box = el("div", {className: "calls-tab"},
      el("p", {className: "muted"}, `${plural(exchanges.call_count, "call")}, ${plural(exchanges.failure_count, "failed call")}, in time order`));
    if (exchanges.part.next !== undefined) box.append(cutNote(`the first ${num(exchanges.part.to)} of the ${num(exchanges.part.total)} calls`));
    if (!exchanges.data.length) {
      box.append(el("p", {className: "notice"}, "This trajectory has no calls."));
      return box;
    }
    const columns = ["#", "kind", "node", "model", "started", "ms", "finish", "bridged", "prompt", "completion", "error"];
    box.append(el("table", {className: "rows calls"},
      el("thead", {}, el("tr", {}, columns.map((name) => el("th", {}, name)))),
      el("tbody", {}, exchanges.data.map((row) => el("tr", {className: row.kind, dataset: {sequence: row.sequence}},
        el("td", {className: "num"}, num(row.sequence)), el("td", {}, row.kind), el("td", {className: "node-id"}, row.node_id ?? "-"),
        el("td", {className: "wrap"}, row.model ?? "-"),
        el("td", {}, row.started_at ? String(row.started_at).replace("T", " ").slice(0, 23) : "-"),
        el("td", {className: "num"}, row.duration_ms === null || row.duration_ms === undefined ? "-" : num(Math.round(row.duration_ms))),
        el("td", {className: "wrap"}, row.completion_reason ?? "-"), el("td", {}, row.kind === "call" ? String(row.bridged) : "-"),
        el("td", {className: "num"}, num(row.usage?.prompt_tokens)), el("td", {className: "num"}, num(row.usage?.completion_tokens)),
        el("td", {className: row.kind === "failure" ? "wrap bad" : "wrap"}, row.kind === "failure" ? `${row.http_status ?? "-"} ${row.error ?? ""}` : ""))))));
    return box;
  }

  // -- drawing ----------------------------------------------------------------------------------

  function draw() {
    const panel = state.tab === "tree" ? treeTab() : state.tab === "calls" ? callsTab() : pathTab();
    root.replaceChildren(header(), tabs(), el("div", {className: "snapshot-content", role: "tabpanel"}, panel));
  }

  draw();
})();
