"""The polling thread that keeps the catalog in step with the disk.

Every couple of seconds it rediscovers runs under the roots and lists each record directory
(one stat per document); only new or changed documents are read. It is the only code that
touches the disk for listings: requests read the snapshots it publishes.
"""

import os
import threading
import time

from skycap_viewer.catalog.discovery import discover_runs, say_skipped
from skycap_viewer.catalog.index import (
    Catalog,
    Changes,
    IndexedRun,
    directory_updated_at,
    scan_directory,
    version_size,
)
from skycap_viewer.catalog.pool import compute_rows_here
from skycap_viewer.printable import say

POLL_SECONDS = 2.0
PUBLISH_SECONDS = 0.5  # while indexing, rows appear at least this often...
PUBLISH_COST_FACTOR = 10  # ...or, for a big run, so that publishing takes at most a tenth of the time
HUGE_LISTING_SECONDS = 0.25  # a directory taking longer to list (~100k documents) is not listed every poll...
FULL_LISTING_SECONDS = 30.0  # ...unless its mtime moved, or this long passed...
SETTLED_MTIME_SECONDS = 2.0  # ...and an mtime this recent when listed is not trusted to move on the next change
STORE_BATCH = 64  # rows written together (a worker's chunk)
VERIFY_BATCH = 512  # documents whose sidecars are checked per poll at most, once indexing is done...
VERIFY_SECONDS = 1.0  # ...fewer when they take long: a batch takes about this long, so a change waits no longer
VERIFY_FIRST = 32  # the first batch, before its cost is known


class Watcher(threading.Thread):
    def __init__(self, catalog: Catalog, interval: float = POLL_SECONDS, compute_rows=compute_rows_here,
                 verify: bool = True, prepare=None):
        super().__init__(name="skycap-viewer-watcher", daemon=True)
        self.catalog = catalog
        self.interval = interval
        self.compute_rows = compute_rows  # e.g. pool.RowPool.compute_rows
        self.verify = verify  # check every record's sidecars in the background (--no-verify: only reported ones)
        self.verify_cost: float | None = None  # seconds a document's verification took in the last batch
        self.prepare = prepare  # prepare(snapshot): what every request asks of a new snapshot, computed here
        self.stopped = threading.Event()
        self.missing_roots: set = set()  # roots found gone (said once)
        self.said_skipped: set = set()  # directories not served (another tool's, or too deep): said once
        self.discovered = threading.Event()  # set once the first poll has published the runs it found
        self.listing_seconds = 0.0  # what the last poll took to discover the runs and list their directories

    def run(self):
        while not self.stopped.is_set():
            try:
                self.poll()
            except Exception as error:  # a bug must not stop live updates; say it once per poll
                say(f"skycap-viewer: watcher: {type(error).__name__}: {error}")
            # a huge run takes a while to stat: never spend more than about half the time scanning (reading
            # what changed is not scanning: after a long index, records written meanwhile show at the next poll)
            self.stopped.wait(max(self.interval, 2 * self.listing_seconds))

    def stop(self):
        self.stopped.set()

    def poll(self):
        """One pass: rediscover runs, list each, read what changed, publish."""
        catalog = self.catalog
        started = time.monotonic()
        self.report_roots()
        skipped = []
        locations = discover_runs(catalog.roots, catalog.known_ids(), skipped)
        say_skipped(skipped, self.said_skipped)
        if tuple(skipped) != catalog.skipped:  # `/v1/runs` says them: a new generation to say it
            catalog.skipped = tuple(skipped)
            catalog.publish([], set())
        previous = set(catalog.runs)
        fresh = catalog.set_runs(locations)
        if fresh:  # listed at once, before their directories are even listed: as indexing, unless reopened
            catalog.publish(fresh, {run.location.id for run in fresh if not run.reopened})
        self.discovered.set()
        runs = list(catalog.runs.values())
        work, touched = [], []
        for run in runs:
            changes, facts_changed = self.list_run(run)
            if changes:
                work.append((run, changes))
            if facts_changed or changes.removed or run.snapshot is None:
                touched.append(run)
        self.listing_seconds = time.monotonic() - started
        pending = {run.location.id for run, _ in work if not run.indexed_once}
        if touched or set(catalog.runs) != previous:
            catalog.publish(touched, pending)
        work.sort(key=lambda item: sum(version_size(item[0].changed[n]) for n in item[1].compute))
        for run, changes in work:
            self.index_run(run, changes, pending)
        for run in runs:
            run.indexed_once = True
        if not work:  # the lowest priority: only once nothing is left to index
            self.verify_some(runs)

    def verify_some(self, runs: list[IndexedRun]):
        """Read and check a batch of rows' sidecars, as `check` does; a damaged record gets its problem.

        A batch per poll, so new records are indexed first and a request never waits on it; what is
        verified is kept in the run's database, so a restart goes on where it stopped."""
        for run in runs:
            names = run.unverified(self.verify_batch() if self.verify else 0)
            if not names:
                continue
            started = time.monotonic()
            for name, row in self.compute_rows(run.directory, names, verify=True):
                if name in run.versions and name not in run.changed:  # not changed meanwhile
                    run.mark_verified(name, row)
                if self.stopped.is_set():
                    break
            self.verify_cost = (time.monotonic() - started) / len(names)
            self.catalog.publish([run], set())

    def verify_batch(self) -> int:
        """How many documents the next verification batch holds: as many as take `VERIFY_SECONDS` at
        the last batch's cost per document (a run of big records verifies a few at a time, so records
        written meanwhile are listed at the next poll, not after thousands of sidecars are read)."""
        if self.verify_cost is None:
            return VERIFY_FIRST
        return max(1, min(VERIFY_BATCH, int(VERIFY_SECONDS / max(self.verify_cost, 1e-6))))

    def report_roots(self):
        """Say once when a directory given on the command line goes away, and when it is back."""
        for root in self.catalog.roots:
            present = root.is_dir()
            if present == (root in self.missing_roots):
                self.missing_roots.symmetric_difference_update({root})
                news = "is back" if present else "is gone; its runs are not listed until it is back"
                say(f"skycap-viewer: {root}: the directory {news}")

    def list_run(self, run: IndexedRun):
        """(changes, whether the run's own facts changed) after listing its directory.

        A huge directory (its listing takes a while) whose own mtime has not moved is listed again only
        now and then: skycap replaces files by renaming them in, which moves it, so new and rewritten
        records still show at the next poll, and only a copy written in place waits for the next full
        listing (`FULL_LISTING_SECONDS`, or ten times the listing's cost). An mtime that was recent when
        listed is not relied on (`settled`): the next poll lists again. The run index files the
        trainer wrote (`index/`) are listed first, so the rows read next get what they say."""
        index_changed = run.update_run_index()
        listed_at = time.time_ns()
        try:
            moved = os.stat(run.directory).st_mtime_ns  # before listing: a change during it shows next time
        except OSError:
            moved = None
        if (moved is not None and moved == run.listed_mtime and run.listing_cost > HUGE_LISTING_SECONDS
                and time.monotonic() < run.next_full_listing):
            return Changes([], []), index_changed
        started = time.monotonic()
        try:
            listing = scan_directory(run.directory)
            updated_at = directory_updated_at(run.directory)
            error = None
            run.listed_mtime = moved if settled(moved, listed_at) else None
            run.listing_cost = time.monotonic() - started
            run.next_full_listing = time.monotonic() + max(FULL_LISTING_SECONDS, 10 * run.listing_cost)
        except OSError as failure:
            listing, updated_at = None, run.updated_at
            error = f"{run.directory}: cannot list the directory ({failure.strerror or failure})"
        before = (run.updated_at, run.scan_error, run.file_count)
        if listing is None:  # nothing known changed: what is indexed stays listed
            run.scan_error = error
            return Changes([], []), error != before[1] or index_changed
        facts_changed = (updated_at, error, len(listing)) != before or index_changed
        run.updated_at, run.scan_error = updated_at, error
        return run.changes(listing), facts_changed

    def index_run(self, run: IndexedRun, changes, pending: set[str]):
        """Read what changed and publish as it comes. Each publish costs what the run's size costs
        (its order, facts and groups, and the save), so publishing is spaced out to stay a tenth of
        the work: a big run's cold index grows with its documents, not with their square."""
        for name in changes.removed:
            run.remove(name)
        last_publish, interval = time.monotonic(), PUBLISH_SECONDS
        batch = []  # rows come a worker's chunk at a time: stored in batches, a third of a write each
        for name, row in self.compute_rows(run.directory, changes.compute):
            if name in run.changed:  # else its listing is gone (the run was listed again meanwhile)
                batch.append((name, run.changed[name], row))
            publishing = time.monotonic() - last_publish > interval
            if len(batch) >= STORE_BATCH or publishing:
                run.store_rows(batch)
                batch = []
            if publishing:
                started = time.monotonic()
                self.publish_prepared(run, pending)
                last_publish = time.monotonic()
                interval = max(PUBLISH_SECONDS, PUBLISH_COST_FACTOR * (last_publish - started))
            if self.stopped.is_set():
                break
        run.store_rows(batch)
        if not self.stopped.is_set():
            run.store.build_listing_indexes()
        pending.discard(run.location.id)
        self.publish_prepared(run, pending)

    def publish_prepared(self, run: IndexedRun, pending: set[str]):
        """Publish the run's rows, then compute what requests ask of them first, here and timed."""
        self.catalog.publish([run], pending)
        if self.prepare is not None:
            self.prepare(run.snapshot)


def settled(mtime_ns: int | None, listed_at_ns: int) -> bool:
    """Whether a directory's mtime is old enough, when it was listed, to say that an equal mtime later
    means nothing changed. A file system stamps mtimes from a coarse clock (a jiffy, or a second or two
    on some): a record renamed in just after the listing, within the same tick, leaves the mtime as it
    was, and would wait for the next full listing."""
    return mtime_ns is not None and mtime_ns < listed_at_ns - int(SETTLED_MTIME_SECONDS * 1e9)
