"""`skycap-viewer DIR...`: bind, print the URL, serve while indexing in the background.

The URL is the first line on stdout (scripts and tests read it), with the token when the viewer
needs one (`access.py`: bound beyond loopback, or `--token` given). Anything that stops the server
from starting is one line on stderr and exit status 2.
"""

import ipaddress
import os
import signal
import ssl
import sys
import webbrowser
from pathlib import Path

from skycap_viewer.catalog.discovery import discover_runs
from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.persisted import IndexFiles
from skycap_viewer.catalog.pool import RowPool
from skycap_viewer.catalog.remote_copy import DEFAULT_CACHE_BYTES, Mirrors
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.errors import UsageError
from skycap_viewer.record.copies import cache_directory, copy_url_of
from skycap_viewer.server.access import TOKEN_ENVIRONMENT, Access, new_token
from skycap_viewer.server.api import Api
from skycap_viewer.server.web import ViewerServer


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def page_url(host: str, port: int, scheme: str = "http", token: str | None = None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}/" + (f"?token={token}" if token else "")


def chosen_access(host: str, token: str | None, no_token: bool, secure: bool) -> Access:
    """The token the viewer requires: the one given (`--token`, else `SKYCAP_VIEWER_TOKEN`), else a new
    one when bound beyond loopback, else none (loopback, or `--no-token`)."""
    token = token or os.environ.get(TOKEN_ENVIRONMENT) or None
    if no_token:
        if token:
            raise UsageError("--no-token and a token (--token or SKYCAP_VIEWER_TOKEN) contradict each other")
        return Access(None, secure)
    if token is None and not is_loopback(host):
        token = new_token()
    return Access(token, secure)


def tls_context(certfile: str | None, keyfile: str | None) -> ssl.SSLContext | None:
    """The server's TLS context from `--certfile` (and `--keyfile`, when the key is not in it), or None."""
    if certfile is None:
        if keyfile is not None:
            raise UsageError("--keyfile needs --certfile")
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as error:
        why = getattr(error, "strerror", None) or error
        raise UsageError(f"cannot use the certificate {certfile}: {why}") from None
    return context


def raise_descriptor_limit():
    """Raise the soft limit on open descriptors to the hard one: the soft one is often 256 or 1024,
    and each connection (up to `MAX_CONNECTIONS`) holds one beside the files being read."""
    try:
        import resource
    except ImportError:  # not on this platform (Windows): its limit is not the soft/hard pair
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # e.g. macOS refuses an unlimited hard limit as the soft one
            pass


def stop_like_ctrl_c(signum, frame):
    """SIGTERM (`kill`, a supervisor, a test) ends the server as Ctrl-C does: its worker processes are
    shut down, instead of leaving the resource tracker to warn about their leaked semaphores."""
    raise KeyboardInterrupt


def run_serve(dirs: list[Path], group_by: tuple, host: str = "127.0.0.1", port: int = 8765,
              quiet: bool = False, open_browser: bool = False, use_cache: bool = True, verify: bool = True,
              allowed_hosts=(), token: str | None = None, no_token: bool = False, certfile: str | None = None,
              keyfile: str | None = None, storage_options: dict | None = None,
              remote_cache_bytes: int = DEFAULT_CACHE_BYTES) -> int:
    """Serve `dirs` (checked by the command line), grouped by `group_by`, until Ctrl-C or SIGTERM."""
    raise_descriptor_limit()
    tls = tls_context(certfile, keyfile)
    shown_host, host = host, host.strip("[]")
    access = chosen_access(host, token, no_token, tls is not None)
    catalog = Catalog(dirs, IndexFiles(cache_directory() if use_cache else None), group_by)
    try:
        api = Api(catalog, mirrors=Mirrors(cache_directory(), storage_options, remote_cache_bytes))
        server = ViewerServer((host, port), api, quiet=quiet, allowed_hosts=allowed_hosts, access=access, tls=tls)
    except OSError as error:
        raise UsageError(f"cannot listen on {shown_host}:{port}: {error.strerror or error}") from None
    url = page_url(host, server.port, server.scheme, access.token)
    runs = discover_runs(catalog.roots)
    roots = " ".join(copy_url_of(root) for root in catalog.roots)  # a store's copy: named by its URL
    print(f"skycap-viewer: {len(runs)} run(s) under {roots} at {url}", flush=True)
    if not runs:
        print(f"skycap-viewer: no skycap records under {roots} yet; runs appear as they are written",
              file=sys.stderr, flush=True)
    if not is_loopback(host) and access.token is None:
        print(f"skycap-viewer: warning: listening on {shown_host}, reachable from other machines; "
              "with --no-token anyone who can reach the port reads every record", file=sys.stderr, flush=True)
    elif access.token is not None and tls is None and not is_loopback(host):
        print("skycap-viewer: the token travels unencrypted over plain HTTP: serve with --certfile on an untrusted "
              "network", file=sys.stderr, flush=True)
    pool = RowPool()
    watcher = Watcher(catalog, compute_rows=api.documents.verifying_held(pool.compute_rows), verify=verify,
                      prepare=api.encoded_entry, offload=pool.submit, stored_forms=True,
                      requests_reading=api.searches.reading)
    watcher.start()
    watcher.discovered.wait(timeout=10)  # so the first request already lists every run
    if open_browser:
        webbrowser.open(url)
    signal.signal(signal.SIGTERM, stop_like_ctrl_c)
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        pool.close(end_running=True)
        server.api.searches.close()
        server.server_close()
    return 0
