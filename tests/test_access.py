"""Sharing a viewer safely: beyond loopback (or with `--token`) every request, page files included,
needs the token: from the printed link (which sets a cookie), a cookie, or `Authorization: Bearer`.
The real server on an ephemeral port; HTTPS with a certificate made here by `openssl`."""

import http.client
import shutil
import ssl
import subprocess

import pytest

from skycap_viewer.server.access import Access, shown_target, without_token
from skycap_viewer.server.web import ViewerServer
from tests.support.corpus import FIXTURES
from tests.support.in_process import InProcess
from tests.support.server_process import ServerProcess

TOKEN = "a-token-for-these-tests"
ROUTES = ["/", "/index.html", "/js/app/app.js", "/style.css", "/v1/runs", "/healthz",
          "/v1/trajectories?run_id=spec", "/run/spec/rollouts"]


@pytest.fixture(scope="module")
def guarded():
    with ServerProcess([FIXTURES / "spec"], "--token", TOKEN) as server:
        assert server.token == TOKEN  # the printed URL carries it
        yield server


def test_every_route_needs_the_token(guarded):
    for route in ROUTES:
        status, headers, body = guarded.request(route, headers={"Authorization": None})
        assert status == 401, route
        assert headers["WWW-Authenticate"] == 'Bearer realm="skycap-viewer"'
        if route.startswith(("/v1", "/healthz")):
            assert b"needs its token" in body and headers["Content-Type"].startswith("application/json")
        else:
            assert b"This viewer needs its token" in body and headers["Content-Type"].startswith("text/html")
        assert TOKEN.encode() not in body
    for wrong in ("Bearer nope", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN):
        assert guarded.request("/v1/runs", headers={"Authorization": wrong})[0] == 401, wrong
    assert guarded.request(f"/v1/runs?token={TOKEN}", headers={"Authorization": None})[0] == 401  # not for the API
    assert guarded.request("/", headers={"Authorization": None}, method="POST")[0] == 401


def test_a_bearer_header_or_the_cookie_is_let_in(guarded):
    for route in ROUTES:
        assert guarded.request(route)[0] == 200, route  # Bearer
    access = Access(TOKEN)
    cookie = f"skycap_viewer_{guarded.port}={access.cookie_value(guarded.port)}"
    assert guarded.request("/v1/runs", headers={"Authorization": None, "Cookie": f"other=1; {cookie}"})[0] == 200
    # another viewer's cookie on this machine: its value is its port's, and lets nothing in here
    another_port = f"skycap_viewer_{guarded.port}={access.cookie_value(guarded.port + 1)}"
    assert guarded.request("/v1/runs", headers={"Authorization": None, "Cookie": another_port})[0] == 401
    the_token_as_cookie = f"skycap_viewer_{guarded.port}={TOKEN}"  # what the cookie held before: not a cookie now
    assert guarded.request("/v1/runs", headers={"Authorization": None, "Cookie": the_token_as_cookie})[0] == 401


def test_the_printed_link_answers_the_page_and_sets_the_cookie(guarded):
    status, headers, body = guarded.request(f"/?token={TOKEN}&theme=dark", headers={"Authorization": None})
    assert status == 200 and b"<!doctype html>" in body.lower()
    cookie = headers["Set-Cookie"]
    assert cookie == f"skycap_viewer_{guarded.port}={Access(TOKEN).cookie_value(guarded.port)}; Path=/; HttpOnly; " \
                     "SameSite=Strict"
    assert TOKEN not in cookie  # sent by the browser to every port of the host: it must not carry the token
    assert headers["Referrer-Policy"] == "no-referrer"  # the link's token never leaves in a Referer
    status, headers, _ = guarded.request("/?token=wrong", headers={"Authorization": None})
    assert status == 401 and "Set-Cookie" not in headers


def test_the_token_is_never_logged():
    assert shown_target(f"/?token={TOKEN}&x=1", TOKEN) == "/?token=…&x=1"
    assert shown_target(f"/run/a?x=1&token={TOKEN}#frag", TOKEN) == "/run/a?x=1&token=…"
    assert without_token(f"token={TOKEN}&x=1") == "x=1"


LOGGED = {  # a request target -> what the access log must not show of it
    f"/?%74oken={TOKEN}": TOKEN, f"/?tok%65n={TOKEN}": TOKEN, f"/?Token={TOKEN}": TOKEN, "/?tokne=a-near-miss": "near",
    f"/?x={TOKEN}": TOKEN, "/?x=" + "".join(f"%{ord(c):02x}" for c in TOKEN): TOKEN.replace("-", "%2d"),
    "/?q=\x1b]0;owned\x07": "\x1b", "/x\x1b[2J": "\x1b", "/\x9b31m": "\x9b", "/a%0a127.0.0.1 - fake line": "\n",
    "/?q=%1b%5b2J": "\x1b", "/\u202etxt.exe": "\u202e",
}


def test_the_access_log_hides_the_token_under_every_spelling_and_escapes_every_control(capfd):
    """Every request is logged on one line, before any check (a 401 too): the token is hidden under every
    spelling the server reads as its token, and near misses; control, C1 and bidi characters are escaped."""
    web = InProcess(FIXTURES / "spec")
    web.server = ViewerServer(("127.0.0.1", 0), web.server.api, quiet=False, bind=False, access=Access(TOKEN))
    try:
        assert web.get(f"/?%74oken={TOKEN}").status == 200  # the server reads this spelling as its token
        capfd.readouterr()
        for target in LOGGED:
            web.get(target.encode("utf-8").decode("latin-1"))
        logged = capfd.readouterr().err
    finally:
        web.server.api.searches.close()
        web.server.server_close()
    lines = logged.splitlines()
    assert len(lines) == len(LOGGED), logged
    for line, (target, secret) in zip(lines, LOGGED.items(), strict=True):
        assert secret not in line and "\x1b" not in line and "\x9b" not in line, (target, line)
        assert all(character.isprintable() for character in line), (target, line)


def test_beyond_loopback_a_token_is_made_and_no_token_says_what_it_means():
    with ServerProcess([FIXTURES / "spec"], "--host", "0.0.0.0") as server:
        assert server.token and len(server.token) >= 32
        assert server.request("/v1/runs", headers={"Authorization": None})[0] == 401
        assert server.request("/v1/runs")[0] == 200
        assert "the token travels unencrypted" in server.output()
    with ServerProcess([FIXTURES / "spec"], "--host", "0.0.0.0", "--no-token") as server:
        assert server.token is None and server.request("/v1/runs")[0] == 200
        assert "with --no-token anyone who can reach the port reads every record" in server.output()
    with ServerProcess([FIXTURES / "spec"]) as server:  # loopback: nothing changes
        assert server.token is None and server.request("/")[0] == 200


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_https_with_a_certificate(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    with ServerProcess([FIXTURES / "spec"], "--token", TOKEN, "--certfile", cert, "--keyfile", key) as server:
        assert server.url.startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=30)
        connection.request("GET", f"/?token={TOKEN}", headers={"Host": f"127.0.0.1:{server.port}"})
        reply = connection.getresponse()
        assert reply.status == 200 and "Secure" in reply.headers["Set-Cookie"]
        reply.read()
        connection.request("GET", "/v1/runs", headers={"Host": f"127.0.0.1:{server.port}"})
        assert connection.getresponse().status == 401
        connection.close()
        with pytest.raises(OSError):  # plain HTTP to the TLS port gets nothing
            plain = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            plain.request("GET", "/healthz")
            plain.getresponse()
