"""Answers computed from the catalog and the records: the request parameters they read, listings, groups,
runs compared, and the answers about one record (see `skycap_viewer/__init__.py` for each module's job)."""
