"""Write a synthetic run shaped like a real GRPO run, with the project's example writer.

Shape: groups of 8 repetitions per prompt over steps; per rollout a median of ~8.3k
tokens and ~15 model calls (p95 ~21k tokens); 10% forked (a resample or an edited reply);
rewards mostly 0/1; a few truncated replies, failed calls, retried attempts, open and
abandoned rollouts; plus one huge rollout (~66k tokens, 153 nodes, 21 paths) and its group's other
member (the same prompt, then another ~60k-token trunk, failed). Everything is
derived from (seed, rollout number), so any worker process can write any rollout and the same
arguments always give the same run.
"""

import itertools
import math
import os
import random
from array import array
from multiprocessing import get_context
from pathlib import Path

from skycap_viewer.demo.writer import RecordBuilder

GROUP_SIZE = 8
PROMPTS_PER_STEP = 64
START = 1_790_000_000.0
TOOLS = [{"type": "function", "function": {
    "name": "bash", "description": "Run a shell command in the task's container.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}}]
HUGE_ID = "tr_huge000000000000"
HUGE_SIBLING_ID = "tr_huge000000000001"  # the huge rollout's group's other member
HUGE_MARKER = "HUGE ROLLOUT system prompt"


class Corpus:
    """Pseudo-text to slice messages from (words with a Zipf-like frequency), and logprobs."""

    def __init__(self, seed: int = 7, size: int = 1 << 21):
        rng = random.Random(seed)
        syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "so", "vi", "de", "pa", "qu", "ex", "on", "ar", "is"]
        words = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(3000)]
        words += ["def", "return", "import", "self", "if", "else", "for", "in", "(x)", "= 0;", "error:", "ok"]
        cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
        chunks, total = [], 0
        while total < size:
            line = " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(4, 18)))
            chunks.append(line + rng.choice([". ", ".\n", "\n", ", ", ": "]))
            total += len(chunks[-1])
        self.text = "".join(chunks)
        self.words = words  # most frequent first
        self.logprobs = array("d", (-rng.expovariate(5.0) for _ in range(1 << 17)))

    def slice(self, rng: random.Random, chars: int) -> str:
        chars = max(1, min(chars, len(self.text) // 2))
        start = rng.randrange(0, len(self.text) - chars)
        return self.text[start : start + chars]

    def sampled_logprobs(self, rng: random.Random, count: int) -> array:
        if count > len(self.logprobs):
            return (self.logprobs * (count // len(self.logprobs) + 1))[:count]
        start = rng.randrange(0, len(self.logprobs) - count + 1)
        return self.logprobs[start : start + count]


_corpus: Corpus | None = None


def corpus() -> Corpus:
    """One corpus per process, built on first use (workers build their own)."""
    global _corpus
    if _corpus is None:
        _corpus = Corpus()
    return _corpus


def lognormal(rng: random.Random, median: float, sigma: float, low: float, high: float) -> float:
    return min(high, max(low, median * math.exp(rng.gauss(0.0, sigma))))


def reply(builder: RecordBuilder, rng: random.Random, parent: int, chars: int, **options) -> int:
    """A model node with `chars` characters of content (one token each) and sampled logprobs."""
    text = corpus().slice(rng, chars)
    sampled = len(text) + (0 if options.get("finish_reason") == "length" else 1)  # the </s> it sampled
    return builder.add_model(parent, text, logprobs=corpus().sampled_logprobs(rng, sampled), **options)


def tool_call(builder: RecordBuilder, rng: random.Random, parent: int, chars: int, turn: int) -> int:
    command = corpus().slice(rng, max(8, chars // 4)).replace("\n", " ")
    thought = corpus().slice(rng, max(1, chars - len(command)))
    message = {"role": "assistant", "content": thought, "tool_calls": [{
        "id": f"call_{turn}", "type": "function", "function": {"name": "bash", "arguments": command}}]}
    sampled = len(thought) + len(f"CALL:bash:{command}") + 1
    return builder.add_model(parent, message=message, finish_reason="tool_calls",
                             logprobs=corpus().sampled_logprobs(rng, sampled))


def tool_result(builder: RecordBuilder, rng: random.Random, parent: int, chars: int, turn: int) -> int:
    return builder.add_client(parent, "tool", message={
        "role": "tool", "tool_call_id": f"call_{turn}", "content": corpus().slice(rng, chars)})


def episode(builder, rng, parent, turns: int, budget: int, *, first_turn=0, truncate_at=None,
            fail_at=None, final=True) -> int:
    """`turns` model calls after `parent`: a tool call and its result each, and a final answer
    last (unless not `final`: then the episode ends on a tool result, for a fork to answer)."""
    per_turn = max(40, budget // max(turns, 1))
    for turn in range(first_turn, first_turn + turns):
        if turn == fail_at:
            builder.add_failure(rng.choice([500, 502, 503, None]), "upstream error: the engine is gone")
        model_chars = int(per_turn * rng.uniform(0.2, 0.5))
        last = final and turn == first_turn + turns - 1
        if turn == truncate_at:
            parent = reply(builder, rng, parent, model_chars, finish_reason="length")
            if last:
                return parent
            parent = builder.add_client(parent, "user", "Your reply hit the token limit. Continue.")
            continue
        if last:
            return reply(builder, rng, parent, model_chars)
        parent = tool_call(builder, rng, parent, model_chars, turn)
        parent = tool_result(builder, rng, parent, per_turn - model_chars, turn)
    return parent


def rollout_builders(seed: int, number: int, bodies: bool = True) -> list[RecordBuilder]:
    """Rollout `number` of the run (and its superseded attempt, when it was retried). Without `bodies`,
    the last attempt is only its header (id, meta, annotations, status: what a run index lists), which
    is drawn before its nodes; a superseded attempt is always whole, the next one is drawn after it."""
    rng = random.Random(seed * 1_000_003 + number)
    group, repetition = divmod(number, GROUP_SIZE)
    step = group // PROMPTS_PER_STEP
    prompt_rng = random.Random(seed * 7_919 + group)
    success = prompt_rng.random()  # the prompt's difficulty: some groups all pass or all fail
    task = f"task-{group * 7919 % 100_000:05d}"  # one name per group (7919 is prime to 100000)
    attempts = 2 if rng.random() < 0.01 else 1
    return [one_rollout(rng, number, step, task, repetition, attempt, success, superseded=attempt < attempts - 1,
                        body=bodies or attempt < attempts - 1)
            for attempt in range(attempts)]


def one_rollout(rng, number, step, task, repetition, attempt, success, superseded, body=True) -> RecordBuilder:
    tokens = int(lognormal(rng, 8200, 0.564, 800, 60_000))
    turns = int(round(lognormal(rng, 15, 0.45, 1, 60)))
    reward = 1.0 if rng.random() < success else 0.0
    if rng.random() < 0.05:
        reward = round(rng.random(), 2)
    stop_reason = rng.choices(["complete", "agent_timeout", "error"], [97, 2, 1])[0]
    if superseded:
        stop_reason = "error"
    status, ended = "finished", True
    roll = rng.random()
    if roll < 0.005:
        status, ended = "open", False
    elif roll < 0.01:
        status = "abandoned"
    record_id = f"tr_{rng.getrandbits(64):016x}"
    meta = {"task": f"/tasks/{task}", "instance_id": task, "repetition_id": repetition, "step": step,
            "attempt": attempt}
    created = START + step * 1800 + (number % (GROUP_SIZE * PROMPTS_PER_STEP)) * 2.5 + attempt * 60
    annotations = {} if status != "finished" else {"reward": reward, "stop_reason": stop_reason}
    builder = RecordBuilder(record_id, meta=meta, annotations=annotations, status=status, ended=ended,
                            created_at=round(created, 3), tools=TOOLS)
    if not body:
        return builder
    system = builder.add_client(None, "system", corpus().slice(rng, 250))
    user = builder.add_client(system, "user", corpus().slice(rng, 350))
    truncate_at = rng.randrange(turns) if rng.random() < 0.03 else None
    fail_at = rng.randrange(turns) if rng.random() < 0.02 else None
    budget = tokens - 600
    if rng.random() < 0.10 and turns >= 3:
        fork_point = rng.randrange(1, turns - 1)
        before = budget * fork_point // turns
        trunk = episode(builder, rng, user, fork_point, before, truncate_at=truncate_at, fail_at=fail_at,
                        final=False)
        fork(builder, rng, trunk, turns - fork_point, budget - before, first_turn=fork_point)
    else:
        episode(builder, rng, user, turns, budget, truncate_at=truncate_at, fail_at=fail_at)
    return builder


def fork(builder, rng, parent: int, turns: int, budget: int, first_turn: int) -> None:
    """Two continuations of one history: the model's own, and a resample or an edited reply."""
    episode(builder, rng, parent, turns, budget, first_turn=first_turn)
    if rng.random() < 0.5:
        episode(builder, rng, parent, max(1, turns // 2), budget // 2, first_turn=first_turn)  # a resample
        return
    original = builder.nodes[next(n["id"] for n in builder.nodes if n["parent"] == parent)]["message"]
    edited = {k: v for k, v in original.items() if k != "content"} | {"content": ""}  # thinking dropped
    copy = builder.add_client(parent, "assistant", message=edited)
    result = tool_result(builder, rng, copy, budget // max(turns, 1), first_turn)
    episode(builder, rng, result, max(1, turns // 2), budget // 2, first_turn=first_turn + 1)


def huge_rollout(seed: int, repetition: int = 0) -> RecordBuilder:
    """~66k tokens on its longest path, 153 nodes, 21 paths: forks hanging off a long trunk. Its
    group's other member (`repetition` 1) shares its prompt, then takes another trunk of the same
    length without forks and fails: the pair a comparison of two long rollouts meets."""
    rng = random.Random(seed * 31 + 1)
    record_id = HUGE_ID if repetition == 0 else HUGE_SIBLING_ID
    builder = RecordBuilder(record_id, meta={"task": "/tasks/huge", "instance_id": "huge",
                                             "repetition_id": repetition, "step": 0, "attempt": 0},
                            annotations={"reward": 0.0 if repetition else 1.0, "stop_reason": "complete"},
                            created_at=START - 600 + repetition, tools=TOOLS)
    system = builder.add_client(None, "system", f"{HUGE_MARKER}. " + corpus().slice(rng, 400))
    parent = builder.add_client(system, "user", corpus().slice(rng, 600))
    if repetition:
        rng = random.Random(seed * 31 + 1 + 7919 * repetition)  # the same prompt, another answer
    trunk, turns = [], 40
    for turn in range(turns):  # 79 trunk nodes after the first two, ~60k tokens
        if turn == turns - 1:
            trunk.append(reply(builder, rng, parent, 1000))
            break
        call = tool_call(builder, rng, parent, 545, turn)
        trunk.append(call)
        parent = tool_result(builder, rng, call, 1090, turn)
        trunk.append(parent)
    forks = 0 if repetition else 20
    budget = 153 - len(builder.nodes)  # nodes left for the forks
    for index in range(forks):
        at = trunk[2 * (index * (turns - 2) // forks) + 1]  # a tool result on the trunk
        size = budget // (forks - index) | 1  # odd: a reply, then (result, reply) pairs
        budget -= size
        episode(builder, rng, at, (size + 1) // 2, 1200 * size, first_turn=100 + 10 * index)
    return builder


def small_builders(seed: int, number: int, bodies: bool = True) -> list[RecordBuilder]:
    """Small rollout `number` (and its superseded attempt, when retried): the GRPO shape of
    `rollout_builders` with one or two model calls of tens of tokens, so a million fit in a few GB
    (`bodies` as there)."""
    rng = random.Random(seed * 1_000_003 + number)
    group, repetition = divmod(number, GROUP_SIZE)
    success = random.Random(seed * 7_919 + group).random()
    task = f"task-{group * 7919 % 100_000:05d}"
    attempts = 2 if rng.random() < 0.01 else 1
    return [small_rollout(rng, number, group // PROMPTS_PER_STEP, task, repetition, attempt, success,
                          superseded=attempt < attempts - 1, body=bodies or attempt < attempts - 1)
            for attempt in range(attempts)]


def small_rollout(rng, number, step, task, repetition, attempt, success, superseded, body=True) -> RecordBuilder:
    """System, user, then a reply, or (30%) a tool call, its result and a reply; ~3% truncated,
    ~2% with a failed call, ~0.5% open and ~0.5% abandoned."""
    reward = 1.0 if rng.random() < success else 0.0
    stop_reason = "error" if superseded else rng.choices(["complete", "agent_timeout", "error"], [97, 2, 1])[0]
    roll = rng.random()
    status = "open" if roll < 0.005 else "abandoned" if roll < 0.01 else "finished"
    meta = {"task": f"/tasks/{task}", "instance_id": task, "repetition_id": repetition, "step": step,
            "attempt": attempt}
    created = START + step * 1800 + (number % (GROUP_SIZE * PROMPTS_PER_STEP)) * 2.5 + attempt * 60
    builder = RecordBuilder(f"tr_{rng.getrandbits(64):016x}", meta=meta, status=status, ended=status != "open",
                            annotations={"reward": reward, "stop_reason": stop_reason} if status == "finished" else {},
                            created_at=round(created, 3), tools=TOOLS)
    if not body:
        return builder
    parent = builder.add_client(builder.add_client(None, "system", corpus().slice(rng, 60)), "user",
                                corpus().slice(rng, rng.randint(40, 120)))
    if rng.random() < 0.02:
        builder.add_failure(rng.choice([500, 502, 503, None]), "upstream error: the engine is gone")
    if rng.random() < 0.30:
        parent = tool_result(builder, rng, tool_call(builder, rng, parent, rng.randint(40, 90), 0),
                             rng.randint(30, 120), 0)
    reply(builder, rng, parent, rng.randint(20, 100), finish_reason="length" if rng.random() < 0.03 else "stop")
    return builder


def search_needles(count: int) -> list[str]:
    """Distinct words of the corpus rare enough that a search scans a while for its first page, frequent
    enough that a run of a few thousand small records holds them (ranks 100 on, ~1 word in 1000; six
    letters or more, so a needle is rarely part of a more frequent word)."""
    return [word for word in corpus().words[100:] if len(word) >= 6][:count]


def write_chunk(job) -> tuple[int, int, int]:
    """Worker: write rollouts [first, last) made by `builders`; (records, bytes, bytes allocated on disk)."""
    builders, directory, seed, first, last = job
    records = written = allocated = 0
    for number in range(first, last):
        for builder in builders(seed, number):
            for path in builder.write(directory):
                stat = path.stat()
                written += stat.st_size
                allocated += stat.st_blocks * 512
            records += 1
    return records, written, allocated


def write_parallel(directory: Path, builders, rollouts: int, seed: int, workers: int | None, chunk: int) -> dict:
    """Rollouts [0, `rollouts`) made by `builders`, written by a pool of workers; counts and bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    jobs = [(builders, str(directory), seed, first, min(first + chunk, rollouts))
            for first in range(0, rollouts, chunk)]
    totals = {"records": 0, "bytes": 0, "disk_bytes": 0}
    before = os.times()
    # spawned, not forked: the bench writes runs while its server's pipe readers and memory sampler run,
    # and a child forked from a process with threads can inherit a lock one of them held (and hang)
    with get_context("spawn").Pool(workers or os.cpu_count()) as pool:
        for done in pool.imap_unordered(write_chunk, jobs):
            for key, value in zip(totals, done, strict=True):
                totals[key] += value
    after = os.times()  # the workers are reaped: their CPU time is counted (a busy machine's wall time is not)
    totals["cpu_s"] = sum(after[i] - before[i] for i in (2, 3))
    return totals


def generate(directory, rollouts: int, *, seed: int = 1, huge: bool = True, workers: int | None = None,
             chunk: int = 200) -> dict:
    """Write the realistic run into `directory` in parallel; counts and bytes written."""
    directory = Path(directory)
    totals = write_parallel(directory, rollout_builders, rollouts, seed, workers, chunk)
    if huge:
        for repetition in (0, 1):
            for path in huge_rollout(seed, repetition).write(directory):
                totals["bytes"] += path.stat().st_size
                totals["disk_bytes"] += path.stat().st_blocks * 512
            totals["records"] += 1
    return totals


def generate_small(directory, rows: int, *, seed: int = 1, workers: int | None = None, chunk: int = 2000) -> dict:
    """Write `rows` small rollouts into `directory` in parallel; counts and bytes written."""
    return write_parallel(Path(directory), small_builders, rows, seed, workers, chunk)
