"""Discovery says what it does not serve: skycap records deeper than runs are looked for (a root, its
children, their children) are named once on stderr, and in `/v1/runs`, not skipped without a word."""

from skycap_viewer.catalog.discovery import discover_runs
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.in_process import InProcess
from tests.support.records import copy_record

WHY = ("skycap records three levels below the directory given, deeper than runs are looked for (two levels): "
       "give this directory, or a folder nearer it")


def test_a_record_directory_too_deep_is_named_once_and_in_runs(tmp_path, capsys):
    root = tmp_path / "root"
    for run in (root / "proj" / "job-7", root / "a" / "b" / "job-9"):
        run.mkdir(parents=True)
        copy_record(FIXTURES / "spec", "tr_tokens", run, "tr_tokens")
    deep = root / "a" / "b" / "job-9"
    skipped = []
    assert [run.id for run in discover_runs([root], skipped=skipped)] == ["job-7"]
    assert [(entry.path, entry.why) for entry in skipped] == [(deep, WHY)]
    web = InProcess(root)
    try:
        web.watcher.poll()
        web.watcher.poll()
        assert capsys.readouterr().err.splitlines() == [f"skycap-viewer: {deep}: {WHY}: skipped"]
        runs = web.json("/v1/runs")
        assert [run["id"] for run in runs["data"]] == ["job-7"]
        assert runs["skipped"] == [{"path": str(deep), "why": WHY}]
    finally:
        web.close()
    summary = run_cli("summary", root)
    assert summary.returncode == 0 and summary.stderr.splitlines() == [f"skycap-viewer: {deep}: {WHY}: skipped"]
    assert run_cli("summary", root / "a" / "b").returncode == 0  # given nearer, it is a run


def test_an_entry_that_cannot_be_looked_at_hides_none_of_its_siblings(tmp_path, capsys):
    """A symlink loop beside real runs (`ln -s x ROOT/x`) is named once; the runs are listed everywhere."""
    root = tmp_path / "root"
    for run in ("job-1", "job-2"):
        (root / run).mkdir(parents=True)
        copy_record(FIXTURES / "spec", "tr_tokens", root / run, "tr_tokens")
    (root / "x").symlink_to("x")
    line = f"skycap-viewer: {root / 'x'}: cannot be looked at (Too many levels of symbolic links): skipped"
    skipped = []
    assert [run.id for run in discover_runs([root], skipped=skipped)] == ["job-1", "job-2"]
    assert [entry.line() for entry in skipped] == [line]
    web = InProcess(root)
    try:
        web.watcher.poll()
        web.watcher.poll()
        assert capsys.readouterr().err.splitlines() == [line]
        assert [run["id"] for run in web.json("/v1/runs")["data"]] == ["job-1", "job-2"]
    finally:
        web.close()
    for command in ("summary", "check"):
        result = run_cli(command, root)
        assert result.returncode == 0 and result.stderr.splitlines() == [line], (command, result.stderr)
        assert "job-1" in result.stdout and "job-2" in result.stdout
