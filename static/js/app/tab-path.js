// The drawer's Path tab: the path as path-view.js draws it, with what needs the server: the
// experts lane and its option, the takeaway buttons, the notable tokens, each block's markdown
// and pin buttons, the re-tokenized copies' badges and the next part. The options are state in the
// URL (route.js: given, controls, logprobs, experts), and so is the pinned token or block (tok, blk:
// token-pin.js marks it).

import {markdownButton} from "../draw/block-markdown.js";
import {el, replace} from "../draw/dom.js";
import {expertsLane} from "./experts-lane.js";
import {drawLaterPart, moreRow} from "../draw/parts.js";
import {optionToggle, pathView} from "../draw/path-view.js";
import {markCopies} from "./retok-diff.js";
import {takeawayButtons} from "./path-takeaway.js";

/** The path's blocks as far as its /paths parts have come; `more` fetches its next part. */
export function renderPath(bundle, state, {go, lazy, more, notable, pin}) {
  const paths = bundle.paths.paths || [];
  const index = Math.min(state.path, paths.length - 1);
  const unit = paths[index]?.unit;
  const where = {unit, path: index, traj: state.traj};
  const box = pathView(bundle, state, {
    go, lazy,
    tools: (path) => [unit === "tokens" ? optionToggle(state, go, "experts", "experts",
      "show each token's routed experts, one node and layer at a time") : null, ...takeawayButtons(state, path)],
    panels: (at, path) => [notable?.panel(bundle, at),
      unit === "tokens" && state.experts ? expertsLane(bundle, path, state.run) : null],
    gutter: (section, block, node, at) => section.querySelector(".gutter").append(
      markdownButton(section, block, node, where),
      el("button", {type: "button", className: "ghost pin-block", onclick: () => pin.pickBlock(at),
        title: "pin this block: its place goes in the URL (blk), to paste as a link"}, "pin"),
      el("button", {type: "button", className: "ghost to-chat", onclick: () => go({tab: "chat", node: block.node_id}),
        title: `read ${block.node_id} as a message in the Chat tab`, dataset: {link: "chat"}}, "chat")),
    onpick: (position) => pin.pick(position),
  });
  if (!paths.length) return box;
  markCopies(box.querySelector(".blocks"), bundle, go);
  const tail = el("div", {className: "path-tail"});
  const drawTail = () => replace(tail, moreRow(paths[index].part, "nodes", () => more("paths", index)));  // none if all
  drawTail();
  box.append(tail);
  TAILS.set(box, {bundle, go, drawTail});
  return box;
}

const TAILS = new WeakMap();  // a drawn Path tab -> what its next part redraws below the blocks

/** The Path tab `box` gets the blocks of the part just fetched for `bundle` after its others (with
 *  their copies' badges, and the "more" row again); false when it must be drawn whole. */
export function extendPath(box, bundle) {
  const tail = TAILS.get(box);
  if (tail?.bundle !== bundle || !drawLaterPart(box, bundle.paths, (fresh) => markCopies(fresh, bundle, tail.go))) {
    return false;
  }
  tail.drawTail();
  return true;
}
