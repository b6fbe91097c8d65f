"""One training step on one time axis: every rollout of the step a lane of its calls and failures.

Why a step was slow is a question about all its rollouts at once: which ones held it up (the
`critical` one ended last), where each one's time went (calls, the time between them), which calls
failed or hit their token limit, and what the trainer did with each attempt (`trained`,
`superseded`, as the run index says and the store keeps on the rows).

The lanes are read from the step's documents alone (never a sidecar), each call and failure timed
as a rollout's Timeline tab times it (`views.record.timeline`), each lane encoded once (`StepTimeline`, kept
by the server per run and step): a request only picks the lanes its filters keep (the listing's own
SQL), sorts them and sends a part. The step's rows are looked at once per index generation
(`step_version`); when they changed, only the new or changed rollouts are read again (a live step
gains a few a poll). Times are milliseconds from the step's `origin_at`, the earliest start of any of
its rollouts (whatever the filters keep, so the axis stays put).
"""

import hashlib
from dataclasses import dataclass, field

from skycap_viewer.catalog.blobs import unpack
from skycap_viewer.catalog.rows import cut_marker
from skycap_viewer.catalog.store import bit_flags
from skycap_viewer.errors import ApiError, RecordError
from skycap_viewer.record.document import read_document
from skycap_viewer.record.fields import is_finite_number, iso_time, reward_as_number, wire_id
from skycap_viewer.views.params import as_written, parse_sort, part_start
from skycap_viewer.views.record.timeline import ms, time_order, times
from skycap_viewer.views.record.trajectory import PartLimit, check_start, part_of, window
from skycap_viewer.views.run.listing import Filters
from skycap_viewer.wire import RawJson, encode_json

SORTS = ("start", "end", "duration", "reward", "task")
MESSAGE_CHARS = 300  # of a failure's `error`: the upstream body can be 2,000 characters
REWARD_CHARS = 200  # of a reward recorded as text
SKIPPED_SHOWN = 100  # rollouts of the step that could not be read, named in the first part
PART_BYTES = 2**20  # of lanes in a part (about 330 of 30 calls): a first screen needs a few dozen, not thousands


@dataclass
class Lane:
    """One rollout of the step as sent (`encoded`), with what lanes are sorted by and the CLI prints."""

    trajectory_id: str
    source: tuple  # what it was read from: the store's row and the document's version (`step_timeline`)
    start_at: float | None  # Unix seconds: where it starts, whatever the step's origin
    start_ms: float | None
    end_ms: float | None
    reward: float | None  # as a number to sort by (`reward_as_number`)
    task: str | None
    calls: int
    failures: int
    longest_gap_ms: float | None
    encoded: RawJson

    @property
    def duration_ms(self) -> float | None:
        return None if self.start_ms is None else round(self.end_ms - self.start_ms, 3)


@dataclass
class StepTimeline:
    """A step's lanes in time order (start, then id), its origin and span, its critical rollout, and the
    rollouts it holds that could not be read (with why)."""

    step: float
    version: str = ""  # `step_version`: what the step's rows were when it was laid out
    origin: float | None = None  # Unix seconds
    span_ms: float = 0.0
    critical: str | None = None
    lanes: list[Lane] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)

    @property
    def weight(self) -> int:
        """What it holds in bytes, about: its encoded lanes (what a cache of them is bounded by)."""
        return sum(len(lane.encoded) + 200 for lane in self.lanes)


def weighed(timeline: StepTimeline) -> tuple[StepTimeline, int]:
    """The timeline with what it weighs, as a `ViewCache` keeps what it is made."""
    return timeline, timeline.weight


@dataclass
class Timed:
    """What a lane needs of one rollout, its times in Unix seconds (the step's origin is not known yet): the
    document itself is not kept, so laying out thousands holds one document at a time."""

    row: tuple  # the store's (id, name, gkey, task, status, trained, superseded, flags)
    source: tuple  # the row and the document's (size, mtime_ns, stamp)
    created: object  # the document's `created_at`, `finished_at`, `annotations.reward` as recorded
    finished: object
    reward: object
    reward_number: float | None
    calls: list = field(default_factory=list)  # (start, end, node id, finish_reason, completion tokens)
    failures: list = field(default_factory=list)  # (t, status, message)

    @property
    def start(self) -> float | None:
        firsts = [t for t in (self.created, *(c[0] for c in self.calls[:1]), *(f[0] for f in self.failures[:1]))
                  if is_finite_number(t)]
        return min(firsts) if firsts else None

    @property
    def end(self) -> float | None:
        """When the rollout ended: the latest of its calls' and failures' ends and its `finished_at`."""
        ends = [t for t in (self.finished, *(c[1] for c in self.calls), *(f[0] for f in self.failures))
                if is_finite_number(t)]
        return max(ends) if ends else None


ROW_COLUMNS = "id, name, gkey, task, status, trained, superseded, flags"


def step_timeline(snapshot, step: float, version: str = "", previous: StepTimeline | None = None) -> StepTimeline:
    """Read every rollout of `step` in the run (`snapshot`) and lay them out on one axis. Given the step's
    `previous` lanes, a rollout whose row and document are as they were keeps its lane unread (a live step
    gains a few rollouts a poll), unless the step's origin moved: then those are read again too."""
    with snapshot.reading() as db:
        found = db.execute(f"SELECT {ROW_COLUMNS}, size, mtime_ns, stamp, unreadable, kept FROM rows WHERE step = ?"
                           " ORDER BY id", (step,)).fetchall()
    timeline = StepTimeline(step, version)
    before = {lane.source: lane for lane in previous.lanes} if previous is not None else {}
    reused, timed = [], []

    def read(source: tuple):
        row = source[:-3]  # less (size, mtime_ns, stamp)
        try:
            timed.append(timed_rollout(row, source, read_document(snapshot.location.path / row[1])))
        except RecordError as error:
            timeline.skipped.append({"trajectory_id": row[0], "why": str(error)})

    for *row, size, mtime_ns, stamp, unreadable, kept in found:
        source = (*row, size, mtime_ns, stamp)
        if unreadable:
            timeline.skipped.append({"trajectory_id": row[0], "why": unpack(kept).get("error")})
        elif source in before:
            reused.append(before[source])
        else:
            read(source)
    starts = [lane.start_at for lane in reused if lane.start_at is not None]
    starts += [t.start for t in timed if t.start is not None]
    timeline.origin = min(starts) if starts else None
    if reused and timeline.origin != previous.origin:  # the axis moved: the kept lanes are read again on it
        for lane in reused:
            read(lane.source)
        reused = []
    lanes = reused + [lane_of(t, timeline.origin) for t in timed]
    lanes.sort(key=lambda lane: (lane.start_ms is None, lane.start_ms or 0, lane.trajectory_id))
    timeline.lanes = lanes
    ended = [lane for lane in lanes if lane.end_ms is not None]
    if ended:
        last = max(ended, key=lambda lane: (lane.end_ms, lane.trajectory_id))
        timeline.critical, timeline.span_ms = last.trajectory_id, last.end_ms
    return timeline


def timed_rollout(row: tuple, source: tuple, document: dict) -> Timed:
    """The rollout's calls and failures with a valid time, in time order (`views.record.timeline`'s reading)."""
    annotations = document.get("annotations")
    annotations = annotations if isinstance(annotations, dict) else {}
    timed = Timed(row, source, document.get("created_at"), document.get("finished_at"), recorded_reward(annotations),
                  reward_as_number(annotations))
    for node_index, at in time_order(document):
        start, end, _ = times(document, node_index, at)
        if start is None:
            continue
        if node_index is None:
            failure = document["failures"][at]
            timed.failures.append((start, failure.get("status"), str(failure.get("error") or "")[:MESSAGE_CHARS]))
        else:
            call = document["nodes"][node_index]["calls"][at]
            timed.calls.append((start, end, wire_id(document["nodes"][node_index]["id"]), call.get("finish_reason"),
                                completion_tokens(call)))
    return timed


def recorded_reward(annotations: dict) -> object:
    """The reward as the record has it: a scalar as is (text cut), anything bigger as a cut marker."""
    reward = annotations.get("reward")
    if isinstance(reward, str) and len(reward) > REWARD_CHARS:
        return reward[:REWARD_CHARS] + "…"
    if isinstance(reward, (dict, list)):
        return cut_marker(reward, len(encode_json(reward)))
    return reward


def longest_gap(calls: list) -> float | None:
    """The longest time no call of the rollout ran, between its first call's start and its last's end."""
    longest, running_until = None, None
    for start, end, *_ in calls:
        if running_until is not None and start > running_until:
            longest = max(longest or 0.0, start - running_until)
        running_until = end if running_until is None else max(running_until, end)
    return None if longest is None else ms(longest)


def lane_of(timed: Timed, origin: float | None) -> Lane:
    """The rollout's lane, its times in ms from `origin`."""
    record_id, _, gkey, task, status, trained, superseded, bits = timed.row

    def at(seconds):
        return ms(seconds - origin)

    start, end = timed.start, timed.end
    calls = [{"start_ms": at(s), "end_ms": at(e), "node_id": node_id, "finish_reason": reason, "tokens": tokens}
             for s, e, node_id, reason, tokens in timed.calls]
    failures = [{"at_ms": at(t), "end_ms": at(t), "status": status_code, "message": message}
                for t, status_code, message in timed.failures]
    gap = longest_gap(timed.calls)
    payload = {
        "trajectory_id": record_id, "group_key": gkey, "task_id": task, "status": status, "reward": timed.reward,
        "started_at": iso_time(timed.created), "ended_at": iso_time(timed.finished),
        "start_ms": None if start is None else at(start), "end_ms": None if end is None else at(end),
        "trained": None if trained is None else bool(trained),
        "superseded": None if superseded is None else bool(superseded),
        "flags": bit_flags(bits), "longest_gap_ms": gap, "calls": calls, "failures": failures,
    }
    return Lane(record_id, timed.source, start, payload["start_ms"], payload["end_ms"], timed.reward_number, task,
                len(calls), len(failures), gap, RawJson(encode_json(payload)))


def completion_tokens(call: dict):
    """The call's completion tokens as its `usage` says, when it says a count."""
    usage = call.get("usage")
    count = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return count if type(count) is int else None


def sort_key(key: str):
    """How lanes sort by `key`: lanes without the value last whatever the order (`sorted_lanes`)."""
    return {"start": lambda lane: lane.start_ms, "end": lambda lane: lane.end_ms,
            "duration": lambda lane: lane.duration_ms, "reward": lambda lane: lane.reward,
            "task": lambda lane: lane.task}[key]


def sorted_lanes(lanes: list[Lane], key: str, order: str) -> list[Lane]:
    """`lanes` by `key` in `order`, lanes without the value last, ties by trajectory id."""
    value = sort_key(key)
    having = sorted((lane for lane in lanes if value(lane) is not None), key=lambda lane: lane.trajectory_id)
    having.sort(key=value, reverse=order == "desc")
    return having + sorted((lane for lane in lanes if value(lane) is None), key=lambda lane: lane.trajectory_id)


def kept_ids(snapshot, filters: Filters) -> set[str]:
    """The ids of the step's rows the listing's filters keep (its WHERE clauses, flags included)."""
    filters = filters.on(snapshot)
    where, values = filters.where()
    flag_where, flag_values = filters.flag_where()
    with snapshot.reading() as db:
        return {record_id for (record_id,) in db.execute(f"SELECT id FROM rows WHERE {where} AND {flag_where}",
                                                          [*values, *flag_values])}


def timeline_part(timeline: StepTimeline, kept: set[str] | None, key: str, order: str, start: int,
                  limit: PartLimit) -> dict:
    """A part of the `/v1/steps/timeline` answer: the kept lanes from `start` in the asked order; the
    first part also the step's origin, span, critical rollout and the rollouts that could not be read."""
    lanes = [lane for lane in timeline.lanes if kept is None or lane.trajectory_id in kept]
    lanes = sorted_lanes(lanes, key, order)
    try:
        check_start(start, len(lanes))
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    items, end, _ = window(lambda i: lanes[i].encoded, start, len(lanes), limit, size_of=len)
    answer = {"step": as_written(timeline.step), "version": timeline.version, "sort": {"key": key, "order": order}}
    if not start:
        answer.update(origin_at=iso_time(timeline.origin), span_ms=timeline.span_ms, lanes_total=len(lanes),
                      rollouts=len(timeline.lanes) + len(timeline.skipped), critical=timeline.critical,
                      skipped=timeline.skipped[:SKIPPED_SHOWN], skipped_count=len(timeline.skipped))
    answer["part"] = part_of(start, end, len(lanes))
    answer["lanes"] = RawJson(b"[" + b",".join(items) + b"]")  # spliced in as encoded when the answer is
    return answer


def step_version(snapshot, step: float) -> str:
    """What the step's lanes are made of, as one digest: each of its rows' file version and what the store
    says of it (the run index's `trained` and `superseded`, flags, group, task, status)."""
    digest = hashlib.blake2b(digest_size=16)
    with snapshot.reading() as db:
        for row in db.execute(f"SELECT {ROW_COLUMNS}, size, mtime_ns, stamp, unreadable FROM rows WHERE step = ?"
                              " ORDER BY name", (step,)):
            digest.update(repr(row).encode())
    return digest.hexdigest()


def step_timeline_answer(snapshot, params: dict, timelines, limit: PartLimit) -> dict:
    """The `/v1/steps/timeline` answer for one run: `step` and the listing's filters (its own parser),
    `sort` / `order`, `from`; the step's lanes laid out once and kept in `timelines` (a `ViewCache`) by run
    and step, laid out again only when the step's version (looked up once per snapshot) moved, then reading
    only what changed: a later part, another sort, other filters or a new generation do not read the
    documents again."""
    filters = Filters.parse(params)
    if filters.step is None:
        raise ApiError(400, "a timeline covers one step: pass step=S")
    key, order, _ = parse_sort(params, SORTS, ("start", "asc"))
    start = part_start(params)
    version = snapshot.memoized(("step-version", filters.step), lambda: step_version(snapshot, filters.step))
    kept_as = (snapshot.id, snapshot.database, filters.step)
    timeline = timelines.get(kept_as, lambda: weighed(step_timeline(snapshot, filters.step, version)))
    if timeline.version != version:
        previous = timeline
        timelines.drop(kept_as)
        timeline = timelines.get(kept_as, lambda: weighed(step_timeline(snapshot, filters.step, version, previous)))
    return timeline_part(timeline, kept_ids(snapshot, filters), key, order, start, limit.within(PART_BYTES))
