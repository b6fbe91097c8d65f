"""`skycap-viewer summary`, run as a user runs it; expected numbers come from the oracle."""

import json
import math
import shutil
import time
from collections import Counter

import pytest

from skycap_viewer.commands.counts import reward_summary
from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import document_path, read_document
from skycap_viewer.record.frames import compress, decompress_one_frame
from tests.support.cli import run_cli
from tests.support.oracle import ORACLE, RECORD_DIRS


def readable(corpus, name) -> dict[str, dict]:
    """Facts about each record this viewer reads (the others are `unreadable`): the oracle's,
    or, where skycap's reader failed on a sidecar, counted here from the document itself."""
    entries = {}
    for record_id, entry in ORACLE[name]["records"].items():
        try:
            document = read_document(document_path(corpus / name, record_id))
        except RecordError:
            continue
        entries[record_id] = entry if "leaves" in entry else counted_from(document, entry)
    return entries


def counted_from(document: dict, entry: dict) -> dict:
    nodes = document["nodes"]
    children = Counter(n["parent"] for n in nodes if n.get("parent") is not None)
    calls = [call for node in nodes for call in node.get("calls") or []]
    return dict(
        entry,
        leaves=[n["id"] for n in nodes if n["id"] not in children],
        branch_points=[parent for parent, n in children.items() if n > 1],
        calls=len(calls),
        bridged=[call.get("bridged") for call in calls],
    )


def reward(entry):
    value = entry["annotations"].get("reward")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


@pytest.fixture(scope="module")
def summaries(corpus):
    result = run_cli("summary", corpus, "--json")
    assert result.returncode == 0, result.stderr
    return {run["run"]: run for run in json.loads(result.stdout)}


def test_every_corpus_directory_is_a_run(summaries, corpus):
    assert sorted(summaries) == RECORD_DIRS
    for name, run in summaries.items():
        assert run["path"] == str(corpus / name)
        assert run["project"] == corpus.name


@pytest.mark.parametrize("name", RECORD_DIRS)
def test_counts_match_the_oracle(summaries, corpus, name):
    run = summaries[name]
    entries = readable(corpus, name)
    assert run["records"] == len(entries)
    assert run["unreadable"] == len(ORACLE[name]["records"]) - len(entries)
    assert {e["id"] for e in run["errors"]} == set(ORACLE[name]["records"]) - set(entries)
    assert all(e["error"] for e in run["errors"])
    values = entries.values()
    assert run["statuses"] == dict(Counter(e["status"] for e in values))
    paths = Counter(len(e["leaves"]) for e in values)
    assert run["paths"]["histogram"] == {str(k): n for k, n in sorted(paths.items())}
    forked = [e for e in values if len(e["leaves"]) > 1]
    assert run["forks"] == {
        "forked_records": len(forked),
        "branch_points": sum(len(e["branch_points"]) for e in values),
    }
    assert run["calls"]["total"] == sum(e["calls"] for e in values)
    bridged = Counter(str(b).lower() if b is not None else "null" for e in values for b in e["bridged"])
    assert run["calls"]["bridged"] == {k: bridged.get(k, 0) for k in ("true", "false", "null", "absent")}
    assert run["failures"] == {
        "total": sum(len(e["failures"]) for e in values),
        "records": sum(1 for e in values if e["failures"]),
    }
    assert run["flags"]["forked"] == len(forked)
    assert run["flags"]["failed-calls"] == run["failures"]["records"]
    assert run["flags"]["abandoned"] == run["statuses"].get("abandoned", 0)
    incomplete = [e for e in values if e["ended"] is False or e["status"] == "open"]
    assert run["flags"]["incomplete"] == len(incomplete)
    steps = Counter(str(e["meta"]["step"]) if "step" in e["meta"] else "none" for e in values)
    assert run["steps"] == dict(steps)
    on_disk = [set(e["sidecars"]["manifest"]) <= set(e["sidecars"]["on_disk"]) for e in values]
    if name != "broken" and all(on_disk):  # skycap counted every token it stored
        assert run["nodes"] == sum(e["nodes"] for e in values)
        assert run["tokens"] == sum(n["tokens"] or 0 for e in values for n in e["node_summary"])


@pytest.mark.parametrize("name", RECORD_DIRS)
def test_rewards_are_reported_as_recorded(summaries, corpus, name):
    run = summaries[name]
    rewards = [reward(e) for e in readable(corpus, name).values()]
    present = [r for r in rewards if r is not None]
    if not present:
        assert run["rewards"] is None
        return
    summary = run["rewards"]
    assert summary["count"] == len(present) and summary["missing"] == len(rewards) - len(present)
    assert {float(v): n for v, n in summary["values"]} == {float(v): n for v, n in Counter(present).items()}
    assert not {"mean", "average", "pass_rate"} & set(summary)


def test_groups_follow_meta_step_and_instance_id(summaries, corpus):
    for name in ("groups", "groups-text"):
        entries = readable(corpus, name).values()
        repetitions, members = {}, Counter()
        for e in entries:
            if "instance_id" in e["meta"]:
                key = f"{e['meta']['step']}~{e['meta']['instance_id']}"
                repetitions.setdefault(key, set()).add(e["meta"].get("repetition_id", e["id"]))
                members[key] += 1
        sizes = Counter(len(reps) for reps in repetitions.values())
        groups = summaries[name]["groups"]
        assert groups["by"] == ["step", "instance_id"]
        assert groups["count"] == len(repetitions) > 1
        assert groups["without_key"] == len(entries) - sum(members.values())
        assert groups["sizes"] == {str(size): n for size, n in sorted(sizes.items())}
        assert groups["modal_size"] == max(sizes, key=lambda size: (sizes[size], size))
        retried = sum(1 for key, reps in repetitions.items() if len(reps) < members[key])
        assert groups["flags"]["retried"] == retried > 0
        assert groups["flags"]["short"] == sum(n for size, n in sizes.items() if size < groups["modal_size"])
    assert summaries["spec"]["groups"]["count"] == 0


def test_text_output(corpus):
    result = run_cli("summary", corpus / "real-like", corpus / "broken")
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("\n\n")
    assert [block.splitlines()[0].split()[0] for block in blocks] == ["real-like", "broken"]
    rows = [line.strip().split(None, 1) for line in blocks[0].splitlines()[1:]]
    real_like = {row[0]: row[1] for row in rows if len(row) == 2}
    entries = readable(corpus, "real-like").values()
    assert real_like["records"] == str(len(entries))
    for status, n in Counter(e["status"] for e in entries).items():
        assert f"{status}={n}" in real_like["statuses"]
    assert "mean" not in result.stdout and "pass" not in result.stdout
    unreadable = [line for line in blocks[1].splitlines() if line.strip().startswith("unreadable:")]
    broken_readable = readable(corpus, "broken")
    assert len(unreadable) == len(ORACLE["broken"]["records"]) - len(broken_readable)
    assert f"(+{len(unreadable)} unreadable)" in blocks[1]


def test_many_distinct_rewards_become_a_histogram(corpus, tmp_path):
    folder = tmp_path / "sweep"
    folder.mkdir()
    seed = json.loads(decompress_one_frame((corpus / "groups-text" / "tr_g1a0a0.json.zst").read_bytes()))
    rewards = [i / 7 for i in range(15)] + [None]
    for i, value in enumerate(rewards):
        document = dict(seed, id=f"tr_sweep{i:02d}", annotations={} if value is None else {"reward": value})
        (folder / f"tr_sweep{i:02d}.json.zst").write_bytes(compress(json.dumps(document).encode()))
    run = json.loads(run_cli("summary", folder, "--json").stdout)[0]
    summary = run["rewards"]
    assert summary["count"] == 15 and summary["missing"] == 1
    assert "values" not in summary and len(summary["histogram"]) == 10
    assert sum(bucket["n"] for bucket in summary["histogram"]) == 15
    histogram = summary["histogram"]
    assert math.isclose(histogram[0]["from"], 0) and math.isclose(histogram[-1]["to"], 2)
    for bucket in histogram:
        last = bucket is histogram[-1]
        inside = [r for r in rewards[:15] if bucket["from"] <= r < bucket["to"] or last and r == bucket["to"]]
        assert bucket["n"] == len(inside)
    text = run_cli("summary", folder).stdout
    assert "[0,0.2):2" in text


def test_a_directory_named_skycap_takes_its_parents_name(corpus, tmp_path):
    shutil.copytree(corpus / "spec", tmp_path / "job-7" / "skycap")
    run = json.loads(run_cli("summary", tmp_path, "--json").stdout)
    assert [r["run"] for r in run] == ["job-7"]


@pytest.mark.parametrize("make", [False, True])
def test_no_runs_is_a_usage_error(tmp_path, make):
    target = tmp_path / "nothing"
    if make:
        target.mkdir()
    result = run_cli("summary", target)
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr and str(target) in result.stderr


def test_a_histogram_of_extreme_rewards_stays_finite():
    summary = reward_summary([-1e308, 1e308] + list(range(12)), 0)
    edges = [bucket["from"] for bucket in summary["histogram"]] + [summary["histogram"][-1]["to"]]
    assert all(math.isfinite(edge) for edge in edges) and edges == sorted(edges)
    assert [bucket["n"] for bucket in summary["histogram"]] == [1, 0, 0, 0, 0, 12, 0, 0, 0, 1]


def test_tasks_without_a_task_are_not_a_task_and_the_last_bucket_holds_the_maximum(corpus, tmp_path):
    result = run_cli("summary", corpus / "spec", "--json")
    run = json.loads(result.stdout)[0]
    readable = [e for e in ORACLE["spec"]["records"].values() if e.get("document") == "ok"]
    keyed = [e for e in readable if any(k in e["meta"] for k in ("task_id", "task", "instance_id"))]
    assert "none" not in run["tasks"] and sum(run["tasks"].values()) == len(keyed)
    assert run["without_task"] == len(readable) - len(keyed)
    assert run["documents"] == len(ORACLE["spec"]["records"])
    seed = json.loads(decompress_one_frame((corpus / "spec" / "tr_text.json.zst").read_bytes()))
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for i in range(15):
        document = dict(seed, id=f"tr_sweep{i:02d}", annotations={"reward": i / 14})
        (sweep / f"tr_sweep{i:02d}.json.zst").write_bytes(compress(json.dumps(document).encode()))
    text = run_cli("summary", sweep).stdout
    rewards = next(line for line in text.splitlines() if line.strip().startswith("rewards"))
    assert rewards.endswith(",1]:2") and rewards.count("]") == 1


@pytest.mark.parametrize("name", ["broken", "masks"])
def test_every_flag_is_counted_over_the_base_check_and_the_band_count(summaries, corpus, corpus_server, name):
    """Sidecar damage and what the sampling masks find are counted as `check` finds them and as the
    page's band counts them (the index's verified rows): one decision of a record's flags, three outputs."""
    flags = summaries[name]["flags"]
    checked = json.loads(run_cli("check", corpus / name, "--json").stdout)["directories"][0]
    assert flags["malformed-record"] == checked["with_problems"]
    found = [flag for entry in checked["findings"] for flag in entry["findings"]]
    for flag in ("out-of-support", "forced-run"):
        assert flags[flag] == found.count(flag)
    band = verified_band(corpus_server, name)
    assert {flag: band.get(flag, 0) for flag in ("malformed-record", "out-of-support", "forced-run")} == {
        flag: flags[flag] for flag in ("malformed-record", "out-of-support", "forced-run")}
    if name == "masks":
        assert flags["out-of-support"] == 1 and flags["forced-run"] == 1
    else:
        assert flags["malformed-record"] == 27  # 24 unreadable or inconsistent documents, 3 damaged sidecars


def verified_band(server, run_id: str) -> dict:
    """The band's flag counts once the server has verified every record's sidecars."""
    deadline = time.monotonic() + 60
    while True:
        run = next(run for run in server.get("/v1/runs")["data"] if run["id"] == run_id)
        if run["sidecars_verified"] == run["trajectory_count"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return dict(server.get(f"/v1/trajectories?run_id={run_id}&limit=1")["health"]["counts"])
