"""`skycap-viewer mcp` driven by the official MCP Python SDK's stdio client, as a coding agent drives it:
the tools listed, each one called, and its answer compared with the HTTP API's for the same question
(the real server as a process over the same corpus). Errors are tool errors with one line, never a
traceback; answers stay under the bound and go on by cursor.
"""

import asyncio
import json
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from skycap_viewer.mcp_server.bounds import ANSWER_CHARS, TooLong, fitted
from tests.support.cli import run_cli
from tests.support.server_process import served

pytestmark = pytest.mark.slow  # two servers over the corpus, a session of MCP calls
REPO = Path(__file__).resolve().parents[1]
TOOLS = {"list_runs", "list_rollouts", "list_groups", "get_rollout", "read_path", "search", "check", "diff",
         "export_rows"}


def mcp_server(*args) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "skycap_viewer", "mcp", *map(str, args)],
                                 env={"PYTHONPATH": str(REPO)}, cwd=str(REPO))


async def session_answers(parameters: StdioServerParameters, calls: list) -> dict:
    """Initialize, list the tools, then make each call in turn: `calls` is [(label, tool, arguments)], or
    [(label, function of the answers so far giving (tool, arguments))] for a call that follows a cursor."""
    answers = {}
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        answers["initialize"] = await session.initialize()
        answers["tools"] = await session.list_tools()
        answers["ping"] = await session.send_ping()
        for label, *call in calls:
            tool, arguments = call if len(call) == 2 else call[0](answers)
            answers[label] = await session.call_tool(tool, arguments)
    return answers


def answer_of(result) -> dict:
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    assert len(text) <= ANSWER_CHARS
    assert json.loads(text) == result.structured_content
    return result.structured_content


def refusal_of(result) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.fixture(scope="module")
def server(corpus):
    yield from served([corpus], "--no-verify")


def http(server, route: str, **params):
    query = urlencode([(name, str(item).lower() if isinstance(item, bool) else item)
                       for name, value in params.items() for item in (value if isinstance(value, list) else [value])])
    return server.get(route + ("?" + query if query else ""))


def first_id(server, run: str, **filters) -> str:
    return http(server, "/v1/trajectories", run_id=run, **filters)["data"][0]["id"]


def next_cursor(label: str, tool: str, arguments: dict):
    return lambda answers: (tool, {**arguments, "cursor": answers[label].structured_content["next_cursor"]})


@pytest.fixture(scope="module")
def session(server, corpus):
    """One MCP session over the corpus, every tool called, and the ids it was asked about."""
    ids = {"groups": first_id(server, "groups"), "forked": first_id(server, "spec", flag="forked"),
           "other": http(server, "/v1/trajectories", run_id="groups")["data"][1]["id"],
           "broken": first_id(server, "broken", flag="malformed-record")}
    listing = {"run": "groups", "step": 2, "limit": 5}
    calls = [
        ("runs", "list_runs", {"limit": 5}),
        ("runs 2", next_cursor("runs", "list_runs", {"limit": 5})),
        ("runs 3", next_cursor("runs 2", "list_runs", {"limit": 5})),
        ("rollouts", "list_rollouts", listing),
        ("rollouts 2", next_cursor("rollouts", "list_rollouts", listing)),
        ("truncated", "list_rollouts", {"flag": ["truncated"], "exclude_flag": ["forked"], "sort": "reward"}),
        ("all rollouts", "list_rollouts", {"limit": 100}),
        ("groups", "list_groups", {"run": "groups"}),
        ("rollout", "get_rollout", {"id": ids["forked"], "run": "spec"}),
        ("text", "read_path", {"id": ids["forked"], "run": "spec", "path": 1}),
        ("text 1", "read_path", {"id": ids["forked"], "run": "spec", "path": 1, "limit": 1}),
        ("text 2", next_cursor("text 1", "read_path", {"id": ids["forked"], "run": "spec", "path": 1, "limit": 1})),
        ("chat", "read_path", {"id": ids["forked"], "run": "spec", "path": 1, "as": "chat"}),
        ("search", "search", {"run": "groups", "text": "solve", "kind": "given", "limit": 100}),
        ("check", "check", {"id": ids["broken"], "run": "broken"}),
        ("diff", "diff", {"a": ids["groups"], "b": ids["other"], "run_a": "groups", "run_b": "groups"}),
        ("rows", "export_rows", {"run": "groups", "limit": 3}),
        ("rows 2", next_cursor("rows", "export_rows", {"run": "groups", "limit": 3})),
        ("no rollout", "get_rollout", {"id": "../../etc/passwd"}),
        ("bad filter", "list_rollouts", {"run": "groups", "sort": "rewards"}),
        ("typo", "list_rollouts", {"stpe": 3}),
        ("wrong type", "read_path", {"id": ids["groups"], "path": "one"}),
        ("no path", "read_path", {"id": ids["groups"], "run": "groups", "path": 7}),
        ("bad cursor", "list_runs", {"cursor": "x"}),
    ]
    answers = asyncio.run(session_answers(mcp_server(corpus, "--no-cache", "--no-verify"), calls))
    return answers, ids


def test_it_says_who_it_is_and_lists_the_tools(session):
    answers, _ = session
    assert answers["initialize"].server_info.name == "skycap-viewer"
    assert answers["initialize"].capabilities.tools is not None
    tools = {tool.name: tool for tool in answers["tools"].tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.annotations.read_only_hint is True


def test_runs_are_the_servers_paged(session, server):
    answers, _ = session
    pages = [answer_of(answers[label]) for label in ("runs", "runs 2", "runs 3")]
    assert [page["total"] for page in pages] == [len(http(server, "/v1/runs")["data"])] * 3
    assert pages[-1]["next_cursor"] is None
    assert [run for page in pages for run in page["runs"]] == http(server, "/v1/runs")["data"]


def test_rollouts_and_groups_are_the_listings(session, server):
    answers, _ = session
    first = answer_of(answers["rollouts"])
    assert first == http(server, "/v1/trajectories", run_id="groups", step=2, limit=5)
    assert answer_of(answers["rollouts 2"]) == http(server, "/v1/trajectories", run_id="groups", step=2, limit=5,
                                                    cursor=first["next_cursor"])
    assert answer_of(answers["truncated"]) == http(server, "/v1/trajectories", flag="truncated",
                                                   exclude_flag="forked", sort="reward", limit=20)
    assert answer_of(answers["groups"]) == http(server, "/v1/groups", run_id="groups", limit=20)


def test_a_page_too_long_holds_fewer_rows_and_goes_on_by_cursor(session, server):
    answers, _ = session
    page = answer_of(answers["all rollouts"])
    assert 0 < len(page["data"]) < 100 <= page["total"]
    assert page == http(server, "/v1/trajectories", limit=len(page["data"]))


def test_a_rollout_is_its_header_and_path_summaries(session, server):
    answers, ids = session
    answer = answer_of(answers["rollout"])
    path = f"/v1/trajectories/{quote(ids['forked'])}"
    assert answer["header"] == http(server, path, run_id="spec")
    summaries = http(server, path + "/paths", run_id="spec", text="false")["paths"]
    assert len(answer["paths"]) == len(summaries) > 1
    for mine, theirs in zip(answer["paths"], summaries, strict=True):
        assert mine == {key: value for key, value in theirs.items()
                        if key not in ("node_ids", "targets", "messages", "blocks", "part")}


def test_a_path_reads_as_the_path_tab_shows_it_and_as_the_chat(session, server):
    answers, ids = session
    path = f"/v1/trajectories/{quote(ids['forked'])}/paths"
    shown = http(server, path, run_id="spec", path=1)
    trained = {block["node_id"] for block in shown["blocks"] if block["trainable"]}
    expected = [{"position": i, "node_id": node_id, "role": shown["nodes"][node_id]["role"],
                 "author": shown["nodes"][node_id]["author"], "trained": node_id in trained,
                 "text": shown["nodes"][node_id]["text"]} for i, node_id in enumerate(shown["node_ids"])]
    whole = answer_of(answers["text"])
    assert whole["nodes"] == expected and whole["next_cursor"] is None and trained
    one, two = answer_of(answers["text 1"]), answer_of(answers["text 2"])
    assert (one["nodes"], one["next_cursor"], two["nodes"]) == (expected[:1], "1", expected[1:2])
    chat = answer_of(answers["chat"])
    theirs = http(server, path + "/1/chat", run_id="spec")
    assert chat["cards"] == theirs["cards"] and chat["fork"] == theirs["fork"] and chat["next_cursor"] is None


def test_search_check_diff_and_rows_are_the_servers(session, server, corpus):
    answers, ids = session
    hits = answer_of(answers["search"])
    theirs = http(server, "/v1/search", run_id="groups", text="solve", kind="given", limit=100)
    key = lambda hit: (hit["trajectory_id"], hit["node_id"], hit["start"])  # noqa: E731 (finish order varies)
    assert hits["done"] and sorted(hits["data"], key=key) == sorted(theirs["data"], key=key) and hits["data"]
    verdicts = json.loads(run_cli("check", corpus / "broken", "--json", "--forks").stdout)["directories"][0]
    assert answer_of(answers["check"]) == next(r for r in verdicts["records"] if r["id"] == ids["broken"])
    assert answer_of(answers["check"])["problems"]
    diff = answer_of(answers["diff"])
    compared = http(server, "/v1/compare", a=ids["groups"], b=ids["other"], run_a="groups", run_b="groups")
    compared.pop("part")
    assert diff == {**compared, "next_cursor": None}
    status, _, body = server.request("/v1/trajectories/export?run_id=groups&format=rows")
    lines = [json.loads(line) for line in body.splitlines()]
    rows, more = answer_of(answers["rows"]), answer_of(answers["rows 2"])
    assert rows["rollouts"] + more["rollouts"] == lines[:6] and rows["total"] == len(lines)
    assert all("rows" in line for line in rows["rollouts"])


def test_what_cannot_be_answered_is_a_tool_error_in_one_line(session):
    answers, _ = session
    assert refusal_of(answers["no rollout"]) == "no trajectory ../../etc/passwd"
    assert refusal_of(answers["bad filter"]).startswith("sort must be one of")
    assert refusal_of(answers["typo"]).startswith("list_rollouts takes no argument stpe")
    assert refusal_of(answers["wrong type"]) == "path must be an integer, not 'one'"
    assert refusal_of(answers["no path"]).startswith("no such path")
    assert refusal_of(answers["bad cursor"]).startswith("cursor 'x' is not one this tool gave")


def test_an_item_too_long_alone_is_refused_not_cut():
    assert fitted(lambda n: {"items": ["x"] * n}, 8, "an item") == {"items": ["x"] * 8}
    with pytest.raises(TooLong, match="an item is 80,0[0-9][0-9] characters, more than the 80,000"):
        fitted(lambda n: {"items": ["x" * (ANSWER_CHARS // n)] * n}, 4, "an item")


def test_the_protocol_answers_every_line_and_only_on_stdout(corpus):
    """Raw lines a client may send: a parse error, a request that is no JSON-RPC, an unknown method or tool,
    a notification (no answer); the channel carries nothing else."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "rm", "arguments": {}}},
             {"id": 4, "method": "ping"}]
    text = "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"
    import subprocess

    done = subprocess.run([sys.executable, "-m", "skycap_viewer", "mcp", str(corpus / "groups"), "--no-cache"],
                          input=text, capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO)},
                          timeout=60)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [answer.get("id") for answer in answers] == [1, 2, 3, None, None]
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"
    assert [answer["error"]["code"] for answer in answers[1:]] == [-32601, -32602, -32600, -32700]
    assert done.returncode == 0


def test_a_directory_that_is_not_there_is_a_usage_error(tmp_path):
    done = run_cli("mcp", tmp_path / "nowhere")
    assert done.returncode == 2 and done.stderr.strip() == f"skycap-viewer: not a directory: {tmp_path / 'nowhere'}"
