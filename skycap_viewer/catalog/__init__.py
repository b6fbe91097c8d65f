"""The runs being served.

- `discovery`: the record directories under the directories named; `rows`: the index row of one record.
- `groups`: GRPO groups (attempts, superseded, group flags); `run_index`: the trainer's `index/step-<N>.json`.
- `store`: each run's rows, counts and groups in SQLite; `blobs`: a row's JSON and kept fields as stored.
- `index`: the viewer's index of a run and its immutable snapshots; `persisted`: where the databases live.
- `pool`: the indexing worker processes; `searcher`: the search worker processes.
- `watcher`: the polling watcher, the only code that lists directories.
- `object_store`: a store's prefix listed and read through fsspec; `remote_copy`: its local copy, polled.
"""
