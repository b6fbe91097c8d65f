// The run page's Groups table: one row per prompt per step (a GRPO group). A group row expands in
// place into its rollouts, several at a time; superseded attempts sit greyed under the attempt
// that counts. Expanded groups are fetched once per filter/sort and re-read on every poll.

import {get} from "./api.js";
import {el} from "../draw/dom.js";
import {cutText, fitId, num, plural, range as span} from "../draw/format.js";
import {recordedReward, rewardCell, rewardDot} from "../draw/reward.js";
import {emptyState, filterParams, format} from "../draw/route.js";
import {flagsCell, matchClass, sortHeader, statusBadge} from "../draw/run-table.js";
import {flagBadge, flagInfo, rowFlags} from "../draw/viewer.js";

const COLUMNS = 6;

export class GroupsTable {
  /** `tools(key, rewardRange)`: what an expanded group shows above its rollouts (the line-up), or null. */
  constructor({onToggle, onOpen, onSort, tools}) {
    this.tools = tools;
    this.onToggle = onToggle;
    this.onOpen = onOpen;
    this.onSort = onSort;
    this.details = new Map();  // group key -> {params, body, error}
    this.tbodies = new Map();
  }

  /** Forget what was loaded for another run (group keys repeat across runs). */
  reset() {
    this.details.clear();
    this.tbodies.clear();
  }

  params(state) {
    return {...filterParams(state), sort: state.sort, order: state.order};
  }

  /** The whole table for a listing; open groups draw from what is already loaded. */
  render(listing, state, openId) {
    this.listing = listing;
    this.state = state;
    this.openId = openId;
    const sort = {key: state.sort || listing.sort?.key, order: state.order || listing.sort?.order};
    const head = el("tr", {},
      sortHeader("step", "step", sort, this.onSort, "num"),
      sortHeader("task / rollout", "task", sort, this.onSort),
      sortHeader("rewards", "reward", sort, this.onSort),
      sortHeader("turns", "turns", sort, this.onSort, "num"),
      sortHeader("tokens", "tokens", sort, this.onSort, "num"),
      sortHeader("health", "health", sort, this.onSort));
    const table = el("table", {className: "rows groups"}, el("thead", {}, head));
    this.tbodies = new Map();
    for (const group of listing.data) {
      const tbody = this.groupBody(group);
      this.tbodies.set(group.key, tbody);
      table.append(tbody);
    }
    if (!listing.data.length) {
      table.append(el("tbody", {}, el("tr", {className: "empty"}, el("td", {colSpan: COLUMNS}, "No groups match."))));
    }
    this.load(state.open.filter((key) => this.tbodies.has(key)));
    return table;
  }

  groupBody(group) {
    const open = this.state.open.includes(group.key);
    const range = this.listing.reward_range;
    const short = group.modal_n && group.n < group.modal_n;
    const row = el("tr", {className: `nav group-row${open ? " expanded" : ""}`, tabindex: "-1",
      dataset: {key: group.key}, "aria-expanded": open ? "true" : "false",
      onclick: () => this.onToggle(group.key)},
    el("td", {className: "num"}, num(group.step)),
    el("td", {className: "task"}, el("span", {className: "caret"}, open ? "▾" : "▸"), " ",
      el("span", {title: group.key}, group.task_id ?? group.key),
      short ? el("span", {className: "muted", title: "rollouts in this group / the run's usual group size"},
        ` · ${group.n} of ${group.modal_n}`) : null,
      group.superseded_count ? el("span", {className: "muted small"}, ` · ${group.superseded_count} retried`) : null),
    el("td", {}, el("span", {className: "dots"}, (group.rewards || []).map((r) => rewardDot(r.reward, r.value, range,
      `rep ${r.repetition_id ?? "-"} · attempt ${r.attempt ?? "-"} · reward ${recordedReward(r.reward)}`
        + ` · stop ${r.stop_reason ?? "-"}`)))),
    el("td", {className: "num"}, span(group.turns)),
    el("td", {className: "num"}, span(group.tokens)),
    el("td", {className: "flags"}, (group.flags || []).map((name) => flagBadge(name)), rollup(group.rollup)));
    const tbody = el("tbody", {className: "group", dataset: {key: group.key}}, row);
    if (open) tbody.append(...this.expansion(group.key));
    return tbody;
  }

  /** An expanded group's rows under its own: its tools, then its rollouts. */
  expansion(key) {
    const tools = this.tools?.(key, this.listing.reward_range);
    const row = tools && el("tr", {className: "sub group-tools"}, el("td", {colSpan: COLUMNS}, tools));
    return [row, ...this.memberRows(key)].filter(Boolean);
  }

  memberRows(key) {
    const detail = this.details.get(key);
    if (!detail) return [el("tr", {className: "sub loading"}, el("td", {colSpan: COLUMNS}, "loading…"))];
    if (detail.error) return [el("tr", {className: "sub error"}, el("td", {colSpan: COLUMNS}, detail.error))];
    const rows = [];
    const superseded = detail.body.superseded || [];
    const counting = detail.body.rollouts || [];
    for (const rollout of counting) {
      rows.push(this.memberRow(rollout, false));
      for (const old of superseded.filter((row) => row.superseded_by === rollout.id)) {
        rows.push(this.memberRow(old, true));
      }
    }
    // superseded by an attempt not in this copy (the run index says so): under the group, after the rest
    const ids = new Set(counting.map((rollout) => rollout.id));
    for (const old of superseded.filter((row) => !ids.has(row.superseded_by))) rows.push(this.memberRow(old, true));
    if (!rows.length) rows.push(el("tr", {className: "sub empty"}, el("td", {colSpan: COLUMNS}, "No rollouts.")));
    return [...rows, everyStepAction(this.state.run, this.listing.data.find((group) => group.key === key))]
      .filter(Boolean);
  }

  memberRow(row, superseded) {
    const range = this.listing.reward_range;
    const attempt = row.meta?.attempt;
    const label = `rep ${row.repetition_id ?? "-"}${attempt !== undefined ? ` · a${cutText(attempt) ?? attempt}` : ""}`;
    return el("tr", {className: `nav sub rollout-row${superseded ? " superseded" : ""}${matchClass(row)}`
        + `${row.id === this.openId ? " open" : ""}`,
      tabindex: "-1", dataset: {traj: row.id},
      title: superseded ? `superseded by ${row.superseded_by
        ?? "a later attempt, not in this copy (the run index says)"}: this attempt does not count` : row.id,
      onclick: (event) => { event.stopPropagation(); this.onOpen(row.id); }},
    el("td", {className: "num"}, num(row.step)),
    el("td", {className: "member"}, superseded ? "↳ " : "", label, " ",
      el("span", {className: "muted", title: row.id}, fitId(row.id)),
      row.status !== "finished" ? [" ", statusBadge(row)] : null),
    el("td", {}, rewardCell(row.annotations?.reward, row.reward_value, range)),
    el("td", {className: "num"}, num(row.capture?.exchange_count)),
    el("td", {className: "num"}, num(row.summary?.tokens)),
    flagsCell(row.summary?.flags));
  }

  /** Fetch the details of `keys` (all open groups on a poll) and redraw their rows. */
  async load(keys, {poll = false} = {}) {
    const params = this.params(this.state);
    const signature = JSON.stringify(params);
    await Promise.all(keys.map(async (key) => {
      const known = this.details.get(key);
      if (!poll && known && known.params === signature) return;
      try {
        const {body, changed} = await get(`/groups/${encodeURIComponent(key)}`, params, {poll: true});
        if (!changed && known && known.params === signature) return;
        this.details.set(key, {params: signature, body});
      } catch (error) {
        this.details.set(key, {params: signature, error: String(error.message || error)});
      }
      this.redraw(key);
    }));
  }

  redraw(key) {
    const tbody = this.tbodies.get(key);
    if (!tbody || !this.state.open.includes(key)) return;
    const current = tbody.querySelector("tr.current")?.dataset.traj;
    tbody.replaceChildren(tbody.firstChild, ...this.expansion(key));
    if (current) tbody.querySelector(`tr[data-traj="${CSS.escape(current)}"]`)?.classList.add("current");
  }

  poll() {
    return this.load(this.state.open.filter((key) => this.tbodies.has(key)), {poll: true});
  }
}

/** "this prompt at every step": the lineage of the group's instance (else its first key but step). */
function everyStepAction(run, group) {
  const values = group?.values || {};
  const key = "instance_id" in values ? "instance_id" : Object.keys(values).find((name) => name !== "step");
  if (!key) return null;
  const href = format({...emptyState(), run, view: "lineage", lkey: key, lvalue: String(values[key])});
  return el("tr", {className: "sub group-actions"}, el("td", {colSpan: COLUMNS},
    el("a", {href, dataset: {link: "every-step"}, onclick: (event) => event.stopPropagation()},
      `this prompt at every step (${key} ${values[key]}) →`)));
}

/** "3 forked, 1 truncated": how many rollouts of the group carry each flag. */
export function rollup(counts) {
  const names = rowFlags(Object.keys(counts || {}));
  if (!names.length) return null;
  return el("span", {className: "rollup"}, names.map((name) =>
    el("span", {className: `rollup-item level-${flagInfo(name).level}`,
      title: `${counts[name]} rollouts: ${flagInfo(name).why}`},
      `${counts[name]} ${name}`)));
}

/** Rollouts no group holds are not hidden: say how many and link to them (the filters kept), or null. */
export function ungroupedNotice(listing, state, go) {
  const count = listing.ungrouped || 0;
  if (count <= 0) return null;
  const patch = {view: "rollouts", ungrouped: true, open: [], sort: "", order: "", page: 1};
  const keys = (listing.group_by || []).join(", ");
  return el("p", {className: "notice info ungrouped-notice"},
    `${plural(count, "rollout")} ${count === 1 ? "has" : "have"} no group key${keys ? ` (${keys})` : ""}: `,
    el("a", {href: format({...state, ...patch}), dataset: {link: "ungrouped"},
      onclick: (event) => { event.preventDefault(); go(patch); }}, count === 1 ? "list it" : "list them"));
}
