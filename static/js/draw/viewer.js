// What the server says about itself: roots, and the flag, block-kind and text-only catalogues.
// Levels, meanings and notes live in Python; the page only looks them up here. It fetches nothing:
// the page gives it the `/__viewer` answer and a snapshot file the copy it holds, once, before drawing.

import {el} from "./dom.js";

let info = {roots: [], flags: [], block_kinds: [], text_only: [], snapshot_tabs: []};
let flagIndex = new Map();

/** Keep the server's catalogue (the `/__viewer` answer, or a snapshot's copy of its catalogues). */
export function setViewer(answer) {
  info = answer;
  flagIndex = new Map((info.flags || []).map((flag, order) => [flag.flag, {...flag, order}]));
  return info;
}

export function flagInfo(name) {
  return flagIndex.get(name) || {flag: name, level: "info", why: name, order: 999};
}

/** The drawer tabs a rollout's snapshot file has (the others open it on the Path). */
export function snapshotTabs() {
  return info.snapshot_tabs || [];
}

/** The block kinds, in the order the server lists them (display order). */
export function blockKinds() {
  return (info.block_kinds || []).map((entry) => entry.kind);
}

export function kindWhy(kind) {
  return (info.block_kinds || []).find((entry) => entry.kind === kind)?.why || kind;
}

/** Flags a table row shows (the catalogue's `row`), in the catalogue's order. */
export function rowFlags(names) {
  return (names || []).filter((name) => flagInfo(name).row !== false)
    .sort((a, b) => flagInfo(a).order - flagInfo(b).order);
}

/** Why a rollout is shown from message text (`/paths`'s text_only), as the catalogue says it,
 *  with the sidecar's error when the server gives one; null when it has its tokens. */
export function textOnlyNotice(paths) {
  const reason = paths?.text_only;
  if (!reason) return null;
  const entry = (info.text_only || []).find((item) => item.reason === reason)
    || {level: "warn", note: `message text only (${reason})`};
  const note = `${entry.note.charAt(0).toUpperCase()}${entry.note.slice(1)}`;
  return el("p", {className: `notice ${entry.level} text-only`, dataset: {reason}},
    paths.tokens_error ? `${note} (${paths.tokens_error}).` : `${note}.`);
}

export function flagBadge(name, suffix = "", {more = ""} = {}) {
  const flag = flagInfo(name);
  return el("span", {className: `badge level-${flag.level}`, title: more ? `${flag.why}. ${more}` : flag.why,
    dataset: {flag: name}}, suffix ? `${name} ${suffix}` : name);
}

/** A fork as the server names it (/graph `forks`, skycap's kinds): a badge whose title is the detail. */
export function forkBadge(fork) {
  return el("span", {className: "badge fork-kind level-info", title: fork.detail || fork.kind,
    dataset: {fork: fork.kind}}, fork.kind);
}

/** "2 resample, 1 edited reply": the kinds of a rollout's forks, as /graph names them. */
export function forkKinds(forks) {
  const counts = new Map();
  for (const fork of forks || []) counts.set(fork.kind, (counts.get(fork.kind) || 0) + 1);
  return [...counts].map(([kind, count]) => `${count} ${kind}`).join(", ");
}
