// Where a static bundle keeps the answer to one request: `skycap-viewer bundle` writes each answer
// under the name this rule gives the request the page makes, and the page reads it back by the same
// rule (`skycap_viewer/commands/bundle_names.py` is its Python side; tests/browser/test_bundle.py
// holds the two to the same names). The name is a hash of the request written canonically: the
// route with its segments decoded, and its parameters as `apiUrl` sends them, ordered by name. Each
// file is the answer's JSON gzipped (a fifth of the size; api.js unzips it).

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = (1n << 64n) - 1n;

/** The request as one text: `[route, [[name, value], ...]]` as JSON, values as `apiUrl` writes them. */
function canonicalRequest(path, params = {}) {
  const route = path.split("/").map((segment) => decodeURIComponent(segment)).join("/");
  const pairs = [];
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    for (const item of Array.isArray(value) ? value : [value]) pairs.push([name, String(item)]);
  }
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));  // stable: a name's values keep their order
  return JSON.stringify([route, pairs]);
}

/** 64-bit FNV-1a of the text's UTF-8 bytes, as 16 hex digits (no secure context needed, as
 *  crypto.subtle would: an object store's website is plain http). */
function fnv1a(text) {
  let hash = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) hash = ((hash ^ BigInt(byte)) * FNV_PRIME) & MASK;
  return hash.toString(16).padStart(16, "0");
}

/** The bundle's file holding the answer to `path` with `params`, relative to the bundle's folder. */
export function bundleFile(path, params = {}) {
  return `data/${fnv1a(canonicalRequest(path, params))}.json.gz`;
}
