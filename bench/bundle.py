"""Benchmark `skycap-viewer bundle`: `python bench/bundle.py [--rollouts 2000] [--keep DIR] [--json]`.

Writes a realistic run of `--rollouts` rollouts with `synth.py` (no huge pair, so the bundle keeps them
all: its default `--max-rollouts` is 2,000), then bundles the whole run, as a folder and as a zip, with
the real command in a process of its own, and says what it took: the seconds from launch to exit (the
run indexed in process, the kept rollouts' sidecars verified, every answer written), the bundle's size
on disk and as files, what one rollout's drawer takes, and the records' own size for scale.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

import synth  # noqa: E402

MIB = 2**20


def folder_figures(folder: Path) -> dict:
    """Files and bytes of the bundle, the page's files apart from the answers."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    data = [path.stat().st_size for path in files if path.parent.name == "data"]
    return {"files": len(files), "mib": round(sum(path.stat().st_size for path in files) / MIB, 1),
            "answers": len(data), "answers_mib": round(sum(data) / MIB, 1),
            "largest_answer_kib": round(max(data, default=0) / 1024, 1),
            "median_answer_kib": round(statistics.median(data) / 1024, 2) if data else None}


def timed_bundle(run: Path, out: Path, *extra: str) -> tuple[float, str]:
    """Seconds the command took, from launch to exit, and what it said."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "skycap_viewer", "bundle", str(run), "-o", str(out), *extra],
                          capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"bundle failed: {done.stderr}")
    return round(seconds, 1), done.stderr.strip()


def measure(run: Path, work: Path) -> dict:
    records = sorted(run.glob("*.json.zst"))
    record_bytes = sum(path.stat().st_size for path in run.iterdir() if path.is_file())
    kept = str(len(records))  # a retried rollout's attempts are records of their own
    folder_s, said = timed_bundle(run, work / "bundle", "--max-rollouts", kept)
    zip_s, _ = timed_bundle(run, work / "bundle.zip", "--max-rollouts", kept, "--zip")
    figures = folder_figures(work / "bundle")
    return {"rollouts": len(records), "records_mib": round(record_bytes / MIB, 1), "write_s": folder_s,
            "write_zip_s": zip_s, "zip_mib": round((work / "bundle.zip").stat().st_size / MIB, 1),
            "per_rollout_kib": round(figures["answers_mib"] * 1024 / max(len(records), 1), 1),
            **figures, "said": said, "load": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=2000)
    parser.add_argument("--keep", type=Path, help="write the run here and keep it; reused when there")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skycap-bundle-bench-") as temporary:
        work = Path(temporary)
        run = args.keep or work / "run"
        if not any(run.glob("*.json.zst")):
            synth.generate(run, args.rollouts, huge=False)
        figures = measure(run, work)
    if args.json:
        print(json.dumps(figures))
        return 0
    for name, value in figures.items():
        print(f"{name:>20}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
