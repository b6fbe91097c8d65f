"""Records written as skycap writes them, for the tests: copied from the corpus, edited, or made from text.

A file is written to a hidden temporary name in its directory and renamed in, sidecars first and the
document last, so a watcher never reads half a record. `write_token_record` and `write_text_record`
start from `broken/tr_ok`, the intact two-node token record, and never write into the corpus.
"""

import json
import math
import os
import re
from array import array
from pathlib import Path

from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.corpus import BROKEN

BASE_ID = "tr_ok"  # the intact two-node token record every generated case starts from


def load_document(path) -> dict:
    return json.loads(decompress_one_frame(Path(path).read_bytes()))


def encode_document(document) -> bytes:
    """Compact UTF-8 JSON in one zstd frame (skycap writes orjson output the same way)."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return compress(text.encode("utf-8", "surrogatepass"))


def atomic_write(path: Path, data: bytes) -> None:
    """Write `path` as skycap does: a hidden temporary name in the same directory, then rename."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def write_record(directory, document: dict, sidecars: dict[str, bytes] | None = None) -> Path:
    """Write sidecar files (file name → compressed bytes) then the document, each atomically."""
    directory = Path(directory)
    for name, data in (sidecars or {}).items():
        atomic_write(directory / name, data)
    path = directory / f"{document['id']}.json.zst"
    atomic_write(path, encode_document(document))
    return path


def record_files(directory: Path, record_id: str) -> list[Path]:
    """A record's files in `directory` (its sidecars `ID.KIND.zst`, then its document `ID.json.zst`)."""
    pattern = re.compile(rf"{re.escape(record_id)}\.[a-z_]+(\.json)?\.zst")
    files = [item for item in directory.iterdir() if pattern.fullmatch(item.name)]
    return sorted(files, key=lambda item: (item.name == f"{record_id}.json.zst", item.name))


def copy_record(source_dir, record_id: str, target_dir, new_id: str | None = None, edit=None, *,
                file_id: str | None = None) -> Path:
    """Copy a record into `target_dir` as skycap writes one (sidecars first, the document last, each through
    a temporary name), returning its document's path.

    Byte for byte, unless `new_id` or `edit` is given: then the document is read, given `new_id` (its
    sidecars' names follow), edited by `edit(document)` and written again (its sidecars as they are).
    `file_id` names the copied files only, the document keeping its id: a record its file name misnames."""
    source_dir, target_dir = Path(source_dir), Path(target_dir)
    if new_id is None and edit is None:
        named = file_id or record_id
        for source in record_files(source_dir, record_id):
            atomic_write(target_dir / source.name.replace(record_id, named, 1), source.read_bytes())
        return target_dir / f"{named}.json.zst"
    if file_id is not None:
        raise ValueError("file_id misnames a byte-for-byte copy: give it without new_id and edit")
    new_id = record_id if new_id is None else new_id
    document = load_document(source_dir / f"{record_id}.json.zst")
    document["id"] = new_id
    sidecars = {}
    for kind, manifest in (document.get("sidecars") or {}).items():
        source_file = source_dir / manifest["file"]
        manifest["file"] = f"{new_id}.{kind}.zst"
        if source_file.is_file():
            sidecars[manifest["file"]] = source_file.read_bytes()
    if edit is not None:
        edit(document)
    return write_record(target_dir, document, sidecars)


# --- token data from text: one token per character, like the corpus's fake renderer ----------


def pack_arrays(arrays: list[tuple[str, str, array]]) -> tuple[bytes, dict]:
    """Little-endian arrays at 8-aligned offsets, and their manifest entries."""
    payload, manifest = bytearray(), {}
    for name, dtype, values in arrays:
        payload += bytes(-len(payload) % 8)
        manifest[name] = {"dtype": dtype, "shape": [len(values)], "offset": len(payload)}
        payload += values.tobytes()
    return bytes(payload), manifest


def set_token_texts(document: dict, texts: dict[int, tuple[str, int | None]]) -> bytes:
    """Give token nodes new text (`{node id: (text, sampled_start)}`, others keep an empty text).

    Rebuilds the tokens sidecar (returned, compressed) and every node's `tokens`, one token per
    character, and drops the experts and sampling-mask sidecars so the record stays consistent.
    Each node's message content becomes the text after its scaffold, so text mode agrees.
    """
    ids, logprobs, offsets, text = array("i"), array("d"), array("i"), bytearray()
    for node in document["nodes"]:
        if node.get("tokens") is None:
            continue
        node_text, sampled_start = texts.get(node["id"], ("", None))
        is_model = node["author"] == "model"
        start, byte_start = len(ids), len(text)
        for k, char in enumerate(node_text):
            offsets.append(len(text) - byte_start)
            ids.append(ord(char) + 100)
            sampled = is_model and sampled_start is not None and k >= sampled_start
            logprobs.append(-0.01 * (k - sampled_start + 1) if sampled else (0.0 if is_model else math.nan))
            text += char.encode("utf-8")
        node["tokens"] = {
            "offset": start,
            "length": len(node_text),
            "sampled_start": sampled_start if is_model else None,
            "has_logprobs": is_model,
            "text_offset": byte_start,
            "text_bytes": len(text) - byte_start,
            "experts_offset": None,
            "experts_rows": 0,
            "mask_offset": None,
            "mask_rows": 0,
            "media": [],
        }
        if isinstance(node.get("message"), dict):
            node["message"]["content"] = node_text[sampled_start or 0 :] if is_model else node_text
    payload, arrays = pack_arrays(
        [
            ("token_ids", "int32", ids),
            ("logprobs", "float64", logprobs),
            ("text_offsets", "int32", offsets),
            ("text", "uint8", array("B", text)),
        ]
    )
    document["sidecars"] = {"tokens": {"file": f"{document['id']}.tokens.zst", "arrays": arrays}}
    return compress(payload)


def write_token_record(
    directory, record_id: str, texts: dict[int, tuple[str, int | None]], edit=None
) -> Path:
    """A two-node token record (user, then model) with the given texts, from `tr_ok`."""
    document = load_document(BROKEN / f"{BASE_ID}.json.zst")
    document["id"] = record_id
    tokens = set_token_texts(document, texts)
    if edit is not None:
        edit(document)
    return write_record(directory, document, {f"{record_id}.tokens.zst": tokens})


def write_text_record(directory, record_id: str, user_text: str, reply_text: str, edit=None) -> Path:
    """A two-node text-mode record (user, then model) with the given message texts."""

    def as_text(document):
        document["sidecars"] = {}
        document["capture"] = {"mode": "text"}
        for node, content in zip(document["nodes"], (user_text, reply_text), strict=True):
            node["tokens"] = None
            node["message"]["content"] = content
        if edit is not None:
            edit(document)

    return copy_record(BROKEN, BASE_ID, directory, record_id, as_text)
