// Keyboard: j/k move through rows, Enter opens, Esc unpins (a pinned token) or closes, [ ] step through rollouts in the
// drawer, 1–6 switch tabs, f finds in the rollout, n / N step through its notable tokens,
// a / b pick the current rollout as A / B and c compares them, / focuses search, ? shows this list. Ignored while typing. The match list of the record text
// search walks with its own j / k and arrows while it has the focus (search.js).

import {el, replace} from "./dom.js";

const KEYS = [
  ["j / k", "next / previous row"],
  ["Enter", "open the row (a group expands, a rollout opens)"],
  ["Esc", "unpin the pinned token, else close the drawer (or this help)"],
  ["[ / ]", "previous / next rollout in the drawer"],
  ["1 – 6", "Path, Tree, Forks, Calls, Timeline, JSON"],
  ["f", "find in the rollout (Path, Tree, Forks; also Ctrl/⌘+F in the drawer); Enter / Shift+Enter: next / previous hit"],
  ["n / N", "next / previous notable token (Path tab)"],
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
    all[next].scrollIntoView({block: "nearest"});
  };
  const neighbour = (step) => {
    const ids = rows().filter((row) => row.dataset.traj).map((row) => row.dataset.traj);
    const at = ids.indexOf(drawer.state?.traj);
    const next = ids[at + step];
    if (next !== undefined && at >= 0) open(next);
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
      const id = main.querySelector("tr.nav.current[data-traj]")?.dataset.traj ?? (drawer.isOpen ? drawer.state.traj : null);
      if (id) pick(key, id);
    } else if (key === "c") {
      compare();
    } else if (/^[1-6]$/.test(key)) {
      drawer.selectTab(Number(key) - 1);
    } else if (key === "/") {
      search()?.focus();
    } else {
      return;
    }
    event.preventDefault();
  });
}
