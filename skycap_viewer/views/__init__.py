"""Answers computed from the catalog and the records, in two families, each a package.

`run` answers about a run (a listing's rows, counts and groups, from the store); `record` answers about
one record (its files), each a function of its `RecordView`. Both read the request's parameters with
`params` (the request parameters as the answers read them).
"""
