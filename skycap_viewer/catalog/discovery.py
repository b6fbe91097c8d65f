"""Find runs: record directories under the directories given on the command line.

A root is a run if it holds a record; otherwise its children, and failing that their
children, are looked at (two levels, no further, so a symlink loop cannot trap the scan).
Anything inside a record directory (a pulled run's `index/` folder) is neither run nor record.

Symlinks are followed, wherever they lead: a folder of links to runs on other disks is a common
way to gather them. A run whose real directory is outside its root says so (`symlink_to`), and a
directory reached twice (through a link and directly, or through a loop) is one run, found first
in name order.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from skycap_viewer.record.document import is_document_name, link_leaving


@dataclass(frozen=True)
class RunLocation:
    id: str
    project: str
    path: Path
    symlink_to: Path | None = None  # the real directory, when a symlink takes the run out of its root


def is_record_directory(path) -> bool:
    try:
        with os.scandir(path) as entries:
            return any(is_document_name(e.name) and not e.is_dir() for e in entries)
    except OSError:
        return False


def _subdirectories(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as entries:
            found = [Path(e.path) for e in entries if not e.name.startswith(".") and e.is_dir()]
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


def record_directories(root: Path) -> list[tuple[Path, str]]:
    """(record directory, project name) pairs under one root."""
    if is_record_directory(root):
        return [(root, project_name(root))]
    found = []
    for child in _subdirectories(root):
        if is_record_directory(child):
            found.append((child, project_name(child)))
        else:
            grandchildren = _subdirectories(child)
            found.extend((path, project_name(path)) for path in grandchildren if is_record_directory(path))
    return found


def discover_runs(roots, known: dict[Path, str] | None = None) -> list[RunLocation]:
    """Every run under `roots`, with unique ids; a directory in `known` keeps its id."""
    known = known or {}
    runs, taken, seen = [], set(known.values()), set()
    for root in roots:
        for path, project in record_directories(Path(root).absolute()):
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
