"""One node of a record whole, where a part sent less: its message (`/message`), its media items in
parts (`/media`); a `/paths` node carries its first `MEDIA_IN_NODE` items, a `/graph` node too big for
a part a placeholder."""

from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.media import media_count, node_media
from skycap_viewer.views.record.trajectory import SERVED_PARTS, PartLimit, RecordView, check_start, part_of, window


def node_message(view: RecordView, node_id: int) -> dict:
    """One node's message whole, as the document holds it: what a part left as a placeholder."""
    return {"node_id": wire_id(node_id), "message": view.rollout.nodes[node_id].get("message")}


def media_part(view: RecordView, node_id: int, start: int = 0, limit: PartLimit = SERVED_PARTS) -> dict:
    """A part of one node's media items, from the `start`-th it records (a node's payload holds the
    first `MEDIA_IN_NODE`)."""
    node = view.rollout.nodes[node_id]
    total = media_count(node)
    check_start(start, total)
    items, end, _ = window(lambda i: node_media(node, i, i + 1), start, total, limit)
    return {"node_id": wire_id(node_id), "media": [item for shown in items for item in shown],
            "part": part_of(start, end, total)}
