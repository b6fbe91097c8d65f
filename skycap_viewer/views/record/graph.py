"""A record's graph: the `/graph` answer, its nodes in document order, in parts.

Each node with its calls, children, the path that trains it and the Tree's signs; the first part also
the roots, leaves, branch points, forks and the train-once check. A node whose message is bigger than a
part is sent as a placeholder (`without_message`), its message whole from `/message` (`views.record.node`).
"""

from skycap_viewer.record.blocks import sampled_tokens
from skycap_viewer.record.fields import iso_time, wire_id
from skycap_viewer.record.forks import trajectory_forks
from skycap_viewer.record.rollout import Rollout, bridged_value
from skycap_viewer.views.record.trajectory import (
    SERVED_PARTS,
    PartLimit,
    RecordView,
    call_duration_ms,
    check_start,
    fork_payload,
    node_chars,
    part_of,
    window,
    without_message,
)


def graph_node(rollout: Rollout, node: dict, signs: dict) -> dict:
    slices = node.get("tokens")
    node_id = node["id"]
    return {
        "node_id": wire_id(node_id),
        "parent_node_id": wire_id(node.get("parent")),
        "depth": node.get("depth"),
        "role": node.get("role"),
        "author": node["author"],
        "token_count": slices["length"] if slices else None,
        "char_count": node_chars(node),
        "sampled_start": slices.get("sampled_start") if slices else None,
        "sampled_token_count": sampled_tokens(node),
        "has_logprobs": bool(slices and slices.get("has_logprobs")),
        "created_at": iso_time(node.get("created_at")),
        "shadowed_by": wire_id(node.get("shadowed_by")),
        "match_hash": node.get("match_hash"),
        "delta_hash": node.get("delta_hash"),
        "calls": [{**call, "bridged": bridged_value(call), "duration_ms": call_duration_ms(call)}
                  for call in node.get("calls") or []],
        "child_ids": [wire_id(child) for child in rollout.graph.children[node_id]],
        "trained_in": rollout.graph.trained_in.get(node_id),
        "signs": {name: node_id in members for name, members in signs.items()},
        "message": node.get("message"),
    }


def graph_part(view: RecordView, start: int = 0, limit: PartLimit = SERVED_PARTS, header: dict | None = None) -> dict:
    """A part of the `/graph` answer: the nodes from `start` in document order; the first part
    also the header (`header`, as served, else its own), roots, leaves, branch points, forks and the
    train-once check."""
    rollout = view.rollout
    nodes = rollout.nodes
    check_start(start, len(nodes))
    items, end, _ = window(lambda i: graph_node(rollout, nodes[i], view.signs), start, len(nodes), limit,
                           placeholder=without_message)
    part = part_of(start, end, len(nodes))
    if start:
        return {"nodes": items, "part": part}
    graph = rollout.graph
    return {
        "trajectory": view.header if header is None else header,
        "nodes": items,
        "root_node_ids": [wire_id(n) for n in graph.roots],
        "leaf_node_ids": [wire_id(n) for n in graph.leaves],
        "branch_points": [
            {"node_id": wire_id(n), "child_count": len(graph.children[n]),
             "child_ids": [wire_id(c) for c in graph.children[n]]}
            for n in graph.branch_points
        ],
        "forks": [fork_payload(fork) for fork in trajectory_forks(view.document)],
        "train_once": view.train_once,
        "part": part,
    }
