// The Path tab's take-away buttons: the path's trainer row (`/paths/{n}/row`) as a file, and its
// chat (`/paths/{n}/messages`) copied or as a file, for a bug report. Each is fetched when asked.

import {get, trajectoryPath} from "./api.js";
import {copyText, downloadText, el} from "../draw/dom.js";

/** The buttons for path `index` of the open rollout, and a status line for a refusal. */
export function takeawayButtons(state, path) {
  const base = `${trajectoryPath(state.traj)}/paths/${path.index}`;
  const name = (what) => `${state.traj}-path${path.index}-${what}.json`;
  const status = el("span", {className: "takeaway-status muted small", role: "status"});
  const fetched = async (what) => {
    status.textContent = "";
    try {
      return await get(`${base}/${what}`, {run_id: state.run});
    } catch (error) {
      status.textContent = `${what}: ${error.message}`;
      return null;
    }
  };
  const download = (what, text) => async () => {
    const body = await fetched(what);
    if (body) downloadText(text(body), name(what));
  };
  const copyMessages = async (event) => {
    const trigger = event.currentTarget;
    const body = await fetched("messages");
    if (body) await copyText(JSON.stringify(body.messages, null, 2), trigger);
  };
  const tokens = path.unit === "tokens";
  return [
    el("button", {type: "button", className: "ghost", dataset: {takeaway: "row"}, disabled: !tokens,
      title: tokens ? "the trainer's row of this path: input_ids, loss_mask, logprobs and its blocks, as JSON"
        : "no token row: this path is shown from message text",
      onclick: download("row", (body) => JSON.stringify(body))}, "download row"),
    el("button", {type: "button", className: "ghost", dataset: {takeaway: "copy-messages"},
      title: "copy this path's messages in chat format ([{role, content, …}])", onclick: copyMessages},
      "copy messages"),
    el("button", {type: "button", className: "ghost", dataset: {takeaway: "messages"},
      title: "this path's messages in chat format, with each one's node id, as JSON",
      onclick: download("messages", (body) => JSON.stringify(body, null, 2))}, "download messages"),
    status,
  ];
}
