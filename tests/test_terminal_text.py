"""What the terminal commands print is text: no raw control character from a record, a file name or a
directory name reaches the terminal, and `--json` writes C0 and C1 controls as escapes.

A window-title sequence, a screen clear, a carriage return that would overwrite a problem line and
the one-byte CSI (U+009B) are planted in record fields and in the run directory's name.
"""

import json
import re
import shutil

from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.conftest import FIXTURES, run_cli

HOSTILE = "\x1b]0;owned\x07\x1b[2J\rfine\x9b31m\u2028"
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


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
    for args in (["summary", run], ["check", run], ["show", run / "tr_tokens.json.zst"], ["check", tmp_path / "nope"]):
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
