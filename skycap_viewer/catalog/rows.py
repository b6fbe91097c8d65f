"""The index row of one record: its header, summary, flags and strip, from the document alone.

`compute_row(directory, name)` is a pure module-level function of a record directory and a
document file name that returns a dict of plain values, so it can run in another process and
its result can be persisted, keyed by the file's name, size and mtime. Run-specific fields
(`run_id`, `project`) and the file version (`revision`) are added by the index, not here.

A row keeps as Python values only what filters, sorts, groups and the run's facts read; the
whole row as sent (header and summary, strip included) is kept once as its encoded JSON,
compressed (`_json_z`, `catalog/blobs.py`: ~1 KiB instead of ~5 KiB of JSON or ~25 KiB of small dicts): a
listing joins bytes instead of encoding thousands of dicts per request, and a run's rows, in
memory and in the persisted index, take a fraction of the room. Fields starting with `_` are
never sent.

A row's `meta` and `annotations` are bounded, since a trainer may put anything there (a few KiB of
zstd can hold 4 M integers): a value whose JSON is longer than `VALUE_JSON_LIMIT` is kept as
a marker (`{"cut": true, "json_bytes": N, "type": "list"}`), and keys past `MAPPING_JSON_LIMIT`
in all (or longer than `KEY_LIMIT`) are left out; the row's `cut` names the cut keys and counts
the left-out ones per mapping (`{}` when nothing was cut). Everything read from the values (task,
step, reward) is taken from the whole values first. The record's own answer gives them whole.
"""

import json
import os

from skycap_viewer.catalog.blobs import pack, squeezed, unsqueezed
from skycap_viewer.errors import RecordError
from skycap_viewer.flags import ordered, row_flags
from skycap_viewer.record.blocks import BLOCK_KIND_WHY
from skycap_viewer.record.document import link_leaving, read_document_escaped, record_id_of
from skycap_viewer.record.fields import created_ts, cut_marker
from skycap_viewer.record.header import trajectory_header
from skycap_viewer.record.lane import rollout_lane
from skycap_viewer.record.manifest import listed_kinds
from skycap_viewer.record.opener import present_sidecars
from skycap_viewer.record.rollout import Rollout
from skycap_viewer.record.verify import verified_rollout
from skycap_viewer.wire import RawJson, encodable, encode_json, has_lone_surrogate

STRIP_SEGMENTS = 400  # more than a table cell has pixels for; a path with more blocks is drawn merged
SORT_KEYS = ("step", "task", "reward", "turns", "tokens", "health", "trained", "created")
KEPT_FIELDS = ("id", "task_id", "step", "status", "meta", "annotations", "created_ts", "tokenizer", "flags",
               "unreadable", "error")  # what listings filter, sort and group on, besides `_json_z`
VALUE_JSON_LIMIT = 1024  # bytes of JSON: a longer meta or annotations value is kept as a cut marker
MAPPING_JSON_LIMIT = 8 * 1024  # bytes of JSON of a row's meta (and of its annotations), markers included
KEY_LIMIT = 256  # characters: a longer key is left out (no marker could be smaller than it)
SORTED_JSON = json.JSONEncoder(sort_keys=True)  # the `q` text's encoding, made once


def strip_json(blocks: list, token_blocked: bool) -> RawJson:
    """The first path's blocks as a table row's strip, at most `STRIP_SEGMENTS` of them, as JSON.

    A row is kept for every record of a run, so a path of a million blocks must not make a
    million-entry row: past the bound, consecutive blocks share a segment, drawn in the kind
    holding most of its size and saying how many blocks it stands for (`blocks`) and what it
    holds of each kind (`kinds`). A segment of one block is written directly (its kind is one of
    `BLOCK_KIND_WHY`'s names, its other values integers): encoding a dict per block was a
    tenth of a row's cost."""
    if len(blocks) <= STRIP_SEGMENTS:  # the usual case: a segment per block, nothing merged
        openings, after_size = SEGMENT_OPENINGS[token_blocked], AFTER_SIZE[token_blocked]
        segments = [f'{openings[b.kind]}{b.end - b.start}{after_size}"start":{b.start},"end":{b.end}}}' for b in blocks]
        return RawJson(f"[{','.join(segments)}]".encode())
    return RawJson(encode_json(merged_segments(blocks, token_blocked)))


SIZE_MEMBER = {True: '"token_count":', False: '"token_count":null,"char_count":'}  # a segment's size, by unit
AFTER_SIZE = {True: ',"char_count":null,', False: ","}
SEGMENT_OPENINGS = {token_blocked: {kind: f'{{"kind":"{kind}",{SIZE_MEMBER[token_blocked]}' for kind in BLOCK_KIND_WHY}
                    for token_blocked in (True, False)}


def merged_segments(blocks: list, token_blocked: bool) -> list[dict]:
    """`strip_json`'s segments of a path with more than `STRIP_SEGMENTS` blocks, each standing for several."""
    per_segment = -(-len(blocks) // STRIP_SEGMENTS)
    strip = []
    for first in range(0, len(blocks), per_segment):
        members = blocks[first : first + per_segment]
        kinds: dict[str, int] = {}
        for block in members:
            kinds[block.kind] = kinds.get(block.kind, 0) + block.size
        size = sum(kinds.values())
        segment = {
            "kind": max(kinds, key=kinds.__getitem__),
            "token_count": size if token_blocked else None,
            "char_count": None if token_blocked else size,
            "start": members[0].start,
            "end": members[-1].end,
        }
        if len(members) > 1:
            segment.update(blocks=len(members), kinds=kinds)
        strip.append(segment)
    return strip


def summary(rollout: Rollout) -> dict:
    """Sizes, flags, the re-tokenized copies and the first path's strip: what a table row shows."""
    first = rollout.paths[0] if rollout.paths else None
    kinds = {}
    for block in first.blocks if first else []:
        kinds[block.kind] = kinds.get(block.kind, 0) + block.end - block.start
    return {
        "tokens": rollout.tokens,
        "trainable": rollout.trainable,
        "kinds": kinds,
        "flags": rollout.flags,
        "paths": len(rollout.paths),
        "retokenized": len(rollout.retokenized_nodes),
        "strip": strip_json(first.blocks, first.token_blocked) if first else [],
    }


def compute_row(directory: str, name: str, verify: bool = False, parsed: dict | None = None) -> dict:
    """The index row of the record whose document is `directory/name`; never raises for bad records.

    With `verify` its sidecars are read too and what is wrong with them joins the record's problems
    (`_verified` says the row was computed so, or that it lists none: nothing would be read again, and a
    million-node record is not parsed a second time); listings never wait for that. `parsed`: the
    document's parse, already held (the server's open of it), so it is not parsed again."""
    path = os.path.join(directory, name)
    file_id = record_id_of(name)
    # followed, and said: `symlink_to`; a file that is no symlink stays in its directory (one lstat, not two realpaths)
    link = link_leaving(path, directory) if os.path.islink(path) else None
    try:
        document, escaped = read_document_escaped(path) if parsed is None else (parsed, True)
        present = present_sidecars(directory, document)
        rollout = verified_rollout(directory, document, present, file_id) if verify \
            else Rollout(document, present, file_id)
        # the file's id: that is how the record is looked up (a differing document id is a record problem)
        # its strings as they can be stored: a lone surrogate (valid JSON) has no UTF-8 form (`encodable`); the
        # header's strings come from the document, its path and its link: walked when one of them may hold one
        row = trajectory_header(rollout, id=file_id, created_ts=created_ts(document), symlink_to=link)
        if escaped or verify or has_lone_surrogate(f"{path}{link or ''}"):
            row = encodable(row)
        texts = search_texts(row)
        row.update(bounded_values(row, texts))
        row["summary"] = summary(rollout)  # last: the row's JSON is then one encoding and its strip spliced in
        lane = kept_lane(document)
    except RecordError as error:
        return unreadable_row(file_id, str(error), link)
    except Exception as error:  # a document shape the analysis did not foresee: show it, don't crash
        return unreadable_row(file_id, f"{path}: cannot be summarised ({type(error).__name__}: {error})", link)
    row = slim(with_keys(row, texts))
    row["_verified"] = verify or not listed_kinds(document)
    row["_lane"] = lane
    return row


def kept_lane(document: dict) -> tuple:
    """The rollout's lane on its step's axis as the store keeps it (`store.insert_forms`): its start and end
    as columns, what it says packed and squeezed (a third of its size: node ids and finish reasons repeat).
    Computed here, where the document is parsed anyway, so a step's lanes are a query (`views.run.step_timeline`),
    never a second reading of its documents."""
    start, end, says = rollout_lane(document)
    return start, end, squeezed(pack(says))


def unreadable_row(file_id: str, error: str, symlink_to: str | None = None) -> dict:
    """A record that cannot be read: listed with its error, flagged `malformed-record`; what only its
    document could say (its sizes, calls, paths) is null, not 0."""
    flags = ["malformed-record"]
    file_id, error, symlink_to = encodable(file_id), encodable(error), encodable(symlink_to)
    row = {
        "id": file_id, "task_id": None, "step": None, "mode": None, "status": None, "ended": None,
        "meta": {}, "annotations": {}, "created_at": None, "finished_at": None, "tokenizer": None,
        "capture": {"node_count": None, "exchange_count": None, "failure_count": None}, "retries": {},
        "sidecars": {}, "missing_sidecars": [], "record_problems": [error], "flags": flags,
        "skycap": None, "size": {"unit": None, "tokens": None, "trainable": None, "longest": None, "samples": None},
        "samples_rule": None, "reward_value": None,
        "created_ts": None, "unreadable": True, "error": error, "cut": {}, "symlink_to": symlink_to,
        "summary": {"tokens": None, "trainable": None, "kinds": {}, "flags": flags, "paths": None, "retokenized": 0,
                    "strip": []},
    }
    row = slim(with_keys(row))
    row["_verified"] = True  # nothing more to read
    return row


SEARCHED = ("meta", "annotations")  # the mappings a row bounds and its `q` text holds


def search_texts(row: dict) -> dict:
    """{mapping: its `q` text (`SORTED_JSON`)} for the row's whole `meta` and `annotations`: encoded once,
    for the text and for `bounded_mapping`'s usual case."""
    return {name: SORTED_JSON.encode(row[name]) for name in SEARCHED}


def bounded_values(row: dict, texts: dict) -> dict:
    """The row's `meta` and `annotations` as kept (long values cut, see the module doc) and its `cut`;
    the `texts` (`search_texts`) of a mapping that is cut are dropped (they no longer say what is kept)."""
    bounded, cut = {}, {}
    for name in SEARCHED:
        bounded[name], what = bounded_mapping(row[name], texts[name])
        if what:
            cut[name] = what
            del texts[name]
    return {**bounded, "cut": cut}


def bounded_mapping(mapping: dict, text: str | None = None) -> tuple[dict, dict | None]:
    """(`mapping` with long values replaced by markers and keys past the limits left out, what was cut
    as `{"keys": [...], "dropped_keys": n}`, or None when all of it is kept as it is). `text` is its
    `SORTED_JSON` text when known, never shorter than its compact JSON (ASCII escapes and spaces only
    lengthen it; a document holds no NaN, the one value written shorter there), so a short `text` says
    at no cost that no value can be long."""
    if (text is not None and len(text) <= VALUE_JSON_LIMIT) or len(encode_json(mapping)) <= VALUE_JSON_LIMIT:
        return mapping, None
    kept, cut_keys, dropped, room = {}, [], 0, MAPPING_JSON_LIMIT
    for key, value in mapping.items():
        size = len(encode_json(value))
        too_long = size > VALUE_JSON_LIMIT
        if too_long:
            value = cut_marker(value, size)
            size = len(encode_json(value))
        cost = size + len(encode_json(key)) + 2  # `"key":value,`
        if len(key) > KEY_LIMIT or cost > room:
            dropped += 1
            continue
        if too_long:
            cut_keys.append(key)
        kept[key] = value
        room -= cost
    if not cut_keys and not dropped:
        return mapping, None
    return kept, {"keys": cut_keys, "dropped_keys": dropped}


def with_keys(row: dict, texts: dict | None = None) -> dict:
    """Add the precomputed sort keys, search text, flags as one string and the count of re-tokenized
    copies the run's facts add up (`_keys`, `_text`, `_flagkey`, `_retokenized`); `texts` holds the
    mappings' texts already encoded (`search_texts`)."""
    texts = texts or {}
    row["_keys"] = {
        "step": row["step"],
        "task": row["task_id"],
        "reward": row["reward_value"],
        "turns": row["capture"]["exchange_count"],
        "tokens": row["summary"]["tokens"],
        "health": len(row_flags(ordered(row["summary"]["flags"]))),
        "trained": None,  # what the run index says, given by the store (`run_index.overlaid`)
        "created": row["created_ts"],
    }
    texts = [texts.get(name) or SORTED_JSON.encode(row[name]) for name in SEARCHED]
    row["_text"] = " ".join([row["id"], *texts]).lower()
    row["_flagkey"] = " ".join(row["summary"]["flags"])  # rows with the same flags are counted together
    row["_retokenized"] = row["summary"]["retokenized"]
    return row


def slim(row: dict) -> dict:
    """The row as kept: the fields listings read, plus the whole public row encoded once."""
    kept = {key: row[key] for key in KEPT_FIELDS if key in row}
    sent = {}
    for key, value in row.items():
        if key[0] == "_":
            kept[key] = value
        else:
            sent[key] = value
    summary = sent.pop("summary")  # the last member, its strip JSON already: spliced in, the rest encoded once
    kept["_json_z"] = squeezed(b"".join((encode_json(sent)[:-1], b',"summary":', encode_json(summary), b"}")))
    return kept


def json_of(json_z: bytes) -> bytes:
    """A row as sent (without run fields), as JSON, from its compressed JSON (`_json_z`)."""
    return unsqueezed(json_z)


def public(row: dict) -> dict:
    """The row as sent (without run fields)."""
    return json.loads(json_of(row["_json_z"]))
