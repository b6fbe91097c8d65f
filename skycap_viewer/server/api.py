"""The read API: one function per route, each taking the parsed request and returning (status, payload).

Records are found through the catalog's in-memory index by id, never by a path taken from
the request. Listings read only snapshots; the detail routes read one document (cached by
the file's version) and `/paths` with text also reads the tokens sidecar, checking afterwards
that a writer did not replace the record's files in between.
"""

import os
import time
from itertools import chain
from operator import itemgetter
from pathlib import Path

from skycap_viewer import __version__
from skycap_viewer.catalog.index import Catalog, Snapshot
from skycap_viewer.catalog.rows import present_sidecars, public, row_json
from skycap_viewer.errors import ApiError, RecordError
from skycap_viewer.flags import flag_catalogue, text_only_catalogue
from skycap_viewer.record.blocks import BLOCK_KIND_WHY
from skycap_viewer.record.document import document_path
from skycap_viewer.record.search import Query, query_problem
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
from skycap_viewer.views import runs_compare
from skycap_viewer.views.compare import PART_BYTES as COMPARE_PART_BYTES
from skycap_viewer.views.compare import Comparison
from skycap_viewer.views.groups import (
    DEFAULT_GROUP_BY,
    GROUP_SORT_KEYS,
    build_grouping,
    grouping_of,
    repetition_of,
)
from skycap_viewer.views.lineup import lineup
from skycap_viewer.views.listing import (
    Filters,
    health,
    is_rollout_flag,
    number,
    one,
    ordered_by,
    page,
    parse_page,
    parse_sort,
    reward_range,
    rows_in_order,
)
from skycap_viewer.views.trajectory import SERVED_PARTS, PartLimit, RecordView
from skycap_viewer.views.values import parse_limit, values_payload
from skycap_viewer.wire import RawJson, encode_json

FLAG_KEY = itemgetter("_flagkey")
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
        self.part_limit = part_limit  # how much one part of /paths, /graph, /exchanges holds
        self.group_by = tuple(group_by)
        self.searches = Searches()  # its worker processes start with the first search

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
        }

    def runs(self, params):
        entries = [self.run_entry(snapshot) for snapshot in self.catalog.snapshots()]
        entries.sort(key=lambda e: e["id"])
        entries.sort(key=lambda e: e.get("created_at") or e.get("updated_at") or "", reverse=True)
        return 200, {"data": entries}

    def run_entry(self, snapshot: Snapshot) -> dict:
        """The run as `/v1/runs` lists it; its facts and groups are kept on the snapshot (the watcher
        asks for them as it publishes, so a page's poll finds them made)."""
        location = snapshot.location
        entry = {
            "id": location.id,
            "project": location.project,
            "path": str(location.path),
            "symlink_to": str(location.symlink_to) if location.symlink_to else None,  # followed out of its root
            "indexing": snapshot.indexing,
            "indexed": len(snapshot.rows),
            "updated_at": snapshot.updated_at,
            "trajectory_count": snapshot.file_count,
            "sidecars_verified": snapshot.verified,
            "error": snapshot.scan_error,
            **snapshot.facts,
        }
        grouping = grouping_of(snapshot, self.group_by)
        entry.update({
            "group_by": list(self.group_by),
            "groupable": grouping.groupable,
            "group_count": len(grouping.groups),
            "modal_group_size": grouping.modal_n,
            "default_view": "groups" if grouping.groupable else "rollouts",
        })
        return entry

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
        snapshots = self.scope(params)
        filters = Filters.parse(params)
        key, order, _ = parse_sort(params)
        limit, offset = parse_page(params)
        ungrouped = one(params, "ungrouped") == "true"  # only the rows no group holds (the Groups view's notice)
        # an unfiltered listing of one run is what every poll asks again: keep its answers per snapshot
        memo = snapshots[0].memoized if not filters and not ungrouped and len(snapshots) == 1 else computed
        ordered = rows_in_order(snapshots, key, order)
        matching = filters.select(ordered) if filters else ordered
        if ungrouped:
            keys = self.group_keys(params)
            by_run = {s.id: grouping_of(s, keys) if keys == self.group_by else build_grouping(s.rows, keys)
                      for s in snapshots}
            matching = [row for row in matching if by_run[row["_run"]].is_ungrouped(row)]
        band = memo(("health",), lambda: health(map(FLAG_KEY, matching), "rollouts", *coverage(snapshots)))
        matching = filters.flagged(matching)
        rewards = memo(("reward_range", filters.flags, filters.exclude_flags),
                       lambda: reward_range(row["_keys"]["reward"] for row in matching))
        runs = {s.id: s.location for s in snapshots}
        listing = page(matching, limit, offset)
        listing["data"] = encoded_rows(listing["data"], runs)
        return 200, {
            **listing,
            "total": len(matching),
            "indexing": any(s.indexing for s in snapshots),
            "indexed_trajectories": sum(len(s.rows) for s in snapshots),
            "health": band,
            "sort": {"key": key, "order": order},
            "reward_range": rewards,
        }

    def find(self, record_id: str, params) -> tuple[Snapshot, dict]:
        """The index row of `record_id`; `run_id` is required when the id is in several runs.

        The id is looked up as the exact string it is in the index, whatever characters its file
        name has (spaces, `#`, `%`, unicode...): any listed record can be opened, and a path is only
        ever built from an id the index holds, never from a request's own text."""
        scope = self.scope(params)
        found = [(s, s.by_id[record_id]) for s in scope if record_id in s.by_id]
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
        for attempt in range(1, SETTLE_TRIES + 1):
            snapshot, row, version, view = self.view(record_id, params)
            key = (version, text, path, start)
            cached = self.encoded_paths.get(key) if version else None
            if cached is not None:
                return 200, cached
            payload = answer_part(view.paths_part, text, path, start, self.part_limit)
            if "tokens_error" in payload and "malformed-record" not in row["flags"]:
                self.catalog.verify_soon(snapshot.id, document_path(view.directory, record_id).name)
            if not text or self.settled(view.directory, record_id, view.document):
                encoded = RawJson(encode_json(payload))  # kept encoded: opening the rollout again costs nothing
                if version and version[0] == files_version(view.directory, record_id, view.present):
                    self.encoded_paths.put(key, encoded)
                return 200, encoded
            self.views.drop(version)  # its tokens may be a rewrite's: read them again
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
        rows = filters.flagged(filters.select(snapshot.rows) if filters else snapshot.rows)
        readable = [row["id"] for row in rows if not row.get("unreadable")]
        unreadable = [{"trajectory_id": row["id"], "reason": f"unreadable: {row.get('error')}"}
                      for row in rows if row.get("unreadable")]
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

    def groupings(self, params) -> tuple[tuple, list]:
        """(group keys, [(snapshot, its grouping)]) for the runs a group request covers.

        Groupings by the server's own keys are kept per snapshot; others (a request's `group_by`)
        are computed for the request alone, so no client can make the server hoard them."""
        keys = self.group_keys(params)
        pairs = []
        for snapshot in self.scope(params):
            kept = keys == self.group_by
            pairs.append((snapshot, grouping_of(snapshot, keys) if kept else build_grouping(snapshot.rows, keys)))
        return keys, pairs

    def groups(self, params):
        keys, groupings = self.groupings(params)
        snapshots = [snapshot for snapshot, _ in groupings]
        filters = Filters.parse(params)
        key, order, _ = parse_sort(params, GROUP_SORT_KEYS, default=("step", "desc"))
        limit, offset = parse_page(params)
        listed = []  # (run id, group, members matching the filters)
        for snapshot, grouping in groupings:
            if not filters:
                listed.extend((snapshot.id, group, group.members) for group in grouping.groups)
                continue
            matched = {}  # group position -> its matching members: from the selected rows alone
            for row in filters.select(snapshot.rows):
                position = grouping.position_of.get(id(row))
                if position is not None:
                    matched.setdefault(position, []).append(row)
            listed.extend((snapshot.id, grouping.groups[p], matched[p]) for p in sorted(matched))
        keyless = [row for _, grouping in groupings  # in no group: the band counts each one too
                   for row in (filters.select(grouping.ungrouped) if filters else grouping.ungrouped)]
        count = sum(len(grouping.groups) for _, grouping in groupings) + len(keyless)
        band = health(chain(map(group_band_key, listed), map(FLAG_KEY, keyless)), "groups", count, count)
        ungrouped = len(filters.flagged(keyless))
        if filters.by_flag:
            listed = [(run_id, group, kept) for run_id, group, matched in listed
                      if (kept := flagged_members(group, matched, filters))]
        if key != "step" or order != "desc" or len(snapshots) > 1:
            listed = ordered_by(listed, lambda item: item[1].keys[key], order)
        chunk = page(listed, limit, offset)
        chunk["data"] = RawJson(b"[" + b",".join(group.summary_json(run_id, len(matched))
                                                 for run_id, group, matched in chunk["data"]) + b"]")
        modal_sizes = {grouping.modal_n for _, grouping in groupings}
        return 200, {
            **chunk,
            "group_by": list(keys),
            "modal_n": modal_sizes.pop() if len(modal_sizes) == 1 else None,
            "sort": {"key": key, "order": order},
            "reward_range": reward_range(r for _, group, _ in listed for r in group.rewards),
            "total": len(listed),
            "ungrouped": ungrouped,
            "indexing": any(s.indexing for s in snapshots),
            "health": band,
        }

    def found_group(self, group_key: str, params) -> tuple:
        """(snapshot, group, keys) of one group; `run_id` is required when several runs have the key."""
        keys, groupings = self.groupings(params)
        found = [(s, grouping.by_key[group_key]) for s, grouping in groupings if group_key in grouping.by_key]
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

        def shown(row, **extra):
            match = members.matches(row) if judged else None
            return {**with_run(row, runs), "repetition_id": repetition_of(row), **extra, "match": match}

        matched = filters.select(group.members) if filters else group.members
        rollouts = ordered_by(group.counting, lambda row: row["_keys"][key], order)
        return 200, {
            "group": {**group.summary(snapshot.id), "matching": len(flagged_members(group, matched, filters))},
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
        sides = {side: (snapshots[side], runs_compare.side_grouping(snapshots[side], keys, self.group_by, steps[side]))
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


def coverage(snapshots) -> tuple[int, int]:
    """(rows indexed, documents listed) over `snapshots`: the band's `scanned` and `total`."""
    return sum(len(s.rows) for s in snapshots), sum(s.file_count for s in snapshots)


def with_run(row: dict, runs: dict) -> dict:
    """The row as sent, with its run's id and project and the version it was read at."""
    location = runs[row["_run"]]
    return {**public(row), "revision": row["revision"], "run_id": location.id, "project": location.project}


def encoded_rows(rows: list, runs: dict) -> RawJson:
    """`[with_run(row) ...]` as JSON, joined from each row's encoded JSON instead of encoding it again."""
    prefixes = {run_id: b'{"run_id":' + encode_json(location.id) + b',"project":' + encode_json(location.project)
                + b',"revision":' for run_id, location in runs.items()}
    return RawJson(b"[" + b",".join(
        prefixes[row["_run"]] + str(row["revision"]).encode() + b"," + row_json(row)[1:] for row in rows) + b"]")


def group_band_key(item) -> str:
    """A listed group counts once per group flag and once per rollout flag of a matching member."""
    _, group, matched = item
    if matched is group.members:
        return " ".join(set(group.flags) | group.member_flags)
    return " ".join(set(group.flags) | {flag for row in matched for flag in row["flags"]})


def flagged_members(group, matched: list, filters: Filters) -> list:
    """The members that keep a group under the filters' flags: none unless the group carries every
    required group flag and no excluded one; then the matched members that carry every required
    rollout flag and no excluded one (all of them when only group flags are asked)."""
    if not filters.by_flag:
        return matched
    if not all(flag in group.flags for flag in filters.flags if not is_rollout_flag(flag)):
        return []
    if any(flag in group.flags for flag in filters.exclude_flags if not is_rollout_flag(flag)):
        return []
    return filters.rollout_only().flagged(matched)
