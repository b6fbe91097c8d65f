"""The HTTP layer's defences on the real server: Host allowlist, cross-site refusal, static confinement,
read-only methods and security headers. Requests with exact headers go over a raw socket."""

import json
from pathlib import Path

import pytest

from skycap_viewer.server.web import static_files

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
)
STATIC = Path(__file__).parent.parent / "static"
SERVED = static_files()  # URL path -> (file as served, type): index.html with its preloads written out
ROUTES = ("/healthz", "/__viewer", "/v1/runs", "/api/v1/trajectories?run_id=spec", "/", "/index.html",
          "/run/spec/t/tr_tokens")


def request(server, target="/healthz", hosts=("localhost",), method="GET", extra=()):
    lines = [f"{method} {target} HTTP/1.1", *(f"Host: {h}" for h in hosts), *extra, "Connection: close", ""]
    return server.raw("\n".join(lines))


def body_of(reply: bytes) -> bytes:
    return reply.split(b"\r\n\r\n", 1)[1]


def headers_of(reply: bytes) -> dict:
    head = reply.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    return {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in head)}


def allowed_hosts(port):
    return ["localhost", f"localhost:{port}", "127.0.0.1", f"127.0.0.1:{port}", "[::1]", f"[::1]:{port}",
            f"LOCALHOST:{port}"]


def refused_hosts(port):
    other_port = port + 1 if port < 65535 else 1
    return ["evil.example", f"evil.example:{port}", f"192.168.1.5:{port}", "localhost.evil.example",
            f"localhost.evil.example:{port}", f"[::2]:{port}", "[::1]evil", "[::1]:x:y", "::1",
            "localhost:abc", "localhost:", f"localhost:{other_port}", f"127.0.0.1:{port}@evil.example", "",
            f"127.0.0.2:{port}", f"0.0.0.0:{port}"]


def test_allowed_hosts(corpus_server):
    for host in allowed_hosts(corpus_server.port):
        for route in ROUTES:
            status, reply = request(corpus_server, route, hosts=(host,))
            assert status == 200, (host, route, reply[:200])


def test_refused_hosts(corpus_server):
    for host in refused_hosts(corpus_server.port):
        for route in ROUTES:
            status, reply = request(corpus_server, route, hosts=(host,))
            assert status == 400, (host, route)
            assert "Host" in json.loads(body_of(reply))["detail"]
            assert b"skycap-v1" not in body_of(reply)


def test_missing_and_repeated_host(corpus_server):
    port = corpus_server.port
    assert request(corpus_server, hosts=())[0] == 400
    for hosts in ((f"localhost:{port}", "evil.example"), ("evil.example", f"localhost:{port}"),
                  (f"localhost:{port}", f"localhost:{port}")):
        for route in ROUTES:
            assert request(corpus_server, route, hosts=hosts)[0] == 400, hosts
    assert request(corpus_server, "/v1/runs", hosts=("evil.example",), method="POST")[0] == 400


def test_cross_site_api_requests_are_refused(corpus_server):
    port = corpus_server.port
    refused = (("Origin: http://evil.example",), ("Sec-Fetch-Site: cross-site",),
               ("Sec-Fetch-Site: same-site",), ("Origin: null",), (f"Origin: http://localhost:{port + 1}",))
    for extra in refused:
        status, reply = request(corpus_server, "/v1/runs", hosts=(f"localhost:{port}",), extra=extra)
        assert status == 403, extra
        assert json.loads(body_of(reply)) == {"detail": "cross-site request refused"}
    allowed = ((f"Origin: http://localhost:{port}",), ("Sec-Fetch-Site: same-origin",),
               ("Sec-Fetch-Site: none",))
    for extra in allowed:
        assert request(corpus_server, "/v1/runs", hosts=(f"localhost:{port}",), extra=extra)[0] == 200, extra
    # the page itself may be opened from a link on another site; only the API is guarded
    assert request(corpus_server, "/", extra=("Sec-Fetch-Site: cross-site",))[0] == 200


TRAVERSALS = [
    "/../pyproject.toml", "/%2e%2e/%2e%2e/pyproject.toml", "/%2E%2E/README.md", "//evil.example/x",
    "//evil.example/..%2f..%2fpyproject.toml", "/js/../../pyproject.toml", "/js/%2e%2e/%2e%2e/cli.py",
    "/..%2f..%2fskycap_viewer/http.py", "/..%5c..%5cpyproject.toml", "/__init__.py", "/.git/config",
    "/js/..%2f__init__.py", "/%00index.html", "/index.html%00.js", "/static/index.html/..", "/./index.html",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_static_traversal_is_refused(corpus_server, target):
    status, reply = request(corpus_server, target)
    assert status in (400, 404), (target, status)
    body = body_of(reply)
    assert b"[project]" not in body and b"import" not in body and b"<html" not in body.lower()


def test_every_packaged_page_file_is_served_and_nothing_else(corpus_server):
    page_files = [p for p in STATIC.rglob("*") if p.is_file() and not p.name.startswith(("_", "."))]
    assert any(p.name == "index.html" for p in page_files)
    types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    for path in page_files:
        target = "/" + path.relative_to(STATIC).as_posix()
        status, headers, body = corpus_server.request(target)
        assert status == 200 and body == SERVED[target][0].read_bytes(), target
        assert headers["Content-Type"].startswith(types[path.suffix]), target
        assert headers["Cache-Control"] == "no-cache"
    for target in ("/__init__.py", "/nothing.js", "/js/nothing.js", "/favicon.ico.bak"):
        assert corpus_server.request(target)[0] == 404, target


def test_deep_links_serve_the_page(corpus_server):
    page = SERVED["/index.html"][0].read_bytes()
    for target in ("/", "/run/groups", "/run/groups/t/tr_g1a0a0", "/anything/else"):
        status, headers, body = corpus_server.request(target)
        assert status == 200 and body == page and headers["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "FOO"])
def test_only_get_and_head(corpus_server, method):
    for route in ("/v1/runs", "/", "/v1/trajectories/tr_tokens?run_id=spec"):
        status, reply = request(corpus_server, route, method=method)
        assert status == 405, (method, route)
        assert json.loads(body_of(reply)) == {"detail": "read-only"}
        assert headers_of(reply)["allow"] == "GET, HEAD"


def test_security_headers_on_every_response(corpus_server):
    for target in ("/", "/js/app/api.js", "/v1/runs", "/v1/nothing", "/healthz", "/missing.css",
                   "/v1/trajectories/bad%20id"):
        status, headers, _ = corpus_server.request(target)
        assert headers["Content-Security-Policy"] == CSP, target
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["Cross-Origin-Resource-Policy"] == "same-origin"
        assert headers["X-Frame-Options"] == "DENY"
    for target in ("/v1/runs", "/healthz", "/v1/nothing"):
        _, headers, _ = corpus_server.request(target)
        assert headers["Cache-Control"] == "no-store"
        assert headers["Content-Type"] == "application/json; charset=utf-8"
    status, reply = request(corpus_server, hosts=("evil.example",))
    assert headers_of(reply)["content-security-policy"] == CSP


def test_garbage_requests_get_json_errors_and_the_server_lives(corpus_server):
    heads = ("NONSENSE\n", "GET / HTTP/9.9\nHost: localhost\n", "GET\n",
             "GET noslash HTTP/1.1\nHost: localhost\n")
    for head in heads:
        status, reply = corpus_server.raw(head + "Connection: close\n")
        assert 400 <= status < 500 or (status == 505 and "HTTP/9.9" in head), (head, reply)
        assert headers_of(reply)["content-security-policy"] == CSP, head
        assert b'"detail"' in body_of(reply), head
    assert corpus_server.get("/healthz")["status"] == "ok"
