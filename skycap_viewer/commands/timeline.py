"""`skycap-viewer timeline DIR --step S [--json]`: one step's rollouts on one time axis, in a terminal.

What an engineer pastes into an incident note: one line per rollout (its id, start and end in ms from
the step's origin, calls, failures, the longest time between its calls), the critical rollout (the one
that ended last) first, then the rest by start. The directory is indexed as the server indexes it
(documents only; `catalog/`), and the lanes are `/v1/steps/timeline`'s (`views/run/step_timeline.py`), so
the command and the page say the same; `--json` prints the answer whole. Record text is escaped.
"""

import json
from pathlib import Path

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.commands.export import chosen_run
from skycap_viewer.commands.terminal import json_text, print_out, safe
from skycap_viewer.errors import ApiError, UsageError
from skycap_viewer.record.fields import iso_time
from skycap_viewer.views.record.trajectory import WHOLE
from skycap_viewer.views.run.listing import Filters
from skycap_viewer.views.run.step_timeline import kept_ids, step_timeline, step_version, timeline_part
from skycap_viewer.wire import encode_json


def ms_text(value) -> str:
    return "-" if value is None else f"{value:g} ms"


def lane_line(lane, critical: bool) -> str:
    """One rollout's line: id, start, end (ms from the origin), calls, failures, the longest gap."""
    return (f"{safe(lane.trajectory_id)}  start {ms_text(lane.start_ms)}  end {ms_text(lane.end_ms)}"
            f"  calls {lane.calls}  failures {lane.failures}  longest gap {ms_text(lane.longest_gap_ms)}"
            + ("  (critical: ended last)" if critical else ""))


def run_timeline(directory: Path, step: str, run_id: str | None = None, as_json: bool = False) -> int:
    """Print step `step` of the run under `directory`; a bad step is a usage error (exit 2)."""
    params = {"step": [step]}
    try:
        filters = Filters.parse(params)
    except ApiError as error:
        raise UsageError(error.detail) from None
    catalog = Catalog([directory])
    Watcher(catalog, verify=False).poll()
    snapshot = chosen_run(catalog, directory, run_id)
    timeline = step_timeline(snapshot, filters.step, step_version(snapshot, filters.step))
    if not timeline.lanes and not timeline.skipped:
        raise UsageError(f"no rollouts at step {step} in {directory}")
    if as_json:
        answer = timeline_part(timeline, kept_ids(snapshot, filters), "start", "asc", 0, WHOLE)
        print_out(json_text(json.loads(encode_json(answer))))
        return 0
    print_out(f"step {safe(step)} · {len(timeline.lanes)} rollouts · span {ms_text(timeline.span_ms)} from "
              f"{iso_time(timeline.origin) or '-'} (times in ms from there; the gaps derived by the viewer)")
    lanes = sorted(timeline.lanes, key=lambda lane: lane.trajectory_id != timeline.critical)  # stable: by start
    for lane in lanes:
        print_out(lane_line(lane, lane.trajectory_id == timeline.critical))
    for skipped in timeline.skipped:
        print_out(f"{safe(skipped['trajectory_id'])}  not read: {safe(str(skipped['why']))}")
    return 0
