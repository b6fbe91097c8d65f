"""One record's state and its paths, shared by the HTTP server and `skycap-viewer show --json`.

One builder per API shape, so the terminal and the page can never disagree about what a
rollout's paths are; the page draws what these say and derives none of it again. Node ids go
on the wire as `"n<id>"` (`fields.wire_id`).
"""

import json
import sys
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate

from skycap_viewer.errors import RecordError
from skycap_viewer.record.blocks import Block, message_text, utf16_length
from skycap_viewer.record.fields import cut_marker, is_finite_number, wire_id
from skycap_viewer.record.forks import Fork
from skycap_viewer.record.header import trajectory_header
from skycap_viewer.record.lane import time_order
from skycap_viewer.record.media import media_count, node_media
from skycap_viewer.record.opener import OpenedRecord
from skycap_viewer.record.rollout import ABSENT, PathView, Rollout
from skycap_viewer.record.sidecars import TokenData, read_tokens
from skycap_viewer.record.support import NodeSupport, read_mask, support_by_node
from skycap_viewer.record.verify import verified_rollout
from skycap_viewer.views.record.timeline import Layout, lay_out
from skycap_viewer.wire import RawJson, encode_json

BLOCKING = "mask+turns"  # token-blocked paths are cut on the loss mask and on node boundaries


MEDIA_IN_NODE = 1000  # media items a node's payload carries (~110 KB); the rest come in parts of their own


def node_payload(node: dict, tokens: TokenData | None, support: NodeSupport | None = None) -> dict:
    """One node's text, and its token ids/logprobs/offsets when the tokens sidecar is read, with what
    its sampling mask says of its sampled tokens (`support`; null when it records none); its first
    `MEDIA_IN_NODE` media items (`record.media.node_media`), and how many it records when that is more,
    either way, from the document: a node of 100k images would make an 11 MB part
    (`views.record.node.media_part` has them all)."""
    slices = node.get("tokens")
    entry = {
        "node_id": wire_id(node["id"]),
        "role": node.get("role"),
        "author": node["author"],
        "sampled_start": slices.get("sampled_start") if slices else None,
        "has_logprobs": bool(slices.get("has_logprobs")) if slices else None,
        "text": None,
        "token_ids": None,
        "logprobs": None,
        "token_offsets": None,
        "media": node_media(node, 0, MEDIA_IN_NODE),
        "support_sizes": None,
        "outside_support": None,
    }
    count = media_count(node)
    if count > MEDIA_IN_NODE:  # only then: a 20k-node snapshot would carry 0.3 MB of zeros
        entry["media_count"] = count
    if tokens is None or slices is None:
        entry["text"] = message_text(node.get("message"))
        return entry
    entry["token_ids"] = tokens.ids(slices)
    entry["logprobs"] = tokens.logprobs_of(slices)
    if support is not None:
        entry["support_sizes"], entry["outside_support"] = support.sizes, support.outside
    raw = tokens.text_bytes(slices)
    if raw is not None:
        starts = tokens.text_offsets[slices["offset"] : slices["offset"] + slices["length"]].tolist()
        entry["text"], entry["token_offsets"] = tokens.shown_text(slices), token_offsets(raw, starts)
    return entry


UTF16_UNITS = bytes(0 if 0x80 <= b < 0xC0 else 2 if b >= 0xF0 else 1 for b in range(256))  # per UTF-8 byte


def token_offsets(raw: bytes, starts: list[int]) -> list[int]:
    """Each token's UTF-16 offset into the node's shown text (`TokenData.shown_text`, from its first
    token's start), plus the end.

    `read_tokens` has checked that every start is a character boundary; for ASCII text (most of it)
    UTF-16 offsets are the byte offsets, and `starts` itself (the caller's own list) is returned as
    them when the text begins at its first."""
    first = starts[0] if starts else len(raw)
    if raw.isascii():
        if not first:  # the node's text starts at its first token (nearly always): the starts as they are
            starts.append(len(raw))
            return starts
        return [start - first for start in starts] + [len(raw) - first]
    units = [0, *accumulate(raw.translate(UTF16_UNITS))]  # UTF-16 units before each byte offset
    return [units[start] - units[first] for start in starts] + [units[len(raw)] - units[first]]


def block_payload(block: Block, node_start: int, token_blocked: bool) -> dict:
    entry = {
        "kind": block.kind,
        "role": block.role,
        "author": block.author,
        "node_id": wire_id(block.node),
        "trainable": block.trainable,
        "start": block.start,
        "end": block.end,
        "token_count" if token_blocked else "char_count": block.size,
        "node_start": node_start,
        "node_end": node_start + block.size,
    }
    if block.kind == "sampled-elsewhere":
        entry["trained_in"] = block.trained_in
    return entry


def samples_said(path: PathView, carried: list) -> list[dict] | None:
    """The samples a path carries, said when they are not the usual one sample through its leaf (a custom
    rule's row ending before it, or several rows on one path: the trainer got one sample each); else None."""
    if len(carried) == 1 and carried[0].leaf == path.info.leaf or not carried:
        return None
    return [{"row": sample.number, "leaf_node_id": wire_id(sample.leaf),
             "targets": [wire_id(t) for t in sample.targets], "size": sample.size, "trainable": sample.trainable}
            for sample in carried]


def path_summary(record_id: str, path: PathView, carried: list = ()) -> dict:
    """One path's facts without its per-node lists (those come in parts: `RecordView.path_lists`);
    `carried`, the rollout's samples on it (`samples`: see `samples_said`)."""
    info = path.info
    return {
        "path_id": f"{record_id}-p{info.index:04d}",
        "index": info.index,
        "leaf_node_id": wire_id(info.leaf),
        "fork_from": wire_id(info.fork_from),
        "diverges_at": wire_id(info.diverges_at),
        "shared_nodes": info.shared_nodes,
        "node_count": len(info.nodes),
        "abandoned": False,
        "masked_reason": None,
        "stop_reason": path.stop_reason,
        "trains": info.trains,
        "unit": path.unit,
        "token_count": path.token_count,
        "char_count": path.char_count,
        "trainable_count": path.trainable_count,
        "blocking": BLOCKING if path.token_blocked else None,
        "logprob_count": path.logprob_count,
        "samples": samples_said(path, list(carried)),
    }


def path_lists(items: list[tuple]) -> dict:
    """A window of a path's per-node lists from its items (`RecordView.path_item`), in path order:
    parts' lists concatenated are the whole path's."""
    return {
        "node_ids": [item[0] for item in items],
        "targets": [item[0] for item in items if item[3]],
        "messages": [item[1] for item in items],
        "blocks": [block for item in items for block in item[2]],
    }


def path_item_size(item: tuple) -> int:
    """What a `RecordView.path_item` adds to a part: its list entries, and its text as encoded."""
    return encoded_size(item[:4]) + len(item[4] or b"")


def nodes_json(texts: dict[str, bytes]) -> RawJson:
    """`{node_id: text}` from the nodes' encoded texts."""
    return RawJson(b"{" + b",".join(encode_json(key) + b":" + text for key, text in texts.items()) + b"}")


def paths_payload(directory, document: dict, present_names, file_id: str | None, text: bool = True,
                  verified: bool = False, **context) -> dict:
    """The whole `/v1/trajectories/{id}/paths` answer for one record, in one part (`show --json`).

    `present_names` is the set of file names in `directory` (tells a mirror's absent sidecar
    from a present one). With `text=False` no sidecar is opened: blocks carry kinds and
    ranges only, taken from the document. With text, a damaged tokens sidecar does not hide
    the record: it is shown from message text, `text_only: "tokens-unreadable"`, with the
    error in `tokens_error`. `context` (run_id, project, ...) is merged into the header; `verified`, every
    sidecar is read first and what it finds is in the header's flags and problems (as `check` finds it).
    """
    return RecordView(directory, document, present_names, file_id, context, verified).paths_part(text, limit=WHOLE)

VERDICTS = ("flags", "record_problems", "size")  # what the sidecars can change, once read (`verified_rollout`)
DOCUMENT_FACTS = ("id", "status", "ended", "finished_at", "capture", "sidecars", "retries", "skycap")


def with_verdicts(header: dict, row: dict) -> dict:
    """The record's own `header` (from the document the answer is read from) with its index row's flags,
    problems and sizes, which hold the sidecars' verdicts once the background verification has read them
    (`forced-run`, a damaged sidecar's `malformed-record` and sizes in characters), as the listing and
    `show --json` say them; its own when the row describes another version of the record (a rewrite landed
    since it was listed)."""
    if any(row.get(key) != header.get(key) for key in DOCUMENT_FACTS):
        return header
    return {**header, **{key: row[key] for key in VERDICTS if key in row}}


# -- the record's graph, its calls, and two paths compared (server routes) -------------------


def node_chars(node: dict) -> int:
    """A node's message text length in UTF-16 units (what the page's strings count)."""
    return utf16_length(message_text(node.get("message")))


def train_once(rollout: Rollout) -> dict:
    """Does any model node sit in the loss of more than one path? And which train on none?

    Under the `all` rule every model node trains exactly once; a record's own samples may leave
    some out on purpose (`final` trains one path), so those are listed, not counted as a breach."""
    trained: dict[int, int] = {}  # node -> the first path that trains it (a list a node: 88 B more each)
    again: dict[int, list[int]] = {}  # node -> every path that trains it, when more than one does
    for path in rollout.graph.paths:
        for node_id in path.targets:
            first = trained.setdefault(node_id, path.index)
            if first != path.index:
                again.setdefault(node_id, [first]).append(path.index)
    model_nodes = [n["id"] for n in rollout.nodes if n["author"] == "model"]
    violations = [{"node_id": wire_id(n), "paths": again[n]} for n in model_nodes if n in again]
    return {
        "holds": not violations,
        "violations": violations,
        "untrained": [wire_id(n) for n in model_nodes if n not in trained],
        "model_nodes": len(model_nodes),
        "paths": len(rollout.graph.paths),
        "rule": rollout.graph.rule or "all",
        "rule_recorded": rollout.graph.samples_recorded,
    }


def without_message(node: dict) -> dict:
    """A graph node too big for a part, its message replaced by a placeholder: that it was cut, its
    size and type (`cut_marker`); `views.record.node.node_message` gives it whole."""
    return {**node, "message": cut_marker(node["message"], encoded_size(node["message"]))}


def fork_payload(fork: Fork) -> dict:
    """One fork as the wire has it: node ids as `"n<id>"`, `parent_id` null for a new root."""
    return {"node_id": wire_id(fork.node_id), "parent_id": wire_id(fork.parent_id),
            "sibling_id": wire_id(fork.sibling_id), "kind": fork.kind, "detail": fork.detail}


def _is_time(value) -> bool:
    return is_finite_number(value)


def call_duration_ms(call: dict):
    """How long a call took, from its `t_start` and `t_end`, or None when either is not a time."""
    start, end = call.get("t_start"), call.get("t_end")
    return round((end - start) * 1000, 3) if _is_time(start) and _is_time(end) else None


# -- answers in parts ---------------------------------------------------------------------------

PART_BYTES = 4 * 2**20  # a part's items, encoded: a 66k-token rollout's /paths (~3 MB) still comes whole
PART_ITEMS = 5000  # items in a part at most: the page draws a few thousand rows per scroll step, not a million


@dataclass(frozen=True)
class PartLimit:
    """How much one part holds: at most `items` items, and no further item once their encoded size
    passes `bytes` (None: not measured). A part holds at least one item, however big, so it moves on;
    an item bigger than `item_bytes` is sent as its placeholder, where its kind has one (`window`)."""

    items: int = PART_ITEMS
    bytes: int | None = PART_BYTES
    item_bytes: int | None = PART_BYTES

    def within(self, size: int) -> "PartLimit":
        """This limit with at most `size` bytes a part."""
        return PartLimit(self.items, size if self.bytes is None else min(self.bytes, size), self.item_bytes)

    def less(self, items: int, size: int) -> "PartLimit":
        """What is left of this limit after `items` items of `size` bytes (a first part's later paths)."""
        return PartLimit(self.items - items, None if self.bytes is None else self.bytes - size, self.item_bytes)


SERVED_PARTS = PartLimit()  # what the server sends per part
WHOLE = PartLimit(items=sys.maxsize, bytes=None, item_bytes=None)  # one part, nothing measured: the whole answer


def encoded_size(item) -> int:
    return len(encode_json(item))


def window(make, start: int, total: int, limit: PartLimit, least: int = 1,
           size_of=encoded_size, placeholder=None) -> tuple[list, int, int]:
    """(items `make(i)` for i from `start`, the position after the last, their encoded size): as many
    as one part under `limit` holds. Each item is made and measured once, so a part costs what its
    items cost, wherever in the record it starts. `size_of` measures an item (one made encoded
    is measured by its length, not encoded again); an item past `limit.item_bytes` is replaced by
    `placeholder(item)`, when given (a graph node of an 11 MB image: its message left for its route)."""
    items, size, end = [], 0, start
    while end < total and len(items) < limit.items:
        item = make(end)
        if limit.bytes is not None:
            item_size = size_of(item)
            if placeholder is not None and limit.item_bytes is not None and item_size > limit.item_bytes:
                item = placeholder(item)
                item_size = size_of(item)
            grown = size + item_size
            if grown > limit.bytes and len(items) >= least:
                break
            size = grown
        items.append(item)
        end += 1
    return items, end, size


def part_of(start: int, end: int, total: int) -> dict:
    """The window a part covers, of `total` items; `next` (where the next part starts) while some are left."""
    part = {"from": start, "to": end, "total": total}
    if end < total:
        part["next"] = end
    return part


def check_start(start: int, total: int):
    """A part starts at an item there is (or at 0 of none); raises ValueError (the API's 400) else."""
    if not 0 <= start < max(total, 1):
        raise ValueError(f"from must be a position in 0..{max(total - 1, 0)}, not {start}")


class RecordView:
    """One record's state, derived once, that its answers are read from; and its `/paths` answer.

    Built from the record's files as read (directory, document, present sidecar names, the id it is
    looked up by, the run fields of its header); the `Rollout`, the tokens sidecar, the sampling mask's
    support, the per-path block bounds and the calls' time order are built lazily, the first time an
    answer needs them, so every later part costs what its own items cost. Each other answer is a module
    taking the view (`views.record`'s `graph`, `calls`, `forks`, `node`, `notable`, `retokenized`, `chat`,
    `row`); they are plain dicts and depend on nothing but these
    inputs: the server keeps a few views by the record's files' versions, and could ask one in another process.
    """

    def __init__(self, directory, document: dict, present_names, file_id: str | None, context: dict,
                 verified: bool = False):
        self.directory = directory
        self.verified = verified  # its rollout read with its sidecars: their verdicts in its header (`show`)
        self.document = document
        self.present = set(present_names)
        self.record_id = file_id or document["id"]  # the id the record is looked up by
        self.file_id = file_id
        self.context = dict(context)
        self.laid: dict[int, tuple] = {}  # id(PathView) -> its `layout`, for as long as its rollout lives
        self.notables: dict[int, dict] = {}  # path index -> its `/notable` answer, made once
        self.texts: dict[str, Rollout] = {}  # why -> the rollout measured in text (`as_text`)

    @classmethod
    def of(cls, opened: OpenedRecord, context: dict, verified: bool = False) -> "RecordView":
        """The view of a record opened by `record.opener.open_record`."""
        return cls(opened.directory, opened.document, opened.present, opened.record_id, context, verified)

    @cached_property
    def rollout(self) -> Rollout:
        if self.verified:
            return verified_rollout(self.directory, self.document, self.present, self.file_id)
        return Rollout(self.document, self.present, self.file_id)

    @cached_property
    def header(self) -> dict:
        return trajectory_header(self.rollout, **self.context)  # the record's own flags, as the index has them

    @cached_property
    def tokens(self) -> tuple[TokenData | None, str | None]:
        """(the tokens sidecar, the error that kept it from being read); (None, None) when not to be read."""
        if self.rollout.text_only not in (None, "tokens-unreadable"):  # read again when found damaged: its error
            return None, None
        if "tokens" in self.rollout.sidecars_read:  # verified: read once, by the verification
            return self.rollout.sidecars_read["tokens"], None
        try:
            return read_tokens(self.directory, self.document), None
        except RecordError as error:
            return None, str(error)

    @property
    def tokens_refused(self) -> bool:
        """Whether the tokens sidecar was read and found damaged (never reads it itself)."""
        return "tokens" in self.__dict__ and self.tokens[1] is not None

    @cached_property
    def support(self) -> tuple[dict[int, NodeSupport], str | None]:
        """(each node's support facts, by node id; the error that kept the sampling mask from being
        read). Read only with the tokens, and only from a document that agrees with itself, as the
        background verification does: the page and the flags say the same."""
        tokens = self.tokens[0]
        if tokens is None or self.rollout.record_problems:
            return {}, None
        try:
            mask = self.rollout.sidecars_read.get("sampling_mask") or read_mask(self.directory, self.document)
        except RecordError as error:
            return {}, str(error)
        return ({} if mask is None else support_by_node(self.document, tokens, mask)), None

    @cached_property
    def unreadable(self) -> Rollout:
        """The rollout shown from message text because its tokens sidecar cannot be read."""
        return self.from_text("tokens-unreadable")

    def as_text(self, why: str) -> Rollout:
        """The rollout measured in message text (a comparison with a text record): the shown one
        when it already is, else one whose `text_only` says `why`, made once."""
        shown = self.shown(True)
        if not any(path.token_blocked for path in shown.paths):
            return shown
        if why not in self.texts:
            self.texts[why] = self.from_text(why)
        return self.texts[why]

    def from_text(self, why: str) -> Rollout:
        shown = Rollout(self.document, self.present, self.file_id)
        shown.text_only = why  # set before its paths are built: message text only
        return shown

    def shown(self, text: bool) -> Rollout:
        return self.unreadable if text and self.tokens[1] is not None else self.rollout

    @cached_property
    def signs(self) -> dict:
        rollout = self.rollout
        return {
            "unbridged": set(rollout.unbridged_nodes),
            "inferred_unbridged": set(rollout.inferred_unbridged_nodes) if rollout.bridged[ABSENT] else set(),
            "retokenized": set(rollout.retokenized_nodes),
        }

    @cached_property
    def train_once(self) -> dict:
        return train_once(self.rollout)

    def layout(self, path: PathView) -> tuple[list[int], frozenset[int]]:
        """(where each of the path's nodes' blocks start in `path.blocks`, and the end; the nodes it
        trains), made once per path: a window of nodes finds its blocks without walking the ones
        before it. Blocks follow the path's nodes."""
        laid = self.laid.get(id(path))
        if laid is None:
            bounds, at, blocks = [], 0, path.blocks
            for node_id in path.info.nodes:
                bounds.append(at)
                while at < len(blocks) and blocks[at].node == node_id:
                    at += 1
            bounds.append(len(blocks))
            laid = self.laid[id(path)] = bounds, path.info.target_set
        return laid

    def node_blocks(self, path: PathView, position: int) -> list[dict]:
        """The `/paths` blocks of the path's node at `position`, offsets counted from the node's first."""
        bounds = self.layout(path)[0]
        blocks = path.blocks[bounds[position]:bounds[position + 1]]
        first = blocks[0].start if blocks else 0
        return [block_payload(block, block.start - first, path.token_blocked) for block in blocks]

    def path_item(self, path: PathView, position: int, targets: set, sent, tokens) -> tuple:
        """(node id, message, blocks, trains, text) of the path's node at `position`; text (the node's
        `node_payload`, encoded: it is most of a part's bytes, so it is encoded once, when measured)
        None when not asked for (`sent` None) or already in `sent`."""
        node_id = path.info.nodes[position]
        node = self.rollout.nodes[node_id]
        key = wire_id(node_id)
        message = {"role": node.get("role"), "author": node["author"], "chars": node_chars(node)}
        text = None
        if sent is not None and key not in sent:
            text = encode_json(node_payload(node, tokens, self.support[0].get(node_id) if tokens is not None else None))
        return key, message, self.node_blocks(path, position), node_id in targets, text

    def path_window(self, path: PathView, start: int, limit: PartLimit, sent, tokens, least: int = 1):
        """(the path's lists from `start`, its part, the nodes' encoded texts, the size) for one part."""
        targets = self.layout(path)[1]
        total = len(path.info.nodes)
        items, end, size = window(lambda p: self.path_item(path, p, targets, sent, tokens), start, total, limit, least,
                                  size_of=path_item_size)
        texts = {item[0]: item[4] for item in items if item[4] is not None}
        return path_lists(items), part_of(start, end, total), texts, size

    def paths_part(self, text: bool = True, path: int | None = None, start: int = 0,
                   limit: PartLimit = SERVED_PARTS) -> dict:
        """`encoded_paths_part` as a dict (`show --json`, the snapshot)."""
        return json.loads(self.encoded_paths_part(text, path, start, limit))

    def encoded_paths_part(self, text: bool = True, path: int | None = None, start: int = 0,
                           limit: PartLimit = SERVED_PARTS, header: dict | None = None) -> RawJson:
        """A part of the `/paths` answer, encoded. Without `path`, the first part: the header and every
        path's summary, then each path's lists (node ids, targets, messages, blocks) from its first
        node, the paths in order, as far as one part holds; with `path`, that path's lists from
        `start`. With text, `nodes` holds the text (and tokens) of the nodes in the part, each encoded
        once (`path_item`). `header`: the record's header as served (its index row), else its own. Raises
        IndexError for a path there is not, ValueError for a start there is not."""
        tokens, error = self.tokens if text else (None, None)
        shown = self.shown(text)
        if path is not None:
            if not 0 <= path < len(shown.paths):
                raise IndexError(f"the trajectory has {len(shown.paths)} path(s)")
            view = shown.paths[path]
            check_start(start, len(view.info.nodes))
            lists, part, texts, _ = self.path_window(view, start, limit, {} if text else None, tokens)
            return RawJson(encode_json({"path": path, **lists, **({"nodes": nodes_json(texts)} if text else {}),
                                        "part": part}))
        payload = {
            "trajectory": self.header if header is None else header,
            "mode": self.rollout.stated_mode,
            "text_only": shown.text_only,
            "tokenizer": (self.document.get("capture") or {}).get("tokenizer"),
        }
        if error is not None:
            payload["tokens_error"] = error
        if text and tokens is not None and self.support[1] is not None:
            payload["mask_error"] = self.support[1]
        nodes = {} if text else None
        summaries, carried = [], shown.samples_by_path
        for view in shown.paths:
            lists, part, texts, size = self.path_window(view, 0, limit, nodes, tokens, least=0 if summaries else 1)
            limit = limit.less(len(lists["node_ids"]), size)
            if text:
                nodes.update(texts)
            summary = path_summary(self.record_id, view, carried.get(view.info.index, ()))
            summaries.append({**summary, **lists, "part": part})
        if text:
            payload["nodes"] = nodes_json(nodes)
        payload["paths"] = summaries
        return RawJson(encode_json(payload))

    @cached_property
    def exchange_order(self) -> list[tuple[int | None, int]]:
        """Every call as (node index, call index) and every failure as (None, failure index), in
        time order: sorted once, so each part makes only its own rows."""
        return time_order(self.document)

    @cached_property
    def timeline(self) -> Layout:
        return lay_out(self.document, self.exchange_order)

    @cached_property
    def node_paths(self) -> dict[int, int]:
        """The path to show a node in: the one that trains it, else the first that holds it."""
        shown: dict[int, int] = {}
        for path in self.rollout.graph.paths:
            for node_id in path.nodes:
                shown.setdefault(node_id, path.index)
        return {**shown, **self.rollout.graph.trained_in}
