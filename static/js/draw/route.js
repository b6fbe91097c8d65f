// The URL hash holds the whole view, so a pasted link shows exactly the same thing:
//   #/run/<run>[/groups|/rollouts|/timeline][/t/<trajectory>]?<query>   (the timeline: of the step `step`)
//   #/run/<run a>/compare?a=ID&b=ID[&rb=<run b>][&pa=N][&pb=N]  two rollouts side by side (path pa
//             of a, pb of b; b in run rb when it is another run); no other key is written there
//   #/run/<run a>/vs/<run b>?[sa=S][&sb=S][&by=k1,k2]   two runs (or two steps) group by group
//   #/run/<run>/lineage?key=K&value=V                    one prompt at every step
// query keys: step task status ann (repeatable "key=value") q flag (repeatable: every one required)
//             xflag (repeatable: every one excluded) rmin rmax (the reward range, inclusive)
//             search scase=1 sre=1 skind srole sin (the record text search: its text, match case, regex,
//             block kind, role, and sin=message to search message text instead of what the Path tab
//             shows; it runs inside the filters)
//             ungrouped=1 (the Rollouts view's "no group key" filter: the rollouts no group holds) sort order page
//             open (group keys, comma separated) tab path tok blk (the pinned place of the Path tab: a
//             token by its position in the path, the index of a block's [start:end]; or a block by its
//             index in the path's blocks) msg (the Chat tab's pinned message: its position in the path)
//             fa fb node (the selected node, e.g. n12: a Timeline bar's,
//             marked in Path, Tree and Timeline)
//             hide=given controls=1 lp=1 (the Path tab's options: given blocks hidden, control
//             characters shown, sampled tokens coloured by logprob) retok (the re-tokenized copy
//             shown beside its model node, Path and Tree tabs) experts=1 (the Path tab's experts lane shown)
// The drawer's keys (tab .. lp) are written only while a rollout is open, and only when not
// the default.

import {TAB_NAMES} from "./tab-list.js";

const QUERY_KEYS = ["step", "task", "status", "ann", "q", "flag", "xflag", "rmin", "rmax", "ungrouped", "sort", "order",
  "page", "open", "search", "scase", "sre", "skind", "srole", "sin",
  "tab", "path", "tok", "blk", "msg", "fa", "fb", "node", "given", "controls", "logprobs", "retok", "ca", "cra", "cb",
  "crb", "lu", "la", "experts"];
const DRAWER_KEYS = ["tab", "path", "tok", "blk", "msg", "fa", "fb", "node", "given", "controls", "logprobs", "retok",
  "experts"];

export function emptyState() {
  return {run: null, view: null, traj: null, ...clearedFilters(), ...clearedSearch(),
    sort: "", order: "", page: 1, open: [], tab: "path", path: 0, tok: "", blk: "", msg: "", fa: 0, fb: 1, node: "",
    given: true, controls: false, logprobs: false, retok: "", ...clearedPicks(), lu: "", la: "",
    experts: false, badTab: "",
    a: "", b: "", rb: "", pa: 0, pb: 0, vs: null, sa: "", sb: "", by: "", lkey: "", lvalue: ""};
}

/** No rollout picked to compare. */
export function clearedPicks() {
  return {ca: "", cra: "", cb: "", crb: ""};
}

export function parse(hash) {
  const state = emptyState();
  const text = hash.replace(/^#/, "");
  const [pathPart, queryPart = ""] = text.split("?");
  const parts = pathPart.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "run" && parts[1]) {
    state.run = parts[1];
    let rest = parts.slice(2);
    if (rest[0] === "groups" || rest[0] === "rollouts" || rest[0] === "timeline" || rest[0] === "compare") {
      state.view = rest[0];
      rest = rest.slice(1);
    }
    if (rest[0] === "t" && rest[1] && state.view !== "compare") state.traj = rest[1];  // the pair view has no drawer
    if (rest[0] === "vs" && rest[1]) Object.assign(state, {view: "vs", vs: rest[1]});
    if (rest[0] === "lineage") state.view = "lineage";
  }
  const query = new URLSearchParams(queryPart);
  if (state.view === "vs" || state.view === "lineage") return Object.assign(state, comparedParts(query));
  for (const key of ["step", "task", "status", "q", "rmin", "rmax", "sort", "order", "search", "skind", "srole",
    "sin", "ca", "cra", "cb", "crb", "lu", "la", "a", "b", "rb", "retok"]) {
    state[key] = query.get(key) || "";
  }
  state.scase = query.get("scase") === "1";
  state.sre = query.get("sre") === "1";
  for (const key of ["ann", "flag", "xflag"]) state[key] = [...new Set(query.getAll(key).filter(Boolean))];
  const rawOpen = queryPart.split("&").find((pair) => pair.startsWith("open="))?.slice(5) || "";
  state.open = rawOpen.split(",").filter(Boolean).map(decodeURIComponent);
  state.ungrouped = query.get("ungrouped") === "1";
  state.page = Math.max(1, parseInt(query.get("page"), 10) || 1);
  state.tab = TAB_NAMES.includes(query.get("tab")) ? query.get("tab") : "path";
  state.badTab = query.get("tab") && state.tab !== query.get("tab") ? query.get("tab") : "";  // said, never written
  state.path = Math.max(0, parseInt(query.get("path"), 10) || 0);
  state.tok = position(query.get("tok"));
  state.blk = position(query.get("blk"));
  state.msg = position(query.get("msg"));
  state.fa = Math.max(0, parseInt(query.get("fa"), 10) || 0);
  state.fb = Math.max(0, parseInt(query.get("fb") ?? "1", 10) || 0);
  state.node = query.get("node") || "";
  state.given = !(query.get("hide") || "").split(",").includes("given");
  state.controls = query.get("controls") === "1";
  state.logprobs = query.get("lp") === "1";
  state.experts = query.get("experts") === "1";
  state.pa = Math.max(0, parseInt(query.get("pa"), 10) || 0);
  state.pb = Math.max(0, parseInt(query.get("pb"), 10) || 0);
  return state;
}

/** A position or index in the URL (digits only), or "" for none. */
function position(value) {
  return /^\d+$/.test(value ?? "") ? Number(value) : "";
}

/** The keys of the two comparing views, which take no filters: sides and key for one, key and value for the other. */
function comparedParts(query) {
  return {sa: query.get("sa") || "", sb: query.get("sb") || "", by: query.get("by") || "",
    lkey: query.get("key") || "", lvalue: query.get("value") || ""};
}

function withQuery(path, pairs) {
  const query = pairs.filter(([, value]) => value !== "" && value !== null && value !== undefined)
    .map(([key, value]) => `${key}=${encodeURIComponent(value)}`);
  return query.length ? `${path}?${query.join("&")}` : path;
}

/** The two-rollout compare of `a` (in `runA`) and `b` (in `runB`, named only when it is another run). */
export function pairCompareHash(runA, a, b, runB = runA) {
  return format({...emptyState(), run: runA, view: "compare", a, b, rb: runB});
}

export function format(state) {
  if (!state.run) return "#/";
  if (state.view === "compare") return formatPair(state);
  let path = `#/run/${encodeURIComponent(state.run)}`;
  if (state.view === "vs" && state.vs) {
    return withQuery(`${path}/vs/${encodeURIComponent(state.vs)}`,
      [["sa", state.sa], ["sb", state.sb], ["by", state.by]]);
  }
  if (state.view === "lineage") return withQuery(`${path}/lineage`, [["key", state.lkey], ["value", state.lvalue]]);
  if (state.view) path += `/${state.view}`;
  if (state.traj) path += `/t/${encodeURIComponent(state.traj)}`;
  const query = [];
  const add = (key, value) => query.push(`${key}=${encodeURIComponent(value)}`);
  for (const key of QUERY_KEYS) {
    const value = state[key];
    if (key === "ann" || key === "flag" || key === "xflag") value.forEach((item) => add(key, item));
    else if (key === "open") {
      if (value.length) query.push(`open=${value.map(encodeURIComponent).join(",")}`);
    } else if (key === "ungrouped" || key === "scase" || key === "sre") {
      if (value) add(key, 1);
    } else if (key === "page") {
      if (value > 1) add("page", value);
    } else if (DRAWER_KEYS.includes(key)) {
      if (!state.traj || value === emptyState()[key]) continue;
      if (key === "given") add("hide", "given");
      else if (key === "controls") add("controls", 1);
      else if (key === "logprobs") add("lp", 1);
      else if (key === "experts") add("experts", 1);
      else add(key, value);
    } else if (value) add(key, value);
  }
  return query.length ? `${path}?${query.join("&")}` : path;
}

/** The two-rollouts view's URL: its own keys only, so a pasted link is the pair and nothing else. */
function formatPair(state) {
  const query = [["a", state.a], ["b", state.b], ["rb", state.rb !== state.run && state.rb], ["pa", state.pa],
    ["pb", state.pb]].filter(([, value]) => value).map(([key, value]) => `${key}=${encodeURIComponent(value)}`);
  return `#/run/${encodeURIComponent(state.run)}/compare?${query.join("&")}`;
}

/** The state of every filter unset: what "clear all" goes to. */
export function clearedFilters() {
  return {step: "", task: "", status: "", ann: [], q: "", rmin: "", rmax: "", flag: [], xflag: [], ungrouped: false};
}

/** No record text search: what a new run starts with. */
function clearedSearch() {
  return {search: "", scase: false, sre: false, skind: "", srole: "", sin: ""};
}

/** True when any rollout filter (not the flags) is set. */
export function hasFilters(state) {
  return Boolean(state.step || state.task || state.status || state.ann.length || state.q || state.rmin || state.rmax);
}

/** True when any filter at all is set, the flags and "no group key" included. */
export function anyFilter(state) {
  return hasFilters(state) || hasFlags(state) || state.ungrouped;
}

export function hasFlags(state) {
  return Boolean(state.flag.length || state.xflag.length);
}

/** The server's query parameters for the current filters (and flags). */
export function filterParams(state) {
  return {run_id: state.run, step: state.step, task_id: state.task, status: state.status,
    annotation: state.ann, q: state.q, reward_min: state.rmin, reward_max: state.rmax,
    flag: state.flag, exclude_flag: state.xflag};
}

/** The Rollouts view's parameters: the filters, and `ungrouped=true` for the "no group key" chip. */
export function rolloutParams(state) {
  return {...filterParams(state), ungrouped: state.ungrouped ? "true" : null};
}

/** The record text search's parameters for `/v1/search`: the search inside the current filters. */
export function searchParams(state) {
  return {...filterParams(state), text: state.search, case: state.scase ? "true" : null,
    regex: state.sre ? "true" : null, kind: state.skind || null, role: state.srole || null, in: state.sin || null};
}
