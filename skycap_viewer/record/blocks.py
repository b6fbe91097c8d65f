"""Cut a path into blocks: what was given, replayed, scaffold, sampled, or sampled elsewhere.

In token mode blocks are cut on node boundaries and on each model node's `sampled_start`, and
their `[start, end)` ranges tile the path's tokens (the same indices as the trainer's
`input_ids` and `loss_mask`). Without tokens each node is one block measured in UTF-16 units
(the page's JavaScript string offsets).
"""

from dataclasses import dataclass

from skycap_viewer.record.graph import Graph, PathInfo

BLOCK_KIND_WHY = {  # in display order (legends, the page)
    "given": "context the client sent: system, user and tool messages",
    "replayed": "an assistant message the model did not sample here (edited, stripped or re-tokenized)",
    "scaffold": "tokens the template put before the model's reply (e.g. the assistant header)",
    "sampled": "tokens the model sampled, trained on this path (in the loss)",
    "sampled-elsewhere": "tokens the model sampled, trained on another path, so masked here",
    "sampled-untrained": "tokens the model sampled that train on no path: the record's samples leave them out",
}


@dataclass(slots=True)
class Block:
    kind: str
    node: int
    role: str | None
    author: str
    start: int  # token (or character) offset in the path
    end: int
    trained_in: int | None = None

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def trainable(self) -> bool:
        return self.kind == "sampled"


def message_text(message) -> str:
    """A message as readable text: reasoning, content (or its parts), then tool calls."""
    if not isinstance(message, dict):
        return "" if message is None else str(message)
    parts = []
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str) and message[key]:
            parts.append(message[key])
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                parts.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
            elif isinstance(part, str):
                parts.append(part)
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            parts.append(f"{function.get('name', '?')}({function.get('arguments', '')})")
    return "\n".join(parts)


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: the unit of the page's (JavaScript) string offsets."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2  # JSON may hold lone surrogates


def node_kind(node: dict) -> str:
    """The block kind of a whole node before the sampled/scaffold split."""
    if node["author"] == "model":
        return "sampled"
    return "replayed" if node.get("role") == "assistant" else "given"


def sampled_kind(path: PathInfo, node_id: int) -> tuple[str, int | None]:
    """How a model node's sampled part counts on `path`: (kind, index of the path that trains it)."""
    if node_id in path.sampled_elsewhere:
        return "sampled-elsewhere", path.sampled_elsewhere[node_id]
    return ("sampled", None) if node_id in path.target_set else ("sampled-untrained", None)


def path_has_tokens(graph: Graph, path: PathInfo) -> bool:
    return all(graph.nodes[n].get("tokens") is not None for n in path.nodes)


def token_blocks(graph: Graph, path: PathInfo) -> list[Block]:
    blocks, position = [], 0
    nodes = graph.nodes
    for node_id in path.nodes:
        node = nodes[node_id]
        tokens = node["tokens"]
        length = tokens["length"]
        role, author = node.get("role"), node["author"]
        if author == "model":  # its scaffold, then what it sampled
            scaffold = tokens.get("sampled_start") or 0
            if scaffold > 0:
                end = position + scaffold  # one int object, the next block's start too
                blocks.append(Block("scaffold", node_id, role, author, position, end))
                position = end
            length -= scaffold
            kind, trained_in = sampled_kind(path, node_id)
        else:
            kind, trained_in = node_kind(node), None
        if length > 0:
            end = position + length
            blocks.append(Block(kind, node_id, role, author, position, end, trained_in))
            position = end
    return blocks


def text_blocks(graph: Graph, path: PathInfo) -> list[Block]:
    blocks, position = [], 0
    for node_id in path.nodes:
        node = graph.nodes[node_id]
        kind, trained_in = sampled_kind(path, node_id) if node["author"] == "model" else (node_kind(node), None)
        size = utf16_length(message_text(node.get("message")))
        end = position + size  # one int object, the next block's start too (a million-node path's 32 MB)
        blocks.append(Block(kind, node_id, node.get("role"), node["author"], position, end, trained_in))
        position = end
    return blocks


def sampled_tokens(node: dict) -> int:
    tokens = node.get("tokens")
    if tokens is None:
        return 0
    return tokens["length"] - (tokens.get("sampled_start") or 0)
