"""The run index's rows whose record is not in this copy: `/v1/trajectories?run_id=R&missing=true`.

Each is the index row as the trainer wrote it (`id`, `instance_id`, `repetition_id`, `attempt`,
`status`, `annotations`, `superseded`, `trained`, `record`: where the record lives), with its
`phase`, `step` and `index_file`, `missing: true`, `why` it is listed without a record (one line
that says where the record is), and whether it `opens_from_mirror` (`mirrored_record`). Listed in
the index's order (phase, step, file, row); the store keeps which rows have their record here
(`index_rows.present`), so a page reads only its rows.
"""

import json

from skycap_viewer.catalog.object_store import EXTRAS, URL
from skycap_viewer.catalog.run_index import where_it_lives
from skycap_viewer.errors import ApiError
from skycap_viewer.record.schema import is_plain_file_name
from skycap_viewer.views.params import parse_page
from skycap_viewer.views.run.listing import Filters, equal_clauses

NOT_FOR_INDEX_ROWS = ("task_id", "q", "reward_min", "reward_max")


def missing_where(filters: Filters) -> tuple[str, list]:
    """The filters index rows can answer (step, status, trained) as a WHERE clause; others are refused."""
    asked = [name for name in NOT_FOR_INDEX_ROWS if getattr(filters, name) is not None]
    if asked or filters.annotations or filters.by_flag:
        names = ", ".join(asked + (["annotation"] if filters.annotations else [])
                          + (["flag"] if filters.by_flag else []))
        raise ApiError(400, f"missing=true lists the run index's rows without a record: only step, status and "
                            f"trained filter them, not {names}")
    clauses, values = equal_clauses((("step", filters.step), ("status", filters.status)), filters.trained)
    return " AND ".join(["NOT present", *clauses]), values


def missing_page(db, filters: Filters, limit: int, offset: int) -> tuple[list, int]:
    """(up to `limit` index rows without a record from `offset` on, how many match in all)."""
    where, values = missing_where(filters)
    total = db.execute(f"SELECT count(*) FROM index_rows WHERE {where}", values).fetchone()[0]
    found = db.execute(f"SELECT file, phase, step, fields FROM index_rows WHERE {where}"
                       " ORDER BY phase, step, file, position LIMIT ? OFFSET ?", [*values, limit, offset])
    rows = []
    for file, phase, step, fields in found:
        row = json.loads(fields)
        rows.append({**row, "phase": phase, "step": step, "index_file": file, "missing": True,
                     "why": where_it_lives(row), "opens_from_mirror": mirror_url(row) is not None})
    return rows, total


def missing_answer(snapshot, params: dict) -> dict:
    """A page of the run's index rows without a record here; none when the run has no index."""
    filters = Filters.parse(params)
    missing_where(filters)  # a filter index rows cannot answer is refused, index or not
    limit, offset = parse_page(params)
    rows, total = [], 0
    if snapshot.run_index is not None:
        with snapshot.reading() as db:
            rows, total = missing_page(db, filters, limit, offset)
    more = offset + limit < total
    return {
        "data": rows,
        "next_cursor": str(offset + limit) if more else None,
        "has_more": more,
        "total": total,
        "indexing": snapshot.indexing,
        "run_index": snapshot.run_index,
    }


def mirrored_record(snapshot, record_id: str) -> str:
    """The URL of the mirrored document of `record_id`, a row of the run's index whose record is not in
    this copy (`record.mirror`); the request's 404 when it is not such a row or names no mirror, 400 when
    the URL is not a store's (a run index is the trainer's text: no local path is read for it)."""
    found = None
    if snapshot.run_index is not None:
        with snapshot.reading() as db:
            found = db.execute("SELECT fields FROM index_rows WHERE id = ? AND NOT present ORDER BY phase, step DESC,"
                               " file, position LIMIT 1", (record_id,)).fetchone()
    if found is None:
        raise ApiError(404, f"{record_id} is not a row of the run index without its record")
    row = json.loads(found[0])
    record = row.get("record")
    named = record.get("mirror") if isinstance(record, dict) else None
    if not isinstance(named, str):
        raise ApiError(404, f"the run index names no mirror for {record_id}")
    url = mirror_url(row)
    if url is None:
        raise ApiError(400, f"the run index's mirror for {record_id} is not a store URL of its document: "
                            f"{named[:300]}")
    return url


def mirror_url(row: dict) -> str | None:
    """The index row's `record.mirror` when it is a store URL (`s3://`, `gs://`, `az://`…) of the row's
    own document (`…/{id}.json.zst`), else None: what "open from the mirror" may fetch."""
    record, record_id = row.get("record"), row.get("id")
    url = record.get("mirror") if isinstance(record, dict) else None
    if not isinstance(url, str) or not is_plain_file_name(record_id):
        return None
    matched = URL.fullmatch(url)
    if matched is None or matched.group(1).lower() not in EXTRAS or not url.endswith(f"/{record_id}.json.zst"):
        return None
    return url
