"""`skycap-viewer show` on forked rollouts, run as a user runs it: the shared prefix printed once, each
later path from where it leaves the paths printed before it, and what trains on each path still true;
`--full` prints what `show` printed before (every path whole); `show DIR ID`; the `--demo` forms.

A reader follows a later path through its title (`leaves path K after nX`) back to path K, whose
blocks up to nX are the path's, but where its `on this path` line gives another kind: the tests read
the text that way and compare every path's blocks with `show --json` (the server's `/paths`).
"""

import io
import json
import os
import re
from collections import Counter
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from skycap_viewer.cli import main
from skycap_viewer.demo import make
from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.cli import run_cli
from tests.support.oracle import ALLOWED
from tests.support.terminal_text import HOSTILE, RAW

FORKED = [(d, rid) for d, rid, o in ALLOWED if len(o.get("paths") or []) > 1]
OLD_OUTPUT = Path(__file__).parent / "show_full"  # `show`'s text before it printed shared prefixes once (c143f8e)
GOLDEN = {"tr_86f0b750382298e2": "real-like", "tr_rule_two_rows": "rules", "tr_forked_unbridged": "spec"}
KINDS = {"given", "replayed", "scaffold", "sampled", "sampled-elsewhere", "sampled-untrained"}
TITLE = re.compile(r"^path (\d+)  leaf (n\d+)  .*?(?:  leaves path (\d+) after (n\d+))?$")
LABEL = re.compile(r"^  (\S+) +(n\d+) +\S+ +(\[\d+:\d+\]) \d+ (?:tok|chars?)(?:  trained in path (\d+))?$")
SHARED = re.compile(r"^  shared +(n\d+)(?: to (n\d+))?: (\d+) nodes?, (\d+) (?:tok|chars?), printed above$")
ON_PATH = re.compile(r"^  on this path +(\S+) (.*?)(?: \(trained in path (\d+)\))?$")
PLACE = re.compile(r"^(n\d+) (\[\d+:\d+\]) \d+ (?:tok|chars?)$")


def show(*args) -> str:
    result = run_cli("show", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def show_here(*args) -> str:
    """`show` in this process (`cli.main`, what the command runs), for the tests over every forked record."""
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["show", *map(str, args)]) == 0
    return out.getvalue()


def sections(text: str) -> list[list[str]]:
    """The lines of each path, its title first (a title is the only line starting with `path `), without
    the empty lines that end it."""
    paths = []
    for line in text.splitlines():
        if line.startswith("path "):
            paths.append([])
        if paths:
            paths[-1].append(line)
    return [lines[: max(i for i, line in enumerate(lines) if line) + 1] for lines in paths]


def label_of(match) -> tuple:
    kind, node, where, trained_in = match.groups()
    assert kind in KINDS
    return node, where, kind, None if trained_in is None else int(trained_in)


def followed(text: str) -> list[list[tuple]]:
    """Each path's blocks as (node, [start:end], kind, trained_in), read from the compact text as a reader
    follows it: the path it leaves up to its fork node, its `on this path` kinds, then its own blocks."""
    paths = []
    for index, (title, *body) in enumerate(sections(text)):
        heading = TITLE.match(title)
        assert heading and int(heading[1]) == index, title
        blocks = []
        if heading[3] is not None:
            source, fork_node = int(heading[3]), heading[4]
            assert source < index
            inherited = paths[source]
            last = max(i for i, block in enumerate(inherited) if block[0] == fork_node)
            blocks = list(inherited[: last + 1])
            shared = SHARED.match(body.pop(0))
            assert shared, body
            nodes = list(dict.fromkeys(block[0] for block in blocks))
            assert (shared[1], shared[2] or shared[1], int(shared[3])) == (nodes[0], fork_node, len(nodes))
            assert int(shared[4]) == int(blocks[-1][1][1:-1].split(":")[1])  # the prefix's size: where it ends
            here = {}
            while body and body[0].startswith("  on this path"):
                change = ON_PATH.match(body.pop(0))
                assert change and change[1] in KINDS
                for place in change[2].split(", "):
                    node, where = PLACE.match(place).groups()
                    here[node, where] = (change[1], None if change[3] is None else int(change[3]))
            assert set(here) <= {block[:2] for block in blocks}
            blocks = [(*block[:2], *here.get(block[:2], block[2:])) for block in blocks]
        blocks += [label_of(match) for match in map(LABEL.match, body) if match]
        paths.append(blocks)
    return paths


def served(payload: dict) -> list[list[tuple]]:
    return [[(b["node_id"], f"[{b['start']}:{b['end']}]", b["kind"], b.get("trained_in")) for b in path["blocks"]]
            for path in payload["paths"]]


@pytest.mark.parametrize(("directory", "record_id"), FORKED, ids=[f"{d}/{r}" for d, r in FORKED])
def test_every_path_read_from_the_compact_text_is_the_servers(corpus, directory, record_id):
    record = corpus / directory / f"{record_id}.json.zst"
    text, payload = show_here(record), json.loads(show_here(record, "--json"))
    assert followed(text) == served(payload)
    labels = Counter((m[2], m[3]) for m in map(LABEL.match, text.splitlines()) if m)
    assert set(labels.values()) == {1}  # each node's blocks printed once across the paths
    assert set(labels) == {block[:2] for path in served(payload) for block in path}
    for path, (title, *_) in zip(payload["paths"][1:], sections(text)[1:], strict=True):
        source = TITLE.match(title)[3]
        if path["fork_from"] is None:
            assert source is None and title.endswith(f"first new node {path['diverges_at']} (a new root)")
        else:  # it leaves the first path that has its fork node, the one that printed it
            assert int(source) == min(p["index"] for p in payload["paths"] if path["fork_from"] in p["node_ids"])


def test_a_reply_trained_on_one_path_is_said_elsewhere_on_the_others(corpus):
    lines = show(corpus / "rules" / "tr_rule_two_rows").splitlines()
    assert lines.count("  on this path      sampled-elsewhere n1 [30:35] 5 tok (trained in path 0)") == 2
    titles = [line for line in lines if line.startswith("path ")]
    assert titles[1].endswith("leaves path 0 after n1") and titles[2].endswith("leaves path 0 after n1")
    final = show(corpus / "rules" / "tr_rule_final_resample").splitlines()  # trains on the later path only
    assert "  sampled-elsewhere n1    assistant  [42:47] 5 tok  trained in path 1" in final
    assert "  on this path      sampled n1 [42:47] 5 tok" in final


def test_a_path_leaves_the_one_that_printed_its_fork_node(corpus):
    text = show(corpus / "spec" / "tr_forked_unbridged")
    titles = [section[0] for section in sections(text)]
    assert titles[1].endswith("leaves path 0 after n0") and titles[2].endswith("leaves path 1 after n3")
    assert "  shared            n0 to n3: 3 nodes, 40 tok, printed above" in text.splitlines()


def test_the_shared_prefix_once_is_shorter(corpus):
    record = corpus / "real-like" / "tr_86f0b750382298e2.json.zst"
    compact, full = show(record).splitlines(), show(record, "--full").splitlines()
    assert len(compact) < len(full)
    assert sum(line.startswith("    <s>system") for line in full) == 5  # n0 on four paths, the new root n12
    assert sum(line.startswith("    <s>system") for line in compact) == 2


@pytest.mark.parametrize("record_id", sorted(GOLDEN))
def test_full_prints_what_show_printed_before(corpus, record_id):
    record = corpus / GOLDEN[record_id] / f"{record_id}.json.zst"
    assert show(record, "--full") == (OLD_OUTPUT / f"{record_id}.txt").read_text()


@pytest.mark.slow
def test_full_is_every_path_as_path_n_prints_it(corpus):
    record = corpus / "real-like" / "tr_86f0b750382298e2.json.zst"
    full = show(record, "--full")
    header = full.split("\npath 0 ")[0]
    one_by_one = [show(record, "--path", str(n)) for n in range(5)]
    assert all(out.split("\npath ")[0] == header for out in one_by_one)
    assert sections(full) == [sections(out)[0] for out in one_by_one]
    assert show(record, "--path", "3") == show(record, "--path", "3", "--full")  # one path is printed whole
    assert json.loads(show(record, "--json", "--full")) == json.loads(show(record, "--json"))


def test_control_characters_stay_escaped_in_shared_and_later_paths(corpus, tmp_path):
    source = corpus / "mirror-text" / "tr_bac9802dee51ae08.json.zst"
    document = json.loads(decompress_one_frame(source.read_bytes()))
    for node in document["nodes"]:
        node["message"]["content"] = f"{node['id']} {HOSTILE}"
    document["nodes"][4]["role"] = document["nodes"][4]["message"]["role"] = f"user{HOSTILE}"
    (tmp_path / source.name).write_bytes(compress(json.dumps(document).encode()))
    text = show(tmp_path, "tr_bac9802dee51ae08")
    assert not RAW.search(text), RAW.findall(text)
    assert "leaves path 0 after n1" in text
    own_node = "    5 \\x1b]0;owned\\x07\\x1b[2J\\x0dfine\\x9b31m\\u2028 \\u202eexe.txt\\u2066\\u200f"
    assert own_node in text.splitlines()  # the later path's own node


def test_dir_and_id_is_the_record_file(corpus):
    directory = corpus / "spec"
    assert show(directory, "tr_shared_reply") == show(directory / "tr_shared_reply.json.zst")
    with_suffix = show(directory, "tr_shared_reply.json.zst", "--path", "1")
    assert with_suffix == show(directory / "tr_shared_reply", "--path", "1")


@pytest.mark.parametrize(("args", "said"), [
    (["spec", "tr_nothing"], "no record tr_nothing in {corpus}/spec"),
    (["spec", "../real-like/tr_86f0b750382298e2"], "not a record id: ../real-like/tr_86f0b750382298e2"),
    (["no-such-dir", "tr_tokens"], "not a directory: {corpus}/no-such-dir"),
    (["spec"], "{corpus}/spec is a directory: give a record file, or DIR ID"),
    (["spec", "tr_tokens", "tr_utf8"], "give a record file ({id}.json.zst), or DIR ID"),
])
def test_dir_and_id_errors_name_the_dir_and_the_id(corpus, args, said):
    result = run_cli("show", *[corpus / args[0], *args[1:]])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert said.replace("{corpus}", str(corpus)) in result.stderr


def demo_files() -> dict[str, int]:
    return {path.name: path.stat().st_mtime_ns for path in make.RECORDS.iterdir()}


def test_the_demo_forms_print_the_demo_records_and_write_nothing(tmp_path):
    before = demo_files()
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    runs = {" ".join(args): run_cli(*args, cwd=tmp_path, env=env) for args in (
        ["summary", "--demo"], ["check", "--demo"], ["show", "--demo"], ["show", "--demo", make.FORKED_ID, "--full"],
        ["show", "--demo", "tr_0119a4d5f232fa82"])}
    assert all(result.returncode == 0 for result in runs.values()), {k: r.stderr for k, r in runs.items()}
    records = len([name for name in before if name.endswith(".json.zst")])
    assert f"records             {records}" in runs["summary --demo"].stdout
    assert f"{records} documents, 0 with problems" in runs["check --demo"].stdout
    forked = runs["show --demo"].stdout
    assert forked.startswith(f"{make.FORKED_ID}  finished") and "3 paths" in forked.splitlines()[0]
    assert "leaves path 0 after n3" in forked
    assert "leaves path" not in runs[f"show --demo {make.FORKED_ID} --full"].stdout
    assert runs["show --demo tr_0119a4d5f232fa82"].stdout.startswith("tr_0119a4d5f232fa82  ")
    assert list(tmp_path.iterdir()) == [] and demo_files() == before


def test_a_demo_id_not_in_the_demo_run_is_said(tmp_path):
    result = run_cli("show", "--demo", "tr_no_such_record")
    assert result.returncode == 2 and f"no record tr_no_such_record in {make.RECORDS}" in result.stderr
    two = run_cli("show", "--demo", make.FORKED_ID, "tr_0119a4d5f232fa82")
    assert two.returncode == 2 and "with --demo, give one id" in two.stderr
