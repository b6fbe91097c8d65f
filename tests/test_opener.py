"""One rule for which of a record's sidecars are present, whoever opens the record (`record/opener.py`):
the server and the commands read a thing in a sidecar's place alike, never one calling it missing."""

import json
import os
import shutil

import pytest

from tests.support.cli import run_cli
from tests.support.in_process import InProcess


def directory_in_place(path):
    path.mkdir()


def fifo_in_place(path):
    os.mkfifo(path)


def broken_link_in_place(path):
    path.symlink_to(path.parent / "gone.tokens.zst")


IN_PLACE = {"directory": (directory_in_place, "is a directory"), "fifo": (fifo_in_place, "is a FIFO"),
            "broken-link": (broken_link_in_place, "cannot read the file")}


@pytest.mark.parametrize("kind", IN_PLACE)
def test_a_thing_in_the_tokens_sidecars_place_is_read_alike_by_the_server_show_and_check(corpus, tmp_path, kind):
    make, said = IN_PLACE[kind]
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(corpus / "broken" / "tr_ok.json.zst", run / "tr_ok.json.zst")
    make(run / "tr_ok.tokens.zst")
    with InProcess(run) as web:
        served = web.json("/v1/trajectories/tr_ok/paths")
    shown = run_cli("show", run / "tr_ok.json.zst", "--json", timeout=60)
    assert shown.returncode == 0, shown.stderr
    shown = json.loads(shown.stdout)
    for answer in (served, shown):
        assert answer["text_only"] == "tokens-unreadable", answer["text_only"]
        assert said in answer["tokens_error"], answer["tokens_error"]
    checked = run_cli("check", run, timeout=60)
    assert checked.returncode == 1 and said in checked.stdout, checked.stdout
