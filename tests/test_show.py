"""`skycap-viewer show`, run as a user runs it: text on a pipe and on a terminal, and JSON."""

import json
import os
import pty
import subprocess
import sys

import pytest

from skycap_viewer.commands.show import header_lines
from skycap_viewer.commands.terminal import Painter
from skycap_viewer.flags import FLAG_BY_NAME
from skycap_viewer.record.document import read_document
from skycap_viewer.record.frames import compress, decompress_one_frame
from skycap_viewer.views.record.trajectory import paths_payload
from tests.support.cli import run_cli
from tests.support.oracle import ALLOWED, ORACLE, trained_paths

SHOWN = [(d, rid, o) for d, rid, o in ALLOWED if "paths" in o and d in ("spec", "real-like", "mirror-text")]
ESC = "\x1b"


def wire(node_ids):
    return [f"n{n}" for n in node_ids]


@pytest.mark.parametrize(("directory", "record_id", "oracle"), SHOWN, ids=[f"{d}/{r}" for d, r, _ in SHOWN])
@pytest.mark.slow
def test_json_paths_match_the_oracle(corpus, directory, record_id, oracle):
    result = run_cli("show", corpus / directory / f"{record_id}.json.zst", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["trajectory"]["id"] == record_id
    assert payload["trajectory"]["status"] == oracle["status"]
    assert len(payload["paths"]) == len(oracle["paths"])
    for path, expected in zip(payload["paths"], trained_paths(oracle), strict=True):
        assert path["node_ids"] == wire(expected["path"])
        assert path["leaf_node_id"] == f"n{expected['leaf']}"
        assert path["targets"] == wire(expected["targets"])
        blocks = path["blocks"]
        elsewhere = {b["node_id"]: b["trained_in"] for b in blocks if b["kind"] == "sampled-elsewhere"}
        assert elsewhere == {f"n{k}": v for k, v in expected["sampled_elsewhere"].items()}
        if expected["tokens"] is None:
            assert path["blocking"] is None and path["token_count"] == 0
        else:
            assert path["token_count"] == expected["tokens"]
            assert path["trainable_count"] == expected["trained_tokens"]
        ends = [0] + [b["end"] for b in path["blocks"]]
        assert [b["start"] for b in path["blocks"]] == ends[:-1]  # blocks tile the path
    texts = {
        key[1:]: node["text"] for key, node in payload["nodes"].items()
        if node["token_ids"] is not None and node["text"] is not None
    }
    assert texts == oracle["node_text"]
    for node in payload["nodes"].values():
        if node["token_offsets"] is not None:
            offsets = node["token_offsets"]
            assert len(offsets) == len(node["token_ids"]) + 1
            assert offsets == sorted(offsets) and offsets[-1] == len(node["text"].encode("utf-16-le")) // 2


def show_text(*args, env=None):
    result = run_cli("show", *args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_text_of_a_token_record(corpus):
    out = show_text(corpus / "spec" / "tr_tokens.json.zst")
    lines = out.splitlines()
    oracle = ORACLE["spec"]["records"]["tr_tokens"]
    assert lines[0].split()[:2] == ["tr_tokens", oracle["status"]]
    assert ESC not in out  # piped: no colour
    flagged = [line for line in lines if line.startswith("flag ")]
    assert flagged and all(FLAG_BY_NAME[line.split()[1]].why in line for line in flagged)
    assert {line.split()[1] for line in flagged} >= {"failed-calls", "incomplete"}
    blocks = [line.split() for line in lines if line.startswith("  ") and "[" in line]
    assert [(b[0], b[1], b[3]) for b in blocks] == [("given", "n0", "[0:3]"), ("scaffold", "n1", "[3:4]"),
                                                   ("sampled", "n1", "[4:7]")]
    assert "    🙂ok" in lines  # the sampled tokens, decoded from the tokens sidecar
    assert "    <s>assistant" in lines


def test_one_path_only(corpus):
    record = corpus / "real-like" / "tr_86f0b750382298e2.json.zst"
    oracle = ORACLE["real-like"]["records"]["tr_86f0b750382298e2"]
    out = show_text(record, "--path", "2")
    titles = [line for line in out.splitlines() if line.startswith("path ")]
    assert len(titles) == 1 and titles[0].startswith(f"path 2  leaf n{oracle['paths'][2]['leaf']}")
    payload = json.loads(show_text(record, "--path", "2", "--json"))
    assert [p["index"] for p in payload["paths"]] == [2]
    result = run_cli("show", record, "--path", str(len(oracle["paths"])))
    assert result.returncode == 2 and f"{len(oracle['paths'])} paths" in result.stderr


def test_record_path_without_suffix(corpus):
    out = show_text(corpus / "spec" / "tr_utf8")
    assert out.startswith("tr_utf8 ")


def test_mirror_without_tokens_shows_message_text(corpus):
    record = corpus / "mirror-text" / "tr_bac9802dee51ae08.json.zst"
    payload = json.loads(show_text(record, "--json"))
    assert payload["text_only"] == "tokens-missing"
    assert all(node["token_ids"] is None for node in payload["nodes"].values())
    assert all(path["blocking"] is None and path["char_count"] > 0 for path in payload["paths"])
    out = show_text(record)
    assert "listed sidecars not here: experts, sampling_mask, tokens" in out
    lines = out.splitlines()
    sizes = [line for line in lines if line.startswith("path ") or line.startswith("  ") and "[" in line]
    assert sizes and all("char" in line and " tok" not in line for line in sizes)


def test_damaged_tokens_fall_back_to_message_text(corpus):
    payload = json.loads(show_text(corpus / "broken" / "tr_truncated_sidecar.json.zst", "--json"))
    assert payload["text_only"] == "tokens-unreadable"
    assert "tr_truncated_sidecar.tokens.zst" in payload["tokens_error"]
    assert "truncated" in payload["tokens_error"]


def test_unreadable_record_exits_2(corpus):
    result = run_cli("show", corpus / "broken" / "tr_not_zstd.json.zst")
    assert result.returncode == 2 and "tr_not_zstd.json.zst" in result.stderr
    assert "Traceback" not in result.stderr
    missing = run_cli("show", corpus / "spec" / "tr_nothing")
    assert missing.returncode == 2 and "no such record" in missing.stderr


def test_control_characters_in_record_text_are_escaped(corpus, tmp_path):
    seed = json.loads(decompress_one_frame((corpus / "groups-text" / "tr_g1a0a0.json.zst").read_bytes()))
    seed["id"] = "tr_escape"
    seed["nodes"][0]["message"]["content"] = "red \x1b[31malert\x1b[0m\rover"
    (tmp_path / "tr_escape.json.zst").write_bytes(compress(json.dumps(seed).encode()))
    out = show_text(tmp_path / "tr_escape.json.zst")
    assert ESC not in out and "\r" not in out
    assert "red \\x1b[31malert\\x1b[0m\\x0dover" in out


def on_a_terminal(args, env):
    """Run `show` with stdout on a pseudo-terminal, as an ssh session would."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "skycap_viewer", "show", *map(str, args)],
        stdout=terminal, stderr=subprocess.PIPE, env=env,
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the process is done writing
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.wait(timeout=60) == 0
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_unless_no_color(corpus):
    record = corpus / "real-like" / "tr_86f0b750382298e2.json.zst"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    coloured = on_a_terminal([record], env)
    assert f"{ESC}[32" in coloured  # sampled blocks are green
    assert f"{ESC}[31" in coloured  # replayed blocks are red
    plain = on_a_terminal([record], dict(env, NO_COLOR="1"))
    assert ESC not in plain and "sampled" in plain



def test_painted_header_lines_carry_real_styles_and_escaped_record_text(corpus):
    directory = corpus / "spec"
    document = read_document(directory / "tr_truncated.json.zst")
    document["id"] = "tr_\x1b]0;owned\x07"
    payload = paths_payload(directory, document, set(os.listdir(directory)), "tr_truncated")
    lines = header_lines(payload, 1, Painter(True))
    text = "\n".join(lines)
    assert "\\x1b[" not in text  # styles are painted, never printed escaped
    assert "\x1b[1m" in lines[0] and "tr_\\x1b]0;owned\\x07" in lines[0]  # the record's own ESC is escaped
    flag_lines = [line for line in lines if line.startswith("flag")]
    assert flag_lines and all("\x1b[" in line for line in flag_lines)


def test_show_says_what_decides_what_trained(corpus):
    final = run_cli("show", corpus / "spec" / "tr_final_rule.json.zst").stdout.splitlines()
    assert "trains       final rule (the record's samples): 1 sample, 55 tokens, 11 in the loss" in final
    tokens = run_cli("show", corpus / "spec" / "tr_tokens.json.zst").stdout
    assert "all rule, applied by the viewer (the record has no samples)" in tokens


def test_an_abandoned_record_says_when_it_was_abandoned_not_finished(corpus):
    lines = run_cli("show", corpus / "real-like" / "tr_e3e24d445a7b6334").stdout.splitlines()
    [created] = [line for line in lines if line.startswith("created")]
    assert "  abandoned 2026-11-29T08:31:27.330Z" in created and "finished" not in created
    finished = run_cli("show", corpus / "spec" / "tr_tokens.json.zst").stdout
    assert "  finished " in next(line for line in finished.splitlines() if line.startswith("created"))


def test_show_says_the_sidecars_verdicts_and_marks_the_tokens_out_of_support(corpus):
    """The flags `check` and the band give (the sampling mask's, a damaged sidecar's) are in `show`'s
    header, and each sampled token the mask did not allow is marked in the text, piped as on a terminal."""
    record = corpus / "masks" / "tr_mask_out_of_support.json.zst"
    payload = json.loads(show_text(record, "--json"))
    outside = {node_id: node["outside_support"] for node_id, node in payload["nodes"].items()
               if node["outside_support"]}
    assert outside and "out-of-support" in payload["trajectory"]["flags"]
    text = show_text(record)
    assert "flag         out-of-support (error)" in text
    count = sum(map(len, outside.values()))
    assert f"support      {count} sampled tokens outside the sampling mask's support, marked ⟪⟫ in the text" in text
    shown = sum(line.count("⟪") for line in text.splitlines() if not line.startswith("support"))
    assert 0 < shown <= count  # a later path prints only its new nodes: each node's marks at most once
    forced = show_text(corpus / "masks" / "tr_mask_forced.json.zst")
    assert "flag         forced-run (info)" in forced and "⟪" not in forced
    damaged = show_text(corpus / "broken" / "tr_truncated_sidecar.json.zst")
    assert "flag         malformed-record (error)" in damaged
    assert "problem      tokens sidecar tr_truncated_sidecar.tokens.zst: truncated zstd frame" in damaged
