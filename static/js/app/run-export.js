// The run page's downloads: every rollout the current filters keep (`/trajectories/export`, JSON lines),
// with their trainer rows (`format=rows`) or without; in a bundle, said to need the server.

import {apiUrl, bundleFacts} from "./api.js";
import {NEEDS_SERVER} from "./bundle-limits.js";
import {el} from "../draw/dom.js";

/** The export links for the listing `params` asks (the filters, and the Rollouts view's sort). */
export function exportLinks(params) {
  if (bundleFacts()) return el("span", {className: "export-links muted small"}, ` · export ${NEEDS_SERVER}`);
  const link = (format, label, title) => el("a", {className: "export-link", download: true, title,
    dataset: {link: `export-${format}`}, href: apiUrl("/trajectories/export", {...params, format})}, label);
  return el("span", {className: "export-links muted small"}, " · export ",
    link("rollouts", "rollouts", "download every rollout these filters keep, one listing row a line (JSON lines)"),
    " · ",
    link("rows", "with trainer rows", "the same, each with its paths' input_ids, loss_mask and logprobs"));
}
