"""HTTP: the routes, the reading of records, and the server that runs them.

- `api`: one function per route; finds the runs and records asked for and hands the answer to `views/`.
- `caches`: the server's caches, each keyed by all its value depends on and bounded.
- `searches`: the run-wide text searches, run in the background and polled by cursor.
- `web`: the route table, the request policy (hosts, origins, ETags, gzip) and the handler.
- `connections`: what one client may hold: connection slots, time, the size of a request head, long answers.
- `access`: the token a viewer shared beyond loopback requires, its cookie and its Bearer header.
- `in_process`: the API asked without HTTP, through the route table: the answers `bundle` writes.
- `serve`: `skycap-viewer DIR...`, binding, printing the URL and serving while the runs are indexed.
"""
