// A node's media items (images) in the Path: each one's label on the node's first block, and its
// placeholder tokens marked as one group. The server says where they are (`media` of the /paths
// nodes, ranges already fitted to the node); modality, hash and label are record text.

import {el} from "./dom.js";
import {num} from "./facts.js";
import {markTokens} from "./tokens.js";

/** Mark the media items of `node` that lie in `section` (drawn by `blockElement` for `block`), and
 *  list them all in the gutter of the node's first block. `unit` is the path's. */
export function drawMedia(section, block, node, unit) {
  const items = node?.media ?? [];
  const byTokens = unit === "tokens" && Boolean(node?.token_ids);
  for (const item of byTokens ? items : []) {
    if (item.offset === null) continue;
    const from = Math.max(item.offset, block.node_start);
    const to = Math.min(item.offset + item.length, block.node_end);
    if (from >= to) continue;
    markTokens(section, from, to, "media");
    markTokens(section, from, from + 1, "media-first");
    markTokens(section, to - 1, to, "media-last");
  }
  if (!items.length || block.node_start !== 0) return;
  const more = (node.media_count ?? items.length) - items.length;  // past the ones a /paths node carries
  section.querySelector(".gutter").append(el("div", {className: "media-items"},
    items.map((item) => el("span", {className: `media-item${item.problem ? " bad" : ""}`,
      title: mediaTitle(item, block, byTokens)}, item.label)),
    more > 0 ? el("span", {className: "media-more muted small",
      title: "a node's first items come with its text; the rest are in /v1/trajectories/{id}/media?node="},
    `and ${num(more)} more, not drawn`) : null));
}

function mediaTitle(item, block, byTokens) {
  const where = item.offset === null ? "no token range"
    : byTokens ? `its placeholder tokens are [${block.start + item.offset}:`
      + `${block.start + item.offset + item.length}] of the path`
    : `its placeholder tokens are ${item.offset}–${item.offset + item.length} of the node (not shown: no tokens)`;
  return [where, item.problem ? `record problem: ${item.problem}` : null].filter(Boolean).join(" · ");
}
