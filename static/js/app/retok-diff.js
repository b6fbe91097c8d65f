// A re-tokenized copy beside the model node it copies (the server's /retokenized): a full render
// gave an earlier reply other tokens than the model sampled, so what trains there is not what was
// sampled. The badge on the copy (Path and Tree tabs) opens the two token streams index by index,
// the first differing token marked, around the first difference only (the server's window), so a
// long reply never draws thousands of rows. The open copy is in the URL (`retok`).

import {get, trajectoryPath} from "./api.js";
import {button, el, replace} from "../draw/dom.js";
import {num, plural} from "../draw/format.js";
import {visible} from "../draw/facts.js";
import {copyBadge} from "../draw/retok-badge.js";
import {RETOK_TABS} from "../draw/tab-list.js";

const AROUND = 32;  // tokens asked before and after the first difference (the server caps it)

/** Put the badge in the gutter of every drawn block of a copy (the header lists them). */
export function markCopies(blocks, bundle, go) {
  for (const copyId of bundle.trajectory.skycap?.retokenized || []) {
    const modelId = bundle.graph?.nodes?.find((node) => node.node_id === copyId)?.shadowed_by;
    for (const gutter of blocks.querySelectorAll(`section.block[data-node="${CSS.escape(copyId)}"] .gutter`)) {
      gutter.append(copyBadge(copyId, modelId, go));
    }
  }
}

/** The two streams of the copy the URL names, on the Path, Chat and Tree tabs; null otherwise. Fetched once
 *  per rollout (kept in the bundle) and filled in place when it comes. */
export function retokPanel(bundle, state, go) {
  if (!state.retok || !RETOK_TABS.has(state.tab) || !bundle.paths) return null;
  const box = el("section", {className: "retok-diff", dataset: {copy: state.retok}, "aria-label": "re-tokenized copy"},
    el("p", {className: "muted small"}, "loading…"));
  const fill = (answer) => {
    replace(box, panelParts(answer, state.retok, go));
    requestAnimationFrame(() => centreFirst(box));  // once laid out in the drawer
  };
  if (bundle.retokenized) {
    fill(bundle.retokenized);
  } else {
    get(`${trajectoryPath(state.traj)}/retokenized`, {run_id: state.run, around: AROUND})
      .catch((error) => ({error: error.message}))
      .then((answer) => {
        bundle.retokenized = answer;
        if (box.isConnected) fill(answer);
      });
  }
  return box;
}

function panelParts(answer, copyId, go) {
  const close = button("close", () => go({retok: ""}, {replace: true}), {className: "ghost retok-close"});
  if (answer.error) return [close, el("p", {className: "notice error"}, `Cannot compare the copy: ${answer.error}`)];
  const copy = (answer.copies || []).find((entry) => entry.copy_node_id === copyId);
  if (!copy) {
    return [close, el("p", {className: "notice warn"}, `${copyId} is not a re-tokenized copy in this rollout.`)];
  }
  const calls = (answer.unbridged_calls || []).filter((call) => call.copy_node_id === copyId);
  return [
    el("header", {className: "retok-head"},
      el("h3", {}, `${copy.copy_node_id}: re-tokenized copy of ${copy.model_node_id}`), close),
    el("p", {className: "small retok-facts"}, countsLine(copy)),
    (answer.notes || []).map((note) => el("p", {className: "notice warn"}, note)),
    calls.map((call) => el("p", {className: "small retok-call"},
      `${call.node_id}'s call ${call.call_index}`
      + ` (${call.bridged === false ? "unbridged" : "no bridged field: inferred unbridged"})`
      + ` did not reproduce ${call.model_node_id}'s tokens: its prompt passes this copy.`)),
    copy.compared ? streams(copy) : null,
  ];
}

/** Scroll the streams (not the drawer) so the first difference is in the middle of their box. */
function centreFirst(box) {
  const scroller = box.querySelector(".retok-streams");
  const first = scroller?.querySelector("tr.retok-first");
  if (first) scroller.scrollTop = first.offsetTop - (scroller.clientHeight - first.offsetHeight) / 2;
}

/** "model n1: 52 tokens · copy n2: 23 tokens · first difference at token 11" (counts from the record). */
function countsLine(copy) {
  const counts = `model ${copy.model_node_id}: ${plural(copy.model_token_count ?? 0, "token")}`
    + ` · copy ${copy.copy_node_id}: ${plural(copy.copy_token_count ?? 0, "token")}`;
  if (!copy.compared) return `${counts} · not compared: the token ids are not readable`;
  if (copy.identical) return `${counts} · the same token ids`;
  return `${counts} · first difference at token ${num(copy.first_difference)}`;
}

/** One token cell: its text as the Path tab shows it (control characters visible), and its id. */
function tokenCell(token, marked) {
  if (!token) return [el("td", {className: "muted retok-none"}, "—"), el("td", {})];
  const piece = token.text ?? "";
  return [
    el("td", {className: "retok-text"}, el("span", {className: `t${piece ? "" : " sliver"}${marked ? " diff" : ""}`},
      token.text === null ? "(no text)" : visible(piece, true))),
    el("td", {className: "num retok-id"}, String(token.id)),
  ];
}

/** The two windows side by side, one row per index, the first difference marked. */
function streams(copy) {
  const {window: shown, first_difference: at} = copy;
  const model = new Map(shown.model.map((token) => [token.index, token]));
  const copied = new Map(shown.copy.map((token) => [token.index, token]));
  const last = Math.max(...model.keys(), ...copied.keys(), shown.from);
  const rows = [];
  for (let i = shown.from; i <= last; i += 1) {
    const marked = i === at;
    rows.push(el("tr", {className: marked ? "retok-first" : "", dataset: {index: i}},
      el("td", {className: "num muted"}, marked ? `▶ ${i}` : String(i)),
      ...tokenCell(model.get(i), marked), ...tokenCell(copied.get(i), marked)));
  }
  const before = shown.from;
  const after = (side, count) => Math.max((count ?? 0) - (last + 1), 0)
    && `${side}: ${plural((count ?? 0) - (last + 1), "token")} more after`;
  const more = [after("model", copy.model_token_count), after("copy", copy.copy_token_count)].filter(Boolean);
  return el("div", {className: "retok-streams"},
    before
      ? el("p", {className: "muted small"}, `${plural(before, "token")} before, the same on both sides, not shown`)
      : null,
    el("table", {className: "retok-table"},
      el("thead", {}, el("tr", {}, el("th", {}, "token"), el("th", {colspan: "2"}, `model ${copy.model_node_id}`),
        el("th", {colspan: "2"}, `copy ${copy.copy_node_id}`))),
      el("tbody", {}, rows)),
    more.length ? el("p", {className: "muted small"}, `${more.join(" · ")}, not shown`) : null);
}
