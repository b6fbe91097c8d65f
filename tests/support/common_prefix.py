"""The common prefix of two rollouts' token streams, counted naively from the records' raw sidecars:
what a comparison must say, computed without the viewer."""

import json

from skycap_viewer.record.frames import decompress_one_frame
from skycap_viewer.record.sidecars import read_sidecar
from tests.support.corpus import FIXTURES
from tests.support.oracle import ORACLE, trained_paths


def document_of(directory, record_id) -> dict:
    return json.loads(decompress_one_frame((FIXTURES / directory / f"{record_id}.json.zst").read_bytes()))


def path_nodes(directory, record_id, index=0) -> list[int]:
    return trained_paths(ORACLE[directory]["records"][record_id])[index]["path"]


def node_ids(directory, record_id, index=0) -> list[tuple[int, list[int]]]:
    """(node, its token ids) along path `index`, from the raw tokens sidecar."""
    document = document_of(directory, record_id)
    manifest = document["sidecars"]["tokens"]
    ids = read_sidecar(FIXTURES / directory / manifest["file"], manifest)["token_ids"]
    nodes = document["nodes"]
    return [(n, list(ids[nodes[n]["tokens"]["offset"]:nodes[n]["tokens"]["offset"] + nodes[n]["tokens"]["length"]]))
            for n in path_nodes(directory, record_id, index)]


def parting(per_node, position) -> tuple:
    """(node id on the wire, offset in it) of the unit at `position` of the path; (None, None) past its end."""
    for node, units in per_node:
        if position < len(units):
            return f"n{node}", position
        position -= len(units)
    return None, None


def expected(a, b) -> dict:
    """The common prefix of two token streams and where each side parts, counted naively."""
    stream_a = [t for _, units in a for t in units]
    stream_b = [t for _, units in b for t in units]
    shared = 0
    while shared < min(len(stream_a), len(stream_b)) and stream_a[shared] == stream_b[shared]:
        shared += 1
    identical = shared == len(stream_a) == len(stream_b)
    return {"shared": shared, "identical": identical, "a": parting(a, shared), "b": parting(b, shared)}
