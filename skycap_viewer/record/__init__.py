"""One record read from its files alone.

Frames, document, schema, manifest, sidecars, graph, forks, blocks, rollout, fields, header, verify.
"""
