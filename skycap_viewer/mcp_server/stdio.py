"""The MCP server's transport and protocol: JSON-RPC 2.0 messages, one per line, on stdin and stdout.

It answers `initialize` (the protocol version asked, when it speaks it), `ping`, `tools/list` and
`tools/call`, and takes notifications (`notifications/initialized`, cancellations) without answering.
A tool that cannot answer is a tool error (`isError`) with its one-line reason; a message that is not
JSON-RPC is a JSON-RPC error. Nothing else is ever written to stdout: `print` goes to stderr while it
serves, so a stray line cannot break the channel.
"""

import json
import sys

from skycap_viewer import __version__
from skycap_viewer.errors import ApiError, RecordError
from skycap_viewer.mcp_server.bounds import TooLong
from skycap_viewer.mcp_server.tools import PARTS, TOOL_BY_NAME, TOOLS, answer
from skycap_viewer.python_api.viewer import Viewer

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # oldest to newest
INSTRUCTIONS = ("skycap-viewer reads skycap trajectory records (RL rollouts of LLM agents, token by token) and "
                "never writes them. Start with list_runs, then list_rollouts with filters (step, flag, reward); "
                "get_rollout and read_path read one; search finds text; check validates a record; diff compares "
                "two; export_rows gives what the trainer got. Answers are pages: pass next_cursor for more.")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


class RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def encoded(message: dict) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def reply(line: bytes, viewer) -> dict | None:
    """The answer to one line, or None for a notification (or a blank line, or a response)."""
    try:
        message = json.loads(line)
    except ValueError:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "not JSON"}}
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "not a JSON-RPC 2.0 "
                                                                                            "message"}}
    if "method" not in message:
        return None  # a response: this server asks nothing of the client
    if "id" not in message:
        return None  # a notification: initialized, cancelled, ...
    try:
        params = message.get("params") or {}
        if not isinstance(message["method"], str) or not isinstance(params, dict):
            raise RpcError(INVALID_REQUEST, "method must be a string and params an object")
        return {"jsonrpc": "2.0", "id": message["id"], "result": result(message["method"], params, viewer)}
    except RpcError as error:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": error.code, "message": str(error)}}


def result(method: str, params: dict, viewer) -> dict:
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {"protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "skycap-viewer", "version": __version__},
                "instructions": INSTRUCTIONS}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [tool.listed() for tool in TOOLS]}
    if method == "tools/call":
        name = params.get("name")
        if name not in TOOL_BY_NAME:
            raise RpcError(INVALID_PARAMS, f"no tool {name!r}: the tools are {', '.join(TOOL_BY_NAME)}")
        return tool_result(viewer, name, params.get("arguments"))
    raise RpcError(METHOD_NOT_FOUND, f"no method {method!r}")


def tool_result(viewer, name: str, arguments) -> dict:
    """A tool's answer as JSON text (and as structured content), or its refusal as a tool error."""
    try:
        found = answer(viewer, name, arguments)
    except ApiError as error:
        return refusal(error.detail)
    except (ValueError, TypeError, RecordError, TooLong) as error:
        return refusal(str(error))
    except Exception as error:  # a bug: one line to the agent, the viewer keeps serving
        print(f"skycap-viewer mcp: {name}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return refusal(f"internal error: {type(error).__name__}: {error}")
    text = json.dumps(found, ensure_ascii=False, separators=(",", ":"))
    return {"content": [{"type": "text", "text": text}], "structuredContent": found, "isError": False}


def refusal(reason: str) -> dict:
    return {"content": [{"type": "text", "text": " ".join(reason.split())}], "isError": True}


def serve(viewer, reader, writer):
    """Answer each line of `reader` on `writer` until it ends."""
    for line in reader:
        if not line.strip():
            continue
        answered = reply(line, viewer)
        if answered is not None:
            writer.write(encoded(answered) + b"\n")
            writer.flush()


def run_mcp(sources: list, group_by: tuple, use_cache: bool = True, verify: bool = True,
            storage_options: dict | None = None, remote_cache_bytes: int | None = None) -> int:
    """Serve the runs under `sources` on stdin/stdout until stdin closes."""
    channel, sys.stdout = sys.stdout.buffer, sys.stderr
    options = {} if remote_cache_bytes is None else {"remote_cache_bytes": remote_cache_bytes}
    try:
        with Viewer(sources, cache=use_cache, group_by=group_by, verify=verify, storage_options=storage_options,
                    part_limit=PARTS, **options) as viewer:
            serve(viewer, sys.stdin.buffer, channel)
    finally:
        sys.stdout = sys.__stdout__
    return 0
