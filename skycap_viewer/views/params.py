"""Request parameters as the answers read them: the query's `{name: [values]}` in, a value out.

Every parser turns a bad value into the request's fault, a 400 saying what the value must be
(`converted`), so a typo in a URL is told apart from a fault of the viewer's.
"""

import math

from skycap_viewer.catalog.rows import SORT_KEYS
from skycap_viewer.errors import ApiError

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def one(params: dict, name: str) -> str | None:
    """The last value of a query parameter, or None; empty means absent."""
    values = params.get(name)
    return values[-1] if values and values[-1] != "" else None


def converted(value: str, name: str, convert, what: str):
    """`convert(value)`; a value it refuses (ValueError) is a 400: `name` must be `what`."""
    try:
        return convert(value)
    except ValueError:
        raise ApiError(400, f"{name} must be {what}, not {value!r}") from None


def parsed(params: dict, name: str, default, convert, what: str):
    """The parameter `name` through `converted`, or `default` when it is not given."""
    value = one(params, name)
    return default if value is None else converted(value, name, convert, what)


def real(text: str) -> float:
    """A number, infinities included; NaN is no number a filter can compare with."""
    value = float(text)
    if math.isnan(value):
        raise ValueError(text)
    return value


def decimal(text: str) -> int:
    """Digits only (no sign, no space, no other script's digits)."""
    if not text.isdecimal() or not text.isascii():
        raise ValueError(text)
    return int(text)


def number(params: dict, name: str) -> float | None:
    """A numeric query parameter, or None when absent."""
    return parsed(params, name, None, real, "a number")


def path_number(params: dict, name: str, default: int) -> int:
    """A path index (`path`, `a`, `b`, ...), `default` when not given."""
    return parsed(params, name, default, int, "a path index")


def path_segment(text: str) -> int:
    """A path number given in the route (`/paths/{n}/row`)."""
    return converted(text, "the path", int, "a path index")


def part_start(params: dict) -> int:
    """Where the asked part of an answer starts (`from`, 0 when not given)."""
    return parsed(params, "from", 0, int, "a position")


def bounded_count(params: dict, name: str, default: int, most: int) -> int:
    """A count in 0..`most` (`default` when not given)."""
    def count(text):
        value = int(text)
        if not 0 <= value <= most:
            raise ValueError(text)
        return value
    return parsed(params, name, default, count, f"a count of tokens in 0..{most}")


def node_param(params: dict) -> int:
    """The node a per-node answer is about (`node=n<id>`, or the bare number)."""
    value = one(params, "node")
    if value is None:
        raise ApiError(400, "name the node: pass node=n<id>")
    return converted(value, "node", lambda text: decimal(text[1:] if text.startswith("n") else text),
                     "a node id like n3")


def layer_param(params: dict) -> int:
    """The layer of a per-node answer (`layer`, 0 when not given)."""
    return parsed(params, "layer", 0, decimal, "a layer number (0, 1, ...)")


def key_list(params: dict, name: str) -> tuple:
    """A comma-separated list of keys (`group_by=step,instance_id`); empty when not given."""
    return tuple(k.strip() for k in (one(params, name) or "").split(",") if k.strip())


def group_keys(params: dict, server_keys: tuple) -> tuple:
    """The keys a request groups by (`group_by`), the server's when it names none."""
    return key_list(params, "group_by") or server_keys


def side_scope(params: dict, name: str) -> dict:
    """The scope one side of a comparison is looked up in: `run_a` / `run_b` as its `run_id`, else the
    `run_id` every other route takes (both sides in that run)."""
    run_id = one(params, name) or one(params, "run_id")
    return {"run_id": [run_id]} if run_id is not None else {}


def as_written(value: float | None):
    """A parsed number as the request wrote it: `3`, not `3.0`."""
    return int(value) if value is not None and value.is_integer() else value


def parse_sort(params: dict, keys=SORT_KEYS, default=("created", "desc")) -> tuple[str, str, bool]:
    """(key, order, asked): `asked` is False when the default order applies."""
    key = one(params, "sort")
    if key is None:
        return default[0], default[1], False
    if key not in keys:
        raise ApiError(400, f"sort must be one of {'|'.join(keys)}")
    return key, "asc" if one(params, "order") == "asc" else "desc", True


def parse_page(params: dict) -> tuple[int, int]:
    """(limit, offset): limit 1-1000 (junk means 100), cursor an offset (junk means 0)."""
    try:
        limit = min(max(int(one(params, "limit") or DEFAULT_LIMIT), 1), MAX_LIMIT)
    except ValueError:
        limit = DEFAULT_LIMIT
    try:
        offset = max(int(one(params, "cursor") or 0), 0)
    except ValueError:
        offset = 0
    return limit, offset


def the_one(found: list, what: str):
    """The one `(snapshot, item)` found for `what`: none is a 404, one in several runs asks for `run_id`."""
    if not found:
        raise ApiError(404, f"no {what}")
    if len(found) > 1:
        runs = ", ".join(snapshot.id for snapshot, _ in found)
        raise ApiError(400, f"{what} is in several runs ({runs}): pass run_id")
    return found[0]
