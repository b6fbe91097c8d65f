"""`skycap-viewer grep` as a user runs it: output, exit codes, --json, options, escaping."""

import json

import pytest

from tests.support.agent_records import REUSED, write_reused_ids
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.search_records import CATASTROPHIC, MADE, made_record, raw_nodes


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("grep") / "run"
    directory.mkdir()
    for step, (record_id, texts) in enumerate(MADE.items()):
        made_record(directory, record_id, *texts, step=step)
    return directory


def json_hits(*args) -> list[dict]:
    result = run_cli("grep", *args, "--json")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_every_hit_is_printed_in_record_order_with_its_place(run):
    result = run_cli("grep", run, "answer")
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    nodes = raw_nodes(run)
    assert len(lines) == sum(text.casefold().count("answer") for text, _, _, _ in nodes.values())
    assert lines[0] == f'{run}/tr_made_1:n2:assistant:message:7-13: think: answer\\nlookup_answer({{"q": "answer"}})'
    records = [line[len(str(run)) + 1 :].split(":")[0] for line in lines]
    assert records == sorted(records)


def test_json_has_the_apis_fields_and_the_run(run):
    hits = json_hits(run, "answer")
    nodes = raw_nodes(run)
    for hit in hits:
        assert set(hit) == {"trajectory_id", "node_id", "role", "kind", "in", "start", "end", "snippet", "run"}
        assert hit["run"] == str(run) and hit["in"] == "message"  # text-mode records: their message text
        text, role, kind, _ = nodes[hit["trajectory_id"], hit["node_id"]]
        assert text[hit["start"] : hit["end"]].casefold() == "answer" and (hit["role"], hit["kind"]) == (role, kind)


def test_what_the_model_sampled_is_found_as_the_path_tab_shows_it():
    """A tool call sampled as `CALL:search:{}` is found by that text; `--in message` finds its message form."""
    run = FIXTURES / "real-like"
    sampled = run_cli("grep", run, "CALL:search")
    assert sampled.returncode == 0 and sampled.stdout.splitlines() == [
        f"{run}/tr_75f4b514aac0a32f:n2:assistant:tokens:13-24: <s>assistant\\nCALL:search:{{}}</s>"]
    assert run_cli("grep", run, "CALL:search", "--in", "message").returncode == 1
    parsed = json_hits(run, "search({})", "--in", "message")
    assert [(h["trajectory_id"], h["node_id"], h["in"]) for h in parsed] == [("tr_75f4b514aac0a32f", "n2", "message")]
    assert run_cli("grep", run, "search({})").returncode == 1  # the shown text holds the sampled form only


@pytest.mark.slow
def test_options(run):
    assert {h["kind"] for h in json_hits(run, "answer", "--kind", "replayed")} == {"replayed"}
    assert {h["role"] for h in json_hits(run, "answer", "--role", "tool")} == {"tool"}
    assert [h["snippet"]["match"] for h in json_hits(run, "Answer", "--case")] == ["Answer"]
    assert [h["snippet"]["match"] for h in json_hits(run, "strasse")] == ["Straße", "STRASSE"]
    assert [h["snippet"]["match"] for h in json_hits(run, r"\d\d", "--regex")] == ["42", "31"]


@pytest.mark.slow
def test_exit_codes(run):
    assert run_cli("grep", run, "no-such-text").returncode == 1
    bad = run_cli("grep", run, "(a", "--regex")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == "skycap-viewer: bad regex: missing ), unterminated subpattern at position 0\n"
    for regex in ("a{4294967296}", "(" * 499 + "a" + ")" * 499):  # raise other errors than re.error
        bad = run_cli("grep", run, regex, "--regex")
        assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1
        assert bad.stderr.startswith("skycap-viewer: bad regex: ")
    assert run_cli("grep", run).returncode == 2  # no pattern
    assert run_cli("grep", run / "nope", "a").returncode == 2
    assert run_cli("grep", run, "a", "--kind", "nope").returncode == 2


def test_control_characters_are_escaped(run):
    result = run_cli("grep", run, "red")
    assert result.returncode == 0
    assert "\x1b" not in result.stdout and "escape \\x1b[31mred\\x1b[0m answer" in result.stdout
    raw = run_cli("grep", run, "red", "--json").stdout
    assert "\x1b" not in raw and "\\u001b[31m" in raw


def test_a_catastrophic_regex_skips_the_document_and_says_so(tmp_path):
    made_record(tmp_path, CATASTROPHIC, "a" * 40 + "b", "aaa", "aaa", step=0)
    made_record(tmp_path, "tr_fine", "fine", "aaa", "aaa", step=0)
    result = run_cli("grep", tmp_path, "(a+)+$", "--regex", timeout=60)
    assert result.returncode == 0 and {line.split(":")[0] for line in result.stdout.splitlines()} == {
        f"{tmp_path}/tr_fine"}
    assert result.stderr == (f"skycap-viewer grep: {tmp_path}/{CATASTROPHIC}: skipped: matching took longer "
                             "than 2 s, the limit per document\n")


def test_a_tool_call_id_is_found_on_its_call_and_its_result(tmp_path):
    """The renderer prints no id (`CALL:read:{...}`), yet the id is what one chases a pairing by."""
    nodes = write_reused_ids(tmp_path)
    hits = json_hits(tmp_path, "call_9")
    assert [(h["node_id"], h["in"], h["start"], h["end"]) for h in hits] == [(f"n{nodes['orphan']}", "tool_call_ids",
                                                                            0, 6)]
    every = json_hits(tmp_path, "call_0")
    assert len(every) == 2 * len(nodes["rounds"]) + 3  # each call and each result naming it, once per node
    result = run_cli("grep", tmp_path, "call_9")
    assert result.stdout.splitlines() == [f"{tmp_path}/{REUSED}:n{nodes['orphan']}:tool:tool_call_ids:0-6: call_9"]
