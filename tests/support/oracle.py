"""What skycap's own reader says of the corpus (`oracle.json`, `_notes.json`), as the tests read it.

The oracle covers the corpus without `pulled/` (tested against its own `pulled-expected.json`). Records of
`broken/` are sorted by `_notes.json`: damage the format allows (read like any record) and damage the
viewer must report instead of showing numbers.
"""

import json

from tests.support.corpus import FIXTURES, NOT_CORPUS

ORACLE_ALL = json.loads((FIXTURES / "oracle.json").read_text())["dirs"]
ORACLE = {d: entry for d, entry in ORACLE_ALL.items()
          if (FIXTURES / d).is_dir() and d.split("/")[0] not in NOT_CORPUS}  # the directories copied here
RECORD_DIRS = sorted(ORACLE)
NOTES = json.loads((FIXTURES / "_notes.json").read_text())["broken"]


def oracle_records():
    """(directory, record id, oracle entry) for every record of the corpus."""
    return [(d, rid, entry) for d in RECORD_DIRS for rid, entry in sorted(ORACLE[d]["records"].items())]


def readable_records():
    """Records whose document skycap reads and whose paths the viewer shows from tokens or text."""
    return [(d, rid, e) for d, rid, e in oracle_records() if d != "broken" and "paths" in e]


READABLE = readable_records()
READABLE_IDS = [f"{d}/{r}" for d, r, _ in READABLE]


def format_allows(directory: str, record_id: str) -> bool:
    """Outside `broken/` every record is valid; inside, the notes say which damage the format allows."""
    if directory != "broken":
        return True
    note = NOTES[record_id]
    return (
        note.startswith(("VALID", "intact"))
        or "allowed by format" in note  # unknown fields: skycap's reader is stricter than its format
        or "manifest still lists it" in note  # a listed sidecar whose file is absent: a mirror's copy
    )


ALLOWED = [r for r in oracle_records() if format_allows(r[0], r[1])]
DAMAGED = [r for r in oracle_records() if not format_allows(r[0], r[1])]


def trained_paths(entry: dict) -> list[dict]:
    """The oracle's paths (skycap's `all` rule, leaf order) with what the record's own `samples` train.

    A path that is no `samples` row trains nothing (`trains` false, no targets, 0 trained tokens); a
    row's trained tokens are its targets' sampled tokens (`node_summary`). Without `samples` the
    `all` rule stands. Where skycap's `trained_by_samples` is given, each row's figure must agree."""
    rows = (entry.get("samples_field") or {}).get("rows")
    if rows is None:
        return [{**path, "trains": True} for path in entry["paths"]]
    nodes = {node["id"]: node for node in entry["node_summary"]}
    first_path = {}
    for index, path in enumerate(entry["paths"]):
        for node in path["path"]:
            first_path.setdefault(node, index)
    trained_in = {target: first_path[row["leaf"]] for row in rows for target in row["targets"]}
    sampled = {n: nodes[n]["tokens"] - (nodes[n]["sampled_start"] or 0) for n in trained_in
               if nodes[n]["tokens"] is not None}
    for row, skycap in zip(rows, entry.get("trained_by_samples") or [], strict=False):
        if skycap["trained_tokens"] is not None:
            assert skycap["trained_tokens"] == sum(sampled[t] for t in row["targets"]), "the oracle disagrees"
    expected = []
    for index, path in enumerate(entry["paths"]):
        targets = [n for n in path["path"] if trained_in.get(n) == index]
        elsewhere = {str(n): trained_in[n] for n in path["path"] if n in trained_in and trained_in[n] != index}
        trains = any(first_path[row["leaf"]] == index for row in rows)
        trained = None if path["tokens"] is None else sum(sampled[n] for n in targets)
        expected.append({**path, "targets": targets, "sampled_elsewhere": elsewhere, "trains": trains,
                         "trained_tokens": trained})
    return expected
