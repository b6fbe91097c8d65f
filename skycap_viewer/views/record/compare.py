"""Two paths of two records side by side: what they share, where they part, their turns paired.

By token ids when both paths have readable tokens (two renderings of one text are not the same
rollout), else by message text. A path is its nodes' units (token ids, or UTF-16 units of each
message's text) in path order; the common prefix is measured in those units. `docs/compare.md`
is the design. `/v1/compare`, the group line-up and `skycap-viewer diff` all come here, so they
cannot disagree.
"""

import json
from array import array
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cached_property

from skycap_viewer.record.blocks import message_text
from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.rollout import PathView, Rollout
from skycap_viewer.views.record.trajectory import (
    SERVED_PARTS,
    PartLimit,
    RecordView,
    check_start,
    node_payload,
    part_of,
    token_offsets,
    window,
)
from skycap_viewer.wire import RawJson, encode_json

LOOKAHEAD = 8  # how far pairing turns looks for the next turn of the same role before pairing two others
DIFF_CELLS = 1 << 16  # differing middles diffed unit by unit up to len × len of this (256 × 256); longer: one range
COMPARED_AS_TEXT = "compared-as-text"
PART_BYTES = 1 << 20  # a served part of turns: two long rollouts' first screens, drawn at once; the rest on scroll


def unit_kind(char: str) -> str:
    return "word" if char.isalnum() or char == "_" else "space" if char.isspace() else "other"


def word_starts(pieces: list[str]) -> list[bool]:
    """Per unit (its text `piece`), whether it starts a word: a run of word characters, a run of spaces,
    or one other character. A unit with no text of its own (a token sharing a character) starts none."""
    flags, before = [], ""
    for piece in pieces:
        kind = unit_kind(piece[:1]) if piece else None
        flags.append(kind is not None and (not before or kind == "other" or kind != unit_kind(before)))
        before = piece[-1:] or before
    return flags


def utf16_units(text: str) -> array:
    """A text as UTF-16 code units: the unit of the page's string offsets (lone surrogates kept)."""
    units = array("H")
    units.frombytes(text.encode("utf-16-le", "surrogatepass"))
    return units


@dataclass
class Side:
    """One path of one record as compared: its nodes, and each node's units."""

    view: RecordView
    index: int
    by_tokens: bool

    @cached_property
    def rollout(self) -> Rollout:
        return self.view.shown(True) if self.by_tokens else self.view.as_text(COMPARED_AS_TEXT)

    @cached_property
    def path(self) -> PathView:
        return self.rollout.paths[self.index]

    @property
    def nodes(self) -> list[int]:
        return self.path.info.nodes

    def node(self, position: int) -> dict:
        return self.rollout.nodes[self.nodes[position]]

    @cached_property
    def units(self) -> list:
        """Per node of the path, its units: token ids, or its message text's UTF-16 units."""
        if self.by_tokens:
            ids, nodes = self.view.tokens[0].token_ids, self.rollout.nodes
            return [ids[t["offset"]:t["offset"] + t["length"]] for t in (nodes[n]["tokens"] for n in self.nodes)]
        return [utf16_units(message_text(self.node(p).get("message"))) for p in range(len(self.nodes))]

    @cached_property
    def starts(self) -> list[int]:
        """Where each node starts in the path, and the path's end."""
        starts, at = [], 0
        for units in self.units:
            starts.append(at)
            at += len(units)
        return [*starts, at]

    def word_starts(self, position: int) -> list[bool] | None:
        """Which of the node's units start a word (`word_starts`), so a diff marks whole words; None when
        its tokens have no text (then unit by unit)."""
        if not self.by_tokens:
            return word_starts([chr(unit) for unit in self.units[position]])
        pieces = self.view.tokens[0].pieces(self.node(position)["tokens"])
        return None if pieces is None else word_starts(pieces)

    def role(self, position: int) -> tuple:
        node = self.node(position)
        return node.get("role"), node["author"]

    def chars(self, position: int, units: int | None = None) -> int:
        """The UTF-16 length of the text the node's first `units` units spell (all of them by default)."""
        if not self.by_tokens:
            return len(self.units[position]) if units is None else units
        node = self.node(position)
        raw = self.view.tokens[0].text_bytes(node["tokens"])
        if raw is None:
            return 0
        slices = node["tokens"]
        starts = self.view.tokens[0].text_offsets[slices["offset"]:slices["offset"] + slices["length"]].tolist()
        offsets = token_offsets(raw, starts)
        return offsets[-1 if units is None else units] - offsets[0]

    def text(self, position: int) -> dict:
        """The node's `/paths` text entry (its tokens in token mode)."""
        node = self.node(position)
        if not self.by_tokens:
            return node_payload(node, None)
        return node_payload(node, self.view.tokens[0], self.view.support[0].get(node["id"]))

    def turn(self, position: int, shared: int) -> dict:
        """The node at `position` as a turn: its range in the path and its `/paths` blocks (measured
        in this comparison's unit: the text view's blocks when compared by text)."""
        role, author = self.role(position)
        return {"node_id": wire_id(self.nodes[position]), "role": role, "author": author,
                "start": self.starts[position], "end": self.starts[position + 1], "shared": shared,
                "blocks": self.view.node_blocks(self.path, position)}

    def summary(self) -> dict:
        path = self.path
        return {
            "trajectory": self.view.header,
            "path": self.index,
            "path_count": len(self.rollout.paths),
            "leaf_node_id": wire_id(path.info.leaf),
            "trains": path.info.trains,
            "stop_reason": path.stop_reason,
            "size": self.starts[-1],
            "text_only": self.rollout.text_only,
        }


def why_text(view: RecordView, index: int, side: str) -> str | None:
    """Why this side cannot be compared by token ids, or None when it can."""
    shown = view.shown(True)
    if not 0 <= index < len(shown.paths):
        raise IndexError(f"{side}: the trajectory has {len(shown.paths)} path(s)")
    if view.rollout.mode == "text":
        return f"{side}: text mode"
    if shown.text_only is not None:
        return f"{side}: {shown.text_only}"
    if view.tokens[0] is None or not shown.paths[index].token_blocked:
        return f"{side}: no tokens on path {index}"
    return None


def sides(view_a: RecordView, path_a: int, view_b: RecordView, path_b: int) -> tuple[Side, Side, str | None]:
    """The two sides, by tokens when both can be; raises IndexError for a path there is not."""
    reasons = [why for why in (why_text(view_a, path_a, "a"), why_text(view_b, path_b, "b")) if why]
    by_tokens = not reasons
    return Side(view_a, path_a, by_tokens), Side(view_b, path_b, by_tokens), "; ".join(reasons) or None


@dataclass(frozen=True)
class Prefix:
    """Where two sides part: each side's node position and offset in it (position == node count:
    that side ended there), and the shared units in all."""

    a_node: int
    a_offset: int
    b_node: int
    b_offset: int
    units: int

    def ended(self, a: Side, b: Side) -> tuple[bool, bool]:
        return self.a_node >= len(a.nodes), self.b_node >= len(b.nodes)


def first_mismatch(x, y) -> int:
    """The first index where two equally long sequences differ (their length when none does)."""
    low, high = 0, len(x)  # halving on slice equality: each test is one C-level comparison
    while low < high:
        middle = (low + high) // 2
        if x[low:middle + 1] == y[low:middle + 1]:
            low = middle + 1
        else:
            high = middle
    return low


def common_prefix(a: Side, b: Side) -> Prefix:
    """Token mode: the longest run of equal ids from the start, across node boundaries. Text
    mode: equal messages (role, author, text), then the common start of the first differing one."""
    units_a, units_b = a.units, b.units
    i = j = oa = ob = total = 0
    if not a.by_tokens:
        while i < len(units_a) and i < len(units_b):
            if a.role(i) != b.role(i):
                break
            x, y = units_a[i], units_b[i]
            if x != y:
                shorter = min(len(x), len(y))
                oa = ob = first_mismatch(x[:shorter], y[:shorter])
                total += oa
                break
            total += len(x)
            i += 1
        return Prefix(i, oa, i, ob, total)
    while i < len(units_a) and j < len(units_b):
        x, y = units_a[i], units_b[j]
        step = min(len(x) - oa, len(y) - ob)
        if step:
            piece_a, piece_b = x[oa:oa + step], y[ob:ob + step]
            if piece_a != piece_b:
                same = first_mismatch(piece_a, piece_b)
                return Prefix(i, oa + same, j, ob + same, total + same)
            oa, ob, total = oa + step, ob + step, total + step
        if oa == len(x):
            i, oa = i + 1, 0
        if ob == len(y):
            j, ob = j + 1, 0
    while i < len(units_a) and not len(units_a[i]):  # empty nodes at the end are inside the prefix
        i += 1
    while j < len(units_b) and not len(units_b[j]):
        j += 1
    return Prefix(i, oa, j, ob, total)


def prefix_chars(a: Side, prefix: Prefix) -> int:
    """The UTF-16 length of the text the common prefix spells, counted on side a."""
    whole = sum(a.chars(p) for p in range(min(prefix.a_node, len(a.nodes))))
    return whole + (a.chars(prefix.a_node, prefix.a_offset) if prefix.a_node < len(a.nodes) else 0)


def pair_turns(a: Side, b: Side, prefix: Prefix) -> list[tuple[int | None, int | None]]:
    """The node positions after the divergence paired by role: the two divergence nodes together,
    then a reply with a reply and a tool result with a tool result, looking a few turns ahead for
    a partner before pairing two turns of different roles."""
    roles_a = [a.role(p) for p in range(prefix.a_node, len(a.nodes))]
    roles_b = [b.role(p) for p in range(prefix.b_node, len(b.nodes))]
    pairs, i, j = [], 0, 0
    if roles_a and roles_b:
        pairs.append((0, 0))
        i = j = 1
    while i < len(roles_a) and j < len(roles_b):
        if roles_a[i] == roles_b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
            continue
        ahead_a = next((k for k in range(1, LOOKAHEAD) if i + k < len(roles_a) and roles_a[i + k] == roles_b[j]), None)
        ahead_b = next((k for k in range(1, LOOKAHEAD) if j + k < len(roles_b) and roles_b[j + k] == roles_a[i]), None)
        if ahead_a is not None and (ahead_b is None or ahead_a <= ahead_b):
            pairs.extend((i + k, None) for k in range(ahead_a))
            i += ahead_a
        elif ahead_b is not None:
            pairs.extend((None, j + k) for k in range(ahead_b))
            j += ahead_b
        else:
            pairs.append((i, j))
            i, j = i + 1, j + 1
    pairs.extend((k, None) for k in range(i, len(roles_a)))
    pairs.extend((None, k) for k in range(j, len(roles_b)))
    return [(None if x is None else x + prefix.a_node, None if y is None else y + prefix.b_node) for x, y in pairs]


def differences(x, y, skip_a: int = 0, skip_b: int = 0, starts_x=None, starts_y=None) -> list[list[int]]:
    """`[a_start, a_end, b_start, b_end]` ranges (offsets in each node) where units `x` and `y`
    differ after the first `skip_a` / `skip_b` (shared ones). Word by word when each side says which of
    its units start a word (`starts_x`, `starts_y`: two unrelated replies read as their words, not as
    letters one by one), else unit by unit, when the differing middles are short enough; else the middle
    between the common start and end is one range."""
    x, y = x[skip_a:], y[skip_b:]
    shorter = min(len(x), len(y))
    head = first_mismatch(x[:shorter], y[:shorter])
    tail = 0
    while tail < shorter - head and x[len(x) - 1 - tail] == y[len(y) - 1 - tail]:
        tail += 1
    by_words = starts_x is not None and starts_y is not None
    if by_words:  # the middle starts and ends where a word does on both sides
        bound_x = [True, *starts_x[skip_a + 1:], True]  # by offset from skip: a word starts there (or the end)
        bound_y = [True, *starts_y[skip_b + 1:], True]
        while head and not (bound_x[head] and bound_y[head]):
            head -= 1
        while tail and not (bound_x[len(x) - tail] and bound_y[len(y) - tail]):
            tail -= 1
    mid_x, mid_y = x[head:len(x) - tail], y[head:len(y) - tail]
    if not mid_x and not mid_y:
        return []
    a, b = skip_a + head, skip_b + head
    if not mid_x or not mid_y or len(mid_x) * len(mid_y) > DIFF_CELLS:
        return [[a, a + len(mid_x), b, b + len(mid_y)]]
    if not by_words:
        matcher = SequenceMatcher(None, mid_x.tolist(), mid_y.tolist(), autojunk=False)
        return [[a + a0, a + a1, b + b0, b + b1] for tag, a0, a1, b0, b1 in matcher.get_opcodes() if tag != "equal"]
    cuts_x = [0, *(i for i in range(1, len(mid_x)) if bound_x[head + i]), len(mid_x)]
    cuts_y = [0, *(i for i in range(1, len(mid_y)) if bound_y[head + i]), len(mid_y)]
    words_x = [tuple(mid_x[s:e]) for s, e in zip(cuts_x, cuts_x[1:], strict=False)]
    words_y = [tuple(mid_y[s:e]) for s, e in zip(cuts_y, cuts_y[1:], strict=False)]
    matcher = SequenceMatcher(None, words_x, words_y, autojunk=False)
    return [[a + cuts_x[a0], a + cuts_x[a1], b + cuts_y[b0], b + cuts_y[b1]]
            for tag, a0, a1, b0, b1 in matcher.get_opcodes() if tag != "equal"]


def pair_item(a: Side, b: Side, prefix: Prefix, pair: tuple) -> tuple:
    """One row of `turns`, encoded, with its nodes' ids and encoded texts (they go into `nodes`)."""
    x, y = pair
    shared_a = prefix.a_offset if x == prefix.a_node else 0
    shared_b = prefix.b_offset if y == prefix.b_node else 0
    turn_a = a.turn(x, shared_a) if x is not None else None
    turn_b = b.turn(y, shared_b) if y is not None else None
    if x is None or y is None:
        diff, same = [], False
    else:
        units_x, units_y = a.units[x], b.units[y]
        diff = differences(units_x, units_y, shared_a, shared_b, a.word_starts(x), b.word_starts(y))
        same = a.role(x) == b.role(y) and units_x == units_y
    row = encode_json({"a": turn_a, "b": turn_b, "same": same, "diff": diff})
    texts = (encode_json(a.text(x)) if x is not None else None, encode_json(b.text(y)) if y is not None else None)
    return row, (turn_a and turn_a["node_id"], turn_b and turn_b["node_id"]), texts


def item_size(item: tuple) -> int:
    row, _, texts = item
    return len(row) + sum(len(text) for text in texts if text is not None)


def nodes_json(items: list) -> RawJson:
    """`{"a": {node_id: text}, "b": {...}}` from the items' encoded texts."""
    sides = []
    for side in (0, 1):
        members = [encode_json(ids[side]) + b":" + texts[side] for _, ids, texts in items if texts[side] is not None]
        sides.append(b"{" + b",".join(members) + b"}")
    return RawJson(b'{"a":' + sides[0] + b',"b":' + sides[1] + b"}")


class Comparison:
    """Two sides compared once: the prefix and the pairs, then the answer in parts."""

    def __init__(self, view_a: RecordView, path_a: int, view_b: RecordView, path_b: int, itself: bool = False):
        """`itself`: both sides are one path of one record in one run (said in the answer)."""
        self.a, self.b, self.why_text = sides(view_a, path_a, view_b, path_b)
        self.itself = itself
        self.prefix = common_prefix(self.a, self.b)

    @cached_property
    def pairs(self) -> list[tuple]:
        return pair_turns(self.a, self.b, self.prefix)

    @property
    def identical(self) -> bool:
        return all(self.prefix.ended(self.a, self.b))

    def where(self, side: Side, node: int, offset: int) -> dict:
        ended = node >= len(side.nodes)
        return {"node_id": None if ended else wire_id(side.nodes[node]),
                "offset": None if ended else offset, "position": self.prefix.units}

    def facts(self) -> dict:
        """What the line-up needs: the shared units and where each side parts (no texts, no turns)."""
        prefix = self.prefix
        return {
            "common_prefix_tokens": prefix.units if self.a.by_tokens else None,
            "common_prefix_chars": prefix_chars(self.a, prefix),
            "diverge": None if self.identical else {
                "a": self.where(self.a, prefix.a_node, prefix.a_offset),
                "b": self.where(self.b, prefix.b_node, prefix.b_offset),
            },
            "identical": self.identical,
        }

    def encoded_part(self, start: int = 0, limit: PartLimit = SERVED_PARTS) -> RawJson:
        """A part of the `/v1/compare` answer, encoded: the turns from `start`; the first part also
        the sides and the prefix. Each turn is encoded once, when it is measured. Raises ValueError
        for a start there is not."""
        total = len(self.pairs)
        check_start(start, total)
        items, end, _ = window(lambda k: pair_item(self.a, self.b, self.prefix, self.pairs[k]), start, total, limit,
                               size_of=item_size)
        answer = {"turns": RawJson(b"[" + b",".join(row for row, _, _ in items) + b"]"), "nodes": nodes_json(items),
                  "part": part_of(start, end, total)}
        if start:
            return RawJson(encode_json(answer))
        prefix = self.prefix
        return RawJson(encode_json({
            "unit": "tokens" if self.a.by_tokens else "chars",
            "why_text": self.why_text,
            "itself": self.itself,
            "a": RawJson(encode_json(self.a.summary())),
            "b": RawJson(encode_json(self.b.summary())),
            **self.facts(),
            "shared_nodes": {"a": min(prefix.a_node, len(self.a.nodes)), "b": min(prefix.b_node, len(self.b.nodes))},
            **answer,
        }))

    def part(self, start: int = 0, limit: PartLimit = SERVED_PARTS) -> dict:
        """`encoded_part` as a dict (the terminal's `diff`)."""
        return json.loads(self.encoded_part(start, limit))
