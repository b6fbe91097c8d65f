"""Bad input: every damaged record is listed and explained, every good one still served.

One server watches a folder with a run of damaged records (`tests/support/bad_records.py`: the corpus's
`broken/` records plus generated damage) next to a good run. For each damaged record the
listing, the record's own routes and `skycap-viewer check` must name the problem; nothing may
answer 5xx, and the good run must stay fully viewable. Special files (a FIFO), symlink loops
and huge documents get their own servers. (Hypothesis mutations of documents fed to the readers
in-process are in `test_reader_fuzz.py`.)
"""

import copy
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from skycap_viewer.record.frames import compress
from tests.support.bad_records import BAD_CASES, BAD_IDS, restore_permissions, write_bad_run
from tests.support.cli import run_cli
from tests.support.corpus import BROKEN, FIXTURES
from tests.support.records import copy_record, load_document, write_text_record
from tests.support.server_process import ServerProcess, served

RECORD_ROUTES = ("", "/paths", "/paths?text=false", "/graph", "/exchanges", "/timeline")


def strict_json(body: bytes):
    """Parse JSON as a browser does: NaN and Infinity are not JSON."""

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(body, parse_constant=refuse)


def get_json(server, path, expect=200):
    status, headers, body = server.request(path)
    assert status == expect, f"GET {path}: {status} {body[:300]!r}"
    assert headers["Content-Type"].startswith("application/json"), path
    return strict_json(body)


def all_rows(server, run_id) -> dict:
    listing = get_json(server, f"/v1/trajectories?run_id={run_id}&limit=1000")
    assert not listing["has_more"]
    return {row["id"]: row for row in listing["data"]}


def row_flags(row) -> list:
    return (row.get("summary") or {}).get("flags") or row.get("flags") or []


def record_url(record_id, run_id, route=""):
    separator = "&" if "?" in route else "?"
    return f"/v1/trajectories/{quote(record_id, safe='')}{route}{separator}run_id={run_id}"


@pytest.fixture(scope="module")
def bad_tree(tmp_path_factory):
    """`root/bad`: every bad case; `root/good`: the corpus's spec records, untouched."""
    root = tmp_path_factory.mktemp("bad-input")
    write_bad_run(root / "bad")
    shutil.copytree(FIXTURES / "spec", root / "good")
    yield root
    restore_permissions(root)


@pytest.fixture(scope="module")
def server(bad_tree):
    yield from served([bad_tree])


@pytest.fixture(scope="module")
def bad_rows(server):
    return all_rows(server, "bad")


@pytest.fixture(scope="module")
def check_output(bad_tree):
    result = run_cli("check", bad_tree / "bad")
    return result


def test_both_runs_are_served(server, bad_rows):
    runs = {run["id"]: run for run in get_json(server, "/v1/runs")["data"]}
    assert set(runs) == {"bad", "good"}
    assert runs["bad"]["unreadable"] == sum(bool(row.get("unreadable")) for row in bad_rows.values())
    assert runs["bad"]["unreadable"] >= sum(case.expect == "unreadable" for case in BAD_CASES)
    assert not runs["good"]["unreadable"]


@pytest.mark.parametrize("sort", ["step", "task", "reward", "turns", "tokens", "health", "created"])
def test_hostile_values_sort_and_group(server, sort):
    """Junk, huge and missing steps, tasks, rewards and times in one run: every order and grouping works."""
    for order in ("asc", "desc"):
        listed = get_json(server, f"/v1/trajectories?run_id=bad&sort={sort}&order={order}&limit=1000")
        assert len(listed["data"]) == len(BAD_CASES)
        groups = get_json(server, f"/v1/groups?run_id=bad&sort={sort}&order={order}&limit=1000")
        for group in groups["data"]:
            get_json(server, f"/v1/groups/{quote(group['key'], safe='')}?run_id=bad")


def test_every_document_is_listed_once(bad_tree, bad_rows):
    on_disk = {
        name[: -len(".json.zst")] for name in os.listdir(bad_tree / "bad") if name.endswith(".json.zst")
    }
    assert set(bad_rows) == on_disk == set(BAD_IDS)


def test_the_good_run_stays_fully_viewable(server, bad_tree):
    rows = all_rows(server, "good")
    assert set(rows) == {p.name[: -len(".json.zst")] for p in (bad_tree / "good").glob("*.json.zst")}
    for record_id, row in rows.items():
        assert not row.get("unreadable"), row
        assert "malformed-record" not in row_flags(row), record_id
        for route in RECORD_ROUTES:
            get_json(server, record_url(record_id, "good", route))


@pytest.mark.parametrize("case", BAD_CASES, ids=BAD_IDS)
def test_a_bad_records_row_and_messages_are_sent_or_refused_in_one_line(case, server):
    for answer in ("row", "messages"):
        status, _, body = server.request(record_url(case.record_id, "bad", f"/paths/0/{answer}"))
        payload = strict_json(body)
        assert status in (200, 400, 404, 422), f"{answer}: {status} {body[:500]!r}"
        if status != 200:
            assert payload["detail"] and "\n" not in payload["detail"], payload


@pytest.mark.parametrize("case", BAD_CASES, ids=BAD_IDS)
def test_the_server_names_the_problem(case, server, bad_rows):
    row = bad_rows[case.record_id]
    answers = {}
    for route in RECORD_ROUTES:
        status, _, body = server.request(record_url(case.record_id, "bad", route))
        assert status < 500, f"{route}: {status} {body[:500]!r}"
        answers[route] = (status, strict_json(body))
    expected = set(case.expect.split("|"))
    if case.expect == "listed" and row.get("unreadable"):  # refusing a hostile shape is fine, if explained
        assert row["error"] and case.record_id in row["error"]
        return
    if "unreadable" in expected:
        assert row.get("unreadable") is True, row
        assert "malformed-record" in row_flags(row)
        assert case.matches(row.get("error")), f"listing says {row.get('error')!r}, expected /{case.problem}/"
        status, header = answers[""]
        said = header.get("error") or header.get("detail")
        assert case.matches(said), f"record route says {status} {header!r}"
        return
    assert not row.get("unreadable"), row
    for route, (status, body) in answers.items():
        assert status == 200, f"{route}: {status} {body}"
    paths = answers["/paths"][1]
    if case.expect == "listed":
        return
    if "malformed" in expected:
        assert "malformed-record" in row_flags(row)
        assert case.matches(" ".join(row["record_problems"])), row["record_problems"]
        assert case.matches(" ".join(answers[""][1]["record_problems"]))
    elif expected & {"tokens-unreadable", "tokens-missing"}:
        assert paths["text_only"] in expected, paths["text_only"]
        if paths["text_only"] == "tokens-unreadable":
            assert case.matches(paths["tokens_error"]), paths["tokens_error"]
        else:
            assert "tokens-missing" in row_flags(row)
            assert "tokens" in answers[""][1]["missing_sidecars"]
        assert all(node["text"] is not None for node in paths["nodes"].values())
    else:
        assert "malformed-record" not in row_flags(row), row["record_problems"]
        assert paths["text_only"] is None
        assert all(node["token_ids"] for node in paths["nodes"].values())


def check_block(output: str, record_id: str) -> str:
    """The lines `check` printed about one record: its line and the indented ones after it."""
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if re.search(rf"(^|\W){re.escape(record_id)}(\W|$)", line):
            block = [line]
            for follower in lines[index + 1 :]:
                if not follower.startswith((" ", "\t")):
                    break
                block.append(follower)
            return "\n".join(block)
    return ""


@pytest.mark.parametrize("case", [c for c in BAD_CASES if c.expect != "listed"], ids=lambda c: c.record_id)
def test_check_names_the_problem(case, check_output):
    output = check_output.stdout + check_output.stderr
    assert check_output.returncode != 0, output[-2000:]
    assert "Traceback" not in output
    block = check_block(output, case.record_id)
    if case.expect == "valid":
        assert not re.search(r"unreadable|malformed|damaged|error|problem", block, re.IGNORECASE), block
    elif case.expect != "tokens-missing":
        assert block, f"check printed nothing about {case.record_id}"
        assert case.matches(block), f"check said:\n{block}\nexpected /{case.problem}/"


def test_unknown_fields_change_nothing(server):
    """Future fields everywhere are ignored: the rollout reads exactly as the original."""

    def without_ids(record_id):
        paths = get_json(server, record_url(record_id, "bad", "/paths"))
        text = json.dumps({"paths": paths["paths"], "nodes": paths["nodes"], "mode": paths["mode"]})
        return text.replace(record_id, "ID")

    assert without_ids("tr_gen_unknown_everywhere") == without_ids("tr_ok")


def test_a_symlink_loop_traps_nothing(tmp_path):
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    copy_record(BROKEN, "tr_ok", root / "run", "tr_ok")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "run" / "self").symlink_to(root / "run", target_is_directory=True)
    (root / "deep").mkdir()
    (root / "deep" / "up").symlink_to(root / "deep", target_is_directory=True)
    with ServerProcess([root]) as server:
        runs = server.wait_indexed(timeout=30)
        assert "run" in {run["id"] for run in runs}
        rows = all_rows(server, "run")
        assert list(rows) == ["tr_ok"]
        get_json(server, record_url("tr_ok", "run", "/paths"))
    result = run_cli("check", root / "run", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


FIFO_PROBLEM = "is a FIFO, not a document file"


def test_a_fifo_where_a_document_should_be(tmp_path):
    """Opening a FIFO for reading blocks until a writer comes: the viewer must not wait for one."""
    run = tmp_path / "run"
    run.mkdir()
    copy_record(BROKEN, "tr_ok", run, "tr_ok")
    os.mkfifo(run / "tr_fifo.json.zst")
    with ServerProcess([run]) as server:
        server.wait_indexed(timeout=30)
        rows = all_rows(server, "run")
        assert set(rows) == {"tr_ok", "tr_fifo"}
        assert rows["tr_fifo"]["unreadable"] is True
        assert rows["tr_fifo"]["error"] == f"{run / 'tr_fifo.json.zst'}: {FIFO_PROBLEM}"
        assert not rows["tr_ok"].get("unreadable")
        get_json(server, record_url("tr_ok", "run", "/paths"))
    result = run_cli("check", run, timeout=60)
    assert result.returncode != 0
    assert FIFO_PROBLEM in check_block(result.stdout + result.stderr, "tr_fifo")
    for shown in (run / "tr_fifo", run / "tr_fifo.json.zst"):  # named with or without the suffix
        result = run_cli("show", shown, timeout=60)
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [f"skycap-viewer: {run / 'tr_fifo.json.zst'}: {FIFO_PROBLEM}"]
    result = run_cli("summary", run, timeout=60)
    assert f"tr_fifo: {FIFO_PROBLEM}" in result.stdout


HUGE_COUNT = 2


def write_huge_records(run: Path) -> list[str]:
    """Documents of ~55 MB of JSON each: a 20,000-message conversation of 2.7 KB messages."""
    document = load_document(BROKEN / "tr_ok.json.zst")
    user, reply = document["nodes"]
    nodes = []
    for index in range(20_000):
        node = copy.deepcopy(user if index % 2 == 0 else reply)
        node.update(id=index, parent=index - 1 if index else None, depth=index, tokens=None)
        node["message"] = {
            "role": node["role"],
            "content": f"{index:05d} " + "lorem ipsum dolor sit amet " * 100,
        }
        nodes.append(node)
    document.update(nodes=nodes, sidecars={}, capture={"mode": "text"}, id="tr_huge_ID")
    text = json.dumps(document, separators=(",", ":"))
    ids = [f"tr_huge_{n}" for n in range(HUGE_COUNT)]
    for record_id in ids:
        (run / f"{record_id}.json.zst").write_bytes(compress(text.replace("tr_huge_ID", record_id).encode()))
    return ids


@pytest.mark.slow
def test_huge_documents_do_not_stop_the_server(tmp_path):
    """While the huge run is read, the other run's listing and rollouts are answered."""
    huge, small = tmp_path / "root" / "huge", tmp_path / "root" / "small"
    huge.mkdir(parents=True)
    ids = write_huge_records(huge)
    shutil.copytree(FIXTURES / "spec", small)
    answered_while_reading = 0
    with ServerProcess([tmp_path / "root"]) as server:
        while len(all_rows(server, "small")) < len(list(small.glob("*.json.zst"))):
            time.sleep(0.05)
        done = False
        while not done:
            runs = {run["id"]: run for run in get_json(server, "/v1/runs")["data"]}
            huge_rows = all_rows(server, "huge") if "huge" in runs else {}
            done = set(huge_rows) == set(ids) and not runs["huge"]["indexing"]
            get_json(server, "/v1/trajectories?run_id=small&sort=tokens")
            get_json(server, record_url("tr_tokens", "small", "/paths"))
            answered_while_reading += not done
        for record_id in ids:
            row = huge_rows[record_id]
            if row.get("unreadable"):  # a size limit is fine if it says so
                assert re.search(r"large|size|bytes|MB", row["error"], re.IGNORECASE), row["error"]
            else:
                assert row["capture"]["node_count"] == 20_000
                paths = get_json(server, record_url(record_id, "huge", "/paths?text=false"))
                first = paths["paths"][0]
                assert first["node_count"] == first["part"]["total"] == 20_000  # its lists come in parts
                assert first["node_ids"][: first["part"]["to"]] == [f"n{i}" for i in range(first["part"]["to"])]
        assert "Traceback" not in server.output()
    print(f"{answered_while_reading} rounds of requests answered while {HUGE_COUNT} huge documents were read")
    assert answered_while_reading >= 1


def test_concurrent_readers_of_bad_records_do_not_crash_the_server(server):
    """Every bad record's rollout opened by several clients at once."""
    failures = []

    def worker():
        for case in BAD_CASES:
            status, _, body = server.request(record_url(case.record_id, "bad", "/paths"))
            if status >= 500:
                failures.append((case.record_id, status, body[:200]))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert get_json(server, "/healthz")["status"] == "ok"


def test_one_id_in_two_runs_never_shows_the_other_record(tmp_path):
    """Ids are unique per run only: each run shows its own record, and a bare id must say which."""
    for run, reply in (("left", "left reply"), ("right", "right reply")):
        (tmp_path / run).mkdir()
        write_text_record(tmp_path / run, "tr_same", f"{run} question", reply)
    with ServerProcess([tmp_path]) as server:
        server.wait_indexed()
        for run in ("left", "right"):
            paths = get_json(server, record_url("tr_same", run, "/paths"))
            texts = [node["text"] for node in paths["nodes"].values()]
            assert texts == [f"{run} question", f"{run} reply"]
            assert paths["trajectory"]["run_id"] == run
        status, _, body = server.request("/v1/trajectories/tr_same/paths")
        assert status == 400 and b"left" in body and b"right" in body
