"""`skycap-viewer show RECORD --html`: the rollout's snapshot file on stdout, the same bytes the
server sends for `GET /v1/trajectories/{id}/snapshot` (`views.record.snapshot`)."""

import os
import sys

from skycap_viewer.commands.terminal import plural
from skycap_viewer.errors import UsageError
from skycap_viewer.record.opener import OpenedRecord
from skycap_viewer.views.record.snapshot import record_snapshot
from skycap_viewer.views.record.trajectory import RecordView


def print_snapshot(opened: OpenedRecord, path_index: int | None) -> int:
    """Write the file opening on path `path_index` (0 when not given); a path there is not exits 2, and
    so does a terminal as the output: the file is for a browser, and its record text is not escaped."""
    if sys.stdout.isatty():
        raise UsageError("show --html writes an HTML file, not for a terminal: redirect it (> rollout.html)")
    view = RecordView.of(opened, {}, verified=True)  # the sidecars' flags too
    try:
        body = record_snapshot(view, path_index or 0)
    except IndexError:
        paths = len(view.shown(True).paths)
        raise UsageError(f"--path {path_index}: the record has {plural(paths, 'path')}") from None
    try:
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush is quiet too
    return 0
