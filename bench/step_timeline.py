"""Benchmark a step on one time axis: `python bench/step_timeline.py [--rollouts 10000] [--calls 30] [--keep DIR]
[--no-browser] [--json]`.

Writes one training step of N rollouts of C model calls each with the project's writer (small text-mode
records: the lanes read only the calls' times, so the bodies are a few characters), with the trainer's run
index for it, then measures the real server and page as a user meets them: the first part of
`/v1/steps/timeline` when the step is first asked (every document of the step read) and when it is
kept (another sort, a later part), its size, and in headless Chromium the seconds from navigation to
the Timeline view's first frame with its lanes drawn, and the frame rate while the drawing pans.
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
from tests.support.api_paths import api_path  # noqa: E402

STEP = 1
GROUP_SIZE = 8
START = 1_790_000_000.0
REASONS = ["tool_calls"] * 18 + ["stop"] * 1 + ["length"] * 1  # how a call before the last ends


def step_rollout(seed: int, number: int, calls: int) -> RecordBuilder:
    """Rollout `number` of the step: starts within the step's first 30 s, `calls` calls of 0.2-6 s, tool time
    of 0.05-4 s between them, 2% of them with a failed call, the last call `stop` (or `length`)."""
    rng = random.Random(seed * 1_000_003 + number)
    task = f"task-{number // GROUP_SIZE:05d}"
    builder = RecordBuilder(f"tr_step{number:07d}", "text", created_at=round(START + rng.uniform(0, 30), 3),
                            meta={"step": STEP, "instance_id": task, "task_id": task,
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


def builders(seed: int, number: int, calls: int) -> list[RecordBuilder]:
    return [step_rollout(seed, number, calls)]


class StepBuilders:
    """`builders` with the number of calls bound, picklable for the writer's worker processes."""

    def __init__(self, calls: int):
        self.calls = calls

    def __call__(self, seed: int, number: int) -> list[RecordBuilder]:
        return builders(seed, number, self.calls)


def write_index(directory: Path, rollouts: int, seed: int) -> None:
    """The trainer's run index of the step: 1% superseded (not trained), 5% more not trained, the rest trained."""
    rng = random.Random(seed)
    rows = []
    for number in range(rollouts):
        superseded = rng.random() < 0.01
        trained = not superseded and rng.random() >= 0.05
        rows.append({"id": f"tr_step{number:07d}", "instance_id": f"task-{number // GROUP_SIZE:05d}", "attempt": 0,
                     "superseded": superseded, "trained": trained})
    (directory / "index").mkdir(exist_ok=True)
    (directory / "index" / f"step-{STEP}.json").write_text(json.dumps(
        {"format_version": 1, "phase": "train", "step": STEP, "rows": rows}))


def timed(server, path: str) -> tuple[float, int, dict]:
    """(seconds, bytes on the wire, the answer) of one GET."""
    started = time.perf_counter()
    status, headers, body = server.fetch(path)
    seconds = time.perf_counter() - started
    answer = server.json(path) if status == 200 else {"status": status}
    return seconds, len(body), answer


def api_figures(server, run_id: str) -> dict:
    """The first part cold (every document of the step read), kept, and under another sort; a later part."""
    path = f"{api_path('step_timeline')}?run_id={run_id}&step={STEP}"
    cold, size, first = timed(server, path)
    warm = min(timed(server, path + f"&limit_probe={i}")[0] for i in range(5))  # a new target each: not the
    other_sort = min(timed(server, path + f"&sort=end&probe={i}")[0] for i in range(5))  # answer cache's
    later = None
    if first.get("part", {}).get("next") is not None:
        later = min(timed(server, path + f"&from={first['part']['next']}&probe={i}")[0] for i in range(3))
    return {"first_part_cold_s": cold, "first_part_kept_s": warm, "other_sort_kept_s": other_sort,
            "later_part_kept_s": later, "first_part_bytes_gzip": size,
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


def browser_figures(server, run_id: str, tries: int) -> dict:
    """Seconds to the first frame with lanes drawn (the lanes already kept by the server), then the pan rate:
    frames a second while every frame pans the drawing (a wheel event, drawn at the next frame)."""
    url = f"{server.url}/#/run/{run_id}/timeline?step={STEP}"

    def pan(page, shown) -> dict:
        page.wait_for_function("document.querySelector('.st-canvas')?.dataset.to !== undefined", timeout=60_000)
        started = time.perf_counter()
        total = server.json(f"{api_path('step_timeline')}?run_id={run_id}&step={STEP}")["lanes_total"]
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
    parser.add_argument("--keep", metavar="DIR", help="write the step to DIR and keep it; reused when there")
    parser.add_argument("--tries", type=int, default=3, help="fresh pages timed for the first screen")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skycap-step-bench-"))
    directory = Path(args.keep) if args.keep else work / "step"
    results = {"rollouts": args.rollouts, "calls": args.calls}
    try:
        if not directory.is_dir() or not any(directory.iterdir()):
            started = time.perf_counter()
            synth.write_parallel(directory, StepBuilders(args.calls), args.rollouts, 1, None, 500)
            write_index(directory, args.rollouts, 1)
            results["generation_s"] = time.perf_counter() - started
        env = bench.private_env(work)
        with bench.Server(directory, cache=False, env=env) as server:
            results["indexed_s"] = server.wait_listed(args.rollouts)
            run_id = bench.first_run_id(server)
            results["api"] = api_figures(server, run_id)
            results["rss_mb"] = server.rss() / 2**20
            if not args.no_browser:
                results["browser"] = browser_figures(server, run_id, args.tries)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=1) if args.json else "\n".join(f"{k}: {v}" for k, v in results.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
