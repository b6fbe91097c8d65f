"""The persisted index: each run's rows saved in the user's cache, so a restart reads only what changed.

One file per record directory under `$XDG_CACHE_HOME/skycap-viewer/` (or `~/.cache/skycap-viewer/`),
named by a hash of the directory's absolute path; never inside a record directory. It maps each
document's file name to the (size, mtime_ns) it was read at and the row computed from it.

A cache is only a hint, never trusted: its header must name this format, schema, viewer version,
the exact code that computed the rows (a hash of the package's sources, so a changed row
computation never serves stale rows), the run directory and the file limit, and one digest must match the header
and the payload together: a file copied or planted for another directory, or with an edited
header, is refused. Each row must carry the id of the file name it is stored under, so a cache can
neither hide one record nor list another twice. Anything else (truncated, damaged, foreign) is
ignored and rewritten. (The digest guards against accidents, not against someone able to write
the user's cache: anyone who can could recompute it.)

Files are written whole to a temporary name and renamed into place, so a reader never sees half a
file. The temporary's name holds the writer's pid: one left by a killed server is removed at the
next start, never one a live server (several may share the cache directory) is still writing.

The payload is one zstd frame of `marshal` data (plain values only; nothing in it is executed):
loading it takes half the time JSON would, and it keeps tuples, ints and floats exactly as they were.
"""

import gc
import hashlib
import json
import marshal
import os
import sys
import tempfile
import time
from contextlib import suppress
from functools import lru_cache
from pathlib import Path

import skycap_viewer
from skycap_viewer import __version__
from skycap_viewer.catalog.index import FileVersion, RunIndex
from skycap_viewer.record.document import is_document_name, record_id_of
from skycap_viewer.record.frames import compress, decompress_one_frame, file_limit

MAGIC = b"skycap-viewer-index\n"
SCHEMA = 3  # 2: rows keep bounded meta and annotations, and say what was cut (`cut`); 3: bounded strips
SUFFIX = ".index"
MIN_SAVE_SECONDS = 5.0  # while rows keep changing, save at most this often...
SAVE_COST_FACTOR = 10  # ...and never spend more than a tenth of the time saving
INDEX_FIELDS = ("_run", "revision")  # added by RunIndex.store from the run and version: not saved
TEMPORARY_SUFFIX = ".tmp"
STALE_TEMPORARY_SECONDS = 60.0  # a temporary lives for one write: seconds at most, its mtime moving
ORPHAN_TEMPORARY_SECONDS = 86_400.0  # past this even a live pid's (a reused pid) is abandoned


def cache_directory() -> Path:
    """`$XDG_CACHE_HOME/skycap-viewer`, else `~/.cache/skycap-viewer` (a relative XDG path is ignored)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "skycap-viewer"


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the package's Python sources, subpackages included: rows computed by other code are
    not reused. The demo (an example writer and its records) computes no row, so editing it keeps
    every user's persisted index."""
    package = Path(skycap_viewer.__file__).parent
    digest = hashlib.blake2b(digest_size=16)
    for source in sorted(package.rglob("*.py")):
        relative = source.relative_to(package)
        if relative.parts[0] != "demo":
            digest.update(relative.as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


HEADER_MISMATCH = {
    "schema": "in another schema", "viewer": "by another viewer version", "code": "by changed viewer code",
    "marshal": "in another marshal format", "directory": "for another directory",
    "file_limit": "under another --max-file-mib (a file past one limit may be within another)",
}
ROW_CEILING = 64 * 1024  # the most one saved row may take: rows keep bounded meta and annotations


def expected_header(directory: Path) -> dict:
    return {"schema": SCHEMA, "viewer": __version__, "code": code_fingerprint(),
            "marshal": marshal.version, "directory": str(directory), "file_limit": file_limit()}


class DamagedCache(ValueError):
    """The file is not a cache this code wrote for this directory."""


def digest_of(header: dict, payload: bytes) -> str:
    """The digest of the header (without its digest) and the payload together: a payload moved under
    another header, or a header edited to claim another directory or count, no longer matches."""
    claimed = json.dumps({k: v for k, v in header.items() if k != "digest"}, sort_keys=True).encode()
    return hashlib.blake2b(claimed + b"\n" + payload, digest_size=16).hexdigest()


def encode(directory: Path, entries: dict) -> bytes:
    payload = compress(marshal.dumps(entries), level=1)
    header = {**expected_header(directory), "entries": len(entries)}
    header["digest"] = digest_of(header, payload)
    return MAGIC + json.dumps(header).encode() + b"\n" + payload


def decode(directory: Path, data: bytes) -> dict:
    """name -> (size, mtime_ns, row); raises DamagedCache unless every check passes."""
    if not data.startswith(MAGIC):
        raise DamagedCache("not a skycap-viewer index")
    line, newline, payload = data[len(MAGIC):].partition(b"\n")
    try:
        header = json.loads(line) if newline else None
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise DamagedCache("unreadable header")
    expected = expected_header(directory)
    differing = [key for key in expected if header.get(key) != expected[key]]
    if differing:
        raise DamagedCache("written " + ", ".join(HEADER_MISMATCH[key] for key in differing))
    if header.get("digest") != digest_of(header, payload):
        raise DamagedCache("header and payload do not match their digest (truncated, damaged or edited)")
    collecting = gc.isenabled()
    gc.disable()  # a million small new objects would trigger many useless collections...
    try:
        count = header.get("entries")
        limit = (count if type(count) is int and count >= 0 else 0) * ROW_CEILING + 2**20
        entries = marshal.loads(decompress_one_frame(payload, limit, "the index payload", "what its rows may take"))
        gc.freeze()  # ...and so would every later full one: plain acyclic rows, freed by refcount alone
    except (ValueError, EOFError, TypeError) as error:  # FrameError is a ValueError
        raise DamagedCache(f"unreadable payload ({error})") from None
    finally:
        if collecting:
            gc.enable()
    if not (isinstance(entries, dict) and len(entries) == header.get("entries")
            and all(is_entry(name, entry) for name, entry in entries.items())):
        raise DamagedCache("unexpected content")
    return entries


def is_entry(name, entry) -> bool:
    """A document name mapped to (size, mtime_ns, row), the row carrying that document's own id."""
    return (isinstance(name, str) and is_document_name(name) and type(entry) is tuple and len(entry) == 3
            and type(entry[0]) is int and type(entry[1]) is int and type(entry[2]) is dict
            and entry[2].get("id") == record_id_of(name))


class PersistedIndex:
    """Seeds each run's index from its cache file and saves it back after indexing (see module doc)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.saved: dict[Path, dict] = {}  # run directory -> versions as last loaded or saved
        self.next_save: dict[Path, float] = {}
        self.disabled = None
        code_fingerprint()  # of the code as it was imported, not as it may be edited while the server runs
        remove_stale_temporaries(directory)

    def disable(self, reason: str):
        self.disabled = reason
        print(f"skycap-viewer: not using the persisted index: {reason}", file=sys.stderr, flush=True)

    def file_for(self, run_directory: Path) -> Path:
        key = hashlib.sha256(str(Path(run_directory).absolute()).encode()).hexdigest()[:32]
        return self.directory / (key + SUFFIX)

    def load(self, run_directory: Path) -> dict:
        """name -> (size, mtime_ns, row) from the run's cache file; empty when missing or not trusted."""
        if self.disabled:
            return {}
        path = self.file_for(run_directory)
        try:
            return decode(Path(run_directory).absolute(), path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, DamagedCache) as error:
            print(f"skycap-viewer: ignoring the persisted index {path} ({error}); rebuilding it",
                  file=sys.stderr, flush=True)
            return {}

    def seed(self, run: RunIndex) -> int:
        """Fill a new run's index from its cache, so its first listing only computes what changed.

        Every served run is seeded before it is saved: this is where a cache directory placed inside
        a record directory (say XDG_CACHE_HOME pointing into a run) is refused."""
        if not self.disabled and self.directory.resolve().is_relative_to(Path(run.directory).resolve()):
            self.disable(f"{self.directory} is inside the record directory {run.directory}, "
                         "which the viewer never writes")
        entries = self.load(run.directory)
        for name, (size, mtime_ns, row) in entries.items():
            run.store(name, FileVersion(size, mtime_ns), row)
        self.saved[run.directory] = dict(run.versions)
        self.next_save[run.directory] = time.monotonic() + MIN_SAVE_SECONDS  # not a few rows right away
        return len(entries)

    def save_due(self, run: RunIndex, settled: bool = False):
        """Save the run if its rows changed: at once when its indexing just settled, else when due."""
        if self.disabled or (self.saved.get(run.directory) == run.versions  # same FileVersion objects: fast
                             and not run.unsaved_verifications):
            return
        if settled or time.monotonic() >= self.next_save.get(run.directory, 0.0):
            self.save(run)

    def save(self, run: RunIndex):
        """Write the run's rows, except unreadable ones: those are read again at the next start, so a
        record whose permissions or bytes were repaired without a new size or mtime shows at once."""
        started = time.monotonic()
        versions = dict(run.versions)
        entries = {
            name: (version.size, version.mtime_ns,
                   {key: value for key, value in row.items() if key not in INDEX_FIELDS})
            for name, version in versions.items() if not (row := run.rows[name]).get("unreadable")
        }
        try:
            self.write(self.file_for(run.directory), encode(Path(run.directory).absolute(), entries))
        except (OSError, ValueError) as error:  # read-only home, full disk, a value marshal refuses
            self.disable(f"cannot write {self.directory} ({error})")
            return
        self.saved[run.directory] = versions
        run.unsaved_verifications = False
        spent = time.monotonic() - started
        self.next_save[run.directory] = time.monotonic() + max(MIN_SAVE_SECONDS, SAVE_COST_FACTOR * spent)

    def write(self, path: Path, data: bytes):
        """Write `data` to `path` atomically: a temporary file in the same directory, then a rename."""
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.",
                                             suffix=TEMPORARY_SUFFIX)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, path)
        except BaseException:
            with suppress(OSError):
                os.unlink(temporary)
            raise


def temporary_pid(name: str) -> int | None:
    """The writer's pid in a temporary's name (`.{key}.index.{pid}.{random}.tmp`); 0 for an earlier
    viewer's temporary (`.{key}.index.{random}.tmp`: only its age tells); None for any other file."""
    if not (name.startswith(".") and name.endswith(TEMPORARY_SUFFIX)):
        return None
    parts = name[1:-len(TEMPORARY_SUFFIX)].split(".")
    if len(parts) not in (3, 4) or "." + parts[1] != SUFFIX:
        return None
    if len(parts) == 3:
        return 0
    return int(parts[2]) if parts[2].isdigit() else None


def is_alive(pid: int) -> bool:
    """Whether a process `pid` exists here (one of another user counts: it may be writing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists
        return True
    return True


def remove_stale_temporaries(directory: Path):
    """Remove the temporaries a killed server left (`kill -9` during a save): those of pids that are gone,
    or abandoned for a day. Any younger than a minute is left alone: its writer may live in another pid
    namespace (a container sharing the cache directory), where its pid means nothing here."""
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError:
        return
    now = time.time()
    for entry in entries:
        pid = temporary_pid(entry.name)
        if pid is None or pid == os.getpid():
            continue
        with suppress(OSError):
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if age > STALE_TEMPORARY_SECONDS and (age > ORPHAN_TEMPORARY_SECONDS or (pid and not is_alive(pid))):
                os.unlink(entry.path)
