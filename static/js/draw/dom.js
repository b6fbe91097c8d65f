// Build DOM nodes from data. Text only ever goes in as text nodes, so record content that
// looks like markup (`<img onerror=…>`) shows as the characters it is.

/** el("td", {className: "num", title: "…", dataset: {id}, onclick}, child, "text", …) */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "className" || key === "textContent" || key === "value" || key === "checked"
             || key === "selected" || key === "disabled" || key === "hidden" || key === "type") node[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children: nodes, strings (as text), arrays, skipping null/false. */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace all children of `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A button that does not submit anything. */
export function button(label, onclick, props = {}) {
  return el("button", {type: "button", onclick, ...props}, label);
}

/** Copy text to the clipboard and flash the button that asked. */
export async function copyText(text, trigger) {
  try {
    await navigator.clipboard.writeText(text);
    flash(trigger, "copied");
  } catch {
    flash(trigger, "copy failed");
  }
}

/** Save `text` as a file called `name` (a Blob behind an object URL, freed once the download has it). */
export function downloadText(text, name, type = "application/json") {
  const link = el("a", {href: URL.createObjectURL(new Blob([text], {type})), download: name});
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

function flash(trigger, label) {
  if (!trigger) return;
  const before = trigger.textContent;
  trigger.textContent = label;
  setTimeout(() => { trigger.textContent = before; }, 900);
}

/** A select built from [value, label] pairs. */
export function select(options, current, onchange, props = {}) {
  return el("select", {...props, onchange: (event) => onchange(event.target.value)},
    options.map(([value, label]) => el("option", {value, selected: String(value) === String(current ?? "")}, label)));
}

// Focus survives a redraw: the focused control is named by its data attribute (or id) before the
// nodes are replaced, and the control with the same name is focused again after.
const FOCUS_KEYS = [
  "tab", "path", "option", "fork", "flag", "sort", "filter", "view", "page", "link", "node", "traj", "key",
];

/** A selector for the focused element inside `root`, or null. */
export function focusKey(root) {
  const active = document.activeElement;
  if (!active || active === document.body || !root.contains(active)) return null;
  const tag = active.tagName.toLowerCase();
  for (const name of FOCUS_KEYS) {
    const value = active.dataset?.[name];
    if (value !== undefined) return `${tag}[data-${name}="${CSS.escape(value)}"]`;
  }
  return active.id ? `#${CSS.escape(active.id)}` : null;
}

/** Focus the element `key` names again, if focus was lost with the old nodes. */
export function restoreFocus(root, key) {
  if (!key) return;
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected) return;
  root.querySelector(key)?.focus({preventScroll: true});
}

/** What sits at the top of the scrolling `box`: the first element of `kinds` ([selector, attribute]
 *  pairs, the attribute naming it) under its top edge, and how far below the edge it starts; null if
 *  none. A redraw puts it back there (`restoreScrollAnchor`): the old scrollTop alone lands elsewhere
 *  when what is above is drawn on sight, its height not known yet. */
export function scrollAnchor(box, kinds) {
  if (!box?.isConnected) return null;
  const edge = box.getBoundingClientRect();
  for (const below of [4, 16, 32, 64]) {  // a point can fall in the gap between two
    const hit = document.elementFromPoint(edge.left + edge.width / 2, edge.top + below);
    for (const [selector, name] of kinds) {
      const at = hit?.closest(`${selector}[${name}]`);
      if (at && box.contains(at)) {
        return {key: `${selector}[${name}="${CSS.escape(at.getAttribute(name))}"]`,
          offset: at.getBoundingClientRect().top - edge.top};
      }
    }
  }
  return null;
}

const READER_MOVES = ["wheel", "touchstart", "keydown", "pointerdown"];

/** Scroll `box` so the element `anchor` names (from `scrollAnchor`) is where it was, and keep it there
 *  while what is above it takes its drawn height (drawn on sight, or sized on sight by
 *  `content-visibility`, which the browser's own scroll anchoring does not follow): until it has stayed
 *  put `settled` frames running, `most` frames at most, or the reader moves. */
export function restoreScrollAnchor(box, anchor, options = {}) {
  const at = anchor && box.querySelector(anchor.key);
  if (at) holdInView(box, at, () => anchor.offset, options);
}

/** Scroll `box` so element `at` starts `offset()` pixels below its top edge, and keep it there while what
 *  is above takes its drawn height (`restoreScrollAnchor`'s rule): where a link (`msg=`, `tok=`, `blk=`)
 *  lands. `offset` is asked again each frame (centring follows the element's own height). */
export function holdInView(box, at, offset, {settled = 10, most = 120} = {}) {
  let moved = false;
  const stop = () => { moved = true; };
  for (const name of READER_MOVES) window.addEventListener(name, stop, {capture: true, passive: true});
  let still = 0;
  const place = (left) => {
    if (!moved && at.isConnected) {
      const off = at.getBoundingClientRect().top - box.getBoundingClientRect().top - offset();
      if (Math.abs(off) >= 1) {
        box.scrollTop += off;
        still = 0;
      } else {
        still += 1;
      }
      if (still < settled && left > 0) {
        requestAnimationFrame(() => place(left - 1));
        return;
      }
    }
    for (const name of READER_MOVES) window.removeEventListener(name, stop, {capture: true});
  };
  place(most);
}

/** Hovering a token (`span.t`) inside `root` marks it and writes `describe(span)` into `readout`
 *  (nothing for a span `describe` says nothing of, nor while the readout holds a pinned token). */
export function hoverReadout(root, readout, describe) {
  let marked = null;
  root.addEventListener("mouseover", (event) => {
    const span = event.target.closest?.("span.t");
    if (!span || span === marked || readout.classList.contains("pinned")) return;
    const text = describe(span);
    if (!text) return;
    marked?.classList.remove("hover");
    span.classList.add("hover");
    marked = span;
    readout.textContent = text;
  });
}
