"""What a full render changed: the `/retokenized` answer.

When an unbridged call renders the history from messages and an earlier reply comes out as other
tokens than the model sampled (the template dropped its reasoning, the text was encoded another way),
skycap keeps the rendered reply as a client copy beside the model's node (`shadowed_by`, format §8):
the context the trainer gets there is not what was sampled. Per copy this says where its token ids
first part from the model node's and shows the tokens around that place on both sides; per unbridged
call, whether its render reproduced the stored tokens. The pairs and the calls come from the document
(`Rollout.retokenized_pairs`, `Rollout.prompt_copy`); only the token ids need the tokens sidecar, and
without it they are said to be unknown, never guessed.
"""

from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.rollout import ABSENT, Rollout, bridged_value
from skycap_viewer.record.sidecars import TokenData
from skycap_viewer.views.record.trajectory import RecordView

AROUND = 8  # tokens shown before and after the first difference, unless asked otherwise
AROUND_MAX = 256  # at most, each side: an answer (and the page's rows) stays small however long the nodes
REPRODUCED_RULE = ("a full render (bridged false) reproduced the stored tokens unless its prompt passes a "
                   "re-tokenized copy since the previous model node: skycap keeps a node on a re-rendered prompt "
                   "only when the render gives back its stored tokens, and forks the rest (format §8)")


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index at which two token lists differ: the shorter length when one is a prefix of
    the other, None when they are equal."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def token_window(ids: list[int], pieces: list[str] | None, start: int, end: int) -> list[dict]:
    """Tokens [start, end) of a node (clipped to it), each with its index, id and text (None without text)."""
    return [{"index": i, "id": ids[i], "text": pieces[i] if pieces is not None else None}
            for i in range(max(start, 0), min(end, len(ids)))]


def token_count(node: dict) -> int | None:
    """A node's token count as its document says it (None for a node without tokens)."""
    slices = node.get("tokens")
    return slices["length"] if slices else None


def copy_entry(rollout: Rollout, model_id: int, copy_id: int, tokens: TokenData | None, around: int) -> dict:
    """One copy beside its model node: ids, counts, and where and how their token ids part (`compared`
    false, and the rest null, when the token ids cannot be read)."""
    model, copy = rollout.nodes[model_id], rollout.nodes[copy_id]
    entry = {
        "model_node_id": wire_id(model_id),
        "copy_node_id": wire_id(copy_id),
        "parent_node_id": wire_id(copy.get("parent")),
        "model_token_count": token_count(model),
        "copy_token_count": token_count(copy),
        "compared": False,
        "identical": None,
        "first_difference": None,
        "window": None,
    }
    if tokens is None or not model.get("tokens") or not copy.get("tokens"):
        return entry
    model_ids, copy_ids = tokens.ids(model["tokens"]), tokens.ids(copy["tokens"])
    at = first_difference(model_ids, copy_ids)
    centre = 0 if at is None else at
    start, end = centre - around, centre + around + 1
    entry.update(compared=True, identical=at is None, first_difference=at, window={
        "from": max(start, 0),
        "model": token_window(model_ids, tokens.pieces(model["tokens"]), start, end),
        "copy": token_window(copy_ids, tokens.pieces(copy["tokens"]), start, end),
    })
    return entry


def unbridged_calls(rollout: Rollout) -> list[dict]:
    """Every call with `bridged` false, and every call of an old record (no `bridged`) inferred unbridged
    because its prompt passes a copy (`unbridged-inferred`), in node order: whether its full render
    reproduced the stored tokens, and when not, the copy its prompt passes and the model node it stands for."""
    model_of = {copy: model for model, copy in rollout.retokenized_pairs}
    inferred = set(rollout.inferred_unbridged_nodes) if rollout.bridged[ABSENT] else set()
    calls = []
    for node_id in sorted(inferred.union(rollout.unbridged_nodes)):
        copy = rollout.prompt_copy(node_id)
        for index, call in enumerate(rollout.nodes[node_id].get("calls") or []):
            bridged = bridged_value(call)
            if bridged is False or (bridged == ABSENT and node_id in inferred):
                calls.append({"node_id": wire_id(node_id), "call_index": index, "bridged": bridged,
                              "reproduced": copy is None, "copy_node_id": wire_id(copy),
                              "model_node_id": wire_id(model_of.get(copy))})
    return calls


def retokenized_payload(rollout: Rollout, tokens: TokenData | None, text_only: str | None,
                        tokens_error: str | None, around: int = AROUND) -> dict:
    """The `/retokenized` answer: `copies` (one per re-tokenized copy, in node order), `unbridged_calls`,
    the window asked (`around`), and `notes` saying what could not be compared and why."""
    notes = []
    if rollout.mode != "tokens":
        notes.append("Text mode: no token ids were captured, so no reply is a re-tokenized copy.")
    elif tokens is None and rollout.retokenized_pairs:
        why = text_only or (f"the tokens sidecar cannot be read: {tokens_error}" if tokens_error
                            else "the record has no tokens sidecar")
        notes.append(f"Text only ({why}): the copies are listed from the document with its token counts, but "
                     "their token ids cannot be compared: first_difference is unknown (null, compared false), "
                     "not identical.")
    answer = {
        "mode": rollout.mode,
        "text_only": text_only,
        "around": around,
        "copies": [copy_entry(rollout, model, copy, tokens, around) for model, copy in rollout.retokenized_pairs],
        "unbridged_calls": unbridged_calls(rollout),
        "reproduced_rule": REPRODUCED_RULE,
        "notes": notes,
    }
    if tokens_error is not None:
        answer["tokens_error"] = tokens_error
    return answer


def retokenized_answer(view: RecordView, around: int) -> dict:
    """The `/retokenized` answer (`views.record.retokenized`): every re-tokenized copy beside its model node,
    compared by token ids when the tokens sidecar can be read, and every unbridged call."""
    tokens, error = view.tokens
    return retokenized_payload(view.rollout, tokens, view.shown(True).text_only, error, around)
