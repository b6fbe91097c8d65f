"""`pulled/`'s newer layout with a run index whose rows name mirrors: one in an S3 store, one on gs://
(gcsfs is not installed), one a local path (never followed)."""

import json
import shutil

from tests.support.corpus import FIXTURES, PULLED
from tests.support.records import copy_record

MIRRORED = "tr_5fa54f8267d222c5"  # a row of pulled/'s run index whose record is not in the copy, but mirrored
ON_GCS = "tr_3c509741a7521e5e"  # another, mirrored on gs:// (gcsfs is not installed)
LOCAL_MIRROR = "tr_36b6c64e3e74d609"  # a third, given a file:// mirror


def pulled_with_a_mirror(store, tmp_path) -> tuple:
    """`pulled/new/train` whose index names an S3 mirror for `MIRRORED`, and that record in the mirror."""
    train = tmp_path / "new" / "train"
    shutil.copytree(PULLED / "new" / "train", train)
    mirror = store.url(f"mirror/{tmp_path.name}/train")
    for step in (train / "index").glob("step-*.json"):
        text = step.read_text().replace(f"gs://skycap-runs/grpo-demo/train/{MIRRORED}", f"{mirror}/{MIRRORED}")
        step.write_text(text)
    step = train / "index" / "step-2.json"  # and one row whose mirror is a local path: never followed
    document = json.loads(step.read_text())
    local_row = next(row for row in document["rows"] if row["id"] == LOCAL_MIRROR)
    local_row["record"] = {"mirror": f"file:///etc/{LOCAL_MIRROR}.json.zst"}
    step.write_text(json.dumps(document))
    record = tmp_path / "record"
    record.mkdir()
    copy_record(FIXTURES / "groups", "tr_0e32dadf1ca07c39", record, MIRRORED)
    store.upload(record, f"mirror/{tmp_path.name}/train")
    return train, mirror
