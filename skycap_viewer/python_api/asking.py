"""A question to the API, asked as an HTTP request asks it, answered as the HTTP client reads it.

Keyword arguments become the query's `{name: [values]}` (a list is a repeated parameter, `True` is
`true`), so the route's own parser reads them with the HTTP API's names and meanings. The answer is
encoded as the server sends it and decoded again: what Python gets is what `curl` gets, byte for byte
before the parse. A refusal is the route's `ApiError`, its status and one-line detail.
"""

import json

from skycap_viewer.wire import Download, RawJson, encode_json

LISTING_FILTERS = ("step", "task_id", "status", "annotation", "q", "reward_min", "reward_max", "flag",
                   "exclude_flag", "trained", "ungrouped", "group_by")  # docs/api.md, `GET /v1/trajectories`
SORTING = ("sort", "order", "limit")
SEARCH_OPTIONS = ("case", "kind", "role", "in", "limit")  # `GET /v1/search`


def query(asked: dict, allowed: tuple) -> dict[str, list[str]]:
    """`asked` as query parameters; a name the route does not take is a TypeError (a typo must not
    quietly list everything)."""
    unknown = sorted(name for name in asked if name not in allowed)
    if unknown:
        raise TypeError(f"unknown parameter(s) {', '.join(unknown)}: this answer takes {', '.join(allowed)}")
    return {name: [as_text(item) for item in (value if isinstance(value, (list, tuple)) else [value])]
            for name, value in asked.items() if value is not None}


def as_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def decoded(payload):
    """A route's payload as the HTTP client reads it: JSON encoded and parsed, or a file's bytes."""
    if type(payload) is Download:
        return payload.body
    return json.loads(payload if type(payload) is RawJson else encode_json(payload))


def ask(route, *captured, params: dict | None = None):
    """`route(*captured, params)` of `server.api.Api`, its answer decoded; its refusal raised as is."""
    _, payload = route(*captured, params or {})
    return decoded(payload)
