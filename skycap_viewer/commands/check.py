"""`skycap-viewer check DIR...`: validate records against format v1, sidecars included (a DIR may be
one record's document: that record alone is checked).

It applies every rule skycap's own `check` applies to documents, and what that checker cannot
see because it never opens a sidecar: one zstd frame per file, arrays whose dtype, alignment
and size fit the payload, node slices inside their arrays, text cut on character boundaries.
A listed sidecar whose file is absent is not a problem (a mirror may leave it out): it is
counted per kind in the directory's summary line.

With `--forks` it also names every fork of every readable record in skycap's own words
(`record/forks.py`). Forks are not problems: the exit status stays about the format.
"""

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from skycap_viewer.catalog.discovery import record_directories, say_skipped
from skycap_viewer.commands.terminal import Progress, json_text, links_text, plural, print_out, symlink_note
from skycap_viewer.errors import RecordError, UsageError
from skycap_viewer.flags import FLAG_BY_NAME
from skycap_viewer.printable import safe
from skycap_viewer.record.copies import copy_url_of
from skycap_viewer.record.document import document_path, link_leaving, list_record_ids, record_id_of
from skycap_viewer.record.forks import Fork, trajectory_forks
from skycap_viewer.record.graph import Graph
from skycap_viewer.record.opener import open_record
from skycap_viewer.record.verify import verified_rollout
from skycap_viewer.views.record.trajectory import fork_payload


@dataclass
class RecordReport:
    id: str
    problems: list[str]
    absent: list[str]  # listed sidecar kinds whose files are not in the directory
    findings: list[str] = field(default_factory=list)  # flags its sidecars raise (`out-of-support`, ...)
    forks: list[Fork] = field(default_factory=list)  # only with --forks
    heading: str = ""  # skycap's line above a record's forks: `{document id}  {status}  {n} paths`


@dataclass
class DirectoryReport:
    path: str  # as the user named it (a store's copy by its URL)
    documents: int = 0
    bad: list[RecordReport] = field(default_factory=list)
    absent: dict[str, int] = field(default_factory=dict)
    listed: list[RecordReport] = field(default_factory=list)  # with problems or forks, in id order
    found: list[RecordReport] = field(default_factory=list)  # with findings, in id order
    symlink_to: str | None = None  # the real directory, when a symlink took it out of its root
    symlinks: dict = field(default_factory=dict)  # record id -> real path, for documents linked out of it

    def add(self, report: RecordReport) -> None:
        self.documents += 1
        if report.problems:
            self.bad.append(report)
        if report.findings:
            self.found.append(report)
        if report.problems or report.forks:
            self.listed.append(report)
        for kind in report.absent:
            self.absent[kind] = self.absent.get(kind, 0) + 1


def check_record(directory: Path, record_id: str, forks: bool = False) -> RecordReport:
    """Every problem of one record (an unreadable document is one problem, its error), what its sidecars
    found that is no problem of the format (`findings`: the flags only they raise, decided where the
    index decides them), and with `forks` the record's forks and skycap's heading line for them."""
    try:
        opened = open_record(directory, record_id)
    except RecordError as error:
        return RecordReport(record_id, [error.problem], [])
    document = opened.document
    rollout = verified_rollout(directory, document, opened.present, record_id)
    report = RecordReport(record_id, rollout.record_problems, rollout.missing_sidecars,
                          findings=list(rollout.sidecar_flags))
    if forks:
        report.forks = trajectory_forks(document)
        leaves = Graph(document["nodes"]).leaves
        report.heading = f"{document['id']}  {document['status']}  {len(leaves)} paths"
    return report


def check_directory(directory: Path, forks: bool = False, symlink_to: str | None = None,
                    only: list[str] | None = None) -> DirectoryReport:
    """Every record of `directory`, or those `only` names."""
    report = DirectoryReport(copy_url_of(directory), symlink_to=symlink_to)  # a store's copy: named by its URL
    try:
        ids = list_record_ids(directory) if only is None else only
    except OSError as error:
        raise UsageError(f"cannot list {directory}: {error.strerror or error}") from None
    progress = Progress(f"checking {directory}", len(ids))
    for done, record_id in enumerate(ids, 1):
        if link := link_leaving(document_path(directory, record_id), directory):
            report.symlinks[record_id] = link
        report.add(check_record(directory, record_id, forks))
        progress.update(done)
    progress.close()
    return report


def resolve_directories(dirs) -> list[tuple[Path, str | None]]:
    """(record directory, its real path when a symlink took it out of its root) under each argument,
    found the way runs are discovered: a directory reached twice (a link, a loop) is checked once, a
    skyrl-capture directory is said once on stderr and not checked."""
    found, seen, said = [], set(), set()
    for root in dirs:
        skipped = []
        directories = [path for path, _project in record_directories(Path(root), skipped)]
        say_skipped(skipped, said)
        if not directories:
            raise UsageError(f"no skycap records (*.json.zst) in {root}")
        for directory in directories:
            if (real := os.path.realpath(directory)) not in seen:
                seen.add(real)
                found.append((directory, link_leaving(directory, root)))
    return found


def fork_line(fork: Fork) -> str:
    """One fork as skycap's `check` prints it."""
    where = "new root" if fork.parent_id is None else f"under node {fork.parent_id}"
    return f"  node {fork.node_id} ({where}, vs node {fork.sibling_id}): {fork.kind}: {fork.detail}"


def fork_lines(report: DirectoryReport) -> list[str]:
    """Each forked record's heading and fork lines; kinds and details name the record's roles and
    message keys, so they are escaped like any record text."""
    return [safe(line) for record in report.listed if record.forks
            for line in [record.heading, *map(fork_line, record.forks)]]


def fork_counts(report: DirectoryReport) -> str:
    """`forks: 2 edited reply, 1 resample`: kinds, most common first (ties in the order first seen)."""
    kinds = Counter(fork.kind for record in report.listed for fork in record.forks)
    return "forks: " + ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())


def finding_line(report: DirectoryReport, record: RecordReport, name: str) -> str:
    """One finding: `DIR/ID: finding out-of-support: why` (not a problem: the exit status ignores it)."""
    return f"{report.path}/{record.id}: finding {name}: {FLAG_BY_NAME[name].why}"


def summary_line(report: DirectoryReport, forks: bool = False) -> str:
    line = f"{report.path}{symlink_note(report.symlink_to)}: {plural(report.documents, 'document')}, "
    line += f"{len(report.bad)} with problems"
    if report.found:
        kinds = Counter(name for record in report.found for name in record.findings)
        line += "; findings (not problems): " + ", ".join(f"{name} {n}" for name, n in sorted(kinds.items()))
    if report.absent:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(report.absent.items()))
        line += f"; listed sidecar files not here (read as absent): {kinds}"
    if report.symlinks:
        line += f"; {links_text(report.symlinks)}"
    if forks and any(record.forks for record in report.listed):
        line += f"; {safe(fork_counts(report))}"
    return line


def record_entry(record: RecordReport, forks: bool) -> dict:
    entry = {"id": record.id, "problems": record.problems, "findings": record.findings}
    if forks:
        entry["forks"] = [fork_payload(fork) for fork in record.forks]
    return entry


def json_payload(reports: list[DirectoryReport], forks: bool = False) -> dict:
    """Records with problems; with `forks`, the forked ones too, each with its forks."""
    return {
        "valid": not any(r.bad for r in reports),
        "directories": [
            {
                "directory": str(r.path),
                "symlink_to": r.symlink_to,
                "symlinks": r.symlinks,
                "documents": r.documents,
                "with_problems": len(r.bad),
                "absent_sidecars": dict(sorted(r.absent.items())),
                "records": [record_entry(b, forks) for b in (r.listed if forks else r.bad)],
                "findings": [record_entry(f, forks) for f in r.found],
            }
            for r in reports
        ],
    }


def run_check(dirs, as_json: bool = False, forks: bool = False) -> int:
    """Exit 0 when every record is valid, 1 when any has a problem (2 is raised as UsageError);
    forks, when asked for, are printed and never change it."""
    documents = [Path(path) for path in dirs if not Path(path).is_dir()]  # one record each, checked alone
    reports = [check_directory(path.parent, forks, only=[record_id_of(path.name)]) for path in documents]
    if len(documents) < len(dirs):
        reports += [check_directory(directory, forks, link)
                    for directory, link in resolve_directories([d for d in dirs if Path(d).is_dir()])]
    if as_json:
        print_out(json_text(json_payload(reports, forks)))
    else:
        lines = [line for r in reports for line in fork_lines(r)]
        lines += [f"{r.path}/{bad.id}: {'; '.join(bad.problems)}" for r in reports for bad in r.bad]
        lines += [finding_line(r, record, name) for r in reports for record in r.found for name in record.findings]
        print_out(safe("\n".join(lines + [summary_line(r, forks) for r in reports])))  # names and problems too
    return 1 if any(r.bad for r in reports) else 0
