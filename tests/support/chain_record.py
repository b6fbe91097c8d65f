"""A legal record that is one long chain of nodes: the shape whose answers must come in parts.

`python -m tests.support.chain_record N DIR` writes `DIR/chain.json.zst` of N nodes, for measuring by hand."""

import json
import sys
from pathlib import Path

from skycap_viewer.record.frames import compress


def chain_document(count: int) -> dict:
    """client/model turns alternating, each model node answered by one call, parent the node before."""
    nodes = []
    for i in range(count):
        model = i % 2 == 1
        role = "assistant" if model else "user"
        node = {"id": i, "parent": i - 1 if i else None, "depth": i, "author": "model" if model else "client",
                "role": role, "message": {"role": role, "content": f"turn {i}"}}
        if model:
            node["calls"] = [{"t_start": 1_700_000_000 + i, "t_end": 1_700_000_000.5 + i, "finish_reason": "stop"}]
        nodes.append(node)
    return {"format_version": 1, "id": "chain", "status": "finished", "ended": True, "meta": {"step": 1},
            "annotations": {"reward": 1.0}, "nodes": nodes}


def write_chain(directory: Path, count: int, edit=None) -> dict:
    """Write the chain record into `directory` (after `edit(document)`, if given) and return its document."""
    document = chain_document(count)
    if edit is not None:
        edit(document)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "chain.json.zst").write_bytes(compress(json.dumps(document, separators=(",", ":")).encode()))
    return document


if __name__ == "__main__":
    write_chain(Path(sys.argv[2]), int(sys.argv[1]))
