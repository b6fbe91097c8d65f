"""Where the server's own process spends its CPU during a cold index, in process and without requests.

    python bench/server_profile.py DIR          # a run directory, e.g. one `run.py --rows N --keep` wrote

It indexes DIR as `serve` does (the worker pool writing the rows, the API's run entry prepared at each
publish) into a temporary database, by calling `Watcher.poll` twice in this thread: the cold index, then
the poll that publishes the listing indexes a worker built (each poll lists the directory). It reports
CPU microseconds a record: the whole process (`getrusage`), this thread (the watcher's), and the steps of
this thread, each timed with the thread's CPU clock around the function (unprofiled, so C and Python weigh
what they cost); the rest of the process is the pool's threads (its results and task queue).
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

from skycap_viewer.catalog import index, watcher  # noqa: E402
from skycap_viewer.catalog.persisted import IndexFiles  # noqa: E402
from skycap_viewer.catalog.pool import RowPool  # noqa: E402
from skycap_viewer.server.api import Api  # noqa: E402


def thread_cpu() -> float:
    return time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Timed:
    """Thread CPU seconds spent in some functions (the outermost call of each counted once)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.depth: dict[str, int] = {}

    def wrap(self, owner, attribute: str, label: str):
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            if self.depth.get(label):
                return original(*args, **kwargs)
            self.depth[label] = 1
            started = thread_cpu()
            try:
                return original(*args, **kwargs)
            finally:
                self.depth[label] = 0
                self.seconds[label] = self.seconds.get(label, 0.0) + thread_cpu() - started

        setattr(owner, attribute, timed)


STEPS = [  # (owner, attribute, label): what the watcher thread does, as the docs' table names it
    (watcher, "scan_directory", "listing the directory (scan_directory), both polls"),
    (watcher, "list_names", "listing the directory's names (list_names), first poll"),
    (watcher.Watcher, "index_run", "the batch (index_run)"),
    (index.IndexedRun, "store_rows", "- the rows' versions noted (store_rows)"),
    (watcher.GroupsElsewhere, "send", "- its groups: keys sent (send)"),
    (watcher.GroupsElsewhere, "keep_finished", "- its groups: answers taken (keep_finished)"),
    (watcher.Watcher, "publish_prepared", "- publishing, with the run entry (publish_prepared)"),
    (index.IndexedRun, "facts_now", "-- of which the run's facts counted (facts_now)"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    timed = Timed()
    for owner, attribute, label in STEPS:
        if hasattr(owner, attribute):
            timed.wrap(owner, attribute, label)
    with tempfile.TemporaryDirectory(prefix="skycap-server-profile-") as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        catalog = index.Catalog([args.directory.resolve()], IndexFiles(Path(cache)))
        api = Api(catalog)
        pool = RowPool()
        watching = watcher.Watcher(catalog, compute_rows=pool.compute_rows, verify=False, prepare=api.run_entry,
                                   offload=pool.submit, stored_forms=True)
        load_before = os.getloadavg()[0]
        process, thread, wall = process_cpu(), thread_cpu(), time.monotonic()
        try:
            watching.poll()
            for run in catalog.runs.values():  # the second poll publishes the indexes a worker built
                if run.indexes_building is not None:
                    run.indexes_building.result()
            watching.poll()
            process, thread, wall = process_cpu() - process, thread_cpu() - thread, time.monotonic() - wall
        finally:
            pool.close()
        records = sum(run.store.row_count() for run in catalog.runs.values())
        api.searches.close()
    per = 1e6 / max(records, 1)
    figures = {"records": records, "wall_s": round(wall, 2), "load_average": [load_before, os.getloadavg()[0]],
               "the process, all threads": process * per, "the watcher thread": thread * per,
               **{label: seconds * per for label, seconds in timed.seconds.items()},
               "the pool's threads (the process less the watcher thread)": (process - thread) * per}
    if args.json:
        print(json.dumps(figures))
    else:
        for name, value in figures.items():
            print(f"{name}: {value:.1f} µs a record" if name not in ("records", "wall_s", "load_average")
                  else f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
