"""A record opened: its document read and which of its sidecars are present, by one rule for every reader.

The server, the index and every command ask the same question of a record directory (is this listed
sidecar there, or did a mirror leave it out?), and they must answer it the same way, or the listing
says "tokens missing" while `check` says "tokens damaged". The rule: a sidecar the document lists is
present when something of that name is in the directory, or, for an object store's copy
(`record/copies.py`), when the store holds it (it is fetched when the record is opened, or read).
A directory, a FIFO or a broken link in its place is present, so its read says what is wrong with
it: a sidecar a mirror left out is one whose name is not there at all.
"""

import os
from typing import NamedTuple

from skycap_viewer.record.copies import fetch_missing, listed_in_copy
from skycap_viewer.record.document import document_path, read_document
from skycap_viewer.record.schema import is_plain_file_name


class OpenedRecord(NamedTuple):
    """What every answer about a record starts from: where it is, its document, its present sidecars'
    file names, and the id it is looked up by (its file's name)."""

    directory: object
    document: dict
    present: frozenset[str]
    record_id: str


def present_sidecars(directory, document: dict) -> frozenset[str]:
    """The listed sidecar files that are in the directory (one lstat each, never opened), or for a
    store's copy in the store."""
    names = [m.get("file") for m in (document.get("sidecars") or {}).values() if isinstance(m, dict)]
    return frozenset(n for n in names if is_plain_file_name(n) and (os.path.lexists(os.path.join(directory, n))
                                                                    or listed_in_copy(directory, n)))


def open_record(directory, record_id: str, read=read_document) -> OpenedRecord:
    """The record `record_id` of `directory`, its document read by `read(path)` (the server's is its
    cache); a store's copy's sidecars are fetched now, together, in a process that can fetch. Raises
    `RecordError` (naming the file) when the document cannot be read."""
    document = read(document_path(directory, record_id))
    present = present_sidecars(directory, document)
    fetch_missing(directory, present)
    return OpenedRecord(directory, document, present, record_id)
