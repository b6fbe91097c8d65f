"""The read API: one function per route, each taking the parsed request and returning (status, payload).

Records are found through the catalog's in-memory index by id, never by a path taken from
the request. Listings read only snapshots; the detail routes read one document (cached by
the file's version) and `/paths` with text also reads the tokens sidecar, checking afterwards
that a writer did not replace the record's files in between.
"""

import os
import time
from collections import Counter
from pathlib import Path

from skycap_viewer import __version__
from skycap_viewer.catalog.blobs import unpack
from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY, GROUP_SORT_KEYS, build_grouping, ordered_by, repetition_of
from skycap_viewer.catalog.index import Catalog, Snapshot
from skycap_viewer.catalog.rows import present_sidecars, public
from skycap_viewer.catalog.store import NEWEST_FIRST, build_group, flag_bits
from skycap_viewer.errors import ApiError, RecordError
from skycap_viewer.flags import flag_catalogue, text_only_catalogue
from skycap_viewer.record.blocks import BLOCK_KIND_WHY
from skycap_viewer.record.document import document_path
from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.search import Query, query_problem
from skycap_viewer.record.support import support_flags
from skycap_viewer.server.caches import (
    DOCUMENT_CACHE_BYTES,
    PATHS_CACHE_BYTES,
    RECORD_VIEW_CACHE_NODES,
    RECORD_VIEW_CACHE_SIZE,
    AnswerCache,
    DocumentCache,
    ViewCache,
    files_version,
)
from skycap_viewer.server.searches import Search, Searches
from skycap_viewer.views import group_listing, runs_compare
from skycap_viewer.views.compare import PART_BYTES as COMPARE_PART_BYTES
from skycap_viewer.views.compare import Comparison
from skycap_viewer.views.experts import experts_part
from skycap_viewer.views.export import CONTENT_TYPE as EXPORT_TYPE
from skycap_viewer.views.export import ExportAsk, exported, file_name, spooled_rows
from skycap_viewer.views.lineup import lineup
from skycap_viewer.views.listing import (
    SPARSE_SHARE,
    Cursor,
    Filters,
    counted,
    health,
    is_rollout_flag,
    kept_counts,
    listed_rows,
    number,
    one,
    ordering,
    page,
    parse_page,
    parse_sort,
    reward_range,
    row_encoder,
)
from skycap_viewer.views.missing import missing_page, missing_where
from skycap_viewer.views.retokenized import AROUND, AROUND_MAX
from skycap_viewer.views.row import path_messages, trainer_row
from skycap_viewer.views.snapshot import TABS as SNAPSHOT_TABS
from skycap_viewer.views.snapshot import snapshot_data, snapshot_html
from skycap_viewer.views.trajectory import SERVED_PARTS, PartLimit, RecordView
from skycap_viewer.views.values import parse_limit, values_payload
from skycap_viewer.wire import Download, RawJson, encode_json, safe_file_name

HTML_TYPE = "text/html; charset=utf-8"
SETTLE_TRIES = 30  # reads of a record whose files keep being replaced (about 1.4 s), then 409
SETTLE_PAUSE = 0.01  # seconds, times the attempt number, at most 0.05
SETTLE_WINDOW_NS = 500_000_000  # a sidecar newer than its document for longer was copied, not written


class Api:
    """Route functions over one catalog, safe to call from many request threads at once."""

    def __init__(self, catalog: Catalog, group_by=DEFAULT_GROUP_BY, part_limit: PartLimit = SERVED_PARTS):
        self.catalog = catalog
        self.documents = DocumentCache(DOCUMENT_CACHE_BYTES)
        self.encoded_paths = AnswerCache(PATHS_CACHE_BYTES)  # by the record's files' versions and the part
        # RecordViews by the record's files' versions
        self.views = ViewCache(RECORD_VIEW_CACHE_SIZE, RECORD_VIEW_CACHE_NODES, RecordView.node_count)
        self.part_limit = part_limit  # how much one part of /paths, /graph, /exchanges, /timeline holds
        self.group_by = tuple(group_by)
        self.searches = Searches()  # its worker processes start with the first search
        self.runs_answer = (None, None)  # (the published snapshots it was encoded from, `/v1/runs` encoded)

    # -- the server and its runs --------------------------------------------------------

    def healthz(self, params):
        roots = " ".join(str(root) for root in self.catalog.roots)
        return 200, {"status": "ok", "source": "record", "record": roots}

    def viewer(self, params):
        return 200, {
            "api": "records",
            "roots": [str(root) for root in self.catalog.roots],
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
            entries = [self.run_entry(snapshot) for snapshot in snapshots]
            entries.sort(key=lambda e: e["id"])
            entries.sort(key=lambda e: e.get("created_at") or e.get("updated_at") or "", reverse=True)
            encoded = RawJson(encode_json(entries))
            self.runs_answer = (snapshots, encoded)
        return 200, {"data": encoded}

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
            "indexing": snapshot.indexing,
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
        if one(params, "missing") == "true":
            return self.missing(params)
        snapshots = self.scope(params)
        filters = Filters.parse(params)
        key, order, _ = parse_sort(params)
        limit, _ = parse_page(params)
        cursor = Cursor.parse(one(params, "cursor"))
        if len(snapshots) > 1:
            cursor.last = None  # the runs' pages are merged: an offset says where
        ungrouped = one(params, "ungrouped") == "true"  # only the rows no group holds (the Groups view's notice)
        keys = self.group_keys(params)
        by_bits, total, rewards, listed, last = Counter(), 0, [], [], None
        for snapshot in snapshots:
            with snapshot.reading() as db:
                run_filters = filters.on(snapshot).with_text_matches(db, sparse_rows(snapshot))
                where = self.ungrouped_where(snapshot, db, keys) if ungrouped else None
                counts = self.keyless(snapshot, db, run_filters, keys) if ungrouped else counted(db, run_filters)
                for bits, (n, _, _) in counts.items():
                    by_bits[bits] += n
                matching, reward = kept_counts(counts, run_filters)
                total += matching
                rewards += [reward["min"], reward["max"]] if reward else []
                wanted, start = (limit, cursor) if len(snapshots) == 1 else (cursor.offset + limit, Cursor())
                found, last = listed_rows(db, run_filters, key, order, wanted, start, where,
                                          sparse=matching < sparse_rows(snapshot),
                                          indexed=snapshot.sorted)
                listed += [(snapshot.id, *entry) for entry in found]
        if len(snapshots) > 1:  # merged in the listing's order: the sort values each row came with
            listed = merged(listed, ordering(key, order))[cursor.offset: cursor.offset + limit]
            last = None
        more = cursor.offset + limit < total
        runs = {s.id: s.location for s in snapshots}
        return 200, {
            "data": encoded_rows(listed, runs),
            "next_cursor": cursor.next(limit, last) if more else None,
            "has_more": more,
            "total": total,
            "indexing": any(s.indexing for s in snapshots),
            "indexed_trajectories": sum(s.row_count for s in snapshots),
            "health": health(by_bits, "rollouts", *coverage(snapshots)),
            "sort": {"key": key, "order": order},
            "reward_range": reward_range(rewards),
        }

    def export(self, params):
        """Every row of one run the listing's filters keep, as JSON lines (`views.export`): read in one
        transaction into a spool first, then sent from it in pieces."""
        if one(params, "run_id") is None:
            raise ApiError(400, "an export covers one run: pass run_id")
        snapshot = self.scope(params)[0]
        ask = ExportAsk.parse(params)
        keys = self.group_keys(params)
        where_of = (lambda db: self.ungrouped_where(snapshot, db, keys)) if ask.ungrouped else None
        spool = spooled_rows(snapshot, ask, where_of)
        return 200, Download(EXPORT_TYPE, file_name(snapshot.id, ask),
                             pieces=exported(spool, snapshot.location.path, ask), close=spool.close)

    def missing(self, params):
        """The run index's rows whose record is not in this copy, with where each lives (`views.missing`)."""
        if one(params, "run_id") is None:
            raise ApiError(400, "missing=true lists one run's index: pass run_id")
        snapshot = self.scope(params)[0]
        filters = Filters.parse(params)
        missing_where(filters)  # a filter index rows cannot answer is refused, index or not
        limit, offset = parse_page(params)
        rows, total = [], 0
        if snapshot.run_index is not None:
            with snapshot.reading() as db:
                rows, total = missing_page(db, filters, limit, offset)
        more = offset + limit < total
        return 200, {
            "data": rows,
            "next_cursor": str(offset + limit) if more else None,
            "has_more": more,
            "total": total,
            "indexing": snapshot.indexing,
            "run_index": snapshot.run_index,
        }

    def keyless(self, snapshot: Snapshot, db, filters: Filters, keys: tuple) -> dict:
        """`counted` for the rows in no group by `keys` (kept counts for the server's keys, unfiltered)."""
        if keys == self.group_by and not filters:
            return counted(db, filters, entry=("ungrouped", ""))
        return counted(db, filters, self.ungrouped_where(snapshot, db, keys))

    def ungrouped_where(self, snapshot: Snapshot, db, keys: tuple) -> tuple[str, list]:
        """The rows in no group by `keys`: the store's own when they are the server's keys."""
        if keys == self.group_by:
            return "gkey IS NULL", []
        ids = [row["id"] for row in build_grouping(snapshot.rows, keys).ungrouped]
        return "id IN (SELECT value FROM json_each(?))", [encode_json(ids).decode()]

    def find(self, record_id: str, params) -> tuple[Snapshot, dict]:
        """The index row of `record_id`; `run_id` is required when the id is in several runs.

        The id is looked up as the exact string it is in the index, whatever characters its file
        name has (spaces, `#`, `%`, unicode...): any listed record can be opened, and a path is only
        ever built from an id the index holds, never from a request's own text."""
        found = []
        for snapshot in self.scope(params):
            rows = snapshot.rows_where("id = ?", [record_id])
            found += [(snapshot, row) for row in rows[:1]]
        if not found:
            raise ApiError(404, f"no trajectory {record_id}")
        if len(found) > 1:
            runs = ", ".join(s.id for s, _ in found)
            raise ApiError(400, f"trajectory {record_id} is in several runs ({runs}): pass run_id")
        return found[0]

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

    def load(self, record_id: str, params):
        """(snapshot, row, directory, document) of a readable record."""
        snapshot, row = self.find(record_id, params)
        if row.get("unreadable"):
            raise ApiError(404, f"trajectory {record_id} cannot be read: {row['error']}")
        directory = snapshot.location.path
        try:
            document = self.documents.get(document_path(directory, record_id))
        except RecordError as error:
            raise ApiError(404, f"trajectory {record_id} cannot be read: {error}") from None
        return snapshot, row, directory, document

    def view(self, record_id: str, params) -> tuple[Snapshot, dict, tuple | None, RecordView]:
        """(snapshot, row, files' versions, the record's `RecordView`): kept by the versions, so a
        big record's parts share one rollout; a record whose files cannot be versioned gets its own."""
        snapshot, row, directory, document = self.load(record_id, params)
        present = present_sidecars(directory, document)
        version = files_version(directory, record_id, present)
        fields = context(snapshot, row)

        def make():
            return RecordView(directory, document, present, record_id, fields)

        if version is None:
            return snapshot, row, None, make()
        return snapshot, row, (version, *fields.values()), self.views.get((version, *fields.values()), make)

    def paths(self, record_id: str, params):
        text = one(params, "text") != "false"
        path = None if one(params, "path") is None else path_number(params, "path", 0)
        start = part_start(params)

        def answer(snapshot, row, view):
            encoded = answer_part(view.encoded_paths_part, text, path, start, self.part_limit)
            found = support_flags(view.support[0]) if text else []
            mask_error = text and path is None and view.tokens[0] is not None and view.support[1] is not None
            if mask_error and "malformed-record" not in row["flags"] \
                    or any(flag not in row["flags"] for flag in found):  # a damaged tokens sidecar: `settled_answer`
                self.catalog.verify_soon(snapshot.id, document_path(view.directory, record_id).name)
            return encoded

        return self.settled_answer(record_id, params, ("paths", text, path, start), answer, reads_sidecars=text)

    def snapshot(self, record_id: str, params):
        """The rollout as one self-contained HTML file (`views.snapshot`), saved as `<id>.html`:
        `path` and `tab` are the state it opens in."""
        path, tab = path_number(params, "path", 0), one(params, "tab") or "path"

        def answer(snapshot, row, view):
            return answer_part(snapshot_data, view, path, tab)

        encoded = self.settled_answer(record_id, params, ("snapshot", path, tab), answer)[1]
        return 200, Download(HTML_TYPE, safe_file_name(record_id, ".html", "rollout"), body=snapshot_html(encoded))

    def experts(self, record_id: str, params):
        """One node's routed experts at one layer (`views.experts`): `node`, `layer` (0), `from` (0)."""
        node, layer, start = node_param(params), layer_param(params), part_start(params)

        def answer(snapshot, row, view):
            nodes = view.document["nodes"]
            if node >= len(nodes):
                raise ApiError(404, f"no node {wire_id(node)}: the trajectory has {len(nodes)} nodes")
            payload = answer_part(experts_part, view.directory, view.document, view.present, node, layer, start)
            if payload["unavailable"] == "damaged" and "malformed-record" not in row["flags"]:
                self.catalog.verify_soon(snapshot.id, document_path(view.directory, record_id).name)
            return payload

        return self.settled_answer(record_id, params, ("experts", node, layer, start), answer)

    def path_row(self, record_id: str, path: str, params):
        """The trainer's row of one path (`views.row.trainer_row`), read from the tokens sidecar."""
        number = path_segment(path)
        return self.settled_answer(record_id, params, ("row", number),
                                   lambda snapshot, row, view: trainer_row(view, number))

    def path_messages(self, record_id: str, path: str, params):
        """One path's messages in chat format (`views.row.path_messages`), from the document alone."""
        number = path_segment(path)
        return 200, path_messages(self.view(record_id, params)[3], number)

    def settled_answer(self, record_id: str, params, key: tuple, answer, reads_sidecars: bool = True):
        """`answer(snapshot, row, view)` about one record (a payload, or one already encoded: `RawJson`),
        kept encoded by its files' versions and `key`.
        An answer that read sidecars is read again while a rewrite of the record is landing, so it
        never mixes two versions' files (409 when they keep changing); a refusal (`ApiError` from
        `answer`) waits for the files the same way: it may be the rewrite's."""
        for attempt in range(1, SETTLE_TRIES + 1):
            snapshot, row, version, view = self.view(record_id, params)
            cached = self.encoded_paths.get((version, *key)) if version else None
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
                    self.encoded_paths.put((version, *key), encoded)
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
                changed = os.stat(Path(directory) / name).st_mtime_ns
                if changed > written and time.time_ns() - changed < SETTLE_WINDOW_NS:
                    return False
        except (RecordError, OSError):
            return False
        return True

    def graph(self, record_id: str, params):
        start = part_start(params)
        view = self.view(record_id, params)[3]
        return 200, answer_part(view.graph_part, start, self.part_limit)

    def exchanges(self, record_id: str, params):
        start = part_start(params)
        view = self.view(record_id, params)[3]
        return 200, answer_part(view.exchanges_part, start, self.part_limit)

    def timeline(self, record_id: str, params):
        """Every call and failure placed in time: lanes, sub-lanes, idle spans (`views.timeline`)."""
        start = part_start(params)
        view = self.view(record_id, params)[3]
        return 200, answer_part(view.timeline_part, start, self.part_limit)

    def forks(self, record_id: str, params):
        a, b = path_number(params, "a", 0), path_number(params, "b", 1)
        if a == b:
            raise ApiError(400, "a and b must be two different paths")
        view = self.view(record_id, params)[3]
        try:
            return 200, view.forks(a, b, self.part_limit)
        except IndexError as error:
            raise ApiError(404, f"no path {a} or {b}: {error}") from None

    def notable(self, record_id: str, params):
        """Tokens worth reading on one path (`path`, 0 when not given): see `views.notable`."""
        path = path_number(params, "path", 0)
        view = self.view(record_id, params)[3]
        return 200, answer_part(view.notable, path)

    def retokenized(self, record_id: str, params):
        """Each re-tokenized copy beside its model node, and each unbridged call: see `views.retokenized`."""
        around = bounded_count(params, "around", AROUND, AROUND_MAX)
        view = self.view(record_id, params)[3]
        return 200, view.retokenized(around)

    # -- comparing ---------------------------------------------------------------------------

    def compare(self, params):
        """Two records' paths side by side (`views.compare`): `a`, `b`, with `run_a`, `run_b`,
        `path_a`, `path_b`; the turns in parts (`from`). Kept encoded by both records' versions."""
        ids = {side: one(params, side) for side in ("a", "b")}
        missing = [side for side, value in ids.items() if not value]
        if missing:
            raise ApiError(400, f"compare needs two trajectory ids: pass {' and '.join(missing)}")
        path_a, path_b = path_number(params, "path_a", 0), path_number(params, "path_b", 0)
        start = part_start(params)
        *_, version_a, view_a = self.view(ids["a"], side_scope(params, "run_a"))
        *_, version_b, view_b = self.view(ids["b"], side_scope(params, "run_b"))
        key = ("compare", version_a, path_a, version_b, path_b, start)
        cached = self.encoded_paths.get(key) if version_a and version_b else None
        if cached is not None:
            return 200, cached
        limit = self.part_limit.within(COMPARE_PART_BYTES)
        encoded = answer_part(lambda: Comparison(view_a, path_a, view_b, path_b).encoded_part(start, limit))
        if version_a and version_b:
            self.encoded_paths.put(key, encoded)
        return 200, encoded

    def lineup(self, group_key: str, params):
        """A group's counting members compared with one anchor member (`views.lineup`)."""
        snapshot, group, _ = self.found_group(group_key, params)
        scope = {"run_id": [snapshot.id]}
        return 200, lineup(group, snapshot.id, one(params, "anchor"), lambda record_id: self.view(record_id, scope)[3])

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
                      one(params, "kind") or "all", one(params, "role"))
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
        """The search over the rows the filters keep, in the listing's order: their ids (from the order's
        index alone when nothing is filtered), and why the unreadable ones are skipped."""
        where, values = filters.on(snapshot).where()
        flag_where, flag_values = filters.flag_where()
        kept = f"{where} AND {flag_where}", [*values, *flag_values]
        with snapshot.reading() as db:
            ids = [record_id for (record_id,) in db.execute(
                f"SELECT id FROM rows WHERE {kept[0]} ORDER BY {NEWEST_FIRST}", kept[1])]
            broken = {record_id: unpack(fields).get("error") for record_id, fields in db.execute(
                f"SELECT id, kept FROM rows WHERE unreadable AND {kept[0]}", kept[1])}
        readable = [record_id for record_id in ids if record_id not in broken]
        unreadable = [{"trajectory_id": record_id, "reason": f"unreadable: {broken[record_id]}"}
                      for record_id in ids if record_id in broken]
        return Search((*asked, snapshot.generation), query, snapshot.location.path, readable, unreadable)

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

    def group_keys(self, params) -> tuple:
        return key_list(params, "group_by") or self.group_by

    def groups(self, params):
        """The runs' groups under the filters: the server's kept groups, or a request's own grouping."""
        keys = self.group_keys(params)
        snapshots = self.scope(params)
        filters = Filters.parse(params)
        key, order, _ = parse_sort(params, GROUP_SORT_KEYS, default=("step", "desc"))
        limit, offset = parse_page(params)
        if keys == self.group_by and not filters and not filters.by_flag and len(snapshots) == 1:
            return 200, self.unfiltered_groups(snapshots[0], key, order, limit, offset)
        listed, band, count, ungrouped, modal_sizes = [], Counter(), 0, 0, set()
        for snapshot in snapshots:
            with snapshot.reading() as db:
                run_filters = filters.on(snapshot).with_text_matches(db, sparse_rows(snapshot))
                if keys == self.group_by:
                    modal_n, groups = snapshot.groups["modal_n"], snapshot.groups["group_count"]
                    found = group_listing.table_groups(snapshot.id, db, run_filters, modal_n)
                    members = members_counter(db, run_filters)
                else:
                    grouping = build_grouping(snapshot.rows, keys)
                    modal_n, groups = grouping.modal_n, len(grouping.groups)
                    matched = None if not run_filters else matching_ids(db, run_filters)
                    found = group_listing.from_grouping(snapshot.id, grouping, matched)
                    members = grouping_counter(grouping, run_filters, matched)
                keyless = self.keyless(snapshot, db, run_filters, keys)
            band += group_listing.band_counts(found, keyless)
            count += groups + sum(n for n, _, _ in keyless.values())
            ungrouped += kept_counts(keyless, run_filters)[0]
            if run_filters.by_flag:
                found = group_listing.keep_flagged(found, run_filters, members)
            else:
                for group in found:
                    group.kept = group.matched
            modal_sizes.add(modal_n)
            listed += [(group, modal_n) for group in found]
        default = (key, order) == ("step", "desc") and len(snapshots) == 1
        listed = listed if default else ordered_by(listed, lambda item: item[0].sort[key], order)
        chunk = page(listed, limit, offset)
        chunk["data"] = RawJson(b"[" + b",".join(group.json(modal_n) for group, modal_n in chunk["data"]) + b"]")
        lows = [group.low for group, _ in listed if group.low is not None]
        highs = [group.high for group, _ in listed if group.high is not None]
        return 200, {
            **chunk,
            "group_by": list(keys),
            "modal_n": modal_sizes.pop() if len(modal_sizes) == 1 else None,
            "sort": {"key": key, "order": order},
            "reward_range": {"min": min(lows), "max": max(highs)} if lows else None,
            "total": len(listed),
            "ungrouped": ungrouped,
            "indexing": any(s.indexing for s in snapshots),
            "health": health(band, "groups", count, count),
        }

    def unfiltered_groups(self, snapshot: Snapshot, key: str, order: str, limit: int, offset: int) -> dict:
        """`/v1/groups` of one run with no filter: a page of its kept groups, counts kept or counted in SQL."""
        modal_n = snapshot.groups["modal_n"]
        with snapshot.reading() as db:
            found, band, total, rewards = group_listing.unfiltered_page(snapshot.id, db, modal_n, key, order,
                                                                        limit, offset)
            keyless = counted(db, Filters(), entry=("ungrouped", ""))
        ungrouped = sum(n for n, _, _ in keyless.values())
        for bits, (n, _, _) in keyless.items():
            band[bits] += n
        more = offset + limit < total
        return {
            "data": RawJson(b"[" + b",".join(group.json(modal_n) for group in found) + b"]"),
            "next_cursor": str(offset + limit) if more else None,
            "has_more": more,
            "group_by": list(self.group_by),
            "modal_n": modal_n,
            "sort": {"key": key, "order": order},
            "reward_range": rewards,
            "total": total,
            "ungrouped": ungrouped,
            "indexing": snapshot.indexing,
            "health": health(band, "groups", total + ungrouped, total + ungrouped),
        }

    def found_group(self, group_key: str, params) -> tuple:
        """(snapshot, group, keys) of one group; `run_id` is required when several runs have the key."""
        keys = self.group_keys(params)
        found = []
        for snapshot in self.scope(params):
            if keys == self.group_by:
                members = snapshot.rows_where("gkey = ?", [group_key])
                if members:
                    found.append((snapshot, build_group(group_key, members, keys, snapshot.groups["modal_n"])))
            else:
                grouping = build_grouping(snapshot.rows, keys)
                if group_key in grouping.by_key:
                    found.append((snapshot, grouping.by_key[group_key]))
        if not found:
            raise ApiError(404, f"no group {group_key} for {','.join(keys)}")
        if len(found) > 1:
            runs = ", ".join(s.id for s, _ in found)
            raise ApiError(400, f"group {group_key} is in several runs ({runs}): pass run_id")
        return (*found[0], keys)

    def group(self, group_key: str, params):
        snapshot, group, keys = self.found_group(group_key, params)
        filters = Filters.parse(params)
        key, order, _ = parse_sort(params, GROUP_SORT_KEYS, default=("reward", "desc"))
        members = filters.rollout_only()  # a member is judged by the row filters and the rollout flags
        judged = bool(members) or members.by_flag
        runs = {snapshot.id: snapshot.location}
        with snapshot.reading() as db:
            selected = matching_ids(db, filters.on(snapshot), [row["id"] for row in group.members]) if filters else None

        def matches(row, flags: Filters) -> bool:
            return (selected is None or row["id"] in selected) and flags.keeps_bits(flag_bits(row["flags"]))

        def shown(row, **extra):
            match = matches(row, members) if judged else None
            return {**with_run(row, runs), "repetition_id": repetition_of(row), **extra, "match": match}

        rollouts = ordered_by(group.counting, lambda row: row["_keys"][key], order)
        return 200, {
            "group": {**group.summary(snapshot.id), "matching": len(flagged_members(group, filters, matches))},
            "sort": {"key": key, "order": order},
            "reward_range": reward_range(group.rewards),
            "group_by": list(keys),
            "rollouts": [shown(row) for row in rollouts],
            "superseded": [shown(row, superseded_by=by) for row, by in group.superseded],
        }

    # -- comparing runs and steps ---------------------------------------------------------------

    def compare_runs(self, params):
        """Two runs (or one run at two steps) group by group: see `views.runs_compare`."""
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
        """One prompt (a key's value) at every step of a run: see `views.runs_compare.lineage`."""
        asked = {name: one(params, name) for name in ("run_id", "key", "value")}
        missing = [name for name, value in asked.items() if value is None]
        if missing:
            raise ApiError(400, f"lineage needs run_id, key and value: pass {', '.join(missing)}")
        snapshot = self.scope(params)[0]
        return 200, {**asked, **runs_compare.lineage(snapshot, asked["key"], asked["value"])}


def key_list(params, name: str) -> tuple:
    """A comma-separated list of keys (`group_by=step,instance_id`); empty when not given."""
    return tuple(k.strip() for k in (one(params, name) or "").split(",") if k.strip())


def as_written(number: float | None):
    """A parsed number as the request wrote it: `3`, not `3.0`."""
    return int(number) if number is not None and number.is_integer() else number


def computed(_key, compute):
    """`Snapshot.memoized` for answers that are not worth keeping."""
    return compute()


def side_scope(params, name: str) -> dict:
    """The scope one side of a comparison is looked up in: `run_a` / `run_b` as its `run_id`."""
    run_id = one(params, name)
    return {"run_id": [run_id]} if run_id is not None else {}


def context(snapshot: Snapshot, row: dict) -> dict:
    """The run fields a record's header carries."""
    return {"run_id": snapshot.id, "project": snapshot.location.project, "revision": row["revision"]}


def path_number(params, name: str, default: int) -> int:
    value = one(params, name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ApiError(400, f"{name} must be a path index, not {value!r}") from None


def bounded_count(params, name: str, default: int, most: int) -> int:
    """A count in 0..`most` (`default` when not given); anything else is the request's fault."""
    value = one(params, name)
    if value is None:
        return default
    try:
        count = int(value)
    except ValueError:
        count = -1
    if not 0 <= count <= most:
        raise ApiError(400, f"{name} must be a count of tokens in 0..{most}, not {value!r}")
    return count


def node_param(params) -> int:
    """The node a per-node answer is about (`node=n<id>`, or the bare number)."""
    value = one(params, "node")
    if value is None:
        raise ApiError(400, "name the node: pass node=n<id>")
    digits = value[1:] if value.startswith("n") else value
    if not digits.isdecimal() or not digits.isascii():
        raise ApiError(400, f"node must be a node id like n3, not {value!r}")
    return int(digits)


def layer_param(params) -> int:
    value = one(params, "layer")
    if value is None:
        return 0
    if not value.isdecimal() or not value.isascii():
        raise ApiError(400, f"layer must be a layer number (0, 1, ...), not {value!r}")
    return int(value)


def path_segment(text: str) -> int:
    """A path number given in the route (`/paths/{n}/row`)."""
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, f"the path must be a path index, not {text!r}") from None


def part_start(params) -> int:
    """Where the asked part of an answer starts (`from`, 0 when not given)."""
    value = one(params, "from")
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        raise ApiError(400, f"from must be a position, not {value!r}") from None


def answer_part(make, *args) -> dict:
    """`make(*args)`, a part of an answer; a start or path the record does not have is the request's fault."""
    try:
        return make(*args)
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    except IndexError as error:
        raise ApiError(404, f"no such path: {error}") from None


def sparse_rows(snapshot: Snapshot) -> int:
    """Fewer matching rows than this make a sparse listing: its matches are found first (`listed_rows`)."""
    return int(SPARSE_SHARE * snapshot.row_count)


def coverage(snapshots) -> tuple[int, int]:
    """(rows indexed, documents listed) over `snapshots`: the band's `scanned` and `total`."""
    return sum(s.row_count for s in snapshots), sum(s.file_count for s in snapshots)


def with_run(row: dict, runs: dict) -> dict:
    """The row as sent, with its run's id and project and the version it was read at."""
    location = runs[row["_run"]]
    return {**public(row), "revision": row["revision"], "run_id": location.id, "project": location.project}


def encoded_rows(entries: list, runs: dict) -> RawJson:
    """`[with_run(row) ...]` as JSON for listed (run id, compressed JSON, mtime_ns, ...) entries."""
    encode = row_encoder(runs)
    return RawJson(b"[" + b",".join(encode(run_id, json_z, mtime_ns) for run_id, json_z, mtime_ns, *_ in entries)
                   + b"]")


def flagged_members(group, filters: Filters, matches) -> list:
    """The members that keep a group under the filters (see `group_listing.keep_flagged`)."""
    if not filters.by_flag:
        return [row for row in group.members if matches(row, Filters())]
    if not all(flag in group.flags for flag in filters.flags if not is_rollout_flag(flag)):
        return []
    if any(flag in group.flags for flag in filters.exclude_flags if not is_rollout_flag(flag)):
        return []
    return [row for row in group.members if matches(row, filters.rollout_only())]


def matching_ids(db, filters: Filters, among: list | None = None) -> set:
    """The ids of the rows the row filters keep (of `among` when given)."""
    where, values = filters.where()
    if among is not None:
        where, values = f"{where} AND id IN (SELECT value FROM json_each(?))", [*values, encode_json(among).decode()]
    return {record_id for (record_id,) in db.execute(f"SELECT id FROM rows WHERE {where}", values)}


def members_counter(db, filters: Filters):
    """How `keep_flagged` counts the members of the server's groups that the rollout flags keep."""
    return lambda groups: group_listing.rollout_flag_counts(db, filters, [g.key for g in groups])


def grouping_counter(grouping, filters: Filters, matched: set | None):
    """The same for a grouping built for one request, from its members' rows."""
    rollout = filters.rollout_only()

    def count(groups):
        return {g.key: sum(1 for row in grouping.by_key[g.key].members
                           if (matched is None or row["id"] in matched) and rollout.keeps_bits(flag_bits(row["flags"])))
                for g in groups}
    return count


def merged(entries: list, sort: list) -> list:
    """Rows of several runs (run id, json, mtime_ns, *sort values) in the listing's order."""
    for position in reversed(range(len(sort))):
        entries.sort(key=lambda entry, p=3 + position: (entry[p] is None, entry[p] if entry[p] is not None else 0),
                     reverse=sort[position][1] == "desc")
    return entries
