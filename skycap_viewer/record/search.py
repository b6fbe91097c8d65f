"""Find text in one document's nodes: the search core the API's `/v1/search` and `grep` share.

By default a node's searched text is what the Path tab shows of it (`Query.within == "shown"`): the
text its tokens decode to, chat template and the model's own tool-call syntax included (`CALL:…`),
where the record has readable tokens for it; else its message text. With `within == "message"` it is
always the message text: `blocks.message_text` (reasoning, then content or its text parts, then each
tool call as `name(arguments)`, joined by newlines; a tool result is a `tool` node's content). Each hit
says which it matched (`in`: `tokens` or `message`); its offsets are code points into that text, the
string `/paths` sends as the node's `text`. A node's kind is `blocks.node_kind`, the classification the
Path's blocks use: `sampled` (model-authored), `replayed` (a client-authored assistant turn), `given`.
A node's tool-call ids (a result's `tool_call_id`, the `id` of each call it makes) are searched too when
that text does not hold them (a template may not render them): a hit there is `in: "tool_call_ids"`, its
offsets into `tool_call_ids` (the ids joined by spaces), since the id is what one chases a pairing by.

Without `case`, plain text is matched on the full Unicode case folding (`str.casefold`: `ß` finds
`SS`) and offsets are mapped back to the original text; a regex is matched with `re.IGNORECASE`
(Python's simple case folding), since folding a pattern would change what it means (`\\S`).

Most documents of a run hold no hit, so `may_match` first looks for a plain text in the document's
JSON text, before it is parsed: where it cannot be, and no tokens are to be searched, the document
is not parsed at all. That holds
only where every node text is a JSON string as written, so it answers "maybe" (parse and look)
for a text of other characters than ASCII letters, digits, spaces, `_` and `-` (which JSON never
escapes and `message_text` never adds) and for a document with a `\\u` escape, a message that is
not an object, a list content, or a tool call's name or arguments that is not a string. Where the
tokens are searched, `shown_may_match` looks for the same text in their sidecar's `text` array
before its arrays are decoded and the nodes walked: a document without the text then costs a third
less, small records and realistic ones alike.
"""

import re
from dataclasses import dataclass

from skycap_viewer.record.blocks import message_text, node_kind
from skycap_viewer.record.fields import wire_id

KINDS = ("all", "sampled", "given", "replayed")
WITHIN = ("shown", "message")  # what text of a node is searched: what the Path tab shows, or the message
MAX_PATTERN = 1000  # characters of a search text or regex
MAX_DOCUMENT_HITS = 1000  # hits kept per document; the answer says when a cap left some out
CONTEXT = 40  # code points of text kept on each side of a match in a snippet
MAX_MATCH_SHOWN = 200  # code points of the match itself in a snippet (start/end always say all of it)


RAISED = {RecursionError: "nested too deeply to compile", MemoryError: "too large to compile"}
PREFILTERED = re.compile(r"[A-Za-z0-9 _-]+")  # texts `may_match` can rule out from the JSON text
# a node text JSON may hold other than as written (besides a `\u` escape, looked for alone: a search for a literal
# is fast, and an alternation starting with it made every character of every document a candidate, 30 µs in 3 KB)
NOT_AS_WRITTEN = re.compile(r'"(?:message":\s*[^{n\s]|content":\s*\[|(?:name|arguments)":\s*[^"\s])')


@dataclass(frozen=True)
class Query:
    """What to find and where; hashable, so a search is keyed by it."""

    text: str
    regex: bool = False
    case: bool = False
    kind: str = "all"
    role: str | None = None
    within: str = "shown"


def query_problem(query: Query) -> str | None:
    """Why `query` cannot run (a bad regex names its error and position), else None."""
    if not query.text:
        return "text is required"
    if len(query.text) > MAX_PATTERN:
        return f"text is {len(query.text)} characters; at most {MAX_PATTERN}"
    if query.kind not in KINDS:
        return f"kind must be one of {'|'.join(KINDS)}"
    if query.within not in WITHIN:
        return f"in must be one of {'|'.join(WITHIN)}"
    if query.regex:
        try:
            compiled(query)
        except re.error as error:
            where = f" at position {error.pos}" if error.pos is not None else ""
            return f"bad regex: {error.msg}{where}"
        except (OverflowError, RecursionError, MemoryError, ValueError) as error:  # `a{4294967296}`, 499 groups
            return f"bad regex: {RAISED.get(type(error)) or str(error) or type(error).__name__}"
    return None


def ruled_out_unparsed(query: Query) -> bool:
    """Whether the query's text may be ruled out before a document is parsed: a plain text of characters that
    neither JSON nor UTF-8 write otherwise (`PREFILTERED`)."""
    return not query.regex and PREFILTERED.fullmatch(query.text) is not None


def may_match(json_text: str, query: Query) -> bool:
    """False only when no node of the document whose JSON text this is can hold the query's text."""
    if not ruled_out_unparsed(query) or "\\u" in json_text or NOT_AS_WRITTEN.search(json_text):
        return True
    return query.text in json_text if query.case else query.text.casefold() in json_text.casefold()


def shown_may_match(payload: bytes, manifest: dict, query: Query) -> bool:
    """False only when no node's shown text can hold the query's text: each is a slice of the `text` array of the
    tokens sidecar (`payload`, as `manifest` lays it out) that decodes as UTF-8 on its own, so it is in that array
    decoded whole, bad bytes replaced (after a bad byte, decoding goes on at the next one that starts a character,
    and a slice starts with one). Folding is per character, so folding the whole folds each slice."""
    if not ruled_out_unparsed(query):
        return True
    spec = manifest.get("arrays", {}).get("text")
    if not isinstance(spec, dict) or spec.get("dtype") != "uint8" or len(spec.get("shape") or ()) != 1:
        return True  # not a text array the tokens can be shown from: what reading them says is left to them
    start = spec["offset"]
    text = payload[start : start + spec["shape"][0]]
    if query.case:
        return query.text.encode() in text  # ASCII: its bytes stand for nothing else in UTF-8
    return query.text.casefold() in text.decode("utf-8", "replace").casefold()


def compiled(query: Query) -> re.Pattern:
    """The pattern a query runs (a plain text is escaped; its folding is done on the text instead)."""
    if not query.regex:
        return re.compile(re.escape(query.text if query.case else query.text.casefold()))
    return re.compile(query.text, 0 if query.case else re.IGNORECASE)


def folded(text: str) -> tuple[str, list[int] | None]:
    """(the casefolded text, for each of its code points the original one's index, or None when the
    two align: folding only grows text, so equal lengths mean one code point for one)."""
    fold = text.casefold()
    if len(fold) == len(text):
        return fold, None
    pieces = [len(char.casefold()) for char in text]
    owner = [index for index, size in enumerate(pieces) for _ in range(size)]
    return fold, owner


def text_matches(pattern: re.Pattern, text: str, fold: bool, room: int):
    """(start, end) of up to `room` non-overlapping matches in `text`, as offsets into `text` itself."""
    searched, owner = folded(text) if fold else (text, None)
    found = []
    for match in pattern.finditer(searched):
        start, end = match.span()
        if start == end:
            continue  # an empty match marks nothing
        if owner is not None:
            start, end = owner[start], owner[end - 1] + 1
        found.append((start, end))
        if len(found) >= room:
            break
    return found


def snippet(text: str, start: int, end: int) -> dict:
    """The match and its surroundings as plain parts, so a page can show them without markup."""
    return {"before": text[max(0, start - CONTEXT) : start], "match": text[start : min(end, start + MAX_MATCH_SHOWN)],
            "after": text[end : end + CONTEXT]}


def node_wanted(node: dict, query: Query) -> bool:
    return (query.kind == "all" or node_kind(node) == query.kind) and (query.role is None
                                                                       or node.get("role") == query.role)


def searched_text(node: dict, query: Query, tokens) -> tuple[str, str]:
    """(the node's text the query searches, which one it is: `tokens` or `message`); `tokens` is the
    record's `TokenData`, or None when it has none to show."""
    if query.within == "shown" and tokens is not None and node.get("tokens"):
        shown = tokens.shown_text(node["tokens"])
        if shown is not None:
            return shown, "tokens"
    return message_text(node.get("message")), "message"


def tool_call_ids(message, text: str) -> str:
    """The message's tool-call ids that `text` (the node's searched text) does not hold, joined by spaces."""
    if not isinstance(message, dict):
        return ""
    calls = message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []
    ids = [message.get("tool_call_id"), *(call.get("id") for call in calls if isinstance(call, dict))]
    return " ".join(dict.fromkeys(i for i in ids if isinstance(i, str) and i and i not in text))


def document_hits(document: dict, query: Query, trajectory_id: str, tokens=None) -> tuple[list[dict], bool]:
    """(every hit in the document's nodes, in node order, whether `MAX_DOCUMENT_HITS` cut some off);
    `tokens` (the record's `TokenData`) is searched where a node has them, unless the query asks for
    message text."""
    pattern = compiled(query)
    fold = not query.case and not query.regex
    hits = []
    for node in document["nodes"]:
        if not node_wanted(node, query):
            continue
        text, within = searched_text(node, query, tokens)
        for searched, where in ((text, within), (tool_call_ids(node.get("message"), text), "tool_call_ids")):
            for start, end in text_matches(pattern, searched, fold, MAX_DOCUMENT_HITS - len(hits)):
                hits.append({"trajectory_id": trajectory_id, "node_id": wire_id(node["id"]), "role": node.get("role"),
                             "kind": node_kind(node), "in": where, "start": start, "end": end,
                             "snippet": snippet(searched, start, end)})
            if len(hits) >= MAX_DOCUMENT_HITS:
                return hits, True
    return hits, False


def node_texts(document: dict, tokens=None) -> list[dict]:
    """Each node's searched texts, for a search matched elsewhere (a static bundle's page): the text it
    shows (`shown`, `in` saying which) and its message text where that differs, with the id, role and
    kind a query picks nodes and names hits by."""
    shown_query, message_query = Query("", within="shown"), Query("", within="message")
    nodes = []
    for node in document["nodes"]:
        shown, within = searched_text(node, shown_query, tokens)
        entry = {"node_id": wire_id(node["id"]), "role": node.get("role"), "kind": node_kind(node), "shown": shown,
                 "in": within}
        if within == "tokens":
            entry["message"] = searched_text(node, message_query, tokens)[0]
        nodes.append(entry)
    return nodes
