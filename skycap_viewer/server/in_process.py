"""The API asked in process, without HTTP: what `skycap-viewer bundle` writes is the server's own answers.

The record directories are indexed as the server indexes them (runs discovered alike, a temporary
index), once; a request is matched against the server's route table and answered by the route's
`Api` method, so no answer is computed a second way.
"""

from urllib.parse import quote

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.server.api import Api
from skycap_viewer.server.web import match_route, static_files
from skycap_viewer.wire import Download, RawJson, encode_json


class InProcessApi:
    """The read API over `directories`, indexed once; `ask` answers one route as the server would."""

    def __init__(self, directories, group_by):
        self.catalog = Catalog(directories, group_by=group_by)
        Watcher(self.catalog, verify=False).poll()  # a record's sidecars are read when its answers are
        self.api = Api(self.catalog)

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
