"""Where two paths of one record part: the `/forks` answer, the blocks after it as far as a part holds."""

from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.rollout import PathView
from skycap_viewer.views.record.trajectory import SERVED_PARTS, PartLimit, RecordView, node_chars, part_of, window


def forks_answer(view: RecordView, a: int, b: int, limit: PartLimit = SERVED_PARTS) -> dict:
    """The `/forks` answer: where paths `a` and `b` agree, and each one's blocks after that, as
    far as half a part holds for each (`a_part`, `b_part` say how far: the rest is in `/paths`).

    Raises IndexError when a path does not exist. Blocks are `/paths` blocks, so the page
    takes their text from the `/paths` nodes."""
    rollout = view.rollout
    paths = rollout.paths
    if not (0 <= a < len(paths) and 0 <= b < len(paths)):
        raise IndexError(f"the trajectory has {len(paths)} path(s)")
    view_a, view_b = paths[a], paths[b]
    nodes_a, nodes_b = view_a.info.nodes, view_b.info.nodes
    shared = 0
    while shared < min(len(nodes_a), len(nodes_b)) and nodes_a[shared] == nodes_b[shared]:
        shared += 1
    last = rollout.nodes[nodes_a[shared - 1]] if shared else None
    half = PartLimit(max(limit.items // 2, 1), None if limit.bytes is None else limit.bytes // 2)

    def after(path: PathView) -> tuple[list, dict]:
        total = len(path.info.nodes)
        items, end, _ = window(lambda p: view.node_blocks(path, p), shared, total, half)
        return [block for blocks in items for block in blocks], part_of(shared, end, total)

    (a_blocks, a_part), (b_blocks, b_part) = after(view_a), after(view_b)
    shared_blocks = view_a.blocks[:view.layout(view_a)[0][shared]]
    return {
        "a": a,
        "b": b,
        "unit": view_a.unit,
        "shared_nodes": shared,
        "last_shared_node_id": wire_id(last["id"]) if last else None,
        "last_shared": {"role": last.get("role"), "author": last["author"]} if last else None,
        "shared_tokens": sum(block.end - block.start for block in shared_blocks) if view_a.token_blocked else None,
        "shared_chars": sum(node_chars(rollout.nodes[n]) for n in nodes_a[:shared]),
        "a_node_id_first": wire_id(nodes_a[shared]) if shared < len(nodes_a) else None,
        "b_node_id_first": wire_id(nodes_b[shared]) if shared < len(nodes_b) else None,
        "shared_blocks": view.node_blocks(view_a, shared - 1) if shared else [],
        "a_blocks": a_blocks,
        "b_blocks": b_blocks,
        "a_part": a_part,
        "b_part": b_part,
        "a_nodes_after": len(nodes_a) - shared,
        "b_nodes_after": len(nodes_b) - shared,
        "train_once": view.train_once,
    }
