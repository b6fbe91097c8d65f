// Tokens worth reading: the Path tab's "Notable" panel, the server's /notable answer for the path
// shown (lowest logprobs, NaN in the loss, special-looking tokens mid-reply, a length-cut call's
// last tokens), with the legend of the logprob colours. Clicking an item, or n / N, scrolls to its
// token, unfolding and drawing what holds it, and marks it.

import {get, trajectoryPath} from "./api.js";
import {el} from "../draw/dom.js";
import {num} from "../draw/format.js";
import {LOGPROB_BANDS} from "../draw/facts.js";
import {sectionBlock, tokenSpans, unfold} from "../draw/tokens.js";

const LABELS = {"length-cut": "cut at length", "missing-logprob": "NaN logprob", "special-token": "special",
  "lowest-logprob": "low logprob"};

/** The colour scale "colour by logprob" shades sampled tokens with, its ends labelled. */
function logprobLegend() {
  return el("div", {className: "lp-legend small"},
    el("span", {className: "muted"}, "colour by logprob: likely"),
    LOGPROB_BANDS.map(([, name, label]) => el("span", {className: `t ${name}`}, label)),
    el("span", {className: "muted"}, "unlikely ·"),
    el("span", {className: "t lp-x"}, "logprob unknown (NaN)"),
    el("span", {className: "muted"}, "(p = exp(logprob), derived)"));
}

function logprobText(item) {
  return item.logprob === null ? "logprob NaN" : `logprob ${item.logprob.toFixed(4)}`;
}

function countsLine(answer) {
  const counts = answer.counts;
  const shown = (kind) => answer.items.filter((item) => item.kind === kind).length;
  return [
    `low logprob: the ${num(shown("lowest-logprob"))} lowest of ${num(counts["lowest-logprob"])}`
      + ` sampled tokens with one`,
    `NaN logprob in the loss: ${num(counts["missing-logprob"])}${shown("missing-logprob") < counts["missing-logprob"]
      ? ` (first ${num(shown("missing-logprob"))} listed)` : ""}`,
    `special mid-reply: ${num(counts["special-token"])}${shown("special-token") < counts["special-token"]
      ? ` (first ${num(shown("special-token"))} listed)` : ""}`,
    `calls cut at length: ${num(counts["length-cut"])}`,
  ].join(" · ");
}

export class NotableTokens {
  /** `view()` is the drawer's {bundle, state, content, more} at the time asked. */
  constructor(view) {
    this.view = view;
    this.expanded = false;
    this.at = -1;
    this.box = null;
  }

  /** The panel for path `index` of `bundle`: filled from the answer kept in the bundle, or once it comes. */
  panel(bundle, index) {
    bundle.notable ||= new Map();  // path index -> /notable answer (or {error}), kept with the bundle
    const box = el("details", {className: "notable", open: this.expanded,
      ontoggle: () => { this.expanded = box.open; }},
    el("summary", {}, "Notable tokens"), el("p", {className: "muted small"}, "loading…"));
    this.box = box;
    const answer = bundle.notable.get(index);
    if (answer) {
      this.fill(box, answer);
    } else {
      const {state} = this.view();
      get(`${trajectoryPath(state.traj)}/notable`, {run_id: state.run, path: index})
        .catch((error) => ({error: error.message}))
        .then((got) => {
          bundle.notable.set(index, got);
          if (box.isConnected) this.fill(box, got);
        });
    }
    return box;
  }

  fill(box, answer) {
    if (this.answer !== answer) this.at = -1;  // a redraw of the same answer keeps the place
    this.answer = answer;
    const summary = box.querySelector("summary");
    if (answer.error) {
      box.replaceChildren(summary, el("p", {className: "notice error"}, `Cannot list notable tokens: ${answer.error}`));
      return;
    }
    summary.textContent = `Notable tokens ${answer.items.length}`;
    this.status = el("p", {className: "muted small notable-status", "aria-live": "polite"}, "n / N: next / previous");
    box.replaceChildren(summary,
      el("p", {className: "small"}, countsLine(answer)),
      answer.notes.map((note) => el("p", {className: "notice info"}, note)),
      el("p", {className: "muted small"}, `special: ${answer.special_rule}`),
      logprobLegend(),
      el("ol", {className: "notable-list"}, answer.items.map((item, i) => el("li", {},
        el("button", {type: "button", className: "ghost notable-item", dataset: {notable: i, kind: item.kind},
          title: item.why, onclick: () => this.goTo(i)},
        el("span", {className: `kind-${item.kind}`}, LABELS[item.kind] ?? item.kind), " ",
        el("code", {}, item.text === null ? "(no text)" : JSON.stringify(item.text)), " ",
        el("span", {className: "muted"}, `${item.token_index === null ? "" : `${logprobText(item)} · `}${item.node_id}`
          + `${item.position === null ? "" : ` #${item.position}`}`))))),
      this.status);
  }

  /** Go `by` items on from the current one (wrapping), e.g. from the n / N keys. */
  step(by) {
    const items = this.answer?.items || [];
    if (!items.length || !this.box?.isConnected) return;
    this.goTo((this.at + by + items.length) % items.length);
  }

  /** Scroll to item `i`'s token, unfolding and drawing its block, and mark it. */
  goTo(i) {
    const item = this.answer.items[i];
    this.at = i;
    const {content} = this.view();
    for (const row of this.box.querySelectorAll(".notable-item")) {
      row.toggleAttribute("aria-current", Number(row.dataset.notable) === i);
    }
    const sections = [...content.querySelectorAll(`section.block[data-node="${CSS.escape(item.node_id)}"]`)];
    const section = item.token_index === null ? sections[sections.length - 1]
      : sections.find((s) => sectionBlock(s).node_start <= item.token_index
        && item.token_index < sectionBlock(s).node_end);
    for (const marked of content.querySelectorAll(".notable-current")) marked.classList.remove("notable-current");
    if (!section) {
      this.status.textContent = `${item.node_id} is not drawn: its part of the path is not loaded yet`
        + ` (scroll to the end to load more).`;
      return;
    }
    unfold(section);
    const target = item.token_index === null
      ? section
      : tokenSpans(section, item.token_index, item.token_index + 1)[0] ?? section;
    target.classList.add("notable-current");
    target.scrollIntoView({block: "center"});
    this.status.textContent = `${num(i + 1)} of ${num(this.answer.items.length)}: ${item.why}`;
  }
}
