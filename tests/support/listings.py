"""The API's listings read whole, and what the tests read out of them (a row's reward, an answer's keys)."""

import math


def all_rows(server, run_id):
    listing = server.get(f"/v1/trajectories?run_id={run_id}&limit=1000")
    assert not listing["has_more"]
    return listing["data"]


def reward_of(row):
    reward = row["annotations"].get("reward")
    if isinstance(reward, bool):
        return int(reward)
    return reward if isinstance(reward, (int, float)) and math.isfinite(reward) else None


def all_groups(server, run_id, query=""):
    listing = server.get(f"/v1/groups?run_id={run_id}&limit=1000{query}")
    assert not listing["has_more"]
    return listing


def walk_keys(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from walk_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk_keys(item)
