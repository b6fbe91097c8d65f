"""Clients that never read cannot starve the others: 130 connections that each ask for an 8 MB answer
(more than the socket buffers take, ~2 MB on loopback) and read nothing (a 4 KB receive window)
leave `/healthz` and listings answering fresh clients within a second and the server's tree under
1 GiB; a client that reads a few bytes now and then is cut off once its answer's time is up, not
kept for as long as it trickles; a request past the long answers waits for a slot before it is refused."""

import socket
import threading
import time
from contextlib import contextmanager

import pytest

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.server import web
from skycap_viewer.server.api import Api
from skycap_viewer.server.connections import MAX_LONG_ANSWERS, LongAnswers
from tests.support.process_memory import GIB, PeakMemory
from tests.support.records import write_text_record
from tests.support.server_process import ServerProcess
from tests.support.stalled_clients import BIG, BIG_META, LONG_TEXT, stalled_connection

STALLED = 130
@pytest.fixture(scope="module")
def chain_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("stalled")
    (root / "long").mkdir()
    write_text_record(root / "long", "tr_long", LONG_TEXT, "ok")
    write_text_record(root / "long", "tr_meta", "hi", "ok", lambda document: document["meta"].update(notes=LONG_TEXT))
    return root


def probe_seconds(server, path: str) -> float:
    started = time.monotonic()
    status, _, _ = server.request(path)
    assert status == 200, path
    return time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("request_line", [BIG, BIG_META], ids=["paths", "trajectory"])
def test_stalled_downloads_leave_room_for_everyone_else(chain_run, request_line):
    with ServerProcess([chain_run]) as server, PeakMemory(server.process.pid) as peak:
        server.wait_indexed()
        stalled = [stalled_connection(server.port, request_line) for _ in range(STALLED)]
        try:
            for connection in stalled:  # every one of them is answered (stalled in its send) or refused
                connection.settimeout(30)
                assert connection.recv(12, socket.MSG_PEEK)
            slowest = max(probe_seconds(server, path) for path in ["/healthz", "/v1/runs",
                                                                   "/v1/trajectories?run_id=long"] * 5)
            refused = sum(connection.recv(64).startswith(b"HTTP/1.1 503") for connection in stalled)
        finally:
            for connection in stalled:
                connection.close()
        assert slowest < 1.0, f"a probe took {slowest:.2f} s beside {STALLED} stalled downloads"
        assert refused >= STALLED - MAX_LONG_ANSWERS, refused  # past the long answers' slots: 503 at once
        assert "Traceback" not in server.output()
    assert peak.bytes < GIB


@contextmanager
def served_here(root):
    """A server in this process over `root` (indexed once), so a test can reach its connections' state."""
    catalog = Catalog([root])
    Watcher(catalog, verify=False).poll()
    server = web.ViewerServer(("127.0.0.1", 0), Api(catalog), quiet=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.api.searches.close()
        server.server_close()


def test_a_request_past_the_long_answers_waits_for_a_slot_to_free(chain_run):
    """Every slot is taken (as by answers being sent); a request for another long answer is not refused
    at once but waits, and is answered when one slot is given back (as a client's answer ends)."""
    with served_here(chain_run) as server:
        slots = server.connections.long_answers
        assert all(slots.take() for _ in range(MAX_LONG_ANSWERS))
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
            connection.sendall(BIG.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
            deadline = time.monotonic() + 30
            while None not in server.connections.waiting_since.values():  # its head is read: it is answering
                assert time.monotonic() < deadline, "the request was never read"
                time.sleep(0.01)
            slots.give_back()
            assert connection.recv(12) == b"HTTP/1.1 200"
        for _ in range(MAX_LONG_ANSWERS - 1):
            slots.give_back()


def test_as_many_requests_wait_for_a_long_answers_slot_as_there_are_slots():
    """Past the slots and as many waiting, a request is refused without waiting: a flood of stalled
    downloads holds twice the slots in connections, not every connection."""
    slots = LongAnswers(1, wait=60)
    assert slots.take()
    waiter = threading.Thread(target=slots.take, daemon=True)
    waiter.start()
    deadline = time.monotonic() + 30
    while not slots.waiting:
        assert time.monotonic() < deadline, "the second request never waited"
        time.sleep(0.01)
    refused = []
    third = threading.Thread(target=lambda: refused.append(not slots.take()), daemon=True)
    third.start()
    third.join(30)  # only to turn a wait of the full 60 s into a failure
    assert refused == [True]
    slots.give_back()
    waiter.join(30)
    assert slots.sending == 1 and not slots.waiting  # the waiting one got the slot given back


def test_a_client_that_trickles_is_cut_off_when_its_answer_time_is_up(chain_run, monkeypatch):
    monkeypatch.setattr(web, "SEND_SECONDS", 1.0)
    with served_here(chain_run) as server:
        connection = stalled_connection(server.port)
        connection.settimeout(10)
        received = 0
        for _ in range(20):  # 2 s of a few bytes now and then: each write could go on, but the answer may not
            received += len(connection.recv(100))
            time.sleep(0.1)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        while chunk := connection.recv(1 << 20):  # then read all there is: what was sent before it was cut off
            received += len(chunk)
        connection.close()
        assert received < len(LONG_TEXT), received  # the answer was cut short, not waited out
