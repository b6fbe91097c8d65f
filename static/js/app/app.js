// Boot and routing: the URL hash is the state; every change of it redraws the sidebar, the
// run page (or the view that takes the main area: the pair view, which has no drawer and is
// not polled, two runs compared, one prompt's steps) and the drawer from that state. A poll
// every few seconds picks up new runs and records without losing the scroll position, the
// expanded groups or the open drawer.

import {get} from "./api.js";
import {Drawer} from "./drawer.js";
import {el, replace} from "../draw/dom.js";
import {setupKeys} from "./keys.js";
import {LineageView} from "./lineage.js";
import {pickedPair, pickPatch} from "../draw/pair-picks.js";
import {PairView} from "./pair-view.js";
import {defaultView, RunPage} from "./run-page.js";
import {emptyState, format, parse} from "../draw/route.js";
import {RunsCompare} from "./runs-compare.js";
import {Sidebar} from "../draw/sidebar.js";
import {setupTheme} from "./theme.js";
import {setViewer} from "../draw/viewer.js";

const POLL_MS = 3000;
const main = document.getElementById("main");
let state = parse(location.hash);
let runs = [];
let viewer = null;

function runOf(id) {
  return runs.find((run) => run.id === id) || null;
}

/** Move to a new state: a new history entry, or `replace` the current one. */
function go(patch, {replace: replacing = false} = {}) {
  const next = {...state, badTab: "", ...patch};  // a tab the link asked for and there is not: said until a move
  if ("traj" in patch && patch.traj !== state.traj) {  // a new rollout starts at its top, unless the patch places it
    const fresh = {path: 0, tok: "", blk: "", msg: "", fa: 0, fb: 1, retok: "", node: ""};
    for (const key of Object.keys(fresh)) if (!(key in patch)) next[key] = fresh[key];
  }
  // a pin names a place in one path
  if (next.path !== state.path && !("tok" in patch || "blk" in patch || "msg" in patch)) {
    Object.assign(next, {tok: "", blk: "", msg: ""});
  }
  const hash = format(next);
  if (hash !== location.hash) history[replacing ? "replaceState" : "pushState"](null, "", hash);
  state = next;
  render();
}

function openRollout(id) {
  go({traj: id, view: state.view || defaultView(runOf(state.run))});
}

/** Open a search match: its rollout's Path tab, the drawer marking the match once it is drawn. */
function openMatch(hit) {
  drawer.mark(hit);
  go({traj: hit.trajectory_id, view: state.view || defaultView(runOf(state.run)), tab: "path"});
}

/** Close the drawer and give the focus back to the row of the rollout it showed. */
function closeDrawer() {
  const id = state.traj;
  go({traj: null});
  runPage.focusRow(id);
}

/** Open rollout `id` of `run` in that run's page (from a view over two runs or steps). */
function openIn(run, id) {
  go({...emptyState(), run, view: defaultView(runOf(run)), traj: id});
}

/** `a` / `b`: pick rollout `id` (of the run shown) as A or B. */
function pick(side, id) {
  go(pickPatch(side, id, state.run), {replace: true});
}

/** `c`: open the pair view of what is picked, once both A and B are. */
function comparePicked() {
  const pair = pickedPair(state);
  if (pair) go(pair);
}

const pairing = () => state.view === "compare";
const sidebar = new Sidebar(document.getElementById("runs"), document.getElementById("run-filter"));
const runPage = new RunPage(main, {go, open: openRollout, openMatch, runs: () => runs});
const drawer = new Drawer(document.getElementById("drawer"), document.getElementById("drawer-body"),
  document.getElementById("drawer-grip"), {go, close: closeDrawer});
const pairView = new PairView(main, {go});
const runsCompare = new RunsCompare(main, {go, open: openIn, runs: () => runs});
const lineage = new LineageView(main, {open: openIn});

function noRecords() {
  const roots = viewer?.roots || [];
  replace(main, el("section", {className: "empty-state"},
    el("h1", {}, "No skycap records found yet."),
    el("p", {}, "A run appears here once its directory holds a record (a ", el("code", {}, "*.json.zst"),
      " document). Watching:"),
    el("ul", {}, roots.map((root) => el("li", {}, el("code", {}, root)))),
    el("p", {className: "muted"},
      "Point a capture server's --record-dir here, or pass record directories on the command line.")));
}

async function render() {
  sidebar.update(runs, state.run);
  if (!state.run) {
    if (runs.length) {
      go({run: runs[0].id}, {replace: true});
      return;
    }
    drawer.hide();
    noRecords();
    return;
  }
  document.title = `${state.run} · skycap-viewer`;
  if (pairing()) {
    drawer.hide();
    await pairView.show(state);
    return;
  }
  pairView.hide();
  const shown = showMain();
  if (!comparing()) runPage.markOpen(state.traj);
  await Promise.all([shown, drawer.show(state)]);
  settle();
}

/** The view over two runs or steps, or over one prompt's steps, when it holds the main area. */
function comparing() {
  return {vs: runsCompare, lineage}[state.view] || null;
}

function showMain() {
  const other = comparing();
  if (!other) return runPage.show(state, runOf(state.run));
  runPage.forget();
  return other.show(state);
}

/** After the table or the drawer changed: mark the open row, colour the drawer's reward. */
function settle() {
  if (comparing()) return;
  runPage.markOpen(state.traj);
  runPage.markPicks(state);
  drawer.setRewardRange(runPage.listing?.reward_range ?? null);
}

/** The line under the name: what is served, or why the server cannot be reached. */
function showSource(error) {
  document.getElementById("source").textContent = error
    ? `cannot reach the viewer server (${error.message})`
    : `skycap records · ${(viewer?.roots || []).join(" ")}`;
}

async function refreshRuns() {
  try {
    const body = (await get("/runs", {}, {poll: true})).body;
    runs = body.data || [];
    sidebar.skipped = body.skipped || [];  // record directories discovery passed over: said under the runs
    if (!viewer) viewer = setViewer(await get("/__viewer"));
    showSource(null);
    return true;
  } catch (error) {
    showSource(error);
    return false;
  }
}

async function poll() {
  const before = JSON.stringify([runs, sidebar.skipped]);
  if (await refreshRuns()) {
    if (before !== JSON.stringify([runs, sidebar.skipped])) {
      if (!state.run && runs.length) go({run: runs[0].id}, {replace: true});
      else if (state.run && !pairing() && !comparing()) runPage.show(state, runOf(state.run));
      sidebar.update(runs, state.run);
    }
    if (state.run && comparing()) await comparing().poll();
    else if (state.run && !pairing()) {
      await runPage.poll();
      await drawer.poll();
      settle();
    }
  }
  setTimeout(poll, POLL_MS);
}

/** The token of a shared viewer's link, out of the address bar: the server has set its cookie. */
function forgetToken() {
  const query = new URLSearchParams(location.search);
  if (!query.has("token")) return;
  query.delete("token");
  const rest = query.toString();
  history.replaceState(history.state, "", `${location.pathname}${rest ? `?${rest}` : ""}${location.hash}`);
}

async function boot() {
  forgetToken();
  setupTheme(document.getElementById("theme-toggle"));
  setupKeys({main, help: document.getElementById("help"), helpButton: document.getElementById("keys-button"),
    drawer, open: openRollout, close: closeDrawer, pick, compare: comparePicked,
    search: () => document.getElementById("search")});
  const follow = () => {
    const next = parse(location.hash);
    if (format(next) === format(state) && location.hash === format(state)) return;
    state = next;
    render();
  };
  window.addEventListener("popstate", follow);
  window.addEventListener("hashchange", follow);
  await refreshRuns();
  await render();
  setTimeout(poll, POLL_MS);
}

boot();
