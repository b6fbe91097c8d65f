"""Where a rollout's time went: every call and failure placed on a lane, and the idle spans between.

Laid out once per record from the calls in time order (`RecordView.exchange_order`): the page only
draws what this says. A call is a bar from its `t_start` to its `t_end`, a failure a point at its
`t` (format §2: failures carry no other time). Calls under different roots (a subagent, a new tool
set or model) run on different lanes, a failure on its `input_leaf`'s (none in current writers: a
lane of its own); calls that overlap on one lane take the lowest free sub-lane, so none hides
another. An idle span is where no call runs at all, on any lane: it ends at the call after it.
Positions are milliseconds since the first drawn item; an item without valid times is not drawn.
"""

import heapq
from dataclasses import dataclass, field

from skycap_viewer.record.lane import ms, times


@dataclass(frozen=True)
class Placed:
    """Where one call or failure is drawn; all None (and `no_time` why) when it is not."""

    lane: int | None = None
    sub_lane: int | None = None
    start_ms: float | None = None
    end_ms: float | None = None
    idle_from_ms: float | None = None  # the idle span before this call, when there is one: from here
    idle_ms: float | None = None  # to `start_ms`, this long
    no_time: str | None = None


@dataclass
class Layout:
    origin: float | None = None  # Unix seconds of the first drawn item
    span_ms: float = 0.0
    idle_ms: float = 0.0
    gap_count: int = 0
    placed: list[Placed] = field(default_factory=list)  # by position in the time order
    lanes: list[dict] = field(default_factory=list)


def roots_of(nodes: list[dict]) -> list[int]:
    """Each node's root: nodes are stored in creation order, a parent before its children."""
    roots: list[int] = []
    for node in nodes:
        parent = node.get("parent")
        roots.append(node["id"] if parent is None else roots[parent])
    return roots


def lane_root(document: dict, roots: list[int], node_index: int | None, at: int) -> int | None:
    """The root whose lane an item runs on; None for a failure that names no node."""
    if node_index is not None:
        return roots[node_index]
    leaf = document["failures"][at].get("input_leaf")
    return roots[leaf] if type(leaf) is int and 0 <= leaf < len(roots) else None


def lay_out(document: dict, order: list[tuple[int | None, int]]) -> Layout:
    """The timeline of the items in `order` (sorted by start, ties by node id, failures after calls)."""
    roots = roots_of(document["nodes"])
    timed = [times(document, n, at) for n, at in order]
    layout = Layout()
    drawn = [(i, start, end) for i, (start, end, _) in enumerate(timed) if start is not None]
    if not drawn:
        layout.placed = [Placed(no_time=why) for _, _, why in timed]
        return layout
    origin = layout.origin = drawn[0][1]
    lane_of: dict[int | None, int] = {}  # root -> lane, in the order lanes start
    busy: list[list[tuple[float, int]]] = []  # per lane: heap of (end, sub-lane) still running
    free: list[list[int]] = []  # per lane: heap of sub-lanes free again
    lanes: list[dict] = []
    placed: dict[int, Placed] = {}
    running_until = None  # the latest end of the calls so far: no call runs between it and a later start
    for i, start, end in drawn:
        node_index, at = order[i]
        root = lane_root(document, roots, node_index, at)
        if root not in lane_of:
            lane_of[root] = len(lanes)
            busy.append([])
            free.append([])
            lanes.append({"lane": len(lanes), "root_node_id": None if root is None else f"n{root}", "sub_lanes": 0,
                          "call_count": 0, "failure_count": 0, "from_ms": ms(start - origin), "to_ms": 0.0})
        lane = lane_of[root]
        while busy[lane] and busy[lane][0][0] <= start:
            heapq.heappush(free[lane], heapq.heappop(busy[lane])[1])
        info = lanes[lane]
        if free[lane]:
            sub = heapq.heappop(free[lane])
        else:
            sub = info["sub_lanes"]
            info["sub_lanes"] += 1
        heapq.heappush(busy[lane], (end, sub))
        info["failure_count" if node_index is None else "call_count"] += 1
        info["to_ms"] = max(info["to_ms"], ms(end - origin))
        idle_from = idle = None
        if node_index is not None:
            if running_until is not None and start > running_until:
                idle_from, idle = ms(running_until - origin), ms(start - running_until)
                layout.gap_count += 1
                layout.idle_ms += start - running_until
            running_until = end if running_until is None else max(running_until, end)
        placed[i] = Placed(lane, sub, ms(start - origin), ms(end - origin), idle_from, idle)
        layout.span_ms = max(layout.span_ms, ms(end - origin))
    layout.idle_ms = ms(layout.idle_ms)
    layout.placed = [placed.get(i) or Placed(no_time=why) for i, (_, _, why) in enumerate(timed)]
    layout.lanes = lanes
    return layout
