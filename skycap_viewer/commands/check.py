"""`skycap-viewer check DIR...`: validate records against format v1, sidecars included.

It applies every rule skycap's own `check` applies to documents, and what that checker cannot
see because it never opens a sidecar: one zstd frame per file, arrays whose dtype, alignment
and size fit the payload, node slices inside their arrays, text cut on character boundaries.
A listed sidecar whose file is absent is not a problem (a mirror may leave it out): it is
counted per kind in the directory's summary line.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from skycap_viewer.catalog.discovery import record_directories
from skycap_viewer.commands.terminal import Progress, plural, print_out
from skycap_viewer.errors import RecordError, UsageError
from skycap_viewer.record.document import document_path, list_record_ids, read_document
from skycap_viewer.record.verify import document_problems, sidecar_problems


@dataclass
class RecordReport:
    id: str
    problems: list[str]
    absent: list[str]  # listed sidecar kinds whose files are not in the directory


@dataclass
class DirectoryReport:
    path: Path
    documents: int = 0
    bad: list[RecordReport] = field(default_factory=list)
    absent: dict[str, int] = field(default_factory=dict)

    def add(self, report: RecordReport) -> None:
        self.documents += 1
        if report.problems:
            self.bad.append(report)
        for kind in report.absent:
            self.absent[kind] = self.absent.get(kind, 0) + 1


def check_record(directory: Path, record_id: str, present: set[str]) -> RecordReport:
    """Every problem of one record; an unreadable document is one problem, its error."""
    try:
        document = read_document(document_path(directory, record_id))
    except RecordError as error:
        return RecordReport(record_id, [error.problem], [])
    problems = document_problems(document, record_id)
    found, absent = sidecar_problems(directory, document, present, consistent=not problems)
    return RecordReport(record_id, problems + found, absent)


def check_directory(directory: Path) -> DirectoryReport:
    report = DirectoryReport(directory)
    try:
        present = set(os.listdir(directory))
        ids = list_record_ids(directory)
    except OSError as error:
        raise UsageError(f"cannot list {directory}: {error.strerror or error}") from None
    progress = Progress(f"checking {directory}", len(ids))
    for done, record_id in enumerate(ids, 1):
        report.add(check_record(directory, record_id, present))
        progress.update(done)
    progress.close()
    return report


def resolve_directories(dirs) -> list[Path]:
    """Record directories under each argument, found the way runs are discovered."""
    found = []
    for root in dirs:
        directories = [path for path, _project in record_directories(Path(root))]
        if not directories:
            raise UsageError(f"no skycap records (*.json.zst) in {root}")
        found += [d for d in directories if d not in found]
    return found


def summary_line(report: DirectoryReport) -> str:
    line = f"{report.path}: {plural(report.documents, 'document')}, {len(report.bad)} with problems"
    if report.absent:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(report.absent.items()))
        line += f"; listed sidecar files not here (read as absent): {kinds}"
    return line


def json_payload(reports: list[DirectoryReport]) -> dict:
    return {
        "valid": not any(r.bad for r in reports),
        "directories": [
            {
                "directory": str(r.path),
                "documents": r.documents,
                "with_problems": len(r.bad),
                "absent_sidecars": dict(sorted(r.absent.items())),
                "records": [{"id": b.id, "problems": b.problems} for b in r.bad],
            }
            for r in reports
        ],
    }


def run_check(dirs, as_json: bool = False) -> int:
    """Exit 0 when every record is valid, 1 when any has a problem (2 is raised as UsageError)."""
    directories = resolve_directories(dirs)
    reports = [check_directory(d) for d in directories]
    if as_json:
        print_out(json.dumps(json_payload(reports), indent=1, ensure_ascii=False))
    else:
        lines = [f"{r.path}/{bad.id}: {'; '.join(bad.problems)}" for r in reports for bad in r.bad]
        print_out("\n".join(lines + [summary_line(r) for r in reports]))
    return 1 if any(r.bad for r in reports) else 0
