"""Damaged and hostile skycap records for the robustness tests, made from the fixture corpus.

Every maker starts from a good record of the corpus, decompresses its document (and, when the
damage is in the tokens, its sidecar), edits it and re-compresses it with
`skycap_viewer.record.frames.compress`, the way skycap writes. Files are written the way skycap writes
them too: to `.{name}.tmp` and then `os.replace`d in, sidecars first, document last. Nothing is
ever written into the fixture directory.

`BAD_CASES` says, for every damaged record, what the viewer must make of it; the bad-input
tests hold the server and `check` to it.
"""

import json
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from skycap_viewer.record.frames import compress
from tests.support.corpus import BROKEN
from tests.support.records import BASE_ID, atomic_write, copy_record, load_document

# --- the catalogue of bad input ---------------------------------------------------------------


@dataclass(frozen=True)
class BadCase:
    """One damaged record and what the viewer must say about it.

    `expect` is one of:
      "unreadable"        listed with `unreadable: true` and an `error` matching `problem`;
      "malformed"         listed and viewable, flagged `malformed-record`, `record_problems` match;
      "tokens-unreadable" listed and viewable from message text (`text_only: "tokens-unreadable"`),
                          `tokens_error` matching;
      "tokens-missing"    listed and viewable from message text (`text_only: "tokens-missing"`);
      "valid"             listed and viewable like any good record, with no malformed flag;
      "listed"            hostile but not necessarily wrong: listed, and no route answers 5xx.
    """

    record_id: str
    expect: str
    problem: str  # a regular expression the viewer's message must match (case-insensitive)
    make: object = None  # callable(directory, record_id); None: copy `broken/{record_id}` as is

    def matches(self, message) -> bool:
        return bool(re.search(self.problem, str(message or ""), re.IGNORECASE))


def _edited(change):
    """A maker: `tr_ok` copied under the case's id with `change(document)` applied."""
    return lambda directory, record_id: copy_record(BROKEN, BASE_ID, directory, record_id, change)


def _raw_document(payload: bytes):
    """A maker: `tr_ok`'s sidecars with a document frame holding exactly `payload`."""

    def make(directory, record_id):
        copy_record(BROKEN, BASE_ID, directory, record_id)
        atomic_write(Path(directory) / f"{record_id}.json.zst", compress(payload))

    return make


def _tokens_array(name):
    return lambda document: document["sidecars"]["tokens"]["arrays"][name]


def _not_utf8(directory, record_id):
    copy_record(BROKEN, BASE_ID, directory, record_id)
    text = json.dumps(load_document(Path(directory) / f"{record_id}.json.zst")).encode()
    atomic_write(
        Path(directory) / f"{record_id}.json.zst",
        compress(text.replace(b'"finished"', b'"fin\xff\xfeished"')),
    )


def _non_finite(directory, record_id):
    """NaN and infinities are valid Python JSON but not valid JSON: the server must not echo them."""
    copy_record(BROKEN, BASE_ID, directory, record_id)
    text = json.dumps(load_document(Path(directory) / f"{record_id}.json.zst"))
    text = text.replace('"reward": 1.0', '"reward": NaN, "score": Infinity, "loss": -Infinity')
    text = text.replace('"created_at": 1795941088.863662', '"created_at": 1e999')
    atomic_write(Path(directory) / f"{record_id}.json.zst", compress(text.encode()))


def _huge_numbers(document):
    """Integers JSON allows but a float cannot hold, wherever the viewer does arithmetic."""
    huge = 10**400
    document["annotations"]["reward"] = huge
    document["meta"].update(step=huge, attempt=-huge, repetition_id=huge, instance_id=huge)
    document["created_at"] = document["finished_at"] = huge
    document["nodes"][1]["calls"][0].update(t_start=-huge, t_end=huge)


def _damaged_sidecar(data: bytes):
    def make(directory, record_id):
        copy_record(BROKEN, BASE_ID, directory, record_id)
        atomic_write(Path(directory) / f"{record_id}.tokens.zst", data)

    return make


def _sidecar_is_directory(directory, record_id):
    copy_record(BROKEN, BASE_ID, directory, record_id)
    sidecar = Path(directory) / f"{record_id}.tokens.zst"
    sidecar.unlink()
    sidecar.mkdir()


def _document_is_directory(directory, record_id):
    (Path(directory) / f"{record_id}.json.zst").mkdir()


def _unreadable_document(directory, record_id):
    """chmod 000 when that means something; as root (CI) a dangling symlink stands in."""
    path = Path(directory) / f"{record_id}.json.zst"
    if os.geteuid() == 0:
        print(f"running as root: chmod 000 would not stop a read, so {path.name} is a dangling symlink")
        path.symlink_to(Path(directory) / "no-such-file.json.zst")
    else:
        copy_record(BROKEN, BASE_ID, directory, record_id)
        path.chmod(0)


def _unknown_everywhere(document):
    """Future fields at every level the format has: a reader must ignore them all."""

    def add(mapping):
        if isinstance(mapping, dict):
            mapping["x_future"] = {"nested": [1, "two", None], "note": "ignore me"}

    add(document)
    for key in ("meta", "capture", "annotations", "retries", "tools"):
        add(document.get(key))
    for failure in document.get("failures") or []:
        add(failure)
    for node in document["nodes"]:
        for mapping in (node, node.get("message"), node.get("tokens"), *(node.get("calls") or [])):
            add(mapping)
    for manifest in (document.get("sidecars") or {}).values():
        add(manifest)
        for spec in manifest["arrays"].values():
            add(spec)


def _field(where, key, value):
    """A maker: `tr_ok` with `where(document)[key] = value`."""

    def change(document):
        where(document)[key] = value

    return _edited(change)


def _top(document):
    return document


def _node(index):
    return lambda document: document["nodes"][index]


def _message(index):
    return lambda document: document["nodes"][index]["message"]


def _tokens(index):
    return lambda document: document["nodes"][index]["tokens"]


def _manifest(kind):
    return lambda document: document["sidecars"][kind]


# the corpus's broken/ records, copied as they are: (id, expect, problem)
FIXTURE_CASES = [
    ("tr_ok", "valid", ""),
    ("tr_future_fields", "valid", ""),
    ("tr_bad_call", "valid", ""),
    ("tr_missing_experts", "valid", ""),
    ("tr_bad_version", "unreadable", r"format_version 2"),
    ("tr_no_version", "unreadable", r"format_version.*(missing|none|absent)"),
    ("tr_truncated_doc", "unreadable", r"truncated"),
    ("tr_not_zstd", "unreadable", r"zstd"),
    ("tr_not_json", "unreadable", r"JSON"),
    ("tr_json_list", "unreadable", r"JSON (list|array)"),
    ("tr_empty_file", "unreadable", r"empty|0 bytes"),
    ("tr_two_frames_split", "unreadable", r"frame"),
    ("tr_two_frames_appended", "unreadable", r"frame"),
    ("tr_ids_mismatch", "unreadable", r"creation order|node 1"),
    ("tr_nodes_swapped", "unreadable", r"creation order|parent|node 0"),
    ("tr_parent_out_of_range", "unreadable", r"parent 7"),
    ("tr_no_nodes", "unreadable", r"nodes"),
    ("tr_no_status", "unreadable", r"status"),
    ("tr_no_id", "unreadable", r"\bid\b"),
    ("tr_id_mismatch", "malformed", r"tr_someone_else"),
    ("tr_offsets_out_of_range", "malformed", r"node 1 tokens"),
    ("tr_text_out_of_range", "malformed", r"node 1 text"),
    ("tr_mask_out_of_range", "malformed", r"mask"),
    ("tr_experts_out_of_range", "malformed", r"experts"),
    ("tr_bad_dtype", "malformed", r"float32"),
    ("tr_misaligned", "malformed", r"multiple of 8"),
    ("tr_shape_too_big", "malformed", r"length|10000"),
    ("tr_wrong_file", "malformed", r"tr_elsewhere\.tokens\.zst"),
    ("tr_missing_tokens", "tokens-missing", r"tokens"),
    ("tr_truncated_sidecar", "tokens-unreadable", r"truncated"),
    ("tr_sidecar_two_frames", "tokens-unreadable", r"frame"),
    ("tr_text_mid_char", "tokens-unreadable", r"UTF-8"),
]
# sidecar file names that try to leave the record directory: (case, kind, name, how the message quotes it)
ESCAPING_NAMES = [
    ("slash", "tokens", "sub/tr_gen_sidecar_slash.tokens.zst", r"sub/"),
    ("dotdot", "tokens", "../good/tr_tokens.tokens.zst", r"\.\./"),
    ("parent", "tokens", "..", r"'\.\.'"),
    ("absolute", "tokens", "/etc/passwd", r"/etc/passwd"),
    ("backslash", "experts", "..\\..\\x.experts.zst", r"plain file name"),
    ("nul", "experts", "tr_gen_sidecar_nul.experts.zst\x00.png", r"plain file name"),
]
# values of the wrong type or size where the viewer shows or sorts them: listed, never a 5xx
HOSTILE_VALUES = [
    ("meta_list", _top, "meta", [1, 2]),
    ("annotations_string", _top, "annotations", "x"),
    ("status_number", _top, "status", 5),
    ("samples_junk", _top, "samples", {"paths": 3, "rows": "x"}),
    ("meta_step_junk", _top, "meta", {"step": "NaN", "task": {"a": 1}, "instance_id": [1], "attempt": "2"}),
    ("message_string", _node(1), "message", "hi"),
    ("message_null", _node(0), "message", None),
    ("shadowed_far", _node(0), "shadowed_by", 99),
    ("call_junk", _node(1), "calls", [{"t_start": "yesterday", "t_end": None, "finish_reason": 5,
                                       "bridged": "yes", "usage": [], "sampling": 3}]),
    ("content_number", _message(1), "content", 5),
    ("content_parts", _message(0), "content", [{"type": "text", "text": 7}, "bare string", None,
                                               {"type": "image_url", "image_url": None}]),
    ("tool_calls_junk", _message(1), "tool_calls", [None, 3, {"function": None},
                                                    {"function": {"name": 5, "arguments": {"not": "a string"}}}]),
]

BAD_CASES = [
    *(BadCase(record_id, expect, problem) for record_id, expect, problem in FIXTURE_CASES),
    BadCase("tr_gen_not_utf8", "unreadable", r"UTF-8", _not_utf8),
    BadCase("tr_gen_json_string", "unreadable", r"JSON str", _raw_document(b'"a string"')),
    BadCase("tr_gen_json_number", "unreadable", r"JSON (int|number)", _raw_document(b"42")),
    BadCase("tr_gen_json_null", "unreadable", r"JSON null", _raw_document(b"null")),
    BadCase("tr_gen_deep_nesting", "unreadable", r"JSON|deep|nest|recursion",
            _raw_document(b'{"id":' + b"[" * 200_000 + b"]" * 200_000 + b"}")),
    BadCase("tr_gen_version_string", "unreadable", r"format_version", _field(_top, "format_version", "1")),
    BadCase("tr_gen_nodes_object", "unreadable", r"nodes", _field(_top, "nodes", {"0": {}})),
    BadCase("tr_gen_parent_self", "unreadable", r"parent 1", _field(_node(1), "parent", 1)),
    BadCase("tr_gen_parent_negative", "unreadable", r"parent -1", _field(_node(1), "parent", -1)),
    BadCase("tr_gen_node_id_string", "unreadable", r"creation order|node 0|id", _field(_node(0), "id", "0")),
    *(BadCase(f"tr_gen_sidecar_{case}", "unreadable", problem, _field(_manifest(kind), "file", name))
      for case, kind, name, problem in ESCAPING_NAMES),
    BadCase("tr_gen_dtype_int8", "malformed", r"int8", _field(_tokens_array("token_ids"), "dtype", "int8")),
    BadCase("tr_gen_misaligned_text", "malformed", r"multiple of 8", _field(_tokens_array("text"), "offset", 123)),
    BadCase("tr_gen_shape_not_list", "unreadable", r"shape", _field(_tokens_array("text"), "shape", "31")),
    BadCase("tr_gen_negative_offset", "unreadable", r"offset", _field(_tokens(1), "offset", -1)),
    BadCase("tr_gen_sampled_start_past", "unreadable", r"sampled_start", _field(_tokens(1), "sampled_start", 99)),
    BadCase("tr_gen_unknown_sidecar_kind", "malformed", r"audio",
            _field(lambda d: d["sidecars"], "audio", {"file": "x.audio.zst", "arrays": {}})),
    BadCase("tr_gen_sidecar_not_zstd", "tokens-unreadable", r"zstd", _damaged_sidecar(b"not a zstd frame")),
    BadCase("tr_gen_sidecar_empty", "tokens-unreadable", r"empty|0 bytes", _damaged_sidecar(b"")),
    BadCase("tr_gen_sidecar_directory", "tokens-unreadable|tokens-missing", r"director|tokens",
            _sidecar_is_directory),
    BadCase("tr_gen_document_directory", "unreadable", r"director", _document_is_directory),
    BadCase("tr_gen_unreadable", "unreadable", r"permission|no such file|cannot read|denied", _unreadable_document),
    BadCase("tr_gen_unknown_everywhere", "valid", "", _edited(_unknown_everywhere)),
    BadCase("tr_gen_non_finite", "listed", "", _non_finite),
    BadCase("tr_gen_huge_int", "valid", "", _edited(_huge_numbers)),
    BadCase("tr_gen_times_strings", "listed", "", _edited(lambda d: d.update(created_at="now", finished_at=[]))),
    *(BadCase(f"tr_gen_{case}", "listed", "", _field(where, key, value)) for case, where, key, value in HOSTILE_VALUES),
    BadCase("tr_gen_media_past_node", "malformed", r"node 0 media item 1: tokens \[2, 40\) run past the node.s 3",
            _field(_tokens(0), "media", [{"modality": "image", "offset": 0, "length": 1, "hash": "cat"},
                                         {"modality": "image", "offset": 2, "length": 38, "hash": "dog"}])),
    BadCase("tr_gen_media_not_list", "malformed", r"node 0 tokens\.media is 'cat', not a list",
            _field(_tokens(0), "media", "cat")),
    BadCase("tr_gen_media_junk", "malformed", r"node 0 media item 0: is None.*\(and 2 more with problems\)",
            _field(_tokens(0), "media", [None, {"modality": "image", "offset": "2", "length": 1, "hash": "x"},
                                         {"modality": ["image"], "offset": 0, "length": 1, "hash": "x"}])),
]
BAD_IDS = [case.record_id for case in BAD_CASES]


def write_bad_run(directory: Path) -> Path:
    """Every case of `BAD_CASES` in one record directory (sidecars without a document are left out)."""
    directory.mkdir(parents=True, exist_ok=True)
    for case in BAD_CASES:
        if case.make is None:
            for source in BROKEN.glob(f"{case.record_id}.*"):
                shutil.copyfile(source, directory / source.name)
        else:
            case.make(directory, case.record_id)
    return directory


def restore_permissions(directory: Path) -> None:
    """Undo `chmod 000` so pytest can delete the temporary tree."""
    for path in directory.rglob("*"):
        if not path.is_symlink() and not stat.S_IMODE(path.lstat().st_mode):
            path.chmod(0o644)
