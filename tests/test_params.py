"""The request parameters: each parser's value, its default when absent, and the 400 a bad value gets."""

import math

import pytest

from skycap_viewer.errors import ApiError
from skycap_viewer.views import params
from skycap_viewer.views.run.values import parse_limit


def ask(**given) -> dict:
    return {name: [value] for name, value in given.items()}


@pytest.mark.parametrize(("parse", "query", "value"), [
    (lambda q: params.number(q, "step"), ask(step="3"), 3.0),
    (lambda q: params.number(q, "step"), ask(step="-inf"), -math.inf),
    (lambda q: params.number(q, "step"), ask(step=""), None),  # empty is absent
    (lambda q: params.number(q, "step"), {"step": ["x", "2"]}, 2.0),  # the last value counts
    (lambda q: params.path_number(q, "path", 0), {}, 0),
    (lambda q: params.path_number(q, "path", 0), ask(path="-1"), -1),
    (params.part_start, ask(**{"from": "40"}), 40),
    (lambda q: params.bounded_count(q, "around", 8, 64), {}, 8),
    (lambda q: params.bounded_count(q, "around", 8, 64), ask(around="64"), 64),
    (params.node_param, ask(node="n12"), 12),
    (params.node_param, ask(node="12"), 12),
    (params.layer_param, {}, 0),
    (params.layer_param, ask(layer="3"), 3),
    (parse_limit, {}, 20),
    (parse_limit, ask(limit="100000"), 100),
    (lambda q: params.group_keys(q, ("step", "instance_id")), {}, ("step", "instance_id")),
    (lambda q: params.group_keys(q, ("step",)), ask(group_by=" task , ,step"), ("task", "step")),
])
def test_a_parser_reads_its_value(parse, query, value):
    assert parse(query) == value


@pytest.mark.parametrize(("parse", "query", "detail"), [
    (lambda q: params.number(q, "step"), ask(step="nan"), "step must be a number, not 'nan'"),
    (lambda q: params.number(q, "reward_min"), ask(reward_min="high"), "reward_min must be a number, not 'high'"),
    (lambda q: params.path_number(q, "path_a", 0), ask(path_a="1.5"), "path_a must be a path index, not '1.5'"),
    (params.part_start, ask(**{"from": "x"}), "from must be a position, not 'x'"),
    (lambda q: params.bounded_count(q, "around", 8, 64), ask(around="65"),
     "around must be a count of tokens in 0..64, not '65'"),
    (lambda q: params.bounded_count(q, "around", 8, 64), ask(around="few"),
     "around must be a count of tokens in 0..64, not 'few'"),
    (params.node_param, {}, "name the node: pass node=n<id>"),
    (params.node_param, ask(node="n-1"), "node must be a node id like n3, not 'n-1'"),
    (params.node_param, ask(node="n٣"), "node must be a node id like n3, not 'n٣'"),  # another script's digit
    (params.layer_param, ask(layer=" 1"), "layer must be a layer number (0, 1, ...), not ' 1'"),
    (parse_limit, ask(limit="ten"), "limit must be a whole number, not 'ten'"),
    (lambda q: params.path_segment(q["path"][0]), ask(path="first"), "the path must be a path index, not 'first'"),
])
def test_a_bad_value_is_the_requests_fault(parse, query, detail):
    with pytest.raises(ApiError) as refused:
        parse(query)
    assert (refused.value.status, refused.value.detail) == (400, detail)


def test_a_page_takes_junk_as_its_defaults():
    assert params.parse_page(ask(limit="x", cursor="y")) == (100, 0)
    assert params.parse_page(ask(limit="5000", cursor="-3")) == (1000, 0)
    assert params.parse_page(ask(limit="7", cursor="14")) == (7, 14)


def test_a_number_is_echoed_as_written():
    assert [params.as_written(v) for v in (3.0, 2.5, None)] == [3, 2.5, None]
    assert type(params.as_written(3.0)) is int
