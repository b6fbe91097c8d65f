// One run: its header and Groups/Rollouts/Timeline toggle (run-head.js), the health band, the filters, the
// record text search, the pager and the table. Everything shown comes from the state in the URL; the listing
// is re-read when that state changes and polled (with its ETag) so new records appear in place.

import {get} from "./api.js";
import {band, bandTitle} from "../draw/run-band.js";
import {unanswerable} from "./bundle-limits.js";
import {el, focusKey, replace, restoreFocus} from "../draw/dom.js";
import {num} from "../draw/format.js";
import {GroupsTable, ungroupedNotice} from "./run-groups.js";
import {rewardLegend} from "../draw/reward.js";
import {exportLinks} from "./run-export.js";
import {drawRunHead, viewToggle} from "./run-head.js";
import {rolloutsTable} from "../draw/run-rollouts.js";
import {pager} from "../draw/run-table.js";
import {StepTimeline} from "./step-timeline.js";
import {FilterBar} from "./run-filters.js";
import {compareForm} from "./runs-compare.js";
import {RecordSearch} from "./search.js";
import {filterParams, format, hasFilters, hasFlags, rolloutParams} from "../draw/route.js";
import {kindLegend} from "../draw/strip.js";
import {Lineups} from "./lineup.js";
import {markPicks, pickBar} from "../draw/pair-picks.js";
import {MissingRows} from "./run-missing.js";

const LIMIT = 100;

export function defaultView(run) {
  return run?.default_view || (run?.groupable ? "groups" : "rollouts");
}

export class RunPage {
  constructor(main, {go, open, openMatch, runs}) {
    this.main = main;
    this.runs = runs;
    this.go = go;
    this.open = open;
    this.runId = null;
    this.lineups = new Lineups({go});
    this.groups = new GroupsTable({
      tools: (key, range) => this.lineups.panel(this.state, key, range),
      onToggle: (key) => this.toggleGroup(key),
      onOpen: (id) => this.open(id),
      onSort: (key, order) => this.sort(key, order),
    });
    this.search = new RecordSearch({go, onOpen: openMatch});
    this.missing = new MissingRows();
    this.stepTimeline = new StepTimeline({go});
  }

  /** Draw `state` for `run` (the /runs entry, maybe still indexing). */
  async show(state, run) {
    this.state = state;
    this.run = run;
    // a new run, or back from the pair view
    if (this.runId !== state.run || !this.headBox.isConnected) this.build(state.run);
    const focused = focusKey(this.main);
    this.drawHead();
    this.drawFilters();
    restoreFocus(this.main, focused);
    this.search.show(state);
    replace(this.pickBox, unanswerable(pickBar(state, this.go), "comparing rollouts", ".ghost"));
    const key = JSON.stringify([state.run, this.view(), this.listParams(state), state.sort, state.order, state.page]);
    if (key !== this.listingKey) {
      this.listingKey = key;
      this.pagerBox.textContent = "loading…";
      await this.fetchListing(false);
    } else if (this.listing) {
      this.drawListing();
    }
  }

  view() {
    return this.state.view || defaultView(this.run);
  }

  /** The listing's filters: the Rollouts view also takes the "no group key" filter. */
  listParams(state) {
    return this.view() === "rollouts" ? rolloutParams(state) : filterParams(state);
  }

  build(runId) {
    this.runId = runId;
    this.listing = null;
    this.listingKey = null;
    this.groups.reset();
    this.cursors = new Map([[1, null]]);
    this.filterBar = new FilterBar((patch) => this.filter(patch));
    this.filterBar.setRun(runId);
    this.headBox = el("header", {className: "run-head"});
    this.toggleBox = el("div", {className: "view-toggle", role: "tablist", "aria-label": "view"});
    this.bandTitle = el("p", {className: "band-title muted small"});
    this.bandBox = el("div", {className: "band-box"});
    this.filterBox = el("div", {className: "filters", role: "search"});
    this.pickBox = el("div", {className: "pick-box"});
    this.compareBox = el("div", {className: "compare-launch"});
    this.compareRuns = null;
    this.titleBox = el("h2", {className: "section-title"});
    this.legendBox = el("div", {className: "legends"});
    this.noticeBox = el("div", {className: "listing-notices"});
    this.pagerBox = el("div", {className: "pager"});
    this.tableBox = el("div", {className: "table-box"});
    replace(this.main, this.headBox, this.compareBox, this.toggleBox, this.bandTitle, this.bandBox, this.filterBox,
      this.search.node, this.pickBox, this.titleBox, this.legendBox, this.noticeBox, this.tableBox, this.pagerBox);
  }

  drawHead() {
    drawRunHead(this.headBox, this.run, this.state, {runs: this.runs, go: this.go});
    this.drawCompareForm();
    replace(this.toggleBox, viewToggle(this.run || {id: this.state.run}, this.view(), this.go));
  }

  /** The "compare with run…" form, drawn again only when the runs change (it keeps what is typed). */
  drawCompareForm() {
    const ids = JSON.stringify(this.runs().map((run) => run.id));
    if (ids === this.compareRuns) return;
    this.compareRuns = ids;
    replace(this.compareBox, unanswerable(compareForm(this.state, this.runs(), this.go), "comparing runs"));
  }

  /** Another view took the main area: build the page again when it is shown next. */
  forget() {
    this.runId = null;
    this.listingKey = null;
    this.listing = null;
  }

  drawFilters() {
    const run = this.run || {};
    const state = this.state;
    const signature = JSON.stringify([run.id, run.steps, run.step_counts, run.statuses, state.step, state.task,
      state.status, state.ann, state.q, state.rmin, state.rmax, state.flag, state.xflag, state.ungrouped, this.view()]);
    if (signature === this.filterSignature) return;
    this.filterSignature = signature;
    replace(this.filterBox, this.filterBar.draw(state, run, this.view()));
    unanswerable(this.filterBox, "filtering again", ".filter-chip, [data-filter=clear]");
  }

  filter(patch) {
    this.go({...patch, page: 1});
  }

  sort(key, order) {
    this.go({sort: key, order, page: 1});
  }

  toggleGroup(key) {
    const open = this.state.open.includes(key) ? this.state.open.filter((k) => k !== key) : [...this.state.open, key];
    this.go({open}, {replace: true});
  }

  async fetchListing(poll) {
    const state = this.state;
    const key = this.listingKey;
    const params = this.view() === "timeline" ? {...this.listParams(state), limit: 1}  // its band and counts
      : {...this.listParams(state), sort: state.sort, order: state.order, limit: LIMIT,
        cursor: this.cursors.get(state.page) ?? (state.page > 1 ? String((state.page - 1) * LIMIT) : null)};
    const route = this.view() === "groups" ? "/groups" : "/trajectories";
    try {
      const {body, changed} = await get(route, params, {poll: true});
      if (key !== this.listingKey) return;  // the view moved on while we waited
      if (body.next_cursor) this.cursors.set(state.page + 1, body.next_cursor);
      if (!changed && this.listing && poll) return;
      this.listing = body;
      this.drawListing();
    } catch (error) {
      if (key !== this.listingKey) return;
      this.listing = null;
      replace(this.tableBox, el("p", {className: "notice error"}, `Cannot list this run: ${error.message}`));
      this.pagerBox.textContent = "";
    }
  }

  drawListing() {
    const focused = focusKey(this.main);  // a chip, sort header or pager button keeps the focus
    this.drawListingParts();
    restoreFocus(this.main, focused);
  }

  drawListingParts() {
    const state = this.state;
    const listing = this.listing;
    const view = this.view();
    const unit = {groups: "groups", timeline: "lanes"}[view] || "rollouts";
    bandTitle(this.bandTitle, listing.health?.unit || unit, state, view);
    const chips = band(listing.health, state.flag, state.xflag, (patch) => this.go({...patch, page: 1}));
    replace(this.bandBox, unanswerable(chips, "requiring or excluding a flag", ".active"));
    const flagged = [...state.flag, ...state.xflag.map((flag) => `not ${flag}`)].join(", ");
    replace(this.titleBox, unit, flagged ? ` · flagged ${flagged}` : "",
      view === "groups" && (hasFilters(state) || hasFlags(state)) ? el("span", {className: "muted small"},
        " · matching rollouts emphasised when expanded") : "", this.exportLinks());
    if (view === "timeline") {
      replace(this.legendBox);
      replace(this.noticeBox);
      replace(this.pagerBox);
      this.stepTimeline.show(state, this.run, this.tableBox, filterParams(state));
      return;
    }
    replace(this.legendBox, rewardLegend(listing.reward_range), view === "rollouts" ? kindLegend() : null);
    replace(this.noticeBox,
      view === "groups" ? ungroupedNotice(listing, state, this.go) : this.missing.show(this.run, state.step));
    const sort = {key: state.sort || listing.sort?.key, order: state.order || listing.sort?.order};
    const table = view === "groups"
      ? this.groups.render(listing, state, state.traj)
      : rolloutsTable(listing, sort, {onSort: (k, o) => this.sort(k, o), onOpen: (id) => this.open(id),
        openId: state.traj, indexed: Boolean(this.run?.run_index)});
    const current = this.tableBox.querySelector("tr.current");
    const currentKey = current && (current.dataset.traj || current.dataset.key);
    const pages = Math.max(1, Math.ceil((listing.total ?? 0) / LIMIT));
    if (!listing.data.length && state.page > pages) {
      replace(this.tableBox, el("p", {className: "notice warn past-last"},
        `page ${num(state.page)} is past the last page (${num(pages)}): `,
        el("a", {href: format({...state, page: pages}), dataset: {link: "last-page"},
          onclick: (event) => { event.preventDefault(); this.go({page: pages}); }}, `go to page ${num(pages)}`)));
      this.drawPager();
      return;
    }
    replace(this.tableBox, table);
    if (currentKey) {
      const again = [...table.querySelectorAll("tr.nav")]
        .find((row) => (row.dataset.traj || row.dataset.key) === currentKey);
      again?.classList.add("current");
    }
    this.drawPager();
  }

  /** Downloads of every rollout the current filters keep, in the Rollouts view's order (the groups' sort
   *  is theirs). */
  exportLinks() {
    const state = this.state;
    const sorted = this.view() === "rollouts" ? {sort: state.sort, order: state.order} : {};
    return exportLinks({...this.listParams(state), ...sorted});
  }

  drawPager() {
    replace(this.pagerBox, pager(this.listing, this.state.page, LIMIT, this.go));
  }

  /** Re-read the listing and the open groups; redraw only what changed. */
  async poll() {
    if (!this.listingKey) return;
    await this.fetchListing(true);
    if (this.view() === "groups" && this.listing) await this.groups.poll();
    if (this.view() === "timeline") await this.stepTimeline.poll();
  }

  /** Focus the row of rollout `id` (the drawer closed) and make it the current row for j / k. */
  focusRow(id) {
    const row = id && this.tableBox.querySelector(`tr[data-traj="${CSS.escape(id)}"]`);
    if (!row) return;
    for (const other of this.main.querySelectorAll("tr.nav.current")) other.classList.remove("current");
    row.classList.add("current");
    row.focus({preventScroll: true});
  }

  markPicks(state) {
    markPicks(this.tableBox, state);
  }

  markOpen(id) {
    for (const row of this.tableBox.querySelectorAll("tr.open")) row.classList.remove("open");
    if (id) this.tableBox.querySelector(`tr[data-traj="${CSS.escape(id)}"]`)?.classList.add("open");
  }
}
