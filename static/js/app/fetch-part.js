// The drawer's next part of a big answer (parts.js says how answers come in parts): fetched and
// merged into the answer it already has, in place.

import {get} from "./api.js";
import {extend} from "../draw/parts.js";

/** The part of `answer` (an answer of `route`) that comes next: path `index`'s for /paths, and for
 *  the Chat tab's answers (a Map of path index -> /paths/{n}/chat answer). */
export function partOf(route, answer, index) {
  if (route === "chat") return answer?.get(index)?.part;
  return route === "paths" ? answer?.paths?.[index]?.part : answer?.part;
}

/** Fetch the next part of `answer` (of `route` under `base`) and merge it into `answer` in place. */
export async function fetchNext(base, params, route, answer, index) {
  const next = partOf(route, answer, index)?.next;
  if (next === undefined) return;
  if (route === "chat") {
    const chat = answer.get(index);
    const part = await get(`${base}/paths/${index}/chat`, {...params, from: next});
    extend(chat.cards, part.cards);
    chat.part = part.part;
    return;
  }
  const part = await get(`${base}/${route}`, {...params, from: next, path: route === "paths" ? index : undefined});
  if (route === "paths") {
    const path = answer.paths[index];
    for (const key of ["node_ids", "targets", "messages", "blocks"]) extend(path[key], part[key]);
    Object.assign(answer.nodes, part.nodes);
    path.part = part.part;
  } else {
    extend(route === "graph" ? answer.nodes : answer.data, route === "graph" ? part.nodes : part.data);
    answer.part = part.part;
  }
}
