"""The API asked in process, without HTTP: what `skycap-viewer bundle` writes is the server's own answers.

The record directories are indexed as the server indexes them (runs discovered alike, a temporary
index), once; a request is matched against the server's route table and answered by the route's
`Api` method, so no answer is computed a second way.
"""

from urllib.parse import quote

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.pool import compute_rows_here
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.record.document import document_path
from skycap_viewer.server.api import Api
from skycap_viewer.server.web import match_route, static_files
from skycap_viewer.wire import Download, RawJson, encode_json


class InProcessApi:
    """The read API over `directories`, indexed once; `ask` answers one route as the server would."""

    def __init__(self, directories, group_by):
        self.catalog = Catalog(directories, group_by=group_by)
        self.api = Api(self.catalog)
        # only the sidecars of the records `verify` names, from the parse an answer read if it is still held
        self.watcher = Watcher(self.catalog, compute_rows=self.api.documents.verifying_held(compute_rows_here),
                               verify=False)
        self.watcher.poll()

    def verify(self, run_id: str, record_ids):
        """Read and check these records' sidecars as the server's background verification does, so their
        rows carry the flags the server's do once verified; the run's other records' are not read."""
        snapshot = self.catalog.snapshot(run_id)
        for record_id in record_ids:
            self.catalog.verify_soon(run_id, document_path(snapshot.location.path, record_id).name)
        self.watcher.poll()

    def ask(self, segments, params: dict) -> bytes:
        """The JSON the server sends for the route `segments` (as they are, ids not encoded) with `params`
        (`{name: [values]}`); a refusal raises the server's `ApiError`."""
        written = [quote(segment, safe="") for segment in segments]
        route, captured = match_route(written if written[:1] == ["__viewer"] else ["v1", *written])
        status, payload = getattr(self.api, route.answer)(*captured, params)
        if type(payload) is Download:
            raise TypeError(f"{route.answer} answers a download, not JSON")
        return payload if type(payload) is RawJson else encode_json(payload)

    def page_files(self) -> dict:
        """URL path -> file of every page file the server serves (the same table)."""
        return {name: source for name, (source, _) in static_files().items()}
