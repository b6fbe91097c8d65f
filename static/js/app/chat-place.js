// Where the reader is in the drawer's Chat tab: the card a link or the reader points at, placed and
// marked, and `m` / `M` stepping through the model's turns.

import {holdInView} from "../draw/dom.js";
import {pathShown} from "./rollout-loader.js";
import {drawBody} from "../draw/tab-chat.js";

/** In the Chat tab drawn in `content`, the card the link or the reader points at: the pinned message
 *  (`msg`), else the card of the pinned block (`blk`), the search match's (`hit`) or the selected
 *  node's; it is drawn and unfolded (a part still to come is fetched first: `more(wanted)`), marked,
 *  and scrolled to when the tab was just opened (`scroll`). */
export function placeInChat(content, bundle, state, {hit, more, scroll}) {
  const index = pathShown(bundle, state);
  const answer = bundle.chat?.get(index);
  if (!answer?.cards) return;
  for (const card of content.querySelectorAll(".chat-card.pinned")) card.classList.remove("pinned");
  const path = bundle.paths.paths[index];
  const block = state.blk === "" ? null : path?.blocks?.[state.blk];
  const node = state.node || block?.node_id || (hit?.trajectory_id === state.traj ? hit.node_id : "");
  const pinned = state.msg !== "";
  const found = pinned ? answer.cards.find((card) => card.position === state.msg)
    : node ? answer.cards.find((card) => card.node_id === node) : null;
  if (!found) {  // fetched on only when what is wanted is on this path, in a part still to come
    const later = pinned ? state.msg < (answer.part?.total ?? 0) : (path?.node_ids || []).includes(node);
    if (later && answer.part?.next !== undefined) {
      more(() => !answer.cards.some((card) => (pinned ? card.position === state.msg : card.node_id === node)));
    }
    return;
  }
  const element = content.querySelector(`.chat-card[data-position="${found.position}"]`);
  if (!element) return;
  const shared = element.closest("details.chat-shared");
  if (shared) shared.open = true;
  drawBody(element);
  element.classList.add(pinned || (!state.node && block) ? "pinned" : "node-selected");
  if (hit?.node_id === found.node_id) element.classList.add("search-hit");
  if (scroll) holdInView(content, element, () => 0);  // kept there while the cards above take their height
}

/** `m` / `M` (`by` 1 / -1): the next / previous model turn of the Chat tab in `content`, from the one a
 *  step reached (it has the focus), else from the one at the top of the tab. */
export function stepTurn(content, by) {
  const turns = [...content.querySelectorAll(".chat-card.by-model")].filter((card) => card.offsetParent);
  if (!turns.length) return;
  const focused = turns.indexOf(document.activeElement?.closest(".chat-card"));
  const top = content.getBoundingClientRect().top;
  const above = turns.filter((card) => card.getBoundingClientRect().top <= top + 4).length - 1;  // the one at the top
  const aligned = above >= 0 && turns[above].getBoundingClientRect().top >= top - 4;
  const to = focused >= 0 ? focused + by : by > 0 ? above + 1 : aligned ? above - 1 : above;
  const next = turns[Math.max(0, Math.min(turns.length - 1, to))];
  drawBody(next);
  next.scrollIntoView({block: "start"});
  next.querySelector(".node-link")?.focus({preventScroll: true});
}
