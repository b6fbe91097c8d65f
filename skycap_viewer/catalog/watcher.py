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
    list_names,
    scan_directory,
    stated_listing_seconds,
)
from skycap_viewer.catalog.pool import SMALL_BATCH, compute_rows_here, small_here
from skycap_viewer.catalog.store import Written, groups_computed, groups_written, indexes_built_at
from skycap_viewer.printable import say

POLL_SECONDS = 2.0
PUBLISH_SECONDS = 0.5  # while indexing, rows appear at least this often...
PUBLISH_COST_FACTOR = 10  # ...or, for a big run, so that publishing takes at most a tenth of the time
HUGE_LISTING_SECONDS = 0.25  # a directory taking longer to list (~100k documents) is not listed every poll...
FULL_LISTING_SECONDS = 30.0  # ...unless its mtime moved, or this long passed...
SETTLED_MTIME_SECONDS = 2.0  # ...and an mtime this recent when listed is not trusted to move on the next change
STORE_BATCH = 64  # rows stored together (a worker's first chunk)
GLIMPSE = 16  # documents of a new run read before its directory is listed whole, in this process: its first rows
# show at once, and the server reads no more (32 realistic documents were 3 µs a record of a 10k run's server CPU)
GROUPS_PER_TASK = 512  # groups a worker computes in one task (their members in its memory at once)
GROUPS_SECONDS = 2.0  # a big batch's touched groups are sent at most this often, and once its rows read have
# doubled (`GroupsElsewhere.due`): a group whose members come in over many sends is computed again for each
VERIFY_BATCH = 512  # documents whose sidecars are checked per poll at most, once indexing is done...
VERIFY_SECONDS = 1.0  # ...fewer when they take long: a batch takes about this long, so a change waits no longer
VERIFY_FIRST = 32  # the first batch, before its cost is known


class Watcher(threading.Thread):
    def __init__(self, catalog: Catalog, interval: float = POLL_SECONDS, compute_rows=compute_rows_here,
                 verify: bool = True, prepare=None, offload=None, stored_forms: bool = False, requests_reading=None):
        super().__init__(name="skycap-viewer-watcher", daemon=True)
        self.catalog = catalog
        self.interval = interval
        self.compute_rows = compute_rows  # e.g. pool.RowPool.compute_rows
        self.verify = verify  # check every record's sidecars in the background (--no-verify: only reported ones)
        self.verify_cost: float | None = None  # seconds a document's verification took in the last batch
        self.prepare = prepare  # prepare(snapshot): what every request asks of a new snapshot, computed here
        self.offload = offload  # offload(task, *args): a future of it run in a worker, or None (e.g. RowPool.submit)
        # requests_reading(): whether a request's documents are being read now (a search): verification waits
        self.requests_reading = requests_reading or (lambda: False)
        # whether `compute_rows` gives the rows as the store keeps them (`group_by=`: computed where they are read)
        self.row_form = {"group_by": catalog.group_by} if stored_forms else {}
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
        if fresh:  # listed at once, before their directories are even listed: as indexing, unless reopened; prepared
            # before the first request, and before a reopened million rows' versions are read (sharing the GIL)
            self.publish_prepared(fresh, {run.location.id for run in fresh if not run.reopened})
        self.discovered.set()
        for run in fresh:
            self.glimpse(run)
        runs = list(catalog.runs.values())
        work = []
        touched = self.indexes_built(runs)
        for run in runs:
            glimpsed = bool(run.glimpsed)
            changes, facts_changed = self.list_run(run)
            if changes or glimpsed:  # a glimpsed run is finished by `index_run`, though nothing more is to be read
                work.append((run, changes))
            first_listing = not run.listed_once  # published once listed: `Snapshot.listed` says so
            run.listed_once = True
            if (facts_changed or changes.removed or run.snapshot is None or first_listing) and run not in touched:
                touched.append(run)
        self.listing_seconds = time.monotonic() - started
        pending = {run.location.id for run, _ in work if not run.indexed_once}
        if touched or set(catalog.runs) != previous:
            catalog.publish(touched, pending)
        work.sort(key=self.work_order)
        for run, changes in work:
            self.index_run(run, changes, pending)
        for run in runs:
            run.indexed_once = True
            if run.reopened:  # its last server may have stopped before they were built (a new run's come with rows)
                self.build_listing_indexes(run, elsewhere=True)
        if not work:  # the lowest priority: only once nothing is left to index
            self.verify_some(runs)

    @staticmethod
    def work_order(work: tuple[IndexedRun, Changes]) -> int:
        """Runs with fewer bytes to read are read first (their rows listed soonest); a run listed by name only
        (`list_names`: a first index, its sizes not stated) counts as none."""
        return work[1].size

    def verify_some(self, runs: list[IndexedRun]):
        """Read and check a batch of rows' sidecars, as `check` does; a damaged record gets its problem.

        A batch per poll, so new records are indexed first and a request never waits on it; what is
        verified is kept in the run's database, so a restart goes on where it stopped. While a request's
        documents are read (`requests_reading`: a search) it waits, even in the middle of a batch: the two
        share the cores, and the search is what someone is waiting for."""
        for run in runs:
            if self.requests_reading():
                return
            names = run.unverified(self.verify_batch() if self.verify else 0)
            if not names:
                continue
            started, verified = time.monotonic(), 0
            for name, row in self.compute_rows(run.directory, names, verify=True):
                verified += 1
                if name not in run.changed:  # not changed meanwhile
                    run.mark_verified(name, row)
                if self.stopped.is_set() or self.requests_reading():
                    break
            self.verify_cost = (time.monotonic() - started) / max(verified, 1)
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
        try:
            listing, run.listing_cost = self.listing(run)
            updated_at = directory_updated_at(run.directory)
            error = None
            run.listed_mtime = moved if settled(moved, listed_at) else None
            run.next_full_listing = time.monotonic() + max(FULL_LISTING_SECONDS, 10 * run.listing_cost)
        except OSError as failure:
            listing, updated_at = None, run.updated_at
            error = f"{run.directory}: cannot list the directory ({failure.strerror or failure})"
        before = (run.updated_at, run.scan_error, run.file_count)
        if listing is None:  # nothing known changed: what is indexed stays listed
            run.scan_error = error
            run.glimpsed = set()  # its next listing states every document
            return Changes([], []), error != before[1] or index_changed
        facts_changed = (updated_at, error, len(listing)) != before or index_changed
        run.updated_at, run.scan_error = updated_at, error
        return run.changes(listing), facts_changed

    def glimpse(self, run: IndexedRun):
        """Read the first `GLIMPSE` documents a new run's directory lists, those light enough to read in this
        process (`pool.small_here`), and publish their rows before the directory is listed whole: a million
        names take seconds to list (~2 s here) and to sort, and the run's first rows are not to wait for them
        (nor the other runs for a heavy document). The listing that follows does not read them again."""
        if run.reopened or run.has_rows():
            return
        try:
            listing = scan_directory(run.directory, GLIMPSE)
        except OSError:  # listed and said by the full listing
            return
        light, _ = small_here(run.directory, sorted(listing))
        if not light:
            return
        run.changed = {name: listing[name] for name in light}
        run.store_rows([(name, listing[name], row) for name, row in
                        self.compute_rows(run.directory, light, **self.row_form)])
        run.store.commit()
        run.glimpsed = set(light)
        self.publish_prepared([run], {run.location.id})

    def listing(self, run: IndexedRun) -> tuple[dict, float]:
        """The run's documents and their versions (`scan_directory`), or, when nothing of it is indexed yet and
        the workers will read and write its rows, only their names (`list_names`): they state each file where
        they read it, and a stat a document was a third of the server's own work a record on a cold index. With
        it, the seconds a listing with a stat a document takes (for names only, estimated from a sample of
        stats): what decides whether a huge directory is listed at every poll."""
        started = time.monotonic()
        if run.glimpsed or not run.has_rows():
            names = list_names(run.directory)
            if self.workers_write(run, len(names)):
                return names, stated_listing_seconds(run.directory, names, time.monotonic() - started)
        listing = scan_directory(run.directory)
        return listing, time.monotonic() - started

    def index_run(self, run: IndexedRun, changes, pending: set[str]):
        """Read what changed and publish as it comes. Each publish costs what the run's size costs
        (its order, facts and groups, and the save), so publishing is spaced out to stay a tenth of
        the work: a big run's cold index grows with its documents, not with their square."""
        groups = GroupsElsewhere(run.store, self.offload) if len(changes.compute) >= SMALL_BATCH else None
        for name in changes.removed:
            run.store.remove(name)
        row_form = self.row_form
        if self.workers_write(run, len(changes.compute)):
            # the workers write the new rows themselves: nothing here holds the database meanwhile
            row_form = {**row_form, "database": (str(run.store.path), run.store.identity)}
            run.store.drop_group_index(len(changes.compute))
            run.store.commit()
            groups.watch_written()
        last_publish, interval = time.monotonic(), PUBLISH_SECONDS
        batch = []  # rows come a worker's chunk at a time: stored in batches, a third of a write each
        for read, (name, row) in enumerate(self.compute_rows(run.directory, changes.compute, **row_form), 1):
            stated = None
            if "database" in row_form:  # (the version stated where it was read, the row): the listing's first
                stated, row = row
                if isinstance(row, Written):  # in the database already: its group is to be computed again
                    groups.written(row)
                    row = None
            if name in run.changed:  # else its listing is gone (the run was listed again meanwhile)
                version = run.changed[name]
                batch.append((name, stated if version is None else version, row))
            publishing = time.monotonic() - last_publish > interval
            if len(batch) >= STORE_BATCH or publishing:
                run.store_rows(batch)
                batch = []
                if "database" in row_form:
                    run.store.commit()  # what was stored here (a row a worker could not write): workers wait
            if publishing:
                started = time.monotonic()
                if groups is not None:
                    groups.keep_finished()
                self.publish_prepared([run], pending)
                if groups is not None and groups.due(read):
                    groups.send(read)
                last_publish = time.monotonic()
                interval = max(PUBLISH_SECONDS, PUBLISH_COST_FACTOR * (last_publish - started))
            if self.stopped.is_set():
                break
        run.store_rows(batch)
        if groups is not None:
            groups.finish(self.stopped)
        if not self.stopped.is_set():
            self.build_listing_indexes(run, elsewhere=groups is not None)
        pending.discard(run.location.id)
        self.publish_prepared([run], pending)

    def workers_write(self, run: IndexedRun, documents: int) -> bool:
        """Whether the workers write the rows of a batch of `documents` into the run's database themselves
        (`pool.compute_chunk`), stating each file as they read it: a big batch, with workers to give it to and
        rows computed as the store keeps them, and no run index (whose rows the server writes)."""
        return (documents >= SMALL_BATCH and self.offload is not None and bool(self.row_form)
                and not run.store.has_index)

    def build_listing_indexes(self, run: IndexedRun, elsewhere: bool):
        """Build the run's sort, filter and text indexes once it is all stored: for a big batch in a worker,
        after the run is listed (listings scan meanwhile, and use them from the publish after they are built:
        `indexes_built`), else here."""
        store = run.store
        if store.listing_indexes or run.indexes_building is not None:
            return
        if elsewhere and self.offload is not None:
            store.commit()
            run.indexes_building = self.offload(indexes_built_at, str(store.path), store.identity)
        if run.indexes_building is None:
            store.build_listing_indexes()

    def indexes_built(self, runs: list[IndexedRun]) -> list[IndexedRun]:
        """The runs whose indexes a worker finished building since the last poll (to publish: their listings
        now use them); where it failed, they are built here."""
        built = []
        for run in runs:
            building = run.indexes_building
            if building is None or not building.done():
                continue
            run.indexes_building = None
            try:
                building.result()
            except Exception:  # noqa: BLE001 - a worker died, the database was busy: built here instead
                pass
            if not run.store.listing_indexes_built():
                run.store.build_listing_indexes()
            built.append(run)
        return built

    def publish_prepared(self, runs: list[IndexedRun], pending: set[str]):
        """Publish the runs' rows, then compute what requests ask of them first, here and timed."""
        self.catalog.publish(runs, pending)
        if self.prepare is not None:
            for run in runs:
                self.prepare(run.snapshot)


class GroupsElsewhere:
    """The groups of a big batch, computed in worker processes from what each publish committed and, while the
    workers write the rows, kept there (`store.groups_written`): the server's own process only sends their
    keys; else kept here (`store.groups_computed`). A group touched again meanwhile is sent again, and a task
    asked before that had not started is withdrawn (`withdrawn`); what is kept is computed from the members
    committed when it is kept (computed again else), so the last kept read every member; the batch ends with
    every answer in (`finish`), so its last publish holds every group as computed here."""

    def __init__(self, store, offload):
        self.store = store
        self.offload = offload
        self.asked: list = []  # (keys, future), in the order asked
        self.workers_write = False  # whether the workers write the rows (and then keep the groups too)
        self.sent_at = time.monotonic()  # when groups were last sent (the batch's first are sent after a while)
        self.sent_rows = 0  # the batch's rows read when they were last sent
        if offload is not None:
            store.defer_groups(True)

    def due(self, read: int) -> bool:
        """Whether the groups touched since they were last sent are to be sent now, `read` rows into the batch:
        `GROUPS_SECONDS` after the last time, once the rows read have doubled since. A group computed again reads
        every member so far, and a big run's groups are all touched between two sends (rows come smallest first,
        not group by group): sent every few seconds, a group was computed as often as the batch took seconds, its
        members read each time (6 times each at 20k rows on 2 cores, more on a slower or busier machine); with
        the rows doubling, a few times in all, and every member read at most about twice over the batch (once
        when the tasks wait behind the batch's rows, as they do on a cold index: `withdrawn`)."""
        return time.monotonic() - self.sent_at >= GROUPS_SECONDS and read >= 2 * self.sent_rows

    def watch_written(self):
        """Workers write rows into the store themselves from now on: they say the group of each (`written`)."""
        self.workers_write = True

    def written(self, row: Written):
        """A row a worker wrote: its group is touched."""
        if row.gkey is not None:
            self.store.note_written_group(row.gkey)

    def send(self, read: int = 0):
        """Ask for the groups the last commit touched, with those of tasks withdrawn, a slice of keys per task
        (`read`: rows into the batch)."""
        if self.offload is None:
            return
        self.sent_at = time.monotonic()
        self.sent_rows = read
        keys = sorted(self.withdrawn().union(self.store.take_deferred_groups()))
        for start in range(0, len(keys), GROUPS_PER_TASK):
            some = keys[start : start + GROUPS_PER_TASK]
            if self.workers_write:  # they keep the groups too
                future = self.offload(groups_written, str(self.store.path), self.store.identity, some,
                                      self.store.group_by)
            else:  # the server writes, holding the write lock between publishes: it keeps them
                future = self.offload(groups_computed, str(self.store.path), some, self.store.group_by)
            if future is None:  # no workers (any more): these groups and the next are computed here
                self.store.ensure_group_index()
                self.store.touched_groups.update(keys[start:])
                self.store.defer_groups(False)
                self.offload = None
                return
            self.asked.append((some, future))

    def withdrawn(self) -> set[str]:
        """The keys of the tasks asked that have not started, which are cancelled: they are to be asked again
        with the groups touched since. The workers take tasks in the order asked, so a group task waits behind
        every chunk of rows the batch asked for first; on a cold index each was computed at the end, with every
        member, as many times as it was sent (a member read 3.6 times over 100k records); now once."""
        keys, kept = set(), []
        for some, future in self.asked:
            if future.cancel():
                keys.update(some)
            else:
                kept.append((some, future))
        self.asked = kept
        return keys

    def keep_finished(self, wait: bool = False):
        """Take the answers that came (with `wait`, all of them): groups the workers kept themselves
        (`store.groups_written`), or computed for this process to keep (`store.groups_computed`); a task that
        failed or was refused (a worker died, the database is being rebuilt) leaves its groups to be computed here."""
        while self.asked and (wait or self.asked[0][1].done()):
            keys, future = self.asked.pop(0)
            try:
                answer = future.result()
            except Exception:  # noqa: BLE001 - whatever went wrong there, the groups are computed here
                answer = False
            if isinstance(answer, tuple):
                self.store.keep_groups(keys, *answer)
            elif not answer:
                self.store.begin()
                self.store.touched_groups.update(keys)
        if self.workers_write:
            self.store.commit()  # workers write rows meanwhile: the database is held no longer than this

    def finish(self, stopped: threading.Event):
        """The batch's rows are all stored: commit them, ask for the groups left, keep every answer, and
        compute groups here again from now on (a live run's few rows)."""
        self.store.commit()
        if not stopped.is_set():
            self.send()
            self.keep_finished(wait=True)
        self.store.ensure_group_index()  # for a live run's groups, computed here from now on
        self.store.defer_groups(False)


def settled(mtime_ns: int | None, listed_at_ns: int) -> bool:
    """Whether a directory's mtime is old enough, when it was listed, to say that an equal mtime later
    means nothing changed. A file system stamps mtimes from a coarse clock (a jiffy, or a second or two
    on some): a record renamed in just after the listing, within the same tick, leaves the mtime as it
    was, and would wait for the next full listing."""
    return mtime_ns is not None and mtime_ns < listed_at_ns - int(SETTLED_MTIME_SECONDS * 1e9)
