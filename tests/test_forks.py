"""Every fork named the way skycap's own `check` names it (format §10), against `oracle.json`.

The oracle's `check.forks` is what skycap said about each record it could read; the module, the
`/graph` answer, `check --forks` and `show` must all say the same. The synthetic cases at the end
cover rows of §10's cause table that no corpus record reaches.
"""

import json

import pytest

from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import document_path, read_document
from skycap_viewer.record.forks import trajectory_forks
from skycap_viewer.record.frames import compress, decompress_one_frame, zstd
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.oracle import ORACLE, RECORD_DIRS, oracle_records

CHECKED = [(d, rid, e["check"]) for d, rid, e in oracle_records() if e.get("check") and e["check"]["error"] is None]
FORKED = [(d, rid, c) for d, rid, c in CHECKED if c["forks"]]
UNBRIDGED_LINE = "unbridged call(s)"


def first_frame_document(path) -> dict:
    """The document as skycap's `check` reads it: the first zstd frame, whatever follows it."""
    return json.loads(zstd.ZstdDecompressor().decompress(path.read_bytes()))


def as_oracle(forks) -> list[dict]:
    return [{"parent": f.parent_id, "node": f.node_id, "sibling": f.sibling_id, "kind": f.kind, "detail": f.detail}
            for f in forks]


def as_wire(oracle_forks) -> list[dict]:
    def wire(node):
        return None if node is None else f"n{node}"
    return [{"node_id": wire(f["node"]), "parent_id": wire(f["parent"]), "sibling_id": wire(f["sibling"]),
             "kind": f["kind"], "detail": f["detail"]} for f in oracle_forks]


def fork_block(check: dict) -> list[str]:
    """skycap's lines for a record, less its unbridged-calls line (not about forks)."""
    return [line for line in check["lines"] if UNBRIDGED_LINE not in line]


def test_the_corpus_has_forks_in_every_kind_it_can():
    assert {d for d, _, _ in CHECKED} == set(RECORD_DIRS)
    kinds = {f["kind"] for _, _, c in FORKED for f in c["forks"]}
    assert {"resample", "edited reply", "different message", "tools or model"} <= kinds
    assert any(f["parent"] is None for _, _, c in FORKED for f in c["forks"])  # a new root


@pytest.mark.parametrize(("directory", "record_id", "check"), CHECKED, ids=[f"{d}/{r}" for d, r, _ in CHECKED])
def test_forks_match_skycap(directory, record_id, check):
    document = first_frame_document(document_path(FIXTURES / directory, record_id))
    assert as_oracle(trajectory_forks(document)) == check["forks"]


def served_records():
    """Readable by skycap and by this viewer (which refuses a document with a second frame)."""
    served = []
    for directory, record_id, check in CHECKED:
        try:
            read_document(document_path(FIXTURES / directory, record_id))
        except RecordError:
            continue
        served.append((directory, record_id, check))
    return served


def test_graph_forks_agree_with_skycap(corpus_server):
    records = served_records()
    assert len(records) >= len(CHECKED) - 1
    for directory, record_id, check in records:
        graph = corpus_server.get(f"/v1/trajectories/{record_id}/graph?run_id={directory}")
        assert graph["forks"] == as_wire(check["forks"]), f"{directory}/{record_id}"


@pytest.mark.parametrize("directory", ["real-like", "rules", "spec"])
def test_check_forks_prints_skycaps_lines(corpus, directory):
    plain = run_cli("check", corpus / directory)
    result = run_cli("check", "--forks", corpus / directory)
    assert result.returncode == plain.returncode == 0, result.stdout
    expected = [line for d, _, c in FORKED if d == directory for line in fork_block(c)]
    assert expected
    lines = result.stdout.splitlines()
    assert lines[: len(expected)] == expected
    assert lines[len(expected):] == [
        line + "; forks: " + skycap_fork_counts(directory) if line.startswith(f"{corpus / directory}:") else line
        for line in plain.stdout.splitlines()
    ]


def skycap_fork_counts(directory: str) -> str:
    """The `forks: 2 edited reply, 1 resample` part of skycap's summary line for the directory."""
    summary = ORACLE[directory]["check_cli"]["stdout"][-1]
    return summary.split("; forks: ", 1)[1].split(";")[0]


def test_check_forks_keeps_the_exit_status_about_the_format(corpus):
    broken = run_cli("check", corpus / "broken")
    with_forks = run_cli("check", "--forks", corpus / "broken")
    assert with_forks.returncode == broken.returncode == 1
    assert with_forks.stdout == broken.stdout  # no broken record forks


def test_check_forks_json(corpus):
    report = json.loads(run_cli("check", "--forks", "--json", corpus / "real-like").stdout)
    assert report["valid"] is True
    (directory,) = report["directories"]
    assert directory["with_problems"] == 0
    expected = {rid: as_wire(c["forks"]) for d, rid, c in FORKED if d == "real-like"}
    assert {r["id"]: r["forks"] for r in directory["records"]} == expected
    assert all(r["problems"] == [] for r in directory["records"])
    plain = json.loads(run_cli("check", "--json", corpus / "real-like").stdout)
    assert plain["directories"][0]["records"] == []


def test_show_names_every_fork(corpus):
    record_id = "tr_86f0b750382298e2"
    result = run_cli("show", corpus / "real-like" / f"{record_id}.json.zst")
    assert result.returncode == 0, result.stderr
    rows = [line.split(None, 1)[1] for line in result.stdout.splitlines() if line.startswith("fork ")]
    check = ORACLE["real-like"]["records"][record_id]["check"]
    where = {None: "a new root"}
    assert rows == [
        f"node n{f['node']} {where.get(f['parent'], 'under n' + str(f['parent']))} vs n{f['sibling']}: "
        f"{f['kind']}: {f['detail']}"
        for f in check["forks"]
    ]
    assert rows[0] == "node n3 under n1 vs n2: resample: a second reply to the same history"
    linear = run_cli("show", corpus / "spec" / "tr_utf8.json.zst")
    assert not [line for line in linear.stdout.splitlines() if line.startswith("fork ")]


def test_record_text_in_fork_lines_is_escaped(corpus, tmp_path):
    """A role is record text: `check --forks` and `show` print it escaped."""
    source = corpus / "real-like" / "tr_86f0b750382298e2.json.zst"
    document = json.loads(decompress_one_frame(source.read_bytes()))
    document["id"] = "tr_escape"
    document["nodes"][12]["role"] = "sys\x1b[2Jtem"  # the new root, compared with node 0
    (tmp_path / "tr_escape.json.zst").write_bytes(compress(json.dumps(document).encode()))
    for result in (run_cli("check", "--forks", tmp_path), run_cli("show", tmp_path / "tr_escape.json.zst")):
        assert "\x1b" not in result.stdout
        assert "a sys\\x1b[2Jtem message where the other path has a system message" in result.stdout


# -- rows of §10's cause table the corpus does not reach, built from the spec's own words ----------


def node(node_id, parent, role, author, message, match_hash=None):
    return {"id": node_id, "parent": parent, "role": role, "author": author, "message": message,
            "match_hash": match_hash or f"h{node_id}"}


def forks_of(*nodes, mode="text"):
    return [(f.node_id, f.sibling_id, f.kind, f.detail)
            for f in trajectory_forks({"capture": {"mode": mode}, "nodes": list(nodes)})]


def test_a_model_reply_equal_to_a_harness_message():
    assert forks_of(
        node(0, None, "user", "client", {"role": "user", "content": "q"}),
        node(1, 0, "assistant", "client", {"role": "assistant", "content": "a"}, "same"),
        node(2, 0, "assistant", "model", {"role": "assistant", "content": "a"}, "same"),
    ) == [(2, 1, "resample", "the model sampled a message the harness had already written")]


def test_a_reply_where_the_other_path_continues_with_another_role():
    assert forks_of(
        node(0, None, "user", "client", {"role": "user", "content": "q"}),
        node(1, 0, "user", "client", {"role": "user", "content": "more"}),
        node(2, 0, "assistant", "model", {"role": "assistant", "content": "a"}),
    ) == [(2, 1, "resample", "a reply to a history the other path continues with a user message")]


def test_roles_that_differ_and_an_unnamed_one():
    assert forks_of(
        node(0, None, "user", "client", {"role": "user", "content": "q"}),
        node(1, 0, "assistant", "model", {"role": "assistant", "content": "a"}),
        node(2, 0, None, "client", {"content": "a"}),
    ) == [(2, 1, "different message", "an unnamed message where the other path has an assistant message")]


def test_the_closest_same_role_sibling_by_fields_changed():
    """Rule 5: fewest differing top-level fields wins over the latest sibling."""
    assert forks_of(
        node(0, None, "user", "client", {"role": "user", "content": "q"}),
        node(1, 0, "user", "client", {"role": "user", "content": "a", "name": "x"}),
        node(2, 0, "user", "client", {"role": "user", "content": "b", "name": "y", "extra": 1}),
        node(3, 0, "user", "client", {"role": "user", "content": "c", "name": "x"}),
    ) == [
        (2, 1, "different message", "a different user message: content changed, extra added, name changed"),
        (3, 1, "different message", "a different user message: content changed"),
    ]


def test_token_mode_compares_rendered_fields_only():
    """A key no renderer reads does not make two messages differ in token mode; empty values never do."""
    pair = (
        node(0, None, "system", "client", {"role": "system", "content": "s", "provider": "a"}),
        node(1, None, "system", "client", {"role": "system", "content": "s", "tool_calls": [], "name": None}),
    )
    assert forks_of(*pair, mode="tokens") == [
        (1, 0, "tools or model", "the same message, sent with a different tool set or model")]
    assert forks_of(*pair, mode="text") == [(1, 0, "different message", "a different system message: provider dropped")]
