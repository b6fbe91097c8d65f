"""A node's media items (`tokens.media`, format §6): the images whose placeholder tokens lie in it.

skycap writes `[{modality, offset, length, hash}]`, `offset` counted from the node's first token;
a record written before media existed has no `media` (read as none). An item that does not fit its
node is a record problem (`media_problems`, so the record is `malformed-record`) and is still
shown: its range clipped to the node's tokens, with the problem next to it.
"""

from skycap_viewer.record.schema import is_int

SHOWN_VALUE = 40  # characters of a wrong value a problem quotes


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 3] + "..."


def _recorded(node: dict):
    """The node's `media` as written (`[]` when absent or null), and its token count."""
    tokens = node.get("tokens")
    if tokens is None:
        return [], 0
    items = tokens.get("media")
    return [] if items is None else items, tokens["length"]


def item_problem(item, length: int) -> str | None:
    """What is wrong with one media item of a node of `length` tokens, or None."""
    if not isinstance(item, dict):
        return f"is {_shown(item)}, not an object"
    for key in ("modality", "hash"):
        if not isinstance(item.get(key), str):
            return f"{key} {_shown(item.get(key))} is not a string"
    offset, size = item.get("offset"), item.get("length")
    for key, value in (("offset", offset), ("length", size)):
        if not (is_int(value) and value >= 0):
            return f"{key} {_shown(value)} is not a token count"
    if offset + size > length:
        return f"tokens [{offset}, {offset + size}) run past the node's {length} tokens"
    return None


def media_problems(node: dict) -> list[str]:
    """The node's media problems as record problems: at most one line a node, naming its first bad item."""
    items, length = _recorded(node)
    if not isinstance(items, list):
        return [f"node {node['id']} tokens.media is {_shown(items)}, not a list"]
    bad = [(i, problem) for i, item in enumerate(items) if (problem := item_problem(item, length))]
    if not bad:
        return []
    first, problem = bad[0]
    more = f" (and {len(bad) - 1} more with problems)" if len(bad) > 1 else ""
    return [f"node {node['id']} media item {first}: {problem}{more}"]


def node_media(node: dict, start: int = 0, stop: int | None = None) -> list[dict]:
    """The node's media items (those recorded at `start` to `stop`) as the page and `show` draw them:
    `modality`, `hash`, `offset` and `length` (the range clipped to the node's tokens; null when the
    record gives none), `label` ("image · cat · 3 tokens", as recorded) and `problem` (null, or what
    is wrong with the item). An item that is not an object is left out (`media_problems` names it)."""
    items, length = _recorded(node)
    if not isinstance(items, list):
        return []
    return [_shown_item(item, length) for item in items[start:stop] if isinstance(item, dict)]


def media_count(node: dict) -> int:
    """How many media items the node records (what `node_media` lists from)."""
    items = _recorded(node)[0]
    return len(items) if isinstance(items, list) else 0


def _shown_item(item: dict, length: int) -> dict:
    modality, digest = item.get("modality"), item.get("hash")
    modality = modality if isinstance(modality, str) else None
    digest = digest if isinstance(digest, str) else None
    offset, size = item.get("offset"), item.get("length")
    placed = is_int(offset) and offset >= 0 and is_int(size) and size >= 0
    start, end = (min(offset, length), min(offset + size, length)) if placed else (None, None)
    count = f"{size} token{'' if size == 1 else 's'}" if placed else "no token range"
    problem = item_problem(item, length)
    if problem and placed:
        problem += f": shown as [{start}, {end})"
    return {
        "modality": modality,
        "hash": digest,
        "offset": start,
        "length": None if start is None else end - start,
        "label": f"{modality or 'media'} · {digest if digest is not None else '(no hash)'} · {count}",
        "problem": problem,
    }
