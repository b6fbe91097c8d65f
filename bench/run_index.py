"""Write the trainer's run index for a synthetic run of `synth.py`, as a pull writes it: `index/step-<N>.json`
in the record directory, one row per attempt of each rollout of the step (the format:
/work/shared/reference/run-index.md), derived from (seed, rollout number) like the run itself.

What it says: a superseded attempt (a retried rollout's first) was not trained; a group whose finished
final attempts all got one reward was dropped by dynamic sampling (no advantage to learn from): none
of its rows was trained; an attempt that did not finish was not trained; the rest was. Each step also
lists `LOST_SHARE` more rows, whole groups whose records stayed on a node's disk (ids that are not in
the directory): the rows a pull lacks. The huge group is not listed (an index need not list every
record). Every row says where its record lives (`record`: `host` and `path`).
"""

import json
import math
import os
import random
from pathlib import Path

import synth

RUN = "skycap-bench"
PHASE = "train"
LOST_SHARE = 0.02  # rows a step lists beyond the records written, at least one
NODES = 16  # hosts the records are said to live on


def step_path(directory, step: int) -> Path:
    return Path(directory) / "index" / f"step-{step}.json"


def index_row(builder, number: int, superseded: bool, trained: bool) -> dict:
    """One rollout attempt as the trainer lists it (the format's fields, in its order)."""
    meta = builder.meta
    return {"id": builder.id, "instance_id": meta["instance_id"], "repetition_id": meta["repetition_id"],
            "attempt": meta["attempt"], "status": builder.status, "annotations": builder.annotations or None,
            "superseded": superseded, "trained": trained,
            "record": {"host": f"node-{number % NODES}",
                       "path": f"/scratch/skycap/{RUN}/{PHASE}/{builder.id}.json.zst"}}


def dropped(finals) -> bool:
    """Dynamic sampling: a group whose finished final attempts all got one reward teaches nothing."""
    rewards = [builder.annotations.get("reward") for builder in finals if builder.status == "finished"]
    return len(rewards) > 1 and len(set(rewards)) == 1


def group_rows(attempts_by_number: dict[int, list]) -> list[dict]:
    """The rows of one group: each rollout's attempts in order, the last one final."""
    drop = dropped([attempts[-1] for attempts in attempts_by_number.values()])
    rows = []
    for number, attempts in attempts_by_number.items():
        for builder in attempts:
            superseded = builder is not attempts[-1]
            trained = not superseded and not drop and builder.status == "finished"
            rows.append(index_row(builder, number, superseded, trained))
    return rows


def lost_rows(seed: int, step: int, count: int) -> list[dict]:
    """`count` rows of whole groups the directory lacks (their records live only on a node's disk)."""
    rng = random.Random(seed * 104_729 + step)
    rows = []
    for first in range(0, count, synth.GROUP_SIZE):
        group = {first + repetition: [synth.RecordBuilder(
                    f"tr_{rng.getrandbits(64):016x}", annotations={"reward": float(rng.random() < 0.5),
                                                                   "stop_reason": "complete"},
                    meta={"instance_id": f"lost-{step}-{first // synth.GROUP_SIZE}", "repetition_id": repetition,
                          "attempt": 0})]
                 for repetition in range(min(synth.GROUP_SIZE, count - first))}
        rows += group_rows(group)
    return rows


def write_step(directory, step: int, rows: list[dict]) -> None:
    """The step's file, written to a temporary name and renamed in (a reader never sees half of it)."""
    final = step_path(directory, step)
    temporary = final.with_name(f".{final.name}.tmp")
    document = {"format_version": 1, "run": RUN, "phase": PHASE, "step": step, "rows": rows}
    temporary.write_text(json.dumps(document))
    os.replace(temporary, final)


def set_trained(directory, step: int, record_id: str, trained: bool | None) -> None:
    """The step's file written again with one row's `trained` changed (as a trainer rewrites a step)."""
    rows = json.loads(step_path(directory, step).read_text())["rows"]
    for row in rows:
        if row["id"] == record_id:
            row["trained"] = trained
    write_step(directory, step, rows)


def write_one_step(builders, directory, seed: int, step: int, first: int, last: int) -> list[tuple]:
    """The file of one step (its rollouts in [first, last)); (id, trained, superseded) of its rows."""
    rows = []
    for group_first in range(first, last, synth.GROUP_SIZE):
        rows += group_rows({number: builders(seed, number, bodies=False)
                            for number in range(group_first, min(group_first + synth.GROUP_SIZE, last))})
    rows += lost_rows(seed, step, math.ceil(LOST_SHARE * len(rows)))
    write_step(directory, step, rows)
    return [(row["id"], row["trained"], row["superseded"]) for row in rows]


def write_run_index(directory, rollouts: int, *, seed: int = 1, small: bool = False) -> dict[int, list]:
    """The run index of the run `synth.generate` (or, `small`, `generate_small`) wrote into `directory`
    with these `rollouts` and `seed`; {step: [(id, trained, superseded) of each row]}. In this process:
    only headers are drawn (~40 µs a small rollout, ~0.25 ms a realistic one), and the bench calls it
    once its servers' threads ran, when a forked worker could inherit a lock held and never start."""
    (Path(directory) / "index").mkdir(exist_ok=True)
    builders = synth.small_builders if small else synth.rollout_builders
    per_step = synth.GROUP_SIZE * synth.PROMPTS_PER_STEP
    return {first // per_step: write_one_step(builders, directory, seed, first // per_step, first,
                                              min(first + per_step, rollouts))
            for first in range(0, rollouts, per_step)}
