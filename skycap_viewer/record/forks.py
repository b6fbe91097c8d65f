"""Why each fork of a trajectory exists, named the way skycap's `check` names it (format §10).

A fork is every child of a parent (or every root) after the first. It is compared with one
earlier sibling, chosen by rules 1-5 of §10, and the first row of the cause table that fits
gives its kind and detail. Only the document is read: roles, authors, match hashes, messages.
"""

from dataclasses import dataclass

RENDERED_FIELDS = ("role", "content", "reasoning_content", "reasoning", "name", "tool_calls", "tool_call_id")
EMPTY_VALUES = (None, [], {})
SAME_REPLY = "the same reply again, under other sampling parameters or tokenized differently"
HARNESS_WROTE_IT = "the model sampled a message the harness had already written"
SECOND_REPLY = "a second reply to the same history"
RE_RENDERED = "the same message, rendered to different tokens"
OTHER_TOOLS = "the same message, sent with a different tool set or model"


@dataclass(frozen=True)
class Fork:
    node_id: int
    parent_id: int | None  # None: a new root
    sibling_id: int  # the earlier sibling it is compared with
    kind: str
    detail: str


def trajectory_forks(document: dict) -> list[Fork]:
    """Every fork of the document's graph, by node id (the order skycap prints them in)."""
    nodes = document["nodes"]
    token_mode = (document.get("capture") or {}).get("mode") == "tokens"
    forks = []
    for parent, children in sibling_groups(nodes):
        if len(children) < 2:
            continue  # no fork here: leave the messages of a long linear record alone
        messages = {child: normalized(nodes[child].get("message"), token_mode) for child in children}
        for index in range(1, len(children)):
            node, earlier = children[index], children[:index]
            sibling = chosen_sibling(nodes, messages, node, earlier)
            kind, detail = cause(nodes[node], nodes[sibling], messages[node], messages[sibling])
            forks.append(Fork(node, parent, sibling, kind, detail))
    return sorted(forks, key=lambda fork: fork.node_id)


def sibling_groups(nodes: list[dict]) -> list[tuple[int | None, list[int]]]:
    """(parent, children in creation order): the roots first, then parents in the order they got a
    first child. Nodes are stored in creation order, so that order falls out of one pass."""
    groups: dict[int | None, list[int]] = {None: []}
    for node in nodes:
        groups.setdefault(node.get("parent"), []).append(node["id"])
    return list(groups.items())


def normalized(message, token_mode: bool) -> dict:
    """A message as forks compare it: like the match hash, without top-level keys that are null,
    `[]` or `{}`; in token mode only the fields a renderer reads (the rest never reaches the model)."""
    if not isinstance(message, dict):
        return {}
    return {key: value for key, value in message.items()
            if value not in EMPTY_VALUES and (not token_mode or key in RENDERED_FIELDS)}


def same_hash(a: dict, b: dict) -> bool:
    """Equal match hashes; a node without one matches nothing (skycap always writes it)."""
    return a.get("match_hash") is not None and a.get("match_hash") == b.get("match_hash")


def chosen_sibling(nodes: list[dict], messages: dict[int, dict], node: int, earlier: list[int]) -> int:
    """The earlier sibling a fork is compared with: §10's rules 1-5, the first that finds one."""
    this = nodes[node]
    latest = earlier[::-1]  # ties and "the latest" go to the most recent sibling
    matching = [s for s in latest if same_hash(this, nodes[s])]
    if matching:
        return next((s for s in matching if nodes[s]["author"] == "model"), matching[0])
    equal = [s for s in latest if messages[s] == messages[node]]
    if equal:
        return equal[0]
    same_role = [s for s in latest if nodes[s].get("role") == this.get("role")]
    if not same_role:
        return latest[0]
    if this["author"] == "model":
        return next((s for s in same_role if nodes[s]["author"] == "model"), same_role[0])
    return min(same_role, key=lambda s: (len(changed_keys(messages[s], messages[node])),
                                         nodes[s]["author"] != "model"))


def changed_keys(before: dict, after: dict) -> list[str]:
    """The top-level keys on which two normalized messages differ, sorted."""
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def changes(before: dict, after: dict) -> str:
    """`{key} dropped|added|changed`, comma-joined, from the sibling's message to the node's."""
    def change(key):
        return "dropped" if key not in after else "added" if key not in before else "changed"
    return ", ".join(f"{key} {change(key)}" for key in changed_keys(before, after))


def cause(node: dict, sibling: dict, message: dict, sibling_message: dict) -> tuple[str, str]:
    """(kind, detail): the first row of §10's cause table that fits the node and its sibling."""
    same_role = node.get("role") == sibling.get("role")
    role, other = role_name(node.get("role")), role_name(sibling.get("role"))
    if node["author"] == "model":
        if same_hash(node, sibling):
            return "resample", SAME_REPLY if sibling["author"] == "model" else HARNESS_WROTE_IT
        if same_role:
            return "resample", SECOND_REPLY
        return "resample", f"a reply to a history the other path continues with {article(other)} {other} message"
    if same_hash(node, sibling):
        return "re-rendered", RE_RENDERED
    if message == sibling_message:
        return "tools or model", OTHER_TOOLS
    if not same_role:
        return "different message", (f"{article(role)} {role} message where the other path has "
                                      f"{article(other)} {other} message")
    if sibling["author"] == "model":
        return "edited reply", f"the harness sent back the model's reply with {changes(sibling_message, message)}"
    return "different message", f"a different {role} message: {changes(sibling_message, message)}"


def role_name(role) -> str:
    """A node's role as a word: a message without one is `unnamed`."""
    return "unnamed" if role is None else str(role)


def article(word: str) -> str:
    """`an` before a, e, i, o or "un" (`an unnamed`), else `a` (`a user`): skycap's rule, not English's."""
    return "an" if word.startswith(("a", "e", "i", "o", "un")) else "a"
