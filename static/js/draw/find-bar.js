// Find in a rollout: a bar over the tabs tab-list.js says it finds in (Path, Chat, Tree, Forks) that
// searches the loaded data (every block's or node's whole text, not just what is drawn), counts the hits ("3 of 17"),
// and on each step draws, unfolds and opens whatever holds the current hit, marks it with a
// CSS highlight and scrolls to it. Case-insensitive; Enter / Shift+Enter step, Esc closes.

import {button, el} from "./dom.js";
import {shownLength} from "./facts.js";
import {num} from "./format.js";
import {forkPair} from "./tab-forks.js";
import {nodeText} from "./tab-tree.js";
import {chatTexts, drawBody} from "./tab-chat.js";
import {FIND_TABS} from "./tab-list.js";
import {sectionText, textRange, unfold} from "./tokens.js";

const MOST_HITS = 10000;  // counted past this as "10,000+": a one-letter query in a 64k-token rollout
const HIGHLIGHT = "find-hit";

function pattern(query) {
  return new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
}

/** What the open tab holds that a find has not seen: the parts not loaded yet, said plainly. */
function loadedNote(bundle, state) {
  const index = Math.min(state.path, (bundle.paths?.paths || []).length - 1);
  const part = state.tab === "tree" ? bundle.graph?.part
    : state.tab === "path" ? bundle.paths?.paths?.[index]?.part
      : state.tab === "chat" ? bundle.chat?.get(index)?.part : null;
  const notes = [];
  if (part?.next !== undefined) {
    notes.push(`in the ${num(part.to)} of ${num(part.total)} ${state.tab === "chat" ? "messages" : "nodes"} loaded`);
  }
  const pair = state.tab === "forks" ? forkPair(bundle.paths, state) : null;
  const fork = pair ? bundle.forks?.get(pair.key) : null;
  if (fork && (fork.a_part?.next !== undefined || fork.b_part?.next !== undefined)) {
    notes.push("in the blocks after the fork this answer holds (the rest is in the Path tab)");
  }
  if (state.tab === "path" && !state.given) notes.push("given blocks hidden, not searched");
  return notes.join("; ");
}

export class FindBar {
  /** `openTreeNode(id)` opens a node of the Tree tab and draws the drawer again. Ctrl/Cmd+F with
   *  the focus in `root` (the drawer) opens the bar instead of the browser's find, which sees only
   *  what is drawn. */
  constructor(root, {openTreeNode}) {
    root.addEventListener("keydown", (event) => {
      if (!(event.ctrlKey || event.metaKey) || event.altKey || event.key.toLowerCase() !== "f") return;
      if (!this.state || !FIND_TABS.has(this.state.tab)) return;
      event.preventDefault();
      this.open();
    });
    this.openTreeNode = openTreeNode;
    this.isOpen = false;
    this.query = "";
    this.hits = [];
    this.at = -1;
    this.input = el("input", {type: "search", id: "find-input", placeholder: "find in this rollout",
      "aria-label": "find in this rollout", autocomplete: "off",
      oninput: () => { this.query = this.input.value; this.search(true); },
      onkeydown: (event) => this.key(event)});
    this.count = el("span", {className: "find-count", "aria-live": "polite"});
    this.element = el("div", {className: "find-bar", role: "search"},
      this.input, this.count,
      button("↑", () => this.step(-1),
        {className: "ghost", title: "previous hit (Shift+Enter)", dataset: {find: "previous"}}),
      button("↓", () => this.step(1), {className: "ghost", title: "next hit (Enter)", dataset: {find: "next"}}),
      button("×", () => this.close(), {className: "ghost", title: "close (Esc)", dataset: {find: "close"}}));
  }

  /** The bar to draw above the tab, or null (closed, or a tab it does not search). */
  bar(tab) {
    return this.isOpen && FIND_TABS.has(tab) ? this.element : null;
  }

  /** After the drawer drew `content`: search again (parts may have come) and mark the hit again. */
  drawn(content, bundle, state) {
    this.content = content;
    this.bundle = bundle;
    this.state = state;
    if (this.isOpen && FIND_TABS.has(state.tab)) this.search(false);
  }

  open() {
    if (!this.state || !FIND_TABS.has(this.state.tab)) return;
    if (!this.isOpen) {
      this.isOpen = true;
      this.content.before(this.element);
    }
    this.input.focus();
    this.input.select();
    if (this.query) this.search(false);
  }

  close() {
    this.isOpen = false;
    this.element.remove();
    CSS.highlights?.delete(HIGHLIGHT);
    this.content?.focus({preventScroll: true});
  }

  key(event) {
    if (event.key === "Enter") this.step(event.shiftKey ? -1 : 1);
    else if (event.key === "Escape") this.close();
    else return;
    event.preventDefault();
    event.stopPropagation();  // the page's keys (Esc closes the drawer) are not for this box
  }

  /** The searchable texts of the open tab, in the order they are drawn: {text, show(from, to, reveal)
   *  -> Range}; `reveal` opens a closed tree node (a step does; a redraw does not undo a close). */
  sources() {
    if (this.state.tab === "tree") {
      return [...this.content.querySelectorAll(".tree-row")].map((row) => {
        const id = row.dataset.node;
        const text = nodeText(this.bundle, id);
        return {text, show: (from, to, reveal) => this.treeRange(id, shownLength(text, from, false),
          shownLength(text, to, false), reveal)};
      });
    }
    if (this.state.tab === "chat") {
      const answer = this.bundle.chat?.get(Math.min(this.state.path, (this.bundle.paths.paths || []).length - 1));
      return chatTexts(answer).map(({card, at, text}) => ({text,
        show: (from, to) => this.chatRange(card, at, shownLength(text, from, this.state.controls),
          shownLength(text, to, this.state.controls))}));
    }
    return [...this.content.querySelectorAll("section.block")].map((section) => ({
      text: sectionText(section) ?? "",
      show: (from, to) => {
        unfold(section);
        return textRange(section, from, to);
      },
    }));
  }

  /** The range of a hit in a Chat card's text: the card drawn, its fold and "show all" opened. */
  chatRange(card, at, from, to) {
    const element = this.content.querySelector(`.chat-card[data-position="${card.position}"]`);
    if (!element) return null;
    const shared = element.closest("details.chat-shared");
    if (shared) shared.open = true;
    drawBody(element);
    const pre = element.querySelector(`pre[data-piece="${at}"]`);
    const text = pre?.firstChild;
    if (!text) return null;
    const fold = pre.closest("details");
    if (fold) fold.open = true;
    pre.classList.remove("folded");
    pre.parentElement.querySelector(".show-all")?.remove();
    const range = document.createRange();
    range.setStart(text, Math.min(from, text.length));
    range.setEnd(text, Math.min(to, text.length));
    return range;
  }

  treeRange(id, from, to, reveal) {
    const selector = `.tree-row[data-node="${CSS.escape(id)}"] + .tree-panel pre.text`;
    if (reveal && !this.content.querySelector(selector)) this.openTreeNode(id);  // draws again: `drawn` sets content
    const text = this.content.querySelector(selector)?.firstChild;
    if (!text) return null;
    const range = document.createRange();
    range.setStart(text, Math.min(from, text.length));
    range.setEnd(text, Math.min(to, text.length));
    return range;
  }

  /** Find every hit; `fresh` (the query changed) goes to the first, else the current one stays. */
  search(fresh) {
    const hits = [];
    if (this.query) {
      const find = pattern(this.query);
      this.sources().forEach((source, index) => {
        for (const match of source.text.matchAll(find)) {
          if (hits.length >= MOST_HITS) return;
          hits.push({index, from: match.index, to: match.index + match[0].length});
        }
      });
    }
    this.hits = hits;
    this.at = hits.length ? (fresh ? 0 : Math.min(Math.max(this.at, 0), hits.length - 1)) : -1;
    if (this.at >= 0) this.mark(fresh);  // a redraw marks the hit where it is, opening nothing
    else CSS.highlights?.delete(HIGHLIGHT);
    this.say();
  }

  step(by) {
    if (!this.hits.length) return;
    this.at = (this.at + by + this.hits.length) % this.hits.length;
    this.mark(true);
    this.say();
  }

  /** Draw and unfold what holds the current hit and highlight it; with `reveal`, open its tree node
   *  and scroll to it. */
  mark(reveal) {
    const hit = this.hits[this.at];
    const range = this.sources()[hit.index]?.show(hit.from, hit.to, reveal);
    if (!range) {
      CSS.highlights?.delete(HIGHLIGHT);
      return;
    }
    CSS.highlights?.set(HIGHLIGHT, new Highlight(range));
    const holder = range.startContainer.nodeType === Node.ELEMENT_NODE
      ? range.startContainer.childNodes[range.startOffset] ?? range.startContainer : range.startContainer.parentElement;
    if (reveal) holder?.scrollIntoView?.({block: "center"});
  }

  say() {
    const total = this.hits.length >= MOST_HITS ? `${num(MOST_HITS)}+` : num(this.hits.length);
    const where = loadedNote(this.bundle, this.state);
    this.count.textContent = !this.query ? "" : this.hits.length
      ? `${num(this.at + 1)} of ${total}${where ? ` (${where})` : ""}` : `no match${where ? ` (${where})` : ""}`;
  }
}
