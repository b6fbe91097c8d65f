// The JSON tab: the record as the server read it, to copy or download.

import {copyText, downloadText, el} from "./dom.js";
import {visible} from "./facts.js";

export function renderJson(bundle) {
  const document = {trajectory: bundle.trajectory, graph: bundle.graph, exchanges: bundle.exchanges?.data};
  const text = JSON.stringify(document, null, 2);
  const name = `${bundle.trajectory.id}.json`;
  return el("div", {className: "json-tab"},
    el("div", {className: "toolbar"},
      el("span", {className: "muted small"}, "header, graph (every node with its message and calls) and calls"),
      el("button", {type: "button", onclick: (event) => copyText(text, event.currentTarget)}, "copy all"),
      el("button", {type: "button", onclick: () => downloadText(text, name)}, `download ${name}`)),
    el("pre", {className: "json"}, visible(text, false)));  // direction controls as marks; copied as they are
}
