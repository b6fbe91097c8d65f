// One run: its header, the Groups/Rollouts/Timeline toggle, the health band, the filters, the record text
// search, the pager and the table. Everything shown comes from the state in the URL; the listing is re-read
// when that state changes and polled (with its ETag) so new records appear in place.

import {apiUrl, bundleFacts, get} from "./api.js";
import {band} from "./run-band.js";
import {bundleNotice, NEEDS_SERVER, unanswerable} from "./bundle-limits.js";
import {el, focusKey, replace, restoreFocus, select} from "./dom.js";
import {num, plural} from "./format.js";
import {GroupsTable} from "./run-groups.js";
import {rewardLegend} from "./reward.js";
import {rolloutsTable} from "./run-rollouts.js";
import {StepTimeline} from "./step-timeline.js";
import {FilterBar} from "./run-filters.js";
import {compareForm} from "./runs-compare.js";
import {RecordSearch} from "./search.js";
import {emptyState, filterParams, format, hasFilters, hasFlags, rolloutParams} from "./route.js";
import {kindLegend} from "./strip.js";
import {Lineups} from "./lineup.js";
import {markPicks, pickBar} from "./pair-picks.js";
import {MissingRows, runIndexFact} from "./run-missing.js";
import {flagInfo} from "./viewer.js";

const LIMIT = 100;

export function defaultView(run) {
  return run?.default_view || (run?.groupable ? "groups" : "rollouts");
}

/** "sidecars verified 12/30" while the server has not yet read every record's sidecars (its
 *  flags may still grow), else null. */
/** "82 groups of 4", or "82 groups of 2–5 rollouts, most of 4" when their sizes vary (the server's). */
function groupsFact(run) {
  const groups = plural(run.group_count ?? 0, "group");
  const [least, most] = run.group_sizes || [];
  if (least !== undefined && least !== null && least !== most) {
    return `${groups} of ${least}–${most} rollouts${run.modal_group_size ? `, most of ${run.modal_group_size}` : ""}`;
  }
  return `${groups}${run.modal_group_size ? ` of ${run.modal_group_size}` : ""}`;
}

function verifying(run) {
  const done = run.sidecars_verified;
  const total = run.trajectory_count;
  if (done === undefined || done === null || total === undefined || done >= total) return null;
  return `sidecars verified ${num(done)}/${num(total)}`;
}

/** "3 re-tokenized copies in 2 rollouts" (the index's count, `/v1/runs` `retokenized`) as a chip that
 *  requires (or lets go of) the `re-tokenized` flag, as the band's chip does; null for a run without one. */
function copiesChip(run, required, go) {
  const counted = run.retokenized;
  if (!counted?.copies) return null;
  const on = required.includes("re-tokenized");
  return el("button", {type: "button",
    className: `chip level-${flagInfo("re-tokenized").level} retok-chip${on ? " active required" : ""}`,
    dataset: {flag: "re-tokenized"}, "aria-pressed": on ? "true" : "false",
    title: `${flagInfo("re-tokenized").why}. Click to ${on ? "let go of the filter" : "list those rollouts"}.`,
    onclick: () => go({flag: on ? required.filter((name) => name !== "re-tokenized") : [...required, "re-tokenized"],
      page: 1})},
  `${plural(counted.copies, "re-tokenized copy", "re-tokenized copies")} in ${plural(counted.rollouts, "rollout")}`);
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
    const run = this.run || {id: this.state.run};
    const steps = run.steps || [];
    const facts = [
      run.indexing
        ? `indexing ${num(run.indexed ?? 0)}/${num(run.trajectory_count ?? 0)}…`
        : plural(run.trajectory_count ?? 0, "trajectory", "trajectories"),
      run.groupable ? groupsFact(run) : null,
      run.task_count ? plural(run.task_count, "task") : null,
      steps.length ? (steps.length > 1 ? `steps ${steps[0]}..${steps[steps.length - 1]}` : `step ${steps[0]}`) : null,
      run.created_at ? String(run.created_at).replace("T", " ").slice(0, 19) : null,
      run.upstream?.model ? `tokenizer ${run.upstream.model}` : null,  // the original viewer's field name
      run.unreadable ? `${run.unreadable} unreadable` : null,
      runIndexFact(run),
      verifying(run),
    ].filter(Boolean);
    replace(this.headBox,
      el("h1", {}, run.id, run.project ? el("span", {className: "project muted"}, ` · ${run.project}`) : null),
      el("p", {className: "facts"}, facts.join(" · "),
        unanswerable(copiesChip(run, this.state.flag, this.go), "listing them", ".active")),
      run.source ? el("p", {className: "path muted small", title: `a local copy of the store, at ${run.path}`},
        `read from ${run.source.url}`) : run.path ? el("p", {className: "path muted small", title: "record directory"},
        run.path) : null,
      run.source?.problem ? el("p", {className: "notice warn source-problem"},
        `The store could not be read the last time: ${run.source.problem}. The rows shown are the copy fetched `
        + "before; the viewer keeps trying.") : null);
    if (!this.run) this.headBox.append(el("p", {className: "notice warn"}, `No run named ${this.state.run} (yet).`));
    const notice = bundleNotice();
    if (notice) this.headBox.append(notice);
    this.headBox.prepend(select(this.runs().map((r) => [r.id, `${r.project ? `${r.project} / ` : ""}${r.id}`]), run.id,
      (id) => this.go({...emptyState(), run: id}), {className: "run-switch", "aria-label": "run"}));
    this.drawCompareForm();
    const view = this.view();
    const stepped = run.steps?.length ? ["timeline"] : [];
    const views = run.groupable ? ["groups", "rollouts", ...stepped] : stepped.length ? ["rollouts", ...stepped] : [];
    replace(this.toggleBox, views.map((name) => el("button", {
      type: "button", role: "tab", className: `toggle${view === name ? " active" : ""}`, dataset: {view: name},
      "aria-selected": view === name ? "true" : "false",
      onclick: () => view !== name && this.go({view: name, sort: "", order: "", open: [], flag: [], xflag: [],
        ungrouped: false, page: 1}),
    }, {groups: `groups ${num(run.group_count ?? 0)}`, rollouts: `rollouts ${num(run.trajectory_count ?? 0)}`,
      timeline: "timeline of a step"}[name])));
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
    const ungrouped = view === "rollouts" && state.ungrouped;
    const range = state.rmin || state.rmax ? `reward ${state.rmin || "…"} to ${state.rmax || "…"}` : null;
    const scope = [state.step && `step ${state.step}`, state.task && `task ${state.task}`, state.status,
      ...state.ann, state.q && `"${state.q}"`, range, ungrouped && "no group key"].filter(Boolean).join(" · ")
      || "across the run";
    const byGroups = (listing.health?.unit || unit) === "groups";
    this.bandTitle.textContent = `record health · ${byGroups ? "groups" : "rollouts"}`
      + ` · ${scope}`;
    this.bandTitle.title = byGroups  // how a chip counts: said when asked, not in the title
      ? "A chip counts groups, each once per flag it or a matching rollout carries, and each rollout with no"
        + " group key once per flag."
      : `A chip counts ${ungrouped ? "rollouts with no group key" : "rollouts"}, each once per flag.`;
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
      view === "groups" ? this.ungroupedNotice(listing) : this.missing.show(this.run, state.step));
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

  /** Downloads of every rollout the current filters keep (`/trajectories/export`, JSON lines), in the
   *  Rollouts view's order; with their trainer rows (`format=rows`) or without. */
  exportLinks() {
    if (bundleFacts()) return el("span", {className: "export-links muted small"}, ` · export ${NEEDS_SERVER}`);
    const state = this.state;
    // the groups' sort is theirs
    const sorted = this.view() === "rollouts" ? {sort: state.sort, order: state.order} : {};
    const params = {...this.listParams(state), ...sorted};
    const link = (format, label, title) => el("a", {className: "export-link", download: true, title,
      dataset: {link: `export-${format}`}, href: apiUrl("/trajectories/export", {...params, format})}, label);
    return el("span", {className: "export-links muted small"}, " · export ",
      link("rollouts", "rollouts", "download every rollout these filters keep, one listing row a line (JSON lines)"),
      " · ",
      link("rows", "with trainer rows", "the same, each with its paths' input_ids, loss_mask and logprobs"));
  }

  /** Rollouts no group holds are not hidden: say how many and link to them (the filters kept). */
  ungroupedNotice(listing) {
    const count = listing.ungrouped || 0;
    if (count <= 0) return null;
    const patch = {view: "rollouts", ungrouped: true, open: [], sort: "", order: "", page: 1};
    const keys = (listing.group_by || []).join(", ");
    return el("p", {className: "notice info ungrouped-notice"},
      `${plural(count, "rollout")} ${count === 1 ? "has" : "have"} no group key${keys ? ` (${keys})` : ""}: `,
      el("a", {href: format({...this.state, ...patch}), dataset: {link: "ungrouped"},
        onclick: (event) => { event.preventDefault(); this.go(patch); }}, count === 1 ? "list it" : "list them"));
  }

  drawPager() {
    const listing = this.listing;
    const page = this.state.page;
    const first = (page - 1) * LIMIT;
    const shown = listing.data.length;
    replace(this.pagerBox,
      el("button", {type: "button", className: "ghost", disabled: page <= 1, dataset: {page: "prev"},
        onclick: () => this.go({page: page - 1})}, "‹ prev"),
      el("span", {className: "pager-text"}, shown
        ? `${num(first + 1)}–${num(first + shown)} of ${num(listing.total ?? shown)}`
        : `0 of ${num(listing.total ?? 0)}`),
      el("button", {type: "button", className: "ghost", disabled: !listing.has_more, dataset: {page: "next"},
        onclick: () => this.go({page: page + 1})}, "next ›"));
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
