"""What the terminal commands print is text: no raw control character from a record, a file name or a
directory name reaches the terminal, and `--json` writes C0 and C1 controls as escapes.

A window-title sequence, a screen clear, a carriage return that would overwrite a problem line, the
one-byte CSI (U+009B) and bidi controls (U+202E shows `txt.exe` as `exe.txt`) are planted in record
fields and in the run directory's name. On a terminal (a pty), `export` escapes them too, and
`show --html` refuses to write its file there.
"""

import json
import os
import pty
import shutil
import subprocess
import sys

from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.terminal_text import HOSTILE, RAW


def hostile_run(tmp_path):
    run = tmp_path / f"run{HOSTILE}"
    run.mkdir()
    for path in (FIXTURES / "spec").glob("tr_tokens*"):
        shutil.copy(path, run / path.name)
    document = json.loads(decompress_one_frame((run / "tr_tokens.json.zst").read_bytes()))
    document["meta"] = {"task": f"/tasks/{HOSTILE}", "note": HOSTILE}
    document["annotations"] = {"reward": 1, "why": HOSTILE}
    (run / "tr_tokens.json.zst").write_bytes(compress(json.dumps(document).encode()))
    (run / "tr_broken.json.zst").write_bytes(compress(json.dumps({**document, "id": HOSTILE, "nodes": 3}).encode()))
    return run


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_text_output_carries_no_raw_control_character(tmp_path):
    run = hostile_run(tmp_path)
    record = run / "tr_tokens.json.zst"
    for args in (["summary", run], ["check", run], ["show", record], ["check", tmp_path / "nope"],
                 ["grep", run, "fine"], ["diff", run, "tr_tokens", "tr_tokens"]):
        result = run_cli(*args)
        for stream in (result.stdout, result.stderr):
            assert not RAW.search(stream), (args, RAW.findall(stream))
    assert "\\x1b]0;owned\\x07" in run_cli("summary", run).stdout  # shown, escaped, not dropped


def test_json_output_escapes_controls_and_keeps_the_values(tmp_path):
    run = hostile_run(tmp_path)
    for args in (["summary", run, "--json"], ["check", run, "--json"], ["show", run / "tr_tokens.json.zst", "--json"]):
        result = run_cli(*args)
        assert not RAW.search(result.stdout), (args, RAW.findall(result.stdout))
        assert "\\u009b" in result.stdout or "\\u001b" in result.stdout
        assert any(HOSTILE in text for text in strings(json.loads(result.stdout)))  # the values, only escaped


def on_a_terminal(*args) -> tuple[int, str]:
    """(exit status, what the terminal received) of the command with a pty as its stdout and stderr."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "skycap_viewer", *map(str, args)], stdout=follower,
                               stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the command closed its end
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    return process.wait(timeout=60), received.decode("utf-8", "replace")


def test_a_terminal_gets_an_escaped_export_and_no_html_file(tmp_path):
    run = hostile_run(tmp_path)
    status, shown = on_a_terminal("export", run)
    assert status == 0 and "\\u202e" in shown and not RAW.search(shown.replace("\r\n", "\n")), RAW.findall(shown)
    status, shown = on_a_terminal("show", run / "tr_tokens.json.zst", "--html")
    assert status == 2 and shown.strip() == (
        "skycap-viewer: show --html writes an HTML file, not for a terminal: redirect it (> rollout.html)")
    piped = run_cli("show", run / "tr_tokens.json.zst", "--html")
    assert piped.returncode == 0 and piped.stdout.startswith("<!doctype html>")
