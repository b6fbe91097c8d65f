"""Benchmark a step on one time axis: `python bench/step_timeline.py [--rollouts 10000] [--calls 30] [--steps 1]
[--keep DIR] [--no-browser] [--json]`.

Writes S training steps of N rollouts of C model calls each with the project's writer (small text-mode
records: the lanes read only the calls' times, so the bodies are a few characters), with the trainer's run
index for the step measured, then measures the real server and page as a user meets them: the first part of
`/v1/steps/timeline` when the step is first asked (cold: a fresh server, the run indexed, the step never
asked) and asked again (warm; another sort, a later part), its size, and in headless Chromium the seconds
from navigation to the Timeline view's first frame with its lanes drawn, and the frame rate while the
drawing pans. The load average is reported with the figures: the machine may be shared. `--steps` makes a
bigger run (S x N rollouts) whose middle step is measured: a step's first part must not grow with the run.
"""

import argparse
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

import run as bench  # noqa: E402
import synth  # noqa: E402

from skycap_viewer.catalog.blobs import pack, squeezed, unpack, unsqueezed  # noqa: E402
from skycap_viewer.catalog.groups import DEFAULT_GROUP_BY  # noqa: E402
from skycap_viewer.catalog.index import Snapshot  # noqa: E402
from skycap_viewer.catalog.pool import compute_rows_here  # noqa: E402
from skycap_viewer.catalog.store import RunStore, insert_forms, stored_form  # noqa: E402
from skycap_viewer.demo.writer import RecordBuilder  # noqa: E402
from skycap_viewer.views.record.trajectory import SERVED_PARTS  # noqa: E402
from skycap_viewer.views.run.step_timeline import step_timeline_answer  # noqa: E402
from skycap_viewer.wire import encode_json  # noqa: E402
from tests.support.api_paths import api_path  # noqa: E402

GROUP_SIZE = 8
START = 1_790_000_000.0
REASONS = ["tool_calls"] * 18 + ["stop"] * 1 + ["length"] * 1  # how a call before the last ends


def step_rollout(seed: int, number: int, calls: int, per_step: int) -> RecordBuilder:
    """Rollout `number` of the run (step `number // per_step + 1`): starts within its step's first 30 s, `calls`
    calls of 0.2-6 s, tool time of 0.05-4 s between them, 2% of them with a failed call, the last call `stop`
    (or `length`)."""
    rng = random.Random(seed * 1_000_003 + number)
    task = f"task-{number // GROUP_SIZE:05d}"
    step = number // per_step + 1
    builder = RecordBuilder(f"tr_step{number:07d}", "text",
                            created_at=round(START + 600 * step + rng.uniform(0, 30), 3),
                            meta={"step": step, "instance_id": task, "task_id": task,
                                  "repetition_id": number % GROUP_SIZE},
                            annotations={"reward": rng.choice([0, 1])})
    parent = builder.add_client(None, "user", "solve")
    for turn in range(calls):
        last = turn == calls - 1
        reason = rng.choice(["stop"] * 9 + ["length"]) if last else rng.choice(REASONS)
        if rng.random() < 0.02 / calls:
            builder.add_failure(status=503, error="engine overloaded", pause=rng.uniform(0.5, 3))
        reply = builder.add_model(parent, "ok", finish_reason=reason, duration=rng.uniform(0.2, 6),
                                  pause=rng.uniform(0.05, 4))
        parent = builder.add_client(reply, "tool", "out") if not last else reply
    return builder


class StepBuilders:
    """A rollout's builders with the number of calls and the rollouts a step bound, picklable for the writer's
    worker processes."""

    def __init__(self, calls: int, per_step: int):
        self.calls = calls
        self.per_step = per_step

    def __call__(self, seed: int, number: int) -> list[RecordBuilder]:
        return [step_rollout(seed, number, self.calls, self.per_step)]


def write_index(directory: Path, step: int, rollouts: int, seed: int) -> None:
    """The trainer's run index of `step`: 1% superseded (not trained), 5% more not trained, the rest trained."""
    rng = random.Random(seed)
    rows = []
    for number in range((step - 1) * rollouts, step * rollouts):
        superseded = rng.random() < 0.01
        trained = not superseded and rng.random() >= 0.05
        rows.append({"id": f"tr_step{number:07d}", "instance_id": f"task-{number // GROUP_SIZE:05d}", "attempt": 0,
                     "superseded": superseded, "trained": trained})
    (directory / "index").mkdir(exist_ok=True)
    (directory / "index" / f"step-{step}.json").write_text(json.dumps(
        {"format_version": 1, "phase": "train", "step": step, "rows": rows}))


def timed(server, path: str) -> tuple[float, int, dict]:
    """(seconds, bytes on the wire, the answer) of one GET."""
    started = time.perf_counter()
    status, headers, body = server.fetch(path)
    seconds = time.perf_counter() - started
    answer = server.json(path) if status == 200 else {"status": status}
    return seconds, len(body), answer


def load() -> str:
    """The machine's load average (1, 5, 15 minutes), as /proc/loadavg says it."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def api_figures(server, run_id: str, step: int) -> dict:
    """The first part cold (the step never asked), asked again, under other sorts and a filter; a later part."""
    path = f"{api_path('step_timeline')}?run_id={run_id}&step={step}"
    cold_load = load()
    cold, size, first = timed(server, path)
    warm = [timed(server, path + f"&probe={i}")[0] for i in range(5)]  # a new target each: not the answer cache's
    other_sorts = {key: min(timed(server, path + f"&sort={key}&probe={i}")[0] for i in range(3))
                   for key in ("end", "duration", "reward")}
    filtered = min(timed(server, path + f"&flag=not-trained&probe={i}")[0] for i in range(3))
    later = None
    if first.get("part", {}).get("next") is not None:
        later = min(timed(server, path + f"&from={first['part']['next']}&probe={i}")[0] for i in range(3))
    return {"first_part_cold_s": cold, "load_at_cold": cold_load, "first_part_warm_s": min(warm),
            "first_part_warm_median_s": sorted(warm)[len(warm) // 2], "load_at_warm": load(),
            "other_sorts_s": other_sorts, "not_trained_filter_s": filtered,
            "later_part_s": later, "first_part_bytes_gzip": size,
            "first_part_lanes": len(first.get("lanes", [])), "lanes_total": first.get("lanes_total"),
            "parts": None if not first.get("part") else -(-first["lanes_total"] // max(len(first["lanes"]), 1))}


PAN = """async () => {
  const canvas = document.querySelector(".st-canvas");
  const frames = [];
  let last = performance.now();
  const started = last;
  await new Promise((done) => {
    const tick = (now) => {
      frames.push(now - last);
      last = now;
      canvas.dispatchEvent(new WheelEvent("wheel", {deltaY: 40, shiftKey: true, bubbles: true, cancelable: true}));
      if (now - started < 3000) requestAnimationFrame(tick); else done();
    };
    requestAnimationFrame(tick);
  });
  const painted = frames.slice(1);
  return {frames: painted.length, seconds: (last - started) / 1000, fps: painted.length / ((last - started) / 1000),
    p95_ms: painted.sort((a, b) => a - b)[Math.floor(painted.length * 0.95)]};
}"""


def browser_figures(server, run_id: str, step: int, tries: int) -> dict:
    """Seconds to the first frame with lanes drawn (the lanes already kept by the server), then the pan rate:
    frames a second while every frame pans the drawing (a wheel event, drawn at the next frame)."""
    url = f"{server.url}/#/run/{run_id}/timeline?step={step}"

    def pan(page, shown) -> dict:
        page.wait_for_function("document.querySelector('.st-canvas')?.dataset.to !== undefined", timeout=60_000)
        started = time.perf_counter()
        total = server.json(f"{api_path('step_timeline')}?run_id={run_id}&step={step}")["lanes_total"]
        page.locator(f'.st-lanes button[data-lane="{total - 1}"]').wait_for(
            state="attached", timeout=300_000)  # every part drawn: the pan is measured on the whole step
        every_part = time.perf_counter() - started
        page.locator(".st-canvas").hover()
        page.locator(".st-canvas").click()  # focus, zoomed to see single calls
        for _ in range(4):
            page.keyboard.press("+")
        return {"pan": page.evaluate(PAN), "lanes_listed": page.locator(".st-lanes button.st-lane").count(),
                "every_part_after_first_screen_s": every_part}

    return bench.paint_times(url, ".st-lanes button.st-lane", tries, pan)


TEMPLATES = 200  # real rollouts a big store's rows are made from (`store_figures`)
INSERTED_AT_ONCE = 20_000


def shifted_lane(lane: tuple, seconds: float) -> tuple:
    """A kept lane (`catalog.rows.kept_lane`) moved `seconds` later."""
    start, end, packed = lane
    started_at, ended_at, reward, gap, calls, failures = unpack(unsqueezed(packed))
    calls = [(s + seconds, e + seconds, *rest) for s, e, *rest in calls]
    failures = [(t + seconds, *rest) for t, *rest in failures]
    return (None if start is None else start + seconds, None if end is None else end + seconds,
            squeezed(pack((started_at, ended_at, reward, gap, calls, failures))))


def big_store(path: Path, work: Path, rows: int, per_step: int, calls: int) -> dict:
    """A run's database of `rows` rollouts, `per_step` a step, written with the store's own insert
    (`store.insert_forms`) from the rows and lanes the index computed of `TEMPLATES` real rollouts, each
    step's copies moved to the step's time: the step timeline reads nothing else. Writing and indexing a
    million documents takes hours on two shared cores; this store takes minutes. Its listing indexes are not
    built (the route does not use them)."""
    started = time.perf_counter()
    templates = work / "templates"
    synth.write_parallel(templates, StepBuilders(calls, TEMPLATES), TEMPLATES, 1, None, 50)
    forms = [stored_form(row, DEFAULT_GROUP_BY) for _, row in compute_rows_here(templates, sorted(
        p.name for p in templates.iterdir() if p.name.endswith(".json.zst")))]
    store = RunStore(path, {"bench": "big store"}, DEFAULT_GROUP_BY)
    lanes: dict = {}
    for first in range(0, rows, INSERTED_AT_ONCE):
        batch = []
        for number in range(first, min(first + INSERTED_AT_ONCE, rows)):
            step, which = number // per_step + 1, number % len(forms)
            columns, annotations, text, kinds, copies, lane = forms[which]
            if (step, which) not in lanes:
                lanes[step, which] = shifted_lane(lane, 600 * (step - 1))
            record_id = f"tr_big{number:07d}"
            columns = (record_id, columns[1], step, *columns[3:12], f"{step}~task-{number // GROUP_SIZE:06d}",
                       *columns[13:])
            batch.append((f"{record_id}.json.zst", 1, number, number, (columns, annotations, text, kinds, copies,
                                                                         lanes[step, which])))
        store.begin()
        insert_forms(store.db, batch, False)
        store.db.execute("COMMIT")
        store.in_transaction = False
    identity = store.identity
    store.close()
    return {"rows": rows, "per_step": per_step, "written_s": time.perf_counter() - started,
            "database_mb": path.stat().st_size / 2**20, "identity": identity}


def store_figures(path: Path, identity: str, step: int) -> dict:
    """The first part of a step of the big store, asked of the route's view as the server asks it: cold (a
    new snapshot and connection, the step never asked) and again; with the load average."""
    def snapshot():
        return Snapshot(None, (str(path), identity), 0, False, 0, None, 0, {}, {})

    def asked(fresh, query=""):
        params = {"step": [str(step)], **({key: [value] for key, value in [query.split("=")]} if query else {})}
        started = time.perf_counter()
        answer = step_timeline_answer(fresh, params, SERVED_PARTS)
        encode_json(answer)
        return time.perf_counter() - started, answer

    cold_load = load()
    cold, answer = asked(snapshot())
    kept = snapshot()
    asked(kept)
    warm = sorted(asked(kept)[0] for _ in range(5))
    return {"first_part_cold_s": cold, "load_at_cold": cold_load, "first_part_warm_s": warm[0],
            "first_part_warm_median_s": warm[2], "load_at_warm": load(),
            "end_sort_s": min(asked(kept, "sort=end")[0] for _ in range(3)),
            "not_trained_filter_s": min(asked(kept, "flag=not-trained")[0] for _ in range(3)),
            "lanes_total": answer["lanes_total"], "first_part_lanes": answer["part"]["to"]}


def store_scale(work: Path, args) -> dict:
    """`big_store`'s run measured at its middle step, then with every rollout moved to one step."""
    path = work / "big.sqlite"
    made = big_store(path, work, args.store_rows, args.rollouts, args.calls)
    steps = -(-args.store_rows // args.rollouts)
    results = {"store": made, "step_of_run": store_figures(path, made["identity"], (steps + 1) // 2)}
    started = time.perf_counter()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE lanes SET lane_step = 1")
        db.execute("UPDATE rows SET step = 1")
        db.execute("DELETE FROM lane_steps")
        db.execute("INSERT INTO lane_steps SELECT 1, count(*), 1 FROM lanes")
    results["one_step_made_s"] = time.perf_counter() - started
    results["whole_run_one_step"] = store_figures(path, made["identity"], 1)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--steps", type=int, default=1, help="steps of --rollouts each: the middle one is measured")
    parser.add_argument("--keep", metavar="DIR", help="write the step to DIR and keep it; reused when there")
    parser.add_argument("--tries", type=int, default=3, help="fresh pages timed for the first screen")
    parser.add_argument("--store-rows", type=int, metavar="N",
                        help="instead: a run's database of N rollouts (--rollouts a step) made from real rows, its "
                             "middle step's first part asked of the view, then the whole run made one step")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skycap-step-bench-"))
    if args.store_rows:
        try:
            results = store_scale(work, args)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(results, indent=1) if args.json else "\n".join(f"{k}: {v}" for k, v in results.items()))
        return 0
    directory = Path(args.keep) if args.keep else work / "step"
    step = (args.steps + 1) // 2
    total = args.rollouts * args.steps
    results = {"rollouts": args.rollouts, "calls": args.calls, "steps": args.steps, "run_rollouts": total}
    try:
        if not directory.is_dir() or not any(directory.iterdir()):
            started = time.perf_counter()
            synth.write_parallel(directory, StepBuilders(args.calls, args.rollouts), total, 1, None, 500)
            write_index(directory, step, args.rollouts, 1)
            results["generation_s"] = time.perf_counter() - started
        env = bench.private_env(work)
        with bench.Server(directory, cache=False, env=env) as server:
            results["indexed_s"] = server.wait_listed(total)
            results["load_after_index"] = load()
            run_id = bench.first_run_id(server)
            results["api"] = api_figures(server, run_id, step)
            results["rss_mb"] = server.rss() / 2**20
            if not args.no_browser:
                results["browser"] = browser_figures(server, run_id, step, args.tries)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=1) if args.json else "\n".join(f"{k}: {v}" for k, v in results.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
