"""The HTTP layer in process: routing, parameter parsing, ETag/304 and cache ageing, without a port.

A request is written into one end of a socket pair and the real handler answers on the other end
(the trick pdoc's web tests use), over a real catalog indexed from a copy of the corpus. The client is
`tests/support/in_process.py`; the tests that need a real socket, a real process and a browser live
beside this one.
"""

import json
import shutil
import time

import pytest

from skycap_viewer.record.frames import compress, decompress_one_frame
from skycap_viewer.server.access import Access
from skycap_viewer.server.web import ROUTES, ViewerServer
from tests.support.corpus import FIXTURES, FORKED, copy_runs
from tests.support.in_process import InProcess, in_process_fixture


@pytest.fixture
def root(tmp_path):
    return copy_runs(tmp_path / "root", "groups", "real-like")


web = in_process_fixture("root")


def route_targets(web):
    """One real request per route in the table."""
    group = web.json("/v1/groups?run_id=groups")["data"][0]["key"]
    records = [row["id"] for row in web.json("/v1/trajectories?run_id=groups&limit=2")["data"]]
    record = records[0]
    return {
        "healthz": "/healthz",
        "viewer": "/__viewer",
        "runs": "/v1/runs",
        "trajectories": "/v1/trajectories?run_id=groups",
        "export": "/v1/trajectories/export?run_id=groups",
        "trajectory": f"/v1/trajectories/{record}",
        "paths": f"/v1/trajectories/{record}/paths",
        "path_row": f"/v1/trajectories/{FORKED}/paths/1/row",
        "path_messages": f"/v1/trajectories/{FORKED}/paths/1/messages",
        "path_chat": f"/v1/trajectories/{FORKED}/paths/1/chat",
        "graph": f"/v1/trajectories/{record}/graph",
        "exchanges": f"/v1/trajectories/{record}/exchanges",
        "timeline": f"/v1/trajectories/{record}/timeline",
        "forks": f"/v1/trajectories/{FORKED}/forks?a=0&b=1",
        "notable": f"/v1/trajectories/{FORKED}/notable?path=1",
        "retokenized": f"/v1/trajectories/{FORKED}/retokenized?around=4",
        "experts": f"/v1/trajectories/{record}/experts?node=n1&layer=0",
        "node_message": f"/v1/trajectories/{record}/message?node=n1",
        "node_media": f"/v1/trajectories/{record}/media?node=n1",
        "trajectory_mirror": f"/v1/trajectories/{record}/mirror?run_id=groups",
        "snapshot": f"/v1/trajectories/{FORKED}/snapshot?path=1&tab=tree",
        "groups": "/v1/groups?run_id=groups",
        "group": f"/v1/groups/{group}?run_id=groups",
        "lineup": f"/v1/groups/{group}/lineup?run_id=groups",
        "compare": f"/v1/compare?a={records[0]}&b={records[1]}",
        "values": "/v1/values?run_id=groups",
        "search": "/v1/search?run_id=groups&text=no-such-text",
        "compare_runs": "/v1/compare/runs?a=groups&b=real-like",
        "lineage": "/v1/lineage?run_id=groups&key=instance_id&value=a",
        "step_timeline": "/v1/steps/timeline?run_id=groups&step=2",
    }


def test_every_route_answers_and_says_its_cache_policy(web):
    targets = route_targets(web)
    assert set(targets) == {route.answer for route in ROUTES}
    deadline = time.monotonic() + 60
    while not web.json(targets["search"])["done"] and time.monotonic() < deadline:  # its answer then stays put
        time.sleep(0.05)
    for route in ROUTES:
        response = web.get(targets[route.answer])
        # opening a record from a mirror needs a store (tests/test_remote.py): here, a row the index has not
        expected = 404 if route.answer == "trajectory_mirror" else 200
        assert response.status == expected, (route.answer, response.body[:200])
        assert ("etag" in response.headers) == route.per_generation, route.answer
        if route.segments[0] != "__viewer":  # /api/ goes before v1 and healthz only
            prefixed = web.get("/api" + targets[route.answer])
            if response.headers["content-type"].startswith("application/json"):
                assert prefixed.json() == response.json()
            else:  # a download: the export's JSON lines (chunked, so whole when it ends with the last chunk)
                assert prefixed.body == response.body, route.answer
                if response.headers.get("transfer-encoding") == "chunked":
                    assert response.body.endswith(b"0\r\n\r\n"), route.answer


def test_routes_that_do_not_exist_are_404(web):
    assert web.json("/v1/nothing", 404)["detail"] == "no route v1/nothing"
    assert web.get("/v1/trajectories/x/y/z").status == 404
    assert web.get(f"/v1/trajectories/{FORKED}/tokens").status == 404
    assert web.json("/v1/trajectories/a%20b", 404)["detail"] == "no trajectory a b"  # any id is looked up
    assert web.get("/v1/groups/no-such-group?run_id=groups").status == 404
    assert web.get("/v1/runs", method="POST").status == 405


def test_parameters_are_parsed_and_bad_ones_refused(web):
    total = web.json("/v1/trajectories?run_id=groups")["total"]
    assert len(web.json("/v1/trajectories?run_id=groups&limit=junk")["data"]) == min(total, 100)
    assert len(web.json("/v1/trajectories?run_id=groups&limit=2")["data"]) == 2
    assert len(web.json("/v1/trajectories?run_id=groups&limit=0")["data"]) == 1
    assert web.json("/v1/trajectories?run_id=groups&limit=2&cursor=junk")["next_cursor"].partition(".")[0] == "2"
    following = web.json("/v1/trajectories?run_id=groups&limit=2&cursor=2")
    assert following["next_cursor"].partition(".")[0] == "4"  # the offset, then where the page ended
    by_offset = web.json("/v1/trajectories?run_id=groups&limit=2&cursor=4")["data"]
    assert web.json(f"/v1/trajectories?run_id=groups&limit=2&cursor={following['next_cursor']}")["data"] == by_offset
    assert "sort must be one of" in web.json("/v1/trajectories?run_id=groups&sort=nope", 400)["detail"]
    assert "step must be a number" in web.json("/v1/trajectories?run_id=groups&step=x", 400)["detail"]
    assert "flag must be one of" in web.json("/v1/trajectories?run_id=groups&flag=nope", 400)["detail"]
    assert "two different paths" in web.json(f"/v1/trajectories/{FORKED}/forks?a=1&b=1", 400)["detail"]
    assert web.json("/v1/trajectories?run_id=nope", 404)["detail"] == "no run nope"
    ascending = web.json("/v1/trajectories?run_id=groups&sort=step&order=asc&limit=1000")["data"]
    steps = [row["step"] for row in ascending if row["step"] is not None]
    assert steps == sorted(steps) and web.json("/v1/trajectories?run_id=groups&sort=step")["sort"]["order"] == "desc"


def test_an_unchanged_listing_is_304_and_a_new_generation_ages_its_answer_out(web, tmp_path):
    first = web.get("/v1/trajectories?run_id=groups")
    etag = first.headers["etag"]
    assert web.get("/v1/trajectories?run_id=groups", **{"If-None-Match": etag}).status == 304
    again = web.get("/v1/trajectories?run_id=groups")
    assert again.headers["etag"] == etag and again.json() == first.json()

    run = tmp_path / "root" / "groups"
    source = sorted(run.glob("*.json.zst"))[0]
    shutil.copy(source, run / "tr_copy_for_ageing.json.zst")
    web.watcher.poll()
    fresh = web.get("/v1/trajectories?run_id=groups", **{"If-None-Match": etag})
    assert fresh.status == 200 and fresh.headers["etag"] != etag
    assert fresh.json()["total"] == first.json()["total"] + 1
    assert "tr_copy_for_ageing" in {row["id"] for row in fresh.json()["data"]}


def test_an_answer_over_two_runs_ages_out_when_either_run_changes(web, tmp_path):
    """`/v1/compare/runs` is kept per generation: the generation is the catalog's, so it covers both runs."""
    target = "/v1/compare/runs?a=groups&b=real-like"
    first = web.get(target)
    assert first.json()["total"] == 0 and web.get(target, **{"If-None-Match": first.headers["etag"]}).status == 304
    source = sorted((tmp_path / "root" / "groups").glob("*.json.zst"))[0]
    shutil.copy(source, tmp_path / "root" / "real-like" / source.name)  # side b now holds one of a's group keys
    web.watcher.poll()
    fresh = web.get(target, **{"If-None-Match": first.headers["etag"]})
    assert fresh.status == 200 and fresh.headers["etag"] != first.headers["etag"]
    assert fresh.json()["total"] == 1


def test_head_sends_headers_only_and_gzip_when_asked(web):
    head = web.get("/v1/trajectories?run_id=groups", method="HEAD")
    assert head.status == 200 and head.body == b"" and int(head.headers["content-length"]) > 0
    zipped = web.get("/v1/trajectories?run_id=groups", **{"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.json() == web.json("/v1/trajectories?run_id=groups")


def test_the_host_and_the_site_are_checked_before_any_route(web):
    assert web.get("/v1/runs", Host="evil.example").status == 400
    assert web.get("/v1/runs", Origin="http://evil.example").status == 403
    assert web.get("/v1/runs", **{"Sec-Fetch-Site": "cross-site"}).status == 403


def test_a_name_given_with_allowed_host_is_answered_and_others_are_told_how(web):
    refused = web.get("/v1/runs", Host="lab-box.example:8765")
    assert refused.status == 400 and "--allowed-host" in refused.json()["detail"]
    named = ViewerServer(("0.0.0.0", 8765), web.server.api, quiet=True, bind=False, allowed_hosts=["Lab-Box.example"])
    try:
        web.server, kept = named, web.server
        assert web.get("/v1/runs", Host="lab-box.example:8765").status == 200
        assert web.get("/v1/runs", Host="evil.example:8765").status == 400
    finally:
        web.server = kept
        named.server_close()


BUFFERED_BYTES = 2**20  # what a route's answer may be and not hold its connection (loopback buffers take ~2 MB)


def test_every_route_that_can_answer_a_record_sized_body_takes_a_long_answers_slot(tmp_path):
    """Walk the route table over a run whose records hold 1.5 MB in `meta`: a route answering more than
    socket buffers take is `record_sized` (a stalled client of `/v1/trajectories/{id}`, which answers
    the whole meta, held a connection slot each, and 130 of them every slot)."""
    root = tmp_path / "root"
    for name in ("groups", "real-like"):
        shutil.copytree(FIXTURES / name, root / name)
    for path in (root / "groups").glob("*.json.zst"):
        document = json.loads(decompress_one_frame(path.read_bytes()))
        document["meta"]["notes"] = "x" * (3 * BUFFERED_BYTES // 2)
        path.write_bytes(compress(json.dumps(document).encode()))
    web = InProcess(root)
    try:
        targets = route_targets(web)
        big = {route.answer for route in ROUTES if len(web.get(targets[route.answer]).body) > BUFFERED_BYTES}
        assert "trajectory" in big  # the run's records do make that route's answer big
        assert {route.answer for route in ROUTES if route.answer in big and not route.record_sized} == set()
    finally:
        web.server.api.searches.close()
        web.server.server_close()


def test_every_route_of_the_table_needs_the_token_and_a_host_of_its_own(web):
    """Walk the route table, not a list kept by hand: a route added is asked here without the token (401),
    with it (answered, never a 5xx), and from a foreign Host (refused before any answer)."""
    targets = route_targets(web)
    token = "a-token-for-the-walk"
    kept = web.server
    web.server = ViewerServer(("127.0.0.1", 0), kept.api, quiet=True, bind=False, access=Access(token))
    try:
        for route in ROUTES:
            target = targets[route.answer]
            assert web.get(target).status == 401, route.answer
            assert web.get(target, Host="evil.example").status == 400, route.answer
            answered = web.get(target, Authorization=f"Bearer {token}")
            assert answered.status < 500 and answered.status != 401, (route.answer, answered.body[:200])
    finally:
        web.server = kept
