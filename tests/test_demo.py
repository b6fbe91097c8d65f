"""The demo run shipped in the package: valid records that show every feature the views explain."""

import json
from collections import Counter, defaultdict

import pytest

from skycap_viewer.demo import make
from skycap_viewer.record.document import list_record_ids, read_document
from skycap_viewer.record.rollout import Rollout
from skycap_viewer.record.sidecars import read_tokens
from tests.support.cli import run_cli

DEMO = make.RECORDS


@pytest.fixture(scope="module")
def demo():
    """(document, Rollout, TokenData or None) per demo record."""
    present = {p.name for p in DEMO.iterdir()}
    records = []
    for record_id in list_record_ids(DEMO):
        document = read_document(DEMO / f"{record_id}.json.zst")
        records.append((document, Rollout(document, present, record_id), read_tokens(DEMO, document)))
    return records


def test_committed_records_are_what_make_writes(tmp_path):
    assert make.main([str(tmp_path)]) == 0
    committed = sorted(p.name for p in DEMO.glob("*.zst"))
    assert committed == sorted(p.name for p in tmp_path.iterdir())
    for name in committed:
        stale = f"{name} is stale: run python -m skycap_viewer.demo.make"
        assert (DEMO / name).read_bytes() == (tmp_path / name).read_bytes(), stale
    assert sum((DEMO / name).stat().st_size for name in committed) < 200_000


def test_demo_passes_check():
    result = run_cli("check", "--json", DEMO)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["valid"] and report["directories"][0]["documents"] == len(list_record_ids(DEMO))


def test_every_record_is_consistent(demo):
    assert 25 <= len(demo) <= 40
    for document, rollout, _ in demo:
        assert rollout.record_problems == [] and rollout.missing_sidecars == [], document["id"]
        assert "malformed-record" not in rollout.flags


def test_groups_over_steps_with_retried_no_signal_and_short(demo):
    groups = defaultdict(lambda: defaultdict(list))  # (step, instance) -> repetition -> [(attempt, reward)]
    for document, _, _ in demo:
        meta = document["meta"]
        if "step" in meta and "instance_id" in meta:
            groups[meta["step"], meta["instance_id"]][meta["repetition_id"]].append(
                (meta["attempt"], document["annotations"]["reward"]))
    assert len({step for step, _ in groups}) >= 3
    sizes = Counter(len(repetitions) for repetitions in groups.values())
    modal = max(sizes, key=lambda size: (sizes[size], size))
    assert modal == 4 and any(size < modal for size in sizes)  # a short group
    assert any(len(attempts) > 1 for reps in groups.values() for attempts in reps.values())  # retried
    counting = {key: [max(attempts)[1] for attempts in reps.values()] for key, reps in groups.items()}
    assert any(len(set(rewards)) == 1 for rewards in counting.values())  # no signal
    assert any(len(set(rewards)) > 1 for rewards in counting.values())


def test_forked_rollout_has_a_resample_and_an_edited_reply(demo):
    forked = [(d, r) for d, r, _ in demo if "forked" in r.flags]
    assert forked
    document, rollout = forked[0]
    nodes = document["nodes"]
    children = defaultdict(list)
    for node in nodes:
        children[node["parent"]].append(node)
    siblings = [kids for kids in children.values() if len(kids) > 1]
    assert any(sum(k["author"] == "model" for k in kids) >= 2 for kids in siblings)  # resample
    assert any(any(k["author"] == "client" and k["role"] == "assistant" for k in kids)
               and any(k["author"] == "model" for k in kids) for kids in siblings)  # edited reply
    assert len(rollout.paths) >= 3


def test_truncated_call_is_followed_by_an_unbridged_call_and_the_unsampled_end(demo):
    truncated = [(d, r, t) for d, r, t in demo if "truncated" in r.flags]
    assert truncated
    document, rollout, tokens = truncated[0]
    cut = rollout.truncated_nodes[0]
    after = next(n for n in document["nodes"] if n["parent"] == cut)
    assert tokens.pieces(after["tokens"])[:2] == ["</s>", "\n"]
    answer = next(n for n in document["nodes"] if n["parent"] == after["id"])
    assert answer["calls"][0]["bridged"] is False and "unbridged" in rollout.flags


def test_failed_call_text_and_token_modes_and_lifecycles(demo):
    flags = Counter(flag for _, r, _ in demo for flag in r.flags)
    assert flags["failed-calls"] and flags["incomplete"] and flags["abandoned"] and flags["no-logprobs"]
    modes = Counter(r.mode for _, r, _ in demo)
    assert modes["tokens"] and modes["text"]
    assert all((t is None) == (r.mode == "text") for _, r, t in demo)


def test_tool_call_multibyte_text_and_markup(demo):
    nodes = [(d, n, t) for d, _, t in demo for n in d["nodes"]]
    tool_calls = [(d, n) for d, n, _ in nodes if n["message"].get("tool_calls")]
    assert tool_calls and all(n["calls"][0]["tools"] in d["tools"] for d, n in tool_calls)
    assert any(n["role"] == "tool" for _, n, _ in nodes)
    assert any(t and not t.text_bytes(n["tokens"]).isascii() for _, n, t in nodes)
    assert any(t and "" in t.pieces(n["tokens"]) for _, n, t in nodes)  # an emoji over two tokens
    assert any("<img src=x onerror=alert(1)>" in (n["message"].get("content") or "") for _, n, _ in nodes)


def test_the_terminal_commands_take_the_demo_run_too():
    summary = run_cli("summary", "--demo", "--json")
    assert summary.returncode == 0, summary.stderr
    records = sorted(p.name[: -len(".json.zst")] for p in DEMO.glob("*.json.zst"))
    assert json.loads(summary.stdout)[0]["records"] == len(records)
    check = run_cli("check", "--demo")
    assert check.returncode == 0 and "0 with problems" in check.stdout
    show = run_cli("show", "--demo", records[0])
    assert show.returncode == 0 and show.stdout.startswith(records[0])
    assert run_cli("show", "--demo", "tr_no_such_record").returncode == 2
