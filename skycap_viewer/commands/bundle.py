"""`skycap-viewer bundle DIR... -o OUT [filters]`: the page and the server's answers for the rollouts the
filters keep, as a folder (or one zip) that any static host serves and the page reads without a server.

Every answer is the server's own (asked in process: `server/in_process.py`), written under the name
the page's bundle backend reads it by (`bundle_names.py`, `static/js/app/bundle-name.js`): the runs, both
listings (every sort, every page of `PAGE_ROWS`, the band counted over the kept set) and each group's
members, and per rollout what its drawer reads. The page asks its usual requests, without the filters
(its filter bar is disabled in a bundle): the answer written for each is the server's answer with the
filters added. What a bundle cannot answer (another filter, search, export, compare) the page disables.

It refuses filters keeping more than `--max-rollouts`; within them, rollouts' drawer answers are
written newest first while they fit `--max-mib`, and those left out are said, on stderr and in the
bundle. It writes only into OUT, never into a record directory, and reads only the documents (to list
them) and the files of the rollouts it writes.
"""

import json
import shutil
import sys
import zipfile
from pathlib import Path

from skycap_viewer.catalog.groups import GROUP_SORT_KEYS
from skycap_viewer.catalog.rows import SORT_KEYS
from skycap_viewer.commands.bundle_names import bundle_file, gzip_answer
from skycap_viewer.commands.export import PARAMETERS
from skycap_viewer.commands.terminal import plural
from skycap_viewer.errors import ApiError, RecordError, UsageError
from skycap_viewer.record.document import document_path, is_document_name, read_document
from skycap_viewer.record.search import CONTEXT, MAX_DOCUMENT_HITS, MAX_MATCH_SHOWN, node_texts
from skycap_viewer.record.sidecars import read_tokens
from skycap_viewer.views.run.listing import Cursor

FILTERS = tuple(name for name in PARAMETERS if name not in ("sort", "order", "format"))  # the listing's filters
PAGE_ROWS = 100  # rows of a listing page, as the page asks them (LIMIT in static/js/app/run-page.js)
DEFAULT_MAX_ROLLOUTS = 2000
DRAWER_ROUTES = ("graph", "exchanges", "timeline")  # answers in parts beside /paths and each path's /chat
LAST_FILES_BYTES, LAST_BYTES_A_ROLLOUT = 16_384, 256  # at most, once their ids and why they were left out
VIEWER_FILE = "__viewer"  # the page asks `__viewer` first, relative to its folder: a bundle says so in it


class Out:
    """Where the bundle goes: a folder, or a zip archive, with the bytes written counted."""

    def __init__(self, target: Path, as_zip: bool):
        self.target = target
        self.archive = zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) if as_zip else None
        self.written = 0
        self.names: dict[str, str] = {}  # file -> the request it answers (two requests, one name: refused)

    def write(self, name: str, body: bytes, request: str = ""):
        if self.names.setdefault(name, request) != request:
            raise UsageError(f"two requests share the file {name}: {self.names[name]} and {request}")
        self.written += len(body)
        if self.archive is not None:  # an answer is gzipped already
            self.archive.writestr(name, body, zipfile.ZIP_STORED if name.endswith(".gz") else zipfile.ZIP_DEFLATED)
            return
        path = self.target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)

    def close(self):
        if self.archive is not None:
            self.archive.close()


class Bundle:
    """The answers of one bundle: `ask(segments, params)` is the API in process; each answer is
    written under the request the page makes (`page`), asked with the filters added."""

    def __init__(self, ask, out: Out, filters: dict, budget: int | None):
        self.ask_api = ask
        self.out = out
        self.filters = filters
        self.budget = budget
        self.held: list[tuple[str, bytes, str]] = []  # a rollout's answers, written once all fit

    def answer(self, segments, page: dict, filtered: bool = False) -> dict:
        """The server's answer to the page's request (`filtered`: with the bundle's filters too), kept."""
        asked = {name: value if isinstance(value, list) else [str(value)] for name, value in page.items()
                 if value is not None}
        body = self.ask_api(tuple(segments), {**(self.filters if filtered else {}), **asked})
        payload = json.loads(body)
        if payload.get("next_cursor"):  # the page asks a later page by its offset: one file a page
            payload["next_cursor"] = str(Cursor.parse(payload["next_cursor"]).offset)
            body = json.dumps(payload, separators=(",", ":")).encode()
        self.hold(segments, page, body)
        return payload

    def hold(self, segments, page: dict, body: bytes):
        """Keep `body` as the answer to the page's request, to be written with the rest of its rollout's."""
        self.held.append((bundle_file(segments, page), gzip_answer(body), json.dumps([list(segments), page])))

    def flush(self) -> bool:
        """Write the answers held; False (nothing written) when they would pass the budget."""
        size = sum(len(body) for _, body, _ in self.held)
        fits = self.budget is None or self.out.written + size <= self.budget
        if fits:
            for name, body, request in self.held:
                self.out.write(name, body, request)
        self.held = []
        return fits

    def pages(self, segments, page: dict) -> list[dict]:
        """Every page of a listing, as the page asks them: the first, then `cursor` at each offset."""
        answers = [self.answer(segments, {**page, "limit": PAGE_ROWS}, filtered=True)]
        while answers[-1].get("next_cursor"):
            answers.append(self.answer(segments, {**page, "limit": PAGE_ROWS,
                                                  "cursor": answers[-1]["next_cursor"]}, filtered=True))
        return answers

    def listings(self, run: dict) -> list[str]:
        """Both listings of `run` in every sort, and each kept group's members; the kept rollouts' ids."""
        run_id = run["id"]
        kept = []
        for sort, order in sorts(SORT_KEYS):
            answers = self.pages(["trajectories"], {"run_id": run_id, "sort": sort, "order": order})
            if sort is None:
                kept = [row["id"] for answer in answers for row in answer["data"]]
        if not run.get("groupable"):
            return kept
        keys = []
        for sort, order in sorts(GROUP_SORT_KEYS):
            answers = self.pages(["groups"], {"run_id": run_id, "sort": sort, "order": order})
            keys = keys or [group["key"] for answer in answers for group in answer["data"]]
            for key in keys:
                self.answer(["groups", key], {"run_id": run_id, "sort": sort, "order": order}, filtered=True)
        if answers[0].get("ungrouped"):  # the groups' notice lists the rollouts no group holds
            for sort, order in sorts(SORT_KEYS):
                self.pages(["trajectories"], {"run_id": run_id, "sort": sort, "order": order, "ungrouped": "true"})
        return kept

    def searchable(self, run: dict, record_id: str):
        """The rollout's nodes' searched texts, for the page's search within the bundle (`record.search`)."""
        document = read_document(document_path(run["path"], record_id))
        try:
            tokens = read_tokens(run["path"], document)
        except RecordError:
            tokens = None  # the Path tab shows the message text of a record whose tokens cannot be read
        body = json.dumps({"nodes": node_texts(document, tokens)}, separators=(",", ":")).encode()
        self.hold(["search"], {"run_id": run["id"], "trajectory_id": record_id}, body)

    def search_index(self, run_id: str, written: list[str], skipped: list[dict]):
        """What the page's search reads first: the rollouts searched, in the listing's order (as the
        server searches them), those it cannot search, and the server's limits on a hit."""
        said = {"ids": written, "skipped": skipped, "context": CONTEXT, "match_shown": MAX_MATCH_SHOWN,
                "max_hits": MAX_DOCUMENT_HITS}
        self.hold(["search"], {"run_id": run_id}, json.dumps(said).encode())

    def drawer(self, run_id: str, record_id: str) -> str | None:
        """What the drawer reads of one rollout, every part of each answer; why it cannot be read, if so (the
        drawer then says it from its header alone)."""
        base = ["trajectories", record_id]
        at = {"run_id": run_id}
        header = self.answer(base, at)
        if header.get("unreadable"):
            return header.get("error") or "unreadable"
        paths = self.answer([*base, "paths"], at)
        for index, path in enumerate(paths.get("paths") or []):
            part = path.get("part")
            while part and part.get("next") is not None:
                part = self.answer([*base, "paths"], {**at, "from": part["next"], "path": index}).get("part")
            chat = self.answer([*base, "paths", str(index), "chat"], at)
            while (chat.get("part") or {}).get("next") is not None:
                chat = self.answer([*base, "paths", str(index), "chat"], {**at, "from": chat["part"]["next"]})
            self.answer([*base, "notable"], {**at, "path": index})
        if len(paths.get("paths") or []) > 1:
            self.answer([*base, "forks"], {"a": 0, "b": 1, **at})
        for route in DRAWER_ROUTES:
            answer = self.answer([*base, route], at)
            while (answer.get("part") or {}).get("next") is not None:
                answer = self.answer([*base, route], {**at, "from": answer["part"]["next"]})
        return None


def sorts(keys) -> list[tuple]:
    """(sort, order) of every order the page can ask: its default (none given), then each key both ways."""
    return [(None, None), *((key, order) for key in keys for order in ("desc", "asc"))]


def filter_params(args) -> dict:
    """The command's filter options as the API's query parameters (`{name: [values]}`)."""
    params = {}
    for name in FILTERS:
        value = getattr(args, name, None)
        if value is not None:
            params[name] = value if isinstance(value, list) else [value]
    return params


def checked_out(out: Path, directories, force: bool, as_zip: bool) -> Path:
    """OUT, refused unless it is away from every record directory and empty (or, with `--force`, a bundle's)."""
    target = out.absolute()
    for directory in directories:
        root = Path(directory).absolute()
        if target == root or root in target.parents or target in root.parents:
            raise UsageError(f"{out} is inside or holds the record directory {directory}: pick another OUT")
    if as_zip:
        if target.exists() and not (force and target.is_file()):
            raise UsageError(f"{out} exists: pass --force to replace it" if target.is_file()
                             else f"{out} is not a file: --zip writes one archive")
        return target
    if target.exists() and not target.is_dir():
        raise UsageError(f"{out} is not a directory")
    if target.is_dir() and any(target.iterdir()):
        if not force:
            raise UsageError(f"{out} is not empty: pass --force to write over it")
        if any(is_document_name(path.name) for path in target.rglob("*.json.zst")):
            raise UsageError(f"{out} holds records: a bundle is never written into a record directory")
    return target


def prepared_out(target: Path, as_zip: bool) -> Path:
    """OUT made ready to write: an earlier bundle's answers removed (none is kept), the folder made."""
    if not as_zip:
        shutil.rmtree(target / "data", ignore_errors=True)
        target.mkdir(parents=True, exist_ok=True)
    return target


def said_filters(filters: dict) -> str:
    return " ".join(f"{name}={value}" for name, values in filters.items() for value in values) or "none"


def kept_rollouts(api, filters: dict, max_rollouts: int) -> dict:
    """run id -> the ids of its rollouts the filters keep; refused when they keep none, or too many."""
    runs = [run for run in json.loads(api.ask(("runs",), {}))["data"]
            if run["id"] in filters.get("run_id", [run["id"]])]
    kept_ids = {run["id"]: kept_by(api, run["id"], filters) for run in runs}
    total = sum(map(len, kept_ids.values()))
    if total > max_rollouts:
        raise UsageError(f"the filters ({said_filters(filters)}) keep {plural(total, 'rollout')}, more than "
                         f"--max-rollouts {max_rollouts}: narrow them or raise --max-rollouts")
    if not total:
        raise UsageError(f"the filters ({said_filters(filters)}) keep no rollout")
    return kept_ids


def write_bundle(api, page_files: dict, out: Out, filters: dict, kept_ids: dict, budget_mib: float | None) -> dict:
    """Write the page, then the answers; return what the bundle says of itself (`bundle` in `__viewer`)."""
    bundle = Bundle(api.ask, out, filters, None if budget_mib is None else int(budget_mib * 2**20))
    for name, source in sorted(page_files.items()):
        out.write(name.lstrip("/"), source.read_bytes())
    for run_id, ids in kept_ids.items():  # their rows get the flags their sidecars raise, as the server's once verified
        api.verify(run_id, ids)
    kept_runs = [run for run in json.loads(api.ask(("runs",), {}))["data"] if kept_ids.get(run["id"])]
    runs_answer = json.dumps({"data": kept_runs, "skipped": []}).encode()
    out.write(bundle_file(["runs"], {}), gzip_answer(runs_answer), "runs")
    kept = [(run, record_id) for run in kept_runs for record_id in bundle.listings(run)]
    listings = sum(len(body) for _, body, _ in bundle.held)
    if not bundle.flush():
        raise UsageError(f"the page and the listings alone take {(out.written + listings) / 2**20:.1f} MiB, more than "
                         f"--max-mib {budget_mib:g}: raise it, or narrow the filters")
    if bundle.budget is not None:  # room for what is written last: the search's list and `__viewer`, an id's line each
        bundle.budget -= LAST_FILES_BYTES + LAST_BYTES_A_ROLLOUT * len(kept)
    left_out, unreadable = write_drawers(bundle, kept, budget_mib)
    left_ids = {(item["run_id"], item["id"]) for item in left_out}
    for run in kept_runs:  # the search skips, as the server's, what it cannot read
        ids = [record_id for kept_run, record_id in kept if kept_run is run]
        written = [record_id for record_id in ids if (run["id"], record_id) not in left_ids
                   and unreadable.get(record_id) is None]
        skipped = [{"trajectory_id": record_id, "reason": f"unreadable: {unreadable[record_id]}"} for record_id in ids
                   if unreadable.get(record_id)] + [{"trajectory_id": item["id"], "reason": item["why"]}
                                                    for item in left_out if item["run_id"] == run["id"]]
        bundle.search_index(run["id"], written, skipped)
    bundle.budget = None  # the room kept for the search's lists above
    bundle.flush()
    said = {"filters": filters, "rollouts": len(kept), "left_out": left_out, "budget_mib": budget_mib}
    viewer = json.loads(api.ask(("__viewer",), {}))
    out.write(VIEWER_FILE, json.dumps({**viewer, "bundle": said}).encode())
    out.write(".nojekyll", b"")  # GitHub Pages serves `__viewer` only without Jekyll
    return said


def write_drawers(bundle: Bundle, kept: list, budget_mib: float | None) -> tuple[list, dict]:
    """Each kept rollout's drawer and searched texts, written while they fit; (those left out and why,
    record id -> why it cannot be read, or None)."""
    left_out, unreadable = [], {}
    for run, record_id in kept:
        try:
            unreadable[record_id] = bundle.drawer(run["id"], record_id)
            if unreadable[record_id] is None:
                bundle.searchable(run, record_id)
        except (ApiError, RecordError) as error:  # a record that cannot be read now: said, the rest written
            bundle.held = []
            left_out.append({"id": record_id, "run_id": run["id"], "why": str(getattr(error, "detail", error))})
            continue
        if not bundle.flush():
            left_out.append({"id": record_id, "run_id": run["id"],
                             "why": f"past the size budget (--max-mib {budget_mib:g})"})
    return left_out, unreadable


def kept_by(api, run_id: str, filters: dict) -> list[str]:
    """The ids of the rollouts of `run_id` the filters keep, in the listing's order."""
    ids, cursor = [], None
    while True:
        asked = {**filters, "run_id": [run_id], "limit": [str(PAGE_ROWS)], **({"cursor": [cursor]} if cursor else {})}
        answer = json.loads(api.ask(("trajectories",), asked))
        ids += [row["id"] for row in answer["data"]]
        cursor = answer["next_cursor"]
        if not cursor:
            return ids


def run_bundle(api, page_files: dict, directories, out: Path, filters: dict, max_rollouts: int,
               budget_mib: float | None, as_zip: bool, force: bool) -> int:
    """Write the bundle into `out` and say on stderr what it holds and what it left out."""
    target = checked_out(out, directories, force, as_zip)
    try:
        kept_ids = kept_rollouts(api, filters, max_rollouts)
        sink = Out(prepared_out(target, as_zip), as_zip)
        try:
            said = write_bundle(api, page_files, sink, filters, kept_ids, budget_mib)
        finally:
            sink.close()
    except ApiError as error:
        raise UsageError(error.detail) from None
    print(f"skycap-viewer: wrote {out}: {plural(said['rollouts'], 'rollout')} (filters: {said_filters(filters)}), "
          f"{sink.written / 2**20:.1f} MiB", file=sys.stderr)
    for left in said["left_out"]:  # listed in the bundle, their drawers not written
        print(f"skycap-viewer: left out {left['id']}'s drawer: {left['why']}", file=sys.stderr)
    return 0
