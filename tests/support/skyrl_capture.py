"""A directory skyrl-capture (a neighbouring tool) wrote: `manifest.json` and shards holding skycap records."""

from tests.support.corpus import FIXTURES
from tests.support.records import copy_record

SPEC = FIXTURES / "spec"


def capture_tree(directory, manifest: bytes = b'{"record_version": 3, "shards": ["shard-0000", "shard-0001"]}'):
    """A skyrl-capture directory whose two shards hold copies of skycap records."""
    for shard in ("shard-0000", "shard-0001"):
        (directory / "committed" / shard).mkdir(parents=True)
        copy_record(SPEC, "tr_tokens", directory / "committed" / shard, f"tr_{shard}")
    (directory / "manifest.json").write_bytes(manifest)
    return directory
