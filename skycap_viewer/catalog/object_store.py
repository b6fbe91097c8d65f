"""An object store's prefix, read through fsspec: list it, get objects, and say what went wrong.

fsspec and the protocol's package (s3fs, gcsfs, adlfs) are optional: `pip install
'skycap-viewer[s3]'` (or `[gcs]`, `[azure]`, `[remote]` for all). Without them a URL is a usage error
naming the extra. Only list and get requests are made: the viewer never writes to a store.
Credentials are the protocol's own (AWS profiles and `AWS_ENDPOINT_URL`, application-default
credentials, ...), plus `--storage-options JSON`, passed to fsspec as they are.
"""

import re
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from skycap_viewer.errors import UsageError

URL = re.compile(r"([a-z][a-z0-9+.-]*)://(.+)", re.IGNORECASE)
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure"}
PROTOCOL_PACKAGES = {"s3": "s3fs", "gcs": "gcsfs", "azure": "adlfs"}
IN_FLIGHT = 32  # objects fetched at once: enough to hide a round trip, few enough for any store's rate limits
ATTEMPTS = 4  # tries of one request before its error is the answer, in all: the store's client tries once each
BACKOFF_SECONDS = 0.25  # before the second try; doubled for each later one
RETRY_SECONDS = 20.0  # no try starts later than this after the first: an open answers, with the store's error
S3_CLIENT_OPTIONS = {  # s3fs and botocore try once each (the viewer's `retried` is the one budget), and time out
    "config_kwargs": {"retries": {"total_max_attempts": 1, "mode": "standard"}, "connect_timeout": 5,
                      "read_timeout": 15},
}


def is_url(text) -> bool:
    """Whether a command-line argument names a store (`s3://bucket/prefix`, `file:///…`), not a local path."""
    return URL.fullmatch(str(text)) is not None


def extra_for(protocol: str) -> str:
    return EXTRAS.get(protocol.lower(), "remote")


class ObjectStore:
    """One prefix of one store: `list()` every object under it, `get(name)` one, `get_many(names)` many
    at once. Names are relative to the prefix, with `/` between folders."""

    def __init__(self, url: str, storage_options: dict | None = None):
        self.url = url.rstrip("/")
        protocol = URL.fullmatch(self.url).group(1).lower()
        try:
            import fsspec
        except ImportError:
            raise UsageError(f"{self.url}: reading an object store needs fsspec: "
                             f"pip install 'skycap-viewer[{extra_for(protocol)}]'") from None
        try:
            self.fs, self.root = fsspec.core.url_to_fs(self.url, **client_options(protocol, storage_options or {}))
            if extra_for(protocol) == "s3":
                self.fs.retries = 1  # s3fs's own loop (5 tries, on top of botocore's): one try, ours retry it
        except ImportError as error:
            package = PROTOCOL_PACKAGES.get(extra_for(protocol), str(error.name or "its package"))
            raise UsageError(f"{self.url}: the {protocol}:// protocol needs {package}: "
                             f"pip install 'skycap-viewer[{extra_for(protocol)}]'") from None
        except (ValueError, TypeError) as error:
            raise UsageError(f"{self.url}: {error}") from None
        self.root = self.root.rstrip("/")

    def child_url(self, name: str) -> str:
        return f"{self.url}/{name}" if name else self.url

    def list(self, record_id: str | None = None) -> dict[str, tuple[int, str, int | None]]:
        """{name: (size, version, written)} of every object under the prefix (or only the files of the
        record `record_id` in it), from a listing by pages (no request per object). The version is what
        the store says changes with the bytes: an ETag, a generation, else the modification time;
        `written` is that time in ns, when the store gives one."""
        self.fs.invalidate_cache()
        if record_id is None:
            found = retried(lambda: self.fs.find(self.root, detail=True, withdirs=False))
        else:
            found = retried(lambda: self.fs.glob(f"{self.root}/{glob_escaped(record_id)}.*", detail=True))
        listing = {}
        prefix = self.root + "/"
        for path, info in found.items():
            path = path.rstrip("/")
            if not path.startswith(prefix) or info.get("type") == "directory":
                continue
            listing[path[len(prefix):]] = (int(info.get("size") or 0), object_version(info), object_time(info))
        return listing

    def get(self, name: str) -> bytes:
        return retried(lambda: self.fs.cat_file(f"{self.root}/{name}"))

    def get_many(self, names, each) -> None:
        """`each(name, data or the exception)` for every name, `IN_FLIGHT` requests at once."""
        def fetch(name):
            try:
                data = self.get(name)
            except Exception as error:  # noqa: BLE001 - any store's error is the answer for this object
                each(name, error)
                return
            each(name, data)

        with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="fetch") as pool:
            list(pool.map(fetch, names))


def client_options(protocol: str, given: dict) -> dict:
    """The storage options the store's client is made with: `given`, and for S3 one try per request
    and timeouts unless `given` says otherwise. Each layer retried on its own (the viewer 4 times,
    s3fs 5, botocore 5): 100 GETs of one throttled object, an open answered after 5 minutes."""
    if extra_for(protocol) != "s3":
        return given
    config = {**S3_CLIENT_OPTIONS["config_kwargs"], **given.get("config_kwargs", {})}
    return {**given, "config_kwargs": config}


def glob_escaped(text: str) -> str:
    """`text` matched as itself by fsspec's glob (a record id may hold `*`, `?` or `[`)."""
    return re.sub(r"([*?\[\]])", r"[\1]", text)


def object_version(info: dict) -> str:
    for key in ("ETag", "etag", "generation", "md5Hash", "LastModified", "last_modified", "mtime", "updated"):
        value = info.get(key)
        if value is not None:
            return str(value)
    return ""


def object_time(info: dict) -> int | None:
    """When the store says the object was written, in ns since the epoch (None when it does not say)."""
    for key in ("LastModified", "last_modified", "updated", "mtime", "timeCreated"):
        value = info.get(key)
        try:
            if isinstance(value, datetime):
                return int(value.timestamp() * 1e9)
            if isinstance(value, (int, float)):
                return int(value * 1e9)
            if isinstance(value, str):
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
        except (ValueError, OverflowError, OSError):
            continue
    return None


def retried(request):
    """`request()`, tried again after a pause when the store throttles or the network fails, `ATTEMPTS`
    times within `RETRY_SECONDS` in all; an answer that cannot change by trying again (no such object,
    access denied) is raised at once."""
    attempt, started = 0, time.monotonic()
    while True:
        try:
            return request()
        except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
            raise
        except Exception as error:  # noqa: BLE001 - a store's client raises its own kinds
            attempt += 1
            pause = BACKOFF_SECONDS * 2 ** (attempt - 1)
            if attempt == ATTEMPTS or not worth_retrying(error) or time.monotonic() + pause - started > RETRY_SECONDS:
                raise
            time.sleep(pause)


def worth_retrying(error: Exception) -> bool:
    text = f"{type(error).__name__} {error}".lower()
    return not any(word in text for word in ("credential", "accessdenied", "access denied", "forbidden", "403",
                                             "nosuchbucket", "invalidaccesskey", "signature"))


def describe(error: Exception) -> str:
    """A store's error as one line a user can act on."""
    text = " ".join(str(error).split()) or type(error).__name__
    lowered = f"{type(error).__name__} {text}".lower()
    if "credential" in lowered:
        return f"no credentials for the store ({text[:200]}); set the protocol's usual ones or --storage-options"
    if isinstance(error, PermissionError) or "forbidden" in lowered or "accessdenied" in lowered or "403" in lowered:
        return f"access denied ({text[:200]})"
    if "connect" in lowered or "endpoint" in lowered or "timeout" in lowered or "resolve" in lowered:
        return f"cannot reach the store ({text[:200]})"
    if isinstance(error, FileNotFoundError) or "nosuchbucket" in lowered:
        return f"no such bucket or object ({text[:200]})"
    return f"{type(error).__name__}: {text[:200]}"
