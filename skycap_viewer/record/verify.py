"""Every problem of a readable record, its sidecars opened: what `check` reports and the index learns.

Beyond the document's own consistency (the manifest, the samples rows), each present sidecar must
be one whole zstd frame whose arrays fit the payload and the nodes' slices (text cut on character
boundaries, sampling-mask offsets in order). A listed sidecar whose file is absent is not a
problem (a mirror may leave it out): it is returned as absent. With the tokens and the sampling mask
both read whole, what the mask says of the sampled tokens raises its flags (`record.support`).
"""

from dataclasses import dataclass, field
from pathlib import Path

from skycap_viewer.errors import RecordError
from skycap_viewer.record.manifest import EXPECTED_ARRAYS, listed_kinds
from skycap_viewer.record.rollout import Rollout
from skycap_viewer.record.sidecars import TokenData, decode_arrays, read_payload
from skycap_viewer.record.support import SamplingMask, support_by_node, support_flags


@dataclass
class SidecarReport:
    problems: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # listed kinds whose files are not in the directory
    damaged: set[str] = field(default_factory=set)  # kinds with a problem (a damaged `tokens` hides the text)
    flags: list[str] = field(default_factory=list)  # flags only the sidecars can raise (`support_flags`)
    read: dict = field(default_factory=dict)  # kind -> what was read of it without a problem (shown, not read again)


def sidecar_problems(directory, document: dict, present, consistent: bool) -> SidecarReport:
    """What is wrong with the record's sidecars: every present one is opened and read.

    Arrays are checked against the nodes only when the document agrees with itself (`consistent`),
    so a problem the document already shows is not reported twice; a damaged tokens or mask
    sidecar raises no support flag."""
    sidecars = document.get("sidecars") or {}
    report = SidecarReport(absent=sorted(listed_kinds(document) - set(sidecars)))  # a mirror's `omitted_sidecars`
    sound = report.read  # kind -> what was read of it without a problem (`TokenData`, `SamplingMask`)
    for kind, manifest in sidecars.items():
        if manifest["file"] not in present:
            report.absent.append(kind)
            continue
        path = Path(directory) / manifest["file"]
        found, read = one_sidecar_problems(path, document, kind, manifest, consistent)
        report.problems += found
        if found:
            report.damaged.add(kind)
        elif read is not None:
            sound[kind] = read
    if "tokens" in sound and "sampling_mask" in sound:
        report.flags = support_flags(support_by_node(document, sound["tokens"], sound["sampling_mask"]))
    return report


def verified_rollout(directory, document: dict, present, file_id: str) -> Rollout:
    """The record's rollout with every present sidecar read: the one place its flags are decided with the
    sidecars' (damage, `out-of-support`, `forced-run`), for the index's verified rows, `check`, `summary`,
    `show` and the snapshot alike."""
    rollout = Rollout(document, present, file_id)  # its problems so far are the document's own
    rollout.read_sidecars(sidecar_problems(directory, document, present, consistent=not rollout.record_problems))
    return rollout


def one_sidecar_problems(path: Path, document: dict, kind: str, manifest: dict,
                         consistent: bool) -> tuple[list[str], TokenData | SamplingMask | None]:
    """Open one present sidecar: one whole frame, then its arrays against the payload and the nodes.
    Returns its problems, and the tokens or the mask read when they have none."""
    try:
        payload = read_payload(path, manifest)
        if not consistent or kind not in EXPECTED_ARRAYS:
            return [], None
        arrays = decode_arrays(payload, manifest, path)
    except RecordError as error:
        return [f"{kind} sidecar {path.name}: {error.problem}"], None
    if kind == "tokens":
        tokens = TokenData(arrays, path)
        problems = tokens.problems(document)
        return problems, None if problems else tokens
    if kind == "sampling_mask":
        try:
            return [], SamplingMask(arrays, path)
        except RecordError as error:
            return [error.problem], None
    return [], None
