// The drawer's tabs, in one place: each tab's name (as the URL and the number keys know it), its
// label, whether the find bar searches it, whether a snapshot file has it and whether it shows a
// re-tokenized copy beside its model node (`retok`). The route, the find
// bar, the header, the drawer and the snapshot read it; views/record/snapshot.py's TABS is held equal to
// the snapshot's by a test. It fetches nothing (the snapshot inlines it); each tab's renderer is
// looked up by name where it is drawn (drawer-tabs.js, the snapshot's `panel`).

const pathCount = (bundle) => (bundle.paths?.paths || []).length;
const counted = (word) => (bundle) => (pathCount(bundle) > 1 ? `${word} ${pathCount(bundle)}` : word);
const calls = (bundle) => `Calls ${bundle.exchanges?.part?.total ?? 0}`;

const TABS = [
  {name: "path", label: () => "Path", find: true, snapshot: true, retok: true},
  {name: "chat", label: () => "Chat", find: true, snapshot: true, retok: true},
  {name: "tree", label: counted("Tree"), find: true, snapshot: true, retok: true},
  {name: "forks", label: counted("Forks"), find: true, snapshot: false, retok: false},
  {name: "calls", label: calls, find: false, snapshot: true, retok: false},
  {name: "timeline", label: () => "Timeline", find: false, snapshot: false, retok: false},
  {name: "json", label: () => "JSON", find: false, snapshot: false, retok: false},
];

/** Every tab's name, in the tab bar's order. */
export const TAB_NAMES = TABS.map((tab) => tab.name);

/** The tabs the find bar searches. */
export const FIND_TABS = new Set(TABS.filter((tab) => tab.find).map((tab) => tab.name));

/** The tabs a snapshot file has (the others open it on the Path). */
export const SNAPSHOT_TABS = TABS.filter((tab) => tab.snapshot).map((tab) => tab.name);

/** The tabs that show the re-tokenized copy the URL names (retok-diff.js). */
export const RETOK_TABS = new Set(TABS.filter((tab) => tab.retok).map((tab) => tab.name));

/** Each tab's label for `bundle`: the Tree and Forks say how many paths, the Calls how many calls. */
export function tabLabels(bundle) {
  return Object.fromEntries(TABS.map((tab) => [tab.name, tab.label(bundle)]));
}
