"""The HTTP layer: a threading server holding the API, one handler for GET and HEAD.

Every request first passes the `Host` allowlist (DNS rebinding); API requests from another
site are refused (`Origin`, `Sec-Fetch-Site`, each of which must come once at most). Static files
come from a fixed table of the packaged page files, built once at start: no path from a request
ever reaches the disk.

What a connection may hold (slots, time, head size) is in `connections.py`: the handler reads each
request head itself, within those limits, instead of `http.server`'s per-line reads (no total
deadline, 100 headers of 64 KiB). Only HTTP/1.x requests are answered, always with full headers:
an HTTP/0.9-style request line (no version) gets a 400 like any other malformed line. An answer
too long to hold (an export: a `Download`) is sent as it is made, chunked.
"""

import io
import ipaddress
import socket
import ssl
import sys
import time
import traceback
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote

from skycap_viewer.errors import ApiError
from skycap_viewer.page import IndexPage, page_folder
from skycap_viewer.printable import say
from skycap_viewer.server.access import NEEDS_TOKEN_PAGE, Access, offered_token, shown_target
from skycap_viewer.server.api import Api
from skycap_viewer.server.caches import LISTING_CACHE_BYTES, AnswerCache
from skycap_viewer.server.connections import (
    MAX_CONNECTIONS,
    SEND_SECONDS,
    Connections,
    descriptor_room,
    has_body,
    read_head,
    refuse_busy,
)
from skycap_viewer.wire import Download, RawJson, encode_json, gzipped

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}
STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
JSON_TYPE = "application/json; charset=utf-8"
GZIP_MIN_BYTES = 1024
CHUNK_BYTES = 64 * 2**10  # what a chunk of a `Download` holds at least (its last one excepted)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
API_ROOTS = (["v1"], ["healthz"], ["__viewer"])  # first segment of an API path; `/api/` may precede v1 and healthz
CAPTURE = None  # a route segment that matches any one segment and is passed to the answer
HANDSHAKE_SECONDS = 10  # the most a TLS client may take to say hello, on its own connection's thread
LONG_ANSWERS_BUSY = {"detail": "too many long answers are being sent at once (clients not reading them); try again"}


@dataclass(frozen=True)
class Route:
    """One API path: literal segments and captures, the `Api` method that answers it, and its policies.

    A `per_generation` answer depends only on the index generation and the request target: it carries
    an ETag (a poll that changed nothing gets 304) and is kept encoded in the server's answer cache.
    A `record_sized` answer grows with a record or a run (megabytes, more than a socket's buffers take
    at once, so it holds its connection until the client reads it): it takes one of the long answers'
    slots (`answer`). Every other answer is small and lands in the buffers. Each route says both, in
    the one table, so a route added or changed cannot be forgotten by a list kept elsewhere."""

    segments: tuple
    answer: str
    per_generation: bool = False
    record_sized: bool = False

    def match(self, segments: list[str]) -> list[str] | None:
        """The captured segments, percent-decoded, when `segments` (as written) is this route's path, else
        None. A literal segment matches only as written: `/v1/trajectories/export` is the export, and a
        record whose id is `export` is `/v1/trajectories/%65xport` (any encoding of it is an id)."""
        if len(segments) != len(self.segments):
            return None
        captured = []
        for wanted, given in zip(self.segments, segments, strict=True):
            if wanted is CAPTURE:
                captured.append(unquote(given))
            elif wanted != given:
                return None
        return captured


ROUTES = (
    Route(("healthz",), "healthz"),
    Route(("__viewer",), "viewer"),
    Route(("v1", "runs"), "runs", per_generation=True),
    Route(("v1", "trajectories"), "trajectories", per_generation=True),
    # the export before the record of an id: see `Route.match`
    Route(("v1", "trajectories", "export"), "export", record_sized=True),
    Route(("v1", "trajectories", CAPTURE), "trajectory", record_sized=True),  # its whole meta and annotations
    Route(("v1", "trajectories", CAPTURE, "paths"), "paths", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "paths", CAPTURE, "row"), "path_row", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "paths", CAPTURE, "messages"), "path_messages", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "paths", CAPTURE, "chat"), "path_chat", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "graph"), "graph", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "exchanges"), "exchanges", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "timeline"), "timeline", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "forks"), "forks", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "notable"), "notable", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "retokenized"), "retokenized", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "experts"), "experts", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "message"), "node_message", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "media"), "node_media", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "mirror"), "trajectory_mirror", record_sized=True),
    Route(("v1", "trajectories", CAPTURE, "snapshot"), "snapshot", record_sized=True),
    Route(("v1", "values"), "values", per_generation=True),
    Route(("v1", "search"), "search"),
    Route(("v1", "groups"), "groups", per_generation=True),
    Route(("v1", "groups", CAPTURE), "group", per_generation=True),
    Route(("v1", "groups", CAPTURE, "lineup"), "lineup", record_sized=True),
    Route(("v1", "compare"), "compare", record_sized=True),
    # answers over two runs may be kept per generation too: the generation is the whole catalog's
    Route(("v1", "compare", "runs"), "compare_runs", per_generation=True),
    Route(("v1", "lineage"), "lineage", per_generation=True),
    Route(("v1", "steps", "timeline"), "step_timeline", per_generation=True, record_sized=True),
)


def api_segments(raw_path: str) -> list[str] | None:
    """The segments of an API path as written (without a leading `api`), or None for a page file."""
    segments = raw_path.split("/")[1:]
    if segments[:1] == ["api"] and segments[1:2] in (["v1"], ["healthz"]):
        segments = segments[1:]
    return segments if segments[:1] in API_ROOTS else None


def match_route(segments: list[str]) -> tuple[Route, list[str]]:
    for route in ROUTES:
        captured = route.match(segments)
        if captured is not None:
            return route, captured
    raise ApiError(404, f"no route {'/'.join(segments)}")


def static_files() -> dict:
    """URL path -> (packaged file, content type) for every page file, found once at start."""
    table = {}

    def walk(folder, prefix):
        for item in folder.iterdir():
            if item.name.startswith((".", "_")):
                continue
            if item.is_dir():
                walk(item, f"{prefix}{item.name}/")
                continue
            suffix = item.name[item.name.rfind("."):] if "." in item.name else ""
            if suffix in STATIC_TYPES:
                table[f"{prefix}{item.name}"] = (IndexPage(item) if item.name == "index.html" else item,
                                                 STATIC_TYPES[suffix])

    walk(page_folder(), "/")
    return table


def host_names(bound_host: str, allowed=()) -> frozenset:
    """The `Host` names a browser uses for this server: loopback names, the bound address, and the names
    `--allowed-host` accepts (a machine's name when serving beyond loopback). Any other name is refused:
    a page on another site that rebinds its own name to this address gets nothing."""
    names = set(LOOPBACK_NAMES)
    for name in (bound_host, *allowed):
        name = name.strip().lower()
        names.add(f"[{name.strip('[]')}]" if ":" in name else name)
    return frozenset(names)


def is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "")


def host_allowed(value: str, names: frozenset, port: int, wildcard: bool) -> bool:
    """Whether one `Host` header names this server: an allowed name, and our port if any."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        if not bracket:
            return False
        name += "]"
    else:
        name, _, rest = value.partition(":")
        rest = ":" + rest if rest else ("" if not value.endswith(":") else ":")
    digits = rest[1:]  # ASCII only: "²".isdigit() is true, but int("²") raises
    if rest and not (rest.startswith(":") and digits.isascii() and digits.isdigit() and int(digits) == port):
        return False
    if name in names:
        return True
    if not wildcard:
        return False
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return name.startswith("[") == (":" in name)


class ViewerServer(ThreadingHTTPServer):
    """Holds the API and the request policy; one thread per connection, `max_connections` at most."""

    daemon_threads = True
    request_queue_size = 512  # see `connections.py`

    def __init__(self, address, api: Api, quiet: bool = False, bind: bool = True, allowed_hosts=(),
                 max_connections: int = MAX_CONNECTIONS, access: Access | None = None,
                 tls: ssl.SSLContext | None = None):
        """`bind=False` opens no socket: requests are then handed in one connection at a time
        (`ViewerHandler(connection, address, server)`), as the in-process tests do. `access`: the token
        every request needs (`access.py`); `tls`: serve HTTPS, each handshake on its connection's thread."""
        host = address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.api = api
        self.access = access or Access()
        self.scheme = "https" if tls is not None else "http"
        self.answers = AnswerCache(LISTING_CACHE_BYTES)
        self.connections = Connections(descriptor_room(max_connections))
        self.quiet = quiet
        self.static = static_files()
        self.allowed_names = host_names(host, allowed_hosts)
        self.wildcard = is_wildcard(host)
        super().__init__(address, ViewerHandler, bind_and_activate=bind)
        if tls is not None and bind:
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def get_request(self):
        """Accept one connection; out of descriptors, back off first (the caller then tries again)."""
        try:
            return super().get_request()
        except OSError as error:
            self.connections.accept_failed(error)
            raise

    def process_request(self, request, client_address):
        """Start a connection's thread if it gets a slot, else refuse it at once (see `Connections`)."""
        if self.connections.admit(request):
            super().process_request(request, client_address)
        else:
            refuse_busy(request)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release(request)

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return  # the client went away; nothing to tell anyone
        if not self.quiet:
            say(f"skycap-viewer: request failed: {type(error).__name__}: {error}")


class ViewerHandler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "skycap-viewer"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without this, keep-alive waits ~40 ms
    timeout = SEND_SECONDS  # until a request is read: reading has its own limits, and each answer its deadline
    default_request_version = "HTTP/1.0"  # so an error before the version is known still has headers

    def setup(self):
        self.shook = True
        if isinstance(self.request, ssl.SSLSocket):  # here, not in the accepting thread: a silent client stalls no one
            try:
                self.request.settimeout(HANDSHAKE_SECONDS)
                self.request.do_handshake()
            except (OSError, ValueError):
                self.shook = False
        super().setup()
        self.rfile.close()  # heads are read from the socket itself (`read_head`), each into its own buffer
        self.pending = bytearray()  # what the client sent past the head being answered (pipelining)

    def handle(self):
        if self.shook:  # a failed TLS handshake leaves nothing to answer
            super().handle()

    def handle_one_request(self):
        """Read one request head within the limits of `connections.py`, then answer it. A request
        with a body is answered and its connection closed: the body is never read as a request."""
        self.headers, self.command, self.path, self.requestline = None, None, "", ""
        self.request_version = self.default_request_version
        self.started = time.monotonic()
        try:
            head = read_head(self.connection, self.pending)
        except ApiError as refused:  # a head past a limit of `connections.py`
            self.send_error(refused.status, refused.detail)
            return
        except (TimeoutError, ConnectionError):
            head = None
        if head is None:
            self.close_connection = True
            return
        self.server.connections.mark(self.connection, waiting=False)
        self.deadline = time.monotonic() + SEND_SECONDS  # for the whole answer (`send`)
        line, _, rest = head.partition(b"\n")
        self.raw_requestline, self.rfile = line + b"\n", io.BytesIO(rest)
        if self.parse_request():
            self.close_connection = self.close_connection or has_body(self.headers)
            getattr(self, "do_" + self.command)()
        self.server.connections.mark(self.connection, waiting=True)

    def parse_request(self) -> bool:
        """`http.server`'s parsing, for HTTP/1.x request lines only (it would take `GET /x` as HTTP/0.9)."""
        if len(self.raw_requestline.split()) == 2:
            self.requestline = ""
            self.send_error(400, "the request line needs an HTTP version")
            return False
        return super().parse_request()

    def handle_expect_100(self) -> bool:
        """No `100 Continue`: the viewer reads no body, so none is asked for (the answer comes at once)."""
        return True

    def __getattr__(self, name):
        if name.startswith("do_"):  # any other method: refused, the viewer is read-only
            return self.refuse_method
        raise AttributeError(name)

    def do_GET(self):
        self.dispatch(send_body=True)

    def do_HEAD(self):
        self.dispatch(send_body=False)

    def refuse_method(self):
        self.started = time.monotonic()
        if self.host_refused() or self.token_refused(is_api=True):
            return
        self.reply_json(405, {"detail": "read-only"}, extra={"Allow": "GET, HEAD"}, send_body=True)

    # -- policy ---------------------------------------------------------------------------

    def host_refused(self) -> bool:
        """Answer 400 unless exactly one `Host` header names this server."""
        hosts = self.headers.get_all("Host") or []
        server = self.server
        if len(hosts) == 1 and host_allowed(hosts[0], server.allowed_names, server.port, server.wildcard):
            return False
        self.close_connection = True
        names = ", ".join(sorted(server.allowed_names))
        self.reply_json(400, {"detail": f"unexpected Host header: this viewer answers to {names} "
                                        "(serve with --allowed-host NAME to accept another name)"})
        return True

    def token_refused(self, is_api: bool) -> bool:
        """Answer 401 unless the request carries the viewer's token (`access.py`)."""
        if self.server.access.granted(self.headers, self.server.port):
            return False
        why = ("this viewer needs its token: open the link it printed at start, or send "
               "'Authorization: Bearer TOKEN'")
        headers = {"Cache-Control": "no-store", "WWW-Authenticate": 'Bearer realm="skycap-viewer"'}
        if is_api:
            self.reply_json(401, {"detail": why}, extra=headers)
        else:
            self.reply(401, NEEDS_TOKEN_PAGE, STATIC_TYPES[".html"], headers, send_body=self.command != "HEAD")
        return True

    def cross_site(self) -> bool:
        """Whether an API request comes from another site; a repeated `Origin` or `Sec-Fetch-Site` counts
        as one (a check of its first copy only could be passed by the copy behind it)."""
        sites = self.headers.get_all("Sec-Fetch-Site") or []
        origins = self.headers.get_all("Origin") or []
        if len(sites) > 1 or len(origins) > 1:
            return True
        if sites and sites[0].lower() in ("cross-site", "same-site"):
            return True
        return bool(origins) and origins[0].lower() != f"{self.server.scheme}://{self.headers.get('Host', '').lower()}"

    # -- dispatch -------------------------------------------------------------------------

    def dispatch(self, send_body: bool):
        self.started = time.monotonic()
        if self.host_refused():
            return
        target = self.path.split("#", 1)[0]
        raw_path, _, query = target.partition("?")
        if not raw_path.startswith("/"):
            self.reply_json(400, {"detail": "bad request target"}, send_body=send_body)
            return
        segments = api_segments(raw_path)
        cookie = None
        if segments is None and self.server.access.token is not None:
            if self.server.access.matches(offered_token(query)):  # the printed link: the page, and its cookie
                cookie = self.server.access.set_cookie(self.server.port)
        if cookie is None and self.token_refused(is_api=segments is not None):
            return
        if segments is None:
            self.serve_static(raw_path, send_body, {"Set-Cookie": cookie} if cookie else {})
        elif self.cross_site():
            self.reply_json(403, {"detail": "cross-site request refused"}, send_body=send_body)
        else:
            self.answer(segments, target, parse_qs(query, keep_blank_values=True), send_body)

    def answer(self, segments: list[str], target: str, params: dict, send_body: bool):
        """Answer an API request by its route. One whose answer grows with a record or a run holds one of
        the long answers' slots from computing it to its last byte sent (so as many are built at once at
        most, whatever their clients do), or is a 503 at once when none is free."""
        try:
            route, args = match_route(segments)
        except ApiError as error:
            self.reply_json(error.status, {"detail": error.detail}, send_body=send_body)
            return
        if not route.record_sized:
            self.answer_route(route, args, target, params, send_body)
            return
        if not self.server.connections.long_answers.take():
            self.close_connection = True
            self.reply_json(503, LONG_ANSWERS_BUSY, extra={"Retry-After": "1"}, send_body=send_body)
            return
        try:
            self.answer_route(route, args, target, params, send_body)
        finally:
            self.server.connections.long_answers.give_back()

    def answer_route(self, route: Route, args: list, target: str, params: dict, send_body: bool):
        """The answer of `route`; a per-generation answer is sent from cache or as 304 when it can."""
        etag = None
        try:
            compute = getattr(self.server.api, route.answer)
            if route.per_generation:
                generation = self.server.api.catalog.generation
                etag = f'W/"{generation}-{zlib.crc32(target.encode()):08x}"'
                if etag in [t.strip() for t in self.headers.get("If-None-Match", "").split(",")]:
                    self.reply(304, b"", None, {"ETag": etag, "Cache-Control": "no-store"}, send_body=False)
                    return
                key = (generation, target)
                status, payload = 200, self.server.answers.get(key)
                if payload is None:
                    status, payload = compute(*args, params)
                    if status == 200:
                        payload = RawJson(encode_json(payload))
                        self.server.answers.put(key, payload)
            else:
                status, payload = compute(*args, params)
            if type(payload) is Download and payload.body is None:
                self.reply_download(payload, send_body)
                return
        except ApiError as error:
            status, payload = error.status, {"detail": error.detail}
        except Exception as error:  # a bug: say so, keep serving
            traceback.print_exc(file=sys.stderr)
            status, payload = 500, {"detail": f"internal error: {type(error).__name__}: {error}"}
        if type(payload) is Download:
            disposition = f'attachment; filename="{payload.file_name}"'
            self.reply(status, payload.body, payload.content_type,
                       {"Cache-Control": "no-store", "Content-Disposition": disposition}, send_body)
            return
        self.reply_json(status, payload, extra={"ETag": etag} if etag and status == 200 else None,
                        send_body=send_body)

    def serve_static(self, raw_path: str, send_body: bool, extra: dict):
        path = unquote(raw_path)
        parts = path.split("/")[1:]
        sent = self.requestline.split(" ")[1] if " " in self.requestline else ""  # before `//` was collapsed
        doubled = "//" in sent.split("?")[0]
        if "\\" in path or "\x00" in path or doubled or any(p.startswith(".") for p in parts):
            self.reply_json(404, {"detail": "not found"}, send_body=send_body)
            return
        table = self.server.static
        entry = table.get("/index.html" if path == "/" else path)
        if entry is None and "." not in parts[-1]:
            entry = table.get("/index.html")  # a deep link: the page reads its route from the URL
        if entry is None:
            self.reply_json(404, {"detail": f"not found: {path}"}, send_body=send_body)
            return
        item, content_type = entry
        self.reply(200, item.read_bytes(), content_type, {"Cache-Control": "no-cache", **extra}, send_body)

    # -- replies --------------------------------------------------------------------------

    def send(self, data: bytes):
        """Write to the client within what is left of the answer's `SEND_SECONDS`, however slowly it reads."""
        remaining = getattr(self, "deadline", time.monotonic() + SEND_SECONDS) - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the answer was not read in time")
        self.connection.settimeout(remaining)
        self.wfile.write(data)

    def flush_headers(self):
        if hasattr(self, "_headers_buffer"):
            self.send(b"".join(self._headers_buffer))
            self._headers_buffer = []

    def reply_json(self, status: int, payload, extra=None, send_body: bool = True):
        headers = {"Cache-Control": "no-store", **(extra or {})}
        body = payload if type(payload) is RawJson else encode_json(payload)
        self.reply(status, body, JSON_TYPE, headers, send_body)

    def reply(self, status: int, body: bytes, content_type, headers: dict, send_body: bool):
        try:
            self.send_response(status)
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            if content_type:
                self.send_header("Content-Type", content_type)
                self.send_header("Vary", "Accept-Encoding")
            accepted = self.headers.get("Accept-Encoding", "") if getattr(self, "headers", None) else ""
            if len(body) > GZIP_MIN_BYTES and "gzip" in accepted:
                body = gzipped(body)
                self.send_header("Content-Encoding", "gzip")
            for name, value in headers.items():
                self.send_header(name, value)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if send_body and status != 304:
                self.send(body)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        self.log_access(status)

    def reply_download(self, download: Download, send_body: bool):
        """Send an answer as it is made, never whole: in chunks, or to an HTTP/1.0 client until the connection
        closes. Cut short (no last chunk) if making it fails."""
        status = 200
        chunked = self.request_version != "HTTP/1.0"
        self.close_connection = self.close_connection or not chunked
        try:
            self.send_response(status)
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            self.send_header("Content-Type", download.content_type)
            self.send_header("Content-Disposition", f'attachment; filename="{download.file_name}"')
            self.send_header("Cache-Control", "no-store")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if send_body:
                waiting = bytearray()  # small pieces (a record's rows, path by path) go out as one chunk
                for piece in download.pieces:
                    waiting += piece
                    if len(waiting) >= CHUNK_BYTES:
                        self.write_piece(waiting, chunked)
                self.write_piece(waiting, chunked)
                if chunked:
                    self.send(b"0\r\n\r\n")
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as error:  # a bug while making it: the client sees a cut answer, the server goes on
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            status = f"200 cut short: {type(error).__name__}"
        finally:
            download.close()
        self.log_access(status)

    def write_piece(self, waiting: bytearray, chunked: bool):
        """Send what is waiting (as one chunk of a chunked answer), and empty it."""
        if waiting:
            self.send(b"%x\r\n%s\r\n" % (len(waiting), waiting) if chunked else waiting)
            waiting.clear()

    def send_error(self, code, message=None, explain=None):
        """Errors the standard library detects (bad request line, oversized headers) as JSON too."""
        self.started = getattr(self, "started", time.monotonic())
        self.close_connection = True
        self.reply_json(code, {"detail": message or self.responses.get(code, ("error",))[0]})

    def log_access(self, status: int):
        if not self.server.quiet:
            elapsed = (time.monotonic() - self.started) * 1000
            command, path = getattr(self, "command", None), shown_target(getattr(self, "path", ""),
                                                                          self.server.access.token)
            say(f"{command} {path} {status} {elapsed:.0f}ms")

    def log_request(self, code="-", size="-"):
        pass  # `log_access` writes one line per request instead

    def log_message(self, format, *args):
        """The standard library's own lines (a bad request line, quoted): escaped, the token hidden."""
        if not self.server.quiet:
            line = format % args
            if self.server.access.token:
                line = line.replace(self.server.access.token, "…")
            say(f"{self.address_string()} - {line}")
