"""One record read from its files alone.

Frames, document, schema, manifest, sidecars, graph, blocks, rollout, fields, header.
"""
