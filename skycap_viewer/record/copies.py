"""Record directories that are local copies of an object store's prefix (skycap's mirror).

A copy lives in the viewer's cache directory, never beside the records: its documents and run index
files are fetched when it is synced; a sidecar is fetched only when a rollout is opened. Each copied
directory holds `COPY_FILE`, what the store listed there (`{"url", "objects": {name: [size, version]}}`),
so that any process (an indexing worker too) sees a sidecar the store holds as present before it is
fetched, and one the store does not hold (a mirror that left a kind out) as absent, as the format says.

The fetching itself is the catalog's (`catalog/remote_copy.py`): it registers a fetcher here for the
process it runs in. In a process without one, a sidecar not yet fetched cannot be read (a worker
never fetches: background verification leaves such records for the server).
"""

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from skycap_viewer import errors
from skycap_viewer.errors import RecordError

COPY_FILE = ".skycap-viewer-copy.json"  # a dotfile: no listing takes it for a record file
ROOT_FILE = ".skycap-viewer-root.json"  # at a copy's top: the URL it is the copy of
FETCHED_AT_ONCE = 8  # a record's sidecars, fetched together

_fetchers: dict[str, object] = {}  # copied directory (real path) -> fetch(name) for this process
_copy_roots: set[str] = set()  # real paths of the `remote/` folders a copy of this process was made in
_lock = threading.Lock()


def cache_directory() -> Path:
    """`$XDG_CACHE_HOME/skycap-viewer`, else `~/.cache/skycap-viewer` (a relative XDG path is ignored):
    the viewer's own cache, where the index databases and the stores' copies live."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "skycap-viewer"


def honour_copies_in(cache) -> None:
    """Take the viewer's files in copies made under `cache` (another cache than the user's, as given)."""
    with _lock:
        _copy_roots.add(os.path.join(os.path.realpath(os.path.join(cache, "remote")), ""))


def in_the_cache(real_directory: str) -> bool:
    """Whether a directory (its real path) lies in a copy of the viewer's cache: only there is a copy
    file the viewer's own. A served directory holding one says nothing (it would rename the run's root
    to any URL and show any "problem" text as its warning)."""
    inside = os.path.join(real_directory, "")
    roots = _copy_roots | {os.path.join(os.path.realpath(cache_directory() / "remote"), "")}
    return any(inside.startswith(root) for root in roots)


def register_fetcher(directory, fetch) -> None:
    """Let this process fetch the sidecars of the copied `directory` (`fetch(name)` writes the file)."""
    with _lock:
        _fetchers[os.path.realpath(directory)] = fetch


def copy_listing(directory) -> dict | None:
    """What the store listed in the copied `directory` (`{"url", "objects"}`), or None for a directory
    that is no copy."""
    listing = _marker(directory, COPY_FILE)
    return listing if isinstance(listing, dict) and isinstance(listing.get("objects"), dict) else None


def _marker(directory, name: str):
    """The JSON of the viewer's file `name` in `directory`, None without one; read again only when it changes."""
    try:
        status = os.stat(os.path.join(directory, name))
    except OSError:
        return None
    real = os.path.realpath(directory)
    if not in_the_cache(real):
        return None
    return _read_marker(os.path.join(real, name), status.st_mtime_ns, status.st_size)


@lru_cache(maxsize=64)
def _read_marker(path: str, mtime_ns: int, size: int):
    try:
        with open(path, "rb") as file:
            return json.loads(file.read())
    except (OSError, ValueError):
        return None


def mark_root(directory, url: str) -> None:
    """Say at the top of a copy which URL it copies (`ROOT_FILE`): a folder of runs holds no object of
    its own, so no listing names it, and the server names its roots by their URL."""
    if root_url(directory) == url:
        return
    os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, f".writing-{ROOT_FILE}")
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump({"url": url}, file)
    os.replace(temporary, os.path.join(directory, ROOT_FILE))


def root_url(directory) -> str | None:
    """The URL a copy's top directory copies (`mark_root`), or None."""
    marker = _marker(directory, ROOT_FILE)
    url = marker.get("url") if isinstance(marker, dict) else None
    return url if isinstance(url, str) else None


def listed_in_copy(directory, name: str) -> bool | None:
    """Whether the store holds `name` in the copied `directory`; None for a directory that is no copy."""
    listing = copy_listing(directory)
    return None if listing is None else name in listing["objects"]


def source_url(directory) -> str | None:
    """The store URL a copied directory (or a copy's top) is the copy of, or None."""
    listing = copy_listing(directory)
    url = listing.get("url") if listing else None
    return url if isinstance(url, str) else root_url(directory)


def copy_url_of(path) -> str:
    """`path` named as the user knows it: the store URL of a copied file (or folder), else the path."""
    path = os.fspath(path)
    for directory, rest in ((path, ""), os.path.split(path)):
        url = source_url(directory) if os.path.isdir(directory) else None
        if url is not None:
            return f"{url}/{rest}" if rest else url
    return path


errors.path_namer = copy_url_of


def ensure_local(path) -> None:
    """Fetch the file at `path` when it is a sidecar of a copy that is not fetched yet, and this process
    can fetch; otherwise nothing (the read that follows says what is wrong)."""
    if os.path.lexists(path):
        return
    directory, name = os.path.split(os.fspath(path))
    fetch = _fetchers.get(os.path.realpath(directory))
    if fetch is not None and listed_in_copy(directory, name):
        fetch(name)


def fetch_missing(directory, names) -> None:
    """Fetch at once those of the sidecars `names` a copy holds that are not on disk yet (a rollout being
    opened); one that cannot be fetched is left for its read to name."""
    if _fetchers.get(os.path.realpath(directory)) is None:
        return
    missing = [os.path.join(directory, name) for name in names if not os.path.lexists(os.path.join(directory, name))]

    def fetch(path):
        try:
            ensure_local(path)
        except RecordError:
            pass

    if missing:
        with ThreadPoolExecutor(min(len(missing), FETCHED_AT_ONCE)) as pool:
            list(pool.map(fetch, missing))


def copy_source(directory) -> dict:
    """`{"source": {"url", "problem"}}` for a store's copy (what a run's entry says of where it is read
    from, and what went wrong the last time it was listed), else `{}`."""
    listing = copy_listing(directory)
    if listing is None:
        return {}
    problem = listing.get("problem")
    return {"source": {"url": source_url(directory), "problem": problem if isinstance(problem, str) else None}}
