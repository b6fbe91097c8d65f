"""The API's JSON: whatever a record's strings hold, the answer is valid UTF-8 JSON that reads back the same."""

import json

from skycap_viewer.wire import RawJson, encode_json


def test_a_lone_surrogate_is_sent_as_its_escape_and_reads_back_the_same():
    payload = {"id": "\ud800", "text": "a\udfffb é 😀", "\udc00key": [1.5, "\ud83d"]}
    body = encode_json(payload)
    body.decode("utf-8")  # strictly valid UTF-8
    assert b"\\ud800" in body and "é 😀".encode() in body  # escaped only where UTF-8 has no form
    assert json.loads(body) == payload


def test_spliced_rows_beside_a_lone_surrogate_stay_valid():
    payload = {"note": "\ud800", "data": RawJson(b'[{"id":"x"}]')}
    assert json.loads(encode_json(payload)) == {"note": "\ud800", "data": [{"id": "x"}]}
