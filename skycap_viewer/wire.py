"""JSON as the API sends it: compact UTF-8, never NaN, and answers encoded once.

`RawJson` is JSON text already encoded (an index row, a cached answer): `encode_json` splices it
in as is, and its gzip form is computed the first time it is sent and kept with it, so a cached
answer sent a hundred times is compressed once. A `Download` is the answer that is not JSON: a
file the browser saves, whole (a rollout's snapshot) or sent in pieces as they are made (an export).
"""

import gzip
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

GZIP_LEVEL = 1  # a listing in ~2 ms instead of ~12 at level 5, for ~30% more bytes on a local link


class RawJson(bytes):
    """JSON text already encoded: inserted as is by `encode_json`."""

    @cached_property
    def gzipped(self) -> bytes:
        return gzip.compress(self, compresslevel=GZIP_LEVEL, mtime=0)


def gzipped(body: bytes) -> bytes:
    """`body` gzip-compressed; a `RawJson` body only once."""
    if type(body) is RawJson:
        return body.gzipped
    return gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)


def encode_json(payload) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities (possible in documents) become null.

    A top-level value that is `RawJson` is spliced in unencoded (a listing's pre-encoded rows)."""
    if isinstance(payload, dict) and any(type(value) is RawJson for value in payload.values()):
        return b"{" + b",".join(_members(payload)) + b"}"
    return _encode(payload)


def _members(payload: dict) -> Iterator[bytes]:
    """`payload`'s members as JSON, in order: each run of plain values encoded in one call (an index
    row has two dozen), each `RawJson` value spliced in as it is."""
    plain = {}
    for key, value in payload.items():
        if type(value) is not RawJson:
            plain[key] = value
            continue
        if plain:
            yield _encode(plain)[1:-1]
            plain = {}
        yield _encode(key) + b":" + value
    if plain:
        yield _encode(plain)[1:-1]


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # made once, not per call


def _encode(payload) -> bytes:
    try:
        text = _ENCODER.encode(payload)
    except ValueError:
        text = _ENCODER.encode(_finite(payload))
    # A lone surrogate (`"\ud800"` is valid JSON, and record text) has no UTF-8 form: it only ever stands
    # in a JSON string, where `backslashreplace` writes it back as the same escape.
    return text.encode("utf-8", "backslashreplace")


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a lone surrogate (a file name that is not UTF-8 is decoded with some)."""
    return not text.isascii() and LONE_SURROGATE.search(text) is not None


def encodable(value):
    """`value` with every lone surrogate of its strings (keys included) replaced by U+FFFD.

    `"\\ud800"` is valid JSON and Python keeps it, but it has no UTF-8 form: SQLite refuses it (an
    index row holding one would fail its run's writes on every poll), so what is stored is made
    encodable once, where it is made, with a replacement a reader sees. Answers from the record
    itself keep the escape (`_encode`)."""
    kind = type(value)
    if kind is str:
        return value if value.isascii() or not LONE_SURROGATE.search(value) else LONE_SURROGATE.sub(REPLACEMENT, value)
    if kind is dict:
        return {encodable(key): encodable(item) for key, item in value.items()}
    if kind is list:
        return [encodable(item) for item in value]
    return value


UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(stem: str, suffix: str, fallback: str) -> str:
    """`stem` + `suffix` as a download is saved: letters, digits, `.`, `_` and `-` only (a run of
    anything else is one `_`), no leading dot, at most 100 characters before the suffix."""
    return (UNSAFE_NAME.sub("_", stem).strip("._")[:100] or fallback) + suffix


@dataclass
class Download:
    """A file a browser saves as `file_name` (made by `safe_file_name`): `body` when it is whole, or
    `pieces` sent as they are made (chunked) and `close()` called once they are sent, or could not be."""

    content_type: str
    file_name: str
    body: bytes | None = None
    pieces: Iterator[bytes] | None = None
    close: Callable[[], None] = lambda: None
