"""Run statistics for `skycap-viewer summary`, from documents only (no sidecar is opened).

Rewards are reported as recorded (`fields.recorded_number`): value counts, or a histogram when
there are many distinct values. No means, pass rates or advantages: the viewer shows data, it
does not score runs. Groups are formed by `groups.build_grouping`, as the server forms them.
"""

from collections import Counter
from dataclasses import dataclass, field

from skycap_viewer.flags import FLAGS
from skycap_viewer.record.fields import created_ts, recorded_number, scalar_text, step_of, task_id
from skycap_viewer.record.rollout import ABSENT, Rollout

EXACT_REWARD_VALUES = 12  # at most this many distinct rewards are listed one by one
REWARD_BUCKETS = 10
BRIDGED_KEYS = ("true", "false", "null", ABSENT)


def reward_summary(rewards: list, missing: int) -> dict | None:
    """Exact value counts for a few distinct values, else a 10-bucket histogram `[from, to)`."""
    if not rewards:
        return None
    summary = {"count": len(rewards), "missing": missing, "min": min(rewards), "max": max(rewards)}
    counts = Counter(rewards)
    if len(counts) <= EXACT_REWARD_VALUES:
        summary["values"] = [[value, n] for value, n in sorted(counts.items())]
        return summary
    low, high = summary["min"], summary["max"]
    half_span = high / 2 - low / 2  # halves, so that rewards near ±1e308 cannot overflow
    buckets = [0] * REWARD_BUCKETS
    for value in rewards:
        fraction = (value / 2 - low / 2) / half_span
        buckets[min(int(fraction * REWARD_BUCKETS), REWARD_BUCKETS - 1)] += 1
    edges = [2 * (low / 2 + half_span * (i / REWARD_BUCKETS)) for i in range(REWARD_BUCKETS)] + [high]
    summary["histogram"] = [{"from": edges[i], "to": edges[i + 1], "n": n} for i, n in enumerate(buckets)]
    return summary


@dataclass
class RunStats:
    records: int = 0
    unreadable: list[dict] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    modes: Counter = field(default_factory=Counter)
    steps: Counter = field(default_factory=Counter)
    tasks: Counter = field(default_factory=Counter)
    without_task: int = 0
    paths: Counter = field(default_factory=Counter)
    most_paths: tuple[int, str] | None = None
    forked: int = 0
    branch_points: int = 0
    nodes: int = 0
    calls: int = 0
    bridged: Counter = field(default_factory=Counter)
    tokens: int = 0
    samples: Counter = field(default_factory=Counter)  # what the trainer gets: sequences, tokens, trained tokens
    rules: Counter = field(default_factory=Counter)
    failures: int = 0
    with_failures: int = 0
    flags: Counter = field(default_factory=Counter)
    rewards: list = field(default_factory=list)
    reward_missing: int = 0
    rows: list[dict] = field(default_factory=list)  # what grouping needs of each readable record
    symlinks: dict = field(default_factory=dict)  # record id -> real path, for documents linked out of the run

    def add_unreadable(self, record_id: str, error: str) -> None:
        """A document that cannot be read: listed with its error, and flagged as the index flags it."""
        self.unreadable.append({"id": record_id, "error": error})
        self.flags["malformed-record"] += 1

    def add(self, record_id: str, document: dict, rollout: Rollout) -> None:
        """Count one readable record; `record_id` is its file's id, the one `show` takes."""
        self.records += 1
        meta = document.get("meta") or {}
        self.statuses[document["status"]] += 1
        self.modes[rollout.mode] += 1
        step = step_of(meta)
        self.steps["none" if step is None else scalar_text(step)] += 1
        task = task_id(meta)
        if task is None:
            self.without_task += 1
        else:
            self.tasks[task] += 1
        paths = len(rollout.graph.paths)
        self.paths[paths] += 1
        if self.most_paths is None or paths > self.most_paths[0]:
            self.most_paths = (paths, record_id)
        self.forked += paths > 1
        self.branch_points += len(rollout.graph.branch_points)
        self.nodes += len(rollout.nodes)
        self.calls += len(rollout.calls)
        self.bridged.update(rollout.bridged)
        self.tokens += sum(n["tokens"]["length"] for n in rollout.nodes if n.get("tokens") is not None)
        self.samples["sequences"] += len(rollout.samples)
        if rollout.unit == "tokens":
            self.samples["measured"] += len(rollout.samples)
            self.samples["tokens"] += rollout.tokens
            self.samples["trained_tokens"] += rollout.trainable
        self.rules[rollout.graph.rule or "none (all applied)"] += 1
        failures = len(document.get("failures") or [])
        self.failures += failures
        self.with_failures += failures > 0
        self.flags.update(rollout.flags)
        reward = recorded_number(document.get("annotations"))
        if reward is None:
            self.reward_missing += 1
        else:
            self.rewards.append(reward)
        self.rows.append({  # the fields of an index row that grouping reads
            "id": record_id,
            "meta": meta,
            "annotations": document.get("annotations") or {},
            "created_ts": created_ts(document),
            "step": step,
            "task_id": task_id(meta),
        })

    def samples_counted(self) -> dict:
        """Sequences, those with tokens, and their tokens and tokens in the loss: null when sequences there
        are but none has tokens (text mode), where 0 would say they train nothing."""
        sequences, measured = self.samples.get("sequences", 0), self.samples.get("measured", 0)
        unmeasured = sequences and not measured
        return {"sequences": sequences, "with_tokens": measured,
                **{key: None if unmeasured else self.samples.get(key, 0) for key in ("tokens", "trained_tokens")}}

    def as_dict(self, groups: dict) -> dict:
        return {
            "records": self.records,
            "unreadable": len(self.unreadable),
            "statuses": dict(sorted(self.statuses.items())),
            "modes": dict(sorted(self.modes.items())),
            "steps": dict(sorted(self.steps.items(), key=lambda item: _step_order(item[0]))),
            "tasks": dict(sorted(self.tasks.items())),
            "without_task": self.without_task,
            "symlinks": self.symlinks,
            "documents": self.records + len(self.unreadable),  # what `flags` counts over
            "groups": groups,
            "paths": {
                "histogram": {str(k): n for k, n in sorted(self.paths.items())},
                "max": self.most_paths and {"paths": self.most_paths[0], "id": self.most_paths[1]},
            },
            "forks": {"forked_records": self.forked, "branch_points": self.branch_points},
            "nodes": self.nodes,
            "calls": {"total": self.calls, "bridged": {k: self.bridged.get(k, 0) for k in BRIDGED_KEYS}},
            "tokens": self.tokens,
            "samples": self.samples_counted(),
            "samples_rules": dict(sorted(self.rules.items())),
            "failures": {"total": self.failures, "records": self.with_failures},
            "flags": {flag.name: self.flags.get(flag.name, 0) for flag in FLAGS if flag.unit == "rollout"},
            "rewards": reward_summary(self.rewards, self.reward_missing),
            "errors": self.unreadable,
        }


def _step_order(step: str):
    try:
        return (0, float(step), "")
    except ValueError:
        return (1, 0.0, step)
