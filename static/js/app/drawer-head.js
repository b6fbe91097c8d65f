// The drawer's header: the rollout's header (rollout-head.js, as the snapshot draws it) with the
// drawer's own actions (copy, compare, the snapshot link, close) and notices (gone, a bad tab).

import {apiUrl, bundleFacts, trajectoryPath} from "./api.js";
import {button, copyText, el} from "../draw/dom.js";
import {pickButtons} from "../draw/pair-picks.js";
import {rolloutHead} from "../draw/rollout-head.js";
import {TAB_NAMES} from "../draw/tab-list.js";
import {snapshotTabs} from "../draw/viewer.js";

/** The header of `bundle` shown as `state` says; `gone`: the record left the disk. */
export function drawerHead(bundle, state, {rewardRange, gone, go, close}) {
  const t = bundle.trajectory;
  return rolloutHead(bundle, {
    rewardRange,
    actions: [
      button("copy id", (event) => copyText(t.id, event.currentTarget), {className: "ghost"}),
      t.unreadable ? null : pickButtons(t.id, state.run, go),  // nothing to compare it by
      snapshotLink(t, state),
      el("span", {className: "grow"}),
      button("close  esc", () => close(), {className: "ghost close", title: "close (Esc)"})],
    notes: [gone ? el("p", {className: "notice error gone"},
      "This record is gone from disk: what is shown is the last version read.") : null,
    state.badTab ? el("p", {className: "notice warn bad-tab"}, `The link asks for a tab "${state.badTab}"`
      + `, which there is not (tabs: ${TAB_NAMES.join(", ")}): the Path tab is shown.`) : null],
  });
}

/** What is shown when rollout `id` cannot be opened at all (`error`): its id, close, and why. */
export function cannotOpen(id, error, close) {
  return [el("header", {className: "drawer-head"}, el("h2", {}, id),
    button("close  esc", () => close(), {className: "ghost close"})),
  el("p", {className: "notice error"}, `Cannot open ${id}: ${error.message}`)];
}

/** The rollout as one HTML file that opens offline (`/snapshot`), on the path and tab shown (the
 *  Path's, for a tab the file does not have). */
function snapshotLink(t, state) {
  if (t.unreadable || bundleFacts()) return null;  // a bundle's page has no server to write the file
  const tab = snapshotTabs().includes(state.tab) ? state.tab : "path";
  return el("a", {className: "button ghost snapshot-link", download: true, dataset: {link: "snapshot"},
    title: "download this rollout as one HTML file that opens on any machine, offline",
    href: apiUrl(`${trajectoryPath(t.id)}/snapshot`, {run_id: state.run, path: state.path, tab}),
  }, "snapshot");
}
