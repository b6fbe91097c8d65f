"""`skycap-viewer DIR...`: check the arguments, bind, print the URL, serve while indexing in the background.

The URL is the first line on stdout (scripts and tests read it). Anything that stops the
server from starting is one line on stderr and exit status 2.
"""

import ipaddress
import os
import signal
import sys
import webbrowser
from importlib.resources import files
from pathlib import Path

from skycap_viewer.api import Api
from skycap_viewer.cache import PersistedIndex, cache_directory
from skycap_viewer.cli import UsageError, existing_directories
from skycap_viewer.discovery import discover_runs
from skycap_viewer.http import ViewerServer
from skycap_viewer.index import Catalog
from skycap_viewer.pool import RowPool
from skycap_viewer.watcher import Watcher


def demo_directory() -> Path:
    """The example run shipped inside the package."""
    return Path(str(files("skycap_viewer.demo") / "records"))


def readable_directories(values) -> list[Path]:
    """The directories given, each one existing and listable."""
    paths = existing_directories(values)
    for value, path in zip(values, paths, strict=True):
        try:
            with os.scandir(path):
                pass
        except OSError as error:
            raise UsageError(f"cannot read directory {value}: {error.strerror or error}") from None
    return paths


def group_keys(text: str) -> list[str]:
    keys = [key.strip() for key in (text or "").split(",") if key.strip()]
    if not keys:
        raise UsageError("--group-by needs at least one key, e.g. step,instance_id")
    return keys


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


def stop_like_ctrl_c(signum, frame):
    """SIGTERM (`kill`, a supervisor, a test) ends the server as Ctrl-C does: its worker processes are
    shut down, instead of leaving the resource tracker to warn about their leaked semaphores."""
    raise KeyboardInterrupt


def run_serve(args) -> int:
    if args.demo:
        directory = demo_directory()
        if not directory.is_dir() or not any(n.endswith(".json.zst") for n in os.listdir(directory)):
            raise UsageError(f"the demo records are not there yet ({directory} is empty)")
        dirs = [directory]
    elif not args.dirs:
        raise UsageError("give one or more record directories (or --demo for an example run)")
    else:
        dirs = readable_directories(args.dirs)
    catalog = Catalog(dirs, group_keys(args.group_by))
    host = args.host.strip("[]")
    try:
        server = ViewerServer((host, args.port), Api(catalog), quiet=args.quiet)
    except OSError as error:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error.strerror or error}") from None
    url = page_url(host, server.port)
    runs = discover_runs(catalog.roots)
    roots = " ".join(str(root) for root in catalog.roots)
    print(f"skycap-viewer: {len(runs)} run(s) under {roots} at {url}", flush=True)
    if not runs:
        print(f"skycap-viewer: no skycap records under {roots} yet; runs appear as they are written",
              file=sys.stderr, flush=True)
    if not is_loopback(host):
        print(f"skycap-viewer: warning: listening on {args.host}, reachable from other machines; "
              "the viewer has no authentication", file=sys.stderr, flush=True)
    pool = RowPool()
    cache = None if args.no_cache else PersistedIndex(cache_directory())
    watcher = Watcher(catalog, compute_rows=pool.compute_rows, cache=cache)
    watcher.start()
    watcher.discovered.wait(timeout=10)  # so the first request already lists every run
    if args.open:
        webbrowser.open(url)
    signal.signal(signal.SIGTERM, stop_like_ctrl_c)
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        pool.close()
        server.server_close()
    return 0
