"""Write skycap v1 records the way skycap's own writer lays them out: the project's example writer.

The demo run, the benchmark and tests that need records of a given shape use it; the viewer
itself never writes. Token ids and texts follow skycap's test renderer: one token per
character, id = code point + 100, specials `<s>`=1, `</s>`=2, `\\n`=3. A message renders as
`<s>{role}\\n{content}</s>\\n`; a model node starts with the generation prompt
`<s>assistant\\n` (its scaffold, so `sampled_start` is 11) and, when it stops cleanly, ends
with the `</s>` it sampled. The `\\n` after that `</s>` (or the whole `</s>\\n` after a
truncated reply, which the model never sampled) opens the next client node, as in skycap.
So every text offset is exact without a tokenizer.
"""

import hashlib
import json
import os
import random
import re
import sys
from array import array
from itertools import repeat
from pathlib import Path

from skycap_viewer.record import frames
from skycap_viewer.record.graph import Graph
from skycap_viewer.record.manifest import EXPECTED_ARRAYS
from skycap_viewer.record.sidecars import TYPECODES

FORMAT_VERSION = 1
MODEL = "policy"
SPECIALS = {"<s>": 1, "</s>": 2, "\n": 3}
GENERATION_PROMPT = "<s>assistant\n"
TOKEN_CAPTURE = {
    "mode": "tokens", "engine": "vllm", "tokenizer": "fake", "logprobs_mode": "processed_logprobs",
    "sampling_overrides": {}, "use_raw_content": False,
}
RENDERED_FIELDS = ("role", "content", "reasoning_content", "reasoning", "name", "tool_calls", "tool_call_id")
SYNTHETIC = "synthetic"  # `add_model(logprobs=SYNTHETIC)`: made-up but deterministic values

_SPECIAL_SPLIT = re.compile("(<s>|</s>|\n)")
_ASCII_SHIFTED = {code: chr(code + 100) for code in range(128)}
_NATIVE_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"
_counting = array("i")  # 0, 1, 2, ...: sliced for the byte offsets of ASCII runs (C speed)


def _positions(start: int, count: int) -> array:
    end = start + count
    if len(_counting) < end:
        _counting.extend(range(len(_counting), max(end, 2 * len(_counting), 1 << 16)))
    return _counting[start:end]


def tokenize(text: str) -> tuple[array, array]:
    """Token ids of `text` and each token's starting byte within it, by the fake renderer."""
    ids, offsets = array("i"), array("i")
    position = 0
    for part in _SPECIAL_SPLIT.split(text):
        if part in SPECIALS:
            ids.append(SPECIALS[part])
            offsets.append(position)
            position += len(part)
        elif part.isascii():  # the common case, kept out of per-character Python
            ids.frombytes(part.translate(_ASCII_SHIFTED).encode(_NATIVE_UTF32))
            offsets.extend(_positions(position, len(part)))
            position += len(part)
        else:
            for char in part:
                ids.append(ord(char) + 100)
                offsets.append(position)
                position += len(char.encode())
    return ids, offsets


SAMPLED_START = len(tokenize(GENERATION_PROMPT)[0])


def tokenize_pieces(pieces) -> tuple[array, array, str]:
    """Explicit `(token id, text piece)` pairs, e.g. an emoji over two tokens (the first piece empty)."""
    ids, offsets, position = array("i"), array("i"), 0
    for token_id, piece in pieces:
        ids.append(token_id)
        offsets.append(position)
        position += len(piece.encode())
    return ids, offsets, "".join(piece for _, piece in pieces)


def rendered_content(message: dict) -> str:
    """What the fake renderer prints for a message: its content (text parts; this writer records no
    images), then `CALL:name:args` per tool call."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    calls = "".join(
        f"CALL:{call['function']['name']}:{call['function']['arguments']}"
        for call in message.get("tool_calls") or []
    )
    return (content or "") + calls


def render(role: str, message: dict) -> str:
    return f"<s>{role}\n{rendered_content(message)}</s>\n"


def _joined(parts: list[tuple[array, array, str]]) -> tuple[array, array, str]:
    """Token runs of consecutive text, with each run's byte offsets moved past the runs before it."""
    ids, offsets, text, base = array("i"), array("i"), "", 0
    for run_ids, run_offsets, run_text in parts:
        ids.extend(run_ids)
        offsets.extend(array("i", (base + offset for offset in run_offsets)) if base else run_offsets)
        text += run_text
        base += len(run_text.encode())
    return ids, offsets, text


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(value) -> str:
    """skycap's identity hash: BLAKE2b-128 of canonical JSON."""
    return hashlib.blake2b(_canonical(value), digest_size=16).hexdigest()


def _stripped(message: dict) -> dict:
    return {k: v for k, v in message.items() if v not in (None, [], {})}


def _little_endian(values: array) -> bytes:
    if sys.byteorder == "big" and values.itemsize > 1:
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def pack(arrays: list[tuple[str, str, list[int], bytes]]) -> tuple[bytes, dict]:
    """Lay `(name, dtype, shape, little-endian bytes)` arrays out at 8-aligned offsets: payload, manifest."""
    payload, manifest = bytearray(), {}
    for name, dtype, shape, data in arrays:
        payload += bytes(-len(payload) % 8)
        manifest[name] = {"dtype": dtype, "shape": shape, "offset": len(payload)}
        payload += data
    return bytes(payload), manifest


def write_file(directory: Path, name: str, payload: bytes) -> Path:
    """One zstd frame via a temporary `.{name}.tmp`, then renamed in, as skycap does."""
    temporary, final = directory / f".{name}.tmp", directory / name
    temporary.write_bytes(frames.compress(payload))
    os.replace(temporary, final)
    return final


class RecordBuilder:
    """Build one trajectory node by node, then `write(directory)` its files.

    Nodes are added in creation order (a parent before its children). Times come from a running
    clock starting at `created_at`, so a fixed start gives byte-identical records.
    """

    def __init__(self, record_id: str, mode: str = "tokens", *, meta=None, annotations=None,
                 status: str = "finished", ended: bool = True, created_at: float = 1_790_000_000.0,
                 tools: list | None = None, experts: tuple[int, int] | None = None, experts_dtype: str = "uint8",
                 routing=None, sampling_mask: bool = False, support=None):
        """`experts` is `(layers, k)` of a `routed_experts` sidecar in `experts_dtype`; `routing(position,
        layer)` gives a token's k ids (by default every id of a row is its position mod 256). With
        `sampling_mask`, `support(node, row, token id)` gives a sampled token's support (by default
        `[t, t + 1]`, as skycap's mock engine)."""
        if mode not in ("tokens", "text"):
            raise ValueError(f"mode must be 'tokens' or 'text', not {mode!r}")
        if experts_dtype not in EXPECTED_ARRAYS["experts"]["routed_experts"]:
            raise ValueError(f"routed_experts cannot be {experts_dtype!r}")
        self.id, self.mode, self.status, self.ended = record_id, mode, status, ended
        self.meta, self.annotations = dict(meta or {}), dict(annotations or {})
        self.capture = TOKEN_CAPTURE if mode == "tokens" else {"mode": "text"}
        self.created_at = self.clock = created_at
        self.tools_hash = digest(tools) if tools else None
        self.tools = {self.tools_hash: tools} if tools else {}
        self.experts_shape, self.experts_dtype, self.routing = experts, experts_dtype, routing
        self.with_mask, self.support = sampling_mask, support
        self.retries = {"replayed": 0, "coalesced": 0}
        self.nodes: list[dict] = []
        self.failures: list[dict] = []
        self._lead_in: list[str] = []  # per node: the template text the next client node starts with
        self._path_size: list[int] = []  # per node: tokens (or characters) from its root through it
        self._call_count = 0
        self._answered: set[int | None] = set()  # parents that already have a model child
        self._ids, self._logprobs, self._text_offsets = array("i"), array("d"), array("i")
        self._text = bytearray()
        self._experts = array(TYPECODES[experts_dtype])
        self._mask_ids, self._mask_offsets = array("i"), array("q", [0])

    # -- nodes -----------------------------------------------------------------------------

    def add_client(self, parent: int | None, role: str, content=None, *, message: dict | None = None,
                   pieces=None) -> int:
        """A message the harness sent; returns its node id."""
        message = message if message is not None else {"role": role, "content": content}
        lead_in = "" if parent is None else self._lead_in[parent]
        tokens = None
        if self.mode == "tokens":
            tokens = self._add_tokens(f"{lead_in}<s>{role}\n", rendered_content(message), "</s>\n", pieces=pieces,
                                      sampled_start=None, logprobs=None)
        match = self._match_hash(message)
        delta = match if tokens is None else digest([match, self._ids_digest(tokens)])
        return self._add_node(parent, role, "client", message, (match, delta), self.clock, [], tokens,
                              lead_in="")

    def add_model(self, parent: int | None, content=None, *, message: dict | None = None,
                  finish_reason: str | None = "stop", logprobs=SYNTHETIC, bridged="auto", sampling=None,
                  duration: float | None = None, pause: float = 0.4, pieces=None) -> int:
        """A reply the model sampled for the history ending at `parent`; returns its node id.

        `logprobs`: one value per sampled token, None for a node recorded without logprobs, or
        SYNTHETIC. `pieces` (both kinds of node) replaces the content's tokenization with
        `(token id, text piece)` pairs; the template around it stays.
        `pause` is the harness's time before the next call.
        """
        message = message if message is not None else {"role": "assistant", "content": content}
        role = message.get("role", "assistant")
        truncated = finish_reason == "length"
        sampling = dict(sampling or {})
        tokens = None
        if self.mode == "tokens":
            tokens = self._add_tokens(GENERATION_PROMPT, rendered_content(message), "" if truncated else "</s>",
                                      pieces=pieces, logprobs=logprobs, sampled_start=SAMPLED_START)
            completion = tokens["length"] - tokens["sampled_start"]
            prompt = self._size_before(parent) + tokens["sampled_start"]
            usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        else:
            completion = max(1, len(rendered_content(message)) // 4)
            prompt = max(1, self._size_before(parent) // 4)
            usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                     "total_tokens": prompt + completion}
        t_start = self.clock
        t_end = round(t_start + (duration if duration is not None else 0.3 + 0.004 * completion), 6)
        call = {
            "t_start": t_start, "t_end": t_end, "model": MODEL, "sampling": sampling, "usage": usage,
            "finish_reason": finish_reason, "tools": self.tools_hash,
            "bridged": self._auto_bridged(parent) if bridged == "auto" else bridged,
        }
        self._call_count += 1
        self._answered.add(parent)
        self.clock = round(t_end + pause, 6)
        match = self._match_hash(message)
        keyed = {k: sampling[k] for k in ("temperature", "top_p", "top_k", "min_p") if k in sampling}
        delta_parts = [match, "model", keyed]
        if tokens is not None:
            delta_parts += [self._ids_digest(tokens), tokens["sampled_start"]]
        lead_in = "</s>\n" if truncated else "\n"
        return self._add_node(parent, role, "model", message, (match, digest(delta_parts)), t_end, [call],
                              tokens, lead_in=lead_in if self.mode == "tokens" else "")

    def add_failure(self, status: int | None = 500, error: str = '{"error": "upstream error"}',
                    pause: float = 0.5) -> None:
        """A call that failed and produced no node."""
        self.failures.append({"t": self.clock, "status": status, "error": error, "input_leaf": None})
        self.clock = round(self.clock + pause, 6)

    # -- internals -------------------------------------------------------------------------

    def _add_node(self, parent, role, author, message, hashes, created_at, calls, tokens, lead_in) -> int:
        node_id = len(self.nodes)
        if parent is not None and not 0 <= parent < node_id:
            raise ValueError(f"node {node_id}: parent {parent} does not exist yet")
        size = tokens["length"] if tokens is not None else len(rendered_content(message))
        self._path_size.append(self._size_before(parent) + size)
        self._lead_in.append(lead_in)
        self.nodes.append({
            "id": node_id, "parent": parent,
            "depth": 0 if parent is None else self.nodes[parent]["depth"] + 1,
            "role": role, "author": author, "message": message,
            "match_hash": hashes[0], "delta_hash": hashes[1],
            "created_at": created_at, "calls": calls, "shadowed_by": None, "tokens": tokens,
        })
        return node_id

    def _size_before(self, parent: int | None) -> int:
        return 0 if parent is None else self._path_size[parent]

    def _auto_bridged(self, parent: int | None):
        """What skycap would record: null first/text mode; false after a truncated reply,
        without a model node on the history, or for a second reply to the same history."""
        if self.mode == "text" or self._call_count == 0:
            return None
        if parent in self._answered:
            return False
        current = parent
        while current is not None and self.nodes[current]["author"] != "model":
            current = self.nodes[current]["parent"]
        if current is None:
            return False
        return self.nodes[current]["calls"][-1]["finish_reason"] != "length"

    def _match_hash(self, message: dict) -> str:
        fields = _stripped(message)
        if self.mode == "tokens":
            fields = {k: v for k, v in fields.items() if k in RENDERED_FIELDS}
        return digest([digest(fields), self.tools_hash or "", MODEL])

    def _ids_digest(self, tokens: dict) -> str:
        chunk = self._ids[tokens["offset"] : tokens["offset"] + tokens["length"]]
        return hashlib.blake2b(_little_endian(chunk), digest_size=16).hexdigest()

    def _add_tokens(self, before: str, content: str, after: str, *, pieces, sampled_start, logprobs) -> dict:
        """Append one node's tokens (template `before`, content, template `after`) to the record's arrays."""
        if pieces is None:
            ids, offsets = tokenize(before + content + after)
            raw = (before + content + after).encode()
        else:
            ids, offsets, text = _joined([(*tokenize(before), before), tokenize_pieces(pieces),
                                          (*tokenize(after), after)])
            raw = text.encode()
        length = len(ids)
        offset = len(self._ids)
        node_logprobs = self._node_logprobs(ids, sampled_start, logprobs)
        tokens = {
            "offset": offset, "length": length, "sampled_start": sampled_start,
            "has_logprobs": logprobs is not None and sampled_start is not None,
            "text_offset": len(self._text), "text_bytes": len(raw),
            "experts_offset": None, "experts_rows": 0, "mask_offset": None, "mask_rows": 0, "media": [],
        }
        self._ids.extend(ids)
        self._logprobs.extend(node_logprobs)
        self._text_offsets.extend(offsets)
        self._text += raw
        if self.experts_shape:
            tokens["experts_offset"], tokens["experts_rows"] = offset, length
            self._route(offset, length)
        if self.with_mask and sampled_start is not None:
            tokens["mask_offset"], tokens["mask_rows"] = len(self._mask_offsets) - 1, length - sampled_start
            for row, token_id in enumerate(ids[sampled_start:]):
                self._mask_ids.extend((token_id, token_id + 1) if self.support is None
                                      else self.support(len(self.nodes), row, token_id))
                self._mask_offsets.append(len(self._mask_ids))
        return tokens

    def _route(self, offset: int, length: int):
        """Append the routed experts of token positions `[offset, offset + length)`."""
        layers, k = self.experts_shape
        for position in range(offset, offset + length):
            if self.routing is None:
                self._experts.extend(repeat(position % 256, layers * k))
                continue
            for layer in range(layers):
                ids = self.routing(position, layer)
                if len(ids) != k:
                    raise ValueError(f"routing gave {len(ids)} ids for position {position}, layer {layer}: k is {k}")
                self._experts.extend(ids)

    @staticmethod
    def _node_logprobs(ids: array, sampled_start: int | None, logprobs) -> array:
        if sampled_start is None or logprobs is None:
            return array("d", [float("nan")]) * len(ids)
        sampled = len(ids) - sampled_start
        if isinstance(logprobs, str) and logprobs == SYNTHETIC:
            rng = random.Random(ids[sampled_start:].tobytes())
            logprobs = [-rng.expovariate(4.0) for _ in range(sampled)]
        if len(logprobs) != sampled:
            raise ValueError(f"{len(logprobs)} logprobs for {sampled} sampled tokens")
        values = array("d", bytes(8 * sampled_start))  # 0.0 for the scaffold
        values.extend(logprobs)
        return values

    # -- output ----------------------------------------------------------------------------

    def _sidecars(self) -> list[tuple[str, list]]:
        """(kind, arrays) of each sidecar skycap would write, in its order."""
        if self.mode != "tokens" or not self.nodes:
            return []
        n = len(self._ids)
        kinds = [("tokens", [
            ("token_ids", "int32", [n], _little_endian(self._ids)),
            ("logprobs", "float64", [n], _little_endian(self._logprobs)),
            ("text_offsets", "int32", [n], _little_endian(self._text_offsets)),
            ("text", "uint8", [len(self._text)], bytes(self._text)),
        ])]
        if self.experts_shape:
            routed = ("routed_experts", self.experts_dtype, [n, *self.experts_shape], _little_endian(self._experts))
            kinds.append(("experts", [routed]))
        if len(self._mask_offsets) > 1:
            kinds.append(("sampling_mask", [
                ("ids", "int32", [len(self._mask_ids)], _little_endian(self._mask_ids)),
                ("offsets", "int64", [len(self._mask_offsets)], _little_endian(self._mask_offsets)),
            ]))
        return kinds

    def _samples(self):
        if not self.ended or self.status not in ("finished", "failed"):
            return None
        rows = [{"leaf": path.leaf, "targets": path.targets} for path in Graph(self.nodes).paths]
        return {"paths": "all", "rows": rows}

    def document(self, manifests: dict | None = None) -> dict:
        """The document in skycap's key order (`sidecars` as written by `write`)."""
        return {
            "id": self.id, "status": self.status, "meta": self.meta, "capture": self.capture,
            "ended": self.ended, "annotations": self.annotations, "created_at": self.created_at,
            "finished_at": None if self.status == "open" else self.clock,
            "tools": self.tools, "failures": self.failures, "retries": self.retries,
            "samples": self._samples(),
            "nodes": self.nodes, "format_version": FORMAT_VERSION, "sidecars": manifests or {},
        }

    def write(self, directory) -> list[Path]:
        """Write the sidecars, then the document; the paths written, in that order."""
        directory = Path(directory)
        written, manifests = [], {}
        for kind, arrays in self._sidecars():
            payload, manifest = pack(arrays)
            name = f"{self.id}.{kind}.zst"
            written.append(write_file(directory, name, payload))
            manifests[kind] = {"file": name, "arrays": manifest}
        document = self.document(manifests)
        body = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        written.append(write_file(directory, f"{self.id}.json.zst", body))
        return written
