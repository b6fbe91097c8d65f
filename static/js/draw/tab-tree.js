// The Tree tab: every node as a row, one rail per branch. The main line (path 0) runs straight
// down rail 0; at a branch point the child on the earliest path continues its parent's rail and
// each other child opens a branch one rail to the right, drawn right under the parent with
// ├ │ └ connectors, so siblings sit at one indentation and a branch never drifts further right
// than the branch it leaves; a second root starts a tree of its own below, on rail 0. Opening a
// branch point shows its branches side by side with the text
// they share dimmed. The shape (children, roots, leaves,
// branch points), the path that trains each node and call durations are the server's /graph.

import {append, el} from "./dom.js";
import {cutText, num, plural, sizeIn, unitShort} from "./format.js";
import {moreRow} from "./parts.js";
import {copyBadge} from "./retok-badge.js";
import {visible} from "./facts.js";
import {trainOnce} from "./train-once.js";
import {flagInfo, forkBadge} from "./viewer.js";

/** The readable text of a node: decoded text, else its token ids, else its message (what a node's
 *  panel shows, and what find-bar.js searches). */
export function nodeText(bundle, nodeId) {
  const node = bundle.paths?.nodes?.[nodeId];
  if (node && node.text !== null && node.text !== undefined) return node.text;
  if (node?.token_ids) return `⟨ids ${node.token_ids.join(" ")}⟩`;
  const message = bundle.graph.nodes.find((n) => n.node_id === nodeId)?.message;
  const cut = cutText(message, "too big to send with the tree: the Path tab shows its text");
  if (cut) return cut;
  if (typeof message?.content === "string") return message.content;
  return message ? JSON.stringify(message) : "";
}

/** The node's badges; a re-tokenized copy's opens it beside its model node (`go`). */
function signBadges(node, go) {
  const badges = [];
  const signs = node.signs || {};
  const flagBadge = (flag, label) =>
    el("span", {className: `badge level-${flagInfo(flag).level}`, title: flagInfo(flag).why}, label);
  if (signs.unbridged) badges.push(flagBadge("unbridged", "unbridged"));
  if (signs.inferred_unbridged) badges.push(flagBadge("unbridged-inferred", "unbridged (inferred)"));
  if (node.shadowed_by) {
    badges.push(signs.retokenized ? copyBadge(node.node_id, node.shadowed_by, go)
      : el("span", {className: "badge level-info", title: "later history matched the sibling instead"},
        `shadowed by ${node.shadowed_by}`));
  }
  if ((node.calls || []).length > 1) {
    badges.push(el("span", {className: "badge level-info", title: "identical calls answered by this node"},
      `×${node.calls.length} calls`));
  }
  return badges;
}

/** A node's size in the rollout's unit (the header's `size.unit`). */
function size(node, unit) {
  const sampled = unit === "tokens" && node.author === "model" && node.sampled_token_count
    ? ` · ${num(node.sampled_token_count)} sampled` : "";
  return `${num(sizeIn(node, unit))} ${unitShort(unit)}${sampled}`;
}

/** Rows in drawing order, [{id, rail, starts}]: `starts` marks the first node of a branch. The
 *  child (or root) on the earliest path (/paths node_ids) continues its parent's rail; the others
 *  are drawn first, right under the parent, one rail further right. */
function layout(graph, byId, paths) {
  const earliest = new Map();
  for (const path of paths) for (const id of path.node_ids || []) if (!earliest.has(id)) earliest.set(id, path.index);
  const order = (ids) => [...ids].map((id, i) => [earliest.get(id) ?? Infinity, i, id])
    .sort((x, y) => x[0] - y[0] || x[1] - y[1]).map((x) => x[2]);
  const rows = [];
  const line = (start, rail, starts, root = false) => {
    let id = start;
    let first = starts;
    while (id !== undefined && byId.has(id)) {
      rows.push({id, rail, starts: first, root: root && id === start});
      first = false;
      const [main, ...others] = order(byId.get(id).child_ids || []);
      for (const other of others) line(other, rail + 1, true);
      id = main;
    }
  };
  const [main, ...others] = order(graph.root_node_ids || []);
  if (main !== undefined) line(main, 0, false);
  for (const other of others) line(other, 0, false, true);  // a new root: a tree of its own below, on rail 0
  return rows;
}

/** The connector text before each row: │ where a rail carries on below, ├ or └ where a branch
 *  leaves it (└ when nothing follows on that rail), then • on the row's own rail, so the main line
 *  after a branch joins the rail its branches left from. */
function connectors(rows) {
  // continues[i][c]: some later row is on rail c before any row left of c
  const out = new Array(rows.length);
  let below = [];  // for the rows after i: does rail c carry on?
  for (let i = rows.length - 1; i >= 0; i -= 1) {
    const {rail, starts} = rows[i];
    let text = "";
    for (let c = 0; c < rail; c += 1) {
      const on = Boolean(below[c]);
      if (c === rail - 1 && starts) text += on ? "├─" : "└─";
      else text += on ? "│ " : "  ";
    }
    out[i] = `${text}•`;
    below = rows[i].root ? [] : below.slice(0, rail + 1);  // no rail runs up out of a tree into the one above
    below[rail] = !rows[i].root;
  }
  return out;
}

/** The nodes /graph's parts have brought so far, in rows; `more` fetches the next part. */
export function renderTree(bundle, {openNode, setOpen, more, go}) {
  const nodes = bundle.graph.nodes || [];
  const byId = new Map(nodes.map((node) => [node.node_id, node]));
  const unit = bundle.trajectory.size?.unit;
  const graph = bundle.graph;
  const leaves = new Set(graph.leaf_node_ids || []);
  const branchPoints = new Set((graph.branch_points || []).map((point) => point.node_id));
  const forkOf = new Map((graph.forks || []).map((fork) => [fork.node_id, fork]));
  const box = el("div", {className: "tree-tab"});
  box.append(el("p", {className: "muted"}, `${plural(graph.part?.total ?? nodes.length, "node")}, `
    + `${plural(leaves.size, "leaf", "leaves")}, ${plural(branchPoints.size, "branch point")}`));
  if ((bundle.paths?.paths || []).length > 1) box.append(trainOnce(bundle.graph.train_once));
  if (!nodes.length) {
    box.append(el("p", {className: "notice"}, "This trajectory has no nodes."));
    return box;
  }
  const list = el("div", {className: "tree", role: "tree"});
  const rows = layout(graph, byId, bundle.paths?.paths || []);
  const lines = connectors(rows);
  rows.forEach(({id, rail, starts, root}, i) => {
    const node = byId.get(id);
    const kids = node.child_ids || [];
    const branching = branchPoints.has(id);
    const open = openNode === id;
    const sampledFrom = node.sampled_start !== null && node.sampled_start !== undefined
      ? ` · sampled from ${node.sampled_start}` : "";
    const row = el("div", {
      className: `tree-row${branching ? " branch-point" : ""}${starts ? " branch-start" : ""}${root ? " new-root" : ""}`
        + `${open ? " open" : ""}`,
      role: "treeitem", tabindex: "0", dataset: {node: id, rail},
      "aria-level": rail + 1, "aria-expanded": open ? "true" : "false",
      title: `${node.author}${sampledFrom}${node.has_logprobs ? " · logprobs" : ""}`,
      onclick: () => setOpen(open ? null : id),
      onkeydown: (event) => { if (event.key === "Enter") setOpen(open ? null : id); }},
    el("span", {className: "rails", "aria-hidden": "true"}, lines[i]),
    el("span", {className: "caret"}, open ? "▾" : "▸"),
    root ? el("span", {className: "badge level-info", title: "a second root: a history that shares no node with the"
      + " tree above"}, "new root") : null,
    el("span", {className: `role-badge ${node.author === "model" ? "model" : "client"}`},
      node.role === null || node.role === undefined ? "(no role)" : visible(String(node.role), false)),
    el("span", {className: "muted small"}, node.author),
    forkOf.has(id) ? forkBadge(forkOf.get(id)) : null,
    ...signBadges(node, go),
    el("span", {className: "muted small"}, `${size(node, unit)}${leaves.has(id) ? " · leaf" : ""}`),
    branching ? el("span", {className: "branches"}, `${kids.length} branches`) : null,
    el("span", {className: "node-id"}, id));
    row.style.setProperty("--rail", String(rail));
    list.append(row);
    if (open) list.append(panel(bundle, node, byId, go));
  });
  append(box, [list, moreRow(graph.part, "nodes", () => more("graph"))]);  // no row when all is here
  return box;
}

function callLine(call, i) {
  const usage = call.usage || {};
  const timed = call.duration_ms !== null && call.duration_ms !== undefined;
  const duration = timed ? `${Math.round(call.duration_ms)} ms` : "-";
  return el("li", {}, `call ${i}: ${call.model ?? "-"} · ${duration}`
    + ` · finish ${call.finish_reason ?? "-"} · bridged ${String(call.bridged)}`
    + ` · ${usage.prompt_tokens ?? "-"} prompt / ${usage.completion_tokens ?? "-"} completion tokens`);
}

function panel(bundle, node, byId, go) {
  const kids = node.child_ids || [];
  const box = el("div", {className: "tree-panel"});
  box.style.setProperty("--rail", "0");
  box.append(el("p", {className: "small"}, size(node, bundle.trajectory.size?.unit), " · ",
    node.author !== "model" ? "context"
      : node.trained_in !== null && node.trained_in !== undefined ? `trains in path ${node.trained_in}`
        : "not trained"));
  if ((node.calls || []).length) box.append(el("ul", {className: "calls small"}, node.calls.map(callLine)));
  box.append(el("pre", {className: "text"}, visible(nodeText(bundle, node.node_id), false)));
  if (!kids.length) {
    box.append(el("p", {className: "muted"}, "Nothing follows: this is a leaf."));
  } else if (kids.length === 1) {
    const next = byId.get(kids[0]);
    box.append(el("p", {className: "muted"}, `then ${kids[0]} (${next.role ?? "-"}, ${next.author})`));
  } else {
    box.append(branches(bundle, kids, byId, go));
  }
  return box;
}

function commonPrefix(texts) {
  let length = 0;
  const shortest = Math.min(...texts.map((t) => t.length));
  while (length < shortest && texts.every((t) => t[length] === texts[0][length])) length += 1;
  return length;
}

function branches(bundle, kids, byId, go) {
  const texts = kids.map((id) => nodeText(bundle, id));
  const shared = commonPrefix(texts);
  const same = texts.every((t) => t === texts[0]);
  const sentence = same ? "Their texts are identical: they differ in tokens alone."
    : shared ? `They agree for ${num(shared)} characters, then part.` : "They differ from their first character.";
  return el("div", {className: "branch-box"},
    el("p", {}, `branches into ${kids.length}. ${sentence}`),
    el("div", {className: "side-by-side"}, kids.map((id, i) => el("div", {className: "branch", dataset: {node: id}},
      el("p", {className: "small"}, el("span", {className: "node-id"}, id),
        ` ${byId.get(id).role ?? "-"} · ${byId.get(id).author}`, ...signBadges(byId.get(id), go)),
      el("pre", {className: "text"},
        el("span", {className: "shared", title: "the text every branch shares"},
          visible(texts[i].slice(0, shared), false)),
        visible(texts[i].slice(shared), false))))));
}
