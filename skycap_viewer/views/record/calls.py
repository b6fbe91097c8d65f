"""A record's calls and failures in time order: the `/exchanges` rows and the `/timeline` items, in parts.

Both walk the view's one time order (`RecordView.exchange_order`); a timeline item is its exchange row
placed on the view's layout (`views.record.timeline`), with the node and path a click on it selects.
"""

from skycap_viewer.record.fields import iso_time, wire_id
from skycap_viewer.record.rollout import bridged_value
from skycap_viewer.views.record.trajectory import (
    SERVED_PARTS,
    PartLimit,
    RecordView,
    call_duration_ms,
    check_start,
    part_of,
    window,
)


def exchange_row(view: RecordView, sequence: int) -> dict:
    node_index, at = view.exchange_order[sequence]
    if node_index is None:
        failure = view.document["failures"][at]
        leaf = failure.get("input_leaf")
        return {
            "kind": "failure",
            "node_id": wire_id(leaf) if isinstance(leaf, int) else None,
            "started_at": iso_time(failure.get("t")),
            "http_status": failure.get("status"),
            "error": failure.get("error"),
            "sequence": sequence,
        }
    node = view.document["nodes"][node_index]
    call = node["calls"][at]
    return {
        "kind": "call",
        "node_id": wire_id(node["id"]),
        "model": call.get("model"),
        "started_at": iso_time(call.get("t_start")),
        "duration_ms": call_duration_ms(call),
        "completion_reason": call.get("finish_reason"),
        "bridged": bridged_value(call),
        "usage": call.get("usage"),
        "sampling": call.get("sampling") or {},
        "tools": call.get("tools"),
        "sequence": sequence,
    }


def exchanges_part(view: RecordView, start: int = 0, limit: PartLimit = SERVED_PARTS) -> dict:
    """A part of the `/exchanges` answer: the rows from `start` in time order; the first part
    also counts every call and failure."""
    total = len(view.exchange_order)
    check_start(start, total)
    rows, end, _ = window(lambda sequence: exchange_row(view, sequence), start, total, limit)
    answer = {"data": rows, "part": part_of(start, end, total)}
    if not start:
        failures = len(view.document.get("failures") or [])
        answer.update(call_count=total - failures, failure_count=failures)
    return answer


def timeline_item(view: RecordView, sequence: int) -> dict:
    """One `/timeline` item: the `/exchanges` row's call or failure, where it is drawn, and the
    node (and path) a click on it selects."""
    row = exchange_row(view, sequence)
    placed = view.timeline.placed[sequence]
    node_index, at = view.exchange_order[sequence]
    node = node_index if node_index is not None else view.document["failures"][at].get("input_leaf")
    item = {
        "sequence": sequence,
        "kind": row["kind"],
        "node_id": row["node_id"],
        "path": view.node_paths.get(node) if row["node_id"] else None,
        "lane": placed.lane,
        "sub_lane": placed.sub_lane,
        "start_ms": placed.start_ms,
        "end_ms": placed.end_ms,
        "idle_from_ms": placed.idle_from_ms,
        "idle_ms": placed.idle_ms,
        "no_time": placed.no_time,
        "started_at": row["started_at"],
    }
    if row["kind"] == "failure":
        return {**item, "http_status": row["http_status"], "error": row["error"]}
    return {**item, "duration_ms": row["duration_ms"], "model": row["model"],
            "finish_reason": row["completion_reason"], "bridged": row["bridged"]}


def timeline_part(view: RecordView, start: int = 0, limit: PartLimit = SERVED_PARTS) -> dict:
    """A part of the `/timeline` answer: the items from `start` in time order (`/exchanges`'
    sequence); the first part also the lanes (at most a part's items of them), the span, the
    idle total and the counts."""
    total = len(view.exchange_order)
    check_start(start, total)
    items, end, _ = window(lambda sequence: timeline_item(view, sequence), start, total, limit)
    answer = {"data": items, "part": part_of(start, end, total)}
    if not start:
        layout = view.timeline
        failures = len(view.document.get("failures") or [])
        answer.update(
            origin_at=iso_time(layout.origin), span_ms=layout.span_ms, idle_ms=layout.idle_ms,
            gap_count=layout.gap_count, lanes=layout.lanes[:limit.items], lane_count=len(layout.lanes),
            call_count=total - failures, failure_count=failures,
            no_time_count=sum(placed.no_time is not None for placed in layout.placed))
    return answer
