"""Records given a `samples` field (the rows a trainer takes from them), among them one whose first row
ends at an inner node."""

import json

from skycap_viewer.record.frames import compress, decompress_one_frame


def with_samples(source, target, samples):
    document = json.loads(decompress_one_frame(source.read_bytes()))
    document["samples"] = samples
    target.write_bytes(compress(json.dumps(document).encode()))


def inner_row_record(directory):
    """A linear 3-turn record finished with a custom rule: row 0 ends at the first reply (targets: it),
    row 1 is the whole line (targets: the last reply). skycap hands the trainer two samples."""
    from skycap_viewer.demo.writer import RecordBuilder

    builder = RecordBuilder("tr_inner_row", "tokens", meta={"task": "inner"})
    parent = None
    for turn in range(3):
        parent = builder.add_model(builder.add_client(parent, "user", f"question {turn}"), f"answer {turn}")
    builder.write(directory)
    path = directory / "tr_inner_row.json.zst"
    with_samples(path, path, {"paths": "custom", "rows": [{"leaf": 1, "targets": [1]}, {"leaf": 5, "targets": [5]}]})
    return json.loads(decompress_one_frame(path.read_bytes()))
