"""A run whose step 3 holds three rollouts with known call times, and a run index for the step: what
the step timeline (`/v1/steps/timeline`, its view and `skycap-viewer timeline`) is checked against.

Fixed clock from T0; as lanes, in ms from the step's origin (T0, tr_step_a's `created_at`):
- tr_step_a (task t1, reward 1): calls 1000–3000 (stop) and 5000–6000 (tool_calls), finished 7000;
  the longest time between its calls 2000. Trained.
- tr_step_c (task t2, reward 0): created 500, a call 500–1500 (stop), finished 2000. Superseded, not trained.
- tr_step_b (task t1, reward 0.5, status failed): created 2000, a call 2000–4000 cut at max tokens
  (length), a failure at 7000 (504), finished 12000: it ends last, the step's critical rollout. Not
  trained (and not superseded: the `not-trained` flag).
- tr_step_d at step 4 (another step: never a lane of step 3).
"""

import json
from pathlib import Path

from skycap_viewer.demo.writer import RecordBuilder

T0 = 1_790_000_000.0
STEP = 3
BY_START = ["tr_step_a", "tr_step_c", "tr_step_b"]  # lanes in the default order
CRITICAL = "tr_step_b"


def rollout(directory: Path, record_id: str, *, created: float, calls: list, failure_at: float | None = None,
            finished: float, task: str = "t1", reward=0, step: int = STEP, status: str = "finished"):
    """One rollout: `calls` as (start, end, finish_reason) in seconds after T0."""
    builder = RecordBuilder(record_id, "text", meta={"step": step, "instance_id": task, "task_id": task},
                            annotations={"reward": reward}, status=status, created_at=T0 + created)
    parent = builder.add_client(None, "user", "solve it")
    for start, end, reason in calls:
        builder.clock = T0 + start
        reply = builder.add_model(parent, f"reply at {start}", finish_reason=reason, duration=end - start)
        parent = builder.add_client(reply, "tool", "result")
    if failure_at is not None:
        builder.clock = T0 + failure_at
        builder.add_failure(status=504, error="upstream timeout " + "x" * 500)
    builder.clock = T0 + finished
    builder.write(directory)


def write_step_run(directory: Path, with_index: bool = True) -> Path:
    """Write the run into `directory` (made if needed), with its run index unless `with_index` is False."""
    directory.mkdir(parents=True, exist_ok=True)
    rollout(directory, "tr_step_a", created=0, calls=[(1, 3, "stop"), (5, 6, "tool_calls")], finished=7, reward=1)
    rollout(directory, "tr_step_b", created=2, calls=[(2, 4, "length")], failure_at=7, finished=12, reward=0.5,
            status="failed")
    rollout(directory, "tr_step_c", created=0.5, calls=[(0.5, 1.5, "stop")], finished=2, task="t2")
    rollout(directory, "tr_step_d", created=0, calls=[(0, 30, "stop")], finished=40, step=4)
    if with_index:
        rows = [{"id": "tr_step_a", "instance_id": "t1", "attempt": 0, "superseded": False, "trained": True},
                {"id": "tr_step_b", "instance_id": "t1", "attempt": 0, "superseded": False, "trained": False},
                {"id": "tr_step_c", "instance_id": "t2", "attempt": 0, "superseded": True, "trained": False}]
        (directory / "index").mkdir(exist_ok=True)
        (directory / "index" / f"step-{STEP}.json").write_text(json.dumps(
            {"format_version": 1, "run": "steps", "phase": "train", "step": STEP, "rows": rows}))
    return directory
