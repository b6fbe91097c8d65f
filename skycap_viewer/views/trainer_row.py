"""One path as the trainer gets it (format §7): `input_ids`, `loss_mask`, `logprobs`, and the blocks they tile.

The blocks are the path's `/paths` blocks (`record/blocks.py`): cut on node boundaries and on each
model node's `sampled_start`, their `[start, end)` ranges index `input_ids`. The loss mask is 1
exactly on the `sampled` blocks, the targets the record's own `samples` rows train on this path
(the `all` rule without them), so it says what `/paths` draws as trained and nothing else. Built
from a `RecordView`: the row reads the tokens sidecar the view already holds.
"""

from skycap_viewer.flags import TEXT_ONLY_BY_REASON
from skycap_viewer.record.fields import wire_id
from skycap_viewer.record.sidecars import TokenData
from skycap_viewer.views.trajectory import RecordView


class NoTrainerRow(Exception):
    """Why a record (or one of its paths) has no token row: text mode, its tokens not here or damaged,
    a node written without tokens."""


def record_tokens(view: RecordView) -> TokenData:
    """The record's tokens sidecar; `NoTrainerRow` saying why when there is none to build rows from."""
    rollout = view.rollout
    if not rollout.slices_tokens:
        raise NoTrainerRow(f"a {rollout.mode}-mode record: its nodes have no tokens, only message text")
    if rollout.text_only is not None:
        raise NoTrainerRow(f"{rollout.text_only}: {TEXT_ONLY_BY_REASON[rollout.text_only].note}")
    tokens, error = view.tokens
    if error is not None:
        raise NoTrainerRow(f"tokens-unreadable: {error}")
    if tokens is None:  # listed and present when the view was made, gone when it was read
        raise NoTrainerRow(f"tokens-missing: {TEXT_ONLY_BY_REASON['tokens-missing'].note}")
    return tokens


def trainer_row(view: RecordView, path_index: int) -> dict:
    """Path `path_index`'s token row: `path`, `leaf_node_id`, `trains` (a row of the record's samples), `input_ids`,
    `loss_mask`, `logprobs` (None where the record has none) and `blocks` ({node_id, start, end, kind}).
    Raises IndexError for a path there is not, `NoTrainerRow` when the path has no token row."""
    tokens = record_tokens(view)
    rollout = view.rollout
    paths = rollout.paths
    if not 0 <= path_index < len(paths):
        raise IndexError(f"the trajectory has {len(paths)} path(s)")
    path = paths[path_index]
    if not path.token_blocked:
        bare = next(n for n in path.info.nodes if rollout.nodes[n].get("tokens") is None)
        raise NoTrainerRow(f"node {wire_id(bare)} has no tokens: path {path_index} has no token row")
    input_ids, logprobs = [], []
    for node_id in path.info.nodes:
        slices = rollout.nodes[node_id]["tokens"]
        input_ids += tokens.ids(slices)
        logprobs += tokens.logprobs_of(slices) if slices.get("has_logprobs") else [None] * slices["length"]
    loss_mask = [0] * len(input_ids)
    for block in path.blocks:
        if block.trainable:
            loss_mask[block.start:block.end] = [1] * block.size
    return {
        "path": path_index,
        "leaf_node_id": wire_id(path.info.leaf),
        "trains": path.info.trains,
        "input_ids": input_ids,
        "loss_mask": loss_mask,
        "logprobs": logprobs,
        "blocks": [{"node_id": wire_id(b.node), "start": b.start, "end": b.end, "kind": b.kind} for b in path.blocks],
    }
