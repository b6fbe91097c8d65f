"""The answers of `/v1/groups` (the runs' groups under the filters) and `/v1/groups/{key}` (one group).

A request grouped by the server's keys reads the groups the store keeps (`stored_groups`); one
grouped by its own keys (`group_by=`) builds that grouping over the run's rows for the request.
"""

from collections import Counter

from skycap_viewer.catalog.groups import GROUP_SORT_KEYS, build_grouping, ordered_by, repetition_of
from skycap_viewer.catalog.store import build_group, flag_bits
from skycap_viewer.errors import ApiError
from skycap_viewer.views.params import group_keys, parse_page, parse_sort, the_one
from skycap_viewer.views.run import stored_groups
from skycap_viewer.views.run.listing import (
    Filters,
    counted,
    health,
    is_rollout_flag,
    kept_counts,
    page,
    reward_range,
    sparse_rows,
    with_run,
)
from skycap_viewer.wire import RawJson, encode_json


def groups_page(snapshots: list, params: dict, server_keys: tuple) -> dict:
    """The runs' groups under the filters: the server's kept groups, or a request's own grouping."""
    keys = group_keys(params, server_keys)
    filters = Filters.parse(params)
    key, order, _ = parse_sort(params, GROUP_SORT_KEYS, default=("step", "desc"))
    limit, offset = parse_page(params)
    if keys == server_keys and not filters and not filters.by_flag and len(snapshots) == 1:
        return unfiltered_groups(snapshots[0], server_keys, key, order, limit, offset)
    listed, band, count, ungrouped, modal_sizes = [], Counter(), 0, 0, set()
    for snapshot in snapshots:
        with snapshot.reading() as db:
            run_filters = filters.on(snapshot).with_text_matches(db, sparse_rows(snapshot))
            if keys == server_keys:
                modal_n, groups = snapshot.groups["modal_n"], snapshot.groups["group_count"]
                found = stored_groups.table_groups(snapshot.id, db, run_filters, modal_n)
                members = members_counter(db, run_filters)
            else:
                grouping = build_grouping(snapshot.rows, keys)
                modal_n, groups = grouping.modal_n, len(grouping.groups)
                matched = None if not run_filters else matching_ids(db, run_filters)
                found = stored_groups.from_grouping(snapshot.id, grouping, matched)
                members = grouping_counter(grouping, run_filters, matched)
            keyless = stored_groups.keyless(snapshot, db, run_filters, keys, server_keys)
        band += stored_groups.band_counts(found, keyless)
        count += groups + sum(n for n, _, _ in keyless.values())
        ungrouped += kept_counts(keyless, run_filters)[0]
        if run_filters.by_flag:
            found = stored_groups.keep_flagged(found, run_filters, members)
        else:
            for group in found:
                group.kept = group.matched
        modal_sizes.add(modal_n)
        listed += [(group, modal_n) for group in found]
    default = (key, order) == ("step", "desc") and len(snapshots) == 1
    listed = listed if default else ordered_by(listed, lambda item: item[0].sort[key], order)
    chunk = page(listed, limit, offset)
    chunk["data"] = RawJson(b"[" + b",".join(group.json(modal_n) for group, modal_n in chunk["data"]) + b"]")
    lows = [group.low for group, _ in listed if group.low is not None]
    highs = [group.high for group, _ in listed if group.high is not None]
    return {
        **chunk,
        "group_by": list(keys),
        "modal_n": modal_sizes.pop() if len(modal_sizes) == 1 else None,
        "sort": {"key": key, "order": order},
        "reward_range": {"min": min(lows), "max": max(highs)} if lows else None,
        "total": len(listed),
        "ungrouped": ungrouped,
        "indexing": any(s.indexing for s in snapshots),
        "health": health(band, "groups", count, count),
    }


def unfiltered_groups(snapshot, server_keys: tuple, key: str, order: str, limit: int, offset: int) -> dict:
    """`/v1/groups` of one run with no filter: a page of its kept groups, counts kept or counted in SQL."""
    modal_n = snapshot.groups["modal_n"]
    with snapshot.reading() as db:
        found, band, total, rewards = stored_groups.unfiltered_page(snapshot.id, db, modal_n, key, order,
                                                                    limit, offset)
        keyless = counted(db, Filters(), entry=("ungrouped", ""))
    ungrouped = sum(n for n, _, _ in keyless.values())
    for bits, (n, _, _) in keyless.items():
        band[bits] += n
    more = offset + limit < total
    return {
        "data": RawJson(b"[" + b",".join(group.json(modal_n) for group in found) + b"]"),
        "next_cursor": str(offset + limit) if more else None,
        "has_more": more,
        "group_by": list(server_keys),
        "modal_n": modal_n,
        "sort": {"key": key, "order": order},
        "reward_range": rewards,
        "total": total,
        "ungrouped": ungrouped,
        "indexing": snapshot.indexing,
        "health": health(band, "groups", total + ungrouped, total + ungrouped),
    }


def found_group(snapshots: list, group_key: str, keys: tuple, server_keys: tuple) -> tuple:
    """(snapshot, group) of one group by `keys`; `run_id` is required when several runs have the key."""
    found = []
    for snapshot in snapshots:
        if keys == server_keys:
            members = snapshot.rows_where("gkey = ?", [group_key])
            if members:
                found.append((snapshot, build_group(group_key, members, keys, snapshot.groups["modal_n"])))
        else:
            grouping = build_grouping(snapshot.rows, keys)
            if group_key in grouping.by_key:
                found.append((snapshot, grouping.by_key[group_key]))
    if not found:
        raise ApiError(404, f"no group {group_key} for {','.join(keys)}")
    return the_one(found, f"group {group_key}")


def group_answer(snapshot, group, keys: tuple, params: dict) -> dict:
    """One group's rollouts in the asked order, each saying whether the filters keep it (`match`)."""
    filters = Filters.parse(params)
    key, order, _ = parse_sort(params, GROUP_SORT_KEYS, default=("reward", "desc"))
    members = filters.rollout_only()  # a member is judged by the row filters and the rollout flags
    judged = bool(members) or members.by_flag
    runs = {snapshot.id: snapshot.location}
    with snapshot.reading() as db:
        selected = matching_ids(db, filters.on(snapshot), [row["id"] for row in group.members]) if filters else None

    def matches(row, flags: Filters) -> bool:
        return (selected is None or row["id"] in selected) and flags.keeps_bits(flag_bits(row["flags"]))

    def shown(row, **extra):
        match = matches(row, members) if judged else None
        return {**with_run(row, runs), "repetition_id": repetition_of(row), **extra, "match": match}

    rollouts = ordered_by(group.counting, lambda row: row["_keys"][key], order)
    return {
        "group": {**group.summary(snapshot.id), "matching": len(flagged_members(group, filters, matches))},
        "sort": {"key": key, "order": order},
        "reward_range": reward_range(group.rewards),
        "group_by": list(keys),
        "rollouts": [shown(row) for row in rollouts],
        "superseded": [shown(row, superseded_by=by) for row, by in group.superseded],
    }


def flagged_members(group, filters: Filters, matches) -> list:
    """The members that keep a group under the filters (see `stored_groups.keep_flagged`)."""
    if not filters.by_flag:
        return [row for row in group.members if matches(row, Filters())]
    if not all(flag in group.flags for flag in filters.flags if not is_rollout_flag(flag)):
        return []
    if any(flag in group.flags for flag in filters.exclude_flags if not is_rollout_flag(flag)):
        return []
    return [row for row in group.members if matches(row, filters.rollout_only())]


def matching_ids(db, filters: Filters, among: list | None = None) -> set:
    """The ids of the rows the row filters keep (of `among` when given)."""
    where, values = filters.where()
    if among is not None:
        where, values = f"{where} AND id IN (SELECT value FROM json_each(?))", [*values, encode_json(among).decode()]
    return {record_id for (record_id,) in db.execute(f"SELECT id FROM rows WHERE {where}", values)}


def members_counter(db, filters: Filters):
    """How `keep_flagged` counts the members of the server's groups that the rollout flags keep."""
    return lambda groups: stored_groups.rollout_flag_counts(db, filters, [g.key for g in groups])


def grouping_counter(grouping, filters: Filters, matched: set | None):
    """The same for a grouping built for one request, from its members' rows."""
    rollout = filters.rollout_only()

    def count(groups):
        return {g.key: sum(1 for row in grouping.by_key[g.key].members
                           if (matched is None or row["id"] in matched) and rollout.keeps_bits(flag_bits(row["flags"])))
                for g in groups}
    return count
