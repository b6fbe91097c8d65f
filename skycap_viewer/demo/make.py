"""Write the demo run shipped in the package: `python -m skycap_viewer.demo.make [DIR]`.

A small GRPO-shaped run that shows every view: groups of 4 repetitions over three steps (one
retried attempt, one group with no learning signal, one short group), a forked rollout (a
resample and an edited reply), a truncated call, a failed call, tool calls, token and text
mode, multi-byte UTF-8 (with an emoji spread over two tokens), markup in a message that must
show as text, an open and an abandoned rollout. Ids and times are fixed, so running it again
writes the same bytes.
"""

import hashlib
import sys
from pathlib import Path

from skycap_viewer.demo.writer import RecordBuilder

RECORDS = Path(__file__).parent / "records"
START = 1_790_000_000.0
SEARCH_TOOLS = [{"type": "function", "function": {
    "name": "search", "description": "Search the course notes.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}}]
INSTANCE_START = {  # seconds into the step: rows sorted by time interleave as in a real run
    "add-17-25": 0, "sort-words": 600, "notes-lookup": 0, "translate-greeting": 900, "haiku": 1500,
}
SYSTEM = "You are a careful assistant. Think step by step, then give the answer on its own line."


def record_id(name: str) -> str:
    """A skycap-looking id (`tr_` + 16 hex) that stays the same across runs."""
    return "tr_" + hashlib.blake2b(name.encode(), digest_size=8).hexdigest()


FORKED_ID = record_id("search-3-1")  # `search(1, fork=True)`: what `show --demo` prints without an id


def grouped(name: str, step: int, instance: str, repetition: int, reward, *, attempt: int = 0,
            stop_reason: str = "complete", mode: str = "tokens", **options) -> RecordBuilder:
    """A rollout of the GRPO group (step, instance), at a fixed time."""
    meta = {"task": f"/tasks/{instance}", "instance_id": instance, "repetition_id": repetition, "step": step,
            "attempt": attempt}
    created = START + step * 3600 + INSTANCE_START[instance] + repetition * 40 + attempt * 300
    return RecordBuilder(record_id(name), mode, meta=meta, created_at=created,
                         annotations={"reward": reward, "stop_reason": stop_reason},
                         experts=(2, 2) if mode == "tokens" else None, sampling_mask=mode == "tokens",
                         **options)


def arithmetic(step: int, repetition: int, reward, **options) -> RecordBuilder:
    builder = grouped(f"add-{step}-{repetition}-{options.get('attempt', 0)}", step, "add-17-25", repetition,
                      reward, **options)
    system = builder.add_client(None, "system", SYSTEM)
    user = builder.add_client(system, "user", "What is 17 + 25?")
    answer = "42" if reward else "32"
    builder.add_model(user, f"17 + 25: 7 + 5 = 12, carry 1; 1 + 2 + 1 = {answer[0]}.\n{answer}")
    return builder


def sorting(step: int, repetition: int, reward, **options) -> RecordBuilder:
    builder = grouped(f"sort-{step}-{repetition}", step, "sort-words", repetition, reward, **options)
    system = builder.add_client(None, "system", SYSTEM)
    user = builder.add_client(system, "user", "Sort these words alphabetically: pear, apple, fig, banana.")
    first = builder.add_model(user, "apple, banana, pear, fig")
    check = builder.add_client(first, "user", "Check the last two again.")
    second = ("You are right to ask: fig comes before pear.\napple, banana, fig, pear" if reward
              else "They look fine to me.\napple, banana, pear, fig")
    builder.add_model(check, second)
    return builder


def search(repetition: int, reward, *, fork=False, truncate=False, fail=False) -> RecordBuilder:
    """Tool use over several turns; the features a researcher hunts for sit in these."""
    builder = grouped(f"search-3-{repetition}", 3, "notes-lookup", repetition, reward, tools=SEARCH_TOOLS)
    system = builder.add_client(None, "system", SYSTEM + " Use the search tool when you need the notes.")
    user = builder.add_client(system, "user", "Which lecture introduced the policy gradient theorem?")
    query = {"name": "search", "arguments": '{"query": "policy gradient theorem lecture"}'}
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": query}]}
    if fail:
        builder.add_failure(500, '{"error": {"message": "engine overloaded", "type": "server_error"}}')
    asked = builder.add_model(user, message=call, finish_reason="tool_calls")
    found = builder.add_client(asked, "tool", message={
        "role": "tool", "tool_call_id": "call_1",
        "content": "Lecture 7 (REINFORCE): derives the policy gradient theorem.\nLecture 9: actor-critic."})
    if truncate:
        cut_short = "Lecture 7 derives the theorem via the log-derivative trick, then Lect"
        cut = builder.add_model(found, cut_short, finish_reason="length", sampling={"max_tokens": 69})
        more = builder.add_client(cut, "user", "Your answer was cut off. Just the lecture number, please.")
        builder.add_model(more, "Lecture 7.")
        return builder
    reply = builder.add_model(found, "The notes derive the theorem in lecture 7 (REINFORCE).\nLecture 7")
    if fork:
        builder.add_model(found, "Lecture 9.", sampling={"temperature": 1.2})  # a resample, same history
        edited = builder.add_client(found, "assistant", "Lecture 7")  # the harness sent back a shorter reply
        follow = builder.add_client(edited, "user", "And which one covers actor-critic?")
        builder.add_model(follow, "Lecture 9 covers actor-critic.")
    else:
        thanks = builder.add_client(reply, "user", "Thanks. And actor-critic?")
        builder.add_model(thanks, "Lecture 9.")
    return builder


def unicode(repetition: int, reward) -> RecordBuilder:
    builder = grouped(f"unicode-3-{repetition}", 3, "translate-greeting", repetition, reward)
    user = builder.add_client(None, "user", "Traduis « bonne journée » en japonais, puis ajoute un emoji.")
    if repetition == 0:  # the emoji comes as two tokens: the first has an empty span
        pieces = [(ord(c) + 100, c) for c in "良い一日を！ "]
        pieces += [(356, ""), (ord("🌞") + 100, "🌞")]
        builder.add_model(user, "良い一日を！ 🌞", pieces=pieces)
    elif repetition == 1:  # markup in a message is text, never HTML
        builder.add_model(user, 'Voici : <img src=x onerror=alert(1)> 良い一日を！ <b>bold?</b>')
    else:
        builder.add_model(user, "良い一日を！ ☀️" if reward else "こんにちは ☀️")
    return builder


def chat(repetition: int, reward) -> RecordBuilder:
    """Text mode (an OpenAI-compatible upstream): messages only, no tokens."""
    builder = grouped(f"chat-3-{repetition}", 3, "haiku", repetition, reward, mode="text")
    user = builder.add_client(None, "user", "Write a haiku about gradient descent.")
    poem = ("Down the loss we walk,\nsmall steps in the fog of noise,\nthe valley is near."
            if reward else "Gradients descend,\nlearning rate too large: we jump,\nloss goes to the moon.")
    reply = builder.add_model(user, poem, sampling={"temperature": 0.8})
    if repetition == 3:
        again = builder.add_client(reply, "user", "Now one about overfitting.")
        builder.add_model(again, "Train loss near zero,\nvalidation climbs and climbs,\nmemory, not thought.")
    return builder


def loose_ends() -> list[RecordBuilder]:
    """Rollouts outside any group: one still open at shutdown, one abandoned past its TTL."""
    open_one = RecordBuilder(record_id("open"), status="open", ended=False, meta={"task": "/tasks/scratch"},
                             created_at=START + 4 * 3600)
    user = open_one.add_client(None, "user", "Start a long proof of the triangle inequality.")
    open_one.add_model(user, "Let x, y be vectors. By Cauchy-Schwarz, <x, y> <= |x| |y|, so")
    abandoned = RecordBuilder(record_id("abandoned"), status="abandoned", meta={"task": "/tasks/scratch"},
                              created_at=START + 4 * 3600 + 300)
    user = abandoned.add_client(None, "user", "Summarise the run so far.")
    abandoned.add_model(user, "The reward went up between step 1 and step 3.", logprobs=None)
    return [open_one, abandoned]


def demo_records() -> list[RecordBuilder]:
    builders = [arithmetic(1, r, reward) for r, reward in enumerate([1.0, 0.0, 1.0, 1.0])]
    builders += [sorting(1, r, 0.0) for r in range(4)]  # every rollout failed: no signal
    builders += [arithmetic(2, r, reward, stop_reason="error" if r == 2 else "complete")
                 for r, reward in enumerate([1.0, 1.0, 0.0, 0.0])]
    builders.append(arithmetic(2, 2, 1.0, attempt=1))  # repetition 2 ran again: attempt 1 supersedes 0
    builders += [sorting(2, r, reward, stop_reason="agent_timeout" if r == 2 else "complete")
                 for r, reward in enumerate([1.0, 0.0, 0.0])]  # one repetition missing: short
    builders += [
        search(0, 1.0), search(1, 1.0, fork=True), search(2, 0.0, truncate=True), search(3, 1.0, fail=True),
    ]
    builders += [unicode(r, reward) for r, reward in enumerate([1.0, 1.0, 0.0, 1.0])]
    builders += [chat(r, reward) for r, reward in enumerate([1.0, 0.0, 1.0, 1.0])]
    return builders + loose_ends()


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else RECORDS
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.zst"):
        old.unlink()
    builders = demo_records()
    for builder in builders:
        builder.write(target)
    size = sum(f.stat().st_size for f in target.glob("*.zst"))
    print(f"wrote {len(builders)} records ({size / 1024:.0f} KiB) to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
