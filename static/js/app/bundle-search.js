// The record text search of a static bundle, matched in the page: the bundle holds each kept rollout's
// node texts as the server searches them (`record/search.py`'s `node_texts`: the shown text, from the
// decoded tokens where the record has them, and the message text), and this answers `/search` in the
// server's form, page by page in the listing's order, so search.js draws it as it draws the server's.
// Plain text only (a regular expression is Python's on the server), case-insensitive as the browser
// lowercases (`toLowerCase`, where the server folds case fully: `ß` does not find `SS` here); a search
// inside other filters than the bundle's covers rollouts it does not hold, and is refused.

const ASKED = new Set(["run_id", "text", "case", "regex", "kind", "role", "in", "limit", "cursor", "cancel"]);
const ROLLOUTS_A_PAGE = 25;  // rollouts read for one answer at most, so the list fills in as they come

/** (start, end) in code points of up to `room` non-overlapping matches of `needle` in `text`. */
function textMatches(text, needle, fold, room) {
  const pieces = fold ? Array.from(text, (point) => point.toLowerCase()) : Array.from(text);
  const owner = [];  // the code point each UTF-16 unit of the searched text came from
  pieces.forEach((piece, index) => { for (let unit = 0; unit < piece.length; unit += 1) owner.push(index); });
  const searched = pieces.join("");
  const wanted = fold ? needle.toLowerCase() : needle;
  const found = [];
  let at = searched.indexOf(wanted);
  while (at >= 0 && found.length < room) {
    found.push([owner[at], owner[at + wanted.length - 1] + 1]);
    at = searched.indexOf(wanted, at + wanted.length);
  }
  return found;
}

/** The hits of one rollout's nodes, as the server's `document_hits` names them. */
function rolloutHits(id, nodes, params, limits) {
  const hits = [];
  for (const node of nodes) {
    if (params.kind && params.kind !== "all" && node.kind !== params.kind) continue;
    if (params.role && node.role !== params.role) continue;
    const [text, within] = params.in === "message" && node.message !== undefined ? [node.message, "message"]
      : [node.shown, node.in];
    const points = Array.from(text);
    for (const [start, end] of textMatches(text, params.text, params.case !== "true", limits.max_hits - hits.length)) {
      hits.push({trajectory_id: id, node_id: node.node_id, role: node.role, kind: node.kind, in: within, start, end,
        snippet: {before: points.slice(Math.max(0, start - limits.context), start).join(""),
          match: points.slice(start, Math.min(end, start + limits.match_shown)).join(""),
          after: points.slice(end, end + limits.context).join("")}});
    }
    if (hits.length >= limits.max_hits) return {hits, capped: true};
  }
  return {hits, capped: false};
}

/** Why the bundle cannot run this search, or null. */
function refusal(params, index) {
  if (Object.entries(params).some(([name, value]) => !ASKED.has(name) && value !== "" && value !== null
    && value !== undefined && !(Array.isArray(value) && !value.length))) {
    return `this bundle searches only the ${index.ids.length} rollouts it keeps: a search inside other filters `
      + "needs the viewer's server";
  }
  if (params.regex === "true") return "a regular expression search (Python's syntax) needs the viewer's server";
  if (!params.text) return "text is required";
  return null;
}

/** The bundle's answer to `/search` with `params`: `read(path, params)` reads one of its files. */
export async function searchBundle(params, read) {
  const index = await read("/search", {run_id: params.run_id});
  const problem = refusal(params, index);
  if (problem) return {refused: problem};
  const from = Number(params.cursor) || 0;
  const to = params.cancel === "true" ? from : Math.min(index.ids.length, from + ROLLOUTS_A_PAGE);
  const data = [];
  let capped = false;
  for (const id of index.ids.slice(from, to)) {
    const {nodes} = await read("/search", {run_id: params.run_id, trajectory_id: id});
    const found = rolloutHits(id, nodes, params, index);
    data.push(...found.hits);
    capped ||= found.capped;
  }
  const done = to >= index.ids.length || params.cancel === "true";
  const skipped = index.skipped.length;
  return {data, scanned: to + (done ? skipped : 0), total_documents: index.ids.length + skipped, done,
    next_cursor: done ? null : String(to), capped, cancelled: params.cancel === "true", error: null,
    skipped: index.skipped, skipped_count: skipped};
}
