// The viewer's JSON API under /api/v1, or a static bundle's files: every view asks through `get`.
// The page first reads `__viewer` beside it (the server's /__viewer, or a bundle's file of the same
// name, which says it is one): from a bundle, each request is read from the file `bundleFile` names,
// and what the bundle holds no answer for is refused with a line saying so. From the server,
// listings are polled with their ETag: an unchanged listing answers 304 and we keep the body we have.

import {bundleFile} from "./bundle-name.js";
import {searchBundle} from "./bundle-search.js";

const BASE = "/api/v1";
const VIEWER = "__viewer";  // relative: the server's /__viewer, or the bundle's file in its folder
const remembered = new Map();  // url -> {etag, body}
let viewerAnswer = null;  // the promise of the /__viewer answer, once asked
let bundled = null;  // what a bundle says of itself (`bundle` in its __viewer), once read
const BUNDLE_KEPT_BYTES = 16 * 2 ** 20;  // a bundle's answers kept, in their files' bytes
const kept = new Map();  // a bundle's file -> {body, size}, oldest first
let keptBytes = 0;

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

/** The address of an API `path` with `params` (arrays repeat the key; empty values are left out). */
export function apiUrl(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    for (const item of Array.isArray(value) ? value : [value]) query.append(key, String(item));
  }
  const text = query.toString();
  return `${path.startsWith("/__") ? "" : BASE}${path}${text ? `?${text}` : ""}`;
}

/** `/trajectories/<id>`: a record whose id is `export` is written `%65xport`, so it is not the export
 *  (the server matches a route's own words as written, and decodes ids). */
export function trajectoryPath(id) {
  return `/trajectories/${id === "export" ? "%65xport" : encodeURIComponent(id)}`;
}

const BUSY_TRIES = 4;  // a 503 with Retry-After (every long answer's slot taken) is asked again this often

/** `fetch`, asked again after the server's Retry-After while it answers 503 (busy, not broken). */
async function fetchPatiently(address, options) {
  for (let tries = 1; ; tries += 1) {
    const response = await fetch(address, options);
    const wait = Number(response.headers.get("Retry-After"));
    if (response.status !== 503 || !wait || tries >= BUSY_TRIES) return response;
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

/** The /__viewer answer, asked once (again after a failure): it says whether the page reads a bundle. */
function viewerFacts() {
  viewerAnswer ||= fetchPatiently(VIEWER, {cache: "no-store"}).then((response) => bodyOf(response, VIEWER)).then(
    (body) => {
      bundled = body.bundle || null;
      return body;
    },
    (error) => {
      viewerAnswer = null;
      throw error;
    });
  return viewerAnswer;
}

/** What the bundle the page reads says of itself (its filters, rollouts, what it left out), or null
 *  when the page reads the server. Known once the first answer came. */
export function bundleFacts() {
  return bundled;
}

/** The JSON body of `response`; a refusal throws the server's detail. */
async function bodyOf(response, address) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(response.status, `${address}: not JSON (status ${response.status})`);
  }
  if (!response.ok) throw new ApiError(response.status, body?.detail || `status ${response.status}`);
  return body;
}

/** An answer from the bundle's files (a search matched here, over its rollouts' texts). Nothing there
 *  changes, so a poll asks nothing again. */
async function fromBundle(path, params, poll) {
  if (path === "/search") {
    const answer = await searchBundle(params, bundleAnswer);
    if (answer.refused) throw new ApiError(400, answer.refused);
    return answer;
  }
  const known = kept.has(bundleFile(path, params));
  const body = await bundleAnswer(path, params);
  return poll ? {body, changed: !known} : body;
}

/** The bundle's file answering `path` with `params`, kept once read (within `BUNDLE_KEPT_BYTES` of files);
 *  one it does not hold is refused with a line saying why. */
async function bundleAnswer(path, params) {
  const address = bundleFile(path, params);
  const known = kept.get(address);
  if (known) return known.body;
  const response = await fetch(address);
  if (!response.ok) {
    throw new ApiError(response.status, `this bundle holds no answer to ${path} with these parameters: it `
      + "answers only what was written for the rollouts it keeps (their listings, sorts and drawers)");
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  const body = await unzipped(bytes);
  kept.set(address, {body, size: bytes.length});
  keptBytes += bytes.length;
  for (const [oldest, entry] of kept) {
    if (keptBytes <= BUNDLE_KEPT_BYTES || oldest === address) break;
    kept.delete(oldest);
    keptBytes -= entry.size;
  }
  return body;
}

/** The JSON of a bundle's file, kept gzipped: unzipped here, unless a host that sends it with
 *  `Content-Encoding: gzip` had the browser unzip it already (JSON never starts with gzip's 1f 8b). */
async function unzipped(bytes) {
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return JSON.parse(new TextDecoder().decode(bytes));
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).json();
}

/** GET JSON. With `{poll: true}` returns `{body, changed}` using If-None-Match. */
export async function get(path, params = {}, {poll = false} = {}) {
  const viewer = await viewerFacts();
  if (path === "/__viewer") return viewer;
  if (bundled) return fromBundle(path, params, poll);
  const address = apiUrl(path, params);
  const known = remembered.get(address);
  const headers = poll && known?.etag ? {"If-None-Match": known.etag} : {};
  const response = await fetchPatiently(address, {headers, cache: "no-store"});
  if (response.status === 304 && known) return poll ? {body: known.body, changed: false} : known.body;
  const body = await bodyOf(response, address);
  const etag = response.headers.get("ETag");
  if (etag) remembered.set(address, {etag, body});
  if (remembered.size > 200) remembered.delete(remembered.keys().next().value);
  return poll ? {body, changed: !known || known.body !== body} : body;
}
