// A search match in the Path tab: where it is (which path, which blocks, which characters or
// tokens of its node) and marking it there. The server's offsets are code points into the text the
// hit says it matched (`/v1/search`'s `in`); the page's strings count UTF-16 units. A match `in`
// the tokens, or in the message text of a node shown without tokens, is in the very text the Path
// tab shows, so the offsets map directly. A match in the message text of a node shown as tokens
// (a search of `in=message`) is found in the token text by its snippet (the text around it),
// nearest to where it was; what cannot be found there is marked as its whole blocks.

import {el} from "./dom.js";
import {visible} from "./facts.js";
import {upgrade} from "./tokens.js";

const MAX_OCCURRENCES = 1000;  // of a snippet in one node's text: past it the nearest is good enough

/** The UTF-16 index `points` code points after `from` in `text`. */
function afterPoints(text, points, from = 0) {
  let at = from;
  for (let n = 0; n < points && at < text.length; n += 1) at += text.codePointAt(at) > 0xffff ? 2 : 1;
  return at;
}

/** Where `piece` occurs in `text` nearest to `near` (UTF-16), or -1. */
function nearest(text, piece, near) {
  let best = -1;
  for (let at = text.indexOf(piece), n = 0; at >= 0 && n < MAX_OCCURRENCES; at = text.indexOf(piece, at + 1), n += 1) {
    if (best < 0 || Math.abs(at - near) < Math.abs(best - near)) best = at;
  }
  return best;
}

/** [from, to) of the match in the node's shown text (UTF-16), or null when that text does not hold it. */
function textRange(node, hit, tokenMode) {
  const text = node.text;
  if (text === null || text === undefined || hit.in === "tool_call_ids") return null;  // an id: its whole blocks
  const points = hit.end - hit.start;
  if (!tokenMode || hit.in === "tokens") {
    const from = afterPoints(text, hit.start);
    return [from, afterPoints(text, points, from)];
  }
  const {before = "", match = "", after = ""} = hit.snippet || {};
  const near = afterPoints(text, hit.start);  // the template only adds text, so the match is at or after this
  for (const [piece, lead] of [[before + match + after, before.length], [before + match, before.length],
    [match + after, 0], [match, 0]]) {
    const at = piece ? nearest(text, piece, near - lead) : -1;
    if (at >= 0) return [at + lead, afterPoints(text, points, at + lead)];
  }
  return null;
}

/** The first token whose piece ends after `offset` (token_offsets ascend). */
function tokenAt(offsets, offset) {
  let low = 0;
  let high = offsets.length - 2;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (offsets[mid + 1] <= offset) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Where `hit` is in the rollout's paths: `{index, blocks, range}` (blocks of its node holding the
 *  match; range in the node's unit: tokens or characters), `{more: i}` when path i's next part may
 *  hold it, or null when no path holds its node. */
function locate(paths, hit, current) {
  const list = paths.paths || [];
  const holds = (path) => path.blocks.some((block) => block.node_id === hit.node_id);
  const index = holds(list[current]) ? current : list.findIndex(holds);
  if (index < 0) {
    const pending = [current, ...list.keys()].find((i) => list[i]?.part?.next !== undefined);
    return pending === undefined ? null : {more: pending};
  }
  const node = paths.nodes?.[hit.node_id] || {};
  const tokenMode = list[index].unit === "tokens" && Boolean(node.token_ids);
  const chars = textRange(node, hit, tokenMode);
  const range = chars && tokenMode && node.token_offsets
    ? [tokenAt(node.token_offsets, chars[0]), tokenAt(node.token_offsets, chars[1] - 1) + 1] : chars;
  const mine = list[index].blocks.filter((block) => block.node_id === hit.node_id);
  const holding = range ? mine.filter((block) => block.node_start < range[1] && block.node_end > range[0]) : [];
  return {index, range: holding.length ? range : null, blocks: holding.length ? holding : mine};
}

/** Mark `place` (from `locate`) in the drawn Path tab under `root`, unfolding its blocks; returns
 *  the first marked element, to scroll to, or null when its blocks are not drawn. */
function markHit(root, place, nodeId, node, controls) {
  let first = null;
  for (const block of place.blocks) {
    const section = root.querySelector(`.block[data-node="${CSS.escape(nodeId)}"][data-start="${block.start}"]`);
    if (!section) continue;
    if (section.classList.contains("collapsed")) section.querySelector("button.fold")?.click();
    if (!place.range) {
      section.classList.add("hit-block");
      first = first || section;
      continue;
    }
    const [from, to] = place.range;
    for (const chunk of section.querySelectorAll(".chunk[data-from]")) {
      const [start, end] = [Number(chunk.dataset.from), Number(chunk.dataset.to)];
      if (start >= to || end <= from) continue;
      upgrade(chunk);  // a token chunk not yet in sight gets its spans now (a text chunk stays as it is)
      first = first || (chunk.classList.contains("tokens")
        ? markTokens(chunk, from, to)
        : markText(chunk, node.text, from, to, controls));
    }
  }
  return first;
}

function markTokens(chunk, from, to) {
  const spans = [...chunk.querySelectorAll("span.t")]
    .filter((span) => Number(span.dataset.i) >= from && Number(span.dataset.i) < to);
  for (const span of spans) span.classList.add("hit");
  return spans[0] || null;
}

/** Redraw a plain-text chunk as its text before, the match (a <mark>), and after. */
function markText(chunk, text, from, to, controls) {
  const [start, end] = [Number(chunk.dataset.from), Number(chunk.dataset.to)];
  const low = Math.max(from, start);
  const high = Math.min(to, end);
  const mark = el("mark", {className: "hit"}, visible(text.slice(low, high), controls));
  chunk.replaceChildren(visible(text.slice(start, low), controls), mark, visible(text.slice(high, end), controls));
  return mark;
}

/** Mark the search match `hit` in the Path tab drawn in `content`: first move to the path holding its
 *  node, show the given blocks (`go`) or fetch the next part (`more(index)`) when that is what hides
 *  it; scroll to it the first time. Once placed, a path or option the reader picks is theirs: later
 *  draws only mark what is shown. */
export function placeHit(content, paths, hit, state, {go, more}) {
  const place = locate(paths, hit, Math.min(state.path, (paths.paths || []).length - 1));
  if (!place || (place.more !== undefined && hit.placed)) return;
  if (!hit.placed) {
    if (place.more !== undefined) {
      more(place.more);
      return;
    }
    const patch = {};
    if (place.index !== state.path) patch.path = place.index;
    if (!state.given && place.blocks.every((block) => block.kind === "given")) patch.given = true;
    if (Object.keys(patch).length) {
      go(patch, {replace: true});
      return;
    }
    hit.placed = true;
  }
  const target = markHit(content, place, hit.node_id, paths.nodes[hit.node_id], state.controls);
  if (!target || hit.shown) return;
  hit.shown = true;
  target.scrollIntoView({block: "center"});
  // again once the blocks above have their real height
  requestAnimationFrame(() => target.scrollIntoView({block: "center"}));
}
