"""What one client can take of the real server: connection slots, time, memory, descriptors.

Every test runs the real server in a subprocess and talks to it over real sockets; memory is the
resident memory of the server's process tree, CPU time is the server's own. The ceilings are named
and explained in `skycap_viewer/server/connections.py`.
"""

import http.client
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest

from skycap_viewer.server.caches import AnswerCache
from skycap_viewer.server.connections import HEAD_SECONDS, MAX_CONNECTIONS
from skycap_viewer.wire import RawJson
from tests.support.process_memory import PeakMemory, tree_resident_bytes
from tests.support.server_process import ServerProcess, served, wait_for

MIB = 2**20
SLOW_HEAD = b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\nX-Slow: "  # a head that never ends
SMUGGLED = b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\n\r\n"  # what a body must never become


@pytest.fixture(scope="module")
def server(corpus):
    yield from served([corpus / "spec"])


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process, all its threads, from `/proc/PID/stat`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def closed_by_server(connection: socket.socket) -> bool:
    """Whether the server has closed this connection (looking, not waiting: a socket with a timeout
    would wait for data before its first read)."""
    timeout = connection.gettimeout()
    connection.setblocking(False)
    try:
        return connection.recv(65536) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True
    finally:
        connection.settimeout(timeout)


def open_connections(port: int, count: int, first_bytes: bytes = b"") -> list[socket.socket]:
    """`count` connections, each having sent `first_bytes` and nothing more."""
    connections = []
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        if first_bytes:
            connection.sendall(first_bytes)
        connections.append(connection)
    return connections


def read_to_close(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a reset ends it too)."""
    reply = b""
    try:
        while chunk := connection.recv(65536):
            reply += chunk
    except ConnectionError:
        pass
    return reply


def exchange(port: int, request: bytes) -> bytes:
    """Send `request` as it is, with no `Connection: close`; what comes back before the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        connection.sendall(request)
        return read_to_close(connection)


def statuses(reply: bytes) -> list[int]:
    """The status of each response in `reply`, which must be whole responses and nothing else (a bare
    body with no status line, or bytes past the last body, fail)."""
    found = []
    while reply:
        match = re.match(rb"HTTP/1\.1 (\d{3}) .*?\r\n\r\n", reply, re.DOTALL)
        assert match, f"not a response: {reply[:200]!r}"
        length = re.search(rb"\r\nContent-Length: (\d+)\r\n", match.group(0))
        assert length, match.group(0)
        found.append(int(match.group(1)))
        reply = reply[match.end() + int(length.group(1)):]
    return found


def normal_runs_request(port: int) -> float:
    """Seconds a fresh client takes to get `/v1/runs` (failing unless it is a 200)."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/v1/runs")
    response = connection.getresponse()
    body = response.read()
    connection.close()
    assert response.status == 200 and b'"data"' in body, (response.status, body[:200])
    return time.monotonic() - started


def test_slow_heads_past_the_cap_do_not_starve_a_normal_client(corpus):
    """300 connections trickling heads, at a 256-descriptor limit: the oldest are closed to keep the cap,
    the server's threads stay bounded, and a normal client gets `/v1/runs` within 1 s."""
    with ServerProcess([corpus / "spec"], descriptors=256) as server:
        server.wait_indexed()
        attackers = open_connections(server.port, 300, SLOW_HEAD)
        try:
            wait_for(lambda: sum(map(closed_by_server, attackers)) >= 300 - MAX_CONNECTIONS,
                     "the server to close the connections past its cap")
            # the threads of the connections it closed end as they get the CPU (147 seen on CI's busy workers)
            wait_for(lambda: thread_count(server.process.pid) <= MAX_CONNECTIONS + 16, "the server's threads bounded")
            assert normal_runs_request(server.port) < 1.0
            assert not any(read_to_close(c) for c in attackers if closed_by_server(c))  # no answer to half a head
        finally:
            for connection in attackers:
                connection.close()


@pytest.mark.slow
def test_a_trickled_head_is_closed_at_its_deadline(server):
    """A byte every half second never lets a per-read timeout fire; the deadline of the whole head does."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(SLOW_HEAD)
        give_up = time.monotonic() + 3 * HEAD_SECONDS
        closed = False
        while not closed and time.monotonic() < give_up:
            time.sleep(0.5)
            try:
                connection.sendall(b"x")
            except ConnectionError:
                closed = True
            closed = closed or closed_by_server(connection)
        assert closed, "a head trickled for three times its deadline is still open"
    normal_runs_request(server.port)


def flood(port: int, head: bytes, replies: list):
    """One connection sending `head` while reading what comes back (the server answers before the end)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        def send():
            try:
                connection.sendall(head)
            except OSError:
                pass  # the server answered and closed; the rest of the head is not read
        sender = threading.Thread(target=send)
        sender.start()
        replies.append(read_to_close(connection))
        sender.join()


def test_a_header_flood_gets_431_and_bounded_memory_given_back(server):
    """40 clients at once, each sending 97 headers of 64 KB (inside `http.client`'s own limits): each
    gets a 431, and the server's tree grows by a few MiB at most (1.3 GB before the limits)."""
    pid = server.process.pid
    head = b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\n" + b"".join(
        b"X-Flood-%d: %s\r\n" % (n, b"x" * 65_000) for n in range(97)) + b"\r\n"
    before = tree_resident_bytes(pid)
    replies = []
    with PeakMemory(pid) as peak:
        clients = [threading.Thread(target=flood, args=(server.port, head, replies)) for _ in range(40)]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
    assert len(replies) == 40 and all(statuses(reply) == [431] for reply in replies), replies[:2]
    assert peak.bytes - before < 16 * MIB, f"peak grew by {(peak.bytes - before) / MIB:.0f} MiB"  # measured: 0.4
    assert tree_resident_bytes(pid) - before < 8 * MIB
    normal_runs_request(server.port)


@pytest.mark.slow
def idle_sockets(port: int, count: int) -> list[socket.socket]:
    """`count` connections to `port` that never send a byte (connected without waiting for each)."""
    sockets = []
    for _ in range(count):
        connection = socket.socket()
        connection.setblocking(False)
        connection.connect_ex(("127.0.0.1", port))
        sockets.append(connection)
    return sockets


def test_out_of_descriptors_the_accept_loop_backs_off_and_recovers(corpus):
    """At a 64-descriptor limit, below the connection cap, idle connections exhaust the server's
    descriptors: its accept loop must not spin (CPU time over 2 s stays far below 2 s), and once
    they are gone a normal request is served."""
    with ServerProcess([corpus / "spec"], descriptors=64) as server:
        server.wait_indexed()
        pid = server.process.pid
        attackers = idle_sockets(server.port, 100)
        try:
            time.sleep(0.5)  # the accepted ones now hold every descriptor
            cpu_before = cpu_seconds(pid)
            time.sleep(2)
            spent = cpu_seconds(pid) - cpu_before
            assert spent < 0.5, f"the server spent {spent:.2f} s of CPU in 2 s while out of descriptors"
            assert any(map(closed_by_server, attackers)), "out of descriptors, no waiting connection was closed"
        finally:
            for connection in attackers:
                connection.close()
        wait_for(lambda: server.request("/v1/runs")[0] == 200, "a request served after the descriptors free up")


def test_out_of_descriptors_a_listing_is_answered_within_two_seconds(corpus):
    """200 idle sockets held against a 64-descriptor limit: a listing asked behind them (the kernel
    queues it after them) is answered within 2 s, while they are all still held."""
    with ServerProcess([corpus / "spec"], descriptors=64) as server:
        server.wait_indexed()
        held = idle_sockets(server.port, 200)
        try:
            time.sleep(0.2)
            started = time.monotonic()
            status, _, body = server.request("/v1/trajectories?run_id=spec")
            took = time.monotonic() - started
        finally:
            for connection in held:
                connection.close()
        assert status == 200 and took < 2.0, f"the listing took {took:.2f} s: {status} {body[:200]!r}"


def test_an_http_09_request_line_gets_full_headers_and_no_reflection(server):
    reply = exchange(server.port, b"GET /v1/<script>alert(1)</script>\r\n")
    assert statuses(reply) == [400], reply[:300]
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"\r\nX-Content-Type-Options: nosniff\r\n" in head and b"\r\nContent-Security-Policy: " in head
    assert b"<script>" not in reply and b"alert" not in reply and b"detail" in body


BODIES = {
    "post": b"POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s"
    % (len(SMUGGLED), SMUGGLED),
    "get": b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s" % (len(SMUGGLED), SMUGGLED),
    "chunked": b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
    % (len(SMUGGLED), SMUGGLED),
    "chunked-post": b"POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n"
    b"0\r\n\r\n" % (len(SMUGGLED), SMUGGLED),
}


@pytest.mark.parametrize("request_bytes", BODIES.values(), ids=BODIES.keys())
def test_a_body_is_never_answered_as_a_request(server, request_bytes):
    """The request is answered once and the connection closed: its body (a GET without Origin) is not."""
    expected = 405 if request_bytes.startswith(b"POST") else 200
    assert statuses(exchange(server.port, request_bytes)) == [expected]


def test_pipelined_requests_without_bodies_are_all_answered(server):
    """The control for the above: on one connection, requests without a body are each answered."""
    closing = SMUGGLED.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    assert statuses(exchange(server.port, SMUGGLED + SMUGGLED + closing)) == [200, 200, 200]


@pytest.mark.parametrize("name", ["Origin", "Sec-Fetch-Site"])
def test_a_repeated_origin_or_fetch_site_is_refused(server, name):
    own = {"Origin": f"http://localhost:{server.port}", "Sec-Fetch-Site": "same-origin"}[name]
    other = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}[name]
    for values in ((own,), (own, other), (other, own), (own, own)):
        head = f"GET /v1/runs HTTP/1.1\r\nHost: localhost:{server.port}\r\nConnection: close\r\n"
        head += "".join(f"{name}: {value}\r\n" for value in values) + "\r\n"
        assert statuses(exchange(server.port, head.encode())) == [200 if len(values) == 1 else 403], values


def test_answer_cache_counts_its_keys():
    """6,000 small answers under distinct 60 KB keys: what the cache holds, keys included, stays in budget."""
    budget = 4 * MIB
    cache = AnswerCache(budget)
    for n in range(6000):
        cache.put((1, f"/v1/runs?n={n}&pad=" + "x" * 60_000), RawJson(b'{"data":[]}'))
    held = sum(len(target) + len(body) for (_, target), body in cache.entries.items())
    assert 0 < held <= cache.size <= budget
    assert cache.get((1, f"/v1/runs?n=5999&pad={'x' * 60_000}")) is not None  # the newest stays


def test_distinct_long_query_strings_keep_the_server_bounded(server):
    """2,000 listings under distinct 15 KB query strings (30 MB of keys): the server grows by far less."""
    pid = server.process.pid
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    pad = "x" * 15_000
    before = tree_resident_bytes(pid)
    for n in range(2000):
        connection.request("GET", f"/v1/runs?n={n}&pad={pad}")
        response = connection.getresponse()
        response.read()
        assert response.status == 200
    connection.close()
    grown = tree_resident_bytes(pid) - before
    assert grown < 20 * MIB, f"grew by {grown / MIB:.0f} MiB"
