"""Answers about a run: its rows, counts and groups, from the store (never a record's files, but for
an export's trainer rows).

`listing` (filters as SQL, sorts, pages, the health band), `rollouts` (`/v1/trajectories`: one run's or
several runs' rollouts), `missing` (the run index's rows without a record), `export` (the kept rows as
JSON lines), `stored_groups` (a run's groups as the store keeps them, listed under the filters) and
`groups` (`/v1/groups` and `/v1/groups/{key}`, over those or a request's own grouping), `values` (the
picker's values), `runs_compare` (two runs or steps group by group, one prompt across steps),
`step_timeline` (a step's rollouts on one time axis).
"""
