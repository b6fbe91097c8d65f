"""A rollout's snapshot file: `GET /v1/trajectories/{id}/snapshot` and `show --html`.

The file is checked as bytes here (a download, the CSP's hashes, the data escaped, the same from
the server and the terminal, bounded on a huge record); `tests/browser/test_snapshot.py` opens it.
"""

import base64
import hashlib
import json
import re
import subprocess
import sys
import urllib.parse
from fnmatch import fnmatch
from pathlib import Path

import pytest

from skycap_viewer.catalog.rows import compute_row, public
from skycap_viewer.record.document import read_document
from skycap_viewer.views.record import snapshot as snapshot_module
from skycap_viewer.views.record.snapshot import PAGE_FILES, snapshot_data
from skycap_viewer.views.record.trajectory import RecordView
from skycap_viewer.wire import safe_file_name
from tests.support.bad_records import BAD_CASES, restore_permissions, write_bad_run
from tests.support.chain_record import write_chain
from tests.support.corpus import FIXTURES, FORKED, copy_corpus, copy_runs
from tests.support.in_process import InProcess, in_process_fixture
from tests.support.records import write_text_record

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '</script><script>window.__pwned=1</script><!-- & \u2028 \u2029 </style>'


@pytest.fixture
def root(tmp_path):
    root = copy_runs(tmp_path / "root", "real-like", "groups-text")
    (root / "odd").mkdir()
    write_text_record(root / "odd", 'tr_odd "name" é;x', HOSTILE, f"reply {HOSTILE}")
    return root


web = in_process_fixture("root")


def show_html(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skycap_viewer", "show", *map(str, args), "--html"],
                          capture_output=True, timeout=120)


def parts_of(html: str) -> dict:
    """The file's CSP, its one style, its data and its one executable script."""
    return {
        "policy": re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html).group(1),
        "styles": re.findall(r"<style>(.*?)</style>", html, re.S),
        "data": re.findall(r'<script type="application/json" id="data">(.*?)</script>', html, re.S),
        "scripts": re.findall(r"<script>(.*?)</script>", html, re.S),
    }


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_snapshot_is_a_download_named_after_the_record(web):
    response = web.get(f"/v1/trajectories/{FORKED}/snapshot?path=2")
    assert response.status == 200, response.body[:200]
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-disposition"] == f'attachment; filename="{FORKED}.html"'
    assert response.headers["cache-control"] == "no-store"
    assert response.body.startswith(b"<!doctype html>")
    head = web.get(f"/v1/trajectories/{FORKED}/snapshot?path=2", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers["content-length"] == str(len(response.body))


def test_the_file_name_keeps_only_letters_digits_dots_underscores_and_dashes(web):
    response = web.get("/v1/trajectories/" + "tr_odd%20%22name%22%20%C3%A9%3Bx" + "/snapshot")
    assert response.status == 200, response.body[:200]
    assert response.headers["content-disposition"] == 'attachment; filename="tr_odd_name_x.html"'
    assert safe_file_name('../a"\r\n;b', ".html", "rollout") == "a_b.html"
    assert safe_file_name("...", ".html", "rollout") == "rollout.html"


def test_bad_requests_are_answered_as_the_other_record_routes_are(web):
    assert web.json("/v1/trajectories/nope/snapshot", 404)["detail"] == "no trajectory nope"
    assert web.json(f"/v1/trajectories/{FORKED}/snapshot?path=9", 404)["detail"].startswith("no such path")
    assert "path must be a path index" in web.json(f"/v1/trajectories/{FORKED}/snapshot?path=x", 400)["detail"]
    refused = web.json(f"/v1/trajectories/{FORKED}/snapshot?tab=json", 400)["detail"]
    assert refused == "tab must be one of path, chat, tree, calls, not 'json'"
    assert web.json(f"/v1/trajectories/{FORKED}/snapshot?run_id=nope", 404)["detail"] == "no run nope"


def test_the_policy_names_the_exact_style_and_script_and_nothing_else_loads(web):
    html = web.get(f"/v1/trajectories/{FORKED}/snapshot").body.decode()
    found = parts_of(html)
    assert len(found["styles"]) == 1 and len(found["scripts"]) == 1 and len(found["data"]) == 1
    assert found["policy"] == (f"default-src 'none'; style-src {sha256_source(found['styles'][0])}; "
                               f"script-src {sha256_source(found['scripts'][0])}; img-src 'none'; connect-src 'none'; "
                               "base-uri 'none'; form-action 'none'")
    assert html.index("Content-Security-Policy") < html.index("<style>")  # in force before anything it governs
    # the style is the page's stylesheet then the snapshot's, the script the packaged file and the
    # page's modules it imports
    page_css = (ROOT / "static" / "style.css").read_text()
    assert found["styles"][0] == page_css + (PAGE_FILES / "snapshot.css").read_text()
    assert found["scripts"][0] == snapshot_module.snapshot_script()
    for reference in ("src=", "href=", "url(", "@import", "http://", "https://", "//cdn"):
        assert reference not in html.replace(page_css, ""), reference


def test_the_script_fetches_nothing_and_parses_no_markup():
    script = snapshot_module.snapshot_script()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "fetch(",
                 "XMLHttpRequest", "WebSocket", "import ", "import(", "sendBeacon", "EventSource", "</script"):
        assert sink not in script, sink
    assert 'JSON.parse(document.getElementById("data").textContent)' in script


def test_record_text_cannot_close_the_data_tag(web):
    html = web.get("/v1/trajectories/" + "tr_odd%20%22name%22%20%C3%A9%3Bx" + "/snapshot").body.decode()
    raw = parts_of(html)["data"][0]
    for character in "<>&\u2028\u2029":
        assert character not in raw
    data = json.loads(raw)
    assert data["paths"]["nodes"]["n0"]["text"] == HOSTILE
    assert data["paths"]["nodes"]["n1"]["text"] == f"reply {HOSTILE}"
    assert data["trajectory"]["id"] == 'tr_odd "name" é;x'
    assert html.count("</script>") == 2 and html.count("<script") == 2


def test_show_html_prints_the_endpoints_file(web):
    cases = [("real-like", FORKED, 2), ("groups-text", "tr_g1a0a0", None), ("real-like", "tr_e9a50d7c21a4ff0b", 1)]
    for directory, record_id, path in cases:
        shown = show_html(FIXTURES / directory / record_id, *(["--path", path] if path is not None else []))
        assert shown.returncode == 0, shown.stderr
        query = f"?path={path}" if path is not None else ""
        served = web.get(f"/v1/trajectories/{record_id}/snapshot{query}")
        assert served.status == 200
        assert shown.stdout == served.body, record_id
        assert json.loads(parts_of(served.body.decode())["data"][0])["initial"] == {"path": path or 0, "tab": "path"}


def test_show_html_refuses_a_path_there_is_not():
    shown = show_html(FIXTURES / "real-like" / FORKED, "--path", "7")
    assert shown.returncode == 2
    assert shown.stderr.decode().strip() == "skycap-viewer: --path 7: the record has 5 paths"
    assert shown.stdout == b""


def test_the_file_holds_every_part_of_the_rollout(web):
    data = json.loads(parts_of(web.get(f"/v1/trajectories/{FORKED}/snapshot?path=3&tab=tree").body.decode())["data"][0])
    paths = web.json(f"/v1/trajectories/{FORKED}/paths")
    graph = web.json(f"/v1/trajectories/{FORKED}/graph")
    exchanges = web.json(f"/v1/trajectories/{FORKED}/exchanges")
    assert data["initial"] == {"path": 3, "tab": "tree"}
    header = {key: value for key, value in paths["trajectory"].items() if key not in ("run_id", "project", "revision")}
    assert data["trajectory"] == header  # the record's header; the run's fields are not the file's
    held = data["paths"]
    assert [path["blocks"] for path in held["paths"]] == [path["blocks"] for path in paths["paths"]]
    assert [path["cut"] for path in held["paths"]] == [None] * 5
    assert held["nodes"] == paths["nodes"]
    assert {key: held[key] for key in ("mode", "text_only", "tokenizer")} == {
        key: paths[key] for key in ("mode", "text_only", "tokenizer")}
    assert data["graph"]["nodes"] == [{k: v for k, v in node.items() if k != "message"} for node in graph["nodes"]]
    assert data["graph"]["forks"] == graph["forks"] and data["graph"]["train_once"] == graph["train_once"]
    assert data["exchanges"] == exchanges
    assert {flag["flag"] for flag in data["viewer"]["flags"]} >= set(header["flags"])


def test_a_huge_record_is_cut_and_says_so(tmp_path):
    write_chain(tmp_path / "chain", 30_000)
    shown = show_html(tmp_path / "chain" / "chain.json.zst")
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout) < 2.5 * 2**20  # the Path, Tree and Calls tabs' cut answers and 256 KiB of Chat cards
    data = json.loads(parts_of(shown.stdout.decode())["data"][0])
    path = data["paths"]["paths"][0]
    assert path["cut"] == {"unit": "chars", "shown": sum(b["char_count"] for b in path["blocks"]),
                           "total": path["char_count"], "nodes_shown": 2000, "nodes": 30_000}
    assert len(path["node_ids"]) == len(path["messages"]) == len(data["paths"]["nodes"]) == 2000
    assert path["part"] == {"from": 0, "to": 2000, "total": 30_000}  # no next part: the file asks for none
    assert data["graph"]["part"] == {"from": 0, "to": 2000, "total": 30_000}
    assert len(data["graph"]["nodes"]) == 2000
    assert data["exchanges"]["part"] == {"from": 0, "to": 1000, "total": 15_000}
    assert data["limits"]["path_nodes"] == 2000
    chat = data["chat"]["0"]
    assert 0 < chat["part"]["to"] < 2000 and chat["part"]["total"] == 30_000 and "next" not in chat["part"]
    assert [card["node_id"] for card in chat["cards"]] == [f"n{i}" for i in range(chat["part"]["to"])]


def test_a_path_is_cut_inside_a_node_at_its_token_budget(monkeypatch):
    directory = FIXTURES / "real-like"
    document = read_document(directory / f"{FORKED}.json.zst")
    view = RecordView(directory, document, {p.name for p in directory.iterdir()}, FORKED, {})
    whole = view.paths_part(True)
    monkeypatch.setattr(snapshot_module, "PATH_TOKENS", 45)  # inside path 2's third node (n4: tokens 39..66)
    data = snapshot_data(view, 2)
    path = data["paths"]["paths"][2]
    assert path["cut"] == {"unit": "tokens", "shown": 45, "total": 133, "nodes_shown": 3, "nodes": 7}
    assert path["node_ids"] == ["n0", "n1", "n4"]
    last, served = path["blocks"][-1], whole["paths"][2]["blocks"][len(path["blocks"]) - 1]
    assert (served["node_id"], served["start"], served["end"], served["node_end"]) == ("n4", 39, 66, 27)
    assert last == {**served, "end": 45, "node_end": 6, "token_count": 6}  # the block ends where the file's text does
    cut, full = data["paths"]["nodes"]["n4"], whole["nodes"]["n4"]
    assert cut["cut_at"] == 6 and cut["token_ids"] == full["token_ids"][:6] and cut["logprobs"] == full["logprobs"][:6]
    assert cut["token_offsets"] == full["token_offsets"][:7] and cut["text"] == full["text"][:full["token_offsets"][6]]
    assert data["paths"]["nodes"]["n0"] == whole["nodes"]["n0"]  # a node shown whole is the server's as sent


def test_the_installed_package_ships_the_snapshot_files():
    project = (ROOT / "pyproject.toml").read_text()  # (tomllib is 3.11's; the viewer runs on 3.10)

    def package_data(package: str) -> list[str]:
        return json.loads(re.search(rf'^"{re.escape(package)}" = (\[.*\])$', project, re.M).group(1))

    for item in (ROOT / "skycap_viewer" / "views" / "record" / "snapshot_page").iterdir():
        shipped = package_data("skycap_viewer.views.record")
        assert any(fnmatch(f"snapshot_page/{item.name}", pattern) for pattern in shipped), item.name
    assert any(fnmatch("style.css", pattern) for pattern in package_data("skycap_viewer.static"))


def test_a_cut_on_a_node_boundary_leaves_the_next_node_out(monkeypatch):
    directory = FIXTURES / "real-like"
    document = read_document(directory / f"{FORKED}.json.zst")
    view = RecordView(directory, document, {p.name for p in directory.iterdir()}, FORKED, {})
    monkeypatch.setattr(snapshot_module, "PATH_TOKENS", 39)  # n0 and n1 whole (0..39), then n4 on path 2
    data = snapshot_data(view, 2)
    path = data["paths"]["paths"][2]
    whole = view.paths_part(True)["paths"][2]
    assert path["node_ids"] == ["n0", "n1"] and path["messages"] == whole["messages"][:2]
    assert path["cut"] == {"unit": "tokens", "shown": 39, "total": 133, "nodes_shown": 2, "nodes": 7}
    assert path["blocks"] == whole["blocks"][:len(path["blocks"])] and path["blocks"][-1]["end"] == 39
    nodes = data["paths"]["nodes"]
    assert "n4" not in nodes and "cut_at" not in nodes["n1"]
    assert {key for path in data["paths"]["paths"] for key in path["node_ids"]} == set(nodes)  # every node once


def test_past_the_paths_it_holds_the_file_has_each_paths_summary_and_says_it_holds_no_more(monkeypatch):
    directory = FIXTURES / "real-like"
    document = read_document(directory / f"{FORKED}.json.zst")
    view = RecordView(directory, document, {p.name for p in directory.iterdir()}, FORKED, {})
    monkeypatch.setattr(snapshot_module, "PATHS", 2)
    paths = snapshot_data(view, 3)["paths"]["paths"]
    whole = view.paths_part(True)["paths"]
    summary = ("index", "leaf_node_id", "node_count", "token_count", "trainable_count", "fork_from")
    assert [[path[key] for key in summary] for path in paths] == [[path[key] for key in summary] for path in whole]
    for index in (0, 1, 3):  # the first PATHS and the one asked for
        assert paths[index]["blocks"] == whole[index]["blocks"] and paths[index]["cut"] is None
    for index in (2, 4):
        assert paths[index]["blocks"] == paths[index]["node_ids"] == []
        assert paths[index]["cut"] == {"unit": "tokens", "shown": 0, "total": whole[index]["token_count"],
                                       "nodes_shown": 0, "nodes": whole[index]["node_count"]}


@pytest.mark.slow
def test_every_record_of_the_corpus_and_every_bad_record_gets_a_file_or_a_clear_error(tmp_path):
    root = copy_corpus(tmp_path / "root")
    write_bad_run(root / "bad")
    try:
        server = InProcess(root)
        rows = []
        for run in server.server.api.catalog.snapshots():
            rows += [(run.id, row["id"], row.get("unreadable")) for row in run.rows_where("1 = 1", [])]
        assert {record_id for run_id, record_id, _ in rows if run_id == "bad"} >= {case.record_id for case in BAD_CASES
                                                                                  if case.make is not None}
        for run_id, record_id, unreadable in rows:
            target = f"/v1/trajectories/{urllib.parse.quote(record_id, safe='')}/snapshot?run_id={run_id}"
            response = server.get(target)
            if unreadable:
                assert response.status == 422 and "cannot be read" in response.json()["detail"], target
                continue
            assert response.status == 200, (target, response.status, response.body[:300])
            data = json.loads(parts_of(response.body.decode())["data"][0])
            assert data["record_id"] == record_id
            directory = next(run.location.path for run in server.server.api.catalog.snapshots() if run.id == run_id)
            verified = public(compute_row(str(directory), f"{record_id}.json.zst", verify=True))  # as check finds them
            assert data["trajectory"]["record_problems"] == verified["record_problems"]
            assert data["trajectory"]["flags"] == verified["flags"]  # the sidecars' flags too, as the drawer's
    finally:
        server.close()
        restore_permissions(root)


def test_the_file_draws_with_the_pages_own_renderers_and_none_that_fetches():
    """snapshot.js imports the drawer's header, Path, Tree and Calls renderers; they and what they import
    fetch nothing (api.js is the page's one way to the server), and each is inlined as it is."""
    own = (PAGE_FILES / "snapshot.js").read_text("utf-8")
    inlined = snapshot_module.page_modules(own)
    assert {"rollout-head.js", "path-view.js", "tab-tree.js", "tab-calls.js", "tokens.js"} <= set(inlined)
    assert "api.js" not in inlined and "drawer.js" not in inlined
    for name in inlined:
        source = (snapshot_module.PAGE_JS / name).read_text("utf-8")
        assert "fetch(" not in source and "location" not in source, name
        imported = snapshot_module.IMPORT.findall(source)
        assert all(inlined.index(module) < inlined.index(name) for _, module in imported), name  # each after its own
    script = snapshot_module.snapshot_script()
    assert not re.search(r"^\s*(import|export)\b", script, re.M)
    assert script.count("pageModules[") >= 2 * len(inlined)


def test_a_module_the_file_cannot_inline_is_refused():
    for source in ('import * as dom from "./dom.js";\n', "export default function draw() {}\n",
                   'export {el};\n'):
        with pytest.raises(ValueError, match="cannot inline"):
            snapshot_module.module_block(source, "odd.js")
    block = snapshot_module.module_block('import {a, b as c} from "./x.js";\nexport function d() {}\n'
                                         'export {e} from "./y.js";\n', "z.js")
    assert block == ('{\nconst {a, b: c} = pageModules["x.js"];\nfunction d() {}\n'
                     'pageModules["z.js"] = {d, e: pageModules["y.js"].e};\n}\n')
