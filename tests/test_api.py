"""The read API on the real server over a copy of the corpus: every route, every parameter.

Per-record facts are checked against skycap's own answers (`oracle.json`); listing logic
(filters, sorts, paging, reward range, health) against a computation written here.
"""

import gzip
import json
import shutil
from urllib.parse import quote

import pytest

from skycap_viewer.catalog.index import ENTRY_VALUES
from tests.support.corpus import FIXTURES
from tests.support.listings import all_rows, reward_of
from tests.support.oracle import ORACLE, READABLE, READABLE_IDS, RECORD_DIRS, oracle_records, trained_paths
from tests.support.server_process import ServerProcess

SORT_KEYS = ("step", "task", "reward", "turns", "tokens", "health", "created")


# -- the server and its runs ------------------------------------------------------------------


def test_healthz_and_viewer_info(corpus_server, corpus):
    health = corpus_server.get("/healthz")
    assert health == {"status": "ok", "source": "record", "record": str(corpus)}
    assert corpus_server.get("/api/healthz") == health
    info = corpus_server.get("/__viewer")
    assert info["api"] == "records" and info["roots"] == [str(corpus)]
    assert [f["flag"] for f in info["flags"]][:4] == ["no-signal", "masked", "short", "retried"]
    assert all(f["level"] in ("error", "warn", "info") and f["why"] for f in info["flags"])
    masked = next(f["why"] for f in info["flags"] if f["flag"] == "masked")  # where it comes from, said
    assert "stop_reason annotation" in masked and "original viewer" in masked
    kinds = ["given", "replayed", "scaffold", "sampled", "sampled-elsewhere", "sampled-untrained"]
    assert [k["kind"] for k in info["block_kinds"]] == kinds


def test_api_prefix_serves_the_same_answers(corpus_server):
    for path in ("/v1/runs", "/v1/trajectories?run_id=spec", "/v1/groups?run_id=groups",
                 "/v1/trajectories/tr_tokens/graph"):
        assert corpus_server.get("/api" + path) == corpus_server.get(path)


def test_runs_are_the_corpus_directories(corpus_server, corpus):
    runs = {run["id"]: run for run in corpus_server.get("/v1/runs")["data"]}
    assert sorted(runs) == sorted(RECORD_DIRS)
    for name, run in runs.items():
        documents = list((corpus / name).glob("*.json.zst"))
        assert run["project"] == "skycap-v1"
        assert run["path"] == str(corpus / name)
        assert run["trajectory_count"] == run["indexed"] == len(documents)
        assert run["indexing"] is False


def test_run_facts_count_the_rows(corpus_server):
    for run in corpus_server.get("/v1/runs")["data"]:
        rows = all_rows(corpus_server, run["id"])
        readable = [r for r in rows if not r.get("unreadable")]
        assert run["unreadable"] == len(rows) - len(readable)
        statuses = {}
        for row in readable:
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
        assert run["statuses"] == statuses
        steps = sorted({r["step"] for r in readable if r["step"] is not None})
        assert run["steps"] == steps
        assert sum(run["step_counts"].values()) == sum(1 for r in readable if r["step"] is not None)
        tasks = sorted({r["task_id"] for r in readable if r["task_id"] is not None})
        assert [t["id"] for t in run["tasks"]] == tasks[:ENTRY_VALUES] and run["task_count"] == len(tasks)
        annotations = {}
        for row in readable:
            for key, value in row["annotations"].items():
                values = annotations.setdefault(key, {})
                values[as_text(value)] = values.get(as_text(value), 0) + 1
        assert run["annotations"] == annotations


# -- rows against the oracle ---------------------------------------------------------------------


@pytest.mark.parametrize("directory", RECORD_DIRS)
def test_rows_agree_with_the_oracle(corpus_server, directory):
    rows = {row["id"]: row for row in all_rows(corpus_server, directory)}
    assert sorted(rows) == sorted(ORACLE[directory]["records"])
    for record_id, entry in ORACLE[directory]["records"].items():
        row = rows[record_id]
        assert row["run_id"] == directory
        if row.get("unreadable"):
            assert row["summary"]["flags"] == ["malformed-record"]
            continue
        assert row["status"] == entry["status"] and row["ended"] == entry["ended"]
        assert row["meta"] == entry["meta"] and row["annotations"] == entry["annotations"]
        if "calls" in entry:
            assert row["capture"]["exchange_count"] == entry["calls"]
            assert row["capture"]["node_count"] == entry["nodes"]
        if "paths" in entry:
            assert row["summary"]["paths"] == len(entry["paths"])
            assert ("forked" in row["summary"]["flags"]) == (len(entry["paths"]) > 1)
            samples = [p for p in trained_paths(entry) if p["trains"]]
            tokens = [p["tokens"] for p in entry["paths"] if p["tokens"] is not None]
            if tokens and not row["missing_sidecars"] and not row["record_problems"]:
                assert row["summary"]["tokens"] == sum(p["tokens"] for p in samples)
                assert row["summary"]["trainable"] == sum(p["trained_tokens"] for p in samples)
                assert row["size"]["longest"] == max(tokens) and row["size"]["samples"] == len(samples)
            rule = (entry.get("samples_field") or {}).get("paths")
            assert row["samples_rule"] == rule
        if entry.get("mode") == "text":  # no tokens to count a loss in: null, not 0
            assert row["size"]["trainable"] is None and row["summary"]["trainable"] is None
        strip = row["summary"]["strip"]
        assert all(a["end"] == b["start"] for a, b in zip(strip, strip[1:], strict=False))


@pytest.mark.parametrize("directory,record_id,entry", READABLE, ids=READABLE_IDS)
def test_paths_agree_with_the_oracle(corpus_server, directory, record_id, entry):
    payload = corpus_server.get(f"/v1/trajectories/{record_id}/paths?run_id={directory}")
    assert payload["trajectory"]["id"] == record_id and payload["trajectory"]["run_id"] == directory
    paths = payload["paths"]
    assert len(paths) == len(entry["paths"])
    for path, expected in zip(paths, trained_paths(entry), strict=True):
        assert path["node_ids"] == [f"n{n}" for n in expected["path"]]
        assert path["leaf_node_id"] == f"n{expected['leaf']}"
        assert path["targets"] == [f"n{n}" for n in expected["targets"]] and path["trains"] == expected["trains"]
        blocks = path["blocks"]
        elsewhere = {b["node_id"]: b["trained_in"] for b in blocks if b["kind"] == "sampled-elsewhere"}
        assert elsewhere == {f"n{n}": row for n, row in expected["sampled_elsewhere"].items()}
        assert blocks == [] or blocks[0]["start"] == 0
        assert all(a["end"] == b["start"] for a, b in zip(blocks, blocks[1:], strict=False))
        if expected["tokens"] is None:
            assert path["token_count"] == 0 and path["char_count"] == (blocks[-1]["end"] if blocks else 0)
        else:
            assert payload["text_only"] is None
            assert path["token_count"] == expected["tokens"] == (blocks[-1]["end"] if blocks else 0)
            assert path["trainable_count"] == expected["trained_tokens"]
            assert sum(b["token_count"] for b in blocks if b["trainable"]) == expected["trained_tokens"]
    for node_id, text in entry.get("node_text", {}).items():
        node = payload["nodes"][f"n{node_id}"]
        assert node["text"] == text
        assert len(node["token_ids"]) + 1 == len(node["token_offsets"])


def test_paths_without_text_open_no_sidecar(corpus_server, corpus, tmp_path):
    with_text = corpus_server.get("/v1/trajectories/tr_shared_reply/paths?run_id=spec")
    without = corpus_server.get("/v1/trajectories/tr_shared_reply/paths?run_id=spec&text=false")
    assert "nodes" not in without and "nodes" in with_text
    assert [p["blocks"] for p in without["paths"]] == [p["blocks"] for p in with_text["paths"]]
    # prove it: a run whose tokens sidecar is garbage still answers text=false from the document
    run = tmp_path / "garbage"
    run.mkdir()
    for f in (FIXTURES / "spec").glob("tr_shared_reply.*"):
        shutil.copy(f, run / f.name)
    (run / "tr_shared_reply.tokens.zst").write_bytes(b"not zstd at all")
    with ServerProcess([run]) as server:
        server.wait_indexed()
        blind = server.get("/v1/trajectories/tr_shared_reply/paths?text=false")
        assert blind["text_only"] is None and "tokens_error" not in blind
        assert [p["blocks"] for p in blind["paths"]] == [p["blocks"] for p in with_text["paths"]]
        shown = server.get("/v1/trajectories/tr_shared_reply/paths")
        assert shown["text_only"] == "tokens-unreadable"
        assert "tr_shared_reply.tokens.zst" in shown["tokens_error"]


def test_mirror_text_is_tokens_missing(corpus_server):
    (row,) = all_rows(corpus_server, "mirror-text")
    assert "tokens-missing" in row["summary"]["flags"]
    assert row["missing_sidecars"] == ["experts", "sampling_mask", "tokens"]
    payload = corpus_server.get(f"/v1/trajectories/{row['id']}/paths?run_id=mirror-text")
    assert payload["text_only"] == "tokens-missing" and payload["mode"] == "tokens"
    assert all(p["token_count"] == 0 and p["char_count"] > 0 for p in payload["paths"])
    assert all(node["token_ids"] is None and node["text"] is not None for node in payload["nodes"].values())
    (training,) = all_rows(corpus_server, "mirror-training")
    assert training["missing_sidecars"] == ["experts", "sampling_mask"]
    assert "tokens-missing" not in training["summary"]["flags"]


READING_ROUTES = ["paths", "paths/0/row", "paths/0/messages", "graph", "exchanges", "timeline", "forks?a=0&b=1",
                  "notable", "retokenized", "experts?node=0", "snapshot"]  # every route that reads the record


def test_broken_records_are_listed_with_their_error(corpus_server):
    rows = {row["id"]: row for row in all_rows(corpus_server, "broken")}
    unreadable = {rid: row for rid, row in rows.items() if row.get("unreadable")}
    for record_id in ("tr_bad_version", "tr_no_version", "tr_not_zstd", "tr_not_json", "tr_json_list",
                      "tr_empty_file", "tr_truncated_doc", "tr_no_nodes", "tr_no_status", "tr_no_id",
                      "tr_nodes_swapped", "tr_parent_out_of_range", "tr_ids_mismatch"):
        row = unreadable[record_id]
        assert f"{record_id}.json.zst" in row["error"], row["error"]
        assert row["summary"]["flags"] == ["malformed-record"]
        detail = corpus_server.get(f"/v1/trajectories/{record_id}?run_id=broken")  # the row as listed
        assert detail["unreadable"] is True and detail["error"] == row["error"]
        assert detail["size"] == {"unit": None, "tokens": None, "trainable": None, "longest": None, "samples": None}
        assert detail["capture"] == {"node_count": None, "exchange_count": None, "failure_count": None}
    for route in READING_ROUTES:  # there, but unreadable: 422 with the reason, not 404 ("no such record")
        target = f"/v1/trajectories/tr_bad_version/{route}"
        status, _, body = corpus_server.request(f"{target}{'&' if '?' in route else '?'}run_id=broken")
        assert status == 422, (target, status, body[:200])
        assert "cannot be read" in json.loads(body)["detail"] and "format_version 2" in json.loads(body)["detail"]
    assert "format_version 2" in unreadable["tr_bad_version"]["error"]
    for record_id in ("tr_ok", "tr_future_fields"):
        assert not rows[record_id].get("unreadable")
        paths = corpus_server.get(f"/v1/trajectories/{record_id}/paths?run_id=broken")["paths"]
        assert paths[0]["token_count"] == 7 and paths[0]["trainable_count"] == 3
    assert "malformed-record" in rows["tr_id_mismatch"]["summary"]["flags"]
    run = next(r for r in corpus_server.get("/v1/runs")["data"] if r["id"] == "broken")
    assert run["unreadable"] == len(unreadable)


# -- the other record views -------------------------------------------------------------------------


@pytest.mark.parametrize("directory,record_id,entry", READABLE, ids=READABLE_IDS)
def test_graph_and_exchanges_agree_with_the_oracle(corpus_server, directory, record_id, entry):
    graph = corpus_server.get(f"/v1/trajectories/{record_id}/graph?run_id={directory}")
    assert len(graph["nodes"]) == entry["nodes"]
    assert graph["leaf_node_ids"] == [f"n{n}" for n in entry["leaves"]]
    assert [b["node_id"] for b in graph["branch_points"]] == [f"n{n}" for n in entry["branch_points"]]
    bridged = [c["bridged"] for n in graph["nodes"] for c in n["calls"]]
    assert [None if b == "absent" else b for b in bridged] == entry["bridged"]
    shadowed = {n["node_id"]: n["shadowed_by"] for n in graph["nodes"] if n["shadowed_by"]}
    assert shadowed == {f"n{k}": f"n{v}" for k, v in entry["shadowed_by"].items()}
    train_once = graph["train_once"]
    assert train_once["holds"] and train_once["paths"] == len(entry["paths"])
    model_nodes = sum(1 for n in entry["node_summary"] if n["author"] == "model")
    assert train_once["model_nodes"] == model_nodes
    exchanges = corpus_server.get(f"/v1/trajectories/{record_id}/exchanges?run_id={directory}")["data"]
    calls = [x for x in exchanges if x["kind"] == "call"]
    assert len(calls) == entry["calls"]
    assert len(exchanges) - len(calls) == len(entry["failures"])
    assert [x["sequence"] for x in exchanges] == list(range(len(exchanges)))
    times = [x["started_at"] for x in exchanges if x["started_at"]]
    assert times == sorted(times)


def test_exchanges_show_failures(corpus_server):
    exchanges = corpus_server.get("/v1/trajectories/tr_tokens/exchanges?run_id=spec")["data"]
    assert [x["kind"] for x in exchanges] == ["failure", "call"]
    assert exchanges[0]["http_status"] == 500 and exchanges[0]["error"] == "boom"


def test_forks_compare_two_paths(corpus_server):
    record = "tr_86f0b750382298e2"
    entry = ORACLE["real-like"]["records"][record]
    paths = corpus_server.get(f"/v1/trajectories/{record}/paths?run_id=real-like")["paths"]
    for a in range(len(paths)):
        for b in range(len(paths)):
            if a == b:
                corpus_server.get(f"/v1/trajectories/{record}/forks?a={a}&b={b}&run_id=real-like", expect=400)
                continue
            fork = corpus_server.get(f"/v1/trajectories/{record}/forks?a={a}&b={b}&run_id=real-like")
            nodes_a, nodes_b = entry["paths"][a]["path"], entry["paths"][b]["path"]
            shared = 0
            while shared < min(len(nodes_a), len(nodes_b)) and nodes_a[shared] == nodes_b[shared]:
                shared += 1
            assert fork["shared_nodes"] == shared
            assert fork["last_shared_node_id"] == (f"n{nodes_a[shared - 1]}" if shared else None)
            assert fork["a_nodes_after"] == len(nodes_a) - shared
            assert fork["b_nodes_after"] == len(nodes_b) - shared
            shared_ids = {f"n{n}" for n in nodes_a[:shared]}
            assert fork["a_blocks"] == [x for x in paths[a]["blocks"] if x["node_id"] not in shared_ids]
            assert fork["b_blocks"] == [x for x in paths[b]["blocks"] if x["node_id"] not in shared_ids]
            assert fork["shared_tokens"] == sum(x["token_count"] for x in paths[a]["blocks"]
                                                if x["node_id"] in shared_ids)
    corpus_server.get(f"/v1/trajectories/{record}/forks?a=0&b={len(paths)}&run_id=real-like", expect=404)
    corpus_server.get(f"/v1/trajectories/{record}/forks?a=x&b=1&run_id=real-like", expect=400)


# -- listing: filters, sorts, paging, reward range, health ----------------------------------------------


def created_of(row):
    return row["created_ts"]


SORT_VALUE = {
    "step": lambda r: r["step"],
    "task": lambda r: r["task_id"],
    "reward": reward_of,
    "turns": lambda r: r["capture"]["exchange_count"],
    "tokens": lambda r: r["summary"]["tokens"],
    "health": lambda r: len([f for f in r["summary"]["flags"] if f != "bridged-unknown"]),
    "created": created_of,
}


def expected_order(rows, key, order):
    """Sorted by `key` in `order` with nulls last; ties newest first, then by id."""
    def newest_first(row):
        return (row["created_ts"] is None, -(row["created_ts"] or 0), row["id"])

    base = sorted(rows, key=newest_first)
    value = SORT_VALUE[key]
    present = [r for r in base if value(r) is not None]
    missing = [r for r in base if value(r) is None]
    present.sort(key=value, reverse=order == "desc")
    return [r["id"] for r in present + missing]


@pytest.mark.parametrize("run_id", ["groups", "spec", "real-like", "broken"])
@pytest.mark.parametrize("key", SORT_KEYS)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_sort_every_key_both_orders_nulls_last(corpus_server, run_id, key, order):
    rows = all_rows(corpus_server, run_id)
    listing = corpus_server.get(f"/v1/trajectories?run_id={run_id}&sort={key}&order={order}&limit=1000")
    assert listing["sort"] == {"key": key, "order": order}
    assert [r["id"] for r in listing["data"]] == expected_order(rows, key, order)


def test_default_order_is_newest_first(corpus_server):
    listing = corpus_server.get("/v1/trajectories?run_id=real-like")
    assert listing["sort"] == {"key": "created", "order": "desc"}
    assert [r["id"] for r in listing["data"]] == expected_order(listing["data"], "created", "desc")


def test_bad_sort_is_refused(corpus_server):
    assert "sort must be one of" in corpus_server.get("/v1/trajectories?sort=mean", expect=400)["detail"]
    corpus_server.get("/v1/trajectories?flag=nonsense", expect=400)
    corpus_server.get("/v1/trajectories?step=two", expect=400)
    corpus_server.get("/v1/trajectories?run_id=nope", expect=404)


def as_text(value) -> str:
    """How the API writes an annotation value in filters and counts."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def matches(row, step=None, task_id=None, status=None, annotations=(), q=None):
    if step is not None and row["step"] != step:
        return False
    if task_id is not None and row["task_id"] != task_id:
        return False
    if status is not None and row["status"] != status:
        return False
    for key, value in annotations:
        if key not in row["annotations"] or row["annotations"][key] is None:
            return False
        if value is not None and as_text(row["annotations"][key]) != value:
            return False
    if q is not None:
        text = " ".join([row["id"], json.dumps(row["meta"]), json.dumps(row["annotations"])]).lower()
        return q.lower() in text
    return True


FILTER_CASES = [
    ("groups", "step=2", {"step": 2}),
    ("groups", "step=2&task_id=task-c", {"step": 2, "task_id": "task-c"}),
    ("groups", "annotation=stop_reason%3Derror", {"annotations": [("stop_reason", "error")]}),
    ("groups", "annotation=reward%3D1&annotation=stop_reason%3Dcomplete",
     {"annotations": [("reward", "1"), ("stop_reason", "complete")]}),
    ("spec", "annotation=reward", {"annotations": [("reward", None)]}),
    ("real-like", "status=failed", {"status": "failed"}),
    ("groups", "q=TASK-B", {"q": "task-b"}),
    ("groups", "q=tr_5", {"q": "tr_5"}),
    ("groups-text", "step=1&annotation=reward%3D0", {"step": 1, "annotations": [("reward", "0")]}),
]


@pytest.mark.parametrize("run_id,query,criteria", FILTER_CASES, ids=[c[1] for c in FILTER_CASES])
def test_filters_health_and_reward_range(corpus_server, run_id, query, criteria):
    rows = all_rows(corpus_server, run_id)
    kept = [r for r in rows if matches(r, **criteria)]
    assert kept, "a filter case must keep something"
    listing = corpus_server.get(f"/v1/trajectories?run_id={run_id}&{query}&limit=1000")
    assert sorted(r["id"] for r in listing["data"]) == sorted(r["id"] for r in kept)
    assert listing["total"] == len(kept)
    counts = {}
    for row in kept:
        for flag in row["summary"]["flags"]:
            counts[flag] = counts.get(flag, 0) + 1
    assert dict(listing["health"]["counts"]) == counts
    assert listing["health"]["unit"] == "rollouts"
    rewards = [reward_of(r) for r in kept if reward_of(r) is not None]
    assert listing["reward_range"] == ({"min": min(rewards), "max": max(rewards)} if rewards else None)
    for flag, count in counts.items():
        flagged = corpus_server.get(f"/v1/trajectories?run_id={run_id}&{query}&flag={flag}&limit=1000")
        assert flagged["total"] == count
        assert all(flag in r["summary"]["flags"] for r in flagged["data"])
        assert flagged["health"] == listing["health"], "the band is counted before the flag filter"


def test_flag_filter_and_reward_range_over_all_rows(corpus_server):
    listing = corpus_server.get("/v1/trajectories?run_id=groups-text&task_id=task-c&limit=1")
    assert listing["reward_range"] == {"min": 0.2, "max": 0.9}
    assert len(listing["data"]) == 1 and listing["total"] == 4
    everything = corpus_server.get("/v1/trajectories?flag=forked&limit=1000")
    forked = [(d, rid) for d, rid, e in oracle_records() if len(e.get("paths", [])) > 1]
    assert sorted((r["run_id"], r["id"]) for r in everything["data"]) == sorted(forked)


def test_paging_walks_every_row_once(corpus_server):
    rows = all_rows(corpus_server, "groups")
    seen, cursor = [], ""
    while True:
        listing = corpus_server.get(f"/v1/trajectories?run_id=groups&sort=reward&limit=6{cursor}")
        assert len(listing["data"]) <= 6 and listing["total"] == len(rows)
        seen += [r["id"] for r in listing["data"]]
        if not listing["has_more"]:
            assert listing["next_cursor"] is None
            break
        cursor = f"&cursor={listing['next_cursor']}"
    assert seen == expected_order(rows, "reward", "desc")
    assert len(corpus_server.get("/v1/trajectories?limit=0")["data"]) == 1
    assert len(corpus_server.get("/v1/trajectories?limit=junk")["data"]) == min(100, sum(
        len(ORACLE[d]["records"]) for d in RECORD_DIRS))
    assert corpus_server.get("/v1/trajectories?run_id=spec&cursor=1000")["data"] == []


def test_listing_without_run_covers_every_run(corpus_server):
    listing = corpus_server.get("/v1/trajectories?limit=1000")
    assert listing["total"] == sum(len(ORACLE[d]["records"]) for d in RECORD_DIRS)
    assert listing["indexed_trajectories"] == listing["total"] and listing["indexing"] is False


# -- one trajectory ------------------------------------------------------------------------------------------


def test_trajectory_header(corpus_server):
    header = corpus_server.get("/v1/trajectories/tr_tokens?run_id=spec")
    assert header["id"] == "tr_tokens" and header["run_id"] == "spec" and header["project"] == "skycap-v1"
    assert header["step"] == 3 and header["mode"] == "tokens"
    assert header["record_problems"] == [] and header["missing_sidecars"] == []
    assert "summary" not in header and "created_ts" not in header
    assert not any(key.startswith("_") for key in header)
    assert corpus_server.get("/v1/trajectories/tr_tokens") == header


def test_ids_are_checked_and_collisions_need_a_run(tmp_path):
    for name in ("first", "second"):
        shutil.copytree(FIXTURES / "spec", tmp_path / "root" / name)
    with ServerProcess([tmp_path / "root"]) as server:
        server.wait_indexed()
        detail = server.get("/v1/trajectories/tr_tokens", expect=400)["detail"]
        assert "run_id" in detail and "first" in detail and "second" in detail
        assert server.get("/v1/trajectories/tr_tokens?run_id=second")["run_id"] == "second"
        server.get("/v1/trajectories/tr_tokens/paths", expect=400)
        server.get("/v1/trajectories/tr_tokens/paths?run_id=first")
        for bad in ("..", "tr tokens", "a/b", "..%2Ftr_tokens", "%00"):
            assert server.request(f"/v1/trajectories/{quote(bad, safe='%')}")[0] in (400, 404)
        server.get("/v1/trajectories/tr_nothing", expect=404)
        server.get("/v1/trajectories/tr_tokens/nothing", expect=404)
        server.get("/v1/nothing", expect=404)


# -- conditional and compressed answers ----------------------------------------------------------------------


def test_listings_send_an_etag_and_answer_304(corpus_server):
    for path in ("/v1/runs", "/v1/trajectories?run_id=groups&sort=reward", "/v1/groups?run_id=groups",
                 "/v1/groups/1~a?run_id=groups"):
        for _ in range(20):  # the background verification may publish in between: a new generation, a new tag
            status, headers, body = corpus_server.request(path)
            assert status == 200 and headers["ETag"]
            status, again, body = corpus_server.request(path, headers={"If-None-Match": headers["ETag"]})
            if again["ETag"] == headers["ETag"]:
                break
        assert status == 304 and body == b"" and again["ETag"] == headers["ETag"]
    _, first, _ = corpus_server.request("/v1/trajectories?run_id=groups")
    _, other, _ = corpus_server.request("/v1/trajectories?run_id=spec")
    assert first["ETag"] != other["ETag"]


def test_json_is_gzipped_when_asked(corpus_server):
    path = "/v1/trajectories?run_id=groups"
    status, headers, body = corpus_server.request(path, headers={"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(body)) == corpus_server.get(path)
    _, plain, _ = corpus_server.request(path)
    assert plain["Content-Encoding"] is None
    _, small, _ = corpus_server.request("/healthz", headers={"Accept-Encoding": "gzip"})
    assert small["Content-Encoding"] is None


def test_head_answers_headers_only(corpus_server):
    status, headers, body = corpus_server.request("/v1/runs", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0
    assert headers["Content-Type"] == "application/json; charset=utf-8"
