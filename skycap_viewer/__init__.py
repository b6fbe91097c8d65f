"""skycap-viewer: a local, read-only viewer for skycap trajectory records (format v1).

The layers, in the order the data flows (each imports only the ones before it, and the base;
`tests/test_layers.py` holds this):

- base: `errors` (every error type), `flags` (the flag and text-only catalogues), `wire` (JSON
  as sent), `page` (where the page's files are), `printable` (text for a terminal
  or a log, its control and bidi characters escaped). They import nothing of the package.
- `record/`: one record read from its files: zstd frames, the document and its schema, the sidecar
  manifest and arrays, what the sampling mask says of the sampled tokens (`support`), a node's routed
  experts (`experts`), the graph, its forks named as skycap's `check` names them, paths and blocks
  (`rollout`), the fields rules and the header, a node's searchable text and matching (`search`).
- `catalog/`: the runs being served: discovery, the index row of a record, GRPO groups, each run's
  rows in SQLite (`store`) with the viewer's index of each run (`IndexedRun`) and its snapshots, the
  trainer's run index files (`run_index`), where the databases live (`persisted`), the worker pools
  (indexing, `searcher`) and the watcher.
- `views/`: answers computed from the catalog and records: the request parameters (`params`), listings
  (filters, sorts, pages, health in `listing`; one run's or several runs' rollouts in `runs_listing`; the
  run index's rows without a record in `missing`; every kept row as JSON lines in `export`), the groups
  (`groups_answer`, over the store's groups in `group_listing`), the picker's values (`values`), the answers
  about one record (paths, graph, calls, calls placed in time in `timeline`, forks; its re-tokenized copies
  in `retokenized`), one node's routed experts (`experts`), two records' paths compared (`compare`), a
  group lined up against one member (`lineup`), one path taken away whole, as the trainer's row and as the
  chat the model saw (`row`), one path read as a conversation, a card per message (`chat`), two runs or
  steps group by group and one prompt across steps
  (`runs_compare`), every rollout of one step as a lane on one time axis (`step_timeline`), and one
  rollout as one self-contained HTML file (`snapshot`, drawn by `views/record/snapshot_page/`).
- `server/` (HTTP: the API, its caches, running searches in `searches`, routes and request policy
  in `web`, what one connection may hold in `connections`, `serve`) and
  `commands/` (`check`, `show` and its `--html` in `snapshot`, `summary`, `diff`, `export`, `grep`, `timeline`) sit side
  by side on top; neither imports the other. `demo/` (the example run and the writer that makes it) needs only
  `record/`.
- `python_api/` (the same answers in Python: `open()` gives a `Viewer` asking the server's `Api` in this
  process) sits on top of `server/` and `commands/`; `mcp_server/` (the MCP server coding agents talk to
  over stdio) on top of it.
- `cli` parses the command line and starts one of them; `__main__` runs it.

`skycap_viewer.open` (and `Viewer`, `Rollout`) are `python_api`'s, loaded by `__getattr__` below when
first used: `import skycap_viewer` loads no layer, so every module's `from skycap_viewer import
__version__` stays at the base.

Words: a *record* is the files of one trajectory (`{id}.json.zst`, the *document*, plus its sidecar
files); a *trajectory* is what a record holds, a tree of nodes; a *rollout* is a trajectory as the
viewer understands it (its paths, blocks, counts and flags); a *run* is one record directory.

Caches: listed in `server/caches.py` with their keys and bounds (answers, documents, per-snapshot
answers in `catalog/index.py`, gzip forms in `wire.py`, and each run's index database in
`catalog/persisted.py`).
"""

__version__ = "0.1.0"

OPENED = ("open", "Viewer", "Rollout", "Path", "Rows")  # `python_api`'s face, loaded when first used


def __getattr__(name: str):
    if name in OPENED:
        from skycap_viewer import python_api

        return getattr(python_api, name)
    raise AttributeError(f"module 'skycap_viewer' has no attribute {name!r}")
