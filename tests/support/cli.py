"""The viewer's commands run as a user runs them: `python -m skycap_viewer ARGS` in a subprocess."""

import subprocess
import sys

from tests.support.server_process import AS_A_USER


def run_cli(*args, cwd=None, env=None, timeout=120, as_user=False) -> subprocess.CompletedProcess:
    """Run `python -m skycap_viewer ARGS` as a user would, capturing its output (`as_user`: without root's
    power to read what file permissions refuse)."""
    return subprocess.run(
        [*(AS_A_USER if as_user else []), sys.executable, "-m", "skycap_viewer", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
    )
