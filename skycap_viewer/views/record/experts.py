"""The `/experts` answer: one node's routed experts at one layer, a part of its rows at a time.

Each row is one token of the node (row i is its token i) with the k expert ids that layer routed it
to, and says whether its set of ids is the previous token's (routing repeats; a node's first row
has no previous token in the node). Only the rows asked are read (`record.experts`), so the lane
under the Path never costs the whole sidecar. A record without the sidecar, a node without rows or
a damaged sidecar is answered with `unavailable` and a `note`, not an error.
"""

from skycap_viewer.errors import RecordError
from skycap_viewer.record.experts import ExpertsArray
from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.sidecars import sidecar_file
from skycap_viewer.views.record.trajectory import check_start, part_of

EXPERT_ROWS = 2048  # rows an answer holds at most
EXPERT_IDS = 65536  # ids (rows times k) an answer holds at most
UNAVAILABLE = {
    "not-captured": "the record has no experts sidecar: routing was not captured",
    "missing": "the experts sidecar is listed but not here (a mirror?)",
    "no-rows": "this node has no experts rows (no tokens, or captured without routing)",
}


def experts_part(directory, document: dict, present, node_id: int, layer: int, start: int = 0) -> dict:
    """The rows of node `node_id` at `layer` from `start`, as far as one answer holds (`part`).
    Raises ValueError (the API's 400) for a layer or start the node's rows do not have."""
    answer = {"node_id": wire_id(node_id), "layer": layer, "layers": None, "k": None, "dtype": None, "rows": 0,
              "experts": [], "repeats": [], "part": part_of(0, 0, 0), "unavailable": None, "note": None}
    manifest = (document.get("sidecars") or {}).get("experts")
    if manifest is None:
        return unavailable(answer, "not-captured")
    path = sidecar_file(directory, document, "experts")
    if path.name not in present:
        return unavailable(answer, "missing")
    try:
        array = ExpertsArray.of(path, manifest)
    except RecordError as error:
        return unavailable(answer, "damaged", str(error))
    answer.update(layers=array.layers, k=array.k, dtype=array.dtype)
    if not 0 <= layer < array.layers:
        raise ValueError(f"layer must be in 0..{array.layers - 1}, not {layer}")
    tokens = document["nodes"][node_id].get("tokens") or {}
    first, rows = tokens.get("experts_offset"), tokens.get("experts_rows") or 0
    if first is None or not rows:
        return unavailable(answer, "no-rows")
    check_start(start, rows)
    end = min(rows, start + min(EXPERT_ROWS, max(EXPERT_IDS // max(array.k, 1), 1)))
    before = 1 if start else 0  # the row before the first, to tell whether the first repeats
    try:
        read = array.layer_rows(first + start - before, end - start + before, layer)
    except RecordError as error:
        return unavailable(answer, "damaged", str(error))
    experts = read[before:]
    previous = [read[0] if before else None, *experts[:-1]]
    repeats = [last is not None and set(ids) == set(last) for ids, last in zip(experts, previous, strict=True)]
    answer.update(rows=rows, experts=experts, repeats=repeats, part=part_of(start, end, rows))
    return answer


def unavailable(answer: dict, reason: str, note: str | None = None) -> dict:
    return {**answer, "unavailable": reason, "note": note or UNAVAILABLE[reason]}
