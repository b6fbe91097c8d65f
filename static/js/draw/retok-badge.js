// The badge on a re-tokenized copy (Path and Tree tabs; retok-diff.js opens the two streams it
// names). Apart from the diff so a snapshot file, which fetches nothing, draws it too.

import {el} from "./dom.js";
import {flagInfo} from "./viewer.js";

/** The badge on copy `copyId` of model node `modelId`: a click opens the two streams (`go`); without
 *  `go` (a snapshot file, which has not the streams) it only says what the node is. */
export function copyBadge(copyId, modelId, go) {
  const label = `re-tokenized copy of ${modelId ?? "?"}`;
  if (!go) return el("span", {className: "badge level-warn retok-badge", title: flagInfo("re-tokenized").why}, label);
  return el("button", {type: "button", className: "badge level-warn retok-badge", dataset: {retok: copyId},
    title: `${flagInfo("re-tokenized").why}. Click to see its tokens beside ${modelId ?? "the model's"}.`,
    onclick: (event) => {
      event.stopPropagation();  // a tree row would open or close under it
      go({retok: copyId}, {replace: true});
    },
    onkeydown: (event) => { if (event.key === "Enter" || event.key === " ") event.stopPropagation(); }},
  label);
}
