"""Load: many clients at once, and clients that misbehave at the socket level.

Sixteen client threads hit listings, groups and rollout payloads on loopback for a fixed time:
every request must succeed. The latency percentiles are printed as a figure to watch, never
asserted (timing belongs in `bench/`). Then clients that hang up mid-request or mid-response,
that connect and say nothing, or that stop reading, must not harm the server or its other clients.
"""

import random
import socket
import struct
import threading
import time
from urllib.parse import quote

import pytest

from tests.support.server_process import served

CLIENTS = 16
LOAD_SECONDS = 15
HANG_LIMIT = 30  # seconds: only to turn a hung server into a failure instead of a stuck suite


@pytest.fixture(scope="module")
def server(corpus):
    yield from served([corpus])


@pytest.fixture(scope="module")
def targets(server) -> list[str]:
    """A mix of what the page asks for: listings, groups, one group, rollouts, graphs."""
    paths = [
        "/v1/runs", "/__viewer", "/api/v1/trajectories?run_id=groups&sort=reward&order=desc",
        "/api/v1/trajectories?limit=1000", "/api/v1/trajectories?run_id=real-like&flag=forked",
        "/api/v1/trajectories?q=solve&sort=tokens", "/api/v1/groups?run_id=groups",
        "/api/v1/groups?run_id=groups-text&sort=reward", "/",
    ]
    for group in server.get("/v1/groups?run_id=groups")["data"][:5]:
        paths.append(f"/api/v1/groups/{quote(group['key'], safe='')}?run_id=groups")
    for row in server.get("/v1/trajectories?limit=1000")["data"]:
        if row.get("unreadable"):
            continue
        base = f"/api/v1/trajectories/{quote(row['id'], safe='')}"
        paths += [f"{base}/paths?run_id={row['run_id']}", f"{base}/graph?run_id={row['run_id']}"]
    return paths


def raw_exchange(server, payload: bytes, read: int | None = None, reset: bool = False) -> bytes:
    """Send `payload`, read up to `read` bytes (None: nothing), then hang up (RST if `reset`)."""
    connection = socket.socket()
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the server's writes back up sooner
    connection.settimeout(HANG_LIMIT)
    connection.connect(("127.0.0.1", port_of(server)))
    try:
        connection.sendall(payload)
        return connection.recv(read) if read else b""
    finally:
        if reset:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()


def port_of(server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def http_get(path: str, extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n{extra}\r\n".encode()


@pytest.mark.slow
def test_sixteen_clients_without_an_error(server, targets):
    latencies, errors, lock = [], [], threading.Lock()
    stop = time.monotonic() + LOAD_SECONDS

    def client(seed):
        chooser = random.Random(seed)
        while time.monotonic() < stop:
            path = chooser.choice(targets)
            headers = {"Accept-Encoding": "gzip"} if chooser.random() < 0.5 else {}
            started = time.perf_counter()
            try:
                status, _, body = server.request(path, headers=headers)
            except OSError as error:
                status, body = None, repr(error).encode()
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                if status != 200:
                    errors.append((path, status, body[:200]))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    p50, p95 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.95)]
    print(f"\n{len(latencies)} requests from {CLIENTS} clients in {LOAD_SECONDS} s: "
          f"p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms")
    assert not errors, errors[:10]
    assert len(latencies) > CLIENTS


BIG = "/api/v1/trajectories?limit=1000"  # every row of the corpus, ~140 kB


@pytest.mark.parametrize("read, reset", [(None, False), (None, True), (16, False), (16, True), (4096, True)],
                         ids=["close-after-request", "reset-after-request", "close-after-16-bytes",
                              "reset-after-16-bytes", "reset-mid-body"])
def test_a_client_hanging_up_harms_nothing(server, read, reset):
    for _ in range(30):
        raw_exchange(server, http_get(BIG), read=read, reset=reset)
    assert server.get("/healthz")["status"] == "ok"
    status, _, body = server.request(BIG)
    assert status == 200 and len(body) > 100_000


def test_half_requests_and_silent_clients_do_not_block_others(server, targets):
    """Idle connections and half-sent requests must not hold the server up for everyone else."""
    silent = [socket.create_connection(("127.0.0.1", port_of(server)), timeout=HANG_LIMIT) for _ in range(20)]
    half = [socket.create_connection(("127.0.0.1", port_of(server)), timeout=HANG_LIMIT) for _ in range(20)]
    try:
        for connection in half:
            connection.sendall(b"GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        for path in targets[:20]:
            status, _, body = server.request(path)
            assert status == 200, (path, body[:200])
    finally:
        for connection in silent + half:
            connection.close()
    for _ in range(10):
        raw_exchange(server, b"GET /v1/traj")  # cut inside the request line
    assert server.get("/healthz")["status"] == "ok"


def test_a_client_that_stops_reading_does_not_block_others(server, targets):
    """Pipelined requests for big payloads, never read: the server's writes back up, others go on."""
    stalled = socket.create_connection(("127.0.0.1", port_of(server)), timeout=HANG_LIMIT)
    try:
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(http_get(BIG) * 50)
        for path in targets[:30]:
            status, _, _ = server.request(path)
            assert status == 200, path
    finally:
        stalled.close()
    assert server.get("/healthz")["status"] == "ok"
