"""Decompression bombs and oversized files: named in one line, never read whole, never fatal.

Every bomb is made in the test run and is tiny on disk: a good record followed by 2 GiB of
JSON whitespace (a frame that declares no size, and one whose header declares it), a tokens
sidecar whose real payload is followed by 2 GiB of zeros, and a legal record inside the file limit
whose unknown field holds 40 M empty objects (120 MB of JSON, ~3 GB once parsed), 24 M two-character
strings or 30 M numbers (~1.9 and ~1 GB). The server and the three
commands must name each one with its file and problem, keep every other record listed and
viewable, answer `/v1/runs` within a second throughout, and stay under 1 GiB of resident
memory (the whole process tree, indexing workers included).
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from skycap_viewer.record.frames import zstd
from skycap_viewer.server.caches import RECORD_VIEW_CACHE_BYTES
from tests.support.chain_record import write_chain
from tests.support.corpus import BROKEN
from tests.support.in_process import InProcess
from tests.support.process_memory import GIB, PeakMemory, cpu_seconds
from tests.support.records import BASE_ID, atomic_write, copy_record, encode_document, load_document
from tests.support.server_process import ServerProcess

MIB = 2**20
BOMB_BYTES = 2 * GIB
CHUNK = b" " * (16 * MIB)
GOOD = ("tr_good_a", "tr_good_b")
BOMBS = {  # record id -> (what is bombed, the problem its error must name)
    "tr_bomb_whitespace": ("document", "the document decompresses past 128 MiB, the --max-file-mib limit"),
    "tr_bomb_declared": ("document", "the document decompresses to 2048 MiB (its frame header says)"),
    "tr_bomb_sidecar": ("tokens", "the sidecar decompresses past"),
    "tr_bomb_objects": ("document", "holds 40,000,043 objects and arrays, past the 8,388,608"),
    "tr_bomb_strings": ("document", "holds 24,000,139 values (strings, numbers, objects, arrays), past the 11,184,810"),
    "tr_bomb_numbers": ("document", "holds 30,000,139 values (strings, numbers, objects, arrays), past the 11,184,810"),
}
FILLERS = {  # record id -> (one item of its unknown field's list, how many): 120 MB of JSON each
    "tr_bomb_objects": (b"{}", 40_000_000),  # ~3 GB once parsed
    "tr_bomb_strings": (b'"ab"', 24_000_000),  # ~1.9 GB once parsed
    "tr_bomb_numbers": (b"1.5", 30_000_000),  # ~1 GB once parsed
}


def streamed_frame(head: bytes, filler: bytes, total: int, declare: bool = False) -> bytes:
    """One zstd frame of `head` and then `filler` repeated up to `total` bytes, compressed piece by
    piece (the test never holds the payload); with `declare` its header states the size."""
    compressor = zstd.ZstdCompressor(level=1)
    if declare:
        compressor.set_pledged_input_size(total)
    filler = filler * (len(CHUNK) // len(filler))
    parts, left = [compressor.compress(head)], total - len(head)
    while left > 0:
        piece = filler[:left]
        parts.append(compressor.compress(piece))
        left -= len(piece)
    parts.append(compressor.flush())
    return b"".join(parts)


def document_bomb(directory: Path, record_id: str, declare: bool) -> None:
    copy_record(BROKEN, BASE_ID, directory, record_id)
    document = load_document(directory / f"{record_id}.json.zst")
    head = zstd.decompress(encode_document(document))
    atomic_write(directory / f"{record_id}.json.zst", streamed_frame(head, b" ", BOMB_BYTES, declare))


def filler_bomb(directory: Path, record_id: str, item: bytes, count: int) -> None:
    """A legal record (a v1 document with an unknown top-level field) whose field is a list of `count`
    `item`s (`FILLERS`: 120 MB of JSON inside the 128 MiB limit), in a frame that declares its size, a
    few hundred KB on disk."""
    copy_record(BROKEN, BASE_ID, directory, record_id)
    document = load_document(directory / f"{record_id}.json.zst")
    head = json.dumps(document, separators=(",", ":")).encode()[:-1] + b',"junk":['
    tail = item + b"]}"
    total = len(head) + (len(item) + 1) * (count - 1) + len(tail)
    compressor = zstd.ZstdCompressor(level=1)
    compressor.set_pledged_input_size(total)
    filler = (item + b",") * (len(CHUNK) // (len(item) + 1))
    parts, left = [compressor.compress(head)], (len(item) + 1) * (count - 1)
    while left > 0:
        piece = filler[:left]
        parts.append(compressor.compress(piece))
        left -= len(piece)
    parts += [compressor.compress(tail), compressor.flush()]
    atomic_write(directory / f"{record_id}.json.zst", b"".join(parts))


def sidecar_bomb(directory: Path, record_id: str) -> None:
    """A record whose tokens sidecar holds its real arrays, then 2 GiB of zeros."""
    copy_record(BROKEN, BASE_ID, directory, record_id)
    tokens = directory / f"{record_id}.tokens.zst"
    atomic_write(tokens, streamed_frame(zstd.decompress(tokens.read_bytes()), b"\0", BOMB_BYTES))


@pytest.fixture(scope="module")
def bomb_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("bombs") / "run"
    run.mkdir()
    for record_id in GOOD:
        copy_record(BROKEN, BASE_ID, run, record_id)
    document_bomb(run, "tr_bomb_whitespace", declare=False)
    document_bomb(run, "tr_bomb_declared", declare=True)
    sidecar_bomb(run, "tr_bomb_sidecar")
    for record_id, (item, count) in FILLERS.items():
        filler_bomb(run, record_id, item, count)
    assert sum(f.stat().st_size for f in run.iterdir()) < 4 * MIB, "bombs are tiny on disk"
    return run


def runs_answered(server) -> None:
    status, _, _ = server.request("/v1/runs")
    assert status == 200


@pytest.mark.slow
def test_the_server_names_every_bomb_and_stays_small_and_responsive(bomb_run):
    with ServerProcess([bomb_run]) as server, PeakMemory(server.process.pid) as peak:
        stop = threading.Event()

        def watch_runs():
            while not stop.is_set():
                runs_answered(server)
                time.sleep(0.05)

        watcher = threading.Thread(target=watch_runs, daemon=True)
        watcher.start()
        server.wait_indexed()
        rows = {row["id"]: row for row in server.get("/v1/trajectories?limit=100")["data"]}
        assert set(rows) == {*GOOD, *BOMBS}, "every record listed, the bombs included"
        for record_id in ("tr_bomb_whitespace", "tr_bomb_declared", *FILLERS):
            row = rows[record_id]
            assert row["unreadable"], row
            assert f"{record_id}.json.zst" in row["error"] and BOMBS[record_id][1] in row["error"], row["error"]
        results = []
        fetches = [threading.Thread(target=lambda: results.append(server.get("/v1/trajectories/tr_bomb_sidecar/paths")))
                   for _ in range(3)]
        for fetch in fetches:
            fetch.start()
        for fetch in fetches:
            fetch.join()
        for paths in results:  # the text comes from the messages; the sidecar is named as damaged
            assert paths["text_only"] == "tokens-unreadable"
            assert "tr_bomb_sidecar.tokens.zst" in paths["tokens_error"]
            assert "decompresses past" in paths["tokens_error"] and "manifest" in paths["tokens_error"]
        for record_id in GOOD:
            paths = server.get(f"/v1/trajectories/{record_id}/paths")
            assert paths["text_only"] is None and paths["paths"], record_id
        stop.set()
        watcher.join()
        assert "Traceback" not in server.output(), server.output()[-3000:]
        # The bombs are read in workers: the server's own process stays free to answer. Its CPU, not a wall
        # time a busy machine stretches: 0.4 s for the whole run (start included), where any bomb costs seconds.
        server_cpu = cpu_seconds(server.process.pid)
    assert peak.bytes < GIB, f"server tree peaked at {peak.bytes / MIB:.0f} MiB"
    assert server_cpu < 2.0, f"the server's own process spent {server_cpu:.1f} s of CPU: a bomb was read in it"


@pytest.mark.parametrize("command", ["check", "summary", "show"])
@pytest.mark.slow
def test_the_commands_name_every_bomb_and_stay_small(bomb_run, command):
    targets = [bomb_run / f"{record_id}.json.zst" for record_id in BOMBS] if command == "show" else [bomb_run]
    for target in targets:
        process = subprocess.Popen([sys.executable, "-m", "skycap_viewer", command, str(target)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with PeakMemory(process.pid) as peak:
            out, err = process.communicate(timeout=120)
        assert peak.bytes < GIB, f"{command} {target.name} peaked at {peak.bytes / MIB:.0f} MiB"
        said = out + err
        if command == "show":
            record_id = target.name.removesuffix(".json.zst")
            assert BOMBS[record_id][1].split(",")[0].split(" (")[0] in said, said[-2000:]
            continue
        assert process.returncode == (1 if command == "check" else 0), said[-2000:]  # summary reports, check judges
        for record_id, (_, problem) in BOMBS.items():
            if command == "summary" and record_id == "tr_bomb_sidecar":
                continue  # summary reads documents only: a sidecar is `check`'s to open
            line = next((text for text in said.splitlines() if record_id in text), "")
            assert problem in line, f"{record_id}: {line!r}\n{said[-2000:]}"
        for record_id in GOOD:
            assert not any(record_id in text and "problem" in text for text in said.splitlines())


def test_the_file_limit_flag_moves_the_ceiling(tmp_path):
    """A 3 MiB document is refused under `--max-file-mib 1` and read under 4; one that is bigger than
    the limit even on disk is refused before it is read."""
    run = tmp_path / "run"
    run.mkdir()
    long_text = "".join(f"line {i} of a long answer\n" for i in range(120_000))  # ~3 MiB, compressible

    def give_long_text(document):
        document["nodes"][0]["message"]["content"] = long_text

    copy_record(BROKEN, BASE_ID, run, "tr_long", give_long_text)

    def verdict(*flags):
        done = subprocess.run([sys.executable, "-m", "skycap_viewer", "check", "--json", str(run), *flags],
                              capture_output=True, text=True, timeout=120)
        return json.loads(done.stdout)

    refused = json.dumps(verdict("--max-file-mib", "1"))
    assert "decompresses to 3.3 MiB (its frame header says), past 1.0 MiB, the --max-file-mib limit" in refused
    assert "decompresses" not in json.dumps(verdict("--max-file-mib", "4"))
    atomic_write(run / "tr_noise.json.zst", zstd.compress(os.urandom(2 * MIB), level=1))  # 2 MiB on disk
    assert "is 2.0 MiB on disk: it decompresses past 1.0 MiB" in json.dumps(verdict("--max-file-mib", "1"))


CHAIN_NODES = 60_000  # an 8 MB document (stepped past 4 MiB), parsed in the server when its rollout is opened


@pytest.mark.slow
def test_opening_a_big_rollout_keeps_the_server_answering(tmp_path):
    """A drawer's document is parsed in the server (its views need it there), in steps: /healthz and a
    listing from a fresh client answer within a second while it is, and the tree stays under 1 GiB."""
    run = tmp_path / "run"
    write_chain(run, CHAIN_NODES)
    copy_record(BROKEN, BASE_ID, run, "tr_good_a")
    with ServerProcess([run]) as server, PeakMemory(server.process.pid) as peak:
        server.wait_indexed()
        slowest, statuses, stop = [0.0], set(), threading.Event()

        def probe():
            while not stop.is_set():
                for target in ("/healthz", "/v1/trajectories?run_id=run&limit=5"):  # each from a fresh connection
                    started = time.monotonic()
                    statuses.add(server.request(target)[0])
                    slowest[0] = max(slowest[0], time.monotonic() - started)
                time.sleep(0.02)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        graph = server.get("/v1/trajectories/chain/graph")
        stop.set()
        prober.join()
        assert graph["part"]["total"] == CHAIN_NODES and statuses == {200}, statuses
        assert "Traceback" not in server.output()
    assert slowest[0] < 1.0, f"/healthz or a listing took {slowest[0]:.2f} s while the rollout was read"
    assert peak.bytes < GIB, f"server tree peaked at {peak.bytes / MIB:.0f} MiB"


HEAVY = 4  # records of a few nodes and 2 M short strings each (10 MB of JSON, ~130 MB parsed): within the limits


@pytest.mark.slow
def test_records_opened_in_turn_are_kept_by_what_they_hold_not_by_their_nodes(tmp_path):
    """Each is read (it is within every limit), and opened in turn they do not pile up in the server:
    its kept views are bounded by what their documents' parses hold, not by their few nodes (four such
    records of 120 MB of JSON each held 1.7 GB)."""
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    for number in range(HEAVY):
        filler_bomb(run, f"tr_heavy_{number}", b'"ab"', 2_000_000)
    web = InProcess(tmp_path / "root")
    try:
        for number in range(HEAVY):
            assert web.json(f"/v1/trajectories/tr_heavy_{number}/paths?run_id=run")["paths"], number
        kept = web.server.api.views.entries
        weights = [slot[2] for slot in kept.values()]
        assert 1 <= len(kept) < HEAVY, weights
        assert len(kept) == 1 or sum(weights) <= RECORD_VIEW_CACHE_BYTES, weights
    finally:
        web.server.api.searches.close()
        web.server.server_close()


def test_a_view_heavier_than_the_budget_is_let_go_before_another_document_is_read(tmp_path, monkeypatch):
    """The kept view of a record heavier than the views' budget is let go before another record's document
    is parsed, not once that one is made: two heavy records were held while the second was parsed (here the
    second cannot be read at all, rewritten since it was listed, so nothing is made after its read)."""
    from skycap_viewer.server import api

    monkeypatch.setattr(api, "RECORD_VIEW_CACHE_BYTES", 2**20)
    run = tmp_path / "root" / "run"
    run.mkdir(parents=True)
    filler_bomb(run, "tr_heavy", b'"ab"', 50_000)  # ~3 MB once parsed, as weighed
    copy_record(BROKEN, BASE_ID, run, "tr_rewritten")
    web = InProcess(tmp_path / "root")
    try:
        assert web.get("/v1/trajectories/tr_heavy/paths?run_id=run").status == 200
        assert len(web.server.api.views.entries) == 1
        atomic_write(run / "tr_rewritten.json.zst", zstd.compress(b"not JSON"))
        assert web.get("/v1/trajectories/tr_rewritten/paths?run_id=run").status == 422
        assert not web.server.api.views.entries
    finally:
        web.close()
