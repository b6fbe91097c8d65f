"""The filtered set: `/v1/trajectories/export` and `skycap-viewer export`, on the real server over the corpus.

An export is every row the listing's filters keep, in the listing's order, one listing row a line:
checked against the listing itself (its `total` and its rows, page by page) for each kind of filter,
its trainer rows (`format=rows`) against skycap's own figures (`oracle.json`), and the terminal's
lines against the server's, byte for byte.
"""

import json
import os
import shutil
import socket
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from skycap_viewer.catalog.store import READERS
from skycap_viewer.views.run import export
from tests.support.cli import run_cli
from tests.support.corpus import BROKEN, PULLED, copy_runs
from tests.support.in_process import InProcess, in_process_fixture
from tests.support.oracle import oracle_records, trained_paths
from tests.support.records import copy_record
from tests.support.server_process import served, wait_for

FILTERS = [  # (run, listing query): every kind of filter, alone and together, and sorts
    ("groups", ""),
    ("groups", "step=3"),
    ("groups", "step=3&status=finished"),
    ("groups", "task_id=task-a"),
    ("groups", "flag=truncated"),
    ("groups", "exclude_flag=truncated"),
    ("groups", "flag=forked&exclude_flag=truncated"),
    ("groups", "reward_min=0.5"),
    ("groups", "reward_min=0&reward_max=0.5"),
    ("groups", "annotation=stop_reason"),
    ("groups", "sort=reward&order=asc"),
    ("groups2", "step=2&sort=tokens"),
    ("groups2", "q=task-f"),  # three characters or more: the trigram index
    ("groups2", "q=F"),  # fewer: looked for in each row's text, in any case
    ("spec", "q=utf"),
    ("spec", "status=finished&sort=turns&order=asc"),
    ("broken", "flag=malformed-record"),
    ("real-like", "exclude_flag=no-logprobs&sort=health"),
]


def lines_of(body: bytes) -> list[dict]:
    assert body == b"" or body.endswith(b"\n")
    return [json.loads(line) for line in body.splitlines()]


def exported(server, run_id: str, query: str = "") -> tuple:
    status, headers, body = server.request(f"/v1/trajectories/export?run_id={quote(run_id)}&{query}")
    assert status == 200, body[:300]
    return headers, body


def listed(server, run_id: str, query: str = "") -> tuple[int, list[dict]]:
    """(the listing's total, its rows) walked page by page through `next_cursor`."""
    rows, cursor = [], ""
    while True:
        page = server.get(f"/v1/trajectories?run_id={quote(run_id)}&limit=7&{query}{cursor}")
        rows += page["data"]
        if not page["has_more"]:
            return page["total"], rows
        cursor = f"&cursor={page['next_cursor']}"


@pytest.fixture(scope="module")
def pulled_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("pulled") / "pulled"
    shutil.copytree(PULLED, root)
    yield from served([root])


@pytest.mark.parametrize("run_id,query", FILTERS, ids=[f"{r}?{q}" for r, q in FILTERS])
def test_the_export_is_the_listing_whole(corpus_server, run_id, query):
    total, rows = listed(corpus_server, run_id, query)
    _, body = exported(corpus_server, run_id, query)
    assert lines_of(body) == rows and len(rows) == total > 0


def test_the_filters_choose_and_are_not_ignored(corpus_server):
    every = lines_of(exported(corpus_server, "groups")[1])
    step3 = lines_of(exported(corpus_server, "groups", "step=3")[1])
    truncated = lines_of(exported(corpus_server, "groups", "flag=truncated")[1])
    assert 0 < len(step3) < len(every) and {row["step"] for row in step3} == {3}
    assert 0 < len(truncated) < len(every) and all("truncated" in row["flags"] for row in truncated)
    untruncated = lines_of(exported(corpus_server, "groups", "exclude_flag=truncated")[1])
    assert len(truncated) + len(untruncated) == len(every)


@pytest.mark.parametrize("trained", ["true", "false", "null"])
def test_trained_as_the_run_index_says(pulled_server, trained):
    for run_id in ("train", "old"):
        total, rows = listed(pulled_server, run_id, f"trained={trained}")
        lines = lines_of(exported(pulled_server, run_id, f"trained={trained}")[1])
        assert lines == rows and len(lines) == total
        assert all(row.get("trained") is {"true": True, "false": False, "null": None}[trained] for row in lines)
    assert sum(len(lines_of(exported(pulled_server, "train", f"trained={t}")[1])) for t in ("true", "false", "null")) \
        == len(lines_of(exported(pulled_server, "train")[1]))


def test_every_row_not_one_page(corpus_server):
    page = corpus_server.get("/v1/trajectories?run_id=groups2&limit=5")
    lines = lines_of(exported(corpus_server, "groups2", "limit=5&cursor=10")[1])  # paging asks are not filters
    assert page["has_more"] and len(lines) == page["total"] > 5
    assert lines[:5] == page["data"]


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    """A run of more rows than the largest listing page (and than one batch of the export)."""
    run = tmp_path_factory.mktemp("big") / "big"
    run.mkdir()
    for n in range(BIG_RUN):
        copy_record(BROKEN, "tr_ok", run, f"tr_{n:05d}", edit=lambda d, n=n: d["annotations"].update(reward=n % 7))
    yield from served([run])


BIG_RUN = export.BATCH + 50


@pytest.mark.slow
def test_more_rows_than_the_largest_page(big_server):
    first = big_server.get("/v1/trajectories?run_id=big&limit=1000&sort=reward")
    rest = big_server.get(f"/v1/trajectories?run_id=big&limit=1000&sort=reward&cursor={first['next_cursor']}")
    headers, body = exported(big_server, "big", "sort=reward&limit=1000")
    lines = lines_of(body)
    assert headers["Transfer-Encoding"] == "chunked"
    assert len(lines) == first["total"] == BIG_RUN > 1000 and not rest["has_more"]
    assert lines == first["data"] + rest["data"]  # batch after batch, in the listing's order
    assert len({line["id"] for line in lines}) == BIG_RUN


@pytest.mark.slow
def test_a_client_that_does_not_read_holds_up_nobody(big_server, tmp_path_factory):
    """An export left unread (the server's send blocks on a full socket) keeps neither the other requests
    nor the watcher waiting: a record written meanwhile is indexed and listed, and the export, read at
    last, is the set as it was asked for."""
    run = big_server.get("/v1/runs")["data"][0]
    with socket.create_connection(("127.0.0.1", big_server.port), timeout=60) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        connection.sendall(b"GET /v1/trajectories/export?run_id=big HTTP/1.1\r\nHost: localhost\r\n"
                           b"Connection: close\r\n\r\n")
        reply = connection.recv(1024)
        assert reply.startswith(b"HTTP/1.1 200")
        copy_record(BROKEN, "tr_ok", run["path"], "tr_written_meanwhile")
        wait_for(lambda: big_server.get("/v1/trajectories?run_id=big&limit=1")["total"] == BIG_RUN + 1,
                 "the record written during the export is listed")
        reply += drained(connection)
    lines = lines_of(dechunked(reply.partition(b"\r\n\r\n")[2]))
    assert len(lines) == BIG_RUN and "tr_written_meanwhile" not in {line["id"] for line in lines}
    (Path(run["path"]) / "tr_written_meanwhile.json.zst").unlink()
    for sidecar in Path(run["path"]).glob("tr_written_meanwhile.*"):
        sidecar.unlink()
    wait_for(lambda: big_server.get("/v1/trajectories?run_id=big&limit=1")["total"] == BIG_RUN, "it is gone again")


def drained(connection) -> bytes:
    """The rest of a reply, through a receive window opened again after the small one the test needed:
    through a 4 KB window the sender waits on its persist timer for each few KB, and the export's 1.5 MB
    took 40 s to drain (the window's clamp is fixed at connect, so only raising the clamp opens it)."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    if hasattr(socket, "TCP_WINDOW_CLAMP"):  # Linux
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, 65535)
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def test_headers_say_a_download_of_json_lines_sent_in_chunks(corpus_server):
    headers, _ = exported(corpus_server, "spec")
    assert headers["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert headers["Content-Disposition"] == 'attachment; filename="spec-rollouts.jsonl"'
    assert headers["Transfer-Encoding"] == "chunked" and "Content-Length" not in headers
    assert headers["Cache-Control"] == "no-store" and headers["X-Content-Type-Options"] == "nosniff"
    rows_headers, _ = exported(corpus_server, "spec", "format=rows")
    assert rows_headers["Content-Disposition"] == 'attachment; filename="spec-rows.jsonl"'


def test_the_body_is_chunked_on_the_wire(corpus_server):
    with socket.create_connection(("127.0.0.1", corpus_server.port), timeout=30) as connection:
        connection.sendall(b"GET /v1/trajectories/export?run_id=groups2 HTTP/1.1\r\nHost: localhost\r\n"
                           b"Connection: close\r\n\r\n")
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"\r\nTransfer-Encoding: chunked" in head
    assert dechunked(body) == exported(corpus_server, "groups2")[1]


def dechunked(body: bytes) -> bytes:
    """A chunked body's bytes; it must end with the last (empty) chunk."""
    joined = b""
    while True:
        size, _, body = body.partition(b"\r\n")
        size = int(size, 16)
        if not size:
            assert body == b"\r\n"
            return joined
        joined, body = joined + body[:size], body[size + 2:]


def test_an_http_1_0_client_gets_the_lines_until_the_connection_closes(corpus_server):
    status, reply = corpus_server.raw("GET /v1/trajectories/export?run_id=groups2 HTTP/1.0\nHost: localhost\n")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert status == 200 and b"Transfer-Encoding" not in head and b"\r\nConnection: close" in head
    assert body == exported(corpus_server, "groups2")[1]


def test_head_sends_the_headers_only(corpus_server):
    status, headers, body = corpus_server.request("/v1/trajectories/export?run_id=spec", method="HEAD")
    assert status == 200 and body == b"" and headers["Content-Disposition"].endswith('-rollouts.jsonl"')


def test_bad_asks_are_the_listings_errors(corpus_server):
    for query in ("step=x", "flag=nope", "exclude_flag=nope", "sort=nope", "reward_min=abc", "trained=maybe"):
        listing = corpus_server.get(f"/v1/trajectories?run_id=groups&{query}", expect=400)
        assert corpus_server.get(f"/v1/trajectories/export?run_id=groups&{query}", expect=400) == listing, query
    assert corpus_server.get("/v1/trajectories/export?run_id=nope", expect=404) == {"detail": "no run nope"}
    assert "format must be one of rollouts|rows" in corpus_server.get(
        "/v1/trajectories/export?run_id=spec&format=csv", expect=400)["detail"]
    assert "pass run_id" in corpus_server.get("/v1/trajectories/export", expect=400)["detail"]
    assert "missing=true" in corpus_server.get("/v1/trajectories/export?run_id=spec&missing=true", expect=400)["detail"]


# -- format=rows: each record's trainer rows -----------------------------------------------------


def token_records():
    return [(d, rid, e) for d, rid, e in oracle_records()
            if d != "broken" and e.get("paths") and all(p["tokens"] is not None for p in e["paths"])]


@pytest.fixture(scope="module")
def rows_by_record(corpus_server):
    runs = sorted({d for d, _, _ in oracle_records()})
    return {(run, line["id"]): line for run in runs
            for line in lines_of(exported(corpus_server, run, "format=rows")[1])}


@pytest.mark.parametrize("directory,record_id,entry", token_records(),
                         ids=[f"{d}/{r}" for d, r, _ in token_records()])
def test_rows_agree_with_the_oracle(rows_by_record, directory, record_id, entry):
    line = rows_by_record[(directory, record_id)]
    if line.get("row_error"):  # a mirror without its tokens sidecar: said, not guessed
        assert "tokens sidecar is listed but not in this directory" in line["row_error"]
        assert "tokens-missing" in line["flags"]
        return
    rows = line["rows"]
    assert [row["path"] for row in rows] == list(range(len(entry["paths"])))
    for row, expected in zip(rows, trained_paths(entry), strict=True):
        assert row["leaf_node_id"] == f"n{expected['leaf']}" and row["trains"] == expected["trains"]
        assert len(row["input_ids"]) == len(row["loss_mask"]) == len(row["logprobs"]) == expected["tokens"]
        assert sum(row["loss_mask"]) == expected["trained_tokens"] and set(row["loss_mask"]) <= {0, 1}
        blocks = row["blocks"]
        assert [b["node_id"] for b in blocks if b["kind"] == "sampled"] == [f"n{t}" for t in expected["targets"]
                                                                          if sampled(entry, t)]
        assert all(a["end"] == b["start"] for a, b in zip(blocks, blocks[1:], strict=False))
        for block in blocks:  # the mask is 1 exactly on the sampled blocks
            assert set(row["loss_mask"][block["start"]:block["end"]]) == {int(block["kind"] == "sampled")}
    by_leaf = {row["leaf_node_id"]: row for row in rows}
    for skycap in entry.get("trained_by_samples") or []:  # what skycap's own samples train
        row = by_leaf[f"n{skycap['leaf']}"]
        assert len(row["input_ids"]) == skycap["tokens"] and sum(row["loss_mask"]) == skycap["trained_tokens"]


def sampled(entry: dict, node_id: int) -> bool:
    """Whether a target sampled any token (one that sampled none has no block)."""
    node = entry["node_summary"][node_id]
    return node["tokens"] - (node["sampled_start"] or 0) > 0


def test_rows_are_the_paths_tokens(corpus_server, rows_by_record):
    for run_id, record_id in (("spec", "tr_forked_unbridged"), ("spec", "tr_utf8"), ("rules", "tr_rule_two_rows")):
        paths = corpus_server.get(f"/v1/trajectories/{record_id}/paths?run_id={run_id}")
        for path, row in zip(paths["paths"], rows_by_record[(run_id, record_id)]["rows"], strict=True):
            nodes = [paths["nodes"][node_id] for node_id in path["node_ids"]]
            assert row["input_ids"] == [t for node in nodes for t in node["token_ids"]]
            known = [lp if node["has_logprobs"] else None for node in nodes for lp in node["logprobs"]]
            assert row["logprobs"] == known
            assert [(b["node_id"], b["start"], b["end"], b["kind"]) for b in row["blocks"]] == \
                [(b["node_id"], b["start"], b["end"], b["kind"]) for b in path["blocks"]]


def test_records_without_token_rows_say_why(rows_by_record):
    texts = [(d, rid) for d, rid, e in oracle_records() if d != "broken" and e["mode"] == "text"]
    assert texts
    for key in texts:
        assert rows_by_record[key]["row_error"] == "the record was captured in text mode (no token ids)", key
        assert "rows" not in rows_by_record[key]
    unreadable = [line for (run, _), line in rows_by_record.items() if run == "broken" and line.get("unreadable")]
    assert unreadable and all(line["row_error"].startswith("the record cannot be read: ") for line in unreadable)
    every = list(rows_by_record.values())
    assert all(("rows" in line) != ("row_error" in line) for line in every)


def test_a_rewritten_record_is_not_given_another_version_s_rows(tmp_path):
    """The line is the index's row; a document replaced since then gets a `row_error`, not its new rows."""
    (tmp_path / "run").mkdir()
    copy_record(BROKEN, "tr_ok", tmp_path / "run", "tr_ok")
    web = InProcess(tmp_path / "run")
    try:
        ask = export.ExportAsk.parse({"format": ["rows"]})
        snapshot = web.catalog.snapshots()[0]
        spool = export.spooled_rows(snapshot, ask)
        document = tmp_path / "run" / "tr_ok.json.zst"
        stat = document.stat()
        os.utime(document, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
        line = json.loads(b"".join(export.exported(spool, snapshot.location.path, ask)))
        assert line["row_error"].startswith("the record was rewritten after it was listed")
    finally:
        web.close()


# -- what the server holds while an export is sent ----------------------------------------------------


@pytest.fixture
def small_batches(tmp_path, monkeypatch):
    """`groups/` and `groups2/`, exported in batches of 5 rows spooled to disk past 4 KiB."""
    monkeypatch.setattr(export, "BATCH", 5)  # every run spans batches: each starts where the one before ended
    monkeypatch.setattr(export, "SPOOL_MEMORY", 4096)
    return copy_runs(tmp_path / "root", "groups", "groups2")


web = in_process_fixture("small_batches")


def test_batches_follow_one_another_in_the_listing_order(web):
    for query in ("", "sort=reward&order=asc", "step=2&sort=tokens", "exclude_flag=forked", "q=task&sort=task"):
        listing = web.json(f"/v1/trajectories?run_id=groups2&limit=1000&{query}")
        _, answer = web.server.api.export({"run_id": ["groups2"], **params_of(query)})
        assert lines_of(b"".join(answer.pieces)) == listing["data"], query
        assert listing["total"] > 2 * export.BATCH, query  # three batches at least
        answer.close()


def test_the_index_is_let_go_before_the_first_byte(web):
    """The rows are read into a spool (on disk past its memory) in one transaction, which ends before
    anything is sent: a client that reads slowly holds no read transaction of the index."""
    _, answer = web.server.api.export({"run_id": ["groups2"]})
    snapshot = web.catalog.snapshot("groups2")
    assert not READERS.connection(snapshot.database).in_transaction
    first = next(answer.pieces)
    assert first.startswith(b'{"run_id":"groups2"') and len(first) <= export.SEND_BYTES
    answer.close()
    spool = export.spooled_rows(snapshot, export.ExportAsk.parse({}))
    assert spool._rolled  # past SPOOL_MEMORY: a file, not memory
    assert len(spool.readlines()) == snapshot.row_count
    spool.close()


def params_of(query: str) -> dict:
    params = {}
    for pair in filter(None, query.split("&")):
        key, _, value = pair.partition("=")
        params.setdefault(key, []).append(value)
    return params


def test_a_record_named_export_is_still_a_record(tmp_path):
    (tmp_path / "names").mkdir()
    copy_record(BROKEN, "tr_ok", tmp_path / "names", "export")
    web = InProcess(tmp_path / "names")
    try:
        assert web.json("/v1/trajectories/%65xport?run_id=names")["id"] == "export"  # an id, percent-encoded
        assert web.json("/v1/trajectories/export/paths?run_id=names")["trajectory"]["id"] == "export"
        response = web.get("/v1/trajectories/export?run_id=names")  # the export, written as such
        assert response.headers["content-type"] == "application/x-ndjson; charset=utf-8"
    finally:
        web.close()


def test_the_file_name_keeps_only_safe_characters(tmp_path):
    run = tmp_path / 'we"ird\trun;name=x'
    run.mkdir()
    copy_record(BROKEN, "tr_ok", run, "tr_ok")
    web = InProcess(tmp_path)
    try:
        response = web.get(f"/v1/trajectories/export?{urlencode({'run_id': run.name})}")
        assert response.status == 200
        assert response.headers["content-disposition"] == 'attachment; filename="we_ird_run_name_x-rollouts.jsonl"'
    finally:
        web.close()


# -- the terminal -------------------------------------------------------------------------------------


@pytest.mark.parametrize("run_id,query,options", [
    ("groups", "step=2&flag=truncated", ["--step", "2", "--flag", "truncated"]),
    ("groups", "exclude_flag=forked&status=finished&sort=reward&order=asc",
     ["--exclude-flag", "forked", "--status", "finished", "--sort", "reward", "--order", "asc"]),
    ("groups2", "q=task-f&reward_min=0.5", ["--q", "task-f", "--reward-min", "0.5"]),
    ("spec", "format=rows", ["--format", "rows"]),
    ("rules", "format=rows&annotation=reward", ["--format", "rows", "--annotation", "reward"]),
])
@pytest.mark.slow
def test_the_command_writes_the_servers_lines(corpus_server, corpus, run_id, query, options):
    done = run_cli("export", corpus / run_id, *options)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.encode() == exported(corpus_server, run_id, query)[1]
    assert done.stdout.count("\n") == listed(corpus_server, run_id, query.replace("format=rows", ""))[0] > 0


@pytest.mark.slow
def test_the_command_picks_one_run_of_a_folder(corpus_server, corpus):
    done = run_cli("export", corpus, "--run-id", "spec", "--status", "finished")
    assert done.returncode == 0 and done.stdout.encode() == exported(corpus_server, "spec", "status=finished")[1]


@pytest.mark.slow
def test_the_command_refuses_in_one_line(corpus, tmp_path):
    for args, said in [
        ((corpus / "groups", "--step", "x"), "skycap-viewer: step must be a number, not 'x'\n"),
        ((corpus / "groups", "--flag", "nope"), "skycap-viewer: flag must be one of "),
        ((corpus,), "skycap-viewer: "),
        ((corpus, "--run-id", "nope"), "skycap-viewer: no run nope under "),
        ((tmp_path / "nothing-here",), "skycap-viewer: not a directory: "),
    ]:
        done = run_cli("export", *args)
        assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith(said), (args, done.stderr)
        assert done.stderr.count("\n") == 1
