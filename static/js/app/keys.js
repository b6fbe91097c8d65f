// Keyboard: j/k move through rows, Enter opens, Esc unpins (a token, block or message) or closes, [ ] step
// through rollouts in the drawer, 1–7 switch tabs, f finds in the rollout, n / N step through its notable
// tokens, m / M through the Chat tab's model turns,
// a / b pick the current rollout as A / B and c compares them, / focuses search, ? shows this list. Ignored while
// typing. The match list of the record text search walks with its own j / k and arrows while it has the focus
// (search.js).

import {el, replace} from "../draw/dom.js";

const KEYS = [
  ["j / k", "next / previous row"],
  ["Enter", "open the row (a group expands, a rollout opens)"],
  ["Esc", "unpin the pinned token, block or message, else close the drawer (or this help)"],
  ["[ / ]", "previous / next rollout in the drawer (across a page's or an open group's edge)"],
  ["1 – 7", "Path, Chat, Tree, Forks, Calls, Timeline, JSON"],
  ["f",
    "find in the rollout (Path, Chat, Tree, Forks; also Ctrl/⌘+F in the drawer); Enter / Shift+Enter: next / previous"
    + " hit"],
  ["n / N", "next / previous notable token (Path tab)"],
  ["m / M", "next / previous model turn (Chat tab)"],
  ["a / b", "pick the current rollout (row, or the one open) as A / B to compare"],
  ["c", "compare A and B side by side, once both are picked"],
  ["/", "search ids, meta and annotations"],
  ["j / k  ↓ / ↑", "in the match list of a record text search: next / previous match (the table keeps its j / k)"],
  ["Enter", "in the match list: open the match in the Path tab"],
  ["?", "show these keys"],
];

/** Keys go to a box being typed in (a checkbox is no such box: Esc still closes there). */
function typing(target) {
  if (!(target instanceof HTMLElement)) return false;
  if (target.tagName === "INPUT") return !["checkbox", "radio", "button"].includes(target.type);
  return target.isContentEditable || ["SELECT", "TEXTAREA"].includes(target.tagName);
}

export function setupKeys({main, help, helpButton, drawer, open, close, pick, compare, search}) {
  const card = el("div", {className: "help-card", tabindex: "-1"},
    el("h2", {}, "Keys"),
    el("dl", {}, KEYS.flatMap(([key, what]) => [el("dt", {}, el("kbd", {}, key)), el("dd", {}, what)])),
    el("p", {className: "muted small"}, "Keys are ignored while you type in a box. Esc closes this."));
  replace(help, card);
  help.setAttribute("aria-modal", "true");
  let returnTo = null;  // what had the focus before the help took it
  const showHelp = () => {
    returnTo = document.activeElement;
    help.hidden = false;
    card.focus();
  };
  const hideHelp = () => {
    help.hidden = true;
    if (returnTo?.isConnected && returnTo !== document.body) returnTo.focus();
    returnTo = null;
  };
  const toggleHelp = () => (help.hidden ? showHelp() : hideHelp());
  help.addEventListener("click", hideHelp);
  helpButton.addEventListener("click", toggleHelp);

  const rows = () => [...main.querySelectorAll("tr.nav")];
  const move = (step) => {
    const all = rows();
    if (!all.length) return;
    const current = all.findIndex((row) => row.classList.contains("current"));
    const next = current < 0 ? (step > 0 ? 0 : all.length - 1) : Math.max(0, Math.min(all.length - 1, current + step));
    all[current]?.classList.remove("current");
    all[next].classList.add("current");
    for (const row of all) row.tabIndex = row === all[next] ? 0 : -1;  // a roving tabindex: Tab lands on it
    all[next].focus({preventScroll: true});
    all[next].scrollIntoView({block: "nearest"});
  };
  const trajIds = () => rows().filter((row) => row.dataset.traj).map((row) => row.dataset.traj);
  /** What to click to go past the edge of the rollouts shown: the next (previous) group not open, in the
   *  groups view, else the next (previous) page. */
  const beyondEdge = (step) => {
    const here = main.querySelector(`tr.nav[data-traj="${CSS.escape(drawer.state?.traj ?? "")}"]`);
    const groups = [...main.querySelectorAll("tr.group-row")];
    if (here && groups.length) {
      const after = groups.filter((group) => here.compareDocumentPosition(group) & Node.DOCUMENT_POSITION_FOLLOWING);
      const before = groups.filter((group) => here.compareDocumentPosition(group) & Node.DOCUMENT_POSITION_PRECEDING);
      const closed = (step > 0 ? after : before.slice(0, -1).reverse()).find((g) => !g.classList.contains("expanded"));
      if (closed) return closed;
    }
    const pager = main.querySelector(`.pager button[data-page="${step > 0 ? "next" : "prev"}"]`);
    return pager && !pager.disabled ? pager : null;
  };
  /** `]` / `[`: the next (previous) rollout, across a page's or an open group's edge: the next group is
   *  opened (the next page shown) and its first (the previous one's last) rollout opened. */
  const neighbour = (step) => {
    const ids = trajIds();
    const at = ids.indexOf(drawer.state?.traj);
    if (at < 0) return;
    if (ids[at + step] !== undefined) {
      open(ids[at + step]);
      return;
    }
    const edge = beyondEdge(step);
    if (!edge) return;
    const known = new Set(ids);
    const arrived = new MutationObserver(() => {
      const fresh = trajIds().filter((id) => !known.has(id));
      if (!fresh.length) return;
      arrived.disconnect();
      open(step > 0 ? fresh[0] : fresh[fresh.length - 1]);
    });
    arrived.observe(main, {childList: true, subtree: true});
    setTimeout(() => arrived.disconnect(), 30000);  // nothing came (an empty group, an error): stay put
    edge.click();
  };

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    const key = event.key;
    if (key === "Escape") {
      if (!help.hidden) hideHelp();
      else if (drawer.isOpen && !drawer.unpin()) close();
    } else if (key === "?") {
      toggleHelp();
    } else if (key === "j" || key === "k") {
      move(key === "j" ? 1 : -1);
    } else if (key === "Enter") {
      const row = main.querySelector("tr.nav.current");
      if (!row || event.target.closest?.("button, a, [role=treeitem]")) return;  // their own Enter
      row.click();
    } else if (key === "[" || key === "]") {
      if (drawer.isOpen) neighbour(key === "]" ? 1 : -1);
    } else if (key === "f") {
      drawer.openFind();
    } else if (key === "n" || key === "N") {
      drawer.stepNotable(key === "n" ? 1 : -1);
    } else if (key === "a" || key === "b") {
      const row = main.querySelector("tr.nav.current[data-traj]");  // an unreadable record is picked by nothing
      const id = row ? (row.classList.contains("unreadable") ? null : row.dataset.traj)
        : (drawer.isOpen && !drawer.bundle?.trajectory?.unreadable ? drawer.state.traj : null);
      if (id) pick(key, id);
    } else if (key === "c") {
      compare();
    } else if (key === "m" || key === "M") {
      drawer.stepTurn(key === "m" ? 1 : -1);
    } else if (/^[1-7]$/.test(key)) {
      drawer.selectTab(Number(key) - 1);
    } else if (key === "/") {
      search()?.focus();
    } else {
      return;
    }
    event.preventDefault();
  });
}
