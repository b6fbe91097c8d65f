// The viewer's JSON API under /api/v1. Listings are polled with their ETag: an unchanged
// listing answers 304 and we keep the body we already have.

const BASE = "/api/v1";
const remembered = new Map();  // url -> {etag, body}

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

/** GET JSON. With `{poll: true}` returns `{body, changed}` using If-None-Match. */
export async function get(path, params = {}, {poll = false} = {}) {
  const address = apiUrl(path, params);
  const known = remembered.get(address);
  const headers = poll && known?.etag ? {"If-None-Match": known.etag} : {};
  const response = await fetchPatiently(address, {headers, cache: "no-store"});
  if (response.status === 304 && known) return poll ? {body: known.body, changed: false} : known.body;
  let body = null;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(response.status, `${address}: not JSON (status ${response.status})`);
  }
  if (!response.ok) throw new ApiError(response.status, body?.detail || `status ${response.status}`);
  const etag = response.headers.get("ETag");
  if (etag) remembered.set(address, {etag, body});
  if (remembered.size > 200) remembered.delete(remembered.keys().next().value);
  return poll ? {body, changed: !known || known.body !== body} : body;
}
