"""What the viewer's document parse costs, in instructions (callgrind): a count that load does not skew,
so a change to the parse is compared before and after on a busy machine.

    python bench/parse_cost.py                       # this tree: the realistic run's documents, two chains
    python bench/parse_cost.py --code /tmp/before    # another source tree (e.g. `git archive` of a commit)

Each case runs Python under `valgrind --tool=callgrind` twice, once reading the documents' bytes only and
once parsing them too (`parse_document`, as the index and the server do); the difference is the parse's.
The cases: the realistic run's documents (`synth.py`, 200 rollouts, all below the stepped parse's length),
a chain of `--short-chain` nodes (parsed in steps, below `SHARED_VALUES_CHARS`) and one of `--long-chain`
nodes (past it). Needs valgrind; each case takes about a minute.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COUNTED = re.compile(r"Collected : (\d+)")


def parse_all(code: str, case: str, nodes: int, run: str, parse: bool) -> None:
    """The measured run: read (and with `parse`, parse) the case's documents with `code`'s package."""
    sys.path.insert(0, code)
    from skycap_viewer.record.document import parse_document
    from skycap_viewer.record.frames import compress

    if case == "realistic":
        blobs = [Path(run, name).read_bytes() for name in sorted(os.listdir(run)) if name.endswith(".json.zst")]
    else:
        sys.path.insert(0, str(REPO))
        from tests.support.chain_record import chain_document
        blobs = [compress(json.dumps(chain_document(nodes), separators=(",", ":")).encode())]
    if parse:
        for blob in blobs:
            parse_document(blob, case)


def instructions(code: Path, case: str, nodes: int, run: Path, parse: bool) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
               "--measured", case, "--code", str(code), "--nodes", str(nodes), "--run", str(run)]
    if parse:
        command.append("--parse")
    said = subprocess.run(command, capture_output=True, text=True, check=True).stderr
    return int(COUNTED.search(said).group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=REPO, help="the source tree measured (default: this one)")
    parser.add_argument("--short-chain", type=int, default=30_000, help="nodes of the shorter chain (5 MB)")
    parser.add_argument("--long-chain", type=int, default=220_000, help="nodes of the longer chain (35 MB)")
    parser.add_argument("--measured", help=argparse.SUPPRESS)
    parser.add_argument("--nodes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--parse", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measured:
        parse_all(str(args.code), args.measured, args.nodes, args.run, args.parse)
        return 0
    sys.path.insert(1, str(REPO / "bench"))
    import synth

    figures = {}
    with tempfile.TemporaryDirectory(prefix="parse-cost-") as run:
        synth.generate(run, 200, huge=False, workers=1)
        for case, nodes in (("realistic", 0), ("short-chain", args.short_chain), ("long-chain", args.long_chain)):
            alone, parsed = (instructions(args.code.resolve(), case, nodes, Path(run), parse)
                             for parse in (False, True))
            figures[case] = {"nodes": nodes or None, "parse_instructions": parsed - alone}
    print(json.dumps({"code": str(args.code), "python": sys.version.split()[0], **figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
