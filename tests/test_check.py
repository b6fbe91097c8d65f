"""`skycap-viewer check`, run as a user runs it, on copies of the corpus directories."""

import io
import json
import os
import shutil

import pytest

from skycap_viewer.commands.terminal import Progress
from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.cli import run_cli
from tests.support.oracle import DAMAGED, NOTES, ORACLE, RECORD_DIRS

DAMAGED_IDS = {rid for d, rid, _ in DAMAGED if d == "broken"}
# words the message for each damage must contain: the problem named, not just "bad record"
NAMED_PROBLEM = {
    "tr_bad_dtype": "float32",
    "tr_bad_version": "format_version 2",
    "tr_no_version": "format_version missing",
    "tr_empty_file": "empty file",
    "tr_experts_out_of_range": "experts rows run past",
    "tr_id_mismatch": "differs from its file name",
    "tr_ids_mismatch": "creation order",
    "tr_json_list": "JSON list, not an object",
    "tr_mask_out_of_range": "sampling-mask rows run past",
    "tr_misaligned": "not a multiple of 8",
    "tr_no_id": "no `id`",
    "tr_no_nodes": "no `nodes`",
    "tr_no_status": "no `status`",
    "tr_nodes_swapped": "creation order",
    "tr_not_json": "not JSON",
    "tr_not_zstd": "not a zstd frame",
    "tr_offsets_out_of_range": "tokens [100, 104) run past",
    "tr_parent_out_of_range": "parent 7",
    "tr_shape_too_big": "10000",
    "tr_sidecar_two_frames": "tokens sidecar",
    "tr_text_mid_char": "inside a UTF-8 character",
    "tr_text_out_of_range": "runs past the",
    "tr_truncated_doc": "truncated zstd frame",
    "tr_truncated_sidecar": "truncated zstd frame",
    "tr_two_frames_appended": "after the first zstd frame",
    "tr_two_frames_split": "after the first zstd frame",
    "tr_wrong_file": "tr_elsewhere.tokens.zst",
}


@pytest.fixture()
def broken(corpus, tmp_path):
    target = tmp_path / "broken"
    shutil.copytree(corpus / "broken", target)
    return target


def problem_lines(stdout: str, directory) -> dict[str, str]:
    prefix = f"{directory}/"
    return {
        line[len(prefix) :].split(": ", 1)[0]: line.split(": ", 1)[1]
        for line in stdout.splitlines()
        if line.startswith(prefix) and not line.split(": ", 1)[1].startswith("finding ")
    }


def finding_lines(stdout: str, directory) -> dict[str, list[str]]:
    """Each record's findings (`DIR/ID: finding NAME: why`), by id."""
    found = {}
    for line in stdout.splitlines():
        record, _, rest = line.partition(": finding ")
        if rest and record.startswith(f"{directory}/"):
            found.setdefault(record[len(str(directory)) + 1 :], []).append(rest.split(":", 1)[0])
    return found


def absent_listed_sidecars(directory) -> dict[str, int]:
    """Computed here without the viewer: listed sidecar files not in the directory, per kind."""
    names = set(os.listdir(directory))
    counts = {}
    for name in names:
        if not name.endswith(".json.zst"):
            continue
        try:
            document = json.loads(decompress_one_frame((directory / name).read_bytes()))
            sidecars = document["sidecars"]
            assert document["format_version"] == 1 and isinstance(document["nodes"], list)
            assert document["id"] and document["status"]
        except Exception:  # unreadable documents have no manifest to count
            continue
        for kind, manifest in sidecars.items():
            if manifest["file"] not in names:
                counts[kind] = counts.get(kind, 0) + 1
    return counts


def test_the_expectations_cover_every_damaged_record():
    assert set(NAMED_PROBLEM) == DAMAGED_IDS


def test_broken_flags_every_damaged_record_with_its_problem(broken):
    result = run_cli("check", broken)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    flagged = problem_lines(result.stdout, broken)
    assert set(flagged) == DAMAGED_IDS
    for record_id, message in flagged.items():
        assert NAMED_PROBLEM[record_id] in message, (record_id, NOTES[record_id], message)
    for accepted in ("tr_ok", "tr_future_fields", "tr_bad_call", "tr_missing_tokens", "tr_missing_experts"):
        assert accepted not in flagged


def test_a_record_document_is_checked_alone_as_show_takes_it(broken):
    """`check FILE` checks that one record, with the words and exit status of a directory's check."""
    alone = {record_id: run_cli("check", broken / f"{record_id}.json.zst") for record_id in sorted(DAMAGED_IDS)[:3]}
    whole = problem_lines(run_cli("check", broken).stdout, broken)
    for record_id, result in alone.items():
        assert result.returncode == 1 and result.stderr == "", result.stderr
        assert problem_lines(result.stdout, broken) == {record_id: whole[record_id]}
        assert result.stdout.splitlines()[-1] == f"{broken}: 1 document, 1 with problems"
    good = run_cli("check", broken / "tr_ok.json.zst")
    assert good.returncode == 0 and good.stdout.splitlines() == [f"{broken}: 1 document, 0 with problems"]
    other = run_cli("check", broken / "tr_ok.tokens.zst")  # a sidecar is not a record
    assert other.returncode == 2 and "not a directory or a record document" in other.stderr


def test_what_the_sampling_masks_find_is_a_finding_not_a_problem(corpus):
    """`out-of-support` and `forced-run` (the records' flags the band and the page show) are check's own
    lines, named as the index names them; the exit status stays about the format."""
    masks = corpus / "masks"
    result = run_cli("check", masks)
    assert result.returncode == 0 and problem_lines(result.stdout, masks) == {}
    found = finding_lines(result.stdout, masks)
    assert found == {"tr_mask_forced": ["forced-run"], "tr_mask_out_of_support": ["out-of-support"]}
    assert result.stdout.splitlines()[-1].endswith("0 with problems; findings (not problems): forced-run 1, "
                                                   "out-of-support 1")
    report = json.loads(run_cli("check", masks, "--json").stdout)
    assert report["valid"] is True
    assert {entry["id"]: entry["findings"] for entry in report["directories"][0]["findings"]} == found
    rows = {row["id"]: row for row in run_cli_export_rows(masks)}
    for record_id, names in found.items():  # the same flags the index gives their rows
        assert set(names) <= set(rows[record_id]["flags"])


def run_cli_export_rows(directory) -> list[dict]:
    return [json.loads(line) for line in run_cli("export", directory).stdout.splitlines()]


def test_broken_summary_line_counts_documents_problems_and_absent_sidecars(broken):
    result = run_cli("check", broken)
    summary = [line for line in result.stdout.splitlines() if line.startswith(f"{broken}:")]
    assert len(summary) == 1
    documents = len(ORACLE["broken"]["records"])
    assert f"{documents} documents, {len(DAMAGED_IDS)} with problems" in summary[0]
    absent = absent_listed_sidecars(broken)
    assert absent  # tr_missing_tokens, tr_missing_experts
    assert ", ".join(f"{kind} {n}" for kind, n in sorted(absent.items())) in summary[0]


@pytest.mark.parametrize("name", [d for d in RECORD_DIRS if d != "broken"])
@pytest.mark.slow
def test_every_other_fixture_directory_passes(corpus, name):
    result = run_cli("check", corpus / name)
    assert result.returncode == 0, result.stdout
    records = len(ORACLE[name]["records"])
    noun = "document" if records == 1 else "documents"
    assert result.stdout.splitlines()[-1].startswith(f"{corpus / name}: {records} {noun}, 0 with problems")
    assert problem_lines(result.stdout, corpus / name) == {}


def test_mirrors_count_absent_sidecars_without_complaining(corpus):
    result = run_cli("check", corpus / "mirror-text", corpus / "mirror-training")
    assert result.returncode == 0
    assert "experts 1, sampling_mask 1, tokens 1" in result.stdout.splitlines()[0]
    assert "experts 1, sampling_mask 1" in result.stdout.splitlines()[1]
    assert "tokens" not in result.stdout.splitlines()[1].split("absent")[1]


def test_a_folder_of_record_directories_is_checked_like_runs_are_discovered(corpus):
    result = run_cli("check", corpus)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    summaries = [line for line in lines if " with problems" in line and "/tr_" not in line]
    assert sorted(line.split(":")[0] for line in summaries) == [str(corpus / d) for d in RECORD_DIRS]


def test_damage_to_other_sidecars_is_caught(corpus, tmp_path):
    """Experts and sampling_mask are read only by training; check still opens them."""
    folder = tmp_path / "run"
    folder.mkdir()
    for name in os.listdir(corpus / "broken"):
        if name.startswith("tr_ok."):
            shutil.copy(corpus / "broken" / name, folder / name)
    experts = folder / "tr_ok.experts.zst"
    experts.write_bytes(experts.read_bytes()[:-5])
    mask = folder / "tr_ok.sampling_mask.zst"
    mask.write_bytes(mask.read_bytes() * 2)
    result = run_cli("check", folder)
    assert result.returncode == 1
    message = problem_lines(result.stdout, folder)["tr_ok"]
    assert "experts sidecar tr_ok.experts.zst: truncated zstd frame" in message
    assert "sampling_mask sidecar tr_ok.sampling_mask.zst" in message
    assert "after the first zstd frame" in message


def test_json_output(broken, corpus):
    result = run_cli("check", broken, corpus / "spec", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["valid"] is False
    bad, spec = report["directories"]
    assert bad["directory"] == str(broken)
    assert bad["documents"] == len(ORACLE["broken"]["records"])
    assert {r["id"] for r in bad["records"]} == DAMAGED_IDS
    assert all(r["problems"] and all(isinstance(p, str) for p in r["problems"]) for r in bad["records"])
    assert bad["with_problems"] == len(DAMAGED_IDS)
    assert bad["absent_sidecars"] == absent_listed_sidecars(broken)
    assert spec == {
        "directory": str(corpus / "spec"),
        "symlink_to": None,
        "symlinks": {},
        "documents": len(ORACLE["spec"]["records"]),
        "with_problems": 0,
        "absent_sidecars": {},
        "records": [],
        "findings": [],
    }
    valid = json.loads(run_cli("check", corpus / "spec", "--json").stdout)
    assert valid["valid"] is True


@pytest.mark.parametrize("kind", ["missing", "empty", "no-records"])
def test_unusable_arguments_exit_2_with_one_line(tmp_path, kind):
    target = tmp_path / kind
    if kind != "missing":
        target.mkdir()
    if kind == "no-records":
        (target / "notes.txt").write_text("hello")
        (target / ".tr_x.json.zst.tmp").write_bytes(b"partial")
    result = run_cli("check", target)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and str(target) in result.stderr


def test_no_progress_line_when_stderr_is_not_a_terminal(corpus):
    result = run_cli("check", corpus / "groups")
    assert result.returncode == 0 and result.stderr == ""


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_on_a_terminal_for_large_directories():
    stream = FakeTerminal()
    progress = Progress("checking run", 1000, stream=stream)
    for done in range(1, 1001):
        progress.update(done)
    progress.close()
    written = stream.getvalue()
    assert "\rchecking run: 10/1000" in written and "\rchecking run: 1000/1000" in written
    assert written.endswith("\r")  # the line is wiped, leaving the terminal clean
    small = FakeTerminal()
    Progress("checking run", 20, stream=small).update(20)
    assert small.getvalue() == ""


def test_a_fifo_where_a_sidecar_should_be_is_reported_not_waited_for(corpus, tmp_path):
    shutil.copy(corpus / "broken" / "tr_ok.json.zst", tmp_path / "tr_ok.json.zst")
    os.mkfifo(tmp_path / "tr_ok.tokens.zst")
    result = run_cli("check", tmp_path, timeout=60)
    assert result.returncode == 1
    assert "is a FIFO, not a sidecar file" in problem_lines(result.stdout, tmp_path)["tr_ok"]


def test_a_mirror_that_dropped_kinds_from_the_manifest(corpus, tmp_path):
    """The other mirror design lists left-out kinds in `omitted_sidecars`: absent, not a problem."""
    document = json.loads(decompress_one_frame((corpus / "broken" / "tr_ok.json.zst").read_bytes()))
    document["omitted_sidecars"] = ["experts", "sampling_mask"]
    for kind in document["omitted_sidecars"]:
        del document["sidecars"][kind]
    # nodes keep their offsets into the omitted kinds, as that design writes them
    (tmp_path / "tr_ok.json.zst").write_bytes(compress(json.dumps(document).encode()))
    shutil.copy(corpus / "broken" / "tr_ok.tokens.zst", tmp_path / "tr_ok.tokens.zst")
    result = run_cli("check", tmp_path)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith("(read as absent): experts 1, sampling_mask 1")
