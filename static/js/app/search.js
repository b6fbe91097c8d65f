// The record text search on the run page: a box with its options (match case, regex, block kind,
// role), and the match list. The search and its options live in the URL (route.js); the server
// runs it inside the current filters (`/v1/search`) and answers in pages while it reads the run,
// so the list fills in as pages come, says how far the server has read, and can be stopped. The
// list is walked with j / k or the arrows while it has the focus, and Enter or a click opens the
// match in the drawer's Path tab (`onOpen`).

import {get} from "./api.js";
import {button, el, replace, select} from "../draw/dom.js";
import {num, plural} from "../draw/format.js";
import {applying} from "./run-filters.js";
import {searchParams} from "../draw/route.js";
import {visible} from "../draw/facts.js";

const PAGE = 200;  // matches asked per request; the server waits for them (or 2 s) before it answers
const LEAD = 24;  // code points of text shown before a match, so the match stays in a narrow row
const KINDS = [["", "any block"], ["sampled", "sampled"], ["given", "given"], ["replayed", "replayed"]];
const WITHIN = [["", "shown text"], ["message", "message text"]];
const SEARCHED = {  // said under the box: what the search reads, as the server's `in` does
  "": "Searches what the Path tab shows: a node's decoded tokens (chat template and the model's own tool-call "
    + "text included) where the record has them, else its message text.",
  message: "Searches the message text: content, reasoning, and tool calls as name(arguments), even where the "
    + "record has tokens."};
const ROLES = [["", "any role"], ["system", "system"], ["user", "user"], ["assistant", "assistant"], ["tool", "tool"]];

export class RecordSearch {
  constructor({go, onOpen}) {
    this.go = go;
    this.onOpen = onOpen;
    this.state = null;
    this.key = null;
    this.running = null;  // the search being polled: {params, cursor, stopped, told (the server was told to stop)}
    this.input = applying(el("input", {type: "search", id: "record-search", placeholder: "find in record text",
      "aria-label": "find in record text", autocomplete: "off",
      title: "search the text of the rollouts the filters keep; Enter searches"}),
    () => this.state.search, (search) => this.go({search}), 0);
    const option = (name, label, title) => el("label", {className: "option", title},
      el("input", {type: "checkbox", dataset: {option: name},
        onchange: (event) => this.go({[name]: event.target.checked})}),
      ` ${label}`);
    this.caseBox = option("scase", "Aa", "match case (otherwise any case)");
    this.regexBox = option("sre", ".*", "regular expression (Python syntax)");
    this.kindBox = select(KINDS, "", (skind) => this.go({skind}),
      {"aria-label": "block kind searched", dataset: {option: "skind"}});
    this.roleBox = select(ROLES, "", (srole) => this.go({srole}),
      {"aria-label": "role searched", dataset: {option: "srole"}});
    this.withinBox = select(WITHIN, "", (sin) => this.go({sin}),
      {"aria-label": "text searched", dataset: {option: "sin"}});
    this.searched = el("p", {className: "search-what muted small"});
    this.progress = el("span", {className: "search-progress muted small", "aria-live": "polite"});
    this.stopButton = button("stop", () => this.stop(), {className: "ghost", dataset: {option: "stop"}, hidden: true,
      title: "stop this search (the matches found so far stay)"});
    this.error = el("div");  // a failed search's reason (a bad regex: the server's 400 detail)
    this.list = el("ol", {className: "matches", role: "listbox", tabindex: "0", "aria-label": "matches", hidden: true,
      onkeydown: (event) => this.onKey(event)});
    this.node = el("div", {className: "record-search"},
      el("div", {className: "search-row"}, this.input, this.caseBox, this.regexBox, this.kindBox, this.roleBox,
        this.withinBox, this.progress, this.stopButton),
      this.searched, this.error, this.list);
  }

  /** Match the box and the list to `state`; a new search, new options or new filters search again. */
  show(state) {
    this.state = state;
    if (document.activeElement !== this.input) this.input.value = state.search;
    this.caseBox.querySelector("input").checked = state.scase;
    this.regexBox.querySelector("input").checked = state.sre;
    this.kindBox.value = state.skind;
    this.roleBox.value = state.srole;
    this.withinBox.value = state.sin;
    this.searched.textContent = SEARCHED[state.sin] || SEARCHED[""];
    const params = searchParams(state);
    const key = JSON.stringify(params);
    if (key === this.key) return;
    this.key = key;
    this.stop();
    this.hits = [];
    this.current = -1;
    this.list.replaceChildren();
    this.list.hidden = true;
    this.error.replaceChildren();
    this.progress.textContent = "";
    if (state.search) this.run(params);
  }

  /** Ask for pages until the server says done (or this search is stopped or replaced). */
  async run(params) {
    const running = {params, cursor: null, stopped: false, told: false};
    this.running = running;
    this.stopButton.hidden = false;
    this.progress.textContent = "searching…";
    let body = null;
    try {
      do {
        body = await get("/search", {...params, limit: PAGE, cursor: running.cursor});
        if (running.stopped) {  // stopped while this page was coming: tell the server now if not yet told
          if (!running.told && body.next_cursor) this.cancel(running, body.next_cursor);
          break;
        }
        running.cursor = body.next_cursor;
        this.add(body);
      } while (!body.done && running.cursor);
    } catch (error) {
      if (!running.stopped) {
        replace(this.error, el("p", {className: "notice error search-error"}, `Search failed: ${error.message}`));
        this.progress.textContent = "";
      }
    } finally {
      if (this.running === running) {
        this.running = null;
        this.stopButton.hidden = true;
      }
    }
  }

  /** Stop polling the running search; the server is told once its cursor is known. */
  stop() {
    const running = this.running;
    if (!running) return;
    running.stopped = true;
    this.running = null;
    this.stopButton.hidden = true;
    if (this.progress.textContent) this.progress.textContent += " · stopped";
    if (running.cursor) this.cancel(running, running.cursor);
  }

  /** Tell the server to stop reading for a search nobody will poll (it would give up after 30 s). */
  cancel(running, cursor) {
    running.told = true;
    get("/search", {...running.params, cursor, cancel: "true"}).catch(() => {});  // a search already gone is 410: fine
  }

  /** Append a page's matches and say how far the search has read. */
  add(body) {
    const first = this.hits.length;
    for (const hit of body.data) this.hits.push(hit);
    this.list.append(...body.data.map((hit, i) => this.item(hit, first + i)));
    this.list.hidden = !this.hits.length;
    const facts = [`searched ${num(body.scanned)} of ${plural(body.total_documents, "record")}`,
      plural(this.hits.length, "match", "matches")];
    if (body.skipped_count) facts.push(`${num(body.skipped_count)} skipped`);
    if (body.capped) facts.push("capped: the first matches only");
    if (body.cancelled) facts.push("stopped");
    if (body.error) facts.push(body.error);
    this.progress.textContent = facts.join(" · ") + (body.done ? "" : " …");
    this.progress.title = (body.skipped || []).map((s) => `${s.trajectory_id}: ${s.reason}`).join("\n");
  }

  item(hit, index) {
    const snippet = hit.snippet || {};
    const before = [...(snippet.before || "")];  // code points: never half an astral character
    const lead = before.length > LEAD ? `…${before.slice(-LEAD).join("")}` : before.join("");
    return el("li", {role: "option", id: `match-${index}`, className: "match", dataset: {match: index},
      "aria-selected": "false", onclick: () => this.open(index)},
    el("span", {className: "match-traj"}, hit.trajectory_id),
    el("span", {className: "match-node muted", title: hit.in === "tokens" ? "matched in the decoded tokens"
      : hit.in === "tool_call_ids" ? "matched in its tool-call ids" : "matched in the message text"},
    `${hit.node_id} · ${hit.role ?? "(no role)"} · ${hit.in}`),
    el("span", {className: "snippet"}, visible(lead, true), el("mark", {}, visible(snippet.match || "", true)),
      visible(snippet.after || "", true)));
  }

  /** Make match `index` the current one (the list's active descendant) and show it. */
  select(index) {
    const items = this.list.children;
    if (!items.length) return;
    const next = Math.max(0, Math.min(items.length - 1, index));
    items[this.current]?.classList.remove("current");
    items[this.current]?.setAttribute("aria-selected", "false");
    this.current = next;
    items[next].classList.add("current");
    items[next].setAttribute("aria-selected", "true");
    this.list.setAttribute("aria-activedescendant", items[next].id);
    items[next].scrollIntoView({block: "nearest"});
  }

  open(index) {
    this.select(index);
    this.onOpen(this.hits[index]);
  }

  /** The list's own keys, kept from the page's (j / k there walk the table's rows). */
  onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const step = {j: 1, ArrowDown: 1, k: -1, ArrowUp: -1}[event.key];
    if (step !== undefined) this.select(this.current < 0 ? 0 : this.current + step);
    else if (event.key === "Home" || event.key === "End") this.select(event.key === "Home" ? 0 : this.hits.length - 1);
    else if (event.key === "Enter" && this.current >= 0) this.open(this.current);
    else return;
    event.preventDefault();
    event.stopPropagation();
  }
}

