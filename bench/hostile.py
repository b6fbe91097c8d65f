"""What hostile but legal records cost the server: the peak resident memory of its whole process tree
(indexing workers included) and the time, phase by phase, so a change is measured before and after.

    python bench/hostile.py chain                 # a 1 M-node chain (161 MB of JSON): every /graph and /paths part
    python bench/hostile.py heavy                 # four 45 MB records of short strings, opened in turn
    python bench/hostile.py index-bombs           # run index files of millions of small values, beside a run
    python bench/hostile.py chain --code /tmp/main  # the same, served by another source tree (e.g. main's)

Each case writes its records into a temporary directory, serves it (`--no-cache`), waits until it is
indexed (the `index` phase), then asks what a reader's page asks (the `open` phase); `/healthz` is asked
from a fresh connection throughout, and its slowest answer reported. The figures are printed as JSON.
Memory targets are this script's business, never a timed test's (docs/benchmark.md, "Hostile records").
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

from skycap_viewer.record.frames import compress  # noqa: E402
from tests.support.api_paths import api_path  # noqa: E402
from tests.support.chain_record import write_chain  # noqa: E402
from tests.support.corpus import BROKEN  # noqa: E402
from tests.support.process_memory import PeakMemory  # noqa: E402
from tests.support.records import BASE_ID, atomic_write, copy_record, load_document  # noqa: E402
from tests.support.server_process import ServerProcess  # noqa: E402

MIB = 2**20
CHAIN_NODES = 1_000_000
HEAVY_RECORDS = 4
HEAVY_STRINGS = 9_000_000  # `"ab",`: 45 MB of JSON, within the value limit (11.2 M at 128 MiB)
INDEX_BOMB_BYTES = 16 * MIB - 1024  # just under a run index file's byte cap


def write_heavy(directory: Path, records: int, strings: int) -> None:
    """`records` legal records whose unknown field holds `strings` two-character strings each."""
    for number in range(records):
        record_id = f"tr_heavy_{number}"
        copy_record(BROKEN, BASE_ID, directory, record_id)
        document = load_document(directory / f"{record_id}.json.zst")
        head = json.dumps(document, separators=(",", ":")).encode()[:-1] + b',"junk":['
        atomic_write(directory / f"{record_id}.json.zst", compress(head + b",".join([b'"ab"'] * strings) + b"]}"))


def write_index_bombs(directory: Path) -> None:
    """Two good records, a step file that lists them, and two step files just under the byte cap of
    two-character strings and of numbers."""
    for record_id in ("tr_a", "tr_b"):
        copy_record(BROKEN, BASE_ID, directory, record_id)
    index = directory / "index"
    index.mkdir()
    (index / "step-1.json").write_text(json.dumps({"format_version": 1, "step": 1, "rows": [
        {"id": "tr_a", "trained": True}, {"id": "tr_b", "trained": False}]}))
    for step, item in ((2, b'"ab"'), (3, b"1.5")):
        head = f'{{"format_version":1,"step":{step},"rows":[{{"id":"tr_a","trained":true}}],"extra":['.encode()
        count = (INDEX_BOMB_BYTES - len(head)) // (len(item) + 1)
        (index / f"step-{step}.json").write_bytes(head + b",".join([item] * count) + b"]}")


class Healthz:
    """`/healthz` from a fresh connection every 50 ms while it runs; the slowest answer and the statuses."""

    def __init__(self, server):
        self.server, self.slowest, self.statuses = server, 0.0, set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.ask, daemon=True)

    def ask(self):
        while not self.stop.is_set():
            started = time.monotonic()
            self.statuses.add(self.server.request(api_path("healthz"))[0])
            self.slowest = max(self.slowest, time.monotonic() - started)
            time.sleep(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def fetched(server, target: str):
    """The JSON answer to `target`, however long the first part of a huge record takes (a minute, loaded)."""
    headers = {"Authorization": f"Bearer {server.token}"} if server.token else {}
    request = urllib.request.Request(server.url + target, headers=headers)
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def every_part(server, route: str, extra: str = "") -> int:
    """Ask `route` and each next part it names; how many parts came."""
    answer = fetched(server, f"{route}?{extra}")
    parts = 1
    while answer.get("part", {}).get("next") is not None:
        answer = fetched(server, f"{route}?{extra}{'&' if extra else ''}from={answer['part']['next']}")
        parts += 1
    return parts


def measured(directory: Path, code: Path, open_phase, *flags) -> dict:
    """Serve `directory` from the source tree `code`; the index and open phases' peaks and times."""
    figures = {}
    env = {"PYTHONPATH": str(code)}
    with ServerProcess([directory], *flags, env=env, cwd=code) as server, Healthz(server) as health:
        phases = (("index", lambda: server.wait_indexed(timeout=1800) and None), ("open", lambda: open_phase(server)))
        for phase, work in phases:
            started = time.monotonic()
            with PeakMemory(server.process.pid) as peak:
                said = work()
            figures[phase] = {"peak_tree_mib": round(peak.bytes / MIB), "seconds": round(time.monotonic() - started, 1)}
            if said is not None:
                figures[phase]["said"] = said
        figures["healthz_slowest_s"] = round(health.slowest, 2)
        figures["healthz_statuses"] = sorted(health.statuses)
        figures["traceback"] = "Traceback" in server.output()
    return figures


def open_chain(server) -> dict:
    return {"graph_parts": every_part(server, api_path("graph", "chain")),
            "paths_parts": every_part(server, api_path("paths", "chain"), "path=0")}


def open_heavy(server) -> dict:
    for number in range(HEAVY_RECORDS):
        fetched(server, api_path("paths", f"tr_heavy_{number}"))
        fetched(server, api_path("graph", f"tr_heavy_{number}"))
    return {"opened": HEAVY_RECORDS}


def open_index_bombs(server) -> dict:
    facts = server.get(api_path("runs"))["data"][0]["run_index"]
    rows = server.get(f"{api_path('trajectories')}?limit=10")["data"]
    return {"damaged": [entry["problem"][:80] for entry in facts["damaged"]], "listed": len(rows)}


CASES = {
    "chain": (lambda d: write_chain(d, CHAIN_NODES), open_chain, ("--max-file-mib", "256")),
    "heavy": (lambda d: write_heavy(d, HEAVY_RECORDS, HEAVY_STRINGS), open_heavy, ()),
    "index-bombs": (write_index_bombs, open_index_bombs, ()),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--code", type=Path, default=REPO, help="the source tree that serves (default: this one)")
    args = parser.parse_args()
    write, open_phase, flags = CASES[args.case]
    with tempfile.TemporaryDirectory(prefix="skycap-hostile-") as temporary:
        directory = Path(temporary) / "run"
        directory.mkdir()
        write(directory)
        figures = measured(directory, args.code.resolve(), open_phase, *flags)
    print(json.dumps({"case": args.case, "code": str(args.code), "load": os.getloadavg()[0], **figures}, indent=1))


if __name__ == "__main__":
    main()
