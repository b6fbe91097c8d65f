"""Text made safe to print on a terminal: what both the commands' output and the server's access log
write, so a record, a file name or a client's request cannot drive the reader's terminal.

Escaped: C0 and C1 controls (cursor moves, screen clears, title sets, `\\x9b` CSI), DEL, line and
paragraph separators, bidi controls (`\\u202e` shows `txt.exe` as `exe.txt`) and lone surrogates
(no UTF-8 form), each written as `\\xNN` or `\\uNNNN`. Multi-line record text keeps its newlines and
tabs; a one-line log entry escapes them too (a fake log line is two lines).
"""

import re
import sys

BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # direction controls: reorder what a terminal shows
UNSAFE_CHARACTERS = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff{BIDI}]")
UNSAFE_IN_A_LINE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff{BIDI}]")


def escaped(match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str, one_line: bool = False) -> str:
    """`text` with what could move the cursor, restyle the terminal, reorder the line or not encode
    at all escaped (see the module doc); with `one_line`, newlines and tabs too."""
    return (UNSAFE_IN_A_LINE if one_line else UNSAFE_CHARACTERS).sub(escaped, text)


def say(line: str) -> None:
    """Write one line on stderr, escaped as one line (`safe`): what the server says of files, stores and
    records names what anyone may have named (an object key, a record id, a store's error text)."""
    print(safe(line, one_line=True), file=sys.stderr, flush=True)
