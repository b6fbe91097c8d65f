// The drawer: one rollout, with its header and the Path / Chat / Tree / Forks / Calls / Timeline / JSON tabs.
// Its trajectory, tab, selected paths and node and the Path tab's options live in the URL; it is re-read
// on every poll and redrawn only when the record changed, keeping the scroll position.

import {apiUrl, bundleFacts, get, trajectoryPath} from "./api.js";
import {renderCalls} from "./tab-calls.js";
import {drawBody, renderChat} from "./tab-chat.js";
import {
  append, button, copyText, el, focusKey, holdInView, replace, restoreFocus, restoreScrollAnchor, scrollAnchor,
} from "./dom.js";
import {forkPair, renderForks} from "./tab-forks.js";
import {FindBar} from "./find-bar.js";
import {renderJson} from "./tab-json.js";
import {NotableTokens} from "./notable.js";
import {pickButtons} from "./pair-picks.js";
import {extendPath, renderPath} from "./tab-path.js";
import {retokPanel} from "./retok-diff.js";
import {renderTimeline} from "./tab-timeline.js";
import {rewardCell} from "./reward.js";
import {rolloutHead} from "./rollout-head.js";
import {tabBar} from "./tab-bar.js";
import {TAB_NAMES, tabLabels} from "./tab-list.js";
import {fetchNext, partOf} from "./fetch-part.js";
import {drawLaterPart} from "./parts.js";
import {locate, markHit} from "./search-mark.js";
import {PinnedPlace} from "./token-pin.js";
import {LazyText} from "./tokens.js";
import {renderTree} from "./tab-tree.js";
import {snapshotTabs} from "./viewer.js";

const WIDTH_KEY = "skycap-viewer.drawer-width";
const CACHE_SIZE = 8;
const ANCHORS = [[".chat-card", "data-position"], ["section.block", "data-blk"]];  // what a redraw keeps in place

export class Drawer {
  constructor(root, body, grip, {go, close}) {
    this.root = root;
    this.body = body;
    this.go = go;
    this.close = close;
    this.cache = new Map();  // "run|id" -> bundle
    this.loading = new Map();  // "run|id" -> the load under way
    this.key = null;
    this.treeOpen = null;
    this.rewardRange = null;
    this.lazy = null;
    this.nearEnd = null;  // watches the tab's "more" rows: one in sight asks for the next part
    this.fetching = false;
    this.finder = new FindBar(root, {openTreeNode: (id) => { this.treeOpen = id; this.draw(true); }});
    this.notable = new NotableTokens(() => ({state: this.state, content: this.content}));
    this.hit = null;  // the search match to mark in the Path tab (`mark`)
    this.pin = new PinnedPlace(() => ({bundle: this.bundle, state: this.state, content: this.content}),
      {go: this.go, more: (route, index, wanted) => this.more(route, index, wanted)});
    this.setupResize(grip);
  }

  setupResize(grip) {
    let saved = null;
    try {
      saved = Number(localStorage.getItem(WIDTH_KEY)) || null;
    } catch { /* no storage: default width */ }
    this.setWidth(saved || Math.min(820, Math.round(window.innerWidth * 0.55)));
    grip.addEventListener("pointerdown", (event) => {
      event.preventDefault();
      grip.setPointerCapture(event.pointerId);
      const move = (e) => this.setWidth(window.innerWidth - e.clientX);
      const up = () => {
        grip.removeEventListener("pointermove", move);
        grip.removeEventListener("pointerup", up);
        try {
          localStorage.setItem(WIDTH_KEY, String(this.width));
        } catch { /* the width lasts this page only */ }
      };
      grip.addEventListener("pointermove", move);
      grip.addEventListener("pointerup", up);
    });
  }

  setWidth(width) {
    this.width = Math.round(Math.max(420, Math.min(window.innerWidth - 200, width)));
    document.documentElement.style.setProperty("--drawer-width", `${this.width}px`);
  }

  get isOpen() {
    return !this.root.hidden;
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
    if (key !== this.key) {
      this.key = key;
      this.gone = false;
      if (this.hit?.trajectory_id !== state.traj) this.hit = null;
      this.wantFocus = !this.hit;  // a newly opened rollout takes the focus once drawn; a match leaves it in its list
      this.treeOpen = null;
      this.drawn = null;
      this.place = null;
      if (!this.cache.has(key)) replace(this.body, el("p", {className: "muted pad"}, "loading…"));
      try {
        await this.load(state.run, state.traj);
      } catch (error) {
        if (key === this.key) {
          replace(this.body, this.closeBar(state.traj),
            el("p", {className: "notice error"}, `Cannot open ${state.traj}: ${error.message}`));
        }
        return;
      }
      if (key !== this.key) return;
    }
    await this.loadFork(state);
    await this.loadTimeline(state);
    await this.loadChat(state);
    if (key === this.key) this.draw(false);
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

  /** Load a rollout into the cache; a load of the same rollout still under way is waited for, not
   *  started again (a poll during a slow first load of a huge record would double the server's work). */
  load(run, id) {
    const key = `${run}|${id}`;
    if (!this.loading.has(key)) {
      this.loading.set(key, this.fetchBundle(run, id, key).finally(() => this.loading.delete(key)));
    }
    return this.loading.get(key);
  }

  async fetchBundle(run, id, key) {
    const base = trajectoryPath(id);
    const params = {run_id: run};
    const trajectory = await get(base, params);
    let bundle = {trajectory};
    if (!trajectory.unreadable) {
      const [paths, graph, exchanges] = await Promise.all([
        get(`${base}/paths`, params), get(`${base}/graph`, params), get(`${base}/exchanges`, params)]);
      bundle = {trajectory, paths, graph, exchanges, forks: new Map()};  // forks: "a|b" -> /forks answer
    }
    this.cache.delete(key);
    this.cache.set(key, bundle);
    while (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value);
  }

  /** On the Forks tab, the comparison of its pair, fetched once per pair into the bundle. */
  async loadFork(state) {
    const bundle = this.bundle;
    const pair = state.tab === "forks" && bundle?.forks ? forkPair(bundle.paths, state) : null;
    if (!pair || pair.a === pair.b || bundle.forks.has(pair.key)) return;
    let fork;
    try {
      fork = await get(`${trajectoryPath(state.traj)}/forks`, {a: pair.a, b: pair.b, run_id: state.run});
    } catch (error) {
      fork = {error: error.message};
    }
    bundle.forks.set(pair.key, fork);
  }

  /** On the Timeline tab, its first /timeline part, fetched once into the bundle. */
  async loadTimeline(state) {
    const bundle = this.bundle;
    if (state.tab !== "timeline" || !bundle || bundle.trajectory.unreadable || bundle.timeline) return;
    try {
      bundle.timeline = await get(`${trajectoryPath(state.traj)}/timeline`, {run_id: state.run});
    } catch (error) {
      bundle.timeline = {error: error.message};
    }
  }

  /** On the Chat tab, the first /paths/{n}/chat part of the path shown, fetched once per path into the bundle. */
  async loadChat(state) {
    const bundle = this.bundle;
    if (state.tab !== "chat" || !bundle || bundle.trajectory.unreadable) return;
    const index = this.pathIndex(bundle, state);
    bundle.chat ||= new Map();  // path index -> its /chat answer, parts merged in
    if (index < 0 || bundle.chat.has(index)) return;
    try {
      bundle.chat.set(index, await get(`${trajectoryPath(state.traj)}/paths/${index}/chat`, {run_id: state.run}));
    } catch (error) {
      bundle.chat.set(index, {error: error.message});
    }
  }

  /** The path the Path and Chat tabs show: the one asked for, or the last there is (-1 for none). */
  pathIndex(bundle, state) {
    return Math.min(state.path, (bundle.paths?.paths || []).length - 1);
  }

  /** A message a /chat part left out for its size, fetched whole (`/message?node=`) into its card. */
  async loadMessage(card) {
    const key = this.key;
    try {
      const got = await get(`${trajectoryPath(this.state.traj)}/message`,
        {run_id: this.state.run, node: card.node_id});
      card.message = got.message;
      delete card.loadError;
    } catch (error) {
      card.loadError = error.message;  // said on the card; "load it" asks again
    }
    if (key === this.key) {
      this.drawn = null;
      this.draw(true);
    }
  }

  /** Select node `id` (a Timeline bar's): shown in path `path` on the Path tab, opened in the Tree. */
  select(id, path) {
    this.treeOpen = id;
    this.go({node: id, ...(path === null || path === undefined ? {} : {path})}, {replace: true});
  }

  /** Mark the selected node's blocks, rows or bars in the drawn tab; bring the first into sight
   *  when the tab was just opened. */
  markNode(scroll) {
    if (!this.state.node) return;
    const marked = this.content.querySelectorAll(`[data-node="${CSS.escape(this.state.node)}"]`);
    for (const node of marked) node.classList.add("node-selected");
    if (scroll && marked.length) marked[0].scrollIntoView({block: "center"});
  }

  get bundle() {
    return this.cache.get(this.key);
  }

  closeBar(id) {
    return el("header", {className: "drawer-head"}, el("h2", {}, id),
      button("close  esc", () => this.close(), {className: "ghost close"}));
  }

  /** Draw the header and the current tab; `keepScroll` on a poll that found a change. */
  draw(keepScroll) {
    const state = this.state;
    const bundle = this.bundle;
    if (!bundle) return;  // still loading: the show() that started the load draws when it lands
    const fork = forkPair(bundle.paths, state);
    const place = JSON.stringify([this.key, state.tab, state.tab === "timeline" ? null : state.path,
      state.fa, state.fb]);
    const drawn = JSON.stringify([place, this.gone, this.treeOpen, state.given, state.controls, state.logprobs,
      state.retok, Boolean(fork && bundle.forks?.has(fork.key)), state.node, Boolean(bundle.timeline),
      state.experts, state.badTab, Boolean(bundle.chat?.has(this.pathIndex(bundle, state)))]);
    if (this.drawn === drawn && !keepScroll) {  // only a pin may have changed (a click, Esc, Back): mark it
      this.pin.drawn();
      if (state.tab === "chat") this.placeInChat(bundle, state, false);  // a message pinned deep in: no jump
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
    this.nearEnd = new IntersectionObserver((entries) => {
      for (const entry of entries) if (entry.isIntersecting) entry.target.click();
    }, {root: this.content, rootMargin: "800px 0px"});
    if (bundle.trajectory.unreadable) {
      this.content.append(el("p", {className: "notice error"},
        `This record cannot be read: ${bundle.trajectory.error}`));
      replace(this.body, this.header(bundle), this.content);
    } else {
      this.content.setAttribute("role", "tabpanel");
      this.content.setAttribute("aria-labelledby", `drawer-tab-${state.tab}`);
      append(this.content, [retokPanel(bundle, state, this.go), this.tab(bundle, state)]);
      replace(this.body, this.header(bundle), this.tabs(bundle, state.tab), this.finder.bar(state.tab), this.content);
      if (keepScroll) this.content.scrollTop = scroll;
      restoreScrollAnchor(this.content, anchor);
      this.marked(this.content, !keepScroll);
    }
    if (this.wantFocus) {
      this.wantFocus = false;
      this.body.querySelector(".traj-id")?.focus({preventScroll: true});
    } else {
      restoreFocus(this.body, focused);
    }
  }

  header(bundle) {
    const t = bundle.trajectory;
    const head = rolloutHead(bundle, {
      rewardRange: this.rewardRange,
      actions: [
        button("copy id", (event) => copyText(t.id, event.currentTarget), {className: "ghost"}),
        t.unreadable ? null : pickButtons(t.id, this.state.run, this.go),  // nothing to compare it by
        this.snapshotLink(t),
        el("span", {className: "grow"}),
        button("close  esc", () => this.close(), {className: "ghost close", title: "close (Esc)"})],
      notes: [this.gone ? el("p", {className: "notice error gone"},
        "This record is gone from disk: what is shown is the last version read.") : null,
      this.state.badTab ? el("p", {className: "notice warn bad-tab"}, `The link asks for a tab "${this.state.badTab}"`
        + `, which there is not (tabs: ${TAB_NAMES.join(", ")}): the Path tab is shown.`) : null],
    });
    this.rewardBox = head.querySelector('[data-fact="reward"] dd');
    return head;
  }

  /** The rollout as one HTML file that opens offline (`/snapshot`), on the path and tab shown (the
   *  Path's, for a tab the file does not have). */
  snapshotLink(t) {
    if (t.unreadable || bundleFacts()) return null;  // a bundle's page has no server to write the file
    const tab = snapshotTabs().includes(this.state.tab) ? this.state.tab : "path";
    return el("a", {className: "button ghost snapshot-link", download: true, dataset: {link: "snapshot"},
      title: "download this rollout as one HTML file that opens on any machine, offline",
      href: apiUrl(`${trajectoryPath(t.id)}/snapshot`, {run_id: this.state.run, path: this.state.path, tab}),
    }, "snapshot");
  }

  tabs(bundle, active) {
    return tabBar(TAB_NAMES, active, tabLabels(bundle), (tab) => {
      this.focusTab = true;
      this.go({tab}, {replace: true});
    }, {prefix: "drawer-tab", panel: "drawer-panel", numbered: true});
  }

  tab(bundle, state) {
    const more = (route, index) => this.more(route, index);
    const context = {go: this.go, lazy: this.lazy, more, notable: this.notable, pin: this.pin};
    if (state.tab === "tree") {
      const setOpen = (id) => {
        this.treeOpen = id;
        this.draw(true);
      };
      return renderTree(bundle, {openNode: this.treeOpen, setOpen, more, go: this.go});
    }
    if (state.tab === "forks") return renderForks(bundle, state, context);
    if (state.tab === "calls") return renderCalls(bundle, more);
    if (state.tab === "timeline") {
      return renderTimeline(bundle, state,
        {go: this.go, select: (id, path) => this.select(id, path), more: () => more("timeline")});
    }
    if (state.tab === "json") return renderJson(bundle);
    if (state.tab === "chat") {
      const index = this.pathIndex(bundle, state);
      if (index < 0) return el("p", {className: "notice"}, "This trajectory has no path to show.");
      return renderChat(bundle.chat?.get(index), state, {go: this.go, more: () => more("chat", index),
        message: (card) => this.loadMessage(card), root: this.content, pinned: () => this.state.msg});
    }
    return renderPath(bundle, state, context);
  }

  /** In the Chat tab, the card the link or the reader points at: the pinned message (`msg`), else the
   *  card of the pinned block (`blk`), the search match's or the selected node's; it is drawn and
   *  unfolded (a part still to come is fetched first), marked, and scrolled to when the tab was just
   *  opened. */
  placeInChat(bundle, state, scroll) {
    const index = this.pathIndex(bundle, state);
    const answer = bundle.chat?.get(index);
    if (!answer?.cards) return;
    for (const card of this.content.querySelectorAll(".chat-card.pinned")) card.classList.remove("pinned");
    const path = bundle.paths.paths[index];
    const block = state.blk === "" ? null : path?.blocks?.[state.blk];
    const node = state.node || block?.node_id || (this.hit?.trajectory_id === state.traj ? this.hit.node_id : "");
    const pinned = state.msg !== "";
    const found = pinned ? answer.cards.find((card) => card.position === state.msg)
      : node ? answer.cards.find((card) => card.node_id === node) : null;
    if (!found) {  // fetched on only when what is wanted is on this path, in a part still to come
      const later = pinned ? state.msg < (answer.part?.total ?? 0) : (path?.node_ids || []).includes(node);
      if (later && answer.part?.next !== undefined) {
        this.more("chat", index, () => !answer.cards.some((card) => (pinned ? card.position === state.msg
          : card.node_id === node)));
      }
      return;
    }
    const element = this.content.querySelector(`.chat-card[data-position="${found.position}"]`);
    if (!element) return;
    const shared = element.closest("details.chat-shared");
    if (shared) shared.open = true;
    drawBody(element);
    element.classList.add(pinned || (!state.node && block) ? "pinned" : "node-selected");
    if (this.hit?.node_id === found.node_id) element.classList.add("search-hit");
    if (scroll) holdInView(this.content, element, () => 0);  // kept there while the cards above take their height
  }

  /** `m` / `M`: the next / previous model turn of the Chat tab, from the one a step reached (it has
   *  the focus), else from the one at the top of the tab. */
  stepTurn(by) {
    if (!this.isOpen || this.state?.tab !== "chat" || !this.content) return;
    const turns = [...this.content.querySelectorAll(".chat-card.by-model")].filter((card) => card.offsetParent);
    if (!turns.length) return;
    const focused = turns.indexOf(document.activeElement?.closest(".chat-card"));
    const top = this.content.getBoundingClientRect().top;
    const above = turns.filter((card) => card.getBoundingClientRect().top <= top + 4).length - 1;  // the one at the top
    const aligned = above >= 0 && turns[above].getBoundingClientRect().top >= top - 4;
    const to = focused >= 0 ? focused + by : by > 0 ? above + 1 : aligned ? above - 1 : above;
    const next = turns[Math.max(0, Math.min(turns.length - 1, to))];
    drawBody(next);
    next.scrollIntoView({block: "start"});
    next.querySelector(".node-link")?.focus({preventScroll: true});
  }

  /** Mark a search match (`/v1/search` hit) in the Path tab when its rollout is drawn. */
  mark(hit) {
    this.hit = {...hit};
    this.drawn = null;  // the same rollout is drawn again, marked
  }

  /** Mark the match in the drawn Path tab: first move to the path holding its node, show the given
   *  blocks or fetch the next part when that is what hides it; scroll to it the first time. Once
   *  placed, a path or option the reader picks is theirs: later draws only mark what is shown. */
  showHit() {
    const hit = this.hit;
    const paths = this.bundle.paths;
    const place = locate(paths, hit, Math.min(this.state.path, (paths.paths || []).length - 1));
    if (!place || (place.more !== undefined && hit.placed)) return;
    if (!hit.placed) {
      if (place.more !== undefined) {
        this.more("paths", place.more);
        return;
      }
      const patch = {};
      if (place.index !== this.state.path) patch.path = place.index;
      if (!this.state.given && place.blocks.every((block) => block.kind === "given")) patch.given = true;
      if (Object.keys(patch).length) {
        this.go(patch, {replace: true});
        return;
      }
      hit.placed = true;
    }
    const target = markHit(this.content, place, hit.node_id, paths.nodes[hit.node_id], this.state.controls);
    if (!target || hit.shown) return;
    hit.shown = true;
    target.scrollIntoView({block: "center"});
    // again once the blocks above have their real height
    requestAnimationFrame(() => target.scrollIntoView({block: "center"}));
  }

  /** Fetch the next part of the open rollout's `route` answer (path `index`'s of /paths) into its
   *  bundle, and the parts after it while `wanted()` says what is sought is still not there (a pinned
   *  token: one draw at the end, not one per part); then draw again where the reader is. One at a
   *  time: a "more" row seen twice asks once. */
  async more(route, index, wanted = () => false) {
    const bundle = this.bundle;
    const key = this.key;
    if (!bundle?.[route] || this.fetching) return;
    this.fetching = true;
    try {
      do {
        await fetchNext(trajectoryPath(this.state.traj), {run_id: this.state.run}, route, bundle[route], index);
      } while (key === this.key && partOf(route, bundle[route], index)?.next !== undefined && wanted());
    } catch {
      return;  // the row stays: a click asks again
    } finally {
      this.fetching = false;
    }
    // Draw even if a poll's reload replaced the bundle meanwhile: a search match waiting for a later
    // part asks again from the bundle now shown (its ask was refused while this one was fetching).
    if (key === this.key && !this.extendTab(route, index)) this.draw(true);
  }

  /** The tab shown gets the part of `route` just fetched for path `index` after what it drew (the Path
   *  tab its blocks, the Chat tab its cards), and is marked as a draw marks it: a 30k-node path drew
   *  105k blocks in six parts when each part drew them all again. False when it must be drawn whole. */
  extendTab(route, index) {
    const {state, bundle, content} = this;
    const shown = state.tab === "chat" && route === "chat" ? content?.querySelector(".chat-tab")
      : state.tab === "path" && route === "paths" ? content?.querySelector(".path-tab") : null;
    if (!shown || this.pathIndex(bundle, state) !== index) return false;
    if (!(route === "chat" ? drawLaterPart(shown, bundle.chat?.get(index)) : extendPath(shown, bundle))) return false;
    this.marked(shown, false);
    return true;
  }

  /** Mark on the tab just drawn (or extended: `root`, what is new) what a draw marks: the find bar's
   *  hits, the search match, the Chat tab's card, the selected node and the pin; its "more" rows are
   *  watched. `scroll`: the tab was just opened, so they are scrolled to. */
  marked(root, scroll) {
    const {state, bundle} = this;
    this.finder.drawn(this.content, bundle, state);
    if (this.hit && state.tab === "path") this.showHit();
    if (state.tab === "chat") this.placeInChat(bundle, state, scroll);
    this.markNode(scroll);
    this.pin.drawn();
    for (const row of root.querySelectorAll("button.more:not(.manual)")) this.nearEnd.observe(row);
  }

  /** Re-read the open rollout; reload and redraw it only if the record changed. */
  async poll() {
    if (!this.isOpen || !this.key) return;
    const key = this.key;
    if (!this.bundle) {  // it could not be read last time (e.g. rewritten while read): try again
      try {
        await this.load(this.state.run, this.state.traj);
      } catch {
        return;
      }
      await this.loadFork(this.state);
      await this.loadTimeline(this.state);
      await this.loadChat(this.state);
      if (key === this.key) this.draw(false);
      return;
    }
    const old = this.bundle.trajectory;
    const [run, id] = [this.state.run, this.state.traj];
    let fresh;
    try {
      fresh = await get(trajectoryPath(id), {run_id: run});
    } catch (error) {
      if (error.status === 404 && key === this.key) this.markGone(true);
      return;
    }
    if (key === this.key) this.markGone(false);
    const signature = (t) => JSON.stringify([t.revision, t.status, t.capture?.node_count, t.capture?.exchange_count]);
    if (key !== this.key || signature(fresh) === signature(old)) return;
    await this.load(run, id);
    await this.loadFork(this.state);
    await this.loadTimeline(this.state);
    await this.loadChat(this.state);
    if (key === this.key) this.draw(true);
  }

  /** The record vanished from disk (404 on a poll), or came back: say so instead of staying stale. */
  markGone(gone) {
    if (Boolean(this.gone) === gone) return;
    this.gone = gone;
    this.draw(true);
  }

  /** `f` opens the find bar (Path, Tree and Forks tabs). */
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
