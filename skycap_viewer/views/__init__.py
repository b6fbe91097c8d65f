"""Answers computed from the catalog and the records: listings, groups, and the answers about one record."""
