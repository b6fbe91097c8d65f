"""Whatever the bytes, reading a record gives a valid result or `RecordError`, nothing else.

Hypothesis damages valid corpus records the ways files get damaged (truncation, bit flips,
spliced JSON) and the ways a writer or an editor can get a document wrong (a key deleted, a
value of another type, a huge number), in the document and in the tokens sidecar. Everything
that reads a record then runs on the result: reader, rollout analysis, tokens, `check`, the
`/paths` payload, `show` and `summary`.
"""

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skycap_viewer.commands.check import check_record
from skycap_viewer.commands.counts import RunStats
from skycap_viewer.commands.show import header_lines, path_lines
from skycap_viewer.commands.summary import group_summary
from skycap_viewer.commands.terminal import Painter
from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import document_path, read_document
from skycap_viewer.record.frames import compress, decompress_one_frame
from skycap_viewer.record.rollout import Rollout
from skycap_viewer.record.sidecars import read_tokens
from skycap_viewer.views.record.trajectory import paths_payload
from tests.support.corpus import FIXTURES

SEEDS = [
    ("spec", "tr_tokens"),
    ("spec", "tr_utf8"),
    ("spec", "tr_media"),
    ("spec", "tr_forked_unbridged"),
    ("spec", "tr_notext"),
    ("spec", "tr_empty_mask"),
    ("real-like", "tr_175c734c42332c87"),
    ("real-like", "tr_1ea8573438194800"),
]
ODD_VALUES = [
    None, True, 0, -1, 7, 2**63, 10**30, -(10**30), 10**400, 1e308, float("nan"), 0.5,
    "", "x", "../x", "a/b", "\ud800", [], [1], {}, {"a": 1},
]
settings.register_profile(
    "fuzz", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def seed_files(directory: str, record_id: str) -> dict[str, bytes]:
    folder = FIXTURES / directory
    names = [name for name in os.listdir(folder) if name.startswith(record_id + ".")]
    return {name: (folder / name).read_bytes() for name in names}


def locations(value, prefix=()):
    """Every (container path, key) in a JSON value, so an edit can land anywhere."""
    found = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return found
    for key, child in items:
        found.append((prefix, key))
        found += locations(child, prefix + (key,))
    return found


def container_at(document, prefix):
    for key in prefix:
        document = document[key]
    return document


@st.composite
def damaged_record(draw):
    directory, record_id = draw(st.sampled_from(SEEDS))
    files = seed_files(directory, record_id)
    document_name = f"{record_id}.json.zst"
    target = draw(st.sampled_from(sorted(files))) if draw(st.booleans()) else document_name
    data = files[target]
    how = draw(st.sampled_from(["truncate", "flip", "splice", "edit", "edit", "edit"]))
    if how == "truncate":
        files[target] = data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    elif how == "flip":
        position = draw(st.integers(0, len(data) - 1))
        flipped = data[position] ^ (1 << draw(st.integers(0, 7)))
        files[target] = data[:position] + bytes([flipped]) + data[position + 1 :]
    elif target != document_name:  # one good frame whose payload has the wrong size or content
        payload = decompress_one_frame(data)
        start = draw(st.integers(0, len(payload)))
        end = draw(st.integers(start, len(payload)))
        files[target] = compress(payload[:start] + draw(st.binary(max_size=16)) + payload[end:])
    elif how == "splice":
        payload = decompress_one_frame(data)
        start = draw(st.integers(0, len(payload)))
        end = draw(st.integers(start, len(payload)))
        fragments = [b"", b",", b"{", b"]", b'"k":', b"null", b"[1,2]", b"1e999", b'"\\ud800"', payload[end:]]
        files[target] = compress(payload[:start] + draw(st.sampled_from(fragments)) + payload[end:])
    else:
        document = json.loads(decompress_one_frame(data))
        prefix, key = draw(st.sampled_from(locations(document)))
        container = container_at(document, prefix)
        if isinstance(container, dict) and draw(st.booleans()):
            del container[key]
        else:
            container[key] = draw(st.sampled_from(ODD_VALUES))
        files[target] = compress(json.dumps(document).encode())
    return record_id, files


def exercise(folder: Path, record_id: str) -> None:
    """Run every reader of a record; only `RecordError` may escape from the reading ones."""
    present = set(os.listdir(folder))
    report = check_record(folder, record_id)
    assert all(isinstance(problem, str) and problem for problem in report.problems)
    try:
        document = read_document(document_path(folder, record_id))
    except RecordError as error:
        assert report.problems and error.problem in report.problems
        return
    rollout = Rollout(document, present, record_id)
    for path in rollout.paths:
        assert [b.end for b in path.blocks[:-1]] == [b.start for b in path.blocks[1:]]
    assert isinstance(rollout.flags, list)
    try:
        read_tokens(folder, document)
    except RecordError:
        pass
    payload = paths_payload(folder, document, present, record_id)
    json.dumps(payload)
    lines = header_lines(payload, len(payload["paths"]), Painter(False))
    for path in payload["paths"]:
        lines += path_lines(path, payload["nodes"], Painter(False))
    "\n".join(lines).encode("utf-8")
    stats = RunStats()
    stats.add(record_id, document, rollout)
    json.dumps(stats.as_dict(groups=group_summary(stats.rows)))


@settings(settings.get_profile("fuzz"))
@given(damaged_record())
def test_damaged_records_give_a_record_error_or_a_valid_read(record):
    record_id, files = record
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for file_name, data in files.items():
            (folder / file_name).write_bytes(data)
        exercise(folder, record_id)


@pytest.mark.parametrize(("directory", "record_id"), SEEDS)
def test_the_seeds_themselves_read_cleanly(directory, record_id, tmp_path):
    for file_name, data in seed_files(directory, record_id).items():
        (tmp_path / file_name).write_bytes(data)
    exercise(tmp_path, record_id)
    assert check_record(tmp_path, record_id).problems == []


@pytest.mark.parametrize("text, said", [
    ('\ufeff{"format_version": 1}', "the document is not JSON (Unexpected UTF-8 BOM"),
    ('{"format_version": 1, "a": NaN}', "the document is not JSON (NaN is not a JSON value)"),
    ('{"format_version": 1, "a": -Infinity}', "the document is not JSON (-Infinity is not a JSON value)"),
])
def test_a_document_json_does_not_allow_is_refused_saying_why(tmp_path, text, said):
    """The parser made once refuses what `json.loads` refused: a byte-order mark, NaN and the infinities."""
    path = tmp_path / "tr_x.json.zst"
    path.write_bytes(compress(text.encode()))
    with pytest.raises(RecordError) as refused:
        read_document(path)
    assert said in str(refused.value)
