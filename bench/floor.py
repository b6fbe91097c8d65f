"""The floor: what any indexer pays once, every document of a run read, decompressed and parsed, on one
process and on all cores (the bench sets the viewer's cold index beside it). `bench/run.py` and `bench/s3.py`
both measure it."""

import json
import multiprocessing
import time
from pathlib import Path

from skycap_viewer.record.document import is_document_name
from skycap_viewer.record.frames import decompress_one_frame


def document_paths(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if is_document_name(p.name))


def parse_documents(paths) -> int:
    for path in paths:
        with open(path, "rb") as handle:
            json.loads(decompress_one_frame(handle.read()))
    return len(paths)


def floor_one_process(paths) -> float:
    started = time.perf_counter()
    parse_documents(paths)
    return time.perf_counter() - started


def floor_all_cores(paths, workers: int) -> float:
    """Every document parsed on all cores, the workers started before the clock: spawned, not forked (a fork
    of this process, whose server-watching threads may hold a lock, can hang in the child)."""
    chunks = [paths[i : i + 256] for i in range(0, len(paths), 256)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(parse_documents, [[] for _ in range(workers)])
        started = time.perf_counter()
        sum(pool.imap_unordered(parse_documents, chunks))
        return time.perf_counter() - started
