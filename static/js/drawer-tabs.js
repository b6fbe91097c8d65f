// The drawer's tab panels: each tab of tab-list.js drawn by its renderer, given what the drawer
// holds (`context`: go, lazy, more, notable, pin, the Tree's open node, the Timeline's select, the
// Chat's message loader and panel).

import {el} from "./dom.js";
import {pathShown} from "./rollout-loader.js";
import {renderCalls} from "./tab-calls.js";
import {renderChat} from "./tab-chat.js";
import {renderForks} from "./tab-forks.js";
import {renderJson} from "./tab-json.js";
import {TAB_NAMES} from "./tab-list.js";
import {renderPath} from "./tab-path.js";
import {renderTimeline} from "./tab-timeline.js";
import {renderTree} from "./tab-tree.js";

const RENDERERS = {
  path: (bundle, state, context) => renderPath(bundle, state, context),
  chat: (bundle, state, context) => {
    const index = pathShown(bundle, state);
    if (index < 0) return el("p", {className: "notice"}, "This trajectory has no path to show.");
    return renderChat(bundle.chat?.get(index), state, {go: context.go, more: () => context.more("chat", index),
      message: context.message, root: context.root, pinned: () => context.state().msg});
  },
  tree: (bundle, state, context) => renderTree(bundle,
    {openNode: context.treeOpen, setOpen: context.setTreeOpen, more: context.more, go: context.go}),
  forks: (bundle, state, context) => renderForks(bundle, state, context),
  calls: (bundle, state, context) => renderCalls(bundle, context.more),
  timeline: (bundle, state, context) => renderTimeline(bundle, state,
    {go: context.go, select: context.select, more: () => context.more("timeline")}),
  json: (bundle) => renderJson(bundle),
};
for (const name of TAB_NAMES) if (!RENDERERS[name]) throw new Error(`drawer-tabs.js: no renderer for tab ${name}`);

/** The panel of the tab `state` shows. */
export function drawTab(bundle, state, context) {
  return RENDERERS[state.tab](bundle, state, context);
}
