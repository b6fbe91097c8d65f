"""The read API: one function per route, each taking the parsed request and returning (status, payload).

A route finds the runs it covers and hands the answer to its view (`views/`: the listings, the
groups, the parameters). What stays here is the reading of records: they are found through the
catalog's index by id, never by a path taken from the request; the detail routes read one
document (cached by the file's version) and `/paths` with text also reads the tokens sidecar,
checking afterwards that a writer did not replace the record's files in between. And the text
searches, which outlive a request.
"""

import os
import time
from pathlib import Path
from typing import NamedTuple

from skycap_viewer import __version__
from skycap_viewer.catalog.index import Catalog, Snapshot
from skycap_viewer.catalog.remote_copy import Mirrors
from skycap_viewer.catalog.rows import public
from skycap_viewer.errors import ApiError, RecordError, UsageError
from skycap_viewer.flags import flag_catalogue, text_only_catalogue
from skycap_viewer.record.blocks import BLOCK_KIND_WHY
from skycap_viewer.record.copies import copy_source, copy_url_of, listed_in_copy
from skycap_viewer.record.document import document_path
from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.opener import OpenedRecord, open_record, present_sidecars
from skycap_viewer.record.search import Query, query_problem
from skycap_viewer.record.support import support_flags
from skycap_viewer.server.caches import (
    DOCUMENT_CACHE_BYTES,
    PATHS_CACHE_BYTES,
    RECORD_VIEW_CACHE_BYTES,
    RECORD_VIEW_CACHE_SIZE,
    AnswerCache,
    DocumentCache,
    ViewCache,
    files_version,
)
from skycap_viewer.server.searches import Search, Searches
from skycap_viewer.views.params import (
    as_written,
    bounded_count,
    group_keys,
    key_list,
    layer_param,
    node_param,
    number,
    one,
    parse_page,
    part_start,
    path_number,
    path_segment,
    side_scope,
)
from skycap_viewer.views.record.calls import exchanges_part, timeline_part
from skycap_viewer.views.record.chat import chat_part
from skycap_viewer.views.record.compare import PART_BYTES as COMPARE_PART_BYTES
from skycap_viewer.views.record.compare import Comparison
from skycap_viewer.views.record.experts import experts_part
from skycap_viewer.views.record.forks import forks_answer
from skycap_viewer.views.record.graph import graph_part
from skycap_viewer.views.record.lineup import lineup
from skycap_viewer.views.record.node import media_part, node_message
from skycap_viewer.views.record.notable import notable_answer
from skycap_viewer.views.record.retokenized import AROUND, AROUND_MAX, retokenized_answer
from skycap_viewer.views.record.row import path_messages, trainer_row
from skycap_viewer.views.record.snapshot import TABS as SNAPSHOT_TABS
from skycap_viewer.views.record.snapshot import snapshot_data, snapshot_html
from skycap_viewer.views.record.trajectory import SERVED_PARTS, PartLimit, RecordView, with_verdicts
from skycap_viewer.views.run import runs_compare
from skycap_viewer.views.run.export import CONTENT_TYPE as EXPORT_TYPE
from skycap_viewer.views.run.export import ExportAsk, exported, file_name, spooled_rows
from skycap_viewer.views.run.groups import found_group, group_answer, groups_page
from skycap_viewer.views.run.listing import Filters, searched_ids, with_run
from skycap_viewer.views.run.missing import mirrored_record, missing_answer
from skycap_viewer.views.run.rollouts import found_row, rollouts_page
from skycap_viewer.views.run.step_timeline import step_timeline_answer
from skycap_viewer.views.run.stored_groups import ungrouped_where
from skycap_viewer.views.run.values import parse_limit, values_payload
from skycap_viewer.wire import Download, RawJson, encode_json, safe_file_name

HTML_TYPE = "text/html; charset=utf-8"
SETTLE_TRIES = 30  # reads of a record whose files keep being replaced (about 1.4 s), then 409
SETTLE_PAUSE = 0.01  # seconds, times the attempt number, at most 0.05
MIRROR_SECONDS = 10  # for a record fetched from a mirror to be indexed (the watcher polls every 2 s)
SETTLE_WINDOW_NS = 500_000_000  # a sidecar newer than its document for longer was copied, not written


class Api:
    """Route functions over one catalog, safe to call from many request threads at once."""

    def __init__(self, catalog: Catalog, part_limit: PartLimit = SERVED_PARTS, mirrors: Mirrors | None = None):
        self.catalog = catalog
        self.mirrors = mirrors  # opens a run index row's record from its mirror (None: `mirror` is refused)
        # RecordViews by the record's files' versions; a heavy one let go before another document is read
        self.views = ViewCache(RECORD_VIEW_CACHE_SIZE, RECORD_VIEW_CACHE_BYTES)
        self.documents = DocumentCache(DOCUMENT_CACHE_BYTES, self.views.drop_oversized)
        self.encoded_paths = AnswerCache(PATHS_CACHE_BYTES)  # by the record's files' versions and the part
        self.part_limit = part_limit  # how much one part of /paths, /graph, /exchanges, /timeline holds
        self.group_by = catalog.group_by  # the store's groups are the catalog's
        self.searches = Searches()  # its worker processes start with the first search
        self.runs_answer = (None, None)  # (the published snapshots it was encoded from, `/v1/runs` encoded)
        self.encoded_facts: dict[str, tuple[dict, bytes]] = {}  # run id -> (its facts, their members as JSON)

    # -- the server and its runs --------------------------------------------------------

    def healthz(self, params):
        return 200, {"status": "ok", "source": "record", "record": " ".join(self.root_names())}

    def root_names(self) -> list[str]:
        """The directories served, as the user named them: a store's copy by its URL."""
        return [copy_url_of(root) for root in self.catalog.roots]

    def viewer(self, params):
        return 200, {
            "api": "records",
            "roots": self.root_names(),
            "version": __version__,
            "flags": flag_catalogue(),
            "block_kinds": [{"kind": kind, "why": why} for kind, why in BLOCK_KIND_WHY.items()],
            "text_only": text_only_catalogue(),
            "snapshot_tabs": list(SNAPSHOT_TABS),
        }

    def runs(self, params):
        """Every run's entry, encoded once per published generation: a page (or a script) polls this,
        and a run of a million rollouts lists its tasks here, megabytes of JSON."""
        snapshots = self.catalog.snapshots()
        encoded_from, encoded = self.runs_answer
        if encoded_from is not snapshots:
            ordered = sorted(snapshots, key=lambda snapshot: snapshot.id)
            ordered.sort(key=lambda s: s.facts.get("created_at") or s.updated_at or "", reverse=True)
            encoded = RawJson(b"[" + b",".join(map(self.encoded_entry, ordered)) + b"]")
            self.runs_answer = (snapshots, encoded)
            self.encoded_facts = {s.id: self.encoded_facts[s.id] for s in snapshots if s.id in self.encoded_facts}
        skipped = [{"path": copy_url_of(entry.path), "why": entry.why} for entry in self.catalog.skipped]
        return 200, {"data": encoded, "skipped": skipped}

    def encoded_entry(self, snapshot: Snapshot) -> bytes:
        """`run_entry` as JSON, once per snapshot (the watcher encodes it as it publishes: `Watcher.prepare`), its
        facts once per count (`IndexedRun.facts_now`): a big run's tasks are megabytes, and while it is indexed it
        is published more often than counted (encoding them at each publish was a seventh of the server's work)."""
        def encoded() -> bytes:
            facts = snapshot.facts
            kept_from, kept = self.encoded_facts.get(snapshot.id, (None, b""))
            if kept_from is not facts:
                kept = encode_json(facts)[1:-1]
                self.encoded_facts[snapshot.id] = (facts, kept)
            rest = encode_json({key: value for key, value in self.run_entry(snapshot).items() if key not in facts})
            return rest[:-1] + b"," + kept + b"}" if kept else rest

        return snapshot.memoized("encoded entry", encoded)

    def run_entry(self, snapshot: Snapshot) -> dict:
        """The run as `/v1/runs` lists it, from the facts its snapshot keeps."""
        location = snapshot.location
        groups = snapshot.groups
        groupable = snapshot.row_count > 0 and 2 * groups["grouped_rows"] >= snapshot.row_count  # most rows: keyed
        index = {"run_index": snapshot.run_index} if snapshot.run_index is not None else {}  # only when it has one
        return {
            "id": location.id,
            "project": location.project,
            "path": str(location.path),
            "symlink_to": str(location.symlink_to) if location.symlink_to else None,  # followed out of its root
            **copy_source(location.path),
            "indexing": snapshot.indexing,
            "listed": snapshot.listed,
            "indexed": snapshot.row_count,
            "updated_at": snapshot.updated_at,
            "trajectory_count": snapshot.file_count,
            "sidecars_verified": snapshot.verified,
            "error": snapshot.scan_error,
            **snapshot.facts,
            "group_by": list(self.group_by),
            "groupable": groupable,
            "group_count": groups["group_count"],
            "modal_group_size": groups["modal_n"],
            "group_sizes": groups["sizes"],  # [smallest, largest]: "of 4" only when they are one size
            "default_view": "groups" if groupable else "rollouts",
            **index,
        }

    # -- rollouts ---------------------------------------------------------------------------

    def scope(self, params) -> list[Snapshot]:
        """The runs a listing covers: `run_id`'s, or every run."""
        run_id = one(params, "run_id")
        if run_id is None:
            return list(self.catalog.snapshots())
        snapshot = self.catalog.snapshot(run_id)
        if snapshot is None:
            raise ApiError(404, f"no run {run_id}")
        return [snapshot]

    def trajectories(self, params):
        """A page of the rollouts (`views.run.rollouts`), or with `missing=true` the run index's rows
        without a record (`views.run.missing`)."""
        if one(params, "missing") == "true":
            if one(params, "run_id") is None:
                raise ApiError(400, "missing=true lists one run's index: pass run_id")
            return 200, missing_answer(self.scope(params)[0], params)
        return 200, rollouts_page(self.scope(params), params, self.group_by)

    def trajectory_mirror(self, record_id: str, params):
        """Open a run index row whose record is not here from the mirror the index names: its copy is
        served as a run of its own (said to be read from the mirror), and this says which."""
        if one(params, "run_id") is None:
            raise ApiError(400, "name the run whose index lists it: pass run_id")
        url = mirrored_record(self.scope(params)[0], record_id)
        if self.mirrors is None:
            raise ApiError(501, "this viewer opens no mirror")
        try:
            directory = self.mirrors.open_record(url)
        except UsageError as error:
            raise ApiError(501, str(error)) from None
        except RecordError as error:
            raise ApiError(502, str(error)) from None
        self.catalog.add_root(directory)
        deadline = time.monotonic() + MIRROR_SECONDS
        while time.monotonic() < deadline:  # the watcher finds the new run at its next poll
            found = next((s for s in self.catalog.snapshots() if s.location.path == directory), None)
            if found is not None and found.row_count:
                return 200, {"run_id": found.id, "id": record_id, "source": url}
            time.sleep(0.05)
        raise ApiError(503, f"{record_id} was fetched from {url} but is not indexed yet: try again")

    def export(self, params):
        """Every row of one run the listing's filters keep, as JSON lines (`views.run.export`): read in one
        transaction into a spool first, then sent from it in pieces."""
        if one(params, "run_id") is None:
            raise ApiError(400, "an export covers one run: pass run_id")
        snapshot = self.scope(params)[0]
        ask = ExportAsk.parse(params)
        where = ungrouped_where(snapshot, group_keys(params, self.group_by), self.group_by) if ask.ungrouped else None
        spool = spooled_rows(snapshot, ask, where)
        return 200, Download(EXPORT_TYPE, file_name(snapshot.id, ask),
                             pieces=exported(spool, snapshot.location.path, ask), close=spool.close)

    def find(self, record_id: str, params) -> tuple[Snapshot, dict]:
        """The index row of `record_id` in the runs in scope (`views.run.rollouts.found_row`)."""
        return found_row(self.scope(params), record_id)

    def trajectory(self, record_id: str, params):
        snapshot, row = self.find(record_id, params)
        header = with_run(row, {snapshot.id: snapshot.location})
        header.pop("summary", None)
        header.pop("created_ts", None)
        if header.get("cut"):
            header.update(self.whole_values(snapshot, record_id))
        return 200, header

    def whole_values(self, snapshot: Snapshot, record_id: str) -> dict:
        """The record's `meta` and `annotations` whole, from its document (its row keeps long values cut);
        nothing when the document cannot be read now: the row's values then say they were cut."""
        try:
            document = self.documents.get(document_path(snapshot.location.path, record_id))
        except RecordError:
            return {}
        return {"meta": document.get("meta") or {}, "annotations": document.get("annotations") or {}, "cut": {}}

    def opened(self, snapshot: Snapshot, row: dict, record_id: str) -> tuple[OpenedRecord, int]:
        """The listed record opened (`record.opener`), its document read through the cache, and what its
        parse holds (its weight in the views' cache); 422 when it cannot be read, 404 when it is gone from
        disk since it was listed (not there, so not "unreadable")."""
        if row.get("unreadable"):
            raise ApiError(422, f"trajectory {record_id} cannot be read: {row['error']}")
        directory = snapshot.location.path
        weighed = []

        def read(path):
            document, weight = self.documents.get_sized(path)
            weighed.append(weight)
            return document

        try:
            return open_record(directory, record_id, read=read), weighed[0]
        except RecordError as error:
            if not os.path.lexists(document_path(directory, record_id)):
                raise ApiError(404, f"trajectory {record_id} is gone from disk") from None
            raise ApiError(422, f"trajectory {record_id} cannot be read: {error}") from None

    def view(self, record_id: str, params) -> "ViewedRecord":
        """The record's `RecordView` with its run and row: kept by its files' versions, so a big record's
        parts share one rollout; a record whose files cannot be versioned gets its own."""
        snapshot, row = self.find(record_id, params)
        opened, weight = self.opened(snapshot, row, record_id)
        version = files_version(opened.directory, record_id, opened.present)
        fields = context(snapshot, row)

        def make():
            return RecordView.of(opened, fields), weight  # weighed as the document was read

        if version is None:
            return ViewedRecord(snapshot, row, None, make()[0])
        key = (version, *fields.values())
        return ViewedRecord(snapshot, row, key, self.views.get(key, make))

    def paths(self, record_id: str, params):
        text = one(params, "text") != "false"
        path = None if one(params, "path") is None else path_number(params, "path", 0)
        start = part_start(params)

        def answer(snapshot, row, view):
            encoded = answer_part(view.encoded_paths_part, text, path, start, self.part_limit,
                                  with_verdicts(view.header, public(row)))
            found = support_flags(view.support[0]) if text else []
            mask_error = text and path is None and view.tokens[0] is not None and view.support[1] is not None
            if mask_error and "malformed-record" not in row["flags"] \
                    or any(flag not in row["flags"] for flag in found):  # a damaged tokens sidecar: `settled_answer`
                self.catalog.verify_soon(snapshot.id, document_path(view.directory, record_id).name)
            return encoded

        return self.settled_answer(record_id, params, ("paths", text, path, start), answer, reads_sidecars=text,
                                   by_row=path is None)

    def snapshot(self, record_id: str, params):
        """The rollout as one self-contained HTML file (`views.record.snapshot`), saved as `<id>.html`:
        `path` and `tab` are the state it opens in."""
        path, tab = path_number(params, "path", 0), one(params, "tab") or "path"

        def answer(snapshot, row, view):  # its sidecars read: the flags they raise are in the file's header
            verified = RecordView(view.directory, view.document, view.present, record_id, view.context, verified=True)
            return answer_part(snapshot_data, verified, path, tab)

        encoded = self.settled_answer(record_id, params, ("snapshot", path, tab), answer)[1]
        return 200, Download(HTML_TYPE, safe_file_name(record_id, ".html", "rollout"), body=snapshot_html(encoded))

    def experts(self, record_id: str, params):
        """One node's routed experts at one layer (`views.record.experts`): `node`, `layer` (0), `from` (0)."""
        node, layer, start = node_param(params), layer_param(params), part_start(params)

        def answer(snapshot, row, view):
            node_there(view.document, node)
            payload = answer_part(experts_part, view.directory, view.document, view.present, node, layer, start)
            if payload["unavailable"] == "damaged" and "malformed-record" not in row["flags"]:
                self.catalog.verify_soon(snapshot.id, document_path(view.directory, record_id).name)
            return payload

        return self.settled_answer(record_id, params, ("experts", node, layer, start), answer)

    def path_row(self, record_id: str, path: str, params):
        """The trainer's row of one path (`views.record.row.trainer_row`), read from the tokens sidecar."""
        number = path_segment(path)
        return self.settled_answer(record_id, params, ("row", number),
                                   lambda snapshot, row, view: trainer_row(view, number))

    def path_messages(self, record_id: str, path: str, params):
        """One path's messages in chat format (`views.record.row.path_messages`), from the document alone."""
        number = path_segment(path)
        return 200, path_messages(self.view(record_id, params).view, number)

    def path_chat(self, record_id: str, path: str, params):
        """One path as the Chat tab's cards, in parts (`views.record.chat`): a model turn's lowest logprob
        needs the tokens sidecar, so it is settled as `/paths` is."""
        number, start = path_segment(path), part_start(params)
        return self.settled_answer(record_id, params, ("chat", number, start), lambda snapshot, row, view:
                                   answer_part(chat_part, view, number, start, self.part_limit))

    def settled_answer(self, record_id: str, params, key: tuple, answer, reads_sidecars: bool = True,
                       by_row: bool = False):
        """`answer(snapshot, row, view)` about one record (a payload, or one already encoded: `RawJson`),
        kept encoded by its files' versions and `key` (and `by_row`, by its index row: an answer holding the
        header changes when the background verification finds what the sidecars say).
        An answer that read sidecars is read again while a rewrite of the record is landing, so it
        never mixes two versions' files (409 when they keep changing); a refusal (`ApiError` from
        `answer`) waits for the files the same way: it may be the rewrite's."""
        for attempt in range(1, SETTLE_TRIES + 1):
            snapshot, row, version, view = self.view(record_id, params)
            kept = (version, *key, encode_json(with_verdicts(view.header, public(row))) if by_row else None)
            cached = self.encoded_paths.get(kept) if version else None
            if cached is not None:
                return 200, cached
            try:
                payload, refused = answer(snapshot, row, view), None
            except ApiError as error:
                payload, refused = None, error
            if view.tokens_refused and "malformed-record" not in row["flags"]:
                self.catalog.verify_soon(snapshot.id, document_path(view.directory, record_id).name)
            if not reads_sidecars or self.settled(view.directory, record_id, view.document):
                if refused is not None:
                    raise refused
                encoded = payload if type(payload) is RawJson else RawJson(encode_json(payload))  # kept encoded
                if version and version[0] == files_version(view.directory, record_id, view.present):
                    self.encoded_paths.put(kept, encoded)
                return 200, encoded
            self.views.drop(version)  # its sidecars may be a rewrite's: read them again
            time.sleep(min(SETTLE_PAUSE * attempt, 0.05))  # a rewrite is under way: read it once it lands
        raise ApiError(409, f"trajectory {record_id} is being rewritten; its files keep changing, try again")

    def settled(self, directory, record_id: str, document: dict) -> bool:
        """Whether `document` is still the one on disk and no sidecar of it is newer.

        skycap replaces the sidecars first and the document last, so a sidecar newer than the
        document (and only just written) belongs to a rewrite in progress: the tokens just read
        may not be this document's. A copy that left sidecars newer for good is settled after a while.
        """
        path = document_path(directory, record_id)
        try:
            version = self.documents.version(path)
            if not self.documents.holds(version, document):
                return False
            written = version[3]
            for name in present_sidecars(directory, document):
                path = Path(directory) / name
                if not os.path.exists(path) and (os.path.islink(path) or listed_in_copy(directory, name)):
                    continue  # a broken link, or a store's sidecar not fetched: its read said so, not a rewrite
                changed = os.stat(path).st_mtime_ns
                if changed > written and time.time_ns() - changed < SETTLE_WINDOW_NS:
                    return False
        except (RecordError, OSError):
            return False
        return True

    def graph(self, record_id: str, params):
        start = part_start(params)
        _, row, _, view = self.view(record_id, params)
        return 200, answer_part(graph_part, view, start, self.part_limit, with_verdicts(view.header, public(row)))

    def node_message(self, record_id: str, params):
        """One node's message whole (`node`): what a `/graph` part sends as a placeholder when it is
        bigger than a part (an image as a data URL)."""
        node = node_param(params)
        view = self.view(record_id, params).view
        return 200, node_message(view, node_there(view.document, node))

    def node_media(self, record_id: str, params):
        """One node's media items in parts (`node`, `from`): a `/paths` node carries its first thousand."""
        node, start = node_param(params), part_start(params)
        view = self.view(record_id, params).view
        return 200, answer_part(media_part, view, node_there(view.document, node), start, self.part_limit)

    def exchanges(self, record_id: str, params):
        start = part_start(params)
        view = self.view(record_id, params).view
        return 200, answer_part(exchanges_part, view, start, self.part_limit)

    def timeline(self, record_id: str, params):
        """Every call and failure placed in time: lanes, sub-lanes, idle spans (`views.record.timeline`)."""
        start = part_start(params)
        view = self.view(record_id, params).view
        return 200, answer_part(timeline_part, view, start, self.part_limit)

    def forks(self, record_id: str, params):
        a, b = path_number(params, "a", 0), path_number(params, "b", 1)
        if a == b:
            raise ApiError(400, "a and b must be two different paths")
        view = self.view(record_id, params).view
        try:
            return 200, forks_answer(view, a, b, self.part_limit)
        except IndexError as error:
            raise ApiError(404, f"no path {a} or {b}: {error}") from None

    def notable(self, record_id: str, params):
        """Tokens worth reading on one path (`path`, 0 when not given): see `views.record.notable`."""
        path = path_number(params, "path", 0)
        view = self.view(record_id, params).view
        return 200, answer_part(notable_answer, view, path)

    def retokenized(self, record_id: str, params):
        """Each re-tokenized copy beside its model node, and each unbridged call: see `views.record.retokenized`."""
        around = bounded_count(params, "around", AROUND, AROUND_MAX)
        view = self.view(record_id, params).view
        return 200, retokenized_answer(view, around)

    # -- comparing ---------------------------------------------------------------------------

    def compare(self, params):
        """Two records' paths side by side (`views.record.compare`): `a`, `b`, with `run_a`, `run_b`,
        `path_a`, `path_b`; the turns in parts (`from`). Kept encoded by both records' versions."""
        ids = {side: one(params, side) for side in ("a", "b")}
        missing = [side for side, value in ids.items() if not value]
        if missing:
            raise ApiError(400, f"compare needs two trajectory ids: pass {' and '.join(missing)}")
        path_a, path_b = path_number(params, "path_a", 0), path_number(params, "path_b", 0)
        start = part_start(params)
        run_a, _, version_a, view_a = self.view(ids["a"], side_scope(params, "run_a"))
        run_b, _, version_b, view_b = self.view(ids["b"], side_scope(params, "run_b"))
        itself = (run_a.id, ids["a"], path_a) == (run_b.id, ids["b"], path_b)
        key = ("compare", version_a, path_a, version_b, path_b, start, itself)
        cached = self.encoded_paths.get(key) if version_a and version_b else None
        if cached is not None:
            return 200, cached
        limit = self.part_limit.within(COMPARE_PART_BYTES)
        encoded = answer_part(lambda: Comparison(view_a, path_a, view_b, path_b, itself).encoded_part(start, limit))
        if version_a and version_b:
            self.encoded_paths.put(key, encoded)
        return 200, encoded

    def lineup(self, group_key: str, params):
        """A group's counting members compared with one anchor member (`views.record.lineup`)."""
        snapshot, group, _ = self.scoped_group(group_key, params)
        scope = {"run_id": [snapshot.id]}
        return 200, lineup(group, snapshot.id, one(params, "anchor"),
                           lambda record_id: self.view(record_id, scope).view)

    def values(self, params):
        """The task ids and annotation values of one run with their counts, for the picker."""
        run_id = one(params, "run_id")
        if run_id is None:
            raise ApiError(400, "values are listed per run: pass run_id")
        return 200, values_payload(self.scope(params)[0], one(params, "q"), parse_limit(params))

    # -- search ---------------------------------------------------------------------------

    def search(self, params):
        """Text in one run's documents, inside the listing filters; streamed by cursor (`server/searches.py`)."""
        if one(params, "run_id") is None:
            raise ApiError(400, "run_id is required: a search covers one run")
        snapshot = self.scope(params)[0]
        query = Query(one(params, "text") or "", one(params, "regex") == "true", one(params, "case") == "true",
                      one(params, "kind") or "all", one(params, "role"), one(params, "in") or "shown")
        problem = query_problem(query)
        if problem:
            raise ApiError(400, problem)
        filters = Filters.parse(params)
        limit, _ = parse_page({"limit": params.get("limit", [])})
        asked = (snapshot.id, query, repr(filters))
        cursor = one(params, "cursor")
        if cursor is None:
            search = self.searches.get_or_start((*asked, snapshot.generation),
                                                lambda: self.new_search(snapshot, query, filters, asked))
            offset = 0
        else:
            search, offset = self.cursor_search(cursor, asked)
        if one(params, "cancel") == "true":
            self.searches.cancel(search)
            return 200, {**search.page(offset, 0, wait=0), "data": [], "next_cursor": None}
        return 200, search.page(offset, limit)

    def new_search(self, snapshot: Snapshot, query: Query, filters: Filters, asked):
        """The search over the rows the filters keep, in the listing's order (`searched_ids`, listed by the
        search's own thread as it reads on), the unreadable ones said skipped."""
        return Search((*asked, snapshot.generation), query, snapshot.location.path,
                      lambda: searched_ids(snapshot, filters))

    def cursor_search(self, cursor: str, asked) -> tuple:
        """(the search a `next_cursor` names, its offset); 410 once the search is gone."""
        token, _, offset = cursor.rpartition("-")
        if not token or not offset.isdigit():
            raise ApiError(400, f"cursor {cursor!r} is not a search cursor (pass the answer's next_cursor)")
        search = self.searches.by_token(token)
        if search is None:
            raise ApiError(410, "this search is gone (cancelled, or nobody asked for it for a while): "
                                "start it again without a cursor")
        if search.key[:-1] != asked:
            raise ApiError(400, "the cursor belongs to another search (other text, options or filters)")
        return search, int(offset)

    # -- groups ---------------------------------------------------------------------------

    def groups(self, params):
        """The runs' groups under the filters (`views.run.groups`)."""
        return 200, groups_page(self.scope(params), params, self.group_by)

    def scoped_group(self, group_key: str, params) -> tuple:
        """(snapshot, group, keys) of one group of the runs in scope, by the request's keys."""
        keys = group_keys(params, self.group_by)
        return (*found_group(self.scope(params), group_key, keys, self.group_by), keys)

    def group(self, group_key: str, params):
        snapshot, group, keys = self.scoped_group(group_key, params)
        return 200, group_answer(snapshot, group, keys, params)

    # -- a step on one time axis ------------------------------------------------------------------

    def step_timeline(self, params):
        """Every rollout of one step of one run as a lane of its calls and failures (`views.run.step_timeline`)."""
        if one(params, "run_id") is None:
            raise ApiError(400, "a timeline covers one run's step: pass run_id")
        return 200, step_timeline_answer(self.scope(params)[0], params, self.part_limit)

    # -- comparing runs and steps ---------------------------------------------------------------

    def compare_runs(self, params):
        """Two runs (or one run at two steps) group by group: see `views.run.runs_compare`."""
        names = {side: one(params, side) for side in ("a", "b")}
        if None in names.values():
            raise ApiError(400, "compare/runs needs both runs: pass a=RUN_A&b=RUN_B (the same run twice for two steps)")
        snapshots = {side: self.scope({"run_id": [name]})[0] for side, name in names.items()}
        steps = {side: number(params, f"step_{side}") for side in ("a", "b")}
        stepped = any(step is not None for step in steps.values())
        keys = runs_compare.matching_keys(key_list(params, "by"), self.group_by, stepped)
        sides = {side: runs_compare.side_groups(snapshots[side], keys, self.group_by, steps[side])
                 for side in ("a", "b")}
        limit, offset = parse_page({"limit": params.get("limit", []), "cursor": params.get("offset", [])})
        return 200, {
            "a": names["a"], "b": names["b"], "by": list(keys),
            "step_a": as_written(steps["a"]), "step_b": as_written(steps["b"]),
            **runs_compare.compare_runs(sides["a"], sides["b"], limit, offset),
        }

    def lineage(self, params):
        """One prompt (a key's value) at every step of a run: see `views.run.runs_compare.lineage`."""
        asked = {name: one(params, name) for name in ("run_id", "key", "value")}
        missing = [name for name, value in asked.items() if value is None]
        if missing:
            raise ApiError(400, f"lineage needs run_id, key and value: pass {', '.join(missing)}")
        snapshot = self.scope(params)[0]
        return 200, {**asked, **runs_compare.lineage(snapshot, asked["key"], asked["value"])}


class ViewedRecord(NamedTuple):
    """A record as the routes answer from it: its run, its index row, its files' versions with the run
    fields (None when they cannot be versioned: the view is then not kept) and its `RecordView`."""

    snapshot: Snapshot
    row: dict
    version: tuple | None
    view: RecordView


def context(snapshot: Snapshot, row: dict) -> dict:
    """The run fields a record's header carries."""
    return {"run_id": snapshot.id, "project": snapshot.location.project, "revision": row["revision"]}


def node_there(document: dict, node: int) -> int:
    """`node`, when the document has that node; else the request's 404."""
    count = len(document["nodes"])
    if node >= count:
        raise ApiError(404, f"no node {wire_id(node)}: the trajectory has {count} nodes")
    return node


def answer_part(make, *args) -> dict:
    """`make(*args)`, a part of an answer; a start or path the record does not have is the request's fault."""
    try:
        return make(*args)
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    except IndexError as error:
        raise ApiError(404, f"no such path: {error}") from None
