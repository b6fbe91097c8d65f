"""Who may read a viewer shared beyond loopback: the holder of its token.

Bound beyond loopback (or given `--token`), the viewer requires a token on every request, page
files included, as Jupyter's server does: a random one made at start (or `--token VALUE`, or
`SKYCAP_VIEWER_TOKEN`), printed once in the page's URL (`/?token=…`). The first visit with it
sets an `HttpOnly; SameSite=Strict` cookie, named for the port (two viewers on one machine keep
theirs apart), and the page takes the token out of the address bar; scripts send `Authorization:
Bearer TOKEN`. Tokens are compared in constant time and never logged. The page itself is answered
on the token visit, not a redirect: a `SameSite=Strict` cookie set by a visit that began on another
site (a link in a chat) would not be sent on the redirected request.
"""

import hmac
import re
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

TOKEN_PARAM = "token"
TOKEN_ENVIRONMENT = "SKYCAP_VIEWER_TOKEN"
TOKEN_SHOWN = re.compile(r"([?&]token=)[^&#]*")  # how a logged request line hides a token
NEEDS_TOKEN_PAGE = (
    b"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>skycap-viewer: token needed</title>"
    b"</head>\n<body><h1>This viewer needs its token</h1>\n<p>Open the link the viewer printed when it started "
    b"(<code>http://HOST:PORT/?token=&hellip;</code>), or ask whoever started it. Scripts send "
    b"<code>Authorization: Bearer TOKEN</code>.</p></body></html>\n"
)


def new_token() -> str:
    return secrets.token_urlsafe(24)


def without_token(query: str) -> str:
    """The query string with its token left out (what the page's URL keeps)."""
    return urlencode([(key, value) for key, value in parse_qsl(query, keep_blank_values=True) if key != TOKEN_PARAM])


def hidden_token(target: str) -> str:
    """A request target as the access log may show it: a token's value replaced by `…`."""
    return TOKEN_SHOWN.sub(r"\1…", target)


@dataclass(frozen=True)
class Access:
    """The token every request must carry, or None (loopback: no token unless one was given)."""

    token: str | None = None
    secure: bool = False  # served over TLS: the cookie is `Secure` too

    def matches(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(), self.token.encode())

    def cookie_name(self, port: int) -> str:
        return f"skycap_viewer_token_{port}"

    def granted(self, headers, port: int) -> bool:
        """Whether the request's `Authorization: Bearer` or cookie carries the token."""
        if self.token is None:
            return True
        authorization = headers.get_all("Authorization") or []
        if len(authorization) == 1:
            scheme, _, value = authorization[0].partition(" ")
            if scheme.lower() == "bearer" and self.matches(value.strip()):
                return True
        name = self.cookie_name(port)
        for header in headers.get_all("Cookie") or []:
            for pair in header.split(";"):
                key, _, value = pair.strip().partition("=")
                if key == name and self.matches(value):
                    return True
        return False

    def set_cookie(self, port: int) -> str:
        secure = "; Secure" if self.secure else ""
        return f"{self.cookie_name(port)}={self.token}; Path=/; HttpOnly; SameSite=Strict{secure}"
