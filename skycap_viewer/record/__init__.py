"""One record read from its files alone.

- `frames`: one zstd frame per file, under a ceiling; `document`: the record's files, its document read.
- `schema`: the shape a v1 document must have; `manifest`: the document against its sidecar manifest.
- `sidecars`: the sidecar arrays, read lazily; `experts`: one node's routed experts; `media`: its images.
- `graph`: the paths and what each trains; `forks`: why each fork exists; `blocks`: a path cut in blocks.
- `rollout`: the record understood from its document (paths, counts, signs, flags).
- `support`: what the sampling mask says of each sampled token.
- `lane`: its calls and failures in time order, and its lane on its step's axis (kept by the index).
- `fields`: values read out of `meta`, `annotations` and times; `header`: what a listing row starts with.
- `search`: text found in one document's nodes; `verify`: every problem of a record, sidecars opened.
- `lazy`: a property computed on first use, without `cached_property`'s lock.
- `copies`: record directories that are a store's local copy (which sidecars the store holds, fetched when read).
- `opener`: a record opened, its document read and its present sidecars by the one rule every reader uses.
"""
