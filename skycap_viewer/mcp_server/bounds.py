"""Answers an agent can hold: each tool's answer stays under `ANSWER_CHARS` of JSON.

A page is asked with the limit the agent gave (or the tool's default) and, when its JSON is too long,
asked again with half as many items, down to one; its cursor then goes on from where that page ended.
One item too long on its own is refused with the reason, naming where it can be read whole (an error
the agent reads, never a cut answer that looks whole).
"""

import json

ANSWER_CHARS = 80_000  # about 20k tokens: under the usual MCP client's cap on one tool result


class TooLong(Exception):
    """One item alone is past `ANSWER_CHARS`: the message says what and where to read it whole."""


def size(answer) -> int:
    return len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))


def fitted(make, limit: int, what: str):
    """`make(n)` for the largest n <= `limit` (halving) whose answer fits; `TooLong` when n = 1 does not."""
    while True:
        answer = make(limit)
        if size(answer) <= ANSWER_CHARS:
            return answer
        if limit == 1:
            raise TooLong(f"{what} is {size(answer):,} characters, more than the {ANSWER_CHARS:,} an answer holds")
        limit = max(1, limit // 2)


def offset_page(items: list, name: str, start: int, limit: int, what: str) -> dict:
    """`items[start:]` as a page under `name` that fits, with `total` and the `next_cursor` (an offset)."""
    def make(n):
        end = min(start + n, len(items))
        return {name: items[start:end], "total": len(items), "next_cursor": str(end) if end < len(items) else None}
    return fitted(make, limit, what)


def offset(cursor: str | None) -> int:
    """A cursor this server gave as an offset (0 when none); anything else is the agent's mistake."""
    if cursor is None:
        return 0
    if not cursor.isascii() or not cursor.isdecimal():
        raise ValueError(f"cursor {cursor!r} is not one this tool gave (pass its next_cursor)")
    return int(cursor)
