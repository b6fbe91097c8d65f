"""The HTTP layer in process: the real handler and a real catalog, without a port.

A request is written into one end of a socket pair and the real handler answers on the other end
(the trick pdoc's web tests use), over a catalog indexed from the directory given.
`in_process_fixture` makes a test module's `web` fixture of it.
"""

import gzip
import json
import socket
import threading

import pytest

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.server.api import Api
from skycap_viewer.server.web import ViewerHandler, ViewerServer


class Response:
    def __init__(self, raw: bytes):
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def json(self):
        body = gzip.decompress(self.body) if self.headers.get("content-encoding") == "gzip" else self.body
        return json.loads(body)


class PairHandler(ViewerHandler):
    """The real handler on one end of a socket pair, which is not TCP (no Nagle to turn off)."""

    disable_nagle_algorithm = False


def read_all(sock: socket.socket, into: list) -> None:
    while chunk := sock.recv(65536):
        into.append(chunk)


class InProcess:
    """A `ViewerServer` that binds nothing; `get` hands it one request over a socket pair."""

    def __init__(self, root):
        self.catalog = Catalog([root])
        self.watcher = Watcher(self.catalog)
        self.watcher.poll()
        self.server = ViewerServer(("127.0.0.1", 0), Api(self.catalog), quiet=True, bind=False)

    def close(self):
        """Stop its search workers and close its (never bound) socket."""
        self.server.api.searches.close()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def get(self, target: str, method: str = "GET", **headers) -> Response:
        headers = {"Host": "localhost", **headers}
        request = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        client, served = socket.socketpair()
        chunks = []
        with client, served:
            client.sendall(request.encode())
            client.shutdown(socket.SHUT_WR)
            reader = threading.Thread(target=read_all, args=(client, chunks))
            reader.start()  # read while the handler writes: a reply larger than the pair's buffer would block it
            PairHandler(served, ("127.0.0.1", 0), self.server)
            served.shutdown(socket.SHUT_WR)
            reader.join()
        return Response(b"".join(chunks))

    def json(self, target: str, status: int = 200):
        response = self.get(target)
        assert response.status == status, (target, response.status, response.body[:200])
        return response.json()


def in_process_fixture(root: str, scope: str = "function"):
    """A `web` fixture: `InProcess` over the directory the fixture named `root` gives, closed after it.

    A module assigns it (`web = in_process_fixture("root")`) beside its own `root` fixture, which says
    what the server reads; `scope` is the `web` fixture's (no wider than `root`'s)."""

    @pytest.fixture(scope=scope, name="web")
    def web(request):
        with InProcess(request.getfixturevalue(root)) as server:
            yield server

    return web
