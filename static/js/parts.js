// Big answers come in parts: /paths (per path), /graph and /exchanges each say in `part` which
// window of how many items they hold and where the next part starts. The tabs draw what has
// come and end with a "more" row; the drawer asks for the next part when that row comes near
// the viewport or is clicked, merges it into the answer it has (fetch-part.js), and draws again.
// This module only draws and merges lists, so a snapshot file (which fetches nothing) holds it too.

import {el} from "./dom.js";
import {num} from "./format.js";

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
