// Big answers come in parts: /paths (per path), /graph and /exchanges each say in `part` which
// window of how many items they hold and where the next part starts. The tabs draw what has
// come and end with a "more" row; the drawer asks for the next part when that row comes near
// the viewport or is clicked, merges it into the answer it has (fetch-part.js), and draws the new part
// after what is drawn (`drawLaterPart`) or, for a tab that cannot, all of it again.
// This module only draws and merges lists, so a snapshot file (which fetches nothing) holds it too.

import {el} from "./dom.js";
import {num} from "./format.js";

const LATER_PARTS = new WeakMap();  // a tab drawn from an answer in parts -> draws what the answer got since

/** Say how `box`, a tab drawn from an answer in parts, draws a later part after what it drew:
 *  `grow(answer, ...rest)` draws it and is true, or is false when `box` must be drawn whole. */
export function drawsLaterParts(box, grow) {
  LATER_PARTS.set(box, grow);
}

/** Draw what `answer` got since `box` was drawn from it after what is there (a part costs its own
 *  items, not all of them again); false when `box` draws no later part (not drawn from `answer`, or
 *  it must be drawn whole), and the caller draws it again. */
export function drawLaterPart(box, answer, ...rest) {
  return Boolean(box && LATER_PARTS.get(box)?.(answer, ...rest));
}

/** Push every item of `more` onto `list` (no spread: a part may hold more than a call's arguments). */
export function extend(list, more) {
  for (const item of more || []) list.push(item);
}

/** The row after what is drawn, "n of N nodes shown", while more parts are left: `more` asks for
 *  the next one (the drawer also clicks it when it comes into sight, unless not `watched`: a
 *  drawing that does not grow downwards would stay in sight and fetch every part). */
export function moreRow(part, noun, more, {watched = true} = {}) {
  if (part?.next === undefined) return null;
  return el("button", {type: "button", className: `more${watched ? "" : " manual"} ghost`, dataset: {more: noun},
    onclick: more}, `${num(part.to)} of ${num(part.total)} ${noun} shown · show more`);
}

/** Watch a tab's "more" rows in the scrolling `box`: one coming within sight asks for its next part
 *  (a click, as the reader's). */
export function nearEndWatcher(box) {
  return new IntersectionObserver((entries) => {
    for (const entry of entries) if (entry.isIntersecting) entry.target.click();
  }, {root: box, rootMargin: "800px 0px"});
}
