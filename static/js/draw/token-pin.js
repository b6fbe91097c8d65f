// The pinned place of the Path tab, which a link can name: a token (`tok`, its position in the
// path: the index a block's [start:end] uses) or a block (`blk`, its index in the path's blocks).
// Clicking a token pins it and puts it in the URL; a pasted link (or a reload) fetches the path's
// parts until the place is there, shows the given blocks when it is in one, unfolds and draws its
// block, marks it and scrolls to it once.

import {el, holdInView} from "./dom.js";
import {num, sizeIn} from "./format.js";
import {pinIn, unfold, unpinAll} from "./tokens.js";

/** The index of the block holding path position `position` (blocks tile the path in order), or -1. */
function blockAt(blocks, position) {
  let low = 0;
  let high = blocks.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (position < blocks[mid].start) high = mid - 1;
    else if (position >= blocks[mid].end) low = mid + 1;
    else return mid;
  }
  return -1;
}

/** Where the pin of `state` is in `path`: `{at, position}` (its block's index, and the token's
 *  position or null for the whole block), `{more: true}` when a later part holds it, `{past: why}`
 *  when the path has no such place, or null when nothing is pinned. */
function pinTarget(path, state) {
  const more = path.part?.next !== undefined ? {more: true} : null;
  if (state.tok !== "") {
    const size = sizeIn(path, path.unit);
    const noun = path.unit === "tokens" ? "token" : "position";
    if (state.tok >= size) {
      return {past: `${noun} ${num(state.tok)} does not exist:`
        + ` path ${path.index} has ${num(size)} ${path.unit}${size ? ` (0–${num(size - 1)})` : ""}.`};
    }
    const at = blockAt(path.blocks, state.tok);
    return at >= 0 ? {at, position: state.tok}
      : more ?? {past: `${noun} ${num(state.tok)} is in no block of path ${path.index}.`};
  }
  if (state.blk !== "") {
    if (state.blk < path.blocks.length) return {at: state.blk, position: null};
    return more
      ?? {past: `block ${num(state.blk)} does not exist: path ${path.index} has ${num(path.blocks.length)} blocks.`};
  }
  return null;
}

export class PinnedPlace {
  /** `view()` is the drawer's {bundle, state, content} at the time asked; `more(route, index,
   *  wanted)` fetches the next parts while `wanted()`, and draws again. */
  constructor(view, {go, more}) {
    this.view = view;
    this.go = go;
    this.more = more;
    this.scrolled = null;  // the pin last scrolled to: later draws of it only mark it
    this.widened = null;  // the pin the given blocks were shown for (once: hiding them again is the reader's)
  }

  /** A click on the token at path position `position`: pin it, or unpin it when it is the pinned one. */
  pick(position) {
    const {state} = this.view();
    if (state.tok === position) {
      this.go({tok: "", blk: ""}, {replace: true});
      return;
    }
    this.scrolled = this.key(state, position, "");  // it is in sight already
    this.go({tok: position, blk: ""}, {replace: true});
  }

  /** A click on a block's pin button: pin block `index`, or unpin it. */
  pickBlock(index) {
    const {state} = this.view();
    if (state.blk === index) {
      this.go({tok: "", blk: ""}, {replace: true});
      return;
    }
    this.scrolled = this.key(state, "", index);
    this.go({tok: "", blk: index}, {replace: true});
  }

  /** Esc: unpin, if anything is pinned; false when nothing was. */
  unpin() {
    const {state} = this.view();
    if (state.tok === "" && state.blk === "") return false;
    this.go({tok: "", blk: ""}, {replace: true});
    return true;
  }

  key(state, tok, blk) {
    return JSON.stringify([state.run, state.traj, state.path, tok, blk]);
  }

  /** Mark the pin in the drawn Path tab, or say the path has no such place (after every draw, and
   *  when only the pin changed). */
  drawn() {
    const {bundle, state, content} = this.view();
    const paths = bundle?.paths?.paths || [];
    if (state.tab !== "path" || !content || !paths.length) return;
    const index = Math.min(state.path, paths.length - 1);
    const path = paths[index];
    const readout = content.querySelector("#readout");
    unpinAll(content, readout);
    content.querySelector(".pin-past")?.remove();
    const target = pinTarget(path, state);
    if (target?.past) readout?.before(el("p", {className: "notice warn pin-past"}, target.past));
    if (!target || target.past) return;
    if (target.more) {  // bounded: each part moves `next` on, and a failed fetch stops
      this.more("paths", index, () => pinTarget(path, state)?.more);
      return;
    }
    const key = this.key(state, state.tok, state.blk);
    const block = path.blocks[target.at];
    if (!state.given && block.kind === "given" && this.widened !== key) {
      this.widened = key;
      this.go({given: true}, {replace: true});
      return;
    }
    const section = content.querySelector(`section.block[data-blk="${target.at}"]`);
    if (!section) return;
    unfold(section);
    const shown = pinIn(section, target.position, readout);
    if (!shown || this.scrolled === key) return;
    this.scrolled = key;
    holdInView(content, shown, () => (content.clientHeight - shown.getBoundingClientRect().height) / 2);
  }
}
