"""Where each run's index database lives, and what it must say of itself to be reused.

One SQLite file per record directory under `$XDG_CACHE_HOME/skycap-viewer/` (or
`~/.cache/skycap-viewer/`), named by a hash of the directory's absolute path; never inside a
record directory. With `--no-cache` (or a cache directory the viewer cannot use) the databases live
in a temporary directory, deleted when the viewer exits.

A database is only a hint, never trusted: its `facts` must name this schema, viewer version, the
exact code that computed the rows (a hash of the package's sources, so a changed row computation
never serves stale rows), the run directory, the file limit and the group keys; a database whose
facts differ, or that SQLite cannot read, is emptied and rebuilt from the records. It is safe to
delete at any time: a running viewer keeps its open file, a restart builds a new one.
"""

import hashlib
import os
import shutil
import sqlite3
import tempfile
import weakref
from functools import lru_cache
from pathlib import Path

import skycap_viewer
from skycap_viewer import __version__
from skycap_viewer.catalog.store import SCHEMA_VERSION
from skycap_viewer.printable import say
from skycap_viewer.record.frames import file_limit

SUFFIX = ".sqlite"
SQLITE_FILES = ("-wal", "-shm", "-journal")  # what SQLite writes beside a database, at the database's path + these
LOCK_SUFFIX = ".lock"  # beside a database: locked by the viewer that writes it, holding its pid

try:
    import fcntl
except ImportError:  # no advisory locks (Windows): two viewers on one cache are not kept apart
    fcntl = None


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


def copied_database(source: Path, target: Path) -> Path:
    """`target`, holding a consistent copy of the database at `source` (SQLite's backup, one read
    transaction: what another viewer has written so far); left as it is when it cannot be read."""
    reading = writing = None
    try:
        reading, writing = sqlite3.connect(source), sqlite3.connect(target)
        reading.backup(writing)
    except sqlite3.Error:
        pass
    finally:
        for connection in (reading, writing):
            if connection is not None:
                connection.close()
    return target


def names_descriptor(path: Path, descriptor: int) -> bool:
    """Whether `path` still names the file open as `descriptor` (a lock file unlinked with the cache's other files
    names nothing, and a lock held on it keeps no other viewer out: the one made at its path would)."""
    try:
        named, held = os.stat(path, follow_symlinks=False), os.fstat(descriptor)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


class IndexFiles:
    """The directory of the runs' databases: the user's cache (`directory`), else a temporary one."""

    def __init__(self, directory: Path | None):
        self.directory = Path(directory) if directory is not None else None
        self.temporary: Path | None = None
        self.disabled: str | None = None if directory is not None else "--no-cache"
        self.locks: dict[Path, int] = {}  # lock file -> its descriptor, held for the process's life
        code_fingerprint()  # of the code as it was imported, not as it may be edited while the server runs

    def disable(self, reason: str):
        """Use a temporary directory from now on, and say why once."""
        if self.disabled is None:
            self.disabled = reason
            say(f"skycap-viewer: not using the persisted index: {reason}")

    def temporary_directory(self) -> Path:
        if self.temporary is None:
            self.temporary = Path(tempfile.mkdtemp(prefix="skycap-viewer-index-"))
            weakref.finalize(self, shutil.rmtree, self.temporary, ignore_errors=True)
        return self.temporary

    def refuse_inside(self, directory: Path, what: str):
        """Never write under `directory` (a record directory, or a directory given to serve)."""
        if self.disabled is None and self.directory.resolve().is_relative_to(Path(directory).resolve()):
            self.disable(f"{self.directory} is inside the {what} {directory}, which the viewer never writes")

    def database_for(self, run_directory: Path, group_by: tuple) -> tuple[Path, dict]:
        """(the run's database file, the facts a reusable one holds)."""
        run_directory = Path(run_directory).absolute()
        self.refuse_inside(run_directory, "record directory")
        if self.disabled is None:
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                if not os.access(self.directory, os.W_OK | os.X_OK):
                    raise PermissionError("not writable")
            except OSError as error:
                self.disable(f"cannot write {self.directory} ({getattr(error, 'strerror', None) or error})")
        directory = self.temporary_directory() if self.disabled is not None else self.directory
        key = hashlib.sha256(str(run_directory).encode()).hexdigest()[:32]
        facts = {"schema": SCHEMA_VERSION, "viewer": __version__, "code": code_fingerprint(),
                 "directory": str(run_directory), "file_limit": file_limit(), "group_by": ",".join(group_by)}
        database = directory / (key + SUFFIX)
        leaving = self.link_leaving_cache(database)
        if leaving is not None:  # SQLite would follow it, and write where it points: into a record directory, maybe
            say(f"skycap-viewer: {leaving} is a symlink out of the cache directory: {run_directory} is indexed "
                "in a temporary directory")
            database = self.temporary_directory() / (key + SUFFIX)
        elif self.disabled is None:
            holder = self.holder_of(database)
            if holder is not None:
                say(f"skycap-viewer: {run_directory}: its index is written by another viewer (pid {holder}): this "
                    "one starts from a copy of it, kept in a temporary directory")
                database = copied_database(database, self.temporary_directory() / (key + SUFFIX))
        return database, facts

    def holder_of(self, database: Path) -> str | None:
        """Take the database's lock (`LOCK_SUFFIX`) for this process's life and write our pid in it; the pid
        of the viewer holding it, when another does, else None. Two viewers writing one database fought:
        rows stored twice (UNIQUE errors at every poll), each taking the other's file for one deleted
        under it and rebuilding it (503 for a minute)."""
        lock = Path(f"{database}{LOCK_SUFFIX}")
        if fcntl is None or (lock in self.locks and names_descriptor(lock, self.locks[lock])):
            return None  # held already; a lock file deleted with its database is made and taken again
        try:
            descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError:
            return None  # a lock that cannot be made: as without locks
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(descriptor)
            return None if holder == str(os.getpid()) else holder  # an earlier catalog of this process
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        self.locks[lock] = descriptor
        weakref.finalize(self, os.close, descriptor)  # released with the catalog (and by the system at exit)
        return None

    def link_leaving_cache(self, database: Path) -> Path | None:
        """The database file, or one SQLite keeps beside it (`-wal`, `-shm`, `-journal`), that is a
        symlink leading out of the cache directory (dangling ones included), or None."""
        if self.disabled is not None:
            return None
        inside = self.directory.resolve()
        for path in (database, *(Path(f"{database}{suffix}") for suffix in SQLITE_FILES)):
            if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(inside):
                return path
        return None
