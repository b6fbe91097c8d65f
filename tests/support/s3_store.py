"""A real S3-compatible server on loopback (moto's server mode) holding copies of record directories.

`S3Store` starts it on an ephemeral port, makes one bucket, and uploads directories with boto's own
client (s3fs), as skycap's mirror would; `env` is what a viewer started beside it needs to reach it
(test credentials, the endpoint, a cache of its own). No network beyond loopback.
"""

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BUCKET = "records"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_EC2_METADATA_DISABLED": "true"}


class S3Store:
    """With `own_process`, moto runs in a process of its own (the benchmark: its clients then do not
    share an interpreter lock with it), else in a thread of this one."""

    def __init__(self, cache_home: Path, own_process: bool = False):
        os.environ.update(CREDENTIALS)  # moto's own client checks signatures with these
        self.server = self.process = None
        if own_process:
            self.process, port = moto_process()
        else:
            from moto.server import ThreadedMotoServer

            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not a line per request on stderr
            self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            self.server.start()
            port = self.server.get_host_and_port()[1]
        self.endpoint = f"http://127.0.0.1:{port}"
        self.env = {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint, "XDG_CACHE_HOME": str(cache_home)}
        self.fs = self.filesystem()
        if not self.fs.exists(BUCKET):  # moto keeps its buckets for the process: an earlier store's may be there
            self.fs.mkdir(BUCKET)

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(endpoint_url=self.endpoint, key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                 secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"], use_listings_cache=False)

    def url(self, prefix: str) -> str:
        return f"s3://{BUCKET}/{prefix}"

    def upload(self, directory: Path, prefix: str) -> str:
        """Every file under `directory` at `prefix`, its layout kept; the prefix's URL."""
        files = [path for path in sorted(Path(directory).rglob("*")) if path.is_file()]

        def put(path):
            self.fs.pipe_file(f"{BUCKET}/{prefix}/{path.relative_to(directory).as_posix()}", path.read_bytes())

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, files))
        return self.url(prefix)

    def put(self, name: str, data: bytes):
        self.fs.pipe_file(f"{BUCKET}/{name}", data)

    def delete(self, name: str):
        self.fs.rm_file(f"{BUCKET}/{name}")

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
        else:
            self.server.stop()


def moto_process() -> tuple[subprocess.Popen, int]:
    """moto's server started on a free loopback port, once it answers; its output thrown away."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("moto's server did not start within 30 s")


SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")


class ThrottlingStore:
    """A hostile store: in front of `endpoint` (moto), every GET of an object whose key ends with one of
    `throttled` is answered `503 SlowDown`, as S3 answers a client over its rate; everything else is
    passed through. `throttled_gets` counts the refused GETs, so a test can hold the retries to a budget."""

    def __init__(self, endpoint: str, throttled: tuple[str, ...]):
        import http.client
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        target = endpoint.split("://", 1)[1]
        store = self
        self.throttled_gets = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def relay(self):
                path = self.path.split("?", 1)[0]
                if self.command == "GET" and path.endswith(throttled):
                    store.throttled_gets += 1
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(SLOW_DOWN)
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream = http.client.HTTPConnection(target, timeout=30)
                upstream.request(self.command, self.path, body=body or None, headers=dict(self.headers.items()))
                reply = upstream.getresponse()
                data = reply.read()
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
