"""Answers about one record (its files), each a function of its `RecordView`.

`trajectory` (the view, and its paths), `graph` (its nodes and forks), `calls` (its calls and failures in
time order, and placed in time), `timeline` (the placing), `forks` (where two paths part), `node` (one
node's message and media whole), `chat` (a path as the Chat tab's cards), `row` (a path taken away
whole), `notable` (tokens worth reading), `experts` (a node's routed experts), `retokenized` (its
re-tokenized copies), `compare` (two records' paths), `lineup` (a group lined up against one member),
`snapshot` (one rollout as a self-contained HTML file, its style and script in `snapshot_page/`).
"""
