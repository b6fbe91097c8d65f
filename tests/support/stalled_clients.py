"""Clients that ask for a long answer and never read it: `LONG_TEXT` is the message of the record
`tr_long` in run `long` whose `/paths` they ask for (8 MB, more than the socket buffers take);
`BIG_META` asks for `tr_meta`, whose `meta` holds it."""

import socket

BIG = b"GET /v1/trajectories/tr_long/paths?run_id=long HTTP/1.1\r\nHost: localhost\r\n\r\n"  # 8 MB, no gzip
BIG_META = b"GET /v1/trajectories/tr_meta?run_id=long HTTP/1.1\r\nHost: localhost\r\n\r\n"  # its whole 8 MB meta
LONG_TEXT = "a long prompt " * 600_000  # 8.4 MB of message text


def stalled_connection(port: int, request: bytes = BIG) -> socket.socket:
    connection = socket.socket()
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window stays small
    connection.connect(("127.0.0.1", port))
    connection.sendall(request)
    return connection
