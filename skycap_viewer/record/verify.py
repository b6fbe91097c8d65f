"""Every problem of a readable record, its sidecars opened: what `check` reports and the index learns.

Beyond the document's own consistency (the manifest, the samples rows), each present sidecar must
be one whole zstd frame whose arrays fit the payload and the nodes' slices (text cut on character
boundaries, sampling-mask offsets in order). A listed sidecar whose file is absent is not a
problem (a mirror may leave it out): it is returned as absent.
"""

from dataclasses import dataclass, field
from pathlib import Path

from skycap_viewer.errors import RecordError
from skycap_viewer.record.graph import Graph
from skycap_viewer.record.manifest import EXPECTED_ARRAYS, layout_problems, listed_kinds
from skycap_viewer.record.sidecars import TokenData, decode_arrays, mask_problems, read_payload


def document_problems(document: dict, file_id: str | None) -> list[str]:
    """What the document alone says is wrong with it: its manifest and slices, its samples rows."""
    return layout_problems(document, file_id) + Graph(document["nodes"], document.get("samples")).problems


@dataclass
class SidecarReport:
    problems: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # listed kinds whose files are not in the directory
    damaged: set[str] = field(default_factory=set)  # kinds with a problem (a damaged `tokens` hides the text)


def sidecar_problems(directory, document: dict, present, consistent: bool) -> SidecarReport:
    """What is wrong with the record's sidecars: every present one is opened and read.

    Arrays are checked against the nodes only when the document agrees with itself (`consistent`),
    so a problem the document already shows is not reported twice."""
    sidecars = document.get("sidecars") or {}
    report = SidecarReport(absent=sorted(listed_kinds(document) - set(sidecars)))  # a mirror's `omitted_sidecars`
    for kind, manifest in sidecars.items():
        if manifest["file"] not in present:
            report.absent.append(kind)
            continue
        found = one_sidecar_problems(Path(directory) / manifest["file"], document, kind, manifest, consistent)
        report.problems += found
        if found:
            report.damaged.add(kind)
    return report


def one_sidecar_problems(path: Path, document: dict, kind: str, manifest: dict, consistent: bool) -> list[str]:
    """Open one present sidecar: one whole frame, then its arrays against the payload and the nodes."""
    try:
        payload = read_payload(path, manifest)
        if not consistent or kind not in EXPECTED_ARRAYS:
            return []
        arrays = decode_arrays(payload, manifest, path)
    except RecordError as error:
        return [f"{kind} sidecar {path.name}: {error.problem}"]
    if kind == "tokens":
        return TokenData(arrays, path).problems(document)
    if kind == "sampling_mask":
        return mask_problems(arrays)
    return []
