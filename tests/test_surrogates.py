"""Any valid JSON string is shown: a lone surrogate (`\\ud800`, valid JSON, no UTF-8 form) in a message
and in `meta` leaves the record readable on every route and in every command, whose output stays
valid UTF-8 (the escape written where UTF-8 has no form)."""

import json
import subprocess
import sys

import pytest

from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.corpus import FIXTURES
from tests.support.in_process import InProcess
from tests.support.records import copy_record

ROUTES = ["/v1/trajectories?run_id=run", "/v1/trajectories/tr_text?run_id=run",
          "/v1/trajectories/tr_tokens/paths?run_id=run", "/v1/trajectories/tr_tokens/paths/0/messages?run_id=run",
          "/v1/trajectories/tr_text/paths/0/messages?run_id=run", "/v1/trajectories/tr_tokens/graph?run_id=run",
          "/v1/trajectories/tr_tokens/paths/0/row?run_id=run", "/v1/trajectories/tr_text/snapshot?run_id=run",
          "/v1/compare?run_id=run&a=tr_tokens&b=tr_text", "/v1/search?run_id=run&text=lone&in=message",
          "/v1/trajectories/export?run_id=run"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("surrogates")
    run = root / "run"
    run.mkdir()
    for record_id in ("tr_tokens", "tr_text"):
        copy_record(FIXTURES / "spec", record_id, run)
        path = run / f"{record_id}.json.zst"
        document = json.loads(decompress_one_frame(path.read_bytes()))
        document["nodes"][0]["message"]["content"] = "lone \ud800 here"
        document["meta"]["note"] = "meta \udfff"
        path.write_bytes(compress(json.dumps(document).encode()))  # json.dumps writes them as \u escapes
    return root


def test_every_route_answers_valid_utf8_with_the_string_as_its_escape(root):
    web = InProcess(root)
    try:
        for target in ROUTES:
            response = web.get(target)
            assert response.status == 200, (target, response.body[:200])
            response.body.decode("utf-8")  # strictly valid
        rows = web.json("/v1/trajectories?run_id=run")["data"]
        assert {row["id"]: row.get("unreadable") for row in rows} == {"tr_text": None, "tr_tokens": None}
        assert web.json("/v1/trajectories/tr_text?run_id=run")["meta"]["note"] == "meta \udfff"
        messages = web.json("/v1/trajectories/tr_text/paths/0/messages?run_id=run")["messages"]
        assert messages[0]["content"] == "lone \ud800 here"
    finally:
        web.close()


@pytest.mark.parametrize("args", [["show", "run/tr_text.json.zst"], ["show", "run/tr_tokens.json.zst", "--html"],
                                  ["diff", "run", "tr_tokens", "tr_text"], ["grep", "run", "lone", "--in", "message"],
                                  ["export", "run"], ["summary", "run"], ["check", "run"]])
def test_every_command_prints_it_without_a_traceback(root, args):
    result = subprocess.run([sys.executable, "-m", "skycap_viewer", *args], cwd=root, capture_output=True,
                            timeout=120)
    assert result.returncode == 0 and result.stderr == b"", result.stderr[-500:]
    text = result.stdout.decode("utf-8")  # strictly valid: no lone surrogate reached the output raw
    shown = {"grep": "\\ud800", "export": "meta \\udfff", "show": "lone \ufffd here"}  # escaped, or replaced
    if args[0] in shown and "--html" not in args:
        assert shown[args[0]] in text
