"""Where an indexing worker's row goes, step by step, in CPU µs a document: from reading the file to the row
written into the run's database, against the benchmark's floor (reading, decompressing and parsing).

    python bench/worker_row.py --small            # small records, as `run.py --rows` writes them
    python bench/worker_row.py                    # the realistic run's records
    python bench/worker_row.py --run DIR          # the documents of a run on disk

Each step is timed alone over every document, in process CPU time (a shared machine's load barely moves
it, where wall time doubles), the least of `--rounds` passes. The steps call what `catalog.rows.compute_row`
and a worker's task call (`pool.compute_chunk`, `store.rows_written`), in their order, each on the previous
step's results; their sum is set beside `compute_row` timed whole, and the rows written as a worker writes them.

Last, the least a listing row could cost in this reader (`listing row's least`): after the checked parse, only
the rollout's graph, its flags and its sort keys (what a table filters and sorts on before any row is shown),
no header, JSON, strip or lane: the bound of moving everything else out of the index (issue 36's item 4).
"""

import argparse
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

from row_profile import sample_documents, sample_options  # noqa: E402

from skycap_viewer.catalog import rows as row_module  # noqa: E402
from skycap_viewer.catalog.pool import INDEX_CHUNK  # noqa: E402
from skycap_viewer.catalog.store import RunStore, rows_written, stored_form  # noqa: E402
from skycap_viewer.record.document import (  # noqa: E402
    SURROGATE_ESCAPE,
    document_text,
    parse_json,
    read_document_escaped,
    read_regular_file,
    record_id_of,
)
from skycap_viewer.record.fields import created_ts  # noqa: E402
from skycap_viewer.record.frames import decompress_one_frame  # noqa: E402
from skycap_viewer.record.header import trajectory_header  # noqa: E402
from skycap_viewer.record.opener import present_sidecars  # noqa: E402
from skycap_viewer.record.rollout import Rollout  # noqa: E402
from skycap_viewer.record.schema import check_structure  # noqa: E402

GROUP_BY = ("task_id", "step")
LEAST_ROW = "listing row's least: checked parse, then graph, flags, sort keys"
SCALED_NOT = {"floor: read, decompress, parse", "compute_row whole", "pickled back (rows not written)", LEAST_ROW,
              "rows written (first indexing: inserted, counted, committed)",
              "rows written later (listing and trigram indexes kept)"}


def cpu_us(work, items, rounds: int) -> tuple[float, list]:
    """(the least over `rounds` of one pass's CPU µs per item, the last pass's results)."""
    best, results = float("inf"), []
    for _ in range(rounds):
        start = time.process_time_ns()
        results = [work(item) for item in items]
        best = min(best, (time.process_time_ns() - start) / len(items) / 1000)
    return best, results


def steps(directory: str, names: list[str], rounds: int) -> list[tuple[str, float]]:
    """(step, CPU µs a document) in a worker's order."""
    timed = []

    def step(label, work, items):
        spent, results = cpu_us(work, items, rounds)
        timed.append((label, spent))
        return results

    def floor(name):
        with open(os.path.join(directory, name), "rb") as handle:
            return parse_json(decompress_one_frame(handle.read()).decode())

    step("floor: read, decompress, parse", floor, names)
    data = step("read the file (checked)", lambda name: read_regular_file(os.path.join(directory, name)), names)
    texts = step("decompress, decode (checked)", lambda blob: document_text(blob, "x"), data)
    step("lone-surrogate escape scan", lambda text: SURROGATE_ESCAPE.search(text) is not None, texts)
    documents = step("parse", parse_json, texts)
    step("structure check (schema)", check_structure, documents)
    present = step("sidecars present (lstat)", lambda document: present_sidecars(directory, document), documents)
    triples = list(zip(documents, present, names, strict=True))
    rollouts = step("Rollout.__init__ (graph, layout)", lambda pair: Rollout(pair[0], pair[1], record_id_of(pair[2])),
                    triples)

    def headed(pair):  # a new rollout each pass: its facts are computed once, where the header asks for them
        rollout = Rollout(pair[0], pair[1], record_id_of(pair[2]))
        rollouts.append(rollout)
        return trajectory_header(rollout, id=pair[0]["id"], created_ts=created_ts(pair[0]), symlink_to=None)

    rollouts = []
    headers = step("trajectory_header (and the facts it asks)", headed, triples)
    rollouts = rollouts[-len(headers):]
    timed[-1] = (timed[-1][0], timed[-1][1] - timed[-2][1])  # the rollout's own making left out
    texts_of = step("search texts, bounded values", lambda header: (row_module.search_texts(header), header), headers)
    for texts_one, header in texts_of:
        header.update(row_module.bounded_values(header, texts_one))
    summaries = step("summary (strip)", row_module.summary, rollouts)
    for header, summary in zip(headers, summaries, strict=True):
        header["summary"] = summary
    lanes = step("kept_lane", row_module.kept_lane, documents)
    rows = step("with_keys, slim (row JSON, zstd)",
                lambda item: row_module.slim(row_module.with_keys(*item)), [(h, t) for t, h in texts_of])
    for row, lane in zip(rows, lanes, strict=True):
        row["_verified"], row["_lane"] = True, lane
    forms = step("stored_form", lambda row: stored_form(row, GROUP_BY), rows)
    timed.append(("sum of the steps past the floor", sum(spent for _, spent in timed[1:])))
    whole, _ = cpu_us(lambda name: row_module.compute_row(directory, name), names, rounds)
    timed.append(("compute_row whole", whole))
    timed += written(forms, names, rounds)
    pickled, _ = cpu_us(pickle.dumps, [list(zip(names, forms, strict=True))], rounds)
    timed.append(("pickled back (rows not written)", pickled / len(names)))
    least, _ = cpu_us(listing_row_least, [os.path.join(directory, name) for name in names], rounds)
    timed.append((LEAST_ROW, least))
    return timed


def listing_row_least(path: str) -> tuple:
    """What a listing must know of a record before it can filter and sort: its flags (which need the graph and
    the facts they are made of) and its sort keys; everything else a row holds left out."""
    document, _ = read_document_escaped(path)
    rollout = Rollout(document, present_sidecars(os.path.dirname(path), document),
                      record_id_of(os.path.basename(path)))
    return rollout.flags, rollout.tokens, len(rollout.calls), created_ts(document)


def written(forms: list, names: list[str], rounds: int) -> list[tuple[str, float]]:
    """The rows written as a worker writes them (`store.rows_written`: inserted, counted, committed, in tasks of
    `INDEX_CHUNK`) into a run's database made by `RunStore`, as in a first indexing (no listing index yet) and
    once the run's listing indexes, the trigram index among them, are built (rows that come later)."""
    figures = []
    for label, indexed in (("rows written (first indexing: inserted, counted, committed)", False),
                           ("rows written later (listing and trigram indexes kept)", True)):
        spent = float("inf")
        for _ in range(rounds):
            with tempfile.TemporaryDirectory(prefix="worker-row-") as scratch:
                path = Path(scratch) / "run.sqlite"
                store = RunStore(path, {"directory": scratch}, GROUP_BY)
                if indexed:
                    store.build_listing_indexes()
                identity = store.identity  # kept open, as the server keeps it: the last connection closed
                stated = [(name, 1, 1, 1, form) for name, form in zip(names, forms, strict=True)]
                start = time.process_time_ns()
                for first in range(0, len(stated), INDEX_CHUNK):
                    if not rows_written(str(path), identity, stated[first : first + INDEX_CHUNK]):
                        raise SystemExit("the rows were not written")
                spent = min(spent, (time.process_time_ns() - start) / len(names) / 1000)
                store.close()  # would checkpoint the write-ahead log, which a worker's writes never do
        figures.append((label, spent))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sample_options(parser, "timed")
    parser.add_argument("--rounds", type=int, default=5, help="passes timed, the least taken (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="worker-row-") as scratch:
        directory, names = sample_documents(args, scratch)
        timed = steps(str(directory), names, args.rounds)
    print(f"{len(names)} documents of {directory if args.run else 'a written sample'}, CPU µs a document, "
          f"least of {args.rounds} passes")
    figures = dict(timed)
    scale = figures["compute_row whole"] / (figures["sum of the steps past the floor"] - figures["stored_form"])
    print(f"  {'alone':>8}  {'scaled':>8}  (scaled: a row's steps times {scale:.2f}, their sum made compute_row's:"
          " interleaved, as a worker runs them, each costs more than when run alone over every document)")
    for label, spent in timed:
        scaled = f"{spent * scale:8.1f}" if label not in SCALED_NOT else " " * 8
        print(f"  {spent:8.1f}  {scaled}  {label}")
    floor = figures["floor: read, decompress, parse"]
    print(f"the floor's multiples: compute_row whole {figures['compute_row whole'] / floor:.2f}x, "
          f"the listing row's least {figures[LEAST_ROW] / floor:.2f}x (before a row is written)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
