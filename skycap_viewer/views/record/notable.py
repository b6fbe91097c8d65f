"""Tokens worth reading on one path: the `/notable` answer.

A reader of a long rollout wants the few places where something odd happened, found from the
record's own arrays: the least likely tokens the model sampled, sampled tokens in the loss whose
logprob is NaN, special-looking tokens sampled mid-reply, and the last tokens of a call cut at its
length limit. Each kind is capped (`LIMITS`) and counted in full (`counts`), so the answer stays
small however big the rollout and says how much it left out. Nothing is averaged: every logprob
is the one recorded, every rank is named as derived.
"""

import heapq
import re

from skycap_viewer.record.blocks import message_text
from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.rollout import PathView
from skycap_viewer.record.sidecars import TokenData
from skycap_viewer.views.record.trajectory import RecordView

SAMPLED_KINDS = ("sampled", "sampled-elsewhere", "sampled-untrained")  # what the model sampled here
# Items kept per kind; for `length-cut`, the last tokens kept of each cut call, of at most `CUT_CALLS` calls.
LIMITS = {"length-cut": 5, "missing-logprob": 50, "special-token": 50, "lowest-logprob": 20}
CUT_CALLS = 20
KINDS = tuple(LIMITS)  # the answer's order: cut calls, unknown logprobs, special tokens, then the lowest
TEXT_TAIL = 80  # UTF-16 units of a cut message shown when the record has no tokens to point at

# The record carries no tokenizer, so "special" is a rule on the token's text: the whole piece
# (spaces aside) is `<|...|>`, or one tag such as `<tool_call>` or `</think>`.
SPECIAL = re.compile(r"\s*(<\|[^|<>]{0,64}\|>|</?[A-Za-z_][\w.:-]{0,63}>)\s*")
SPECIAL_RULE = ("a sampled token whose whole text (spaces aside) is <|...|> or one tag like <tool_call> or "
                "</think>, anywhere but its reply's last token")


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class Finder:
    """Walks one token-blocked path's sampled tokens once and keeps, per kind, what `LIMITS` allows."""

    def __init__(self, nodes: list, tokens: TokenData):
        self.nodes = nodes
        self.tokens = tokens
        self.counts = dict.fromkeys(KINDS, 0)
        self.found = {kind: [] for kind in KINDS}
        self.lowest = []  # a max-heap (negated logprobs) of the lowest so far
        self.with_logprob = 0

    def item(self, kind: str, node_id: int, index: int, position: int, piece, logprob, block_kind, why) -> dict:
        return {"kind": kind, "node_id": wire_id(node_id), "token_index": index, "position": position,
                "text": piece, "logprob": logprob, "block_kind": block_kind, "why": why}

    def keep(self, kind: str, *fields):
        self.counts[kind] += 1
        if len(self.found[kind]) < LIMITS[kind]:
            self.found[kind].append(self.item(kind, *fields))

    def node(self, node_id: int, node_first: int, blocks: list):
        """One node's sampled blocks on the path; `node_first` is the path position of its first token."""
        node = self.nodes[node_id]
        slices = node["tokens"]
        logprobs = self.tokens.logprobs_of(slices)
        pieces = self.tokens.pieces(slices)
        last = slices["length"] - 1
        for block in blocks:
            from_, to = block.start - node_first, block.end - node_first
            for i in range(from_, to):
                piece = pieces[i] if pieces is not None else None
                logprob, position = logprobs[i], node_first + i
                if logprob is None:
                    if block.kind == "sampled":
                        self.keep("missing-logprob", node_id, i, position, piece, None, block.kind,
                                  "sampled and in this path's loss, but its logprob is NaN in the record")
                else:
                    self.with_logprob += 1
                    entry = (-logprob, -position, node_id, i, piece, block.kind)
                    if len(self.lowest) < LIMITS["lowest-logprob"]:
                        heapq.heappush(self.lowest, entry)
                    elif entry > self.lowest[0]:
                        heapq.heapreplace(self.lowest, entry)
                if piece is not None and i < last and SPECIAL.fullmatch(piece):
                    self.keep("special-token", node_id, i, position, piece, logprob, block.kind,
                              "special-looking text sampled before the reply's end (the stated text rule)")
        if any(call.get("finish_reason") == "length" for call in node.get("calls") or []):
            cut = blocks[-1]
            tail = range(max(cut.start, cut.end - LIMITS["length-cut"]), cut.end)
            self.counts["length-cut"] += 1
            if self.counts["length-cut"] > CUT_CALLS:
                return
            for position in tail:
                i = position - node_first
                piece = pieces[i] if pieces is not None else None
                self.found["length-cut"].append(self.item(
                    "length-cut", node_id, i, position, piece, logprobs[i], cut.kind,
                    f"token {position - cut.end + len(tail) + 1} of the last {len(tail)} before the call "
                    "stopped at its length limit (finish_reason length)"))

    def ranked_lowest(self) -> list[dict]:
        ordered = sorted(self.lowest, reverse=True)  # lowest logprob first, earlier position on ties
        return [self.item("lowest-logprob", node_id, i, -neg_position, piece, -neg, kind,
                          f"the {ordinal(rank)} lowest logprob of the {self.with_logprob} sampled tokens "
                          "with one on this path (a rank, derived)")
                for rank, (neg, neg_position, node_id, i, piece, kind) in enumerate(ordered, 1)]


def notable_tokens(path: PathView, nodes: list, tokens: TokenData | None, text_only: str | None) -> dict:
    """The `/notable` answer for one path: its notable items (capped per kind), the full counts
    (`length-cut` counts cut calls, `lowest-logprob` the sampled tokens with a logprob),
    the caps, the special-token rule, and `notes` saying what could not be looked at and why."""
    notes = []
    if path.token_blocked and tokens is not None:
        finder = Finder(nodes, tokens)
        by_node, firsts = {}, {}
        for block in path.blocks:
            firsts.setdefault(block.node, block.start)
            if block.kind in SAMPLED_KINDS:
                by_node.setdefault(block.node, []).append(block)
        for node_id, blocks in by_node.items():
            finder.node(node_id, firsts[node_id], blocks)
        found, counts = finder.found, finder.counts
        found["lowest-logprob"] = finder.ranked_lowest()
        counts["lowest-logprob"] = finder.with_logprob
        if not finder.with_logprob:
            notes.append("No sampled token on this path has a logprob recorded: nothing to rank.")
    else:
        why = text_only or ("the record has no tokens" if tokens is None else "this path is not token-blocked")
        notes.append(f"Text only ({why}): no token ids or logprobs to look at, so only calls cut at their "
                     "length limit are listed, with the end of their message text.")
        found, counts = {kind: [] for kind in KINDS}, dict.fromkeys(KINDS, 0)
        for node_id in path.info.nodes:
            node = nodes[node_id]
            if any(call.get("finish_reason") == "length" for call in node.get("calls") or []):
                counts["length-cut"] += 1
                if counts["length-cut"] > CUT_CALLS:
                    continue
                text = message_text(node.get("message"))
                found["length-cut"].append({
                    "kind": "length-cut", "node_id": wire_id(node_id), "token_index": None, "position": None,
                    "text": text[-TEXT_TAIL:], "logprob": None, "block_kind": None,
                    "why": "the call stopped at its length limit (finish_reason length); the end of its text"})
    return {
        "path": path.info.index,
        "unit": path.unit,
        "items": [item for kind in KINDS for item in found[kind]],
        "counts": counts,
        "limits": {**LIMITS, "cut_calls": CUT_CALLS},
        "special_rule": SPECIAL_RULE,
        "notes": notes,
    }


def notable_answer(view: RecordView, path: int) -> dict:
    """The `/notable` answer for path `path` (`views.record.notable`), from the rollout and tokens this
    view already holds; text only when the tokens sidecar cannot be read. Raises IndexError
    for a path there is not."""
    tokens, error = view.tokens
    shown = view.shown(True)
    if not 0 <= path < len(shown.paths):
        raise IndexError(f"the trajectory has {len(shown.paths)} path(s)")
    if path not in view.notables:
        why = shown.text_only or error
        view.notables[path] = notable_tokens(shown.paths[path], view.rollout.nodes, tokens, why)
    return view.notables[path]
