"""`/v1/groups`: a run's groups under the listing filters, from the store's `groups` table.

Unfiltered, a page is one indexed query, and the band and reward range are counted over the
groups table alone (no member is read). Filtered, the matching rows are found first and only
their groups are read. Groupings by a request's own keys are built for that request
(`catalog/groups.py`) and listed the same way; the rows in no group are found by either
(`ungrouped_where`). Nothing is averaged for display: the mean counting reward exists only as
the `reward` sort key.
"""

from collections import Counter
from dataclasses import dataclass

from skycap_viewer.catalog.groups import Grouping, build_grouping, ordered_by
from skycap_viewer.catalog.store import flag_bits, listed_summary, reward_bounds
from skycap_viewer.flags import FLAG_ORDER, GROUP_FLAGS
from skycap_viewer.views.run.listing import Filters, counted, is_rollout_flag
from skycap_viewer.wire import encode_json

SHORT = 1 << FLAG_ORDER["short"]
GROUP_FIELDS = ("gkey, step, task, reward, turns, tokens, health, created, n, members, flags, member_flags, low, high,"
                " summary")
DEFAULT_ORDER = "(step IS NULL), step DESC, (task IS NULL), task, gkey"


@dataclass
class Listed:
    """One group as a listing sees it: its sort values, flags and members under the filters."""

    run_id: str
    key: str
    sort: dict
    flags: int  # the group's own flags, `short` included
    member_flags: int  # every flag a member carries
    matched: int  # members the row filters keep
    matched_flags: int  # every flag those members carry
    low: float | None
    high: float | None
    summary: bytes  # the summary as JSON, without `run_id`, `modal_n`, `flags` and `matching`
    kept: int = 0  # members that keep the group under the flag filters

    def band_bits(self) -> int:
        return self.flags | self.matched_flags

    def json(self, modal_n) -> bytes:
        head = {"run_id": self.run_id, "modal_n": modal_n,
                "flags": [name for name in GROUP_FLAGS if self.flags >> FLAG_ORDER[name] & 1]}
        return encode_json(head)[:-1] + b"," + self.summary[1:-1] + b',"matching":' + str(self.kept).encode() + b"}"


def from_table(run_id: str, found: tuple, modal_n, matched=None) -> Listed:
    """A `groups` table row (`GROUP_FIELDS`) as listed; `matched` = (members kept, their flags)."""
    key, step, task, reward, turns, tokens, health, created, n, members, flags, member_flags, low, high, summary = found
    short = SHORT if modal_n is not None and n < modal_n else 0
    sort = {"step": step, "task": task, "reward": reward, "turns": turns, "tokens": tokens,
            "health": health + (1 if short else 0), "created": created}
    count, bits = matched if matched is not None else (members, member_flags)
    return Listed(run_id, key, sort, flags | short, member_flags, count, bits, low, high, summary)


def from_grouping(run_id: str, grouping: Grouping, matched_ids: set | None) -> list[Listed]:
    """The groups of a grouping built for one request, as listed (`matched_ids`: the rows the filters keep)."""
    listed = []
    for group in grouping.groups:
        members = group.members if matched_ids is None else [r for r in group.members if r["id"] in matched_ids]
        if not members:
            continue
        bits = 0
        for row in members:
            bits |= flag_bits(row["flags"])
        listed.append(Listed(run_id, group.key, group.keys, flag_bits(group.flags), flag_bits(group.member_flags),
                             len(members), bits, *reward_bounds(group), listed_summary(group)))
    return listed


def group_ordering(key: str, order: str, modal_n) -> str:
    """ORDER BY over `groups` for a sort key: NULLs last, ties in the default order."""
    if (key, order) == ("step", "desc"):
        return DEFAULT_ORDER
    column = f"(health + (n < {int(modal_n)}))" if key == "health" and modal_n is not None else key
    return f"({column} IS NULL), {column} {order.upper()}, {DEFAULT_ORDER}"


def unfiltered_page(run_id: str, db, modal_n, key: str, order: str, limit: int, offset: int) -> tuple:
    """(a page of the server's groups, the band's counts, how many groups, their reward range) when
    no filter is set: one query for the page, one pass over the `groups_band` index for the counts."""
    page = [from_table(run_id, found, modal_n) for found in db.execute(
        f"SELECT {GROUP_FIELDS} FROM groups ORDER BY {group_ordering(key, order, modal_n)} LIMIT ? OFFSET ?",
        (limit, offset))]
    for group in page:
        group.kept = group.matched
    band, lows, highs = Counter(), [], []
    for flags, member_flags, n, count, low, high in db.execute(  # in the order of `groups_band`: no sort
            "SELECT flags, member_flags, n, count(*), min(low), max(high) FROM groups GROUP BY flags, member_flags, n"):
        band[flags | member_flags | (SHORT if modal_n is not None and n < modal_n else 0)] += count
        lows += [low] if low is not None else []
        highs += [high] if high is not None else []
    total = sum(band.values())
    return page, band, total, ({"min": min(lows), "max": max(highs)} if lows else None)


def table_groups(run_id: str, db, filters: Filters, modal_n) -> list[Listed]:
    """The server's groups with members the row filters keep (every group when none is set)."""
    if not filters:
        return [from_table(run_id, found, modal_n)
                for found in db.execute(f"SELECT {GROUP_FIELDS} FROM groups ORDER BY {DEFAULT_ORDER}")]
    where, values = filters.where()
    matched: dict = {}
    for gkey, bits in db.execute(f"SELECT gkey, flags FROM rows WHERE gkey IS NOT NULL AND {where}", values):
        count, seen = matched.get(gkey, (0, 0))
        matched[gkey] = (count + 1, seen | bits)
    listed = []
    keys = list(matched)
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        listed += [from_table(run_id, found, modal_n, matched[found[0]]) for found in db.execute(
            f"SELECT {GROUP_FIELDS} FROM groups WHERE gkey IN ({','.join('?' * len(chunk))})", chunk)]
    return ordered_by(sorted(listed, key=lambda g: (g.sort["task"] is None, g.sort["task"] or "", g.key)),
                      lambda g: g.sort["step"], "desc")


def rollout_flag_counts(db, filters: Filters, keys: list) -> dict:
    """Per group, how many of its members the row filters and the rollout flags both keep."""
    rollout = filters.rollout_only()
    where, values = filters.where()
    flag_where, flag_values = rollout.flag_where()
    counts = Counter()
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        counts.update(dict(db.execute(
            f"SELECT gkey, count(*) FROM rows WHERE gkey IN ({','.join('?' * len(chunk))}) AND {where}"
            f" AND {flag_where} GROUP BY gkey", [*chunk, *values, *flag_values])))
    return counts


def keep_flagged(listed: list[Listed], filters: Filters, count_members) -> list[Listed]:
    """The groups the flag filters keep, each with the members that keep it (`kept`): none unless the
    group carries every required group flag and no excluded one; then its matched members that carry
    every required rollout flag and no excluded one (all of them when only group flags are asked)."""
    group_required = flag_bits(f for f in filters.flags if not is_rollout_flag(f))
    group_excluded = flag_bits(f for f in filters.exclude_flags if not is_rollout_flag(f))
    rollout = filters.rollout_only()
    candidates = [g for g in listed if g.flags & group_required == group_required and not g.flags & group_excluded]
    if rollout.by_flag:
        counts = count_members(candidates)
        for group in candidates:
            group.kept = counts.get(group.key, 0)
    else:
        for group in candidates:
            group.kept = group.matched
    return [g for g in candidates if g.kept]


def band_counts(listed: list[Listed], keyless: dict) -> Counter:
    """Flag combinations -> count: a listed group once (its flags and its matched members'), a keyless row once."""
    counts = Counter(group.band_bits() for group in listed)
    for bits, (n, _, _) in keyless.items():
        counts[bits] += n
    return counts


def ungrouped_where(snapshot, keys: tuple, server_keys: tuple) -> tuple[str, list]:
    """The rows in no group by `keys`: the store's own when they are the server's keys."""
    if keys == server_keys:
        return "gkey IS NULL", []
    ids = [row["id"] for row in build_grouping(snapshot.rows, keys).ungrouped]
    return "id IN (SELECT value FROM json_each(?))", [encode_json(ids).decode()]


def keyless(snapshot, db, filters: Filters, keys: tuple, server_keys: tuple) -> dict:
    """`counted` for the rows in no group by `keys` (kept counts for the server's keys, unfiltered)."""
    if keys == server_keys and not filters:
        return counted(db, filters, entry=("ungrouped", ""))
    return counted(db, filters, ungrouped_where(snapshot, keys, server_keys))
