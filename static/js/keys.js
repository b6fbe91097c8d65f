// Keyboard: j/k move through rows, Enter opens, Esc closes, [ ] step through rollouts in the
// drawer, 1–5 switch tabs, / focuses search, ? shows this list. Ignored while typing.

import {el, replace} from "./dom.js";

const KEYS = [
  ["j / k", "next / previous row"],
  ["Enter", "open the row (a group expands, a rollout opens)"],
  ["Esc", "close the drawer (or this help)"],
  ["[ / ]", "previous / next rollout in the drawer"],
  ["1 – 5", "Path, Tree, Forks, Calls, JSON"],
  ["/", "search"],
  ["?", "show these keys"],
];

function typing(target) {
  return target instanceof HTMLElement
    && (target.isContentEditable || ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName));
}

export function setupKeys({main, help, helpButton, drawer, open, close, search}) {
  replace(help, el("div", {className: "help-card"},
    el("h2", {}, "Keys"),
    el("dl", {}, KEYS.flatMap(([key, what]) => [el("dt", {}, el("kbd", {}, key)), el("dd", {}, what)])),
    el("p", {className: "muted small"}, "Keys are ignored while you type in a box. Esc closes this.")));
  help.addEventListener("click", () => { help.hidden = true; });
  helpButton.addEventListener("click", () => { help.hidden = !help.hidden; });

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
      if (!help.hidden) help.hidden = true;
      else if (drawer.isOpen) close();
    } else if (key === "?") {
      help.hidden = !help.hidden;
    } else if (key === "j" || key === "k") {
      move(key === "j" ? 1 : -1);
    } else if (key === "Enter") {
      const row = main.querySelector("tr.nav.current");
      if (!row || event.target.closest?.("button, a, [role=treeitem]")) return;  // their own Enter
      row.click();
    } else if (key === "[" || key === "]") {
      if (drawer.isOpen) neighbour(key === "]" ? 1 : -1);
    } else if (/^[1-5]$/.test(key)) {
      drawer.selectTab(Number(key) - 1);
    } else if (key === "/") {
      search()?.focus();
    } else {
      return;
    }
    event.preventDefault();
  });
}
