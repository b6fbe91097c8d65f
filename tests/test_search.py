"""`GET /v1/search` over the in-process seam: hits against the records' own text, options, filters,
streaming by cursor, cancel, bad and catastrophic regexes.

The expected hits are computed here from the documents' raw JSON and their tokens sidecars
(decompressed and parsed by this test, the node text rebuilt by the rule docs/api.md states for
`/v1/search`: the decoded tokens where a node has them, else the message text), never by the search code.
"""

import itertools
import multiprocessing
import os
import re
import shutil
import signal
import sqlite3
import threading
import time
import urllib.parse
from contextlib import contextmanager
from pathlib import Path

import pytest

from skycap_viewer.catalog.searcher import DIED, SearchPool, search_document
from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import is_document_name, read_document, record_id_of
from skycap_viewer.record.search import WITHIN, Query, document_hits
from skycap_viewer.record.sidecars import read_tokens
from skycap_viewer.server import searches
from tests.support.corpus import FIXTURES
from tests.support.in_process import in_process_fixture
from tests.support.search_records import CATASTROPHIC, MADE, made_record, raw_nodes, shown_only_record
from tests.support.server_process import wait_for


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("search") / "root"
    for name in ("groups", "real-like", "broken"):
        shutil.copytree(FIXTURES / name, root / name)
    made = root / "made"
    made.mkdir()
    for step, (record_id, texts) in enumerate(MADE.items()):
        made_record(made, record_id, *texts, step=step)
    many = root / "many"
    many.mkdir()
    for index in range(300):
        made_record(many, f"tr_many_{index:03d}", f"question {index}", "the answer", "answer again", step=index % 5)
    slow = root / "slow"
    slow.mkdir()
    made_record(slow, CATASTROPHIC, "a" * 40 + "b", "aaa", "aaa", step=0)
    made_record(slow, "tr_fine", "fine", "aaa", "aaa", step=0)
    return root


web = in_process_fixture("root", scope="module")


def search_all(web, run: str, text: str, **options) -> tuple[list[dict], dict]:
    """Every hit of a search, following the cursor; (hits, last answer)."""
    query = urllib.parse.urlencode({"run_id": run, "text": text, "limit": 1000, **options})
    answer = web.json(f"/v1/search?{query}")
    hits = list(answer["data"])
    while answer["next_cursor"]:
        answer = web.json(f"/v1/search?{query}&cursor={answer['next_cursor']}")
        hits += answer["data"]
    assert answer["done"]
    return hits, answer


def expected_nodes(nodes: dict, found) -> set:
    return {key for key, (text, role, kind, _) in nodes.items() if found(text, role, kind)}


@pytest.mark.parametrize("within", ["shown", "message"])
@pytest.mark.parametrize("run, text", [("real-like", "the"), ("groups", "solve"), ("real-like", "E"),
                                       ("made", "answer"), ("real-like", "<|im_start|>assistant")])
def test_every_node_with_the_text_is_found_and_every_hit_slices_to_it(web, root, run, text, within):
    nodes = raw_nodes(root / run, within)
    hits, answer = search_all(web, run, text, **{"in": within})
    wanted = text.casefold()
    assert {(h["trajectory_id"], h["node_id"]) for h in hits} == expected_nodes(
        nodes, lambda t, role, kind: wanted in t.casefold())
    for hit in hits:
        node_text, role, kind, source = nodes[hit["trajectory_id"], hit["node_id"]]
        assert node_text[hit["start"] : hit["end"]].casefold() == wanted
        assert (hit["role"], hit["kind"], hit["in"]) == (role, kind, source)
        snippet = hit["snippet"]
        assert snippet["match"] == node_text[hit["start"] : hit["end"]]
        assert node_text[: hit["start"]].endswith(snippet["before"]) and node_text[hit["end"] :].startswith(
            snippet["after"])
    per_node = {}
    for hit in hits:
        per_node[hit["trajectory_id"], hit["node_id"]] = per_node.get((hit["trajectory_id"], hit["node_id"]), 0) + 1
    for key, count in per_node.items():
        assert count == nodes[key][0].casefold().count(wanted)
    assert answer["total_documents"] == answer["scanned"] == len({key[0] for key in nodes})


def test_the_search_text_is_the_text_paths_sends_for_a_record_without_tokens(web):
    hits, _ = search_all(web, "made", "answer")
    assert hits, "the records without tokens say 'answer': a search that finds nothing tests nothing"
    for hit in hits[:10]:
        nodes = web.json(f"/v1/trajectories/{hit['trajectory_id']}/paths?run_id=made")["nodes"]
        assert nodes[hit["node_id"]]["text"][hit["start"] : hit["end"]].casefold() == "answer"


def test_a_hit_in_tokens_slices_the_text_paths_sends_for_its_node(web):
    hits, _ = search_all(web, "real-like", "assistant", role="assistant")
    assert {h["in"] for h in hits} == {"tokens"}  # the chat template says "assistant"; no message text here does
    for hit in hits:
        nodes = web.json(f"/v1/trajectories/{hit['trajectory_id']}/paths?run_id=real-like")["nodes"]
        node = nodes[hit["node_id"]]
        assert (node["token_ids"] is not None) == (hit["in"] == "tokens")
        assert node["text"][hit["start"] : hit["end"]].casefold() == "assistant"


def test_unicode_casefold_and_case(web):
    hits, _ = search_all(web, "made", "strasse")  # casefold: ß is ss
    matched = sorted(raw_nodes(Path(web.catalog.roots[0]) / "made")[h["trajectory_id"], h["node_id"]][0]
                     [h["start"] : h["end"]] for h in hits)
    assert matched == ["STRASSE", "Straße"]
    assert [h["snippet"]["match"] for h in search_all(web, "made", "STRASSE", case="true")[0]] == ["STRASSE"]
    assert search_all(web, "made", "Answer", case="true")[0][0]["snippet"]["match"] == "Answer"
    assert {h["snippet"]["match"] for h in search_all(web, "made", "answer", case="true")[0]} == {"answer"}


def test_regex(web, root):
    nodes = raw_nodes(root / "made")
    hits, _ = search_all(web, "made", r"\d+", regex="true")
    expected = {(key, m.span()) for key, (text, _, _, _) in nodes.items() for m in re.finditer(r"\d+", text)}
    assert {((h["trajectory_id"], h["node_id"]), (h["start"], h["end"])) for h in hits
            if h["in"] != "tool_call_ids"} == expected
    ids = [h["snippet"]["match"] for h in hits if h["in"] == "tool_call_ids"]  # the calls' ids, `c1`: not in the text
    assert ids and all(re.fullmatch(r"\d+", match) for match in ids)
    insensitive = search_all(web, "made", "ANSWER [0-9]", regex="true")[0]
    assert {h["snippet"]["match"] for h in insensitive} == {"ANSWER 7"}
    assert search_all(web, "made", "answer [0-9]", regex="true", case="true")[0] == []


def test_kind_and_role(web, root):
    nodes = raw_nodes(root / "made")
    for kind in ("sampled", "given", "replayed"):
        hits, _ = search_all(web, "made", "answer", kind=kind)
        assert {(h["trajectory_id"], h["node_id"]) for h in hits} == expected_nodes(
            nodes, lambda t, r, k, kind=kind: k == kind and "answer" in t.casefold())
        assert hits and {h["kind"] for h in hits} == {kind}
    tool = search_all(web, "made", "answer", role="tool")[0]
    assert tool and {h["role"] for h in tool} == {"tool"}
    calls = search_all(web, "made", "lookup_answer", kind="sampled")[0]  # a tool call's name and arguments
    assert len(calls) == len(MADE)


def test_a_search_runs_inside_the_listing_filters(web, root):
    nodes = raw_nodes(root / "many")
    listed = {row["id"] for row in web.json("/v1/trajectories?run_id=many&step=2&limit=1000")["data"]}
    hits, answer = search_all(web, "many", "question", step=2)
    assert {h["trajectory_id"] for h in hits} == listed and answer["total_documents"] == len(listed) == 60
    assert {(h["trajectory_id"], h["node_id"]) for h in hits} == expected_nodes(
        nodes, lambda t, r, k: "question" in t) & {key for key in nodes if key[0] in listed}
    only = search_all(web, "many", "question", q="tr_many_007")[0]
    assert {h["trajectory_id"] for h in only} == {"tr_many_007"}


def test_a_small_limit_streams_and_the_cursor_completes_it(web, root):
    first = web.json("/v1/search?run_id=many&text=answer&limit=5")
    assert len(first["data"]) == 5 and first["done"] is False and first["next_cursor"]
    hits, answer = list(first["data"]), first
    while answer["next_cursor"]:
        answer = web.json(f"/v1/search?run_id=many&text=answer&limit=5&cursor={answer['next_cursor']}")
        assert len(answer["data"]) <= 5
        hits += answer["data"]
    expected = sum(text.casefold().count("answer") for text, _, _, _ in raw_nodes(root / "many").values())
    assert len(hits) == expected == 300 * 6  # reasoning, the call's name and arguments, tool, reply, replayed
    assert answer["done"] and answer["scanned"] == 300
    assert len({(h["trajectory_id"], h["node_id"], h["start"]) for h in hits}) == len(hits)
    again = web.json("/v1/search?run_id=many&text=answer&limit=5")  # the same search: answered from it
    assert again["done"] is False and again["hits_so_far"] == expected and again["data"] == first["data"]


def test_a_search_reads_a_page_ahead_of_what_was_asked_then_waits_to_be_asked(web):
    """A client that wanted the first page only leaves the workers to the next search; asking for more resumes it."""
    query = "/v1/search?run_id=many&text=again&limit=1"
    first = web.json(query)
    assert len(first["data"]) == 1 and first["next_cursor"]
    search = next(s for s in web.server.api.searches.by_key.values() if first["next_cursor"].startswith(s.token))
    deadline = time.monotonic() + 30
    while not search.paused and not search.done and time.monotonic() < deadline:
        time.sleep(0.02)
    assert search.paused and not search.done, "it holds the page asked and the next, and reads no further"
    assert search.wanted == 2 and search.scanned < 10 < search.total_documents == 300
    second = web.json(f"{query}&cursor={first['next_cursor']}")
    assert second["data"] and second["scanned"] < 300
    hits = first["data"] + second["data"]
    answer = second
    while answer["next_cursor"]:
        answer = web.json(f"/v1/search?run_id=many&text=again&limit=100&cursor={answer['next_cursor']}")
        hits += answer["data"]
    assert answer["done"] and answer["scanned"] == 300 and not answer["paused"]
    assert len({(h["trajectory_id"], h["node_id"], h["start"]) for h in hits}) == len(hits) >= 300


def test_the_unreadable_rows_are_skipped_in_the_listing_order_and_the_rest_read(web):
    listing = web.json("/v1/trajectories?run_id=broken&limit=1000")["data"]
    unreadable = [{"trajectory_id": row["id"], "reason": f"unreadable: {row['error']}"}
                  for row in listing if row.get("unreadable")]
    assert unreadable and len(unreadable) < len(listing)
    hits, answer = search_all(web, "broken", "e", **{"in": "message"})
    assert answer["skipped"] == unreadable and answer["skipped_count"] == len(unreadable)
    assert answer["total_documents"] == answer["scanned"] == len(listing)
    assert {hit["trajectory_id"] for hit in hits} <= {row["id"] for row in listing if not row.get("unreadable")}


def test_a_search_whose_index_fails_while_it_reads_says_so_and_ends(root):
    """The ids are read from the run's index as the search goes: an error there ends the search with what it
    found so far and says why, instead of leaving its pages waiting."""
    directory = root / "many"
    ids = sorted(record_id_of(name) for name in os.listdir(directory) if is_document_name(name))

    def failing_ids():
        yield from ids[:3]
        raise sqlite3.OperationalError("disk I/O error")

    @contextmanager
    def listing():
        yield len(ids), [], failing_ids()

    search = searches.Search("key", Query("answer", False, False, "all", None, "message"), directory, listing)
    pool = SearchPool(workers=2)
    try:
        search.run(pool)
    finally:
        pool.close(wait=True)
    answer = search.page(0, 1000)
    assert answer["done"] and answer["error"] == "the run's index could not be read: disk I/O error"
    assert search.scanned <= 3 and len(answer["data"]) == 6 * search.scanned


def test_the_searches_say_while_one_reads_documents(root):
    """What the background verification steps aside for (`Searches.reading`): a search reading its documents,
    not one waiting to be asked for more, nor one done or cancelled."""
    directory = root / "many"
    ids = sorted(record_id_of(name) for name in os.listdir(directory) if is_document_name(name))
    gate = threading.Event()

    def gated_ids():
        gate.wait()
        yield from ids

    @contextmanager
    def listing():
        yield len(ids), [], gated_ids()

    held = searches.Searches(SearchPool(workers=2))
    try:
        assert not held.reading()
        search = held.get_or_start("key", lambda: searches.Search(
            "key", Query("the", False, False, "all", None, "message"), directory, listing))
        wait_for(lambda: search.listed, "the search listed its documents")
        assert held.reading(), "reading its documents (the first is on its way)"
        gate.set()
        wait_for(lambda: search.paused or search.done, "the search paused: nobody asked for a page")
        assert not held.reading()
        search.page(0, 5)
        held.cancel(search)
        assert not held.reading()
    finally:
        gate.set()
        held.close()


def test_a_search_can_be_cancelled_and_its_cursor_then_is_gone(web):
    first = web.json("/v1/search?run_id=many&text=the&limit=1")
    cancelled = web.json(f"/v1/search?run_id=many&text=the&limit=1&cursor={first['next_cursor']}&cancel=true")
    assert cancelled["cancelled"] is True and cancelled["next_cursor"] is None and cancelled["data"] == []
    gone = web.json(f"/v1/search?run_id=many&text=the&limit=1&cursor={first['next_cursor']}", 410)
    assert "start it again" in gone["detail"]
    fresh = web.json("/v1/search?run_id=many&text=the&limit=1")  # asked again: a new search
    assert fresh["next_cursor"] != first["next_cursor"] and fresh["cancelled"] is False


def test_bad_requests_are_400_naming_the_problem(web):
    assert web.json("/v1/search?run_id=made&text=(a&regex=true", 400)["detail"].startswith(
        "bad regex: missing ), unterminated subpattern at position 0")
    for regex, why in (("a{4294967296}", "the repetition number is too large"),  # OverflowError
                       ("(" * 499 + "a" + ")" * 499, "nested too deeply to compile")):  # RecursionError
        text = urllib.parse.quote(regex)
        assert web.json(f"/v1/search?run_id=made&text={text}&regex=true", 400)["detail"] == f"bad regex: {why}"
    assert web.json("/v1/search?run_id=made&text=a&in=tokens", 400)["detail"] == "in must be one of shown|message"
    assert web.json("/v1/search?run_id=made", 400)["detail"] == "text is required"
    assert web.json("/v1/search?text=a", 400)["detail"].startswith("run_id is required")
    kinds = "kind must be one of all|sampled|given|replayed"
    assert web.json("/v1/search?run_id=made&text=a&kind=nope", 400)["detail"] == kinds
    assert web.json("/v1/search?run_id=nope&text=a", 404)["detail"] == "no run nope"
    assert "not a search cursor" in web.json("/v1/search?run_id=made&text=a&cursor=12", 400)["detail"]
    first = web.json("/v1/search?run_id=many&text=the&limit=1")
    other = web.json(f"/v1/search?run_id=many&text=other&cursor={first['next_cursor']}", 400)
    assert "another search" in other["detail"]


def test_a_catastrophic_regex_is_cut_off_per_document_and_the_server_keeps_answering(web):
    started = time.monotonic()
    answer = web.json("/v1/search?run_id=slow&text=(a%2B)%2B%24&regex=true&limit=1000")
    while answer["next_cursor"]:
        assert web.get("/v1/runs").status == 200  # listings are answered meanwhile
        answer = web.json(f"/v1/search?run_id=slow&text=(a%2B)%2B%24&regex=true&cursor={answer['next_cursor']}")
    assert time.monotonic() - started < 20
    assert answer["skipped"] == [{"trajectory_id": CATASTROPHIC,
                                  "reason": "matching took longer than 2 s, the limit per document"}]
    assert answer["done"] and answer["scanned"] == 2


def test_a_search_nobody_asks_for_is_dropped(web, monkeypatch):
    monkeypatch.setattr(searches, "IDLE_SECONDS", 0.3)
    monkeypatch.setattr(searches, "KEPT_SECONDS", 0.3)
    first = web.json("/v1/search?run_id=many&text=question&limit=1")
    kept = web.server.api.searches.by_key
    search = next(s for s in kept.values() if first["next_cursor"].startswith(s.token))
    time.sleep(1.0)
    gone = web.json(f"/v1/search?run_id=many&text=question&limit=1&cursor={first['next_cursor']}", 410)
    assert "nobody asked" in gone["detail"] and search not in kept.values()
    deadline = time.monotonic() + 10
    while not search.done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert search.cancelled and search.done  # its thread stopped reading


@pytest.mark.parametrize("case", [False, True])
@pytest.mark.slow
def test_ruling_a_document_out_from_its_text_never_loses_a_hit(root, case, tmp_path):
    """`may_match` skips parsing documents whose JSON text cannot hold the text, and `shown_may_match` decoding
    the tokens of those whose tokens' text cannot: they must skip none that hold it."""
    shown = tmp_path / "shown"
    shown.mkdir()
    shown_only_record(shown, "tr_shown_only")
    directories = [d for d in FIXTURES.iterdir() if d.is_dir()] + [root / "made", root / "slow", shown]
    texts = ["the", "e", "a", "answer", "Answer", "strasse", "STRASSE", "ss", "re2", "solve a", "ok", "door",
             "lookup_answer", "q", "istanbul", "42", "tool answer", "part", "True", "kelvin", "Kelvin", "zebra",
             "Zebra", "ZEBRA", "clair", "s user", "quiet", "QUIET REPLY", "plain"]
    compared = 0
    for directory in directories:
        for path in sorted(directory.glob("*.json.zst")):
            record_id = path.name[: -len(".json.zst")]
            try:
                document = read_document(path)
            except RecordError:
                continue
            try:
                tokens = read_tokens(directory, document)
            except RecordError:
                tokens = None
            for text, within in itertools.product(texts, WITHIN):
                query = Query(text, case=case, within=within)
                found = search_document(str(directory), record_id, query)
                assert found.hits == document_hits(document, query, record_id, tokens)[0], (path, text, within)
                compared += 1
    assert compared > 1000
    # what only the tokens hold, found: the Kelvin sign folds to "k"; "Zebra" and "ZEBRA" fold alike
    for text, hits in (("kelvin", 0 if case else 1), ("ZEBRA", 1 if case else 2)):
        found = search_document(str(shown), "tr_shown_only", Query(text, case=case))
        assert [hit["in"] for hit in found.hits] == ["tokens"] * hits


def test_a_search_whose_workers_die_reports_every_document_once():
    """Documents are handed out a few chunks at a time: when the workers die mid-search, those in flight
    and those not handed out yet are all reported skipped, none lost, none twice."""
    directory = FIXTURES / "groups"
    ids = [record_id_of(name) for name in sorted(os.listdir(directory)) if is_document_name(name)] * 40
    pool = SearchPool(workers=2)
    try:
        found = pool.search(directory, ids, Query("a", False, False, "all", None))
        got = [next(found)]
        workers = multiprocessing.active_children()
        assert workers, "the search's worker processes"
        for worker in workers:
            os.kill(worker.pid, signal.SIGKILL)
        got.extend(found)
    finally:
        pool.close()
    assert sorted(result.record_id for result in got) == sorted(ids)
    assert any(result.skipped == DIED for result in got), "the documents the dead workers did not read"
