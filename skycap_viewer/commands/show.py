"""`skycap-viewer show RECORD`: one rollout in a terminal, for a researcher on an ssh session.

The text view is printed from the same payload the server sends for `/paths` (`--json` prints
it as is), so what the terminal shows is what the page shows; its `fork` lines are `/graph`'s
forks. A forked rollout's shared prefix is printed once: each later path from where it leaves
the paths printed before it, with the kinds its shared blocks take on it where they differ from
those printed (`--full` prints every path whole). Record text is untrusted: control characters
other than newline and tab are printed escaped, never sent to the terminal raw.
"""

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from skycap_viewer.commands.snapshot import print_snapshot
from skycap_viewer.commands.terminal import MARKS, Painter, json_text, plural, print_out, wants_colour
from skycap_viewer.errors import ApiError, RecordError, UsageError
from skycap_viewer.flags import FLAG_BY_NAME, TEXT_ONLY_BY_REASON
from skycap_viewer.printable import safe
from skycap_viewer.record.document import DOCUMENT_SUFFIX, record_id_of
from skycap_viewer.record.forks import trajectory_forks
from skycap_viewer.record.opener import OpenedRecord, open_record
from skycap_viewer.views.record.row import path_messages, trainer_row
from skycap_viewer.views.record.trajectory import RecordView, fork_payload, paths_payload

KIND_STYLES = {
    "given": ("grey",),
    "replayed": ("red",),
    "scaffold": ("magenta",),
    "sampled": ("green",),
    "sampled-elsewhere": ("cyan",),
    "sampled-untrained": ("yellow",),
}
OUTSIDE_MARKS = ("⟪", "⟫")  # around a sampled token its sampling mask did not allow (the page underlines it)
LEVEL_STYLES = {"error": ("red", "bold"), "warn": ("yellow",), "info": ("blue",)}


def document_file(record: Path) -> Path:
    """`{id}.json.zst`, or a path without the suffix when `{path}.json.zst` exists.

    Whatever the file is (a FIFO, a socket, a directory): reading it then names the problem,
    where "no such record" would send the user looking for a file that is there."""
    if record.name.endswith(DOCUMENT_SUFFIX) and record.exists():
        return record
    with_suffix = record.with_name(record.name + DOCUMENT_SUFFIX)
    if with_suffix.exists():
        return with_suffix
    if record.is_dir():
        raise UsageError(f"{record} is a directory: give a record file, or DIR ID")
    if record.exists():
        raise UsageError(f"not a record document (*{DOCUMENT_SUFFIX}): {record}")
    raise UsageError(f"no such record: {record}")


def document_in(directory: Path, record_id: str) -> Path:
    """`DIR ID`'s document, `{DIR}/{ID}.json.zst` (ID may carry the suffix); an id that names no
    record of DIR, or names a file elsewhere, is said so in one line naming both."""
    if not directory.is_dir():
        raise UsageError(f"not a directory: {directory}")
    name = record_id if record_id.endswith(DOCUMENT_SUFFIX) else record_id + DOCUMENT_SUFFIX
    if Path(name).name != name or name == DOCUMENT_SUFFIX:
        raise UsageError(f"not a record id: {record_id} (a record of {directory} is named by its id alone)")
    file = directory / name
    if not file.exists():
        raise UsageError(f"no record {record_id} in {directory}")
    return file


def utf16_slice(text: str, start: int, end: int) -> str:
    """`text[start:end]` in UTF-16 units, the unit of the payload's offsets."""
    units = text.encode("utf-16-le", "surrogatepass")
    return units[2 * start : 2 * end].decode("utf-16-le", "replace")


def block_text(block: dict, node: dict | None, token_blocked: bool) -> str:
    if node is None:
        return ""
    if not token_blocked:
        return utf16_slice(node["text"] or "", block["node_start"], block["node_end"])
    offsets = node["token_offsets"]
    if offsets is None:  # no text recorded for this node: there is no tokenizer to decode the ids
        ids = (node["token_ids"] or [])[block["node_start"] : block["node_end"]]
        return "⟨ids " + " ".join(map(str, ids)) + "⟩"
    return utf16_slice(node["text"], offsets[block["node_start"]], offsets[block["node_end"]])


def marked_spans(node: dict) -> list[tuple[int, int, tuple[str, str]]]:
    """The node's token ranges to mark, in order: each media item's placeholder tokens (`⟦ ⟧`), and each
    sampled token outside its sampling mask's support (`⟪ ⟫`, the page's underline)."""
    spans = [(item["offset"], item["offset"] + item["length"], MARKS) for item in node["media"]
             if item["offset"] is not None]
    spans += [(index, index + 1, OUTSIDE_MARKS) for index in node.get("outside_support") or []]
    return sorted(spans)


def marked_text(block: dict, node: dict | None, token_blocked: bool) -> str:
    """The block's text, escaped, with its marked token ranges (`marked_spans`) between their marks."""
    spans = marked_spans(node) if node is not None and token_blocked else []
    if not spans:
        return safe(block_text(block, node, token_blocked))

    def text(start: int, stop: int) -> str:
        return safe(block_text({"node_start": start, "node_end": stop}, node, True))

    pieces, at, end = [], block["node_start"], block["node_end"]
    for start, stop, (opening, closing) in spans:
        start, stop = max(start, at), min(stop, end)
        if start >= stop:
            continue
        pieces += [text(at, start), opening, text(start, stop), closing]
        at = stop
    pieces.append(text(at, end))
    return "".join(pieces)


def media_lines(block: dict, node: dict | None, token_blocked: bool) -> list[str]:
    """A `media` line per item of the node, under its first block: its label, where its tokens are."""
    if node is None or block["node_start"] != 0:
        return []
    lines = []
    for item in node["media"]:
        if item["offset"] is None:
            where = "no token range"
        elif token_blocked:
            where = f"[{block['start'] + item['offset']}:{block['start'] + item['offset'] + item['length']}]"
        else:
            where = f"tokens {item['offset']}–{item['offset'] + item['length']} of the node (not shown: no tokens)"
        problem = f"  problem: {item['problem']}" if item["problem"] else ""
        lines.append(safe(f"    media {item['label']}  {where}{problem}"))
    return lines


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def fork_text(fork: dict) -> str:
    """`node n3 under n0 vs n2: resample: ...`: a fork, its sibling and its cause, in wire ids."""
    where = f"under {fork['parent_id']}" if fork["parent_id"] else "a new root"
    return f"node {fork['node_id']} {where} vs {fork['sibling_id']}: {fork['kind']}: {fork['detail']}"


def trains_text(header: dict) -> str:
    """What decides what trained: the record's samples (and their rule), or the `all` rule applied here."""
    size = header["size"]
    total = f"{plural(size['samples'], 'sample')}, {size['tokens']} {size['unit']}"
    if size["unit"] == "tokens":
        total += f", {size['trainable']} in the loss"
    if header["samples_rule"] is None:
        return f"all rule, applied by the viewer (the record has no samples): {total}"
    return f"{header['samples_rule']} rule (the record's samples): {total}"


def header_lines(payload: dict, path_count: int, paint: Painter, forks: list[dict] = ()) -> list[str]:
    """The rollout's header; `forks` (`/graph`'s shape) as one `fork` row each."""
    header = payload["trajectory"]
    ended = "ended" if header["ended"] else "not ended"
    first = f"{paint(safe(header['id']), 'bold')}  {safe(str(header['status']))}  {ended}  "
    first += f"{header['mode']} mode" if header["mode"] else "no mode recorded"
    first += f"  {plural(path_count, 'path')}"
    rows = [("meta", compact(header["meta"])), ("annotations", compact(header["annotations"]))]
    if header.get("tokenizer"):
        rows.append(("tokenizer", header["tokenizer"]))
    if header.get("created_at"):
        ended_as = "abandoned" if header["status"] == "abandoned" else "finished"  # the time skycap ended it
        rows.append(("created", f"{header['created_at']}  {ended_as} {header.get('finished_at') or '-'}"))
    bridged = " ".join(f"{k}={n}" for k, n in header["skycap"]["bridged"].items())
    rows.append(("calls", f"{header['capture']['exchange_count']}  bridged {bridged}"))
    rows.append(("trains", trains_text(header)))
    rows += [("fork", fork_text(fork)) for fork in forks]
    flags = [FLAG_BY_NAME[name] for name in header["flags"]]
    rows += [("problem", problem) for problem in header["record_problems"]]
    if header["missing_sidecars"]:
        rows.append(("absent", "listed sidecars not here: " + ", ".join(header["missing_sidecars"])))
    if payload["text_only"]:
        rows.append(("note", TEXT_ONLY_BY_REASON[payload["text_only"]].note))
    if payload.get("tokens_error"):
        rows.append(("tokens", payload["tokens_error"]))
    outside = sum(len(node.get("outside_support") or []) for node in (payload.get("nodes") or {}).values())
    if outside:
        rows.append(("support", f"{plural(outside, 'sampled token')} outside the sampling mask's support, "
                                f"marked {''.join(OUTSIDE_MARKS)} in the text"))
    lines = [first] + [f"{label:<12} {safe(str(value))}" for label, value in rows]  # escaped, then painted
    at = 1 + next((i for i, (label, _) in enumerate(rows) if label == "problem"), len(rows))
    lines[at:at] = [f"{'flag':<12} {paint(flag.name, *LEVEL_STYLES[flag.level])} ({flag.level}): {flag.why}"
                    for flag in flags]
    return lines


def size_text(count: int, token_blocked: bool) -> str:
    return f"{count} tok" if token_blocked else plural(count, "char")


def path_title(path: dict, source: int | None) -> str:
    """`path 2  leaf n7  70 tok, 5 trainable  stop: stop`, then where it leaves the paths before it:
    `leaves path 0 after n1` when `source` (the path that printed its fork point) is given."""
    token_blocked = path["blocking"] is not None
    size = size_text(path["token_count"] if token_blocked else path["char_count"], token_blocked)
    title = f"path {path['index']}  leaf {path['leaf_node_id']}  {size}"
    if token_blocked:
        title += f", {path['trainable_count']} trainable"
    if path["stop_reason"]:
        title += f"  stop: {path['stop_reason']}"
    if source is not None:
        title += f"  leaves path {source} after {path['fork_from']}"
    elif path["diverges_at"]:
        title += f"  first new node {path['diverges_at']}"
        title += f" after {path['fork_from']}" if path["fork_from"] else " (a new root)"
    return title


def samples_lines(path: dict, token_blocked: bool) -> list[str]:
    """The samples the path carries, one line each, when they are not the one sample through its leaf
    (a row ending before it, or several rows on it: the trainer got each as a sample of its own)."""
    lines = []
    for sample in path.get("samples") or []:
        loss = f", {sample['trainable']} in the loss" if sample["trainable"] is not None else ""
        targets = ", ".join(sample["targets"]) or "none"
        lines.append(f"{'sample':<17} row {sample['row']}: through {sample['leaf_node_id']}, "
                     f"{size_text(sample['size'], token_blocked)}{loss} (targets {targets})")
    return lines


def block_lines(block: dict, nodes: dict, token_blocked: bool, paint: Painter) -> list[str]:
    """A block's label (kind, node, role, range, size), its node's images under its first block, and
    its text, indented."""
    size = size_text(block["token_count" if token_blocked else "char_count"], token_blocked)
    label = f"{block['kind']:<17} {block['node_id']:<5} {block['role'] or '-':<10}"
    label += f" [{block['start']}:{block['end']}] {size}"
    if "trained_in" in block:
        label += f"  trained in path {block['trained_in']}"
    lines = ["  " + paint(safe(label), *KIND_STYLES[block["kind"]], "bold")]
    node = nodes.get(block["node_id"])
    lines += media_lines(block, node, token_blocked)
    text = marked_text(block, node, token_blocked)
    if text:
        body = "\n".join(f"    {line}" if line else "" for line in text.split("\n"))
        lines.append(paint(body, *KIND_STYLES[block["kind"]]))
    return lines


def block_fact(block: dict) -> tuple:
    """What a block says about training: its kind, and the path that trains it when elsewhere."""
    return block["kind"], block.get("trained_in")


def block_place(block: dict, token_blocked: bool) -> str:
    """`n1 [30:35] 5 tok`: a block's node, range in the path and size."""
    size = size_text(block["end"] - block["start"], token_blocked)
    return f"{block['node_id']} [{block['start']}:{block['end']}] {size}"


@dataclass
class Printed:
    """What the paths printed so far showed, so a later path prints only what is new."""

    path_of: dict[str, int] = field(default_factory=dict)  # node id -> the path that printed it
    facts: dict[tuple[str, int], tuple] = field(default_factory=dict)  # (node id, offset in it) -> block_fact

    def add(self, path: dict, blocks: list[dict]) -> None:
        self.path_of.update((node_id, path["index"]) for node_id in path["node_ids"][path["shared_nodes"]:])
        self.facts.update(((block["node_id"], block["node_start"]), block_fact(block)) for block in blocks)


def shared_lines(path: dict, shared: list[dict], printed: Printed, paint: Painter) -> list[str]:
    """The path's shared prefix in one line, then an `on this path` line per kind its blocks take here
    that is not the one they were printed with (a reply trained on path 0 is `sampled-elsewhere` on
    path 2): the facts are the payload's blocks, compared, never worked out again."""
    token_blocked = path["blocking"] is not None
    count = path["shared_nodes"]
    size = size_text(sum(block["end"] - block["start"] for block in shared), token_blocked)
    span = f"{path['node_ids'][0]} to {path['fork_from']}" if count > 1 else path["fork_from"]
    lines = ["  " + safe(f"{'shared':<17} {span}: {plural(count, 'node')}, {size}, printed above")]
    changed: dict[tuple, list[str]] = {}
    for block in shared:
        if printed.facts.get((block["node_id"], block["node_start"])) != block_fact(block):
            changed.setdefault(block_fact(block), []).append(block_place(block, token_blocked))
    for (kind, trained_in), where in changed.items():
        text = f"{'on this path':<17} {kind} {', '.join(where)}"
        if trained_in is not None:
            text += f" (trained in path {trained_in})"
        lines.append("  " + paint(safe(text), *KIND_STYLES[kind]))
    return lines


def path_lines(path: dict, nodes: dict, paint: Painter, printed: Printed | None = None) -> list[str]:
    """A path's title and blocks; with `printed` (what the paths before it printed), only the nodes
    after its fork point, the shared prefix said in one line, and `printed` takes them."""
    token_blocked = path["blocking"] is not None
    blocks = path["blocks"]
    source = printed.path_of[path["fork_from"]] if printed is not None and path["shared_nodes"] else None
    lines = ["", paint(safe(path_title(path, source)), "bold")]
    lines += [f"  {safe(line)}" for line in samples_lines(path, token_blocked)]
    if printed is not None:
        prefix = set(path["node_ids"][: path["shared_nodes"]])
        if source is not None:
            lines += shared_lines(path, [b for b in blocks if b["node_id"] in prefix], printed, paint)
        blocks = [b for b in blocks if b["node_id"] not in prefix]
        printed.add(path, blocks)
    for block in blocks:
        lines += block_lines(block, nodes, token_blocked, paint)
    if not path["blocks"]:
        lines.append("  (no blocks)")
    return lines


def opened_record(record: Path) -> OpenedRecord:
    """`show`'s RECORD opened (`record.opener`); exits 2 when its document cannot be read."""
    file = document_file(Path(record))
    try:
        return open_record(file.parent, record_id_of(file.name))
    except RecordError as error:
        raise UsageError(str(error)) from None


def run_show(record: Path, path_index: int | None = None, as_json: bool = False, full: bool = False,
             as_html: bool = False) -> int:
    """Print one record's rollout, each path from where it leaves those printed before it (`full`:
    every path whole, as `--path N` prints one; `as_html`: as one self-contained HTML file); an
    unreadable record or a bad `--path` exits 2."""
    opened = opened_record(record)
    if as_html:
        return print_snapshot(opened, path_index)
    payload = paths_payload(*opened, verified=True)  # the sidecars' verdicts too
    path_count = len(payload["paths"])
    if path_index is not None:
        if not 0 <= path_index < len(payload["paths"]):
            raise UsageError(f"--path {path_index}: the record has {plural(len(payload['paths']), 'path')}")
        payload["paths"] = [payload["paths"][path_index]]
    if as_json:
        print_out(json_text(payload))
        return 0
    paint = Painter(wants_colour(sys.stdout))
    forks = [fork_payload(fork) for fork in trajectory_forks(opened.document)]
    lines = header_lines(payload, path_count, paint, forks)
    printed = None if full or path_index is not None else Printed()
    for path in payload["paths"]:
        lines += path_lines(path, payload["nodes"], paint, printed)
    if not payload["paths"]:
        lines += ["", "This trajectory has no path to show (no nodes)."]
    print_out("\n".join(lines))
    return 0


PATH_ANSWERS = {"row": trainer_row, "messages": path_messages}  # `--row`, `--messages`: the API's answers


def run_show_path(record: Path, path_index: int | None, answer: str) -> int:
    """Print one path's trainer row or chat (`--row`, `--messages`) exactly as the API sends it;
    a path without one (text mode, no tokens) exits 2 with the API's reason."""
    if path_index is None:
        raise UsageError(f"--{answer} prints one path: give --path N")
    view = RecordView.of(opened_record(record), {})
    try:
        payload = PATH_ANSWERS[answer](view, path_index)
    except ApiError as error:
        raise UsageError(f"--path {path_index} --{answer}: {error.detail}") from None
    print_out(json_text(payload, indent=None if answer == "row" else 1))  # a row's arrays on one line
    return 0
