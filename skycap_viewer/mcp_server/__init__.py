"""`skycap-viewer mcp DIR...`: the viewer's read-only answers as a Model Context Protocol server, for
coding agents, over stdio (JSON-RPC 2.0, a message a line), standard library only.

- `stdio`: the transport and the protocol (`initialize`, `ping`, `tools/list`, `tools/call`), one line
  in, one line out; `run_mcp` opens the Python API's `Viewer` over the directories given and serves it;
- `tools`: the tools, each one question to the `Viewer` (listings, one rollout, a path's text or chat,
  search, check, diff, trainer rows), their input schemas and what each answers;
- `bounds`: what keeps an answer small enough for an agent's context: pages that shrink to fit, a cursor
  for the rest, and a refusal naming where the whole answer is when one item alone is too big.
"""
