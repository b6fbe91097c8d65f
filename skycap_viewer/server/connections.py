"""What one client may hold of the server: connection slots, time, and memory for a request head.

A connection is one thread of the server, so each ceiling here bounds what an idle, slow or
oversized client costs. The ceilings, and why each:

- `MAX_CONNECTIONS` (128) open connections at once. A browser opens about six per host, so a
  hundred tabs of the viewer fit; each costs a thread and a descriptor, and the server must keep
  descriptors for the records it reads. Past it, the connection that has waited longest for a
  request head (idle keep-alive or a slow head) is closed to make room: a client that trickles
  heads on many sockets loses its oldest ones, and a client whose head arrives at once is served.
  When every connection is busy answering, a new one gets `BUSY_REPLY` (503) and is closed at
  once, without a thread.
- `SEND_SECONDS` (60) to send one whole answer, headers to last byte, however slowly the client
  reads (each write waits for the time left, not per write): a client that reads a byte now and
  then holds its connection no longer than that.
- `MAX_LONG_ANSWERS` (16) answers at once that grow with a record or a run (`/paths`, `/graph`, an
  export...: from computing them to their last byte); past it such a request waits up to
  `LONG_ANSWER_WAIT_SECONDS` (2) for a slot, then gets a 503, before it is computed. The wait is for
  clients that do read: a burst of them, and a client whose next request comes before the thread that
  sent its last answer has given its slot back. As many wait at most as there are slots; past them a
  503 comes at once, so a flood of stalled downloads holds 32 connections, not all of them (a waiting
  request holds its connection, and a full house closes connections whose heads are still unread).
  Short answers land in the
  socket's buffers whether the client reads or not, so the other connections stay for `/healthz`,
  listings and the page (a full house of stalled downloads cannot refuse them), and the memory of
  answers no one reads is that of 16 at most.
- `IDLE_SECONDS` (30) to wait for the first byte of a request (a new connection, or keep-alive
  between requests); a browser reconnects when it needs to.
- `HEAD_SECONDS` (10) for a whole request head, request line and headers, from its first byte,
  however slowly the bytes trickle (each wait is for the time left, not per byte). A browser's
  head arrives in one packet.
- `MAX_REQUEST_LINE` (16 KiB): a longer request line is 414. The page's longest URLs (filters,
  text search) are a few hundred bytes.
- `MAX_HEADER_LINE` (8 KiB) per header line, `MAX_HEADERS` (64) header lines, `MAX_HEAD_BYTES`
  (64 KiB) for the whole head: past any, 431. A browser sends about twenty short headers; parsing
  a head costs tens of times its size, so a 64 KiB head keeps each connection's peak to a few MiB.
- A request with a body (`Content-Length` other than 0, or any `Transfer-Encoding`) is answered
  and its connection closed: the body is never read, so it can never be taken as a next request.
- `DESCRIPTOR_RESERVE` (32): under a low limit on open descriptors the connection cap is lowered to
  leave this many for the server's own files, so idle clients are closed to make room before a
  listing cannot open the index (`descriptor_room`).
- `ACCEPT_BACKOFF_SECONDS` (0.1): when no descriptor is left (EMFILE, ENFILE: a hard limit below
  `MAX_CONNECTIONS` and the server's own files) the accept loop closes the `EVICTED_AT_ONCE` (16)
  longest-waiting connections (one at a time, a request queued behind 150 idle sockets waited 15 s)
  and waits this long before accepting again, instead of spinning on a listening socket
  that stays readable; clients queued behind are accepted as descriptors free up.
- `ViewerServer.request_queue_size` (512), the kernel's queue of connections not yet accepted: a
  burst of connects waits there (it costs no descriptor) instead of being dropped, which costs a
  client a 1 s SYN retry.
"""

import errno
import re
import socket
import threading
import time

from skycap_viewer.errors import ApiError

MAX_CONNECTIONS = 128
SEND_SECONDS = 60
MAX_LONG_ANSWERS = 16
LONG_ANSWER_WAIT_SECONDS = 2.0
IDLE_SECONDS = 30
HEAD_SECONDS = 10
MAX_REQUEST_LINE = 16 * 2**10
MAX_HEADER_LINE = 8 * 2**10
MAX_HEADERS = 64
MAX_HEAD_BYTES = 64 * 2**10
ACCEPT_BACKOFF_SECONDS = 0.1
DESCRIPTOR_RESERVE = 32  # descriptors no connection may take (see `descriptor_room`)
MIN_CONNECTIONS = 8
EVICTED_AT_ONCE = 16  # waiting connections closed when no descriptor is left: one a backoff took 15 s for 150
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
RECV_BYTES = 16 * 2**10
HEAD_END = re.compile(rb"\r?\n\r?\n")
BUSY_BODY = b'{"detail": "too many connections; try again"}'
BUSY_REPLY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
    b"X-Content-Type-Options: nosniff\r\nContent-Security-Policy: default-src 'none'\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(BUSY_BODY), BUSY_BODY)
)


def descriptor_room(wanted: int) -> int:
    """How many connections fit beside `DESCRIPTOR_RESERVE` descriptors kept for the server's own
    files (the index's databases, records being read, worker pipes): `wanted`, or fewer under a low
    limit on open descriptors, so clients can never take the ones a listing needs to be answered."""
    try:
        import resource
    except ImportError:  # not on this platform: no soft limit to fit under
        return wanted
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(MIN_CONNECTIONS, min(wanted, soft - DESCRIPTOR_RESERVE))


class Connections:
    """The open connections of a server: each is waiting for a request head (since when) or busy
    answering one (None). `admit` keeps their number at `cap` by closing the longest-waiting one;
    `long_answers` counts the answers that may hold a connection until their client reads them."""

    def __init__(self, cap: int = MAX_CONNECTIONS, long_answers: int = MAX_LONG_ANSWERS):
        self.cap = cap
        self.waiting_since: dict[socket.socket, float | None] = {}
        self.lock = threading.Lock()
        self.long_answers = LongAnswers(long_answers)

    def admit(self, connection: socket.socket) -> bool:
        """Whether a new connection gets a thread; at the cap the longest-waiting one is closed for it,
        and when none is waiting the new one is refused."""
        with self.lock:
            if len(self.waiting_since) >= self.cap and not self.close_longest_waiting():
                return False
            self.waiting_since[connection] = time.monotonic()
            return True

    def close_longest_waiting(self) -> bool:
        """Close the connection that has waited longest for a head (call with the lock held); False
        when every one is busy answering."""
        waiting = {c: t for c, t in self.waiting_since.items() if t is not None}
        if not waiting:
            return False
        oldest = min(waiting, key=waiting.get)
        del self.waiting_since[oldest]
        try:
            oldest.shutdown(socket.SHUT_RDWR)  # its thread's recv returns at once, and it closes the socket
        except OSError:
            pass
        return True

    def accept_failed(self, error: OSError):
        """After a failed accept: out of descriptors, close the longest-waiting connection (its
        descriptor is the next one accepted) and wait `ACCEPT_BACKOFF_SECONDS`: the listening socket
        stays readable, so trying again at once would spin a core."""
        if error.errno in OUT_OF_DESCRIPTORS:
            with self.lock:
                for _ in range(EVICTED_AT_ONCE):
                    if not self.close_longest_waiting():
                        break
            time.sleep(ACCEPT_BACKOFF_SECONDS)

    def mark(self, connection: socket.socket, waiting: bool):
        """A connection starts waiting for its next head, or starts answering one. Unknown connections
        (evicted, or handed in without `admit` as the in-process tests do) stay unknown."""
        with self.lock:
            if connection in self.waiting_since:
                self.waiting_since[connection] = time.monotonic() if waiting else None

    def release(self, connection: socket.socket):
        with self.lock:
            self.waiting_since.pop(connection, None)

    def __len__(self) -> int:
        return len(self.waiting_since)


class LongAnswers:
    """How many long answers are being sent, at most `cap` at once (`MAX_LONG_ANSWERS`); a request past
    them waits up to `wait` seconds for one to end (`LONG_ANSWER_WAIT_SECONDS`), `cap` requests at most."""

    def __init__(self, cap: int, wait: float = LONG_ANSWER_WAIT_SECONDS):
        self.cap = cap
        self.wait = wait
        self.sending = 0
        self.waiting = 0
        self.freed = threading.Condition()

    def take(self) -> bool:
        with self.freed:
            if self.sending >= self.cap and self.waiting >= self.cap:
                return False
            self.waiting += 1
            try:
                if not self.freed.wait_for(lambda: self.sending < self.cap, timeout=self.wait):
                    return False
            finally:
                self.waiting -= 1
            self.sending += 1
            return True

    def give_back(self):
        with self.freed:
            self.sending -= 1
            self.freed.notify()


def refuse_busy(connection: socket.socket):
    """Send the 503 without waiting (the accept loop must not block on a client) and close."""
    try:
        connection.setblocking(False)
        connection.send(BUSY_REPLY)
    except OSError:
        pass
    connection.close()


def read_head(connection: socket.socket, pending: bytearray) -> bytes | None:
    """One request head from `connection`, after the bytes already in `pending` (a pipelined request);
    what follows the head stays in `pending`. None when the client closed first. A request line that
    is no HTTP/1.x line (one or two words) is returned alone, at once, to be refused.

    Raises TimeoutError past `IDLE_SECONDS` before the first byte or `HEAD_SECONDS` after it, and
    `ApiError` (414 or 431) past a size limit: answered, then the connection closes."""
    deadline = time.monotonic() + (HEAD_SECONDS if pending else IDLE_SECONDS)
    while True:
        end = HEAD_END.search(pending)
        line_end = pending.find(b"\n")
        if line_end > MAX_REQUEST_LINE or (line_end < 0 and len(pending) > MAX_REQUEST_LINE):
            raise ApiError(414, "request line too long")
        if line_end >= 0 and len(pending[:line_end].split()) < 3:
            end = line_end + 1
        elif end is not None:
            end = end.end()
        if end is not None:
            if end > MAX_HEAD_BYTES:
                raise ApiError(431, "request head too large")
            head = bytes(pending[:end])
            del pending[:end]
            check_header_lines(head)
            return head
        if len(pending) > MAX_HEAD_BYTES:
            raise ApiError(431, "request head too large")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("request head too slow")
        connection.settimeout(remaining)
        chunk = connection.recv(RECV_BYTES)
        if not chunk:
            return None
        if not pending:
            deadline = time.monotonic() + HEAD_SECONDS  # the head's clock starts at its first byte
        pending += chunk


def check_header_lines(head: bytes):
    """`ApiError` (431) when a header line is too long or there are too many of them."""
    lines = head.split(b"\n")[1:]
    if len(lines) > MAX_HEADERS + 2:  # the blank line ends in two items
        raise ApiError(431, f"more than {MAX_HEADERS} headers")
    if any(len(line) > MAX_HEADER_LINE for line in lines):
        raise ApiError(431, "header line too long")


def has_body(headers) -> bool:
    """Whether the request says a body follows: any `Transfer-Encoding`, or a `Content-Length` other
    than one `0`. Its connection is closed after the answer, since the body is never read."""
    lengths = headers.get_all("Content-Length") or []
    return bool(headers.get_all("Transfer-Encoding")) or any(v.strip() != "0" for v in lengths)
