// The row of tabs over a rollout, the drawer's and the snapshot's: a tablist whose active tab alone
// is in the Tab order (roving tabindex), ← → moving to the previous / next tab (wrapping), Home and
// End to the ends. It fetches nothing (the snapshot inlines it).

import {el} from "./dom.js";

/** The tablist of `names` (labelled by `labels`), `active` marked; `select(name)` on a click or a
 *  key. Each tab is `${prefix}-${name}` and controls the panel whose id is `panel`; `numbered`: its
 *  title names the number key that selects it. */
export function tabBar(names, active, labels, select, {prefix, panel, numbered = false}) {
  const onkeydown = (event) => {
    const at = names.indexOf(active);
    const next = {ArrowRight: (at + 1) % names.length, ArrowLeft: (at - 1 + names.length) % names.length,
      Home: 0, End: names.length - 1}[event.key];
    if (next === undefined) return;
    event.preventDefault();
    event.stopPropagation();
    select(names[next]);
  };
  return el("div", {className: "tabs", role: "tablist", "aria-label": "rollout views", onkeydown},
    names.map((name, i) => el("button", {
      type: "button", role: "tab", id: `${prefix}-${name}`, "aria-controls": panel,
      className: `tab${name === active ? " active" : ""}`, dataset: {tab: name}, tabindex: name === active ? "0" : "-1",
      "aria-selected": name === active ? "true" : "false", title: numbered ? `${labels[name]} (${i + 1})` : null,
      onclick: () => select(name),
    }, labels[name])));
}
