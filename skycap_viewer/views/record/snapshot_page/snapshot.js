// A snapshot of one rollout (views/record/snapshot.py): the server's answers kept in #data, drawn offline
// by the page's own modules (imported here; the file holds them as blocks of its one inline script,
// under its CSP: no module loads, no request). What is the file's own: reading its data, the tab
// switching (the tabs tab-list.js says the file has, the file's state: no URL), and saying what it left out.

import {el, focusKey, restoreFocus} from "./dom.js";
import {num, plural} from "./format.js";
import {pathView} from "./path-view.js";
import {rolloutHead} from "./rollout-head.js";
import {tabBar} from "./tab-bar.js";
import {renderCalls} from "./tab-calls.js";
import {renderChat} from "./tab-chat.js";
import {SNAPSHOT_TABS, tabLabels} from "./tab-list.js";
import {renderTree} from "./tab-tree.js";
import {LazyText} from "./tokens.js";
import {setViewer} from "./viewer.js";

const data = JSON.parse(document.getElementById("data").textContent);
const state = {path: data.initial.path, tab: data.initial.tab, given: true, controls: false, logprobs: false, msg: ""};
const root = document.getElementById("snapshot");
let treeOpen = null;
let lazy = null;

setViewer(data.viewer);
if (matchMedia("(prefers-color-scheme: dark)").matches) document.documentElement.dataset.theme = "dark";
document.title = `${data.record_id} · skycap-viewer snapshot`;

function go(patch) {
  Object.assign(state, patch);
  draw();
}

function cutNote(text) {
  return el("p", {className: "notice warn cut"}, `cut: this snapshot holds ${text}`);
}

/** What the file left out of a part (/graph's nodes, /exchanges' calls), or null. */
function partCut(part, noun) {
  return part.to < part.total ? cutNote(`the first ${num(part.to)} of the ${num(part.total)} ${noun}`) : null;
}

/** What the file left out of a path: the tail of its text, or all of it past the paths it holds. */
function pathCut(path) {
  if (!path.cut) return null;
  if (!path.cut.nodes_shown) {
    return cutNote(`the first ${num(data.limits.paths)} paths and the one it was made on, not this one`);
  }
  return cutNote(`the first ${num(path.cut.shown)} of the ${num(path.cut.total)} ${path.cut.unit} of this path`
    + ` (${num(path.cut.nodes_shown)} of its ${plural(path.cut.nodes, "node")})`);
}

function panel() {
  if (state.tab === "tree") {
    return [partCut(data.graph.part, "nodes of the tree"),
      renderTree(data, {openNode: treeOpen, setOpen: (id) => { treeOpen = id; draw(); }, more: null, go: null})];
  }
  if (state.tab === "calls") return [partCut(data.exchanges.part, "calls"), renderCalls(data, null)];
  if (state.tab === "chat") {
    const index = Math.min(state.path, (data.paths.paths || []).length - 1);
    const chat = data.chat[index];
    if (index < 0) return el("p", {className: "notice"}, "This trajectory has no path to show.");
    if (!chat) return cutNote(`the first ${num(data.limits.paths)} paths and the one it was made on, not this one`);
    return renderChat(chat, state, {go});
  }
  return pathView(data, state, {go, lazy, panels: (index, path) => [pathCut(path)]});
}

/** The page's tab bar over the tabs the file has; the tab a click or a key picks takes the focus. */
function tabs() {
  return tabBar(SNAPSHOT_TABS, state.tab, tabLabels(data), (tab) => {
    go({tab});
    root.querySelector(`button[data-tab="${tab}"]`)?.focus();
  }, {prefix: "snapshot-tab", panel: "snapshot-panel"});
}

function draw() {
  const focused = focusKey(root);
  lazy?.disconnect();
  lazy = new LazyText(null);  // the page scrolls: tokens are drawn as they near the viewport
  root.replaceChildren(
    el("p", {className: "muted small made-by"}, `A snapshot made by ${data.made_by}: what the viewer showed of this`
      + " record, in one file that fetches nothing."),
    rolloutHead(data), tabs(), el("div", {className: "snapshot-content", role: "tabpanel", id: "snapshot-panel",
      "aria-labelledby": `snapshot-tab-${state.tab}`}, panel()));
  restoreFocus(root, focused);
}

draw();
