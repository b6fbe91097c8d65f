"""A run being written: the server watches a directory while a writer adds, rewrites and deletes.

The writer is another process, as a training job is, and works as skycap does (sidecars
first, document last, each to `.{name}.tmp` then `os.replace`). Every record it writes carries
its own id, the corpus record it was copied from (its template) and a version number in
`annotations.written_as`, so any answer can be checked: a row or rollout must describe the
record asked for, with the node texts of the template its document names. The templates of the
second test share one token layout and differ only in text, so a document read with another
version's sidecar would pass every layout check: only the content shows it. A server that sees
a record's files keep changing under it may say so (409) instead of answering; it may never
answer with a mix.
"""

import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.corpus import FIXTURES
from tests.support.records import copy_record
from tests.support.server_process import ServerProcess

GROUPS = FIXTURES / "groups"
ORACLE = json.loads((FIXTURES / "oracle.json").read_text())["dirs"]["groups"]["records"]
SAME_LAYOUT = ["tr_08862b0a923de527", "tr_0e32dadf1ca07c39", "tr_1a9ed515e602df43"]  # 15 + 17 tokens each
TEMPLATES = [*SAME_LAYOUT, "tr_224a9f5f5b3ee0ac", "tr_36b6c64e3e74d609", "tr_b5aea061e7495048"]
WRITE_SECONDS = 10
FLIP_SECONDS = 5


def expected_texts(template: str) -> dict:
    return {f"n{node}": text for node, text in ORACLE[template]["node_text"].items()}


def write(run: Path, record_id: str, template: str, version: int) -> None:
    def mark(document):
        document["annotations"]["written_as"] = {"id": record_id, "template": template, "version": version}

    copy_record(GROUPS, template, run, record_id, mark)


def delete(run: Path, record_id: str) -> None:
    """Document first, so a document never lacks the sidecars it lists."""
    (run / f"{record_id}.json.zst").unlink()
    for path in run.glob(f"{record_id}.*.zst"):
        path.unlink()


class Observer:
    """Client threads that poll the run and check every answer; problems are collected, not raised."""

    def __init__(self, server, run_id: str):
        self.server, self.run_id = server, run_id
        self.problems, self.counts = [], {"listings": 0, "rollouts": 0, "gone": 0, "busy": 0}
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def note(self, problem: str):
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(problem)

    def count(self, key: str):
        with self.lock:
            self.counts[key] += 1

    def get(self, path):
        status, _, body = self.server.request(path)
        if status >= 500:
            self.note(f"{path}: {status} {body[:300]!r}")
        return status, (json.loads(body) if body else None)

    def check_row(self, row: dict):
        written = (row.get("annotations") or {}).get("written_as") or {}
        if row.get("unreadable"):
            self.note(f"row {row['id']} listed as unreadable: {row.get('error')}")
        elif written.get("id") != row["id"]:
            self.note(f"row {row['id']} shows the data of {written.get('id')}")
        elif row["capture"]["node_count"] != ORACLE[written["template"]]["nodes"]:
            self.note(f"row {row['id']}: {row['capture']['node_count']} nodes, its document is {written}")

    def check_rollout(self, record_id: str, paths: dict):
        written = paths["trajectory"]["annotations"].get("written_as") or {}
        if paths["trajectory"]["id"] != record_id or written.get("id") != record_id:
            self.note(f"/paths of {record_id} shows {paths['trajectory']['id']} written as {written}")
            return
        if paths["text_only"] is not None:
            problem = f"{paths['text_only']}: {paths.get('tokens_error')}"
            self.note(f"/paths of {record_id} {written} half-read: {problem}")
            return
        texts = {key: node["text"] for key, node in paths["nodes"].items()}
        if texts != expected_texts(written["template"]):
            self.note(f"/paths of {record_id}: document {written} with the texts {texts}")

    def open_rollout(self, record_id: str, allow_gone: bool):
        status, paths = self.get(f"/v1/trajectories/{record_id}/paths?run_id={self.run_id}")
        if status == 200:
            self.check_rollout(record_id, paths)
            self.count("rollouts")
        elif status == 404 and allow_gone:
            self.count("gone")
        elif status == 409:  # the server saw the files change under it for too long and said so
            self.count("busy")
        else:
            self.note(f"/paths of {record_id}: {status} {paths}")

    def poll(self, seed: int):
        chooser = random.Random(seed)
        while not self.stop.is_set():
            status, listing = self.get(f"/v1/trajectories?run_id={self.run_id}&limit=1000")
            if status != 200:
                self.note(f"listing: {status} {listing}")
                continue
            self.count("listings")
            for row in listing["data"]:
                self.check_row(row)
            for row in chooser.sample(listing["data"], min(3, len(listing["data"]))):
                self.open_rollout(row["id"], allow_gone=True)

    def run(self, threads: int, target=None):
        workers = [threading.Thread(target=target or self.poll, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        return workers

    def finish(self, workers):
        self.stop.set()
        for worker in workers:
            worker.join(timeout=60)


def converged(server, run: Path, versions: dict) -> tuple[bool, str]:
    """Whether the listing is exactly the directory, each row at its latest version."""
    listing = server.get("/v1/trajectories?run_id=live&limit=1000")
    on_disk = {p.name[: -len(".json.zst")] for p in run.glob("*.json.zst")}
    listed = {row["id"]: row["annotations"].get("written_as", {}).get("version") for row in listing["data"]}
    expected = {record_id: versions[record_id] for record_id in on_disk}
    return listed == expected, f"listed {listed}\nexpected {expected}"


def churn(run: str, seconds: float) -> None:
    """Add, rewrite and delete records for `seconds` (run in its own process, as a training job is).

    Starts from the `tr_live_*` records on disk (all version 1) and prints, as JSON, each
    record's last version and how many operations of each kind it did.
    """
    run, chooser = Path(run), random.Random(6)
    versions = {p.name.split(".")[0]: 1 for p in run.glob("tr_live_*.json.zst")}
    next_id, operations = len(versions), {"add": 0, "rewrite": 0, "delete": 0}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        live = sorted(versions.keys() & {p.name.split(".")[0] for p in run.glob("*.json.zst")})
        operation = chooser.choice(["add", "rewrite", "rewrite", "delete"] if len(live) > 5 else ["add"])
        if len(live) > 25:
            operation = "delete"
        if operation == "add":
            record_id, next_id = f"tr_live_{next_id:04d}", next_id + 1
            versions[record_id] = 1
            write(run, record_id, chooser.choice(TEMPLATES), 1)
        elif operation == "rewrite":
            record_id = chooser.choice(live)
            versions[record_id] += 1
            write(run, record_id, chooser.choice(TEMPLATES), versions[record_id])
        else:
            delete(run, chooser.choice(live))
        operations[operation] += 1
        time.sleep(chooser.uniform(0.002, 0.03))
    print(json.dumps({"versions": versions, "operations": operations}))


def in_own_process(function: str, *args) -> str:
    """Run one of this module's writers in another Python process; its standard output."""
    code = f"from tests.test_run_being_written import {function}; {function}(*{args!r})"
    writer = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1],
                            capture_output=True, text=True, timeout=120)
    assert writer.returncode == 0, writer.stderr
    return writer.stdout


@pytest.mark.slow
def test_a_run_being_written(tmp_path):
    run = tmp_path / "live"
    run.mkdir()
    for number, template in enumerate(TEMPLATES * 2):
        write(run, f"tr_live_{number:04d}", template, 1)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        observer = Observer(server, "live")
        workers = observer.run(4)
        written = json.loads(in_own_process("churn", str(run), WRITE_SECONDS))
        observer.finish(workers)
        done, difference = converged(server, run, written["versions"])
        deadline = time.monotonic() + 30
        while not done and time.monotonic() < deadline:
            time.sleep(0.25)
            done, difference = converged(server, run, written["versions"])
        assert "Traceback" not in server.output(), server.output()[-3000:]
    print(f"writer: {written['operations']}; clients: {observer.counts}")
    assert not observer.problems, "\n".join(observer.problems)
    assert observer.counts["listings"] > 10 and observer.counts["rollouts"] > 10
    assert done, difference


def flip(run: str, seconds: float) -> None:
    """Rewrite `tr_flip` back and forth between two same-layout templates (run in its own process)."""
    pace, version, deadline = random.Random(6), 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        version += 1
        write(Path(run), "tr_flip", SAME_LAYOUT[version % 2], version)
        time.sleep(pace.uniform(0.002, 0.02))
    print(version)


@pytest.mark.slow
def test_a_record_rewritten_while_its_sidecars_are_read(tmp_path):
    """One record flips between templates of the same token layout while clients read its tokens."""
    run = tmp_path / "flip"
    run.mkdir()
    write(run, "tr_flip", SAME_LAYOUT[0], 0)
    with ServerProcess([run]) as server:
        server.wait_indexed()
        observer = Observer(server, "flip")

        def read_tokens(seed):
            while not observer.stop.is_set():
                observer.open_rollout("tr_flip", allow_gone=False)

        workers = observer.run(4, read_tokens)
        rewrites = in_own_process("flip", str(run), FLIP_SECONDS).strip()
        observer.finish(workers)
        assert "Traceback" not in server.output(), server.output()[-3000:]
    print(f"{rewrites} rewrites; clients: {observer.counts}")
    assert not observer.problems, "\n".join(observer.problems)
    assert observer.counts["rollouts"] > 20
