"""The runs being served.

Discovery, index rows, the run index and its snapshots, the persisted index, the pool, the watcher.
"""
