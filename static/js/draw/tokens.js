// A block's text, token by token. Every block first shows as plain text (cheap, and the
// browser's own find sees it; the drawer's find bar searches the data and draws what it needs);
// chunks that come near the viewport are upgraded to one span per token, so a 64k-token rollout
// opens at once and hovering still reads every token.

import {copyText, el, hoverReadout} from "./dom.js";
import {logprobBand, num, tokenFacts, unitShort, visible} from "./facts.js";
import {sizeIn} from "./format.js";
import {kindWhy} from "./viewer.js";

const CHUNK_TOKENS = 1500;
const CHUNK_CHARS = 20000;
const LONG_GIVEN = 600;  // characters: longer prompts and tool results start folded
const chunkInfo = new WeakMap();  // chunk element -> {block, node, from, to, options}
const blockInfo = new WeakMap();  // block section -> {block, node, options}: what find and notable look in

/** A block is drawn token by token when its path's unit is tokens (and its node has the ids). */
function isTokenBlock(node, unit) {
  return unit === "tokens" && Boolean(node?.token_ids);
}

/** The characters of a block: its slice of the node's text. */
function blockText(block, node, unit) {
  if (!node) return "";
  if (isTokenBlock(node, unit)) {
    if (node.text === null || node.text === undefined || !node.token_offsets) return null;
    return node.text.slice(node.token_offsets[block.node_start], node.token_offsets[block.node_end]);
  }
  return (node.text ?? "").slice(block.node_start ?? 0, block.node_end ?? (node.text ?? "").length);
}


/** Lazily upgrades chunks to token spans as they approach the viewport. */
export class LazyText {
  /** `root` is the scrolling box the text sits in (its margin is where "near" is measured). */
  constructor(root) {
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        this.observer.unobserve(entry.target);
        upgrade(entry.target);
      }
    }, {root, rootMargin: "1200px 0px"});
  }

  disconnect() {
    this.observer.disconnect();
  }

  /** The block's text element: chunks of plain text, upgraded on sight. */
  text(block, node, options) {
    const box = el("div", {className: "text"});
    if (!node) return box;
    if (isTokenBlock(node, options.unit)) {
      for (let from = block.node_start; from < block.node_end; from += CHUNK_TOKENS) {
        const to = Math.min(block.node_end, from + CHUNK_TOKENS);
        const chunk = el("span", {className: "chunk", dataset: {from, to}});  // token indices: search marks find them
        chunk.textContent = chunkPlain(node, from, to, options);
        chunkInfo.set(chunk, {block, node, from, to, options});
        box.append(chunk);
        this.observer.observe(chunk);
      }
    } else {
      const text = blockText(block, node, options.unit);
      if (!text) box.append(el("span", {className: "muted"}, node.text === null ? "(no text recorded)" : "(empty)"));
      for (let from = 0; from < (text || "").length; from += CHUNK_CHARS) {
        const start = (block.node_start ?? 0) + from;  // offsets into the node's text: search marks find them
        const to = start + Math.min(CHUNK_CHARS, text.length - from);
        box.append(el("span", {className: "chunk", dataset: {from: start, to}},
          visible(text.slice(from, from + CHUNK_CHARS), options.controls)));
      }
    }
    return box;
  }
}

function chunkPlain(node, from, to, options) {
  if (node.text === null || node.text === undefined || !node.token_offsets) {
    const ids = node.token_ids.slice(from, to).join(" ");
    return `⟨ids ${ids}⟩`;
  }
  return visible(node.text.slice(node.token_offsets[from], node.token_offsets[to]), options.controls);
}

/** Draw a chunk token by token now (a search mark needs its spans before it comes into sight);
 *  once drawn it is left alone, so what was marked on it stays. */
export function upgrade(chunk) {
  const info = chunkInfo.get(chunk);
  if (!info || chunk.classList.contains("tokens")) return;  // drawn once: find may draw it before the observer
  const {node, from, to, options} = info;
  const hasText = node.text !== null && node.text !== undefined && node.token_offsets;
  const colour = options.logprobs && node.logprobs && node.sampled_start !== null && node.sampled_start !== undefined;
  const outside = new Set(node.outside_support || []);  // sampled ids their mask did not allow: marked
  const spans = [];
  for (let i = from; i < to; i += 1) {
    const piece = hasText ? node.text.slice(node.token_offsets[i], node.token_offsets[i + 1]) : `${node.token_ids[i]} `;
    const span = document.createElement("span");
    const band = colour && i >= node.sampled_start ? " " + logprobBand(node.logprobs[i]) : "";
    span.className = `t${piece ? "" : " sliver"}${band}`;
    if (outside.has(i)) span.classList.add("out-of-support");
    span.dataset.i = i;
    span.textContent = visible(piece, options.controls);
    spans.push(span);
  }
  for (const [markFrom, markTo, name] of info.marks || []) {
    for (let i = markFrom; i < markTo; i += 1) spans[i - from].classList.add(name);
  }
  chunk.replaceChildren(...spans);
  chunk.classList.add("tokens");
}

/** What the readout says about the token under `span`, or null. */
function describeToken(span) {
  const chunk = span.closest(".chunk");
  const info = chunk && chunkInfo.get(chunk);
  if (!info || !span.classList.contains("t")) return null;
  return tokenFacts(info.block, info.node, Number(span.dataset.i));
}

/** The token's position in its path (the index a block's [start:end] uses), or null. */
function tokenPosition(span) {
  const info = chunkInfo.get(span.closest(".chunk"));
  if (!info || !span.classList.contains("t")) return null;
  return info.block.start + (Number(span.dataset.i) - info.block.node_start);
}

/** Hovering any token inside `root` writes its description into `readout`, unless a token is
 *  pinned there (the readout stays on it); clicking a token (not the end of a text selection)
 *  calls `onpick(position)`. */
export function wireReadout(root, readout, onpick = null) {
  hoverReadout(root, readout, describeToken);
  if (!onpick) return;
  root.addEventListener("click", (event) => {
    const span = event.target.closest?.("span.t");
    const position = span && document.getSelection().isCollapsed ? tokenPosition(span) : null;
    if (position !== null) onpick(position);
  });
}

/** Mark path position `position` of a section's block as pinned (null: the whole block) and put a
 *  pinned token in `readout`; returns what to scroll to. A token block pins its token, drawing its
 *  chunk first; a text block pins the block and highlights the character (`::highlight(pinned)`). */
export function pinIn(section, position, readout) {
  const info = blockInfo.get(section);
  if (!info) return null;
  const {block, node, options} = info;
  if (position === null) {
    section.classList.add("pinned");
    return section;
  }
  const at = position - block.start;
  if (isTokenBlock(node, options.unit)) {
    const span = tokenSpans(section, block.node_start + at, block.node_start + at + 1)[0];
    if (!span) return section;
    span.classList.add("pinned");
    readout.classList.add("pinned");
    readout.textContent = `pinned · ${describeToken(span)} · click it again or Esc to unpin`;
    return span;
  }
  section.classList.add("pinned");
  const range = textRange(section, at, at + 1);
  if (range && window.Highlight) CSS.highlights.set("pinned", new Highlight(range));
  return range?.startContainer.parentElement ?? section;
}

/** Take every pin off under `root`, and free `readout` for hovering again. */
export function unpinAll(root, readout) {
  if (readout?.classList.contains("pinned")) readout.textContent = "hover a token";
  for (const marked of root.querySelectorAll(".pinned")) marked.classList.remove("pinned");
  CSS.highlights?.delete("pinned");
}

/** The text of a block drawn by `blockElement` (all of it, drawn or not yet), or null for none. */
export function sectionText(section) {
  const info = blockInfo.get(section);
  return info ? blockText(info.block, info.node, info.options.unit) : null;
}

/** The `/paths` block a section draws (null for none). */
export function sectionBlock(section) {
  return blockInfo.get(section)?.block ?? null;
}

/** Show all of a folded block. */
export function unfold(section) {
  if (!section.classList.contains("collapsed")) return;
  section.classList.remove("collapsed");
  const fold = section.querySelector("button.fold");
  if (fold) fold.textContent = "collapse";
}

/** The spans of node tokens [from, to) in a token-drawn section, drawing their chunks first. */
export function tokenSpans(section, from, to) {
  const spans = [];
  for (const chunk of section.querySelectorAll(".chunk")) {
    const info = chunkInfo.get(chunk);
    if (!info || info.to <= from || to <= info.from) continue;
    upgrade(chunk);
    spans.push(...[...chunk.children].slice(Math.max(from, info.from) - info.from, Math.min(to, info.to) - info.from));
  }
  return spans;
}

/** Give the tokens [from, to) of a section's node the class `name`: at once in chunks already
 *  drawn, and in the others when they are drawn (marking a long pair never draws it all at once). */
export function markTokens(section, from, to, name) {
  for (const chunk of section.querySelectorAll(".chunk")) {
    const info = chunkInfo.get(chunk);
    if (!info || info.to <= from || to <= info.from) continue;
    const markFrom = Math.max(from, info.from);
    const markTo = Math.min(to, info.to);
    if (chunk.classList.contains("tokens")) {
      for (const span of [...chunk.children].slice(markFrom - info.from, markTo - info.from)) span.classList.add(name);
    } else {
      (info.marks ??= []).push([markFrom, markTo, name]);
    }
  }
}

/** A Range over characters [from, to) of the section's text (`sectionText`): in a token block the
 *  whole tokens that hold them, drawn first; in a text block the characters of its plain chunk. */
export function textRange(section, from, to) {
  const info = blockInfo.get(section);
  if (!info) return null;
  const {block, node, options} = info;
  const range = document.createRange();
  if (isTokenBlock(node, options.unit)) {
    const offsets = node.token_offsets;
    const base = offsets[block.node_start];
    let first = block.node_start;
    while (first < block.node_end - 1 && offsets[first + 1] <= base + from) first += 1;
    let last = first;
    while (last < block.node_end - 1 && offsets[last + 1] < base + to) last += 1;
    const spans = tokenSpans(section, first, last + 1);
    if (!spans.length) return null;
    range.setStartBefore(spans[0]);
    range.setEndAfter(spans[spans.length - 1]);
    return range;
  }
  const chunk = section.querySelectorAll(".text .chunk")[Math.floor(from / CHUNK_CHARS)];
  const textNode = chunk?.firstChild;
  if (!textNode) return null;
  const text = blockText(block, node, options.unit);
  const start = Math.floor(from / CHUNK_CHARS) * CHUNK_CHARS;
  const shown = (a, b) => visible(text.slice(a, b), options.controls).length;  // controls shown widen the text
  range.setStart(textNode, shown(start, from));
  range.setEnd(textNode, Math.min(textNode.length, shown(start, to)));
  return range;
}

/** One block: a gutter (kind, role, node, range, size) and its text. `options`: the unit of
 *  the block's path ("tokens" or "chars"), and controls, logprobs, dim. */
export function blockElement(block, node, lazy, options) {
  const range = `[${block.start}:${block.end}]`;
  const copy = el("button", {type: "button", className: "range ghost", title: "copy this range",
    onclick: (event) => copyText(`${block.start}:${block.end}`, event.currentTarget)}, range);
  const section = el("section", {className: `block kind-${block.kind}${options.dim ? " dim" : ""}`,
    dataset: {node: block.node_id, start: block.start}},
  el("div", {className: "gutter"},
    el("span", {className: `kind-badge kind-${block.kind}`, title: kindWhy(block.kind)}, block.kind),
    el("span", {className: "role"}, block.role ?? "(no role)", block.author === "model" ? " · model" : ""),
    block.trained_in !== undefined && block.trained_in !== null
      ? el("span", {className: "trained-in"}, `trained in path ${block.trained_in}`) : null,
    el("span", {className: "node-id"}, block.node_id),
    copy,
    el("span", {className: "size muted"}, `${num(sizeIn(block, options.unit))} ${unitShort(options.unit)}`)),
  lazy.text(block, node, options));
  blockInfo.set(section, {block, node, options});
  const text = blockText(block, node, options.unit) ?? "";
  if (block.kind === "given" && text.length > LONG_GIVEN) {
    section.classList.add("collapsed");
    section.querySelector(".gutter").append(el("button", {type: "button", className: "ghost fold",
      onclick: (event) => {
        const folded = section.classList.toggle("collapsed");
        event.currentTarget.textContent = folded ? "show all" : "collapse";
      }}, "show all"));
  }
  // Off-screen blocks skip layout (content-visibility); a fair guess of their height keeps
  // the scrollbar steady until they are drawn.
  const lines = section.classList.contains("collapsed") ? 6
    : text.split("\n").reduce((sum, line) => sum + 1 + Math.floor(line.length / 90), 0);
  section.style.containIntrinsicBlockSize = `auto ${Math.max(90, 10 + lines * 18)}px`;
  return section;
}
