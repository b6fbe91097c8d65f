"""Text that would take over a terminal, and what no command may print raw: a window title, a screen
clear, a carriage return, the one-byte CSI (U+009B) and bidi controls."""

import re

HOSTILE = "\x1b]0;owned\x07\x1b[2J\rfine\x9b31m\u2028 \u202eexe.txt\u2066\u200f"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")



