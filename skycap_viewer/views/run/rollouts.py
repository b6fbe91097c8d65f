"""The answer of `/v1/trajectories`: one run's page of rollouts, or the pages of several runs merged.

One run is paged by its store (keyset paging, `listing.listed_rows`). Several runs are each read
up to the asked page's end and merged in the listing's order by the sort values each row came
with; their page is then an offset into the merge.
"""

from collections import Counter

from skycap_viewer.views.params import group_keys, one, parse_page, parse_sort, the_one
from skycap_viewer.views.run.listing import (
    Cursor,
    Filters,
    counted,
    health,
    kept_counts,
    listed_rows,
    ordering,
    reward_range,
    row_encoder,
    sparse_rows,
)
from skycap_viewer.views.run.stored_groups import keyless, ungrouped_where
from skycap_viewer.wire import RawJson


def rollouts_page(snapshots: list, params: dict, server_keys: tuple) -> dict:
    """A page of the rollouts the filters keep in `snapshots`' runs, with the counts of them all."""
    filters = Filters.parse(params)
    key, order, _ = parse_sort(params)
    limit, _ = parse_page(params)
    cursor = Cursor.parse(one(params, "cursor"))
    if len(snapshots) > 1:
        cursor.last = None  # the runs' pages are merged: an offset says where
    ungrouped = one(params, "ungrouped") == "true"  # only the rows no group holds (the Groups view's notice)
    keys = group_keys(params, server_keys)
    by_bits, total, rewards, listed, last = Counter(), 0, [], [], None
    for snapshot in snapshots:
        with snapshot.reading() as db:
            run_filters = filters.on(snapshot).with_text_matches(db, sparse_rows(snapshot))
            where = ungrouped_where(snapshot, keys, server_keys) if ungrouped else None
            counts = keyless(snapshot, db, run_filters, keys, server_keys) if ungrouped else counted(db, run_filters)
            for bits, (n, _, _) in counts.items():
                by_bits[bits] += n
            matching, reward = kept_counts(counts, run_filters)
            total += matching
            rewards += [reward["min"], reward["max"]] if reward else []
            wanted, start = (limit, cursor) if len(snapshots) == 1 else (cursor.offset + limit, Cursor())
            found, last = listed_rows(db, run_filters, key, order, wanted, start, where,
                                      sparse=matching < sparse_rows(snapshot),
                                      indexed=snapshot.sorted)
            listed += [(snapshot.id, *entry) for entry in found]
    if len(snapshots) > 1:  # merged in the listing's order: the sort values each row came with
        listed = merged(listed, ordering(key, order))[cursor.offset: cursor.offset + limit]
        last = None
    more = cursor.offset + limit < total
    runs = {s.id: s.location for s in snapshots}
    return {
        "data": encoded_rows(listed, runs),
        "next_cursor": cursor.next(limit, last) if more else None,
        "has_more": more,
        "total": total,
        "indexing": any(s.indexing for s in snapshots),
        "indexed_trajectories": sum(s.row_count for s in snapshots),
        "health": health(by_bits, "rollouts", *coverage(snapshots)),
        "sort": {"key": key, "order": order},
        "reward_range": reward_range(rewards),
    }


def found_row(snapshots: list, record_id: str) -> tuple:
    """(snapshot, index row) of `record_id`; `run_id` is required when the id is in several runs.

    The id is looked up as the exact string it is in the index, whatever characters its file
    name has (spaces, `#`, `%`, unicode...): any listed record can be opened, and a path is only
    ever built from an id the index holds, never from a request's own text."""
    found = []
    for snapshot in snapshots:
        rows = snapshot.rows_where("id = ?", [record_id])
        found += [(snapshot, row) for row in rows[:1]]
    return the_one(found, f"trajectory {record_id}")


def coverage(snapshots) -> tuple[int, int]:
    """(rows indexed, documents listed) over `snapshots`: the band's `scanned` and `total`."""
    return sum(s.row_count for s in snapshots), sum(s.file_count for s in snapshots)


def encoded_rows(entries: list, runs: dict) -> RawJson:
    """`[with_run(row) ...]` as JSON for listed (run id, compressed JSON, mtime_ns, ...) entries."""
    encode = row_encoder(runs)
    return RawJson(b"[" + b",".join(encode(run_id, json_z, mtime_ns) for run_id, json_z, mtime_ns, *_ in entries)
                   + b"]")


def merged(entries: list, sort: list) -> list:
    """Rows of several runs (run id, json, mtime_ns, *sort values) in the listing's order."""
    for position in reversed(range(len(sort))):
        entries.sort(key=lambda entry, p=3 + position: (entry[p] is None, entry[p] if entry[p] is not None else 0),
                     reverse=sort[position][1] == "desc")
    return entries
