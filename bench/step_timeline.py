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
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

import run as bench  # noqa: E402
import synth  # noqa: E402

from skycap_viewer.demo.writer import RecordBuilder  # noqa: E402

GROUP_SIZE = 8
START = 1_790_000_000.0
REASONS = ["tool_calls"] * 18 + ["stop"] * 1 + ["length"] * 1  # how a call before the last ends


def step_rollout(seed: int, number: int, calls: int, per_step: int) -> RecordBuilder:
    """Rollout `number` of the run (step `number // per_step + 1`): starts within its step's first 30 s, `calls`
    calls of 0.2-6 s, tool time of 0.05-4 s between them, 2% of them with a failed call, the last call `stop` (or `length`)."""
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
    path = f"/v1/steps/timeline?run_id={run_id}&step={step}"
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
        total = server.json(f"/v1/steps/timeline?run_id={run_id}&step={step}")["lanes_total"]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--steps", type=int, default=1, help="steps of --rollouts each: the middle one is measured")
    parser.add_argument("--keep", metavar="DIR", help="write the step to DIR and keep it; reused when there")
    parser.add_argument("--tries", type=int, default=3, help="fresh pages timed for the first screen")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skycap-step-bench-"))
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
