// The drawer: one rollout, with its header and the tabs of tab-list.js. Its trajectory, tab, selected
// paths and node and the Path tab's options live in the URL; it is re-read on every poll and redrawn
// only when the record changed, keeping the scroll position. Loading is rollout-loader.js's, each
// tab's panel drawer-tabs.js's; the drawer keeps drawing, pins, marks and keys.

import {append, el, focusKey, replace, restoreFocus, restoreScrollAnchor, scrollAnchor} from "../draw/dom.js";
import {placeInChat, stepTurn} from "./chat-place.js";
import {cannotOpen, drawerHead} from "./drawer-head.js";
import {drawTab, drawnAs, extendTab, markNode} from "./drawer-tabs.js";
import {resizable} from "../draw/drawer-width.js";
import {FindBar} from "../draw/find-bar.js";
import {NotableTokens} from "./notable.js";
import {retokPanel} from "./retok-diff.js";
import {rewardCell} from "../draw/reward.js";
import {RolloutLoader, pathShown} from "./rollout-loader.js";
import {nearEndWatcher} from "../draw/parts.js";
import {placeHit} from "../draw/search-mark.js";
import {tabBar} from "../draw/tab-bar.js";
import {TAB_NAMES, tabLabels} from "../draw/tab-list.js";
import {PinnedPlace} from "../draw/token-pin.js";
import {LazyText} from "../draw/tokens.js";

const ANCHORS = [[".chat-card", "data-position"], ["section.block", "data-blk"]];  // what a redraw keeps in place

export class Drawer {
  constructor(root, body, grip, {go, close}) {
    this.root = root;
    this.body = body;
    this.go = go;
    this.close = close;
    this.loader = new RolloutLoader();
    this.key = null;
    this.treeOpen = null;
    this.rewardRange = null;
    this.lazy = null;
    this.nearEnd = null;  // watches the tab's "more" rows: one in sight asks for the next part
    this.openTree = (id) => {  // a Tree tab's node opened (or closed: null), the tab drawn again
      this.treeOpen = id;
      this.draw(true);
    };
    this.finder = new FindBar(root, {openTreeNode: this.openTree});
    this.notable = new NotableTokens(() => ({state: this.state, content: this.content}));
    this.hit = null;  // the search match to mark in the Path tab (`mark`)
    this.pin = new PinnedPlace(() => ({bundle: this.bundle, state: this.state, content: this.content}),
      {go: this.go, more: (route, index, wanted) => this.more(route, index, wanted)});
    resizable(grip);
  }

  get isOpen() {
    return !this.root.hidden;
  }

  get bundle() {
    return this.key ? this.loader.bundle(this.state.run, this.state.traj) : undefined;
  }

  /** The stale-answer check: a function that says whether the rollout open now is still the one open
   *  when it was made (an answer landing after a switch or a close is dropped, not drawn). */
  stillOpen() {
    const key = this.key;
    return () => key !== null && key === this.key;
  }

  /** The run-wide reward range colours the reward in the header, as in the table. */
  setRewardRange(range) {
    if (JSON.stringify(range) === JSON.stringify(this.rewardRange)) return;
    this.rewardRange = range;
    if (!this.rewardBox || !this.bundle) return;
    const t = this.bundle.trajectory;
    replace(this.rewardBox, rewardCell(t.annotations?.reward, t.reward_value, range));
  }

  /** Open, switch or close the drawer to match `state`. */
  async show(state) {
    if (!state.traj) {
      this.hide();
      return;
    }
    this.state = state;
    const key = `${state.run}|${state.traj}`;
    this.root.hidden = false;
    document.body.classList.add("drawer-open");
    const opened = key !== this.key;
    this.key = key;
    const still = this.stillOpen();
    if (opened) {
      this.gone = false;
      if (this.hit?.trajectory_id !== state.traj) this.hit = null;
      this.wantFocus = !this.hit;  // a newly opened rollout takes the focus once drawn; a match leaves it in its list
      this.treeOpen = null;
      this.drawn = null;
      this.place = null;
      if (!this.bundle) replace(this.body, el("p", {className: "muted pad"}, "loading…"));
      try {
        await this.loader.load(state.run, state.traj);
      } catch (error) {
        if (still()) replace(this.body, ...cannotOpen(state.traj, error, this.close));
        return;
      }
      if (!still()) return;
    }
    await this.loader.loadTab(state);
    if (still()) this.draw(false);
  }

  hide() {
    this.root.hidden = true;
    document.body.classList.remove("drawer-open");
    this.key = null;
    this.drawn = null;
    this.place = null;
    this.lazy?.disconnect();
    this.nearEnd?.disconnect();
  }

  /** Draw the header and the current tab; `keepScroll` on a poll that found a change. */
  draw(keepScroll) {
    const state = this.state;
    const bundle = this.bundle;
    if (!bundle) return;  // still loading: the show() that started the load draws when it lands
    const {place, drawn} = drawnAs(this.key, bundle, state, [this.gone, this.treeOpen]);
    if (this.drawn === drawn && !keepScroll) {  // only a pin may have changed (a click, Esc, Back): mark it
      this.pin.drawn();
      if (state.tab === "chat") this.placeInChat(false);  // a message pinned deep in: no jump
      return;
    }
    keepScroll = keepScroll || this.place === place;  // same tab and path, new options: stay put
    this.drawn = drawn;
    this.place = place;
    const scroll = this.content?.scrollTop ?? 0;
    const anchor = keepScroll ? scrollAnchor(this.content, ANCHORS) : null;
    const focused = this.focusTab ? `button[data-tab="${state.tab}"]` : focusKey(this.body);
    this.focusTab = false;
    this.lazy?.disconnect();
    this.nearEnd?.disconnect();
    this.content = el("div", {className: "drawer-content", tabindex: "-1", id: "drawer-panel"});
    this.lazy = new LazyText(this.content);
    this.nearEnd = nearEndWatcher(this.content);
    const head = drawerHead(bundle, state,
      {rewardRange: this.rewardRange, gone: this.gone, go: this.go, close: this.close});
    this.rewardBox = head.querySelector('[data-fact="reward"] dd');
    if (bundle.trajectory.unreadable) {
      this.content.append(el("p", {className: "notice error"},
        `This record cannot be read: ${bundle.trajectory.error}`));
      replace(this.body, head, this.content);
    } else {
      this.content.setAttribute("role", "tabpanel");
      this.content.setAttribute("aria-labelledby", `drawer-tab-${state.tab}`);
      append(this.content, [retokPanel(bundle, state, this.go), drawTab(bundle, state, this.tabContext())]);
      const tabs = tabBar(TAB_NAMES, state.tab, tabLabels(bundle), (tab) => {
        this.focusTab = true;
        this.go({tab}, {replace: true});
      }, {prefix: "drawer-tab", panel: "drawer-panel", numbered: true});
      replace(this.body, head, tabs, this.finder.bar(state.tab), this.content);
      if (keepScroll) this.content.scrollTop = scroll;
      restoreScrollAnchor(this.content, anchor);
      this.marked(this.content, !keepScroll);
    }
    if (this.wantFocus) this.body.querySelector(".traj-id")?.focus({preventScroll: true});
    else restoreFocus(this.body, focused);
    this.wantFocus = false;
  }

  /** What a tab's renderer is given (drawer-tabs.js). */
  tabContext() {
    return {go: this.go, lazy: this.lazy, notable: this.notable, pin: this.pin, root: this.content,
      more: (route, index) => this.more(route, index), state: () => this.state,
      treeOpen: this.treeOpen, setTreeOpen: this.openTree,
      select: (id, path) => {  // a Timeline bar's node: shown in `path` on the Path tab, opened in the Tree
        this.treeOpen = id;
        this.go({node: id, ...(path === null || path === undefined ? {} : {path})}, {replace: true});
      }, message: (card) => this.loadMessage(card)};
  }

  /** A message a /chat part left out, fetched whole into its card, which is drawn again. */
  async loadMessage(card) {
    const still = this.stillOpen();
    await this.loader.loadMessage(this.state, card);
    if (!still()) return;
    this.drawn = null;
    this.draw(true);
  }

  placeInChat(scroll) {
    placeInChat(this.content, this.bundle, this.state,
      {hit: this.hit, scroll, more: (wanted) => this.more("chat", pathShown(this.bundle, this.state), wanted)});
  }

  /** `m` / `M`: the next / previous model turn of the Chat tab. */
  stepTurn(by) {
    if (this.isOpen && this.state?.tab === "chat" && this.content) stepTurn(this.content, by);
  }

  /** Mark a search match (`/v1/search` hit) in the Path tab when its rollout is drawn. */
  mark(hit) {
    this.hit = {...hit};
    this.drawn = null;  // the same rollout is drawn again, marked
  }

  /** Fetch the next part of the open rollout's `route` answer (path `index`'s of /paths) into its
   *  bundle, and the parts after it while `wanted()` says what is sought is still not there (a pinned
   *  token: one draw at the end, not one per part); then draw again where the reader is. One at a
   *  time: a "more" row seen twice asks once. */
  async more(route, index, wanted = () => false) {
    const still = this.stillOpen();
    if (!await this.loader.more(this.state, this.bundle, route, index, () => still() && wanted())) return;
    // Draw even if a poll's reload replaced the bundle meanwhile: a search match waiting for a later
    // part asks again from the bundle now shown (its ask was refused while this one was fetching).
    const shown = still() && extendTab(this.content, this.bundle, this.state, route, index);
    if (shown) this.marked(shown, false);
    else if (still()) this.draw(true);
  }

  /** Mark on the tab just drawn (or extended: `root`, what is new) what a draw marks: the find bar's
   *  hits, the search match, the Chat tab's card, the selected node and the pin; its "more" rows are
   *  watched. `scroll`: the tab was just opened, so they are scrolled to. */
  marked(root, scroll) {
    const {state, bundle} = this;
    this.finder.drawn(this.content, bundle, state);
    if (this.hit && state.tab === "path") {
      placeHit(this.content, bundle.paths, this.hit, state, {go: this.go, more: (index) => this.more("paths", index)});
    }
    if (state.tab === "chat") this.placeInChat(scroll);
    markNode(this.content, state.node, scroll);
    this.pin.drawn();
    for (const row of root.querySelectorAll("button.more:not(.manual)")) this.nearEnd.observe(row);
  }

  /** Re-read the open rollout; reload and redraw it only if the record changed. One that could not be
   *  read last time (e.g. rewritten while read) is loaded again. */
  async poll() {
    if (!this.isOpen || !this.key) return;
    const still = this.stillOpen();
    const had = Boolean(this.bundle);
    const changed = await this.loader.refresh(this.state);
    if (!still() || changed === null) return;
    this.markGone(changed === "gone");
    if (changed === "changed") this.draw(had);
  }

  /** The record vanished from disk (404 on a poll), or came back: say so instead of staying stale. */
  markGone(gone) {
    if (Boolean(this.gone) === gone) return;
    this.gone = gone;
    this.draw(true);
  }

  /** `f` opens the find bar (the tabs it finds in). */
  openFind() {
    if (this.isOpen) this.finder.open();
  }

  /** Esc: unpin the Chat tab's pinned message when it shows one, else a pinned token or block; false
   *  when nothing was, so Esc closes the drawer. */
  unpin() {
    if (!this.isOpen) return false;
    if (this.state.tab !== "chat" || this.state.msg === "") return this.pin.unpin();
    this.go({msg: ""}, {replace: true});
    return true;
  }

  /** `n` / `N`: the next / previous notable token of the Path tab. */
  stepNotable(by) {
    if (this.isOpen && this.state?.tab === "path") this.notable.step(by);
  }

  /** The number keys switch tabs. */
  selectTab(index) {
    if (!this.isOpen || !TAB_NAMES[index]) return;
    const focused = document.activeElement;
    if (this.body.contains(focused) && focused.getAttribute("role") === "tab") this.focusTab = true;
    this.go({tab: TAB_NAMES[index]}, {replace: true});
  }
}
