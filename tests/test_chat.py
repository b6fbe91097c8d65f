"""`/v1/trajectories/{id}/paths/{n}/chat`, the Chat tab's answer, against skycap's own answers: every
path of every readable corpus record as cards in path order with the document's messages, trained
where skycap trains, in parts for a long path, a message too big for a part left to `/message`."""

import pytest

from tests.support.agent_records import REUSED, write_reused_ids
from tests.support.chain_record import write_chain
from tests.support.corpus import FIXTURES
from tests.support.oracle import oracle_records, trained_paths
from tests.support.records import copy_record
from tests.support.server_process import served

READABLE = [(d, rid, entry) for d, rid, entry in oracle_records() if entry["load"] == "ok"]


def chat_of(server, run, record_id, path):
    """Every card of the path, its parts fetched one after another, and the first part's facts."""
    first = server.get(f"/v1/trajectories/{record_id}/paths/{path}/chat?run_id={run}")
    cards, part = list(first["cards"]), first["part"]
    while "next" in part:
        later = server.get(f"/v1/trajectories/{record_id}/paths/{path}/chat?run_id={run}&from={part['next']}")
        assert "fork" not in later, "only the first part names the path"
        cards += later["cards"]
        part = later["part"]
    return first, cards


@pytest.mark.parametrize(("run", "record_id", "entry"), READABLE, ids=[f"{d}/{r}" for d, r, _ in READABLE])
def test_every_path_reads_as_its_messages_trained_as_skycap_trains(corpus_server, run, record_id, entry):
    if corpus_server.get(f"/v1/trajectories/{record_id}?run_id={run}").get("unreadable"):  # the viewer refuses it
        status, _, _ = corpus_server.request(f"/v1/trajectories/{record_id}/paths/0/chat?run_id={run}")
        assert status == 422
        return
    for index, expected in enumerate(trained_paths(entry)):
        first, cards = chat_of(corpus_server, run, record_id, index)
        chat = corpus_server.get(f"/v1/trajectories/{record_id}/paths/{index}/messages?run_id={run}")
        assert [card["node_id"] for card in cards] == chat["node_ids"] == [f"n{n}" for n in expected["path"]]
        assert [card["message"] for card in cards] == chat["messages"]
        assert [card["author"] for card in cards] == chat["authors"]
        assert [card["position"] for card in cards] == list(range(len(cards)))
        assert first["node_count"] == len(cards) and first["tools"] == chat["tools"]
        models = [card for card in cards if card["author"] == "model"]
        assert {int(c["node_id"][1:]) for c in models if c["trained"]} == set(expected["targets"]) & {
            int(c["node_id"][1:]) for c in models}
        assert {c["node_id"][1:]: c["trained_in"] for c in models if c["trained_in"] is not None} \
            == expected["sampled_elsewhere"]
        assert all(card["in_samples"] == expected["trains"] for card in models)


def test_a_model_turn_carries_its_calls_and_its_lowest_sampled_logprob(corpus_server):
    first, cards = chat_of(corpus_server, "spec", "tr_truncated", 0)
    paths = corpus_server.get("/v1/trajectories/tr_truncated/paths?run_id=spec")
    for card in cards:
        if card["author"] != "model":
            assert "calls" not in card and "lowest_logprob" not in card
            continue
        node = paths["nodes"][card["node_id"]]
        sampled = [v for v in node["logprobs"][node["sampled_start"]:] if v is not None]
        assert card["lowest_logprob"] == min(sampled)
        assert card["sampled"] == len(node["logprobs"]) - node["sampled_start"]
    assert [call["finish_reason"] for call in cards[1]["calls"]] == ["length"]
    assert first["unit"] == "tokens" and first["fork"] is None
    _, text = chat_of(corpus_server, "spec", "tr_text", 0)
    assert text[1]["lowest_logprob"] is None and text[1]["sampled"] is None  # text mode: no tokens


def test_a_fork_says_which_path_it_leaves_and_a_path_there_is_not_is_a_404(corpus_server):
    first, _ = chat_of(corpus_server, "spec", "tr_shared_reply", 1)
    assert first["fork"] == {"path": 0, "last_shared": "n1", "shared_nodes": 2}
    status, _, body = corpus_server.request("/v1/trajectories/tr_shared_reply/paths/2/chat?run_id=spec")
    assert status == 404 and b"2 path(s)" in body
    status, _, _ = corpus_server.request("/v1/trajectories/tr_shared_reply/paths/0/chat?run_id=spec&from=4")
    assert status == 400


def test_failed_calls_are_on_the_card_their_history_ended_at(corpus_server, tmp_path):
    _, cards = chat_of(corpus_server, "real-like", "tr_f4c44e2c3f5f9d60", 0)
    placed = {card["node_id"]: [f["placed"] for f in card.get("failures", [])] for card in cards}
    assert placed == {"n0": [], "n1": ["by time", "by time"], "n2": [], "n3": []}  # input_leaf null: by time
    later = [f["later"] for card in cards for f in card.get("failures", [])]
    assert later == [["n2"], ["n2"]]  # its request may have carried what was recorded after n1


def leaf_failure(document):
    document["failures"] = [{"t": 1.0, "status": 429, "error": "slow down", "input_leaf": 0}]


def huge_message(document):
    document["nodes"][0]["message"]["content"] = "x" * (5 * 2**20)  # past a part's 4 MiB


@pytest.fixture(scope="module")
def odd_server(tmp_path_factory):
    run = tmp_path_factory.mktemp("chat") / "odd"
    run.mkdir()
    copy_record(FIXTURES / "spec", "tr_text", run, "tr_leaf_failure", leaf_failure)
    copy_record(FIXTURES / "spec", "tr_text", run, "tr_huge_message", huge_message)
    write_chain(run, 12_000)
    yield from served([run])


def test_a_long_path_comes_in_parts_and_a_huge_message_is_left_to_its_route(odd_server):
    first, cards = chat_of(odd_server, "odd", "chain", 0)
    assert first["part"] == {"from": 0, "to": 5000, "total": 12_000, "next": 5000}
    assert [card["node_id"] for card in cards] == [f"n{i}" for i in range(12_000)]
    assert cards[-1]["message"] == {"role": "assistant", "content": "turn 11999"}
    _, cards = chat_of(odd_server, "odd", "tr_huge_message", 0)
    assert cards[0]["message"] == {"cut": True, "json_bytes": 5 * 2**20 + 28, "type": "object"}  # with its role
    whole = odd_server.get("/v1/trajectories/tr_huge_message/message?run_id=odd&node=n0")
    assert whole["message"]["content"] == "x" * (5 * 2**20)
    _, cards = chat_of(odd_server, "odd", "tr_leaf_failure", 0)
    assert cards[0]["failures"] == [{"status": 429, "error": "slow down", "at": "1970-01-01T00:00:01.000Z",
                                     "placed": "input_leaf"}]  # the record says: nothing more


@pytest.fixture(scope="module")
def agent_server(tmp_path_factory):
    run = tmp_path_factory.mktemp("chat") / "agents"
    run.mkdir()
    nodes = write_reused_ids(run)
    yield from ((server, nodes) for server in served([run]))


def test_calls_and_results_pair_in_path_order_though_every_call_is_named_call_0(agent_server):
    server, nodes = agent_server
    first, _ = chat_of(server, "agents", REUSED, 0)
    pairs = [(p["call_node_id"], p.get("call_index"), p["result_node_id"]) for p in first["pairs"]]
    rounds = [(f"n{c}", 0, f"n{r}") for c, r in nodes["rounds"].values()]
    parallel = f"n{nodes['parallel']}"
    assert pairs == [*rounds, (parallel, 0, f"n{nodes['first']}"), (parallel, 1, f"n{nodes['second']}"),
                     (None, None, f"n{nodes['orphan']}")]
    assert {p["tool_call_id"] for p in first["pairs"]} == {"call_0", "call_9"}


def test_a_later_part_carries_no_pairs_and_the_first_pairs_the_whole_path(agent_server):
    server, _ = agent_server
    later = server.get(f"/v1/trajectories/{REUSED}/paths/0/chat?run_id=agents&from=3")
    assert "pairs" not in later


def test_a_client_copy_says_what_it_is_and_what_its_tokens_lack(corpus_server):
    _, cards = chat_of(corpus_server, "retok", "tr_retok_reasoning_dropped", 1)
    by_node = {card["node_id"]: card for card in cards}
    copy = by_node["n2"]
    assert copy["copy"] == {"kind": "re-tokenized", "of": "n1"}
    assert copy["not_in_tokens"] == ["reasoning"]  # the template dropped it: that is why skycap made the copy
    paths = corpus_server.get("/v1/trajectories/tr_retok_reasoning_dropped/paths?run_id=retok")
    assert copy["token_text"] == paths["nodes"]["n2"]["text"]
    assert by_node["n4"]["unbridged"] == "unbridged" and by_node["n0"].get("copy") is None
    assert all("not_in_tokens" not in card for card in cards if card["node_id"] != "n2")
    _, forked = chat_of(corpus_server, "real-like", "tr_86f0b750382298e2", 2)
    edited = next(card for card in forked if card["node_id"] == "n4")
    assert edited["copy"] == {"kind": "edited",
                              "detail": "the harness sent back the model's reply with content changed"}


def test_a_cards_images_carry_the_labels_the_path_tab_gives_them(corpus_server):
    _, cards = chat_of(corpus_server, "spec", "tr_media", 0)
    paths = corpus_server.get("/v1/trajectories/tr_media/paths?run_id=spec")
    for card in cards:
        assert card.get("media", []) == paths["nodes"][card["node_id"]]["media"]
    assert [item["label"] for item in cards[2]["media"]] == ["image · dog · 2 tokens", "image · cat · 3 tokens"]
