"""The runs being served.

Discovery, index rows, groups, each run's rows in SQLite (the store, the run index and its snapshots,
where the databases live), the worker pools, the watcher.
"""
