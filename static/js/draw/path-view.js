// One path of a rollout as the trainer sees it, the Path tab's body: the path picker, the mask
// strip, the toolbar with its options (given blocks, control characters, logprob colours), the
// notices, the token readout and the blocks. A pure function of the server's answers (/paths,
// /graph, the header): it fetches nothing, so the drawer (tab-path.js, which adds what needs the
// server) and a snapshot file draw the same tab. A later part's blocks are drawn after those already
// there (parts.js `drawLaterPart`), not with them again.

import {append, el, replace} from "./dom.js";
import {num, pct, plural, sizeIn, unitShort} from "./format.js";
import {drawMedia} from "./media.js";
import {drawsLaterParts} from "./parts.js";
import {strip} from "./strip.js";
import {blockElement, wireReadout} from "./tokens.js";
import {textOnlyNotice} from "./viewer.js";

/** A checkbox for the Path option `name` of `state`: a change asks `go` for the new value. */
export function optionToggle(state, go, name, label, title) {
  return el("label", {className: "option", title},
    el("input", {type: "checkbox", checked: state[name], dataset: {option: name},
      onchange: (event) => go({[name]: event.target.checked}, {replace: true})}), ` ${label}`);
}

/** The path `state.path` of `bundle.paths` (the last one past it), drawn with `lazy` (a LazyText);
 *  `go(patch)` changes the state. What the caller adds: `tools(path)` at the toolbar's end,
 *  `panels(index, path)` above the readout, `gutter(section, block, node, at)` to each block's gutter,
 *  and `onpick(position)` for a clicked token. */
export function pathView(bundle, state, {go, lazy, tools = () => [], panels = () => [], gutter = null, onpick = null}) {
  const data = bundle.paths;
  const paths = data.paths || [];
  if (!paths.length) return el("p", {className: "notice"}, "This trajectory has no path to show.");
  const index = Math.min(state.path, paths.length - 1);
  const path = paths[index];
  const unit = path.unit;
  const box = el("div", {className: "path-tab"});
  if (paths.length > 1) box.append(picker(paths, index, go));
  const overview = () => strip(path.blocks, {tall: true, unit, onpick: (i) => {
    box.querySelector(`.block[data-start="${path.blocks[i].start}"]`)?.scrollIntoView({block: "start"});
  }});
  let shownStrip = overview();
  box.append(shownStrip);
  const tokenMode = unit === "tokens";
  const hasLogprobs = tokenMode && path.logprob_count > 0;
  const toggle = (name, label, title) => optionToggle(state, go, name, label, title);
  box.append(el("div", {className: "toolbar"},
    el("span", {}, `${num(sizeIn(path, unit))} ${unit}`),
    tokenMode ? el("span", {},
      `${num(path.trainable_count)} trainable (${pct(path.trainable_count, path.token_count) || "0%"})`) : null,
    el("span", {}, `stop: ${path.stop_reason ?? "-"}`),
    toggle("given", "given", "show the given blocks (system, user, tool messages)"),
    toggle("controls", "control chars",
      "show line breaks, tabs, zero-width characters and other controls (direction controls are always shown)"),
    hasLogprobs ? toggle("logprobs", "colour by logprob", "shade sampled tokens by how unlikely they were") : null,
    ...tools(path)));
  if (state.path > index) {
    box.append(el("p", {className: "notice warn past-last"},
      `path ${state.path} does not exist: showing path ${index} of 0–${paths.length - 1}.`));
  }
  const noticeBox = el("div", {className: "path-notices"}, notices(data, path, paths));
  box.append(noticeBox);
  const readout = el("p", {className: "readout", id: "readout", "aria-live": "polite", hidden: !tokenMode},
    "hover a token");
  append(box, [panels(index, path), readout]);
  const blocks = el("div", {className: "blocks"});
  const options = {controls: state.controls, logprobs: state.logprobs, unit};
  let drawn = 0;
  let shown = 0;
  const grow = () => {  // the sections of the blocks from `drawn` on: what they are, in a fragment
    const fresh = document.createDocumentFragment();
    path.blocks.slice(drawn).forEach((block, offset) => {
      if (!state.given && block.kind === "given") return;
      const at = drawn + offset;
      const node = data.nodes?.[block.node_id];
      const section = blockElement(block, node, lazy, options);
      section.dataset.blk = at;  // its index in the path: what `blk` names
      gutter?.(section, block, node, at);
      drawMedia(section, block, node, unit);
      fresh.append(section);
      shown += 1;
    });
    drawn = path.blocks.length;
    if (!shown && path.part?.next === undefined) {
      fresh.append(el("p", {className: "notice"}, path.blocks.length
        ? "Every block here is context. Tick \u201cgiven\u201d to see it." : "This path has no blocks."));
    }
    return fresh;
  };
  blocks.append(grow());
  wireReadout(blocks, readout, onpick);
  box.append(blocks);
  drawsLaterParts(box, (now, decorate = () => {}) => {  // decorate(fragment): what the caller adds first
    if (now !== data || state.experts) return false;  // another answer, or a lane of the nodes loaded: all again
    const next = overview();
    shownStrip.replaceWith(next);
    shownStrip = next;
    replace(noticeBox, notices(data, path, paths));  // some count what is loaded (train-once)
    const fresh = grow();
    decorate(fresh);
    blocks.append(fresh);
    return true;
  });
  return box;
}


/** The paths as a list to pick from, scrolled (once drawn) to show the one picked: path 20 of 21 in view. */
function picker(paths, index, go) {
  const list = el("div", {className: "picker", role: "listbox", "aria-label": "paths"}, paths.map((path, i) =>
    el("button", {type: "button", role: "option", className: `pick${i === index ? " active" : ""}`,
      "aria-selected": i === index ? "true" : "false", dataset: {path: i},
      onclick: () => go({path: i}, {replace: true})},
    el("span", {className: "pick-name"}, `path ${i}`),
    el("span", {className: "muted small"}, path.fork_from ? `from ${path.fork_from}` : ""),
    strip(path.blocks, {unit: path.unit}),
    el("span", {className: "muted small"}, path.unit === "tokens"
      ? `${num(path.trainable_count)}/${num(path.token_count)} ${pct(path.trainable_count, path.token_count)}`
      : `${num(path.char_count)} ch`))));
  requestAnimationFrame(() => {
    const active = list.children[index];
    if (!active) return;
    const below = active.offsetTop + active.offsetHeight - list.clientHeight;
    if (active.offsetTop < list.scrollTop || below > list.scrollTop) list.scrollTop = Math.max(0, below);
  });
  return list;
}

function notices(data, path, paths) {
  const out = [];
  const note = (level, text) => out.push(el("p", {className: `notice ${level}`}, text));
  const textOnly = textOnlyNotice(data);
  if (textOnly) {
    out.push(textOnly);
  } else if (data.mode === "text") {
    note("info", "Text mode: no token ids were captured, so there is no mask, no ranges and nothing to re-feed."
      + " Blocks are the messages, and their widths are characters.");
  }
  if (data.mask_error) {
    note("warn mask-error", `The sampling mask cannot be read, so no token shows its support: ${data.mask_error}`);
  }
  if (path.samples) {  // a custom rule's rows on this path: each is a sample of its own for the trainer
    const unit = unitShort(path.unit);
    note("info path-samples", `This path carries ${plural(path.samples.length, "sample")} of the record's rows, each`
      + ` a sample of its own: ${path.samples.map((sample) => `row ${sample.row} through ${sample.leaf_node_id},`
      + ` ${num(sample.size)} ${unit}${sample.trainable === null ? "" : `, ${num(sample.trainable)} in the loss`}`
      + ` (targets ${sample.targets.join(", ") || "none"})`).join("; ")}.`);
  }
  if (path.trains === false) {
    note("warn no-train-path",
      "The record's samples do not train this path: its replies are sampled-untrained, in no loss.");
  }
  const elsewhere = path.blocks.filter((b) => b.kind === "sampled-elsewhere");
  if (elsewhere.length) {
    const count = elsewhere.reduce((sum, b) => sum + sizeIn(b, path.unit), 0);
    const where = [...new Set(elsewhere.map((b) => b.trained_in))].map((i) => `path ${i}`).join(", ");
    note("info", `Train-once: ${num(count)} ${path.unit} here were sampled by the model but are trained in ${where},`
      + " so this path masks them (sampled-elsewhere).");
  }
  if (path.index > 0 && path.diverges_at) {
    note("info", path.fork_from
      ? `This path leaves the earlier ones after ${path.fork_from}; its first new node is ${path.diverges_at}.`
      : `This path starts from a new root; its first new node is ${path.diverges_at}.`);
  }
  if (paths.length > 1 && path.index === 0) note("muted", `This rollout forked: ${paths.length} paths.`);
  return out;
}

