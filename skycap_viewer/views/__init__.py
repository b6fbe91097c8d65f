"""Answers computed from the catalog and the records, in two families.

Per run (a listing's rows, counts and groups, from the store): `params` (the request parameters as the
answers read them), `listing` (filters as SQL, sorts, pages, the health band), `runs_listing` (one run's or
several runs' rollouts), `missing` (the run index's rows without a record), `export` (the kept rows as JSON
lines), `group_listing` and `groups_answer` (the groups), `values` (the picker's values), `runs_compare`
(two runs or steps group by group, one prompt across steps), `step_timeline` (a step's rollouts on one
time axis).

Per record (one record's files), each a function of its `RecordView`: `trajectory` (the view, and its
paths), `graph` (its nodes and forks), `calls` (its calls and failures in time order, and placed in time),
`timeline` (the placing), `forks` (where two paths part), `node` (one node's message and media whole),
`chat` (a path as the Chat tab's cards), `row` (a path taken away whole), `notable` (tokens worth reading),
`experts` (a node's routed experts), `retokenized` (its re-tokenized copies), `compare` (two records'
paths), `lineup` (a group lined up against one member), `snapshot` (one rollout as a self-contained HTML
file).
"""
