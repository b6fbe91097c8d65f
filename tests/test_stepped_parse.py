"""The stepped parse of long documents gives exactly what `json.loads` gives, and refuses what it refuses."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skycap_viewer.record.document import STEPPED_PARSE_CHARS, parse_in_steps, read_document
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
