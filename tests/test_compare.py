"""`/v1/compare` by message text: each turn carries its own node's blocks, found per node (a long
text-mode pair answers without scanning every block of the path once per turn)."""

import json

from skycap_viewer.record.frames import compress
from tests.chain import chain_document
from tests.server_process import ServerProcess


def write_pair(directory, count):
    """Two text chains of `count` nodes that part at their first reply."""
    directory.mkdir(parents=True)
    for name, reply in (("chain-a", "turn 1"), ("chain-b", "turn 1, said otherwise")):
        document = chain_document(count)
        document["id"] = name
        document["nodes"][1]["message"]["content"] = reply
        (directory / f"{name}.json.zst").write_bytes(compress(json.dumps(document).encode()))


def test_text_mode_turns_carry_their_own_blocks(tmp_path):
    write_pair(tmp_path / "long", 600)
    with ServerProcess([tmp_path]) as server:
        server.wait_indexed()
        answer = server.get("/v1/compare?a=chain-a&b=chain-b")
    assert answer["unit"] == "chars" and answer["diverge"]["a"]["node_id"] == "n1"
    assert len(answer["turns"]) == 599
    for turn in answer["turns"]:
        for side in ("a", "b"):
            own = turn[side]
            assert own["blocks"], own["node_id"]
            assert {block["node_id"] for block in own["blocks"]} == {own["node_id"]}
            assert own["blocks"][0]["start"] == own["start"] and own["blocks"][-1]["end"] == own["end"]
    assert answer["turns"][0]["diff"] == [[6, 6, 6, 22]]  # ", said otherwise" added on b
    assert all(turn["same"] for turn in answer["turns"][1:])
