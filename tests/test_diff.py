"""`skycap-viewer diff`: the terminal twin of `/v1/compare`, run as a user runs it."""

import json

import pytest

from tests.support.cli import run_cli
from tests.support.common_prefix import expected, node_ids
from tests.support.corpus import FIXTURES
from tests.support.records import write_text_record

GROUPS = FIXTURES / "groups"
PASSED, FAILED = "tr_3c509741a7521e5e", "tr_0e32dadf1ca07c39"  # step 3, instance a: reward 1 and reward 0


def test_the_shared_prefix_is_one_line_then_the_turns_from_the_divergence():
    result = run_cli("diff", GROUPS, PASSED, FAILED)
    assert result.returncode == 0, result.stderr
    want = expected(node_ids("groups", PASSED), node_ids("groups", FAILED))
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"a  {PASSED}  reward 1") and lines[1].startswith(f"b  {FAILED}  reward 0")
    shared = next(line for line in lines if line.startswith("shared"))
    assert f"shared     {want['shared']} tokens" in shared
    assert f"a at {want['a'][0]}+{want['a'][1]}" in shared and f"b at {want['b'][0]}+{want['b'][1]}" in shared
    marked = [line for line in lines if line.startswith(("  a│", "  b│"))]
    assert len(marked) == 2 and all("⟦" in line and "⟧" in line for line in marked)  # no colour in a pipe


@pytest.mark.parametrize("form", ["files", "dir", "dirs"])
@pytest.mark.slow
def test_every_way_of_naming_the_two_records_gives_one_answer(corpus_server, form):
    args = {"files": [GROUPS / f"{PASSED}.json.zst", GROUPS / f"{FAILED}.json.zst"],
            "dir": [GROUPS, PASSED, FAILED],
            "dirs": [GROUPS, PASSED, GROUPS, FAILED]}[form]
    result = run_cli("diff", *args, "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    served = corpus_server.get(f"/v1/compare?a={PASSED}&b={FAILED}&run_a=groups&run_b=groups")
    for side in ("a", "b"):  # the server's headers carry the run's fields beside the record's
        served[side]["trajectory"] = {k: v for k, v in served[side]["trajectory"].items()
                                      if k not in ("run_id", "project", "revision")}
    assert answer == served


def test_paths_are_chosen_and_a_path_there_is_not_is_refused():
    forked = FIXTURES / "spec"
    result = run_cli("diff", forked, "tr_tokens", "tr_tokens", "--path-b", "9")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "path" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [["only-one"], [GROUPS, "tr_nothing", FAILED], ["a", "b", "c", "d", "e"]])
def test_bad_arguments_exit_2_with_one_line(args):
    result = run_cli("diff", *args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_an_id_not_in_the_directory_is_named_with_it():
    result = run_cli("diff", GROUPS, PASSED, "tr_nothing")
    assert result.returncode == 2 and f"no record tr_nothing in {GROUPS}" in result.stderr


def test_two_unrelated_replies_differ_word_by_word(tmp_path):
    write_text_record(tmp_path, "tr_yes", "Is it right?", "Yes, absolutely right.")
    write_text_record(tmp_path, "tr_no", "Is it right?", "No way at all.")
    result = run_cli("diff", tmp_path, "tr_yes", "tr_no")
    lines = [line.split("│ ", 1)[1] for line in result.stdout.splitlines() if "│ " in line]
    assert lines == ["⟦Yes,⟧ ⟦absolutely⟧ ⟦right⟧.", "⟦No⟧ ⟦way⟧ ⟦at all⟧."]  # not ⟦Y⟧es⟦, a⟧b…
