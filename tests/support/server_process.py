"""Start the real `skycap-viewer` server in a subprocess on an ephemeral port, for the tests and the bench."""

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

# The server, with its threads' stacks written to stderr on SIGUSR1 (`stacks()`): a test that fails
# while the server is stuck shows where it is stuck.
SERVE_WITH_STACKS = ("import faulthandler, runpy, signal; faulthandler.register(signal.SIGUSR1, all_threads=True); "
                     "runpy.run_module('skycap_viewer', run_name='__main__')")
LIVE = []  # the servers started and not yet stopped, for `stacks()` when a test fails
# Root reads a chmod 000 directory, and CI runs as root: a command run behind this prefix has lost the
# capabilities that bypass file permissions, so it meets an unreadable directory as any user does.
AS_A_USER = (["setpriv", "--inh-caps=-dac_override,-dac_read_search",
              "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else [])


class ServerProcess:
    """`with ServerProcess([dir, ...]) as server:` gives `server.url` and `server.get(path)`.

    It runs with `--no-cache` unless `cache_home` is given: then the persisted index lives under
    that directory (as `$XDG_CACHE_HOME`), never in the user's own cache. `descriptors` sets its
    limit on open descriptors (soft and hard, so the server cannot raise it); `cwd`, where it runs
    (the bench runs it in the clone, so `-m skycap_viewer` is the clone's code); `as_user`, without
    root's power to read what file permissions refuse (`AS_A_USER`)."""

    def __init__(self, dirs, *extra_args, env=None, cache_home=None, descriptors=None, cwd=None, as_user=False):
        cache = ["--no-cache"] if cache_home is None else []
        self.args = [*(AS_A_USER if as_user else []), sys.executable, "-c", SERVE_WITH_STACKS, *map(str, dirs),
                     "--port", "0", "--quiet", *cache, *extra_args]
        self.env = {**os.environ, **(env or {})}
        if cache_home is not None:
            self.env["XDG_CACHE_HOME"] = str(cache_home)
        self.descriptors = descriptors
        self.cwd = cwd
        self.process = None
        self.url = None
        self.token = None  # the token of a viewer that requires one, from the URL it printed
        self.lines = []  # everything the server printed after its URL line (stdout and stderr)
        self.before_stop = []  # called first when it stops: the tabs open on it close (a poll would find no server)

    def __enter__(self):
        self.process = subprocess.Popen(
            self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.cwd,
            preexec_fn=self.limit_descriptors if self.descriptors else None,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            if "http://" in line or "https://" in line:
                printed = line[line.index("http"):].split()[0]
                url, _, query = printed.partition("?")
                self.url = url.rstrip("/")
                self.token = query.removeprefix("token=") or None  # sent as a Bearer header by `request`
                for stream in (self.process.stdout, self.process.stderr):  # a full pipe would block it
                    threading.Thread(target=self.lines.extend, args=(stream,), daemon=True).start()
                LIVE.append(self)
                return self
        self.__exit__(None, None, None)
        raise RuntimeError(f"server did not start: {self.process.stderr.read()}")

    def limit_descriptors(self):
        """In the child, before it runs the server."""
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.descriptors, self.descriptors))

    def __exit__(self, *exc):
        for close in self.before_stop:
            close()
        if self in LIVE:
            LIVE.remove(self)
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stacks(self) -> str:
        """Every thread's stack in the server now, as it writes them (its output after a SIGUSR1)."""
        if self.process.poll() is not None:
            return f"(the server has ended: {self.process.returncode})"
        before = len(self.lines)
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any("most recent call first" in line for line in self.lines[before:]):
            time.sleep(0.1)
        time.sleep(0.3)  # the other threads' stacks follow the first
        return "".join(self.lines[before:])

    def output(self) -> str:
        """What the server has printed since it started serving (e.g. to look for tracebacks)."""
        return "".join(list(self.lines))

    def request(self, path, headers=None, method="GET"):
        """(status, headers, body bytes) of one request, with the server's token unless `headers` say
        `Authorization` themselves (None: send none); HTTP errors are returned, not raised."""
        headers = dict(headers or {})
        if "Authorization" not in headers and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers = {key: value for key, value in headers.items() if value is not None}
        req = urllib.request.Request(self.url + path, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def raw(self, head: str) -> tuple[int, bytes]:
        """Send `head` (request line and headers, exactly as given) on a fresh socket; (status, reply).

        The status is 0 when the reply has no status line (an HTTP/0.9 answer)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as connection:
            connection.sendall(head.replace("\n", "\r\n").encode("latin-1") + b"\r\n")
            reply = b""
            while chunk := connection.recv(65536):
                reply += chunk
        return (int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0), reply

    def get(self, path, expect=200):
        """The JSON body of a GET that must answer `expect`."""
        status, _, body = self.request(path)
        assert status == expect, f"GET {path}: {status} {body[:300]!r}"
        return json.loads(body)

    def wait_indexed(self, timeout=60):
        """Wait until every run's directory has been listed and its background indexing is done (a run reopened
        from its database is served at once, not indexing, before its directory is listed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.get("/v1/runs")["data"]
            if runs and all(run["listed"] and not run["indexing"] for run in runs):
                return runs
            time.sleep(0.1)
        raise TimeoutError(f"indexing did not finish; the server said: {self.output()[-2000:]!r}")


def served(dirs, *extra_args, **options):
    """For module fixtures (`yield from served([...])`): an indexed server that must not print a traceback."""
    with ServerProcess(dirs, *extra_args, **options) as server:
        server.wait_indexed()
        yield server
        assert "Traceback" not in server.output(), server.output()[-3000:]


def wait_for(check, what: str, timeout: float = 15):
    """Poll `check()` until it returns something true, and return that; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"after {timeout} s, still waiting for: {what}")


def all_verified(server) -> bool:
    """Every run's records have had their sidecars checked in the background (their flags are final)."""
    return all(run["sidecars_verified"] == run["trajectory_count"] for run in server.get("/v1/runs")["data"])
