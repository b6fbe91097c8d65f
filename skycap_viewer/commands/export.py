"""`skycap-viewer export DIR [filters] > out.jsonl`: the rows a listing's filters keep, as JSON lines.

The directory is indexed as the server indexes it (runs discovered alike, a temporary index of the
same rows, flags and run index, the sidecars read as the server's verification reads them), then the lines are
written exactly as `/v1/trajectories/export` sends them for the same filters (`views/run/export.py`): the
options are the API's parameters, parsed and refused by the same code. On a terminal, characters
that could restyle it are written as JSON escapes (the same JSON values).
"""

import codecs
import os
import sys
from pathlib import Path

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.pool import compute_rows_here
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.commands.terminal import JSON_UNSAFE
from skycap_viewer.errors import ApiError, UsageError
from skycap_viewer.views.run.export import ExportAsk, exported, spooled_rows

PARAMETERS = ("run_id", "step", "task_id", "status", "annotation", "q", "reward_min", "reward_max", "flag",
              "exclude_flag", "trained", "sort", "order", "format")  # the API's names, `--task-id` and so on


def export_params(args) -> dict:
    """The command's options as the API's query parameters (`{name: [values]}`)."""
    params = {}
    for name in PARAMETERS:
        value = getattr(args, name)
        if value is not None:
            params[name] = value if isinstance(value, list) else [value]
    return params


def chosen_run(catalog: Catalog, directory: Path, run_id: str | None):
    """The snapshot of the run to export: the one under `directory`, or `run_id` among several."""
    snapshots = {snapshot.id: snapshot for snapshot in catalog.snapshots()}
    if not snapshots:
        raise UsageError(f"no skycap records (*.json.zst) under {directory}")
    if run_id is None:
        if len(snapshots) > 1:
            raise UsageError(f"{directory} holds {len(snapshots)} runs: pick one with --run-id "
                             f"({', '.join(sorted(snapshots))})")
        return next(iter(snapshots.values()))
    if run_id not in snapshots:
        raise UsageError(f"no run {run_id} under {directory} (runs: {', '.join(sorted(snapshots))})")
    return snapshots[run_id]


def terminal_safe(pieces):
    """The pieces with characters that could move or restyle a terminal escaped, pieces cut anywhere."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    for piece in pieces:
        yield JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", decoder.decode(piece)).encode()


def verified_rows(directory, names):
    """Every row computed with its sidecars read: the flags the server's rows carry once verified."""
    return compute_rows_here(directory, names, verify=True)


def run_export(directory: Path, params: dict) -> int:
    """Write the export of the run under `directory` to stdout; bad filters are a usage error (exit 2)."""
    try:
        ask = ExportAsk.parse(params)
    except ApiError as error:
        raise UsageError(error.detail) from None
    catalog = Catalog([directory])
    Watcher(catalog, compute_rows=verified_rows, verify=False).poll()  # verified as it goes, not after
    snapshot = chosen_run(catalog, directory, (params.get("run_id") or [None])[-1])
    spool = spooled_rows(snapshot, ask)
    out = sys.stdout.buffer
    pieces = exported(spool, snapshot.location.path, ask)
    try:
        for piece in terminal_safe(pieces) if out.isatty() else pieces:
            out.write(piece)
        out.flush()
    except BrokenPipeError:  # `export ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    finally:
        spool.close()
    return 0
