"""Requests from anywhere: hypothesis writes request lines, queries and headers byte by byte.

Everything goes over a raw socket to the real server, so nothing on the client side cleans the
request up. Whatever arrives, the server answers with a 2xx, 3xx or 4xx status (never 5xx, never
a dropped connection or a traceback), with its security headers, and keeps serving. The rules of
`test_http_security.py` (Host allowlist, cross-site refusal, read-only methods) are checked here
as properties over generated values; the table there names the known tricky cases. Record ids
that try to name files are refused without touching the disk.
"""

import gzip
import json
import re
import socket
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.server_process import served

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
ROUTE_WORDS = [
    "v1", "api", "trajectories", "groups", "runs", "paths", "graph", "exchanges", "forks",
    "healthz", "__viewer", "tr_tokens", "tr_ok", "spec", "broken", "..", ".", "", "%2e%2e", "%2f",
    "%00", "%", "index.html", "js", "style.css", "app.js", "~", "n1", "0"
]
PARAMS = [
    "run_id", "text", "sort", "order", "limit", "cursor", "step", "task_id", "status",
    "annotation", "q", "flag", "group_by", "a", "b", "refresh"
]
HEADER_NAMES = [
    "Accept-Encoding", "If-None-Match", "Range", "Content-Length", "Transfer-Encoding", "Expect",
    "Connection", "Cookie", "Origin", "Sec-Fetch-Site", "X-Forwarded-Host", "Accept", "Referer"
]
LATIN1 = st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f")
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@pytest.fixture(scope="module")
def server(corpus):
    yield from served([corpus / "spec", corpus / "broken"])


class Reply:
    """One parsed response; `status` is None for a bare HTTP/0.9-style answer (no status line)."""

    def __init__(self, raw: bytes, method: str):
        match = re.match(rb"HTTP/1\.[01] (\d{3})[ \r]", raw)
        head, _, body = raw.partition(b"\r\n\r\n") if match else (b"", b"", raw)
        self.status = int(match.group(1)) if match else None
        self.headers = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.body = gzip.decompress(body) if self.headers.get("content-encoding") == "gzip" else body
        self.method = method


def exchange(server, request: bytes, method: str = "GET") -> Reply:
    """Send one request as bytes; read exactly one final response (by its Content-Length)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
        connection.sendall(request)
        data = b""
        while True:
            head_end = data.find(b"\r\n\r\n")
            if head_end >= 0 and re.match(rb"HTTP/1\.[01] 1\d\d", data):  # 100 Continue: skip it
                data = data[head_end + 4 :]
                continue
            if head_end >= 0:
                length = re.search(rb"\r\ncontent-length: *(\d+)", data[:head_end], re.IGNORECASE)
                bodyless = method == "HEAD" or data.startswith((b"HTTP/1.1 304", b"HTTP/1.0 304"))
                needed = head_end + 4 + (0 if bodyless or not length else int(length.group(1)))
                if len(data) >= needed and (length or bodyless):
                    return Reply(data[:needed], method)
            chunk = connection.recv(65536)
            if not chunk:
                assert data, f"the server closed the connection without an answer to {request[:300]!r}"
                return Reply(data, method)
            data += chunk


def assert_sound(reply: Reply):
    """What every answer must be: not a server error, guarded, and plain JSON when it is JSON."""
    assert 200 <= reply.status < 500, (reply.status, reply.body[:300])
    assert "frame-ancestors 'none'" in reply.headers.get("content-security-policy", ""), reply.headers
    assert reply.headers.get("x-content-type-options") == "nosniff"
    assert b"Traceback" not in reply.body
    if reply.headers.get("content-type", "").startswith("application/json") and reply.body:
        json.loads(reply.body, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def head(method: str, target: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", *(f"{name}: {value}" for name, value in headers), "", ""]
    return "\r\n".join(lines).encode("latin-1", "replace")


segments = st.one_of(
    st.sampled_from(ROUTE_WORDS),
    TEXT.map(lambda s: quote(s, safe="")),
    st.text("%/.;:@!$&'()*+,=~-_aZ09\\", max_size=8),
)
paths = st.lists(segments, max_size=6).map(lambda parts: "/" + "/".join(parts))
queries = st.lists(st.tuples(st.one_of(st.sampled_from(PARAMS), TEXT), TEXT), max_size=5).map(
    lambda pairs: "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
)
targets = st.tuples(paths, queries).map(lambda pq: f"{pq[0]}?{pq[1]}" if pq[1] else pq[0])
header_values = st.text(LATIN1, max_size=20)
extra_headers = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(HEADER_NAMES), st.from_regex(r"\A[A-Za-z][A-Za-z0-9-]{0,15}\Z")),
        header_values,
    ),
    max_size=4,
)


@FUZZ
@given(method=st.sampled_from(["GET", "GET", "GET", "HEAD"]), target=targets, headers=extra_headers)
@pytest.mark.slow
def test_any_get_is_answered_soundly(server, method, target, headers):
    sent = [("Host", f"127.0.0.1:{server.port}"), *[(n, v) for n, v in headers if n.lower() != "host"]]
    reply = exchange(server, head(method, target, sent), method)
    assert_sound(reply)
    api = re.match(r"/(api/)?(v1|healthz|__viewer)(/|$|\?)", target)
    if api and reply.status == 200:
        assert reply.headers["content-type"] == "application/json; charset=utf-8"
        assert reply.headers["cache-control"] == "no-store"
        for name, value in headers:
            if name.lower() == "origin":
                assert value.strip().lower() == f"http://127.0.0.1:{server.port}", value
            if name.lower() == "sec-fetch-site":
                assert value.strip().lower() not in ("cross-site", "same-site"), value


@FUZZ
@given(target=targets, junk=st.text(LATIN1, max_size=40))
@pytest.mark.slow
def test_any_other_method_is_refused(server, target, junk):
    method = re.sub(r"[^A-Za-z]", "", junk)[:10] or "POST"
    if method in ("GET", "HEAD"):
        method = "PUT"
    reply = exchange(server, head(method, target, [("Host", "localhost")]), method)
    assert_sound(reply)
    assert reply.status == 405, (method, target, reply.status)


def host_is_allowed(value: str, port: int) -> bool:
    """The allowlist, stated independently: a loopback name, optionally with this server's port."""
    match = re.fullmatch(r"(localhost|127\.0\.0\.1|\[::1\])(?::([0-9]+))?", value.strip().lower())
    return bool(match) and (match.group(2) is None or int(match.group(2)) == port)


hosts = st.one_of(
    st.text(LATIN1, max_size=30),
    st.tuples(
        st.sampled_from([*LOOPBACK, "LocalHost", "[::1", "evil.example", "127.0.0.2", "::1", "0.0.0.0", ""]),
        st.text(":0123456789.@[]/\\#?²¹ abc", max_size=8),
    ).map("".join),
)


@FUZZ
@given(value=hosts, second=st.one_of(st.none(), hosts),
       target=st.sampled_from(["/", "/v1/runs", "/healthz", "/index.html", "/v1/nothing"]))
def test_only_loopback_hosts_are_answered(server, value, second, target):
    """One Host header naming this server is answered; anything else, or a second Host, gets a 400."""
    headers = [("Host", value)] + ([("Host", second)] if second is not None else [])
    reply = exchange(server, head("GET", target, headers))
    assert_sound(reply)
    if host_is_allowed(value, server.port) and second is None:
        assert reply.status in (200, 404), (value, reply.status)
    else:
        assert reply.status == 400, (headers, reply.status, reply.body[:200])
        assert b"tr_" not in reply.body


@FUZZ
@given(
    origin=st.one_of(st.just("OWN"), st.text(LATIN1, min_size=1, max_size=30)),
    site=st.sampled_from(["cross-site", "same-site", None]),
)
def test_other_origins_are_refused_on_the_api(server, origin, site):
    own = f"http://127.0.0.1:{server.port}"
    origin = own if origin == "OWN" else origin
    headers = [("Host", f"127.0.0.1:{server.port}"), ("Origin", origin)]
    if site:
        headers.append(("Sec-Fetch-Site", site))
    reply = exchange(server, head("GET", "/api/v1/trajectories?run_id=spec", headers))
    assert_sound(reply)
    if origin.strip().lower() == own and not site:
        assert reply.status == 200
    else:
        assert reply.status == 403, (origin, site, reply.status)
        assert b"tr_" not in reply.body


MALFORMED = {
    "binary": b"\x00\x01\x02\r\n\r\n",
    "no-colon": b"GET / HTTP/1.1\r\nHost: localhost\r\nNoColonHere\r\n\r\n",
    "folded": b"GET / HTTP/1.1\r\nHost: localhost\r\n folded: continuation\r\n\r\n",
    "long-target": b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "many-headers": b"GET / HTTP/1.1\r\nHost: localhost\r\n" + b"X-Many: 1\r\n" * 150 + b"\r\n",
    "long-header": b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\n",
    "huge-length": b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999\r\n\r\n",
    "chunked": b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "expect-continue": b"GET /v1/runs HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\r\n",
    "20k-params": b"GET /v1/runs?" + b"&".join(b"a=%d" % n for n in range(20_000)) + b" HTTP/1.1\r\n"
    b"Host: localhost\r\n\r\n",
    "utf8-target": "GET /v1/trajectories?q=\u00e9\u00e8 HTTP/1.1\r\nHost: localhost\r\n\r\n".encode(),
    "invalid-utf8-target": b"GET /v1/trajectories/\xff\xfe/paths HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "http-1.0-no-host": b"GET /v1/runs HTTP/1.0\r\n\r\n",
    "asterisk": b"GET * HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "absolute-form": b"GET http://evil.example/v1/runs HTTP/1.1\r\nHost: localhost\r\n\r\n",
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_requests(server, raw):
    """Broken framing is a 4xx, with full headers even when the bytes are no HTTP/1.x request line."""
    reply = exchange(server, raw)
    assert reply.status is not None, reply.body[:200]
    assert_sound(reply)
    assert server.request("/v1/runs")[0] == 200


FILE_NAMING_IDS = [
    "..%2f..%2f..%2fetc%2fpasswd", "%2fetc%2fpasswd", "..%2fbroken%2ftr_ok", "tr_tokens%00",
    "tr_tokens%00.json.zst", "tr_tokens.json.zst", "tr_tokens.tokens.zst", "..", "%2e%2e", ".",
    "~root", "%5c..%5ctr_ok", "tr_tokens%2f..", "tr_ok%2f..%2f..%2fspec%2ftr_tokens",
    "C:%5cWindows", quote("tr_tokens\n", safe=""), "%252e%252e%252f"
]


@pytest.mark.parametrize("record_id", FILE_NAMING_IDS)
@pytest.mark.parametrize("route", ["", "/paths", "/graph", "/exchanges", "/forks?a=0&b=1"])
def test_ids_that_name_files_are_not_found(server, record_id, route):
    """Records are found by id in the index, never by building a path from the request."""
    for run in ("", "spec", "broken", "..%2fspec", "%2fetc"):
        query = f"run_id={run}" if run else ""
        separator = "&" if "?" in route else "?"
        target = f"/v1/trajectories/{record_id}{route}{separator if query else ''}{query}"
        reply = exchange(server, head("GET", target, [("Host", "localhost")]))
        assert_sound(reply)
        assert reply.status in (400, 404), (target, reply.status, reply.body[:200])
        assert b"root:" not in reply.body and b"token_ids" not in reply.body


def test_the_server_is_still_whole(server):
    """After all of the above the corpus reads as before: every listed rollout still opens."""
    rows = server.get("/v1/trajectories?limit=1000")["data"]
    assert rows
    for row in rows:
        if not row.get("unreadable"):
            server.get(f"/v1/trajectories/{quote(row['id'], safe='')}/paths?run_id={row['run_id']}")
