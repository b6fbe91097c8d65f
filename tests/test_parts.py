"""Bounded answers: a record of tens of thousands of nodes comes in parts, every record of the
corpus in one. In process, through the real `Api`, with a small part forced so paging is walked.

The whole each test compares with is computed here from the document itself (node ids 0..N-1 in
order, each node's parent, its calls), not from the viewer's own whole answer."""

import json

import pytest

from skycap_viewer.catalog.rows import public
from skycap_viewer.errors import ApiError
from skycap_viewer.record.frames import compress
from skycap_viewer.server.api import Api
from skycap_viewer.views.record.calls import exchanges_part, timeline_part
from skycap_viewer.views.record.graph import graph_part
from skycap_viewer.views.record.trajectory import WHOLE, PartLimit, with_verdicts
from skycap_viewer.wire import encode_json
from tests.support.chain_record import chain_document, write_chain
from tests.support.corpus import copy_corpus
from tests.support.small_parts import SMALL, api_over

CHAIN = 30_000
ENVELOPE = 8 * 2**10  # what a part carries beside its items: the first part's header, counts and summaries


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """(api with small parts over the chain's run, the chain's document)."""
    root = tmp_path_factory.mktemp("parts")
    document = write_chain(root / "long", CHAIN)
    return api_over(root), document


def ask(api: Api, route: str, **params) -> tuple[dict, int]:
    """(the answer, its encoded size) of `route` of the chain record."""
    _, answer = getattr(api, route)("chain", {name: [str(value)] for name, value in params.items()})
    body = answer if isinstance(answer, bytes) else encode_json(answer)
    return json.loads(body), len(body)


def walk(api: Api, route: str, key, **params) -> tuple[dict, list]:
    """(the first part, every part's `key` items concatenated), checking each part's window and size."""
    first, size = ask(api, route, **params)
    part = first["part"] if key(first) is not None else first["paths"][0]["part"]
    items, answers = [], [(first, size)]
    while "next" in part:
        assert part["next"] == part["to"] > part["from"]
        answer, size = ask(api, route, **params, **({"path": 0} if route == "paths" else {}), **{"from": part["next"]})
        assert answer["part"]["from"] == part["to"]
        part = answer["part"]
        answers.append((answer, size))
    for answer, size in answers:
        assert size <= SMALL.bytes + ENVELOPE, (route, answer["part"] if "part" in answer else None, size)
        items.extend(key(answer) if key(answer) is not None else key(answer["paths"][0]))
    assert part["to"] == part["total"] and len(answers) > 2  # the last part says no next; paging was walked
    return first, items


def test_graph_parts_concatenated_are_every_node(chain):
    api, document = chain
    first, nodes = walk(api, "graph", lambda a: a.get("nodes"))
    assert [n["node_id"] for n in nodes] == [f"n{i}" for i in range(CHAIN)]
    assert [n["parent_node_id"] for n in nodes] == [None if n["parent"] is None else f"n{n['parent']}"
                                                    for n in document["nodes"]]
    assert first["part"]["total"] == CHAIN and first["root_node_ids"] == ["n0"]
    assert first["leaf_node_ids"] == [f"n{CHAIN - 1}"] and first["branch_points"] == []
    assert first["train_once"]["holds"] and first["train_once"]["model_nodes"] == CHAIN // 2


def test_paths_parts_concatenated_are_the_path(chain):
    api, document = chain
    first, _ = ask(api, "paths")
    summary = first["paths"][0]
    assert summary["node_count"] == summary["part"]["total"] == CHAIN and len(first["paths"]) == 1
    ids, texts, targets, blocks, messages = [], {}, [], [], []
    part = {"next": 0}
    while "next" in part:
        answer, size = ask(api, "paths", path=0, **{"from": part["next"]})
        assert size <= SMALL.bytes + ENVELOPE
        part = answer["part"]
        ids += answer["node_ids"]
        targets += answer["targets"]
        blocks += answer["blocks"]
        messages += answer["messages"]
        texts.update(answer["nodes"])
    every = [f"n{i}" for i in range(CHAIN)]
    assert ids == every and list(texts) == every
    assert [texts[i]["text"] for i in every] == [n["message"]["content"] for n in document["nodes"]]
    assert targets == [f"n{n['id']}" for n in document["nodes"] if n["author"] == "model"]
    assert [b["node_id"] for b in blocks] == every  # text mode: one block per message
    assert [m["author"] for m in messages] == [n["author"] for n in document["nodes"]]
    assert summary["node_ids"] == ids[: summary["part"]["to"]]  # the first part began the same lists


def test_exchanges_parts_concatenated_are_every_call(chain):
    api, document = chain
    first, rows = walk(api, "exchanges", lambda a: a.get("data"))
    calls = [f"n{n['id']}" for n in document["nodes"] if n.get("calls")]
    assert [r["node_id"] for r in rows] == calls
    assert [r["sequence"] for r in rows] == list(range(len(calls)))
    assert first["call_count"] == len(calls) and first["failure_count"] == 0


def test_timeline_parts_concatenated_are_every_call_placed(chain):
    api, document = chain
    first, items = walk(api, "timeline", lambda a: a.get("data"))
    calls = [n for n in document["nodes"] if n.get("calls")]
    assert [i["node_id"] for i in items] == [f"n{n['id']}" for n in calls]
    origin = calls[0]["calls"][0]["t_start"]
    assert [(i["start_ms"], i["end_ms"]) for i in items] == [
        ((n["calls"][0]["t_start"] - origin) * 1000, (n["calls"][0]["t_end"] - origin) * 1000) for n in calls]
    assert all(i["idle_ms"] == 1500.0 for i in items[1:])  # each call 0.5 s, one every 2 s
    assert first["lanes"] == [{"lane": 0, "root_node_id": "n0", "sub_lanes": 1, "call_count": len(calls),
                               "failure_count": 0, "from_ms": 0.0, "to_ms": items[-1]["end_ms"]}]
    assert first["gap_count"] == len(calls) - 1 and "lanes" not in ask(api, "timeline", **{"from": 400})[0]


def test_a_timeline_of_more_roots_than_a_part_holds_lists_a_part_of_lanes(tmp_path):
    roots = SMALL.items * 2
    nodes = [{"id": i, "parent": None, "author": "model", "role": "assistant",
              "message": {"role": "assistant", "content": f"root {i}"},
              "calls": [{"t_start": 1_700_000_000 + i, "t_end": 1_700_000_000.5 + i}]} for i in range(roots)]
    (tmp_path / "run").mkdir()
    document = {"format_version": 1, "id": "chain", "status": "finished", "nodes": nodes}
    (tmp_path / "run" / "chain.json.zst").write_bytes(compress(json.dumps(document).encode()))
    first, size = ask(api_over(tmp_path), "timeline")
    assert size <= SMALL.bytes + ENVELOPE + len(encode_json(first["lanes"]))
    assert first["lane_count"] == roots and len(first["lanes"]) == SMALL.items
    assert [lane["root_node_id"] for lane in first["lanes"]] == [f"n{i}" for i in range(SMALL.items)]


@pytest.mark.parametrize("route,params", [
    ("graph", {"from": -1}), ("graph", {"from": CHAIN}), ("graph", {"from": "x"}),
    ("exchanges", {"from": CHAIN}), ("timeline", {"from": CHAIN}), ("paths", {"path": 0, "from": CHAIN}),
    ("paths", {"path": 0, "from": "2.5"}),
])
def test_a_part_the_record_does_not_have_is_a_bad_request(chain, route, params):
    with pytest.raises(ApiError) as raised:
        ask(chain[0], route, **params)
    assert raised.value.status == 400


def test_a_path_the_record_does_not_have_is_not_found(chain):
    with pytest.raises(ApiError) as raised:
        ask(chain[0], "paths", path=1)
    assert raised.value.status == 404


def test_parts_share_one_record_view(chain):
    api, _ = chain
    ask(api, "graph", **{"from": 400})
    view = next(iter(api.views.entries.values()))[1]
    rollout = view.rollout
    ask(api, "graph", **{"from": 800})
    ask(api, "paths", path=0, **{"from": 800})
    assert len(api.views.entries) == 1 and view.rollout is rollout


def test_forks_of_two_long_paths_diverging_late_are_bounded(tmp_path):
    document = chain_document(CHAIN)
    for leaf in range(CHAIN, CHAIN + 3 * SMALL.items):  # a second branch from node 9: long after the fork
        document["nodes"].append({"id": leaf, "parent": 9 if leaf == CHAIN else leaf - 1, "author": "client",
                                  "role": "user", "message": {"role": "user", "content": f"other {leaf}"}})
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "chain.json.zst").write_bytes(compress(json.dumps(document).encode()))
    fork, size = ask(api_over(tmp_path), "forks", a=0, b=1)
    assert size <= SMALL.bytes + ENVELOPE
    assert fork["shared_nodes"] == 10 and fork["last_shared_node_id"] == "n9"
    assert fork["a_nodes_after"] == CHAIN - 10 and fork["b_nodes_after"] == 3 * SMALL.items
    for side, first in (("a", 10), ("b", CHAIN)):
        part = fork[f"{side}_part"]
        assert part["from"] == 10 and part["next"] == part["to"] < part["total"]  # cut, and says where
        blocks = [b["node_id"] for b in fork[f"{side}_blocks"]]
        assert blocks == [f"n{i}" for i in range(first, first + part["to"] - 10)]


@pytest.mark.slow
def test_every_corpus_record_comes_in_one_part_equal_to_the_whole(tmp_path):
    copy_corpus(tmp_path / "corpus")
    api = api_over(tmp_path / "corpus", limit=PartLimit())
    for snapshot in api.catalog.snapshots():
        for row in snapshot.rows:
            record_id = row["id"]
            if row.get("unreadable"):
                continue
            params = {"run_id": [snapshot.id]}
            _, listed, _, view = api.view(record_id, params)
            served = json.loads(api.paths(record_id, params)[1])
            header = with_verdicts(view.header, public(listed))  # with the row's verdicts, as /paths and /graph send it
            assert served == {**json.loads(encode_json(view.paths_part(limit=WHOLE))), "trajectory": header}
            assert all("next" not in path["part"] for path in served["paths"])
            assert api.graph(record_id, params)[1] == graph_part(view, limit=WHOLE, header=header)
            assert api.exchanges(record_id, params)[1] == exchanges_part(view, limit=WHOLE)
            assert api.timeline(record_id, params)[1] == timeline_part(view, limit=WHOLE)
