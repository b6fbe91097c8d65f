// The experts lane under the Path's toolbar: for one node of the path and one layer, each token's
// k routed experts, from /experts. It is fetched only while the lane is shown, one node and layer
// at a time (never the whole sidecar); the tokens the server says were routed to the same set as
// the token before are shaded. The node and layer picked stay with the open rollout.

import {get, trajectoryPath} from "./api.js";
import {el, replace, select} from "../draw/dom.js";
import {num} from "../draw/format.js";
import {extend} from "../draw/parts.js";
import {visible} from "../draw/facts.js";

/** The lane for `path` (a /paths path) of the open rollout. */
export function expertsLane(bundle, path, run) {
  const nodes = bundle.paths.nodes || {};
  const choices = path.node_ids.filter((id) => nodes[id]?.token_ids);
  const lane = bundle.expertsLane ??= {node: null, layer: 0, answers: new Map()};  // "node|layer" -> rows so far
  if (!choices.includes(lane.node)) {
    lane.node = choices.find((id) => nodes[id].sampled_start !== null) ?? choices[0] ?? null;
  }
  const box = el("section", {className: "experts-lane", "aria-label": "routed experts"});
  if (lane.node === null) {
    box.append(el("p", {className: "notice muted"}, "No node of this path has tokens: there are no experts to show."));
    return box;
  }
  const body = el("div", {className: "experts-body"});
  const head = el("div", {className: "experts-head"});
  box.append(head, body);
  const id = bundle.trajectory.id;

  async function fetchRows(from) {
    const key = `${lane.node}|${lane.layer}`;
    const answer = await get(`${trajectoryPath(id)}/experts`,
      {run_id: run, node: lane.node, layer: lane.layer, from: from || undefined});
    const known = lane.answers.get(key);
    if (known && from) {
      extend(known.experts, answer.experts);
      extend(known.repeats, answer.repeats);
      known.part = answer.part;
    } else {
      lane.answers.set(key, answer);
    }
  }

  async function show() {
    const key = `${lane.node}|${lane.layer}`;
    drawHead(head, lane, choices, nodes, lane.answers.get(key), show);
    if (!lane.answers.has(key)) {
      replace(body, el("p", {className: "muted"}, "loading experts…"));
      try {
        await fetchRows(0);
      } catch (error) {
        replace(body, el("p", {className: "notice error"}, `Cannot read the experts: ${error.message}`));
        return;
      }
      if (key !== `${lane.node}|${lane.layer}`) return;  // another node or layer was picked meanwhile
      drawHead(head, lane, choices, nodes, lane.answers.get(key), show);
    }
    drawRows(body, lane.answers.get(key), nodes[lane.node], async () => {
      await fetchRows(lane.answers.get(key).part.next);
      show();
    });
  }

  show();
  return box;
}

/** The lane's controls: the node, the layer (once the server has said how many), the shape. */
function drawHead(head, lane, choices, nodes, answer, show) {
  const nodeLabel = (nodeId) =>
    `${nodeId} ${nodes[nodeId].role ?? ""}${nodes[nodeId].author === "model" ? " · model" : ""}`;
  const pickNode = select(choices.map((nodeId) => [nodeId, nodeLabel(nodeId)]), lane.node,
    (value) => { lane.node = value; show(); }, {className: "experts-node", "aria-label": "node"});
  const layers = answer?.layers;
  const pickLayer = layers ? select([...Array(layers).keys()].map((layer) => [layer, `layer ${layer}`]), lane.layer,
    (value) => { lane.layer = Number(value); show(); }, {className: "experts-layer", "aria-label": "layer"}) : null;
  replace(head, el("span", {className: "experts-title"}, "experts"), pickNode, pickLayer,
    layers ? el("span", {className: "muted experts-shape"},
      `of ${num(layers)} layers · k ${num(answer.k)} · ${answer.dtype} · ${num(answer.rows)} rows`) : null,
    el("span", {className: "muted small"}, el("span", {className: "experts-key repeat"}, "shaded"),
      " = the same experts as the token before"));
}

/** One cell per token: its text and its k expert ids, shaded where the server says routing repeats;
 *  sampled tokens are underlined in the sampled colour. */
function drawRows(body, answer, node, more) {
  if (answer.unavailable) {
    replace(body, el("p", {className: `notice ${answer.unavailable === "damaged" ? "error" : "warn"} experts-note`},
      answer.note));
    return;
  }
  const hasText = node.text !== null && node.text !== undefined && node.token_offsets;
  const cells = answer.experts.map((ids, row) => {
    const piece = hasText
      ? node.text.slice(node.token_offsets[row], node.token_offsets[row + 1])
      : `${node.token_ids[row]}`;
    const repeat = answer.repeats[row];
    const sampled = row >= (node.sampled_start ?? Infinity);
    return el("span", {className: `experts-cell${sampled ? " sampled" : ""}${repeat ? " repeat" : ""}`, dataset: {row},
      title: `token ${row} ${JSON.stringify(piece)} · experts ${ids.join(", ")}`
        + `${repeat ? " · the same set as the token before" : ""}`},
    el("span", {className: "experts-piece"}, visible(piece, true) || "·"),
    el("span", {className: "experts-ids"}, ids.join(" ")));
  });
  const next = answer.part?.next;
  replace(body, el("div", {className: "experts-cells"}, cells), next === undefined ? null
    : el("button", {type: "button", className: "ghost more-experts", onclick: more},
      `${num(answer.part.to)} of ${num(answer.part.total)} rows shown · show more`));
}
