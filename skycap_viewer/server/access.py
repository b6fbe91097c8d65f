"""Who may read a viewer shared beyond loopback: the holder of its token.

Bound beyond loopback (or given `--token`), the viewer requires a token on every request, page
files included, as Jupyter's server does: a random one made at start (or `--token VALUE`, or
`SKYCAP_VIEWER_TOKEN`), printed once in the page's URL (`/?token=…`). The first visit with it
sets an `HttpOnly; SameSite=Strict` cookie, named for the port (two viewers on one machine keep
theirs apart), and the page takes the token out of the address bar; scripts send `Authorization:
Bearer TOKEN`. The cookie's value is not the token but a MAC of the port under it (`cookie_value`):
browsers send a host's cookies to every port of it, so another service of the host receives the
cookie, and must learn nothing it could use as the token or at another viewer's port. Over TLS the
cookie is a `__Host-` cookie. Tokens are compared in constant time and never logged: the access log
shows a request target through `shown_target`, which hides the values of every query key that
reads as a token (one parse, `query_items`, for the check and the log, so `?%74oken=` is hidden as
`?token=` is) and the token wherever else it is written. The page itself is answered
on the token visit, not a redirect: a `SameSite=Strict` cookie set by a visit that began on another
site (a link in a chat) would not be sent on the redirected request.
"""

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode

TOKEN_PARAM = "token"
TOKEN_ENVIRONMENT = "SKYCAP_VIEWER_TOKEN"
TOKEN_LIKE_KEY = re.compile(r"tok|tkn|oken|auth")  # in a query key's letters: its value is not logged
HIDDEN = "…"
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


def query_items(query: str) -> list[tuple[str, str, str]]:
    """The query's `&`-separated pieces as written, each with its key and value percent-decoded (as
    `parse_qs` decodes them): the one parse that both the token check and the access log read."""
    items = []
    for piece in query.split("&"):
        for key, value in parse_qsl(piece, keep_blank_values=True):
            items.append((piece, key, value))
    return items


def offered_token(query: str) -> str | None:
    """The token a page request's query offers (its last `token`, under any spelling), or None."""
    offered = [value for _, key, value in query_items(query) if key == TOKEN_PARAM]
    return offered[-1] if offered else None


def token_like(key: str) -> bool:
    """Whether a decoded query key reads as a token's (or a near miss of it: `Token`, `tok en`, `tokne`)."""
    return bool(TOKEN_LIKE_KEY.search("".join(filter(str.isalpha, key.casefold()))))


def shown_target(target: str, token: str | None) -> str:
    """A request target as the access log shows it (escaped then by `printable.say`, as every line the
    server writes): the value of every token-like key (`token_like`, however it is spelled) as `…`, and
    the token itself as `…` wherever else it is written, decoded or not."""
    path, mark, query = target.partition("?")
    pieces = []
    if mark:
        for piece in query.split("&"):
            items = query_items(piece)
            if items and token_like(items[0][1]):
                pieces.append(f"{piece.partition('=')[0]}={HIDDEN}")
            else:
                pieces.append(piece)
    shown = path + mark + "&".join(pieces)
    if token:
        shown = shown.replace(token, HIDDEN)
        if token in unquote(shown):  # written with escapes (`%61`): the target is shown decoded, it hidden
            shown = unquote(shown).replace(token, HIDDEN)
    return shown


@dataclass(frozen=True)
class Access:
    """The token every request must carry, or None (loopback: no token unless one was given)."""

    token: str | None = None
    secure: bool = False  # served over TLS: the cookie is `Secure` too

    def matches(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(), self.token.encode())

    def cookie_name(self, port: int) -> str:
        """Named for the port (two viewers of a host keep theirs apart); `__Host-` over TLS, so no page
        of another subdomain or over plain HTTP can set or shadow it."""
        return f"{'__Host-' if self.secure else ''}skycap_viewer_{port}"

    def cookie_value(self, port: int) -> str:
        """What the cookie holds: a MAC of this port under the token, never the token. A service on another
        port of the host receives it (cookies are scoped by host, not port) and learns neither the token
        (for `Authorization` or the link) nor what another viewer of the host would let in."""
        return hmac.new(self.token.encode(), f"skycap-viewer cookie {port}".encode(), hashlib.sha256).hexdigest()

    def granted(self, headers, port: int) -> bool:
        """Whether the request's `Authorization: Bearer` or cookie carries the token."""
        if self.token is None:
            return True
        authorization = headers.get_all("Authorization") or []
        if len(authorization) == 1:
            scheme, _, value = authorization[0].partition(" ")
            if scheme.lower() == "bearer" and self.matches(value.strip()):
                return True
        name, wanted = self.cookie_name(port), self.cookie_value(port).encode()
        for header in headers.get_all("Cookie") or []:
            for pair in header.split(";"):
                key, _, value = pair.strip().partition("=")
                if key == name and hmac.compare_digest(value.encode(), wanted):
                    return True
        return False

    def set_cookie(self, port: int) -> str:
        secure = "; Secure" if self.secure else ""
        return f"{self.cookie_name(port)}={self.cookie_value(port)}; Path=/; HttpOnly; SameSite=Strict{secure}"
