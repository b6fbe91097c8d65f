"""Find runs: record directories under the directories given on the command line.

A root is a run if it holds a record; otherwise its children, and failing that their
children, are looked at (two levels, no further, so a symlink loop cannot trap the scan); a record
directory a level deeper is not served, and said (`Skipped`). Anything inside a record directory
(a pulled run's `index/` folder) is neither run nor record.
A directory skyrl-capture wrote (`manifest.json` naming its `record_version`, and `committed/`
shards) is another tool's format: it is skipped whole, shards included, and said (`Skipped`).

Symlinks are followed, wherever they lead: a folder of links to runs on other disks is a common
way to gather them. A run whose real directory is outside its root says so (`symlink_to`), and a
directory reached twice (through a link and directly, or through a loop) is one run, found first
in name order.
"""

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from skycap_viewer.printable import say
from skycap_viewer.record.copies import copy_url_of
from skycap_viewer.record.document import is_document_name, link_leaving


@dataclass(frozen=True)
class RunLocation:
    id: str
    project: str
    path: Path
    symlink_to: Path | None = None  # the real directory, when a symlink takes the run out of its root


@dataclass(frozen=True)
class Skipped:
    """A directory under a root that is not served: another tool's records, or skycap records deeper
    than runs are looked for."""

    path: Path
    why: str

    def line(self) -> str:
        return f"skycap-viewer: {copy_url_of(self.path)}: {self.why}: skipped"


SKYRL_MANIFEST = "manifest.json"
SKYRL_SHARDS = "committed"
SKYRL_MANIFEST_READ = 64 * 1024  # bytes of manifest.json looked at: a huge one costs no more
RECORD_VERSION = re.compile(rb'"record_version"\s*:\s*(-?\d{1,20}|"[\w.+-]{0,40}")')  # digits or a plain word


def skyrl_capture_version(path) -> str | None:
    """`record_version` of the skyrl-capture directory `path` (a `committed/` folder beside a
    `manifest.json` that names it in its first 64 KiB), or None when `path` is not one.

    The manifest is opened without blocking, read only if it is a regular file, and never past its
    first 64 KiB: a FIFO or a folder named so, or a file (huge, not JSON) that does not name
    `record_version` there, does not make the directory skyrl-capture's."""
    if not os.path.isdir(os.path.join(path, SKYRL_SHARDS)):
        return None
    manifest = os.path.join(path, SKYRL_MANIFEST)
    try:
        with open(os.open(manifest, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            head = handle.read(SKYRL_MANIFEST_READ)
    except OSError:
        return None
    found = RECORD_VERSION.search(head)
    return found.group(1).strip(b"\"").decode("ascii") if found else None


def skipped_directory(path: Path) -> Skipped | None:
    version = skyrl_capture_version(path)
    if version is None:
        return None
    return Skipped(path, f"written by skyrl-capture (record_version {version}), not a skycap v1 record directory")


def too_deep(path: Path) -> list[Skipped]:
    """The record directories just below `path`, the last level discovery looks at: not served, and said."""
    return [Skipped(child, "skycap records three levels below the directory given, deeper than runs are looked "
                           "for (two levels): give this directory, or a folder nearer it")
            for child in _subdirectories(path) if is_record_directory(child)]


def say_skipped(skipped: list[Skipped], said: set[Path]) -> None:
    """One line on stderr for each skipped directory not in `said` (then added to it)."""
    for entry in skipped:
        if entry.path not in said:
            said.add(entry.path)
            say(entry.line())


def is_record_directory(path) -> bool:
    try:
        with os.scandir(path) as entries:
            return any(is_document_name(e.name) and not entry_is_directory(e, None) for e in entries)
    except OSError:
        return False


def entry_is_directory(entry: os.DirEntry, skipped: list[Skipped] | None) -> bool:
    """Whether `entry` is (or links to) a directory; an entry that cannot be looked at (a symlink
    loop, no permission, an I/O error) is not, and is added to `skipped`: its siblings are still listed."""
    try:
        return entry.is_dir()
    except OSError as error:
        if skipped is not None:
            skipped.append(Skipped(Path(entry.path), f"cannot be looked at ({error.strerror or error})"))
        return False


def _subdirectories(path: Path, skipped: list[Skipped] | None = None) -> list[Path]:
    try:
        with os.scandir(path) as entries:
            found = [Path(e.path) for e in entries if not e.name.startswith(".") and entry_is_directory(e, skipped)]
    except OSError:
        return []
    return sorted(found)


def run_name(path: Path) -> str:
    """A directory named `skycap` takes its parent's name (`/runs/job-7/skycap` is `job-7`)."""
    return path.parent.name if path.name == "skycap" and path.parent.name else path.name


def project_name(path: Path) -> str:
    """The folder the run's named directory sits in (`ROOT/proj/run-a` is in `proj`; `/runs/job-7/skycap`,
    run `job-7`, is in `runs`)."""
    named = path.parent if path.name == "skycap" and path.parent.name else path
    return named.parent.name or named.name


def record_directories(root: Path, skipped: list[Skipped] | None = None) -> list[tuple[Path, str]]:
    """(record directory, project name) pairs under one root; a skyrl-capture directory met on the
    way is not looked into, and is added to `skipped` when given."""

    def look(path: Path, levels: int) -> list[tuple[Path, str]]:
        if (foreign := skipped_directory(path)) is not None:
            if skipped is not None:
                skipped.append(foreign)
            return []
        if is_record_directory(path):
            return [(path, project_name(path))]
        if not levels:
            if skipped is not None:
                skipped.extend(too_deep(path))
            return []
        return [found for child in _subdirectories(path, skipped) for found in look(child, levels - 1)]

    return look(root, 2)


def discover_runs(roots, known: dict[Path, str] | None = None,
                  skipped: list[Skipped] | None = None) -> list[RunLocation]:
    """Every run under `roots`, with unique ids; a directory in `known` keeps its id. Skyrl-capture
    directories are left out, and listed in `skipped` when given."""
    known = known or {}
    runs, taken, seen = [], set(known.values()), set()
    for root in roots:
        for path, project in record_directories(Path(root).absolute(), skipped):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            run_id = known.get(path)
            if run_id is None:
                base = run_name(path)
                run_id, suffix = base, 2
                while run_id in taken:
                    run_id, suffix = f"{base}~{suffix}", suffix + 1
                taken.add(run_id)
            outside = link_leaving(path, root)
            runs.append(RunLocation(run_id, project, path, Path(outside) if outside else None))
    return runs
