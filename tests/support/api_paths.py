"""An API path named from the server's route table (`server/web.py`'s `ROUTES`), for the benchmark and
tests: a route moved or renamed in the table moves here with it (or fails to be found, loudly), so no
hand-written `/v1/...` string goes stale beside it."""

from urllib.parse import quote

from skycap_viewer.server.web import CAPTURE, ROUTES


def api_path(answer: str, *captured: str) -> str:
    """The path of the route `Api.<answer>` answers, its captured segments filled in order (each
    percent-encoded whole, so a `/` in a group key stays in its segment); the caller adds the query."""
    route = next((route for route in ROUTES if route.answer == answer), None)
    if route is None:
        raise KeyError(f"no route is answered by {answer!r}")
    if len(captured) != route.segments.count(CAPTURE):
        raise ValueError(f"the {answer!r} route captures {route.segments.count(CAPTURE)} segment(s), "
                         f"not {len(captured)}")
    given = iter(captured)
    return "/" + "/".join(quote(next(given), safe="") if part is CAPTURE else part for part in route.segments)
