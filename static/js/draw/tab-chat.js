// The Chat tab: the selected path read as a conversation, one card per message (the server's
// /paths/{n}/chat answer, in parts). A card says who wrote it and its node id (a link to that node in
// the Path tab), and beside a model turn what its calls and the trainer made of it. The model's
// reasoning is folded under one line, tool calls are their name and arguments, each linked to its
// result as the server pairs them (`pairs`: in path order, ids repeat), long texts are folded past a
// few lines, and the messages a fork shares with an earlier path are folded into one row. Record text
// goes in as text (no Markdown, no HTML), direction controls as marks (facts.js `visible`), the other
// invisible characters too under "control chars". A card's body is drawn when it comes near the
// viewport; a part that comes later is drawn after the cards already drawn (parts.js `drawLaterPart`),
// not with them again. A pure function of the answer: the drawer and a snapshot file draw the same tab.

import {append, button, el, replace} from "./dom.js";
import {visible} from "./facts.js";
import {cutText, num, plural} from "./format.js";
import {drawsLaterParts, moreRow} from "./parts.js";
import {optionToggle} from "./path-view.js";
import {copyBadge} from "./retok-badge.js";
import {flagInfo, kindWhy} from "./viewer.js";

const FOLD_LINES = 12;  // a text longer than this many lines (or FOLD_CHARS) is folded, with "show all"
const FOLD_CHARS = 1500;
const THINK = /^\s*<think>([\s\S]*?)(?:<\/think>|$)/;  // a reply's reasoning, when the template keeps it in the text

/** The texts of a message as the card shows them, in order: [{kind, label, text, ...}]; `media`, the
 *  node's media items (the server's, as the Path tab labels them). */
function messagePieces(message, media = []) {
  if (typeof message === "string") return [{kind: "text", label: "text", text: message}];
  if (!message || typeof message !== "object") return [];
  const pieces = [];
  const reasoning = [message.reasoning_content, message.reasoning].find((value) => typeof value === "string");
  if (reasoning) pieces.push({kind: "reasoning", label: "reasoning", text: reasoning});
  for (const text of contentTexts(message.content, media)) {
    const think = text.match(THINK);
    if (think) {
      pieces.push({kind: "reasoning", label: "reasoning (<think> in the text)", text: think[1]});
      const rest = text.slice(think[0].length);
      if (rest.trim()) pieces.push({kind: "text", label: "text", text: rest});
    } else {
      pieces.push({kind: "text", label: "text", text});
    }
  }
  toolCalls(message).forEach((call, index) => pieces.push(callPiece(call, index)));
  return pieces;
}

/** A message's tool calls as the record has them, unparsed ([] when it has none, or no list). */
function toolCalls(message) {
  return Array.isArray(message?.tool_calls) ? message.tool_calls : [];
}

/** A message's `content` as texts: a string, or a list of parts (a part that is not text is named: an
 *  image by its media item's label, the n-th image part by the n-th item, as the Path tab labels it). */
function contentTexts(content, media) {
  if (typeof content === "string") return content ? [content] : [];
  if (!Array.isArray(content)) return content === null || content === undefined ? [] : [JSON.stringify(content)];
  let images = 0;
  return content.map((part) => {
    if (typeof part === "string") return part;
    if (typeof part?.text === "string") return part.text;
    const type = String(part?.type ?? "part");
    const item = /image/.test(type) ? media[images++] : undefined;
    return item ? `[${item.label}]` : `[${type}]`;
  });
}

/** Tool call `index` of a message: its name, its id, its arguments pretty-printed when they parse as JSON (said). */
function callPiece(call, index) {
  const fn = call?.function && typeof call.function === "object" ? call.function : call || {};
  const raw = fn.arguments ?? call?.arguments;
  let text = typeof raw === "string" ? raw : JSON.stringify(raw ?? null, null, 2);
  let form = typeof raw === "string" ? "text: not JSON" : "JSON, pretty-printed";
  if (typeof raw === "string") {
    try {
      text = JSON.stringify(JSON.parse(raw), null, 2);
      form = "JSON, pretty-printed";
    } catch { /* shown as the text it is */ }
  }
  return {kind: "call", label: `arguments (${form})`, text, name: String(fn.name ?? call?.name ?? "?"),
    id: typeof call?.id === "string" ? call.id : null, index};
}

/** Every searchable text of the path's loaded cards, in the order drawn: the find bar's sources. */
export function chatTexts(answer) {
  return (answer?.cards || []).flatMap((card) => messagePieces(card.message, card.media)
    .map((piece, at) => ({card, at, text: piece.text})));
}

/** The path's cards as far as its parts have come. `context`: go(patch) changes the state; more()
 *  fetches the next part; message(card) fetches a message a part left out (null: a file that fetches
 *  nothing); root, the scrolling box the tab sits in (null: the window), where "near" is measured;
 *  pinned(), the message pinned now (a pin is marked on the drawn tab, not drawn again). */
export function renderChat(answer, state, {go, more = null, message = null, root = null, pinned = () => state.msg}) {
  if (!answer) return el("p", {className: "muted pad"}, "loading…");
  if (answer.error) return el("p", {className: "notice error"}, `Cannot read the conversation: ${answer.error}`);
  const links = {...pairLinks(answer.pairs), go, pinned, controls: Boolean(state.controls)};
  const box = el("div", {className: "chat-tab", dataset: {path: answer.path}});
  if (answer.path_count > 1) box.append(pathPicker(answer, go));
  box.append(el("p", {className: "muted chat-summary"},
    `${plural(answer.node_count, "message")} on path ${answer.path}`
    + ` · ${answer.unit === "tokens" ? "tokens" : "characters"}`
    + ` as the record has them${more ? " · m / M: next / previous model turn" : ""}`,
    optionToggle(state, go, "controls", "control chars",
      "show line breaks, tabs, zero-width characters and other controls (direction controls are always shown)")));
  if (answer.tools) {
    box.append(fold("tools", `tools the last call was sent with: ${visible(toolNames(answer.tools), false)}`,
      JSON.stringify(answer.tools, null, 2), links.controls));
  }
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      drawBody(entry.target);
    }
  }, {root, rootMargin: "1200px 0px"});
  const shared = answer.fork ? answer.fork.shared_nodes : 0;  // the first cards, the same as the earlier path's
  const sharedCards = el("div", {className: "chat-cards"});
  if (shared) {
    box.append(el("details", {className: "chat-shared"},
      el("summary", {}, `same as path ${answer.fork.path} up to ${answer.fork.last_shared} `
        + `(${plural(answer.fork.shared_nodes, "message")}): show`), sharedCards));
    box.append(el("p", {className: "notice info chat-fork"},
      `This path leaves path ${answer.fork.path} after ${answer.fork.last_shared}.`));
  }
  const ownCards = el("div", {className: "chat-cards"});
  const tail = el("div", {className: "chat-tail"});
  box.append(ownCards, tail);
  let drawn = 0;
  const grow = (now) => {  // draw the cards from `drawn` on, and what says how many are held
    if (now !== answer) return false;
    const fresh = (answer.cards || []).slice(drawn);
    fresh.forEach((card, at) => {
      const element = cardElement(card, answer, state, links, message);
      observer.observe(element);
      (drawn + at < shared ? sharedCards : ownCards).append(element);
    });
    drawn += fresh.length;
    replace(tail, more ? moreRow(answer.part, "messages", more)
      : answer.part?.to < answer.part?.total
        ? el("p", {className: "notice"}, `${num(answer.part.to)} of ${num(answer.part.total)} messages held.`) : null);
    return true;
  };
  grow(answer);
  drawsLaterParts(box, grow);
  return box;
}

/** The path to read, of the record's paths (the Path tab's picker picks the same one). */
function pathPicker(answer, go) {
  const options = Array.from({length: answer.path_count}, (_, i) => el("option",
    {value: i, selected: i === answer.path}, `path ${i}`));
  return el("label", {className: "chat-path"}, "path ",
    el("select", {"aria-label": "path", onchange: (event) => go({path: Number(event.target.value)}, {replace: true})},
      options), ` of ${num(answer.path_count)}`);
}

/** The server's pairing of the path's calls and results (`pairs`), looked up by card: a result card's
 *  pair (by its node), a call's pairs (by its node and its index among the message's calls). */
function pairLinks(pairs) {
  const resultPairs = new Map();
  const callPairs = new Map();
  for (const pair of pairs || []) {
    if (pair.result_node_id !== null) resultPairs.set(pair.result_node_id, pair);
    if (pair.call_node_id === null) continue;
    const key = `${pair.call_node_id}:${pair.call_index}`;
    callPairs.set(key, [...callPairs.get(key) || [], pair]);
  }
  return {resultOf: (card) => resultPairs.get(card.node_id), resultsOf: (card, piece) =>
    callPairs.get(`${card.node_id}:${piece.index}`) || []};
}

function toolNames(tools) {
  if (!Array.isArray(tools)) return "(not a list)";
  return tools.map((tool) => String(tool?.function?.name ?? tool?.name ?? "?")).join(", ");
}

const CARD = new WeakMap();  // a card element -> what draws its body

function cardElement(card, answer, state, links, message) {
  const model = card.author === "model";
  const element = el("article", {className: `chat-card ${model ? "by-model" : "by-client"}`
    + `${card.role === "system" ? " system" : ""}${card.position === state.msg ? " pinned" : ""}`,
  dataset: {node: card.node_id, position: card.position, role: card.role ?? "", author: card.author}});
  const head = el("header", {className: "chat-head"},
    el("span", {className: "chat-role"}, card.role === null || card.role === undefined ? "(no role)"
      : visible(String(card.role), false)),
    el("span", {className: "muted small"}, model ? "model" : "client"),
    card.copy ? copyMark(card, links.go) : null,
    card.unbridged ? unbridgedMark(card.unbridged) : null,
    button(card.node_id, () => links.go({tab: "path", node: card.node_id}),
      {className: "ghost node-link", title: `open ${card.node_id} in the Path tab`, dataset: {link: "node"}}),
    el("span", {className: "muted small"}, `${num(card.size)} ${answer.unit === "tokens" ? "tokens" : "chars"}`),
    el("span", {className: "grow"}),
    button("pin", () => links.go({msg: card.position === links.pinned() ? "" : card.position}, {replace: true}),
      {className: "ghost pin-msg", title: "pin this message (again: unpin it): its place goes in the URL (msg)"}));
  append(element, [head, el("div", {className: "chat-body"}), model ? facts(card, answer) : null,
    card.failures ? failures(card) : null]);
  CARD.set(element, () => drawPieces(element.querySelector(".chat-body"), card, links, message));
  return element;
}

/** Draw a card's body now (once): when it comes near, or when a find, a link or a key wants it. */
export function drawBody(element) {
  const draw = CARD.get(element);
  if (!draw) return;
  CARD.delete(element);
  draw();
}

function drawPieces(body, card, links, message) {
  const cut = cutText(card.message, message ? "load it to read it" : "not in this file");
  if (card.loadError) body.append(el("p", {className: "notice error"}, `Cannot load this message: ${card.loadError}`));
  if (cut) {
    append(body, [el("p", {className: "muted chat-cut"}, cut),
      message ? button("load it", () => message(card), {className: "ghost", dataset: {load: "message"}}) : null]);
    return;
  }
  const id = card.message?.tool_call_id;
  if (typeof id === "string") {
    const caller = links.resultOf(card)?.call_node_id;
    body.append(el("p", {className: "small chat-result-of"}, `result of tool call ${visible(id, false)}`,
      caller ? [" · ", jump(`← the call in ${caller}`, caller)] : " · no call with this id before it on this path"));
  }
  const pieces = messagePieces(card.message, card.media);
  if (!pieces.length) body.append(el("p", {className: "muted"}, "(no text)"));
  pieces.forEach((piece, at) => body.append(pieceElement(piece, at, card, links)));
  if (card.not_in_tokens?.length) body.append(tokensNote(card, links.controls));
}

/** What the Path tab and the Tree call an assistant message the client wrote: a re-tokenized copy (its
 *  badge opens its tokens beside the model's), an edited reply, or a replayed one. */
function copyMark(card, go) {
  if (card.copy.kind === "re-tokenized") return copyBadge(card.node_id, card.copy.of, go);
  const title = card.copy.kind === "edited" ? visible(String(card.copy.detail ?? ""), false) : kindWhy("replayed");
  return el("span", {className: "badge level-warn chat-copy", title, dataset: {copy: card.copy.kind}}, card.copy.kind);
}

/** A model turn whose call re-rendered its prompt from messages (or, in an old record, is inferred to). */
function unbridgedMark(how) {
  const flag = how === "inferred" ? "unbridged-inferred" : "unbridged";
  return el("span", {className: `badge level-${flagInfo(flag).level}`, title: flagInfo(flag).why,
    dataset: {flag}}, how === "inferred" ? "unbridged (inferred)" : "unbridged");
}

/** Where the card's tokens do not hold its message's texts (the template dropped the reasoning, a prompt
 *  re-rendered): said, with the tokens' text, which is what the trainer saw. */
function tokensNote(card, controls) {
  const lacking = card.not_in_tokens.join(" and ");
  return el("div", {className: "chat-tokens-differ"},
    el("p", {className: "notice warn"}, `Its tokens do not hold its ${lacking}: the trainer saw the tokens' text,`
      + " not the message above."),
    fold("tokens", `the tokens' text (what the trainer saw) · ${num(card.token_text.length)} chars`,
      card.token_text, controls));
}

function pieceElement(piece, at, card, links) {
  const lines = piece.text.split("\n").length;
  const size = `${num(piece.text.length)} chars${lines > 1 ? `, ${num(lines)} lines` : ""}`;
  if (piece.kind === "reasoning") return fold("reasoning", `${piece.label} · ${size}`, piece.text, links.controls, at);
  const text = el("pre", {className: "chat-text", dataset: {piece: at}}, visible(piece.text, links.controls));
  const long = lines > FOLD_LINES || piece.text.length > FOLD_CHARS;
  const folded = long && (piece.kind !== "text" || card.author !== "model");
  if (folded) text.classList.add("folded");
  const show = folded ? button(`show all (${size})`, (event) => {
    text.classList.remove("folded");
    event.currentTarget.remove();
  }, {className: "ghost show-all"}) : null;
  if (piece.kind !== "call") return el("div", {className: `chat-piece ${piece.kind}`}, text, show);
  const results = links.resultsOf(card, piece).map((pair) => pair.result_node_id).filter((node) => node !== null);
  return el("div", {className: "chat-piece call", dataset: {call: piece.id ?? ""}},
    el("p", {className: "chat-call-head"}, el("strong", {}, visible(piece.name, false)),
      el("span", {className: "muted small"},
        ` ${piece.id === null ? "(no id)" : visible(piece.id, false)} · ${piece.label}`),
      results.length ? results.map((node) => [" · ", jump(`result in ${node} →`, node)])
        : el("span", {className: "muted small"}, " · no result on this path")),
    text, show);
}

/** A folded text: one line saying what it is and how long, the text below once opened. */
function fold(kind, summary, text, controls, at = null) {
  return el("details", {className: `chat-fold ${kind}`}, el("summary", {}, summary),
    el("pre", {className: "chat-text", dataset: at === null ? {} : {piece: at}}, visible(text, controls)));
}

/** A link to the card of node `nodeId` (a call's or a result's): brings it into sight and marks it (a card
 *  of a part still to come: nothing yet). */
function jump(label, nodeId) {
  return button(label, (event) => {
    const target = event.currentTarget.closest(".chat-tab")
      ?.querySelector(`.chat-card[data-node="${CSS.escape(nodeId)}"]`);
    if (!target) return;
    const shared = target.closest("details.chat-shared");
    if (shared) shared.open = true;
    drawBody(target);
    target.scrollIntoView({block: "center"});
    target.classList.add("node-selected");
  }, {className: "ghost chat-jump", dataset: {jump: nodeId}});
}

/** A model turn's facts, in the margin: what the record says of its calls and training, and the one
 *  figure the viewer derives (the lowest logprob of its sampled tokens), said as derived. */
function facts(card, answer) {
  const call = card.calls?.[card.calls.length - 1] || {};
  const trained = card.trained ? "trained on this path"
    : card.trained_in !== null && card.trained_in !== undefined ? `trained in path ${card.trained_in}`
      : "not trained (in no loss)";
  const items = [
    card.sampled === null || card.sampled === undefined ? null : `${num(card.sampled)} tokens sampled`,
    el("span", {className: card.trained ? "" : "muted", dataset: {fact: "trained"}}, trained),
    card.in_samples === false ? el("span", {className: "badge level-warn"}, "path not in the samples") : null,
    el("span", {className: call.finish_reason === "length" ? "badge level-warn" : "",
      dataset: {fact: "finish"}}, call.finish_reason === "length" ? "cut at max tokens (finish: length)"
      : `finish: ${call.finish_reason ?? "-"}`),
    card.lowest_logprob === null || card.lowest_logprob === undefined ? null
      : el("span", {dataset: {fact: "lowest-logprob"}, title: "the lowest of its sampled tokens' logprobs, derived"},
        `lowest logprob ${card.lowest_logprob.toFixed(4)} (derived)`),
    call.duration_ms === null || call.duration_ms === undefined ? null : `${num(Math.round(call.duration_ms))} ms`,
    (card.calls?.length || 0) > 1 ? `${num(card.calls.length)} calls` : null,
    answer.unit === "chars" ? `${num(card.size)} chars` : null,
  ].filter(Boolean);
  return el("aside", {className: "chat-facts small"}, items.map((item) => el("span", {className: "chat-fact"}, item)));
}

function failures(card) {
  return el("p", {className: "chat-failures"}, card.failures.map((failure) => [el("span",
    {className: "badge level-error", title: visible(String(failure.error ?? ""), false)},
    `${failure.placed === "by time" ? "a call failed after this message (placed by time)" : "a call from here failed"}`
    + ` ${failure.status ?? "-"}: ${visible(String(failure.error ?? "").slice(0, 160), false)}`),
  failure.later?.length ? el("span", {className: "muted small chat-failure-later"}, ` the record does not say what`
    + ` it was sent (no input_leaf): its request may also have carried ${failure.later.join(", ")}, recorded after`
    + " this message") : null]));
}
