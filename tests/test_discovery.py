"""Discovery says what it does not serve: skycap records deeper than runs are looked for (a root, its
children, their children) are named once on stderr, and in `/v1/runs`, not skipped without a word."""

from skycap_viewer.catalog.discovery import discover_runs
from tests.badrecords import copy_record
from tests.conftest import FIXTURES, run_cli
from tests.test_web import InProcess

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
        web.server.api.searches.close()
        web.server.server_close()
    summary = run_cli("summary", root)
    assert summary.returncode == 0 and summary.stderr.splitlines() == [f"skycap-viewer: {deep}: {WHY}: skipped"]
    assert run_cli("summary", root / "a" / "b").returncode == 0  # given nearer, it is a run
