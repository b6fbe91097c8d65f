"""Read skycap record directories: list records, read documents, find sidecar files.

A record is `{id}.json.zst` (the document) plus optional sidecars named in the document's
manifest. This module never opens a sidecar: `sidecars.py` does, and only when asked.
Everything that goes wrong raises `RecordError` naming the file and the problem.
"""

import gc
import json
import os
import re
import stat
from json.decoder import scanstring
from pathlib import Path

from skycap_viewer.errors import RecordError
from skycap_viewer.record.copies import ensure_local
from skycap_viewer.record.frames import FrameError, decompress_one_frame, file_limit, stored_size_problem
from skycap_viewer.record.schema import check_structure

DOCUMENT_SUFFIX = ".json.zst"
BYTES_PER_CONTAINER = 16  # of the file limit, for each JSON object or array a document's parse may build
BYTES_PER_VALUE = 12  # of the file limit, for each JSON value (a string, a number...) a document's parse may build
BYTES_PER_PARSED_VALUE = 56  # a short str, a float or a small dict's share, and its slot in a list or dict
JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes included
STEPPED_PARSE_CHARS = 4 * 2**20  # a longer document is parsed in steps: json.loads would hold the lock ~0.2 s+
SHARED_VALUES_CHARS = 32 * 2**20  # a document this long shares its short strings too, not only its keys...
SHARED_CHARS = 16  # ...a string this short is one object with its equals (`SharedValues`)...
SHARED_STRINGS = 65_536  # ...the first this many distinct ones
SURROGATE_ESCAPE = re.compile(r"\\u[dD]")  # how a lone surrogate can be written in strict UTF-8 JSON
SHARED_SHAPES = 1024  # key sets whose objects share one table of their keys, in such a document (`SharedValues`)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
FORMAT_VERSION = 1


def is_document_name(name: str) -> bool:
    """A trajectory document: `*.json.zst`, not a dotfile or a writer's temporary name."""
    return name.endswith(DOCUMENT_SUFFIX) and not name.startswith(".") and len(name) > len(DOCUMENT_SUFFIX)


def record_id_of(name: str) -> str:
    return name[: -len(DOCUMENT_SUFFIX)]


def document_path(directory, record_id: str) -> Path:
    return Path(directory) / f"{record_id}{DOCUMENT_SUFFIX}"


def link_leaving(path, inside) -> str | None:
    """The real path of `path` when a symlink (it or a directory on the way) takes it out of the real
    directory `inside`, else None: such links are followed, and said, never silently."""
    real = os.path.realpath(path)
    return None if Path(real).is_relative_to(os.path.realpath(inside)) else real


def list_record_ids(directory) -> list[str]:
    """Ids of the records in `directory`, sorted (skycap's `list_ids`)."""
    with os.scandir(directory) as entries:
        return sorted(record_id_of(e.name) for e in entries if is_document_name(e.name))


def parse_document(data: bytes, path) -> dict:
    """Decode and validate one document file's bytes; raise `RecordError` if it isn't v1."""
    return parse_document_text(document_text(data, path), path)


def parse_document_sized(data: bytes, path) -> tuple[dict, int]:
    """`parse_document`, and what it weighs in a cache (`parsed_bytes`)."""
    text = document_text(data, path)
    return parse_document_text(text, path), parsed_bytes(text)


def parsed_bytes(text: str) -> int:
    """About what the parse of `text` holds, an upper bound: its length, and `BYTES_PER_PARSED_VALUE` for
    each value it may build (`structure_counts`). Its length alone would say 120 MB for 24 M strings
    of two characters, which take 1.4 GB once parsed."""
    return len(text) + BYTES_PER_PARSED_VALUE * structure_counts(text)[1]


def document_text(data: bytes, path) -> str:
    """One document file's bytes as JSON text: one zstd frame within the file limit, UTF-8 (a search
    looks at it before parsing, `record/search.py`)."""
    try:
        payload = decompress_one_frame(data, file_limit(), "the document")
    except FrameError as error:
        raise RecordError(path, str(error)) from None
    try:
        return payload.decode("utf-8")  # one copy of the text at a time: the caller holds no payload
    except UnicodeDecodeError as error:
        raise RecordError(path, f"the document is not UTF-8 ({error.reason} at byte {error.start})") from None


def json_container_limit() -> int:
    """The most JSON objects and arrays a document's parse may build: one per `BYTES_PER_CONTAINER` of
    the file limit (8 M at the default 128 MiB). A legit record holds far fewer per byte (a chain's
    node is 3 in ~160 bytes); 120 MB of `{},` would build 40 M dicts, ~3 GB in Python."""
    return file_limit() // BYTES_PER_CONTAINER


def json_value_limit() -> int:
    """The most JSON values (strings, numbers, objects, arrays, literals) a document's parse may build:
    one per `BYTES_PER_VALUE` of the file limit (11 M at 128 MiB). A legit record holds fewer per byte
    (a chain's node is ~12 in ~160 bytes); 120 MB of `"ab",` would build 24 M strings, ~1.9 GB."""
    return file_limit() // BYTES_PER_VALUE


def container_problem(text: str) -> str | None:
    """Why `text` may not be parsed: more objects and arrays than `json_container_limit`, or more values
    than `json_value_limit` (`items_past`), else None."""
    containers_limit, values_limit = json_container_limit(), json_value_limit()
    found = items_past(text, containers_limit, values_limit)
    if found is None:
        return None
    containers, values = found
    if containers > containers_limit:
        return (f"the document's JSON text holds {containers:,} objects and arrays, past the {containers_limit:,} "
                f"a parse may build: one per {BYTES_PER_CONTAINER} bytes of the --max-file-mib limit")
    return (f"the document's JSON text holds {values:,} values (strings, numbers, objects, arrays), past the "
            f"{values_limit:,} a parse may build: one per {BYTES_PER_VALUE} bytes of the --max-file-mib limit")


def items_past(text: str, containers_limit: int, values_limit: int) -> tuple[int, int] | None:
    """(objects and arrays, values) the JSON `text` may build when either passes its limit, else None: the
    one guard of every JSON the viewer parses from a file (a document, a run index file), taken before it is
    parsed. Counted first over the whole text (a bound, cheap to take: brackets and commas in strings count
    too), then, only when that bound passes a limit, outside the strings: a long tool output full of commas
    is not refused."""
    if (len(text) + 1) // 2 <= min(containers_limit, values_limit):  # n values take 2n - 1 characters at least
        return None
    containers, values = structure_counts(text)
    if containers <= containers_limit and values <= values_limit:
        return None
    containers, values = structure_counts(JSON_STRING.sub('""', text))  # text: bytes' slices would cost ~100 B each
    return None if containers <= containers_limit and values <= values_limit else (containers, values)


def structure_counts(text: str) -> tuple[int, int]:
    """(objects and arrays, values) the JSON `text` can build at most: its opening brackets, and those
    plus its commas, plus one (every value but a container's first follows a comma)."""
    containers = text.count("{") + text.count("[")
    return containers, containers + text.count(",") + 1


def parse_document_text(text: str, path) -> dict:
    """Parse and validate a document's JSON text; raise `RecordError` if it isn't v1, or would cost
    more to parse than its budget (`container_problem`)."""
    problem = container_problem(text)
    if problem:
        raise RecordError(path, problem)
    try:
        document = parse_json(text)
    except (ValueError, RecursionError) as error:
        raise RecordError(path, f"the document is not JSON ({error})") from None
    if not isinstance(document, dict):
        raise RecordError(path, f"the document is a JSON {_json_type(document)}, not an object")
    version = document.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        shown = "missing" if "format_version" not in document else json.dumps(version)
        raise RecordError(path, f"format_version {shown}; this viewer reads format_version 1 only")
    problem = check_structure(document)
    if problem:
        raise RecordError(path, problem)
    return document


def read_regular_file(path, what: str = "document", limit: int | None = None) -> bytes:
    """The bytes of the record file at `path` (`what` names it in errors), which must decompress to at
    most `limit` bytes (the file limit by default): a larger file is refused before it is read.

    Opened without blocking and checked to be a regular file first: reading a FIFO named like
    a record file would otherwise wait forever for a writer. A sidecar of a store's copy is fetched
    first if it is not yet (`record/copies.py`).
    """
    if what == "sidecar":
        ensure_local(path)
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            status = os.fstat(handle.fileno())
            mode = status.st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not stat.S_ISREG(mode):
                raise RecordError(path, f"is {special_kind(mode)}, not a {what} file")
            too_big = stored_size_problem(status.st_size, file_limit() if limit is None else limit)
            if too_big:
                raise RecordError(path, f"the {what} {too_big}")
            return handle.read()
    except IsADirectoryError:
        raise RecordError(path, f"is a directory, not a {what} file") from None
    except OSError as error:
        raise RecordError(path, f"cannot read the file ({error.strerror or error})") from None


def special_kind(mode: int) -> str:
    """What a file that is neither regular nor a directory is, named as a user knows it."""
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return "not a regular file"


def read_document(path) -> dict:
    """Read and validate the document at `path`."""
    return parse_document(read_regular_file(path), path)


def read_document_escaped(path) -> tuple[dict, bool]:
    """`read_document`, and whether its strings may hold a lone surrogate. The text is strict UTF-8, so one
    comes only from a `\\uD800`-`\\uDFFF` escape: a text without `\\ud` (or `\\uD`) holds none, and what is
    made from its strings need not be walked for one (`wire.encodable`, ~6% of an index row). Asked by a regular
    expression: `"\\ud" in text`, a search that skips at most three characters at a time, cost five times
    more (45 µs of a realistic record's row)."""
    text = document_text(read_regular_file(path), path)
    return parse_document_text(text, path), SURROGATE_ESCAPE.search(text) is not None


def read_document_sized(path) -> tuple[dict, int]:
    """`read_document`, and what it weighs in a cache (`parsed_bytes`)."""
    return parse_document_sized(read_regular_file(path), path)


def parse_json(text: str):
    """`json.loads`, NaN and Infinity refused; a long text is parsed in steps (`parse_in_steps`)."""
    if len(text) <= STEPPED_PARSE_CHARS:
        if text.startswith("\ufeff"):  # refused as `json.loads` refuses it, which `decode` alone does not
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return _DECODER.decode(text)  # made once: `json.loads` with an argument makes a decoder a call (~4 µs)
    collecting = gc.isenabled()
    gc.disable()  # millions of new objects would trigger collections that walk them all, again and again
    try:
        shared = SharedValues()
        if len(text) > SHARED_VALUES_CHARS:
            hook, item = shared.object, shared.value
        else:
            hook, item = shared.keyed, None
        document = parse_in_steps(text, json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=hook),
                                  item)
        gc.freeze()  # plain acyclic objects: later collections need not walk them either (refcounts free them)
    finally:
        if collecting:
            gc.enable()
    return document


def parse_in_steps(text: str, decoder: json.JSONDecoder, shared=None):
    """Parse a JSON object one member at a time, and a member that is a list one item at a time.

    `json.loads` holds the interpreter lock for the whole text: a 70 MiB document of a million nodes
    would stop every request thread of the server for seconds. Parsed item by item, the lock is
    given up between items, so listings keep answering while such a record is opened. The result
    and the refusals are json.loads's: only the error messages' wording may differ. A list member's items
    are given as `shared(item)` (`SharedValues.value`), when given."""
    at = _skip_space(text, 0)
    if text[at : at + 1] != "{":
        return decoder.decode(text)  # not an object: read whole, and refused by the caller
    result, at = {}, _skip_space(text, at + 1)
    if text[at : at + 1] == "}":
        at += 1
    else:
        while True:
            if text[at : at + 1] != '"':
                raise ValueError(f"Expecting property name enclosed in double quotes: char {at}")
            key, at = scanstring(text, at + 1)
            at = _skip_space(text, at)
            if text[at : at + 1] != ":":
                raise ValueError(f"Expecting ':' delimiter: char {at}")
            at = _skip_space(text, at + 1)
            if text[at : at + 1] == "[":
                result[key], at = _list_in_steps(text, at, decoder, shared)
            else:
                result[key], at = decoder.raw_decode(text, at)
            at = _skip_space(text, at)
            if text[at : at + 1] == "}":
                at += 1
                break
            if text[at : at + 1] != ",":
                raise ValueError(f"Expecting ',' delimiter: char {at}")
            at = _skip_space(text, at + 1)
    if _skip_space(text, at) != len(text):
        raise ValueError(f"Extra data: char {at}")
    return result


def _list_in_steps(text: str, at: int, decoder: json.JSONDecoder, shared) -> tuple[list, int]:
    """The JSON list starting at `text[at]` (a `[`), item by item, and where it ends."""
    items, at = [], _skip_space(text, at + 1)
    if text[at : at + 1] == "]":
        return items, at + 1
    while True:
        item, at = decoder.raw_decode(text, at)
        items.append(item if shared is None else shared(item))  # as it comes: millions of "ab" never all held
        at = _skip_space(text, at)
        if text[at : at + 1] == "]":
            return items, at + 1
        if text[at : at + 1] != ",":
            raise ValueError(f"Expecting ',' delimiter: char {at}")
        at = _skip_space(text, at + 1)


class SharedValues:
    """One long parse's tables of keys and short strings, so equal ones are one object: `json.loads` shares
    equal keys across a whole text, but each `raw_decode` call starts afresh, and a million nodes each
    holding their own copies of the same few keys take twice the memory; their roles, authors and finish
    reasons (~190 bytes a node of a chain), or millions of two-character strings in a list (51 bytes each),
    take more than the rest of the parse. Strings are shared up to `SHARED_CHARS` characters, the first
    `SHARED_STRINGS` distinct ones: a text of millions of distinct short strings makes no bigger table.
    Past `SHARED_VALUES_CHARS` the objects of one key set also share one table of their keys (`shaped`), and
    an object's integer n is one object with every other n once 0 to n have been met in that order (a
    chain's ids, parents and depths: 56 bytes a node; a list grown one by one, never past the text's values).
    Sharing strings costs ~35% more instructions to parse a chain (`bench/parse_cost.py`), keys alone nothing:
    strings are shared only past `SHARED_VALUES_CHARS`, where what they save is hundreds of megabytes."""

    def __init__(self):
        self.keys: dict[str, str] = {}
        self.strings: dict[str, str] = {}
        self.shapes: dict[tuple, type] = {}  # the objects' key sets -> the class whose instance dicts they are
        self.numbers: list[int] = []  # numbers[n] is n, the first met: a node's id, depth, its children's parent

    def value(self, value):
        """`value`, or the equal short string met before."""
        if type(value) is not str or len(value) > SHARED_CHARS:
            return value
        strings = self.strings
        return strings.setdefault(value, value) if len(strings) < SHARED_STRINGS else strings.get(value, value)

    def keyed(self, pairs) -> dict:
        """The object hook below `SHARED_VALUES_CHARS`: keys from the table, values as parsed."""
        keys = self.keys
        return {keys.setdefault(key, key): item for key, item in pairs}

    def object(self, pairs) -> dict:
        """The object hook past `SHARED_VALUES_CHARS`: the object `shaped`, its short strings from the table,
        a list's short strings too."""
        made = self.shaped(pairs)
        strings = self.strings
        share = strings.setdefault if len(strings) < SHARED_STRINGS else strings.get  # a little past it at most
        numbers = self.numbers
        for key, item in made.items():
            kind = type(item)
            if kind is str:
                if len(item) <= SHARED_CHARS:
                    made[key] = share(item, item)  # a value replaced, not a key added: the walk goes on
            elif kind is int:
                if 0 <= item < len(numbers):
                    made[key] = numbers[item]
                elif item == len(numbers):
                    numbers.append(item)
            elif kind is list and item:
                item[:] = map(self.value, item)
        return made

    def shaped(self, pairs) -> dict:
        """The object of `pairs` as a plain dict whose keys are held once for every object of its key set:
        the instance dict of a class made for that key set (CPython's key-sharing dicts), which holds only
        its values, ~100 bytes less than a dict for each of a chain's nodes and messages (~250 MB of a
        million-node chain's; on CPython 3.11+: 3.10's holds its own keys). Equal to a dict and encoded as one,
        in its own order; a value set later works as in any dict. The first `SHARED_SHAPES` key sets only: a text
        of many makes no more classes."""
        names = tuple([key for key, _ in pairs])
        shape = self.shapes.get(names)
        if shape is None:
            if len(self.shapes) >= SHARED_SHAPES:
                return self.keyed(pairs)
            shape = self.shapes[names] = type("SharedKeys", (), {})
        made = shape().__dict__
        made.update(pairs)
        return made


def _skip_space(text: str, at: int) -> int:
    return _JSON_SPACE.match(text, at).end()


def _refuse_constant(name: str):
    """NaN and Infinity are not JSON (skycap's orjson neither writes nor reads them)."""
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _json_type(value) -> str:
    return {list: "list", str: "str", int: "int", float: "float", bool: "bool"}.get(type(value), "null")
