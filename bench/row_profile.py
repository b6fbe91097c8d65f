"""Where a row's time goes: `compute_row` on real documents, its steps timed, against the parse alone.

    python bench/row_profile.py                 # 200 rollouts of the realistic run, written to a temporary directory
    python bench/row_profile.py --small         # small records, as `run.py --rows` writes them
    python bench/row_profile.py --run DIR       # the documents of a run on disk (at most --documents of them)

It reports microseconds per document, each the median of `--rounds` passes over the same documents in one
process (their files in the page cache): reading and decompressing a document, parsing its JSON, and
`compute_row` in all, the way the index's workers call it. `compute_row`'s steps come from Python's profiler
(each function `compute_row` calls, with what it pulls in: the rollout's lazy facts are computed where the
header first asks for them; and the functions taking the most time of their own), as shares of the
profiled run, applied to the unprofiled time: the profiler weighs Python calls more than C, so the shares
are estimates and the totals are measured.
"""

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

import synth  # noqa: E402

from skycap_viewer.catalog.rows import compute_row  # noqa: E402
from skycap_viewer.record.document import is_document_name  # noqa: E402
from skycap_viewer.record.frames import decompress_one_frame  # noqa: E402


def per_document_us(work, names, rounds: int) -> float:
    """The median over `rounds` of one pass's time per document, in µs."""
    passes = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for name in names:
            work(name)
        passes.append((time.perf_counter_ns() - start) / len(names) / 1000)
    return statistics.median(passes)


def step_shares(directory: str, names: list[str]) -> tuple[list, list, float]:
    """(each callee of `compute_row` with its cumulative profiled time, the functions of most own
    time, the profiled total), all in seconds, over one pass."""
    profile = cProfile.Profile()
    profile.enable()
    for name in names:
        compute_row(directory, name)
    profile.disable()
    stats = pstats.Stats(profile).stats
    row_key = next(key for key in stats if key[2] == "compute_row")
    total = stats[row_key][3]
    callees = [(key, callers[row_key][3]) for key, (*_, callers) in stats.items() if row_key in callers]
    own = sorted(((key, entry[2]) for key, entry in stats.items()), key=lambda item: -item[1])
    return sorted(callees, key=lambda item: -item[1]), own, total


def label(key) -> str:
    file, line, function = key
    if file == "~":
        return function  # a builtin
    return f"{function} ({Path(file).parent.name}/{Path(file).name}:{line})"


def write_sample(directory: Path, small: bool, rollouts: int) -> None:
    if small:
        synth.generate_small(directory, rollouts, workers=1)
    else:
        synth.generate(directory, rollouts, huge=False, workers=1)


def sample_options(parser: argparse.ArgumentParser, verb: str, documents: int = 200) -> None:
    """The options naming the documents measured (`sample_documents`), `verb` saying what is done to them."""
    parser.add_argument("--run", type=Path, help="a record directory to read (default: write a sample)")
    parser.add_argument("--small", action="store_true", help="the sample: small records instead of realistic ones")
    parser.add_argument("--documents", type=int, default=documents, help=f"documents {verb} (default {documents})")


def sample_documents(args, scratch: str) -> tuple[Path, list[str]]:
    """(the directory, the names of its documents measured): `--run`'s, or a sample written into `scratch`."""
    directory = args.run or Path(scratch)
    if args.run is None:
        write_sample(directory, args.small, args.documents)
    return directory, sorted(name for name in os.listdir(directory) if is_document_name(name))[: args.documents]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sample_options(parser, "profiled")
    parser.add_argument("--rounds", type=int, default=5, help="passes timed, their median taken (default 5)")
    parser.add_argument("--top", type=int, default=15, help="functions listed by their own time (default 15)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="row-profile-") as scratch:
        directory, names = sample_documents(args, scratch)
        where = str(directory)

        def read(name):  # as the benchmark's floor reads a document
            with open(os.path.join(where, name), "rb") as handle:
                return decompress_one_frame(handle.read())

        def parse(name):
            return json.loads(read(name))

        read_us = per_document_us(read, names, args.rounds)
        parse_us = per_document_us(parse, names, args.rounds)
        row_us = per_document_us(lambda name: compute_row(where, name), names, args.rounds)
        callees, own, profiled = step_shares(where, names)
    print(f"{len(names)} documents of {directory if args.run else 'a written sample'}, "
          f"{args.rounds} rounds, Python {sys.version.split()[0]}")
    print(f"read and decompress       {read_us:8.1f} µs a document")
    print(f"... and parse (the floor) {parse_us:8.1f} µs")
    print(f"compute_row in all        {row_us:8.1f} µs  ({row_us / parse_us:.2f}x the floor; "
          f"{row_us - parse_us:.1f} µs beyond it)")
    print("\ncompute_row's steps (cumulative, the profiler's shares of the measured total):")
    for key, seconds in callees:
        print(f"  {seconds / profiled * row_us:9.1f} µs  {label(key)}")
    print(f"\nthe {args.top} functions of most own time (the profiler's shares of the measured total):")
    for key, seconds in own[: args.top]:
        print(f"  {seconds / profiled * row_us:9.1f} µs  {label(key)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
