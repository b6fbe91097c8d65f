"""The health flags and the text-only reasons, described once for the page, the API and the terminal.

Each flag's name, level, unit (a rollout's or a group's) and why it is raised, and why a token
record can be shown from message text only. Nothing here raises a flag: a record's are found by
`record/rollout.py` (its document), `record/support.py` and `record/verify.py` (its sidecars), a
group's by `catalog/groups.py`.

The order is the display and sort order; group flags come first. `bridged-unknown` is true of
every record older than the `bridged` field, so tables leave it out (the band keeps it).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    name: str
    level: str  # error | warn | info
    why: str
    unit: str = "rollout"  # rollout | group


FORCED_RUN_TOKENS = 4  # sampled tokens in a row, each with a support of one id, that make a `forced-run`

FLAGS = (
    Flag("no-signal", "warn", "every counting rollout of the group got the same reward: no learning signal", "group"),
    Flag("masked", "warn", "a counting rollout's stop_reason annotation is agent_timeout or error (a trainer "
         "masks such a group; the name is the original viewer's)", "group"),
    Flag("short", "warn", "the group has fewer rollouts than the run's usual group size", "group"),
    Flag("retried", "info", "the group has superseded attempts (a repetition was run again)", "group"),
    Flag("malformed-record", "error", "the record breaks the format: it cannot be read, or it disagrees with itself"),
    Flag("tokens-missing", "warn", "the tokens sidecar is listed but not here (a mirror?): message text only"),
    Flag("failed-calls", "error", "some model calls failed and produced no node"),
    Flag("incomplete", "error", "the trajectory never ended (written at shutdown, or still open)"),
    Flag("no-logprobs", "error", "some trained tokens have no rollout logprobs"),
    Flag("out-of-support", "error",
         "a sampled token is not among the ids its sampling mask allowed: a sampler or logprobs_mode bug"),
    Flag("unbridged", "warn", "a call's prompt was re-rendered from messages, not extended from earlier tokens"),
    Flag("unbridged-inferred", "warn", "an old record whose history passes a re-tokenized copy: a re-rendered prompt"),
    Flag("re-tokenized", "info", "a client copy of a model reply rendered to other tokens: the trained context differs"
         " from what was sampled"),
    Flag("replayed", "warn", "an assistant message the model did not sample here is in the context"),
    Flag("no-train", "warn", "a sample the trainer gets trains no token, or the record's samples give it none"),
    Flag("empty", "warn", "the trajectory has no nodes"),
    Flag("truncated", "warn", "a call stopped at the token limit (finish_reason length)"),
    Flag("abandoned", "info", "the trajectory was idle past its TTL and abandoned"),
    Flag("not-trained", "info", "the run index says the trainer did not train it, and no later attempt replaced it"
         " (dropped by dynamic sampling, or its group masked)"),
    Flag("forked", "info", "the history forked: more than one path"),
    Flag("forced-run", "info", f"{FORCED_RUN_TOKENS} or more sampled tokens in a row each had a support of one id:"
         " forced tokens (constrained decoding, or a top-p that left one id)"),
    Flag("bridged-unknown", "info", "calls without a `bridged` field: the record predates it"),
)
FLAG_BY_NAME = {flag.name: flag for flag in FLAGS}
FLAG_ORDER = {flag.name: position for position, flag in enumerate(FLAGS)}
ROW_HIDDEN_FLAGS = frozenset({"bridged-unknown"})
GROUP_FLAGS = tuple(flag.name for flag in FLAGS if flag.unit == "group")


def ordered(names) -> list[str]:
    return sorted(set(names), key=FLAG_ORDER.__getitem__)


def row_flags(names) -> list[str]:
    """The flags a table row shows."""
    return [name for name in names if name not in ROW_HIDDEN_FLAGS]


def flag_catalogue() -> list[dict]:
    """The flags as the page looks them up; `row` says whether a table row shows the flag."""
    return [{"flag": f.name, "level": f.level, "why": f.why, "unit": f.unit, "row": f.name not in ROW_HIDDEN_FLAGS}
            for f in FLAGS]


@dataclass(frozen=True)
class TextOnly:
    """Why a token record is shown from message text, said once for the page and the terminal."""

    reason: str
    level: str
    note: str


TEXT_ONLY = (
    TextOnly("tokens-missing", "warn",
             "the tokens sidecar is listed but not here (a mirror?): message text only, sizes in characters"),
    TextOnly("tokens-unlisted", "error",
             "nodes slice a tokens sidecar the manifest does not list: message text only"),
    TextOnly("tokens-unreadable", "error", "the tokens sidecar is damaged: message text only"),
)
TEXT_ONLY_BY_REASON = {entry.reason: entry for entry in TEXT_ONLY}


def text_only_catalogue() -> list[dict]:
    return [{"reason": t.reason, "level": t.level, "note": t.note} for t in TEXT_ONLY]
