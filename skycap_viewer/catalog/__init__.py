"""The runs being served.

Discovery, index rows, groups, each run's rows in SQLite (the store, the viewer's index of each run and
its snapshots, where the databases live), the trainer's run index files, the worker pools, the watcher,
and records in object storage (`object_store`: a prefix listed and read; `remote_copy`: its local copy).
"""
