"""Records named outside the usual id characters: listed, and openable through every route and `show`.

The viewer looks a requested id up in its index by exact string, so a file name with spaces, `#`,
`?`, `%`, unicode or a leading `-` (anything but `/`, which no file name holds) is no reason to
refuse a record the listing shows.
"""

import json
from urllib.parse import quote

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import BROKEN
from tests.support.records import copy_record
from tests.support.server_process import served

ODD_IDS = ["with space", "hash#tag", "what?q=1", "100%25 sure", "ünïcødé—名前", "-leading-dash", "plus+and&amp",
           "tr..dots"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One run of the intact token record copied under every odd id, sidecars renamed to follow."""
    directory = tmp_path_factory.mktemp("names") / "odd"
    directory.mkdir()
    for record_id in ODD_IDS:
        copy_record(BROKEN, "tr_ok", directory, record_id)
    return directory


@pytest.fixture(scope="module")
def server(run):
    yield from served([run])


def test_every_odd_id_is_listed_with_its_exact_name(server):
    listing = server.get("/v1/trajectories?run_id=odd&limit=100")
    assert sorted(row["id"] for row in listing["data"]) == sorted(ODD_IDS)
    assert not any(row.get("unreadable") for row in listing["data"])


@pytest.mark.parametrize("record_id", ODD_IDS)
def test_every_odd_id_opens_through_the_api(server, record_id):
    base = f"/v1/trajectories/{quote(record_id, safe='')}"
    assert server.get(f"{base}?run_id=odd")["id"] == record_id
    paths = server.get(f"{base}/paths?run_id=odd")
    assert paths["trajectory"]["id"] == record_id and paths["paths"]
    assert not paths.get("tokens_error")  # the renamed sidecars were found and read
    assert server.get(f"{base}/graph?run_id=odd")["nodes"]
    server.get(f"{base}/exchanges?run_id=odd")


def test_an_id_the_index_does_not_hold_is_404_not_a_path(server):
    for target in ("..", "with", "with%20space%00", "%2e%2e%2fodd%2fwith space"):
        status, _, body = server.request(f"/v1/trajectories/{quote(target, safe='%')}?run_id=odd")
        assert status == 404, (target, body)


@pytest.mark.parametrize("record_id", ODD_IDS)
@pytest.mark.slow
def test_show_opens_every_odd_id(run, record_id):
    """By path, with or without the suffix, and by bare name after `--` (a leading `-` is no option)."""
    for given, cwd in ((run / f"{record_id}.json.zst", None), (run / record_id, None), (record_id, run)):
        result = run_cli("show", "--json", "--", given, cwd=cwd)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["trajectory"]["id"] == record_id
