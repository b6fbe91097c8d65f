"""Read sidecar files lazily: little-endian arrays at 8-aligned offsets, standard library only.

Only `/paths` with text, `check`, the background verification and a search of the shown text (a
rollout's tokens, as the Path tab shows them) come here; listings never do. A sidecar the manifest
lists but whose file is absent (a mirror that left it out) is *absent*, not an error.
"""

import math
import os
import sys
from array import array
from pathlib import Path

from skycap_viewer.errors import RecordError
from skycap_viewer.record.copies import ensure_local
from skycap_viewer.record.document import read_regular_file
from skycap_viewer.record.frames import FrameError, decompress_one_frame, file_limit, mib
from skycap_viewer.record.manifest import DTYPE_SIZES, token_layout_problems, token_nodes
from skycap_viewer.record.schema import is_plain_file_name

TYPECODES = {"uint8": "B", "uint16": "H", "int16": "h", "int32": "i", "int64": "q", "float64": "d"}
for _dtype, _code in TYPECODES.items():  # the platform's C sizes must match the format's
    assert array(_code).itemsize == DTYPE_SIZES[_dtype], _dtype


def sidecar_file(directory, document: dict, kind: str) -> Path | None:
    """Where the manifest says `kind` lives, or None when it is not listed."""
    manifest = (document.get("sidecars") or {}).get(kind)
    if manifest is None:
        return None
    name = manifest["file"]
    if not is_plain_file_name(name):  # schema.py refuses these already; never build such a path
        raise RecordError(Path(directory) / f"{document['id']}.json.zst", f"sidecar name {name!r} is not plain")
    return Path(directory) / name


def decode_array(payload: bytes, spec: dict, where: str):
    """View one manifest array of `payload` as a flat `array` (copied, native byte order)."""
    dtype = spec["dtype"]
    if dtype not in TYPECODES:
        raise ValueError(f"{where}: dtype {dtype!r} is not one of {', '.join(TYPECODES)}")
    if spec["offset"] % 8:
        raise ValueError(f"{where}: offset {spec['offset']} is not a multiple of 8")
    count = math.prod(spec["shape"])
    start, end = spec["offset"], spec["offset"] + count * DTYPE_SIZES[dtype]
    if end > len(payload):
        raise ValueError(f"{where}: needs bytes [{start}, {end}) but the payload has {len(payload)}")
    values = array(TYPECODES[dtype])
    values.frombytes(memoryview(payload)[start:end])  # straight from the payload: no intermediate copy
    if sys.byteorder == "big" and values.itemsize > 1:
        values.byteswap()
    return values


def payload_need(manifest: dict) -> int:
    """The bytes a sidecar's payload may hold: up to the end of its last array, rounded up to the
    8-byte alignment (an unknown dtype counts as 8 bytes an item; `decode_array` refuses it anyway)."""
    ends = [spec["offset"] + math.prod(spec["shape"]) * DTYPE_SIZES.get(spec["dtype"], 8)
            for spec in manifest["arrays"].values()]
    return -(-max(ends, default=0) // 8) * 8


def read_payload(path: Path, manifest: dict) -> bytes:
    """The decompressed bytes of one sidecar file: exactly one zstd frame, no larger than its manifest's
    arrays need (and the file limit), so a payload padded with gigabytes of zeros is refused unread."""
    need = payload_need(manifest)
    limit, ceiling = need, "what its manifest's arrays need"
    if need > file_limit():
        limit, ceiling = file_limit(), f"the --max-file-mib limit (its manifest describes {mib(need)})"
    data = read_regular_file(path, "sidecar", limit)
    try:
        return decompress_one_frame(data, limit, "the sidecar", ceiling)
    except FrameError as error:
        raise RecordError(path, str(error)) from None


def decode_arrays(payload: bytes, manifest: dict, path: Path) -> dict:
    """Every manifest array of a sidecar payload; `RecordError` when one does not fit."""
    try:
        return {name: decode_array(payload, spec, name) for name, spec in manifest["arrays"].items()}
    except ValueError as error:
        raise RecordError(path, str(error)) from None


def read_sidecar(path: Path, manifest: dict) -> dict:
    """Every array of one sidecar file; raises `RecordError` on any damage."""
    return decode_arrays(read_payload(path, manifest), manifest, path)


def present_sidecar_file(directory, document: dict, kind: str) -> Path | None:
    """Where `kind` lives, or None when it is not listed or its file is not there (a store's copy's is
    fetched first, when the store holds it)."""
    path = sidecar_file(directory, document, kind)
    if path is not None:
        ensure_local(path)
    if path is None or not os.path.lexists(path):  # anything else there is read, and refused if odd
        return None
    return path


def read_present_sidecar(directory, document: dict, kind: str) -> dict | None:
    """The arrays of `kind`, or None when it is not listed or its file is not there."""
    path = present_sidecar_file(directory, document, kind)
    return None if path is None else read_sidecar(path, document["sidecars"][kind])


def present_payload(directory, document: dict, kind: str) -> tuple[Path, bytes] | None:
    """(the file, its decompressed payload) of `kind`, or None when it is not listed or its file is not there:
    the payload, for a look at it before its arrays are decoded (`tokens_of`)."""
    path = present_sidecar_file(directory, document, kind)
    return None if path is None else (path, read_payload(path, document["sidecars"][kind]))


class TokenData:
    """The tokens sidecar of one record, sliced per node."""

    def __init__(self, arrays: dict, path: Path):
        self.path = path
        self.token_ids = arrays["token_ids"]
        self.logprobs = arrays["logprobs"]
        self.text_offsets = arrays["text_offsets"]
        self.text = bytes(arrays["text"])

    def ids(self, tokens: dict) -> list[int]:
        return self.token_ids[tokens["offset"] : tokens["offset"] + tokens["length"]].tolist()

    def logprobs_of(self, tokens: dict) -> list[float | None]:
        """Per-token logprob; None where unknown (NaN in the file)."""
        values = self.logprobs[tokens["offset"] : tokens["offset"] + tokens["length"]].tolist()
        total = sum(values)
        if total == total:  # no NaN anywhere (a NaN makes the sum NaN): the values as they are
            return values
        return [None if v != v else v for v in values]  # only NaN differs from itself

    def text_bytes(self, tokens: dict) -> bytes | None:
        if tokens.get("text_offset") is None:
            return None
        return self.text[tokens["text_offset"] : tokens["text_offset"] + tokens.get("text_bytes", 0)]

    def shown_text(self, tokens: dict) -> str | None:
        """The node's text as the Path tab shows it: from its first token's start (`/paths`' `text`)."""
        raw = self.text_bytes(tokens)
        if raw is None:
            return None
        first = self.text_offsets[tokens["offset"]] if tokens["length"] else len(raw)
        return raw[first:].decode("utf-8")

    def pieces(self, tokens: dict) -> list[str] | None:
        """Each token's text (empty for a token sharing a character it does not complete)."""
        raw = self.text_bytes(tokens)
        if raw is None:
            return None
        starts = self.text_offsets[tokens["offset"] : tokens["offset"] + tokens["length"]].tolist()
        ends = starts[1:] + [len(raw)]
        return [raw[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)]

    def problems(self, document: dict) -> list[str]:
        """Token slices that fall outside the arrays or split a UTF-8 character."""
        problems = []
        n, size = len(self.token_ids), len(self.text)
        for node in token_nodes(document):
            t, nid = node["tokens"], node["id"]
            if t["offset"] + t["length"] > n:
                problems.append(f"node {nid} tokens run past the {n} token ids")
                continue
            if t.get("text_offset") is None:
                continue
            if t["text_offset"] + t.get("text_bytes", 0) > size:
                problems.append(f"node {nid} text runs past the {size} text bytes")
                continue
            try:
                self.text_bytes(t).decode("utf-8")
            except UnicodeDecodeError:
                problems.append(f"node {nid} text is cut inside a UTF-8 character")
                continue
            starts = self.text_offsets[t["offset"] : t["offset"] + t["length"]].tolist()
            bounds = starts + [t.get("text_bytes", 0)]
            if starts and starts[0] < 0:
                problems.append(f"node {nid} text_offsets start below 0")
            elif starts != sorted(starts):  # one C-level pass over sorted input
                problems.append(f"node {nid} text_offsets decrease")
            elif bounds[-2 if starts else -1] > bounds[-1]:
                problems.append(f"node {nid} text_offsets run past the node's {bounds[-1]} text bytes")
            elif not self.text_bytes(t).isascii():  # in ASCII text every byte is a character
                try:
                    self.pieces(t)
                except UnicodeDecodeError:
                    problems.append(f"node {nid} a token boundary splits a UTF-8 character")
        return problems


def read_tokens(directory, document: dict) -> TokenData | None:
    """The record's tokens, or None when not captured or not copied; `RecordError` if damaged.

    Only damage that makes the tokens unsafe to show refuses them: a bad experts row still
    leaves the text readable (the record is flagged `malformed-record` all the same).
    """
    return tokens_of(document, present_payload(directory, document, "tokens"))


def tokens_of(document: dict, present: tuple[Path, bytes] | None) -> TokenData | None:
    """`read_tokens` from what `present_payload` gave for the tokens (a search reads the payload first, to
    look for its text there before the arrays are decoded)."""
    if present is None:
        return None
    path, payload = present
    arrays = decode_arrays(payload, document["sidecars"]["tokens"], path)
    problems = token_layout_problems(document)
    if problems:
        raise RecordError(path, "; ".join(problems))
    data = TokenData(arrays, path)
    problems = data.problems(document)
    if problems:
        raise RecordError(path, "; ".join(problems))
    return data


def mask_problems(arrays: dict) -> list[str]:
    offsets, ids = arrays["offsets"].tolist(), arrays["ids"]
    if not offsets or offsets[0] != 0:
        return ["sampling_mask offsets do not start at 0"]
    if any(b < a for a, b in zip(offsets, offsets[1:], strict=False)) or offsets[-1] > len(ids):
        return ["sampling_mask offsets decrease or run past the ids"]
    return []
