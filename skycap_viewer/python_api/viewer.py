"""`open(*dirs_or_urls)`: the viewer's catalog in this process, asked as the server asks it.

The `Viewer` builds what `skycap-viewer DIR` builds (the catalog over the persisted index, the watcher
that keeps it in step with the disk, a store URL's local copy, the API over them) and asks the API's
route functions (`server.api.Api`): the same parsers, the same views, the same answers as HTTP. It
polls as the server does, in daemon threads, so a notebook left open on a live run sees new records;
`close()` (or a `with` block) stops them.
"""

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY
from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.object_store import is_url
from skycap_viewer.catalog.persisted import IndexFiles
from skycap_viewer.catalog.pool import RowPool
from skycap_viewer.catalog.remote_copy import DEFAULT_CACHE_BYTES, synced_copy
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.commands.check import check_record, record_entry
from skycap_viewer.errors import ApiError
from skycap_viewer.python_api.asking import LISTING_FILTERS, SEARCH_OPTIONS, SORTING, ask, query
from skycap_viewer.python_api.rollout import Rollout
from skycap_viewer.python_api.rows import Rows
from skycap_viewer.record.copies import cache_directory
from skycap_viewer.server.api import Api
from skycap_viewer.views.record.trajectory import SERVED_PARTS, PartLimit
from skycap_viewer.views.run.export import with_rows
from skycap_viewer.wire import encode_json


def open(*dirs_or_urls, cache: bool = True, group_by=DEFAULT_GROUP_BY, verify: bool = True,
         storage_options: dict | None = None, remote_cache_bytes: int = DEFAULT_CACHE_BYTES) -> "Viewer":
    """A `Viewer` over record directories (or folders of runs, or object-store URLs), indexed before it
    returns. `cache=False` neither reads nor writes the persisted index (`--no-cache`)."""
    return Viewer(dirs_or_urls, cache=cache, group_by=group_by, verify=verify, storage_options=storage_options,
                  remote_cache_bytes=remote_cache_bytes)


class Viewer:
    """The runs under some directories, and every answer the HTTP API gives about them."""

    def __init__(self, sources, cache: bool = True, group_by=DEFAULT_GROUP_BY, verify: bool = True,
                 storage_options: dict | None = None, remote_cache_bytes: int = DEFAULT_CACHE_BYTES,
                 part_limit: PartLimit = SERVED_PARTS):
        """`part_limit`: how much one part of an answer in parts holds (the server's, unless a caller such
        as the MCP server wants smaller answers)."""
        if not sources:
            raise ValueError("open() needs one or more record directories (or store URLs)")
        self.copies = []
        roots = [self.local(str(source), storage_options or {}, remote_cache_bytes) for source in sources]
        self.catalog = Catalog(roots, IndexFiles(cache_directory() if cache else None), tuple(group_by))
        self.api = Api(self.catalog, part_limit)
        self.pool = RowPool()
        self.watcher = Watcher(self.catalog, compute_rows=self.pool.compute_rows, verify=verify,
                               prepare=self.api.encoded_entry)
        try:
            self.watcher.poll()  # indexed before the first question: its answers hold every record there is
        except BaseException:
            self.close()
            raise
        self.watcher.start()
        for copy in self.copies:
            copy.poll()

    def local(self, source: str, storage_options: dict, cache_bytes: int) -> Path:
        """The directory read for `source`: itself, or a store URL's local copy, synced now (an earlier copy
        only when the store cannot be listed), so the first answers are the store's as it is."""
        if not is_url(source):
            if not Path(source).is_dir():
                raise NotADirectoryError(f"not a directory: {source}")
            return Path(source)
        copy, said = synced_copy(source.rstrip("/"), storage_options, cache_directory(), cache_bytes)
        if said:
            warnings.warn(said, stacklevel=4)
        self.copies.append(copy)
        return copy.directory

    def close(self):
        """Stop the watcher, the store copies' polling, the worker processes and the searches."""
        self.watcher.stop()
        for copy in self.copies:
            copy.stop()
        if self.watcher.is_alive():
            self.watcher.join()
        self.pool.close()
        self.api.searches.close()
        for run in self.catalog.runs.values():
            run.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def scope(self, run: str | None) -> dict:
        return {} if run is None else {"run_id": [run]}

    def only_run(self, run: str | None) -> str | None:
        """`run`, or the one run there is when none is named (an answer that covers one run)."""
        runs = self.catalog.snapshots()
        return runs[0].id if run is None and len(runs) == 1 else run

    # -- listings ---------------------------------------------------------------------------

    def runs(self) -> Rows:
        """Every run as `/v1/runs` lists it."""
        return Rows(ask(self.api.runs)["data"])

    def rollouts(self, run: str | None = None, **filters) -> Iterator[dict]:
        """Every rollout the filters keep, as `/v1/trajectories` rows, in its order, page by page: the
        listing's names (`step`, `task_id`, `status`, `flag`, `exclude_flag`, `annotation`,
        `reward_min`, `reward_max`, `q`, `trained`, `sort`, `order`; `limit` is the page size)."""
        return self.pages(self.api.trajectories, {**self.scope(run), **query(filters, LISTING_FILTERS + SORTING)})

    def listing(self, run: str | None = None, cursor: str | None = None, **filters) -> dict:
        """One page of `/v1/trajectories` whole: its rows, `total`, `health`, `reward_range`, `next_cursor`."""
        return self.page(self.api.trajectories, run, cursor, filters)

    def groups(self, run: str | None = None, **filters) -> Iterator[dict]:
        """Every GRPO group the filters keep, as `/v1/groups` rows, page by page (its names, `group_by` too)."""
        return self.pages(self.api.groups, {**self.scope(run), **query(filters, LISTING_FILTERS + SORTING)})

    def groups_listing(self, run: str | None = None, cursor: str | None = None, **filters) -> dict:
        """One page of `/v1/groups` whole."""
        return self.page(self.api.groups, run, cursor, filters)

    def page(self, route, run: str | None, cursor: str | None, filters: dict) -> dict:
        params = {**self.scope(run), **query({**filters, "cursor": cursor}, LISTING_FILTERS + SORTING + ("cursor",))}
        return ask(route, params=params)

    def pages(self, route, params: dict) -> Iterator[dict]:
        page = ask(route, params=params)
        yield from page["data"]
        while page["next_cursor"] is not None:
            page = ask(route, params={**params, "cursor": [page["next_cursor"]]})
            yield from page["data"]

    # -- one rollout, two rollouts ----------------------------------------------------------

    def rollout(self, trajectory_id: str, run: str | None = None) -> Rollout:
        """One rollout by its id (`run` when the id is in several runs)."""
        return Rollout(self, trajectory_id, run)

    def compare(self, a: str, b: str, run_a: str | None = None, run_b: str | None = None, path_a: int = 0,
                path_b: int = 0, start: int = 0) -> dict:
        """Two rollouts' paths side by side (`/v1/compare`), the part from turn `start`."""
        params = query({"a": a, "b": b, "run_a": run_a, "run_b": run_b, "path_a": path_a, "path_b": path_b,
                        "from": start}, ("a", "b", "run_a", "run_b", "path_a", "path_b", "from"))
        return ask(self.api.compare, params=params)

    def checked(self, trajectory_id: str, params: dict) -> dict:
        """`check`'s entry for one record of the index, its sidecars read (`commands.check`)."""
        snapshot, _ = self.api.find(trajectory_id, params)
        directory = snapshot.location.path
        return record_entry(check_record(directory, trajectory_id, forks=True), forks=True)

    # -- text, rows -------------------------------------------------------------------------

    def search(self, text: str, run: str | None = None, regex: bool = False, **options) -> Iterator[dict]:
        """Hits of `text` in one run's records as `/v1/search` gives them, streamed as they are found:
        the listing's filters and the search's options (`case`, `kind`, `role`, `in`). A search covers one
        run: `run`, or the only one there is. The search stops when the iterator is closed."""
        page = self.search_page(text, run, regex, **options)
        try:
            yield from page["data"]
            while page["next_cursor"] is not None:
                page = self.search_page(text, run, regex, cursor=page["next_cursor"], **options)
                yield from page["data"]
        finally:
            if page["next_cursor"] is not None:
                self.search_page(text, run, regex, cursor=page["next_cursor"], cancel=True, **options)

    def search_page(self, text: str, run: str | None = None, regex: bool = False, cursor: str | None = None,
                    **options) -> dict:
        """One page of `/v1/search` whole: hits, `next_cursor`, `done`, `scanned`, what was skipped."""
        asked = {**options, "text": text, "regex": regex, "cursor": cursor}
        params = {**self.scope(self.only_run(run)),
                  **query(asked, LISTING_FILTERS + SEARCH_OPTIONS + ("text", "regex", "cursor", "cancel"))}
        return ask(self.api.search, params=params)

    def trainer_rows(self, rows) -> Iterator[dict]:
        """Each listing row (from `rollouts()`) with its record's trainer rows, as `/v1/trajectories/export`
        with `format=rows` writes its line (`rows`, or `row_error`)."""
        for row in rows:
            snapshot = self.catalog.snapshot(row["run_id"])
            if snapshot is None:
                raise ApiError(404, f"no run {row['run_id']}")
            yield json.loads(b"".join(with_rows(encode_json(row) + b"\n", snapshot.location.path)))
