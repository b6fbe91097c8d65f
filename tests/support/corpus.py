"""Where the skycap v1 corpus lives and how a test takes a private copy of it (tests never write into it)."""

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "skycap-v1"
BROKEN = FIXTURES / "broken"
# `pulled/` (two run-index layouts over byte-for-byte copies of groups/ and groups2/ records) is tested on
# its own, against `pulled-expected.json` (tests/test_run_index.py); it is kept out of the corpus the other
# tests serve and compare with the oracle: its newer layout's record directory is three levels down, where
# discovery does not look, and its records are the same as those of groups/ and groups2/.
PULLED = FIXTURES / "pulled"
NOT_CORPUS = ("pulled", "pulled-expected.json")
FORKED = "tr_86f0b750382298e2"  # a record of `real-like/` whose paths fork


def copy_corpus(target: Path, *ignored: str, **options) -> Path:
    """Copy the corpus the oracle describes (without `pulled/`) to `target`."""
    shutil.copytree(FIXTURES, target, ignore=shutil.ignore_patterns(*NOT_CORPUS, *ignored), **options)
    return target


def copy_runs(root: Path, *runs: str) -> Path:
    """Copy these runs of the corpus (directory names) under `root`."""
    for run in runs:
        shutil.copytree(FIXTURES / run, root / run)
    return root
