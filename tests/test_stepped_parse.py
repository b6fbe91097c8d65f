"""The stepped parse of long documents gives exactly what `json.loads` gives, and refuses what it refuses."""

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skycap_viewer.record import document as documents
from skycap_viewer.record.document import (
    SHARED_CHARS,
    SHARED_SHAPES,
    SHARED_STRINGS,
    SHARED_VALUES_CHARS,
    STEPPED_PARSE_CHARS,
    SharedValues,
    parse_in_steps,
    parse_json,
    read_document,
)
from skycap_viewer.server.in_process import InProcessApi
from tests.support.chain_record import write_chain

DECODER = json.JSONDecoder()
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20)
SPACES = st.sampled_from(["", " ", "\n", " \t\r\n "])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), VALUES, max_size=6), SPACES, st.integers(min_value=0, max_value=2))
@pytest.mark.slow
def test_equals_json_loads_for_any_object(document, space, indent):
    text = space + json.dumps(document, indent=indent or None, ensure_ascii=bool(indent % 2)) + space
    assert parse_in_steps(text, DECODER) == json.loads(text)


@pytest.mark.parametrize("text", [
    '{"a": 1,}', '{"a" 1}', '{"a": [1, 2,]}', '{"a": [1 2]}', '{"a": 1} x', '{"a": 1', '{"a": [1, 2',
    "{'a': 1}", '{"a": tru}', '{"a": 1}{"b": 2}', '{,}',
])
def test_refuses_what_json_loads_refuses(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        parse_in_steps(text, DECODER)


def test_duplicate_keys_and_non_objects_behave_as_json_loads():
    assert parse_in_steps('{"a": 1, "a": [2]}', DECODER) == {"a": [2]}
    assert parse_in_steps(" [1, 2] ", DECODER) == [1, 2]
    assert parse_in_steps("{}", DECODER) == {} and parse_in_steps('{"n": []}', DECODER) == {"n": []}


def test_a_long_document_is_read_in_steps_to_the_same_record(tmp_path):
    document = write_chain(tmp_path, 60_000)
    text = json.dumps(document, separators=(",", ":"))
    assert len(text) > STEPPED_PARSE_CHARS, "long enough to take the stepped parse"
    assert read_document(tmp_path / "chain.json.zst") == json.loads(text)


def short_strings_document() -> str:
    """A text past `STEPPED_PARSE_CHARS` of many equal short strings: in nodes, and in lists."""
    document = {"format_version": 1, "nodes": [{"id": i, "role": "assistant", "message": {"role": "assistant",
                                                "content": f"turn {i} " * 3}} for i in range(50_000)],
                "junk": ["ab"] * 300_000, "meta": {"junk": ["cd"] * 300_000}}
    text = json.dumps(document)
    assert len(text) > STEPPED_PARSE_CHARS
    return text


def test_a_long_documents_equal_short_strings_are_one_object_each(monkeypatch):
    """Past `SHARED_VALUES_CHARS`, roles, authors and the like, and millions of two-character strings in a
    list (top level or in an object) are one object each once parsed (51 bytes each, a chain's ~190 bytes a
    node); a long string is its own, and the result is `json.loads`'s."""
    text = short_strings_document()
    monkeypatch.setattr(documents, "SHARED_VALUES_CHARS", len(text) - 1)
    parsed = parse_json(text)
    assert parsed == json.loads(text)
    nodes = parsed["nodes"]
    assert nodes[0]["role"] is nodes[-1]["role"] is nodes[-1]["message"]["role"]
    assert parsed["junk"][0] is parsed["junk"][-1] and parsed["meta"]["junk"][0] is parsed["meta"]["junk"][-1]
    assert len(nodes[0]["message"]["content"]) > SHARED_CHARS


def test_a_long_documents_objects_of_one_key_set_hold_their_keys_once(monkeypatch, tmp_path):
    """Past `SHARED_VALUES_CHARS` a chain's nodes, messages and calls are key-sharing dicts (their keys held
    once for all of a key set: ~100 bytes less each), a node's id, depth and its child's parent one int,
    equal to `json.loads`'s and encoded byte for byte as they were written, key order included; one set
    later changes in it alone."""
    document = write_chain(tmp_path, 60_000)
    document["nodes"][7]["message"] = {"content": "reordered", "role": "user"}
    text = json.dumps(document, separators=(",", ":"))
    monkeypatch.setattr(documents, "SHARED_VALUES_CHARS", len(text) - 1)
    parsed = parse_json(text)
    assert parsed == json.loads(text) and json.dumps(parsed, separators=(",", ":")) == text
    nodes = parsed["nodes"]
    if sys.version_info >= (3, 11):  # 3.10 makes an instance dict filled by `update` a dict of its own: no saving
        for made in (nodes[-1], nodes[-1]["message"], nodes[-1]["calls"][0]):
            assert sys.getsizeof(made) < sys.getsizeof(dict(made)), made
    assert nodes[5000]["parent"] is nodes[4999]["id"] and nodes[5000]["depth"] is nodes[5000]["id"]  # one int each
    nodes[-1]["message"]["role"] = "tool"
    assert nodes[-3]["message"]["role"] == "assistant" and list(nodes[7]["message"]) == ["content", "role"]


def test_the_key_sets_given_a_shared_table_are_bounded_whatever_the_text_holds():
    """Objects of ever new key sets make no more than `SHARED_SHAPES` tables; the rest are plain dicts."""
    shared = SharedValues()
    made = [shared.object([(f"k{n}", n), ("v", "ab")]) for n in range(SHARED_SHAPES + 100)]
    assert made == [{f"k{n}": n, "v": "ab"} for n in range(SHARED_SHAPES + 100)]
    assert len(shared.shapes) == SHARED_SHAPES and made[0]["v"] is made[-1]["v"]


def test_a_shorter_long_documents_strings_are_as_parsed_its_keys_shared():
    """Below `SHARED_VALUES_CHARS` only keys are shared (as `json.loads` does): sharing strings costs ~35% more
    of the parse's instructions, and saves little in a document this short."""
    text = short_strings_document()
    assert len(text) <= SHARED_VALUES_CHARS
    parsed = parse_json(text)
    assert parsed == json.loads(text)
    first, last = parsed["nodes"][0], parsed["nodes"][-1]
    assert [id(key) for key in first] == [id(key) for key in last]
    assert first["role"] is not last["role"] and parsed["junk"][0] is not parsed["junk"][-1]


def test_the_shared_strings_table_is_bounded_whatever_the_text_holds():
    """Millions of distinct short strings make no bigger table than `SHARED_STRINGS` entries."""
    shared = SharedValues()
    distinct = [f"s{n}" for n in range(SHARED_STRINGS + 1000)]
    assert [shared.value(text) for text in distinct] == distinct
    assert shared.object([("k", "s1"), ("new", "unseen one")]) == {"k": "s1", "new": "unseen one"}
    assert len(shared.strings) == SHARED_STRINGS


ANSWERS = (("graph", {}), ("graph", {"from": ["20000"]}), ("paths", {"path": ["0"]}),
           ("paths", {"path": ["0"], "from": ["20000"]}), ("paths", {"text": ["false"]}), ("timeline", {}),
           ("exchanges", {}), ("notable", {}), ("message", {"node": ["29999"]}))


def test_a_chains_answers_are_the_same_byte_for_byte_from_the_parse_that_shares(tmp_path, monkeypatch):
    """A record past `SHARED_VALUES_CHARS` answers exactly what it would parsed as `json.loads` does (its
    objects key-sharing dicts, its short strings shared): here a 30k-node chain made to count as one."""
    write_chain(tmp_path / "run", 30_000)

    def answers() -> list[bytes]:
        api = InProcessApi([tmp_path / "run"], ("step", "instance_id"))
        return [api.ask(["trajectories", "chain", route], params) for route, params in ANSWERS]

    plain = answers()
    monkeypatch.setattr(documents, "SHARED_VALUES_CHARS", STEPPED_PARSE_CHARS)
    shared = answers()
    assert [len(answer) for answer in shared] == [len(answer) for answer in plain]
    assert shared == plain
