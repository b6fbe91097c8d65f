"""`skycap-viewer DIR...`: bind, print the URL, serve while indexing in the background.

The URL is the first line on stdout (scripts and tests read it). Anything that stops the
server from starting is one line on stderr and exit status 2.
"""

import ipaddress
import signal
import sys
import webbrowser
from pathlib import Path

from skycap_viewer.catalog.discovery import discover_runs
from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.persisted import IndexFiles, cache_directory
from skycap_viewer.catalog.pool import RowPool
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.errors import UsageError
from skycap_viewer.server.api import Api
from skycap_viewer.server.web import ViewerServer


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def page_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


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
              allowed_hosts=()) -> int:
    """Serve `dirs` (checked by the command line), grouped by `group_by`, until Ctrl-C or SIGTERM."""
    raise_descriptor_limit()
    catalog = Catalog(dirs, IndexFiles(cache_directory() if use_cache else None), group_by)
    shown_host, host = host, host.strip("[]")
    try:
        api = Api(catalog)
        server = ViewerServer((host, port), api, quiet=quiet, allowed_hosts=allowed_hosts)
    except OSError as error:
        raise UsageError(f"cannot listen on {shown_host}:{port}: {error.strerror or error}") from None
    url = page_url(host, server.port)
    runs = discover_runs(catalog.roots)
    roots = " ".join(str(root) for root in catalog.roots)
    print(f"skycap-viewer: {len(runs)} run(s) under {roots} at {url}", flush=True)
    if not runs:
        print(f"skycap-viewer: no skycap records under {roots} yet; runs appear as they are written",
              file=sys.stderr, flush=True)
    if not is_loopback(host):
        print(f"skycap-viewer: warning: listening on {shown_host}, reachable from other machines; "
              "the viewer has no authentication", file=sys.stderr, flush=True)
    pool = RowPool()
    watcher = Watcher(catalog, compute_rows=pool.compute_rows, verify=verify, prepare=api.run_entry)
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
        pool.close()
        server.api.searches.close()
        server.server_close()
    return 0
