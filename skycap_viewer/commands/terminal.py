"""Terminal niceties for the CLI: colour only on a terminal, a progress line on stderr, and record
text escaped before it reaches the terminal.

Colour follows the NO_COLOR convention (https://no-color.org): set to anything non-empty, it
turns colour off; piped output never gets escape codes, so `show | less` or a log file stays
plain text.
"""

import json
import os
import re
import sys

from skycap_viewer.printable import BIDI, safe

STYLES = {
    "bold": "1",
    "dim": "2",
    "underline": "4",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "grey": "90",
}
MARKS = ("⟦", "⟧")  # around marked text in plain output: `diff`'s differing units, `show`'s media items
JSON_UNSAFE = re.compile(f"[\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff{BIDI}]")  # json.dumps escapes C0 itself


def json_text(value, indent: int | None = 1) -> str:
    """`value` as JSON (indented, or on one line with `indent=None`) for a terminal or a pipe: C0 and C1
    controls, line separators, bidi controls and lone surrogates written as `\\uXXXX` escapes (the same JSON value),
    never as raw characters."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def print_out(text: str) -> None:
    """Print to stdout; a reader that went away (`show ... | head`) ends the output quietly."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush is quiet too


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def wants_colour(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Painter:
    """Wraps text in ANSI styles, or leaves it alone when colour is off."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(STYLES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


class Progress:
    """A `\\r`-updated line on stderr, only when stderr is a terminal and the work is large.

    Writing it to a pipe or a log would fill it with carriage returns, so it stays silent there.
    """

    def __init__(self, label: str, total: int, threshold: int = 500, stream=None):
        self.stream = stream or sys.stderr
        self.label = safe(label)  # a directory name is whatever it is on disk
        self.total = total
        is_terminal = getattr(self.stream, "isatty", None)
        self.active = total >= threshold and bool(is_terminal and is_terminal())
        self.every = max(total // 100, 1)
        self.width = 0

    def update(self, done: int) -> None:
        if self.active and (done % self.every == 0 or done == self.total):
            line = f"{self.label}: {done}/{self.total}"
            self.width = max(self.width, len(line))
            self.stream.write("\r" + line)
            self.stream.flush()

    def close(self) -> None:
        if self.active and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


LINKS_SHOWN = 3  # documents named in a line about symlinked documents; the rest are counted


def symlink_note(target) -> str:
    """` (symlink to …)` after a path a symlink took out of its root or directory, else nothing."""
    return f" (symlink to {target})" if target else ""


def links_text(links: dict) -> str:
    """`2 documents are symlinks out of the directory, followed: a (symlink to …), …`: record id -> real path."""
    named = [f"{record_id}{symlink_note(target)}" for record_id, target in list(links.items())[:LINKS_SHOWN]]
    more = f", and {len(links) - LINKS_SHOWN} more" if len(links) > LINKS_SHOWN else ""
    return f"{plural(len(links), 'document')} linked out of the directory, followed: {', '.join(named)}{more}"
