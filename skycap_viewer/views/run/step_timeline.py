"""One training step on one time axis: every rollout of the step a lane of its calls and failures.

Why a step was slow is a question about all its rollouts at once: which ones held it up (the
`critical` one ended last), where each one's time went (calls, the time between them), which calls
failed or hit their token limit, and what the trainer did with each attempt (`trained`,
`superseded`, as the run index says and the store keeps on the rows).

Each rollout's lane was computed when the run was indexed, from its document alone, where the worker
parsed it anyway (`record.lane.rollout_lane`, kept in the store's `lanes` table with its step, start and
end as columns): a request reads no document and no sidecar. The step's origin (its earliest start,
whatever the filters keep, so the axis stays put) and its last end are each one walk of an index; a part
is the lanes the listing's own filters keep, in the asked order, read from where it starts until it is
full. So the first part of any step, at any size of run, costs a query and the decoding of its own lanes.
Times are milliseconds from the step's origin, put on the lanes as they are sent (a row's `trained`,
`superseded`, flags, group, task and status are read from its row then, as the run index says now).
Lanes are ordered by their times as recorded: two within half a microsecond, equal as sent, keep that
order rather than their ids'.
"""

import hashlib
from dataclasses import dataclass, replace

from skycap_viewer.catalog.blobs import unpack, unsqueezed
from skycap_viewer.catalog.store import bit_flags
from skycap_viewer.errors import ApiError
from skycap_viewer.record.fields import iso_time
from skycap_viewer.record.lane import ms
from skycap_viewer.views.params import as_written, parse_sort, part_start
from skycap_viewer.views.record.trajectory import PartLimit, check_start, part_of, window
from skycap_viewer.views.run.listing import Filters
from skycap_viewer.wire import RawJson, encode_json

SORTS = ("start", "end", "duration", "reward", "task")
SORTED_BY = {"start": "lane_start", "end": "lane_end", "duration": "lane_end - lane_start", "reward": "reward",
             "task": "task"}  # each sort's value: the lane's own columns, or its row's
PART_BYTES = 2**20  # of lanes in a part (about 330 of 30 calls): a first screen needs a few dozen, not thousands
READ_AT_ONCE = 64  # lanes read in one query while a part fills
ROW_COLUMNS = "id, gkey, task, status, trained, superseded, flags"  # what a lane takes from its row as it is sent


@dataclass
class StepAxis:
    """What the step's first part says of it, whatever the filters: its origin (Unix seconds), its span to
    its last end, its critical rollout (the one that ended last) and how many rollouts it holds."""

    origin: float | None
    span_ms: float
    critical: str | None
    rollouts: int


def step_axis(db, step: float) -> StepAxis:
    """The step's axis, from the `lanes` table's indexes: its earliest start and its latest end (a few
    lanes ending within a millisecond of it are compared as sent: by their end in ms, then by id); its
    lanes as the store counts them (`lane_steps`)."""
    found = db.execute("SELECT lane_start FROM lanes WHERE lane_step = ? ORDER BY (lane_start IS NULL), lane_start,"
                       " lane_id LIMIT 1", (step,)).fetchone()
    origin = found[0] if found else None
    counted = db.execute("SELECT lanes FROM lane_steps WHERE step = ?", (step,)).fetchone()
    rollouts = counted[0] if counted else 0
    found = db.execute("SELECT lane_end FROM lanes WHERE lane_step = ? ORDER BY lane_end DESC LIMIT 1",
                       (step,)).fetchone()
    last = found[0] if found else None
    if last is None or origin is None:
        return StepAxis(origin, 0.0, None, rollouts)
    ending = db.execute("SELECT lane_id, lane_end FROM lanes WHERE lane_step = ? AND lane_end >= ?",
                        (step, last - 0.001)).fetchall()
    span_ms, critical = max((ms(end - origin), record_id) for record_id, end in ending)
    return StepAxis(origin, span_ms, critical, rollouts)


def unfiltered(filters: Filters) -> bool:
    """Whether the filters keep every lane of the step (they ask for the step alone)."""
    return not replace(filters, step=None) and not filters.by_flag


def kept_lanes(filters: Filters, key: str) -> tuple[str, list]:
    """The FROM and WHERE of the step's lanes the filters keep: the `lanes` table alone when only the step
    is asked and the sort is the lane's own, else each lane's row looked up by its rid (the listing's WHERE)."""
    if unfiltered(filters) and key in ("start", "end", "duration"):
        return "FROM lanes WHERE lane_step = ?", [filters.step]
    where, values = filters.where()
    flag_where, flag_values = filters.flag_where()
    return (f"FROM lanes CROSS JOIN rows USING (rid) WHERE lane_step = ? AND {where} AND {flag_where}",
            [filters.step, *values, *flag_values])


def ordered_by(key: str, order: str) -> str:
    """The ORDER BY of a sort: lanes without the value last whatever the order, ties by trajectory id."""
    value = SORTED_BY[key]
    return f"({value}) IS NULL, {value} {'DESC' if order == 'desc' else 'ASC'}, lane_id"


def encoded_lanes(db, rids, origin: float | None):
    """Each lane of `rids` (a cursor of rids in order) as sent, read `READ_AT_ONCE` at a time."""
    while batch := [rid for (rid,) in rids.fetchmany(READ_AT_ONCE)]:
        found = {rid: rest for rid, *rest in db.execute(
            f"SELECT rid, lane_start, lane_end, lane, {ROW_COLUMNS} FROM lanes JOIN rows USING (rid)"
            " WHERE rid IN (SELECT value FROM json_each(?))", (encode_json(batch).decode(),))}
        for rid in batch:
            start, end, says, *row = found[rid]
            yield encoded_lane(row, start, end, unpack(unsqueezed(says)), origin)


def encoded_lane(row: list, start: float | None, end: float | None, says: tuple, origin: float | None) -> bytes:
    """One lane as sent: its times in ms from `origin`, with what its row says now."""
    record_id, gkey, task, status, trained, superseded, bits = row
    started_at, ended_at, reward, gap, calls, failures = says
    return encode_json({
        "trajectory_id": record_id, "group_key": gkey, "task_id": task, "status": status, "reward": reward,
        "started_at": started_at, "ended_at": ended_at,
        "start_ms": None if start is None else ms(start - origin), "end_ms": None if end is None else ms(end - origin),
        "trained": None if trained is None else bool(trained),
        "superseded": None if superseded is None else bool(superseded),
        "flags": bit_flags(bits), "longest_gap_ms": gap,
        "calls": [{"start_ms": round((s - origin) * 1000, 3), "end_ms": round((e - origin) * 1000, 3),
                   "node_id": node_id, "finish_reason": reason, "tokens": tokens}
                  for s, e, node_id, reason, tokens in calls],  # `ms`, inline: a part holds ten thousand calls
        "failures": [{"at_ms": ms(t - origin), "end_ms": ms(t - origin), "status": status_code, "message": message}
                     for t, status_code, message in failures],
    })


def timeline_part(db, filters: Filters, key: str, order: str, start: int, limit: PartLimit) -> dict:
    """A part of the `/v1/steps/timeline` answer, in one read transaction (`db`): the kept lanes from `start`
    in the asked order; the first part also the step's origin, span, critical rollout and size."""
    axis = step_axis(db, filters.step)
    source, values = kept_lanes(filters, key)
    total = axis.rollouts if unfiltered(filters) else db.execute(f"SELECT count(*) {source}", values).fetchone()[0]
    try:
        check_start(start, total)
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    rids = db.execute(f"SELECT lanes.rid {source} ORDER BY {ordered_by(key, order)} LIMIT -1 OFFSET ?",
                      [*values, start])
    lanes = encoded_lanes(db, rids, axis.origin)
    items, end, _ = window(lambda _: next(lanes), start, total, limit, size_of=len)
    answer = {"step": as_written(filters.step), "sort": {"key": key, "order": order}}
    if not start:
        answer.update(origin_at=iso_time(axis.origin), span_ms=axis.span_ms, lanes_total=total,
                      rollouts=axis.rollouts, critical=axis.critical)
    answer["part"] = part_of(start, end, total)
    answer["lanes"] = RawJson(b"[" + b",".join(items) + b"]")  # spliced in as encoded when the answer is
    return answer


def step_version(db, step: float) -> str:
    """What the step's lanes are made of, as one digest: how many times its lanes were written or removed
    (`lane_steps`, kept by the store as rows come and go) and the run index's files as read (what they say
    of a rollout is put on its row when one changes). A few lookups, whatever the step's size."""
    changes = db.execute("SELECT changes FROM lane_steps WHERE step = ?", (step,)).fetchone()
    index_files = db.execute("SELECT file, size, mtime_ns, problem FROM index_files ORDER BY file").fetchall()
    return hashlib.blake2b(repr((changes, index_files)).encode(), digest_size=16).hexdigest()


def step_timeline_answer(snapshot, params: dict, limit: PartLimit) -> dict:
    """The `/v1/steps/timeline` answer for one run: `step` and the listing's filters (its own parser),
    `sort` / `order`, `from`; read from the run's store in one read transaction, with the step's `version`
    (looked up once per snapshot) for a poll to tell whether the step changed."""
    filters = Filters.parse(params)
    if filters.step is None:
        raise ApiError(400, "a timeline covers one step: pass step=S")
    key, order, _ = parse_sort(params, SORTS, ("start", "asc"))
    start = part_start(params)
    filters = filters.on(snapshot)
    with snapshot.reading() as db:
        version = snapshot.memoized(("step-version", filters.step), lambda: step_version(db, filters.step))
        answer = timeline_part(db, filters, key, order, start, limit.within(PART_BYTES))
    return {"step": answer.pop("step"), "version": version, **answer}
