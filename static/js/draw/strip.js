// The mask strip: one segment per block, width in proportion to its size in the path's unit
// (tokens, or characters without tokens), never thinner than 2 px so a short scaffold stays
// visible. A row's strip of a path with very many blocks comes merged from the server: such a
// segment says how many blocks it stands for and what it holds of each kind.

import {el} from "./dom.js";
import {num, sizeIn} from "./format.js";
import {blockKinds, kindWhy} from "./viewer.js";

export function strip(blocks, {tall = false, unit = "tokens", onpick = null} = {}) {
  const node = el("span", {className: `strip${tall ? " tall" : ""}`, role: "img",
    "aria-label": `mask strip, ${blocks?.length || 0} blocks`});
  if (!blocks || !blocks.length) {
    node.classList.add("none");
    node.title = "no blocks";
    return node;
  }
  blocks.forEach((block, index) => {
    const size = sizeIn(block, unit);
    const where = block.start !== undefined && block.end !== undefined ? ` [${block.start}:${block.end}]` : "";
    const trained = block.trained_in !== undefined && block.trained_in !== null
      ? `, trained in path ${block.trained_in}` : "";
    const merged = block.blocks ? ` (${num(block.blocks)} blocks drawn as one, mostly ${block.kind}: ${
      Object.entries(block.kinds).map(([kind, n]) => `${kind} ${num(n)}`).join(", ")})` : "";
    const segment = el("span", {className: `seg kind-${block.kind}`,
      title: `${block.kind}: ${kindWhy(block.kind)}. ${num(size)} ${unit}${where}${trained}${merged}`});
    segment.style.flexGrow = String(Math.max(size, 0.0001));
    if (onpick) segment.addEventListener("click", () => onpick(index));
    node.append(segment);
  });
  return node;
}

export function kindLegend() {
  return el("p", {className: "legend kinds muted small"},
    blockKinds().map((kind) =>
      el("span", {className: "legend-item", title: kindWhy(kind)},
        el("span", {className: `swatch kind-${kind}`}), kind)));
}
