"""Where a static bundle keeps the answer to one request: the Python side of `static/js/app/bundle-name.js`.

The page asks a bundle as it asks the server, by a route and its parameters; the bundle answers from
a file whose name is a hash of the request written canonically (the route's segments decoded, the
parameters as the page sends them, ordered by name), so no file name is ever built from record text.
tests/browser/test_bundle.py holds the two sides to the same names. Each file is the answer's JSON
gzipped (`gzip_answer`): a fifth of the size, and the page unzips it.
"""

import gzip
import json

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK = 2**64 - 1


def canonical_request(segments, params: dict) -> str:
    """`[route, [[name, value], ...]]` as the page's `canonicalRequest` writes it: `segments` are the
    route's own (ids as they are, not encoded); parameters with no value are left out, as the page does."""
    pairs = [[name, str(item)] for name, value in params.items() if value is not None and value != ""
             for item in (value if isinstance(value, (list, tuple)) else [value])]
    pairs.sort(key=lambda pair: pair[0])  # stable, as the page's sort
    return json.dumps(["/" + "/".join(segments), pairs], ensure_ascii=False, separators=(",", ":"))


def fnv1a(text: str) -> str:
    """64-bit FNV-1a of the text's UTF-8 bytes, as 16 hex digits."""
    value = FNV_OFFSET
    for byte in text.encode("utf-8", "surrogatepass"):
        value = ((value ^ byte) * FNV_PRIME) & MASK
    return f"{value:016x}"


def bundle_file(segments, params: dict) -> str:
    """The bundle's file holding the answer to the route `segments` with `params` (relative to the bundle)."""
    return f"data/{fnv1a(canonical_request(segments, params))}.json.gz"


def gzip_answer(body: bytes) -> bytes:
    """An answer as its bundle file holds it: gzip with no name or time in its header, so a bundle written
    twice is the same bytes."""
    return gzip.compress(body, compresslevel=6, mtime=0)
