// What the server says about itself: roots, and the flag and block-kind catalogue. Levels and
// meanings live in Python; the page only looks them up here.

import {el} from "./dom.js";
import {get} from "./api.js";

let info = {roots: [], flags: [], block_kinds: []};
let flagIndex = new Map();

export async function loadViewer() {
  info = await get("/__viewer");
  flagIndex = new Map((info.flags || []).map((flag, order) => [flag.flag, {...flag, order}]));
  return info;
}

export function flagInfo(name) {
  return flagIndex.get(name) || {flag: name, level: "info", why: name, order: 999};
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

export function flagBadge(name, suffix = "") {
  const flag = flagInfo(name);
  return el("span", {className: `badge level-${flag.level}`, title: flag.why, dataset: {flag: name}},
    suffix ? `${name} ${suffix}` : name);
}
