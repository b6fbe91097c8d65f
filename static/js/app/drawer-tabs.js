// The drawer's tab panels: each tab of tab-list.js drawn by its renderer, given what the drawer
// holds (`context`: go, lazy, more, notable, pin, the Tree's open node, the Timeline's select, the
// Chat's message loader and panel).

import {el} from "../draw/dom.js";
import {drawLaterPart} from "../draw/parts.js";
import {pathShown} from "./rollout-loader.js";
import {renderCalls} from "../draw/tab-calls.js";
import {renderChat} from "../draw/tab-chat.js";
import {forkPair, renderForks} from "../draw/tab-forks.js";
import {renderJson} from "../draw/tab-json.js";
import {TAB_NAMES} from "../draw/tab-list.js";
import {extendPath, renderPath} from "./tab-path.js";
import {renderTimeline} from "../draw/tab-timeline.js";
import {renderTree} from "../draw/tab-tree.js";

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

/** What a draw of the drawer depends on: `place` (the rollout `key`, the tab, the path or pair shown:
 *  the same place keeps its scroll) and `drawn` (that and every option and answer the panel shows;
 *  the same `drawn` needs no draw, only its pin marked). `more`: the drawer's own (gone, open node). */
export function drawnAs(key, bundle, state, more) {
  const fork = forkPair(bundle.paths, state);
  const place = JSON.stringify([key, state.tab, state.tab === "timeline" ? null : state.path, state.fa, state.fb]);
  const drawn = JSON.stringify([place, ...more, state.given, state.controls, state.logprobs,
    state.retok, Boolean(fork && bundle.forks?.has(fork.key)), state.node, Boolean(bundle.timeline),
    state.experts, state.badTab, Boolean(bundle.chat?.has(pathShown(bundle, state)))]);
  return {place, drawn};
}

/** The tab shown in `content` gets the part of `route` just fetched for path `index` after what it
 *  drew (the Path tab its blocks, the Chat tab its cards): a 30k-node path drew 105k blocks in six
 *  parts when each part drew them all again. The tab's element, to mark; null when it must be drawn
 *  whole. */
export function extendTab(content, bundle, state, route, index) {
  const shown = state.tab === "chat" && route === "chat" ? content?.querySelector(".chat-tab")
    : state.tab === "path" && route === "paths" ? content?.querySelector(".path-tab") : null;
  if (!shown || pathShown(bundle, state) !== index) return null;
  return (route === "chat" ? drawLaterPart(shown, bundle.chat?.get(index)) : extendPath(shown, bundle)) ? shown : null;
}

/** Mark the selected node's blocks, rows or bars in the tab drawn in `content`; bring the first into
 *  sight when the tab was just opened (`scroll`). */
export function markNode(content, node, scroll) {
  if (!node) return;
  const marked = content.querySelectorAll(`[data-node="${CSS.escape(node)}"]`);
  for (const element of marked) element.classList.add("node-selected");
  if (scroll && marked.length) marked[0].scrollIntoView({block: "center"});
}
