"""The floor: what any indexer pays once, every document of a run read, decompressed and parsed, on one
process and on all cores (the bench sets the viewer's cold index beside it), and the cores the bench may use
(`--workers N`). `bench/run.py` and `bench/s3.py` both measure it."""

import json
import multiprocessing
import os
import time
from pathlib import Path

from skycap_viewer.record.document import is_document_name
from skycap_viewer.record.frames import decompress_one_frame


def document_paths(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if is_document_name(p.name))


def parse_documents(paths) -> float:
    """Decompress and parse each document; the CPU seconds that took in this process."""
    started = time.process_time()
    for path in paths:
        with open(path, "rb") as handle:
            json.loads(decompress_one_frame(handle.read()))
    return time.process_time() - started


def floor_one_process(paths) -> float:
    started = time.perf_counter()
    parse_documents(paths)
    return time.perf_counter() - started


def floor_all_cores(paths, workers: int) -> tuple[float, float]:
    """(seconds, CPU seconds of its processes) to parse every document on all cores, the workers started
    before the clock: spawned, not forked (a fork of this process, whose server-watching threads may hold a
    lock, can hang in the child)."""
    chunks = [paths[i : i + 256] for i in range(0, len(paths), 256)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(parse_documents, [[] for _ in range(workers)])
        started = time.perf_counter()
        cpu = sum(pool.imap_unordered(parse_documents, chunks))
        return time.perf_counter() - started, cpu


def cores() -> int:
    """The cores this bench (and the servers and floors it starts) may run on: all, or `--workers N`."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def use_cores(count: int) -> None:
    """`--workers N`: this process and every one it starts (the floors, the server and its workers) run on
    N cores, so the viewer starts N workers and the floor N processes: the scaling, read on any machine."""
    if not hasattr(os, "sched_setaffinity"):
        raise SystemExit("--workers needs a system that sets a process's cores (Linux)")
    available = sorted(os.sched_getaffinity(0))
    if not 1 <= count <= len(available):
        raise SystemExit(f"--workers {count}: between 1 and the {len(available)} cores this bench may use")
    os.sched_setaffinity(0, available[:count])
