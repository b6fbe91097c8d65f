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
from skycap_viewer.views.record.trajectory import WHOLE
from skycap_viewer.views.run.step_timeline import step_timeline_answer
from skycap_viewer.wire import encode_json


def ms_text(value) -> str:
    return "-" if value is None else f"{value:g} ms"


def lane_line(lane: dict, critical: bool) -> str:
    """One rollout's line: id, start, end (ms from the origin), calls, failures, the longest gap."""
    return (f"{safe(lane['trajectory_id'])}  start {ms_text(lane['start_ms'])}  end {ms_text(lane['end_ms'])}"
            f"  calls {len(lane['calls'])}  failures {len(lane['failures'])}"
            f"  longest gap {ms_text(lane['longest_gap_ms'])}" + ("  (critical: ended last)" if critical else ""))


def run_timeline(directory: Path, step: str, run_id: str | None = None, as_json: bool = False) -> int:
    """Print step `step` of the run under `directory`; a bad step is a usage error (exit 2)."""
    catalog = Catalog([directory])
    Watcher(catalog, verify=False).poll()
    snapshot = chosen_run(catalog, directory, run_id)
    try:
        answer = json.loads(encode_json(step_timeline_answer(snapshot, {"step": [step]}, WHOLE)))
    except ApiError as error:
        raise UsageError(error.detail) from None
    if not answer["rollouts"]:
        raise UsageError(f"no rollouts at step {step} in {directory}")
    if as_json:
        print_out(json_text(answer))
        return 0
    print_out(f"step {safe(step)} · {answer['rollouts']} rollouts · span {ms_text(answer['span_ms'])} from "
              f"{answer['origin_at'] or '-'} (times in ms from there; the gaps derived by the viewer)")
    critical = answer["critical"]
    for lane in sorted(answer["lanes"], key=lambda lane: lane["trajectory_id"] != critical):  # stable: by start
        print_out(lane_line(lane, lane["trajectory_id"] == critical))
    return 0
