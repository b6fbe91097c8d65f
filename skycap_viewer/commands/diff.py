"""`skycap-viewer diff A B`: two rollouts compared in a terminal, the twin of the page's pair view.

The shared prefix in one line, then both sides from where they part, turn by turn, the differing
units marked. It prints `views.record.compare`'s answer (`--json` prints it as is), so the terminal and
the page cannot disagree. Record text is escaped as `show` escapes it.
"""

import sys
from pathlib import Path

from skycap_viewer.commands.show import block_text, document_file, document_in
from skycap_viewer.commands.terminal import MARKS, Painter, json_text, plural, print_out, wants_colour
from skycap_viewer.errors import RecordError, UsageError
from skycap_viewer.printable import safe
from skycap_viewer.record.document import record_id_of
from skycap_viewer.record.opener import open_record
from skycap_viewer.views.record.compare import Comparison
from skycap_viewer.views.record.trajectory import WHOLE, RecordView

SIDE_STYLES = {"a": ("red",), "b": ("green",)}


def record_files(args: list[str]) -> tuple[Path, Path]:
    """The two documents `diff` compares: `A B` (files), `DIR ID_A ID_B` or `DIR_A ID_A DIR_B ID_B`."""
    if len(args) == 2:
        return document_file(Path(args[0])), document_file(Path(args[1]))
    if len(args) == 3:
        return document_in(Path(args[0]), args[1]), document_in(Path(args[0]), args[2])
    if len(args) == 4:
        return document_in(Path(args[0]), args[1]), document_in(Path(args[2]), args[3])
    raise UsageError("give two record files, DIR ID_A ID_B, or DIR_A ID_A DIR_B ID_B")


def record_view(file: Path) -> RecordView:
    """The record of one side, opened as `show` opens it (`record.opener`); exits 2 when it cannot be read."""
    try:
        return RecordView.of(open_record(file.parent, record_id_of(file.name)), {})
    except RecordError as error:
        raise UsageError(str(error)) from None


def side_line(name: str, side: dict, unit: str, paint: Painter) -> str:
    header = side["trajectory"]
    reward = header["annotations"].get("reward")
    text = f"{name}  {header['id']}  reward {'-' if reward is None else reward}"
    text += f"  path {side['path']} of {side['path_count']}, {side['size']} {unit}"
    if side["stop_reason"]:
        text += f"  stop: {side['stop_reason']}"
    if header["flags"]:
        text += "  flags: " + " ".join(header["flags"])
    return paint(safe(text), *SIDE_STYLES[name], "bold")


def shared_line(answer: dict) -> str:
    unit = answer["unit"]
    size = answer["common_prefix_tokens"] if unit == "tokens" else answer["common_prefix_chars"]
    if answer["identical"]:
        return f"identical  the two paths are the same {size} {unit}"
    whole = answer["shared_nodes"]
    text = f"shared     {size} {unit}"
    if unit == "tokens":
        text += f" ({plural(answer['common_prefix_chars'], 'char')})"
    if whole["a"] == whole["b"]:
        text += f": {plural(whole['a'], 'node')} whole on each side"
    else:
        text += f": {plural(whole['a'], 'node')} of a whole, {plural(whole['b'], 'node')} of b"
    parts = []
    for name in ("a", "b"):
        where = answer["diverge"][name]
        parts.append(f"{name} at {where['node_id']}+{where['offset']}" if where["node_id"] else f"{name} ends there")
    return text + "; they part: " + ", ".join(parts)


def marked_text(turn: dict, node: dict, ranges: list[tuple[int, int]], by_tokens: bool, paint: Painter,
                style: tuple) -> str:
    """The turn's text after its shared units, the differing `ranges` painted (or bracketed)."""
    pieces, at = [], turn["shared"]
    size = turn["end"] - turn["start"]
    for start, end in [*ranges, (size, size)]:
        pieces.append(safe(block_text({"node_start": at, "node_end": start}, node, by_tokens)))
        if end > start:
            differing = safe(block_text({"node_start": start, "node_end": end}, node, by_tokens))
            pieces.append(paint(differing, *style, "bold", "underline") if paint.enabled
                          else f"{MARKS[0]}{differing}{MARKS[1]}")
        at = end
    return ("…" if turn["shared"] else "") + "".join(pieces)


def turn_lines(number: int, row: dict, answer: dict, paint: Painter) -> list[str]:
    by_tokens = answer["unit"] == "tokens"
    names = [f"{name} {row[name]['node_id']} {row[name]['role'] or '-'} ({row[name]['author']})"
             if row[name] else f"{name} no turn" for name in ("a", "b")]
    title = f"turn {number}  " + "  ·  ".join(names)
    if row["same"]:
        return [paint(safe(title + "  same"), "grey")]
    lines = ["", paint(safe(title), "bold")]
    for name, columns in (("a", (0, 1)), ("b", (2, 3))):
        turn = row[name]
        if turn is None:
            continue
        ranges = [(d[columns[0]], d[columns[1]]) for d in row["diff"]]
        text = marked_text(turn, answer["nodes"][name].get(turn["node_id"]), ranges, by_tokens, paint,
                           SIDE_STYLES[name])
        lines += [f"  {name}│ {line}" for line in text.split("\n")]
    return lines


def run_diff(args: list[str], path_a: int = 0, path_b: int = 0, as_json: bool = False) -> int:
    """Print two records' paths compared; an unreadable record or a path there is not exits 2."""
    file_a, file_b = record_files(args)
    try:
        answer = Comparison(record_view(file_a), path_a, record_view(file_b), path_b).part(0, WHOLE)
    except IndexError as error:
        raise UsageError(f"--path: {error}") from None
    if as_json:
        print_out(json_text(answer))
        return 0
    paint = Painter(wants_colour(sys.stdout))
    lines = [side_line("a", answer["a"], answer["unit"], paint), side_line("b", answer["b"], answer["unit"], paint)]
    if answer["why_text"]:
        lines.append(safe(f"compared as text: {answer['why_text']}"))
    lines.append(paint(shared_line(answer), "bold"))
    for number, row in enumerate(answer["turns"], 1):
        lines += turn_lines(number, row, answer, paint)
    print_out("\n".join(lines))
    return 0
