// "Copy as Markdown" on a Path-tab block: its kind, role, node and [start:end] range, then its text
// as recorded (the tokens' pieces joined, or the message text without tokens), control characters
// as they are, in a code fence longer than any run of backticks in it, to paste into a message.

import {copyText, el} from "./dom.js";
import {sectionText} from "./tokens.js";

/** A fence for `text`: three backticks, or one more than its longest run of them. */
function fence(text) {
  let longest = 0;
  for (const run of text.match(/`+/g) || []) longest = Math.max(longest, run.length);
  return "`".repeat(Math.max(3, longest + 1));
}

/** The block as Markdown: a header line and its text fenced. `text` null: no text was recorded
 *  (a token node without text): its token ids stand in. */
function blockMarkdown(block, node, text, {unit, path, traj}) {
  const role = block.role ?? "(no role)";
  const head = `**${block.kind}** · ${role} · ${block.author ?? "?"} ${block.node_id}`
    + ` · ${unit} [${block.start}:${block.end}] of path ${path} of ${traj}`;
  const body = text
    ?? `(no text recorded; token ids: ${(node?.token_ids ?? []).slice(block.node_start, block.node_end).join(" ")})`;
  const bar = fence(body);
  return `${head}\n\n${bar}\n${body}${body.endsWith("\n") ? "" : "\n"}${bar}\n`;
}

/** The block's "md" button: copies the block drawn in `section` as Markdown. */
export function markdownButton(section, block, node, where) {
  return el("button", {type: "button", className: "ghost copy-md",
    title: "copy this block as Markdown (its node, range and text)",
    onclick: (event) => copyText(blockMarkdown(block, node, sectionText(section), where), event.currentTarget)}, "md");
}
