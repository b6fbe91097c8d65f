// The Path tab: one path of the rollout as the trainer sees it, cut into blocks, with the
// mask strip, token hover and the options to colour by logprob, hide given blocks and show
// control characters, and the experts lane. The options are state in the URL (route.js: given,
// controls, logprobs, experts), and so is the pinned token or block (tok, blk: token-pin.js marks it).

import {markdownButton} from "./block-markdown.js";
import {append, el} from "./dom.js";
import {expertsLane} from "./experts-lane.js";
import {num, pct, sizeIn} from "./format.js";
import {drawMedia} from "./media.js";
import {moreRow} from "./parts.js";
import {markCopies} from "./retok-diff.js";
import {takeawayButtons} from "./path-takeaway.js";
import {strip} from "./strip.js";
import {blockElement, wireReadout} from "./tokens.js";
import {textOnlyNotice} from "./viewer.js";

/** The path's blocks as far as its /paths parts have come; `more` fetches its next part. */
export function renderPath(bundle, state, {go, lazy, more, notable, pin}) {
  const options = {given: state.given, controls: state.controls, logprobs: state.logprobs, experts: state.experts};
  const data = bundle.paths;
  const paths = data.paths || [];
  if (!paths.length) return el("p", {className: "notice"}, "This trajectory has no path to show.");
  const index = Math.min(state.path, paths.length - 1);
  const path = paths[index];
  const unit = path.unit;
  const box = el("div", {className: "path-tab"});
  if (paths.length > 1) box.append(picker(paths, index, go));
  box.append(strip(path.blocks, {tall: true, unit, onpick: (i) => {
    box.querySelector(`.block[data-start="${path.blocks[i].start}"]`)?.scrollIntoView({block: "start"});
  }}));
  const tokenMode = unit === "tokens";
  const hasLogprobs = tokenMode && path.logprob_count > 0;
  const toggle = (name, label, title) => el("label", {className: "option", title},
    el("input", {type: "checkbox", checked: options[name], dataset: {option: name},
      onchange: (event) => go({[name]: event.target.checked}, {replace: true})}), ` ${label}`);
  box.append(el("div", {className: "toolbar"},
    el("span", {}, `${num(sizeIn(path, unit))} ${unit}`),
    tokenMode ? el("span", {}, `${num(path.trainable_count)} trainable (${pct(path.trainable_count, path.token_count) || "0%"})`) : null,
    el("span", {}, `stop: ${path.stop_reason ?? "-"}`),
    toggle("given", "given", "show the given blocks (system, user, tool messages)"),
    toggle("controls", "control chars", "show line breaks and tabs as ↵ and →"),
    hasLogprobs ? toggle("logprobs", "colour by logprob", "shade sampled tokens by how unlikely they were") : null,
    tokenMode ? toggle("experts", "experts", "show each token's routed experts, one node and layer at a time") : null,
    ...takeawayButtons(state, path)));
  if (state.path > index) {
    box.append(el("p", {className: "notice warn past-last"},
      `path ${state.path} does not exist: showing path ${index} of 0–${paths.length - 1}.`));
  }
  box.append(...notices(data, path, paths));
  const readout = el("p", {className: "readout", id: "readout", "aria-live": "polite", hidden: !tokenMode}, "hover a token");
  if (notable) box.append(notable.panel(bundle, index));
  if (tokenMode && options.experts) box.append(expertsLane(bundle, path, state.run));
  box.append(readout);
  const blocks = el("div", {className: "blocks"});
  const where = {unit, path: index, traj: state.traj};
  let shown = 0;
  path.blocks.forEach((block, at) => {
    if (!options.given && block.kind === "given") return;
    const node = data.nodes?.[block.node_id];
    const section = blockElement(block, node, lazy, {...options, unit});
    section.dataset.blk = at;  // its index in the path: what `blk` names
    section.querySelector(".gutter").append(markdownButton(section, block, node, where),
      el("button", {type: "button", className: "ghost pin-block", title: "pin this block: its place goes in the URL (blk), to paste as a link",
        onclick: () => pin.pickBlock(at)}, "pin"));
    drawMedia(section, block, node, unit);
    blocks.append(section);
    shown += 1;
  });
  if (!shown && path.part?.next === undefined) {
    blocks.append(el("p", {className: "notice"}, path.blocks.length
      ? "Every block here is context. Tick \u201cgiven\u201d to see it." : "This path has no blocks."));
  }
  markCopies(blocks, bundle, go);
  wireReadout(blocks, readout, (position) => pin.pick(position));
  append(box, [blocks, moreRow(path.part, "nodes", () => more("paths", index))]);  // no row when all is here
  return box;
}

function picker(paths, index, go) {
  return el("div", {className: "picker", role: "listbox", "aria-label": "paths"}, paths.map((path, i) =>
    el("button", {type: "button", role: "option", className: `pick${i === index ? " active" : ""}`,
      "aria-selected": i === index ? "true" : "false", dataset: {path: i},
      onclick: () => go({path: i}, {replace: true})},
    el("span", {className: "pick-name"}, `path ${i}`),
    el("span", {className: "muted small"}, path.fork_from ? `from ${path.fork_from}` : ""),
    strip(path.blocks, {unit: path.unit}),
    el("span", {className: "muted small"}, path.unit === "tokens"
      ? `${num(path.trainable_count)}/${num(path.token_count)} ${pct(path.trainable_count, path.token_count)}`
      : `${num(path.char_count)} ch`))));
}

function notices(data, path, paths) {
  const out = [];
  const note = (level, text) => out.push(el("p", {className: `notice ${level}`}, text));
  const textOnly = textOnlyNotice(data);
  if (textOnly) {
    out.push(textOnly);
  } else if (data.mode === "text") {
    note("info", "Text mode: no token ids were captured, so there is no mask, no ranges and nothing to re-feed. Blocks are the messages, and their widths are characters.");
  }
  if (data.mask_error) note("warn mask-error", `The sampling mask cannot be read, so no token shows its support: ${data.mask_error}`);
  if (path.trains === false) {
    note("warn no-train-path", "The record's samples do not train this path: its replies are sampled-untrained, in no loss.");
  }
  const elsewhere = path.blocks.filter((b) => b.kind === "sampled-elsewhere");
  if (elsewhere.length) {
    const count = elsewhere.reduce((sum, b) => sum + sizeIn(b, path.unit), 0);
    const where = [...new Set(elsewhere.map((b) => b.trained_in))].map((i) => `path ${i}`).join(", ");
    note("info", `Train-once: ${num(count)} ${path.unit} here were sampled by the model but are trained in ${where}, so this path masks them (sampled-elsewhere).`);
  }
  if (path.index > 0 && path.diverges_at) {
    note("info", path.fork_from
      ? `This path leaves the earlier ones after ${path.fork_from}; its first new node is ${path.diverges_at}.`
      : `This path starts from a new root; its first new node is ${path.diverges_at}.`);
  }
  if (paths.length > 1 && path.index === 0) note("muted", `This rollout forked: ${paths.length} paths.`);
  return out;
}

