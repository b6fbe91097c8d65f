"""Every row a listing's filters keep, as JSON lines: `/v1/trajectories/export` and `skycap-viewer export`.

The lines are the listing's rows (`listing.listed_rows`: the same filters, WHERE, order and encoded
row), read a page at a time inside one read transaction, so the set is one generation of the index
however many rows it holds. They go to a spool file as they are read (past `SPOOL_MEMORY` it is on
disk, so a million rows never sit in memory), and the transaction ends before the first byte is sent:
a slow reader holds nothing of the index's. With `format=rows` each line also carries its record's
trainer rows (`row.py`), read from the record's files as the lines are sent, one record at a
time, each record's files read within the file limit and each path's row written as it is made.
"""

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from skycap_viewer.errors import ApiError, RecordError
from skycap_viewer.record.document import document_path
from skycap_viewer.record.opener import open_record
from skycap_viewer.views.params import MAX_LIMIT, one, parse_sort
from skycap_viewer.views.record.row import path_facts, record_refusal, sample_rows
from skycap_viewer.views.record.trajectory import RecordView
from skycap_viewer.views.run.listing import Cursor, Filters, counted, kept_counts, listed_rows, row_encoder, sparse_rows
from skycap_viewer.wire import encode_json, safe_file_name

FORMATS = ("rollouts", "rows")  # one listing row a line; the same with each record's trainer rows
CONTENT_TYPE = "application/x-ndjson; charset=utf-8"
BATCH = MAX_LIMIT  # rows read per query: a listing page's most
SPOOL_MEMORY = 2**20  # a spool larger than this goes to a temporary file: 16 stalled exports hold 16 MiB
SEND_BYTES = 64 * 2**10  # what one piece of a `rollouts` export holds


@dataclass(frozen=True)
class ExportAsk:
    """What an export asks: the listing's filters and sort (parsed as the listing parses them), its
    format, and the Rollouts view's "no group key" filter (`ungrouped`)."""

    filters: Filters
    key: str
    order: str
    format: str = "rollouts"
    ungrouped: bool = False

    @classmethod
    def parse(cls, params: dict) -> "ExportAsk":
        """The ask of `params`; a bad filter or sort is the listing's 400, a bad format one too."""
        if one(params, "missing") == "true":
            raise ApiError(400, "an export writes the records here; the run index's rows without one are "
                                "/v1/trajectories?missing=true")
        filters = Filters.parse(params)
        key, order, _ = parse_sort(params)
        chosen = one(params, "format") or "rollouts"
        if chosen not in FORMATS:
            raise ApiError(400, f"format must be one of {'|'.join(FORMATS)}, not {chosen!r}")
        return cls(filters, key, order, chosen, one(params, "ungrouped") == "true")


def file_name(run_id: str, ask: ExportAsk) -> str:
    """`<run>-<format>.jsonl`, the run id kept to letters, digits, `.`, `_` and `-` (no quote, no control)."""
    return safe_file_name(run_id, f"-{ask.format}.jsonl", "run")


def spooled_rows(snapshot, ask: ExportAsk, where: tuple[str, list] | None = None):
    """A spool of every kept row as a line, in the listing's order, all read in one transaction, to be
    read from its start. `where` adds a clause the filters do not say (`ungrouped`)."""
    filters = ask.filters.on(snapshot)
    encode = row_encoder({snapshot.id: snapshot.location})
    spool = tempfile.SpooledTemporaryFile(SPOOL_MEMORY)
    try:
        with snapshot.reading() as db:
            matching, _ = kept_counts(counted(db, filters, where), filters)
            cursor = Cursor()
            while True:
                found, last = listed_rows(db, filters, ask.key, ask.order, BATCH, cursor, where,
                                          sparse=matching < sparse_rows(snapshot),
                                          indexed=snapshot.sorted)
                spool.writelines(encode(snapshot.id, json_z, mtime_ns) + b"\n" for json_z, mtime_ns, *_ in found)
                if last is None:
                    break
                cursor = Cursor(0, last)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def exported(spool, directory: Path, ask: ExportAsk) -> Iterator[bytes]:
    """The export's bytes from its spool: the lines as they are, or each with its record's rows."""
    if ask.format == "rollouts":
        while piece := spool.read(SEND_BYTES):
            yield piece
        return
    for line in spool:
        yield from with_rows(line, directory)


def with_rows(line: bytes, directory: Path) -> Iterator[bytes]:
    """One listing line with its record's trainer rows (`rows`, one per path, or one per sample of a path
    that carries several: `row.sample_rows`), or `row_error` saying
    why it has none; a path without a token row has its own `row_error`."""
    row = json.loads(line)
    head = line.rstrip(b"\n")[:-1]  # the row without its closing brace
    try:
        view = record_view(directory, row)
        why = record_refusal(view)
    except NoTrainerRow as error:
        why = str(error)
    if why is not None:
        yield head + b',"row_error":' + encode_json(why) + b"}\n"
        return
    yield head + b',"rows":['
    first = True
    for index, path in enumerate(view.rollout.paths):
        try:
            entries = sample_rows(view, index)  # one a path, or one a sample when a path carries several
        except ApiError as refused:  # a node without tokens, a path past the row limit
            entries = [{**path_facts(view, path), "trains": path.info.trains, "row_error": refused.detail}]
        for entry in entries:
            yield (b"" if first else b",") + encode_json(entry)
            first = False
    yield b"]}\n"


class NoTrainerRow(Exception):
    """Why a listed row's record gives no rows now: it cannot be read, or was rewritten since."""


def record_view(directory: Path, row: dict) -> RecordView:
    """The record of a listed row, read from its files; `NoTrainerRow` when it cannot be read, or was
    rewritten after it was listed (its rows would not be the line's)."""
    if row.get("unreadable"):
        raise NoTrainerRow(f"the record cannot be read: {row.get('error')}")
    path = document_path(directory, row["id"])
    try:
        opened = open_record(directory, row["id"])
        rewritten = os.stat(path).st_mtime_ns // 1_000_000 != row["revision"]
    except RecordError as error:
        raise NoTrainerRow(f"the record cannot be read: {error}") from None
    except OSError as error:
        raise NoTrainerRow(f"the record cannot be read: {path}: {error.strerror or error}") from None
    if rewritten:
        raise NoTrainerRow("the record was rewritten after it was listed: export again for its rows")
    context = {"run_id": row["run_id"], "project": row["project"], "revision": row["revision"]}
    return RecordView.of(opened, context)
