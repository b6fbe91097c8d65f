"""A static bundle (`skycap-viewer bundle`) served by a plain static file server and read in Chromium.

A fixture run is bundled with a filter by the real command, the folder is served by the standard
library's `http.server` (no viewer code) under a sub-folder of its root, and the page is driven by
clicking and typing: its listings, band, drawer and search must be the real server's answers for the
same filters, what the bundle cannot answer must say why, and every request the tab makes must stay
inside the bundle's folder.
"""

import shutil
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote

import pytest
from playwright.sync_api import expect

from skycap_viewer.commands.bundle_names import bundle_file
from tests.browser.hostile_text import PAYLOADS, assert_inert
from tests.browser.hostile_text import RUN as HOSTILE_RUN
from tests.browser.rollout_checks import Answers, check_rollout
from tests.support.cli import run_cli
from tests.support.corpus import FIXTURES
from tests.support.server_process import ServerProcess

RUN = "groups"
STEP = "2"  # the filter the bundle is written with: 11 of the run's 28 rollouts


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class EncodingFiles(QuietFiles):
    """A host that sends a `.gz` file as `Content-Encoding: gzip` (Apache's `AddEncoding`): the browser unzips it."""

    def guess_type(self, path):
        return "application/json" if str(path).endswith(".json.gz") else super().guess_type(path)

    def end_headers(self):
        if self.path.endswith(".json.gz"):
            self.send_header("Content-Encoding", "gzip")
        super().end_headers()


class StaticHost:
    """A plain static file server over `root` on an ephemeral port, in a thread: `url` is the bundle's folder."""

    def __init__(self, root, folder: str, handler=QuietFiles):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"{self.origin}/{folder}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def run_copy(tmp_path_factory):
    return shutil.copytree(FIXTURES / RUN, tmp_path_factory.mktemp("bundled") / RUN)


@pytest.fixture(scope="module")
def host(run_copy, tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    done = run_cli("bundle", run_copy, "-o", site / "shared" / "bundle", "--step", STEP)
    assert done.returncode == 0, done.stderr
    served = StaticHost(site, "shared/bundle")
    yield served
    served.close()


@pytest.fixture
def encoding_host(host):
    served = StaticHost(host.httpd.RequestHandlerClass.keywords["directory"], "shared/bundle", EncodingFiles)
    yield served
    served.close()


@pytest.fixture(scope="module")
def server(run_copy):
    with ServerProcess([run_copy]) as started:
        started.wait_indexed()
        yield started


def listed(server, route: str, **params) -> dict:
    query = "&".join(f"{name}={quote(str(value))}" for name, value in {"run_id": RUN, "step": STEP, "limit": 100,
                                                                         **params}.items())
    return server.get(f"/v1/{route}?{query}")


def band_counts(tab) -> list:
    chips = tab.locator(".band .chip")
    return chips.evaluate_all("cs => cs.map(c => [c.dataset.flag, Number(c.querySelector('.chip-count')"
                              ".textContent.replace(/,/g, ''))])")


def requests_outside(page, host) -> list[str]:
    return [url for _, url, _ in page.requests.values() if not url.startswith(f"{host.url}/")]


def test_the_listings_and_band_are_the_servers_answers_for_the_same_filters(page_on, host, server):
    page = page_on(host)
    tab = page.open("")
    groups = listed(server, "groups")
    rows = tab.locator("#main table.rows tbody tr.group-row")
    expect(rows).to_have_count(len(groups["data"]))
    expect(tab.locator(".bundle-notice")).to_contain_text(f"kept by step={STEP}")
    assert sorted(band_counts(tab)) == sorted(map(list, groups["health"]["counts"]))
    tab.locator(".view-toggle [data-view=rollouts]").click()
    rollouts = listed(server, "trajectories")
    expect(tab.locator("#main table.rows tbody tr.nav")).to_have_count(len(rollouts["data"]))
    drawn = tab.locator("#main table.rows tbody tr.nav").evaluate_all("rs => rs.map(r => r.dataset.traj)")
    assert drawn == [row["id"] for row in rollouts["data"]]
    assert sorted(band_counts(tab)) == sorted(map(list, rollouts["health"]["counts"]))
    expect(tab.locator(".pager-text")).to_have_text(f"1–{rollouts['total']} of {rollouts['total']}")
    tab.locator("th button.sort[data-sort=tokens]").click()  # a sort the page offers: the server's order
    by_tokens = [row["id"] for row in listed(server, "trajectories", sort="tokens", order="desc")["data"]]
    expect(tab.locator("#main table.rows tbody tr.nav").first).to_have_attribute("data-traj", by_tokens[0])
    assert tab.locator("#main table.rows tbody tr.nav").evaluate_all("rs => rs.map(r => r.dataset.traj)") == by_tokens
    assert requests_outside(page, host) == []


def test_a_host_that_sends_the_answers_gzip_encoded_serves_the_same_page(page_on, encoding_host, server):
    page = page_on(encoding_host)
    tab = page.open(f"#/run/{RUN}/rollouts")
    rollouts = listed(server, "trajectories")
    expect(tab.locator("#main table.rows tbody tr.nav")).to_have_count(len(rollouts["data"]))
    listing = bundle_file(["trajectories"], {"run_id": RUN, "limit": 100})
    assert page.context.request.get(f"{encoding_host.url}/{listing}").headers["content-encoding"] == "gzip"
    assert requests_outside(page, encoding_host) == []


def test_a_drawers_path_and_chat_tabs_are_the_servers(page_on, host, server):
    page = page_on(host)
    record = listed(server, "trajectories")["data"][0]["id"]
    tab = page.open(f"#/run/{RUN}/rollouts/t/{record}")
    check_rollout(tab.locator("#drawer"), Answers.of(server, record, RUN), path=0)
    chat = server.get(f"/v1/trajectories/{record}/paths/0/chat?run_id={RUN}")
    tab.locator('#drawer .tab[data-tab="chat"]').click()
    cards = tab.locator("#drawer .chat-card")
    expect(cards).to_have_count(len(chat["cards"]))
    assert cards.evaluate_all("cs => cs.map(c => c.dataset.node)") == [card["node_id"] for card in chat["cards"]]
    for name in ("timeline", "forks"):  # read from the bundle too: drawn, no error
        tab.locator(f'#drawer .tab[data-tab="{name}"]').click()
        expect(tab.locator(f"#drawer .{name}-tab")).to_be_visible()
        expect(tab.locator("#drawer .notice.error")).to_have_count(0)
    assert requests_outside(page, host) == []


def search_hits(server, **params) -> list:
    """Every hit of the server's `/v1/search` over the bundle's filters, its pages followed."""
    query = "&".join(f"{name}={quote(str(value))}" for name, value in {"run_id": RUN, "step": STEP, **params}.items())
    hits, cursor = [], None
    while True:
        answer = server.get(f"/v1/search?{query}&limit=1000" + (f"&cursor={cursor}" if cursor else ""))
        hits += answer["data"]
        cursor = answer["next_cursor"]
        if answer["done"] or not cursor:
            return hits


def shown_hits(tab) -> list:
    rows = tab.locator(".matches .match")
    return rows.evaluate_all("rs => rs.map(r => [r.querySelector('.match-traj').textContent,"
                            " r.querySelector('.match-node').textContent, r.querySelector('mark').textContent])")


@pytest.mark.parametrize(("text", "options"),
                         [("USER", {}), ("step 1", {"in": "message"}), ("re", {"kind": "sampled"})])
def test_a_search_within_the_bundle_lists_the_servers_matches(page_on, host, server, text, options):
    page = page_on(host)
    hash_options = {"in": "sin", "kind": "skind"}
    extra = "".join(f"&{hash_options[name]}={value}" for name, value in options.items())
    tab = page.open(f"#/run/{RUN}/rollouts?search={quote(text)}{extra}")
    want = search_hits(server, text=text, **options)
    assert want  # the fixture's text holds it
    expect(tab.locator(".search-progress")).to_have_text(f"searched 11 of 11 records · {len(want)} matches")
    assert sorted(shown_hits(tab)) == sorted([hit["trajectory_id"], f"{hit['node_id']} · {hit['role']} · {hit['in']}",
                                              hit["snippet"]["match"]] for hit in want)  # the server's: as read
    first = tab.locator(".matches .match .match-traj").first
    opened = first.inner_text()
    first.click()
    expect(tab.locator("#drawer .traj-id")).to_have_text(opened)
    assert requests_outside(page, host) == []


def test_a_search_outside_the_kept_rollouts_says_it_needs_the_server(page_on, host):
    page = page_on(host)
    tab = page.open(f"#/run/{RUN}/rollouts?step=1&search=user")  # another step: rollouts the bundle has not
    expect(tab.locator(".search-error")).to_have_text("Search failed: this bundle searches only the 11 rollouts it "
                                                      "keeps: a search inside other filters needs the viewer's server")
    expect(tab.locator(".matches .match")).to_have_count(0)
    expect(tab.locator("#main .table-box .notice.error")).to_have_text(
        "Cannot list this run: this bundle holds no answer to /trajectories with these parameters: it answers only "
        "what was written for the rollouts it keeps (their listings, sorts and drawers)")
    tab.locator('#main .filters [data-filter="clear"]').click()  # back to what it holds
    expect(tab.locator(".search-progress")).to_contain_text("searched 11 of 11 records")
    expect(tab.locator("#main table.rows tbody tr.nav")).to_have_count(11)
    assert requests_outside(page, host) == []
    missing = "Failed to load resource: the server responded with a status of 404 (File not found)"
    assert page.errors == [missing]  # the static host's answer to the file it does not have: the line says why
    page.errors.clear()


def test_what_the_bundle_cannot_answer_says_why(page_on, host):
    page = page_on(host)
    tab = page.open(f"#/run/{RUN}/rollouts")
    step = tab.locator('#main .filters select[data-filter="step"]')
    expect(step).to_be_disabled()
    expect(step).to_have_attribute("title", "filtering again needs the viewer's server: this page reads a static "
                                   "bundle")
    expect(tab.locator(".band .chip").first).to_be_disabled()
    expect(tab.locator(".export-links")).to_contain_text("export needs the viewer's server")
    expect(tab.locator(".export-links a")).to_have_count(0)
    tab.locator('#main tr.nav').first.click()
    expect(tab.locator("#drawer .drawer-head")).to_be_visible()
    expect(tab.locator("#drawer .snapshot-link")).to_have_count(0)
    tab.goto(f"{host.url}/#/run/{RUN}/groups")
    tab.locator("#main tr.group-row").first.click()  # expanded: its members, and the line-up it cannot answer
    expect(tab.locator("#main tbody.group tr.rollout-row").first).to_be_visible()
    expect(tab.locator("#main button.line-up")).to_be_disabled()
    expect(tab.locator("#main button.line-up")).to_have_attribute(
        "title", "lining up a group (its members beyond those kept) needs the viewer's server: this page reads a "
                 "static bundle")
    assert requests_outside(page, host) == []


def test_polling_a_bundle_asks_nothing_again(page_on, host):
    page = page_on(host)
    page.tab.clock.install()
    tab = page.open(f"#/run/{RUN}/rollouts")
    tab.locator("#main tr.nav").first.click()
    expect(tab.locator("#drawer .drawer-head")).to_be_visible()
    asked = len(page.requests)
    tab.clock.run_for(10 * 3000)  # ten of the page's polls of the runs, the listing and the drawer
    expect(tab.locator("#main tr.nav").first).to_be_visible()
    assert [url for _, url, _ in list(page.requests.values())[asked:]] == []


def test_the_page_and_the_command_name_a_request_the_same_file(page_on, host):
    page = page_on(host)
    tab = page.open("")
    requests = [["/runs", {}], ["/trajectories", {"run_id": RUN, "sort": "", "order": None, "limit": 100}],
                ["/trajectories/%65xport/paths", {"run_id": "r", "from": 5000, "path": 0}],
                ["/groups/step%3D2%7Cinst%20%C3%A9", {"run_id": RUN, "flag": ["a", "b"], "annotation": []}],
                ["/trajectories/tr_\u2028\"q\\/paths/1/chat", {"run_id": "\u00e9\u0001", "b": "2", "a": "1"}]]
    named = tab.evaluate("async (requests) => { const m = await import('./js/app/bundle-name.js');"
                         " return requests.map(([path, params]) => m.bundleFile(path, params)); }", requests)
    python = [bundle_file(segments_of(path), params) for path, params in requests]
    assert named == python


def segments_of(path: str) -> list[str]:
    """The route's own segments of a path the page writes (ids percent-encoded)."""
    return [unquote(segment) for segment in path.strip("/").split("/")]


def test_hostile_record_text_in_a_bundle_is_inert(page_on, hostile_root, tmp_path):
    site = tmp_path / "site"
    done = run_cli("bundle", hostile_root / HOSTILE_RUN, "-o", site / "b")
    assert done.returncode == 0, done.stderr
    served = StaticHost(site, "b")
    try:
        page = page_on(served)
        tab = page.open(f"#/run/{HOSTILE_RUN}/rollouts/t/tr_hostile_text?search={quote('onerror')}")
        drawer = tab.locator("#drawer")
        for name in ("path", "chat", "tree", "calls", "timeline", "json"):
            tab.click(f"#drawer .tab[data-tab={name}]")
            expect(drawer).to_contain_text(PAYLOADS[0] if name not in ("json", "timeline") else "onerror")
            assert_inert(page, tab)
        expect(tab.locator(".matches .match mark").first).to_have_text("onerror")  # a hit's snippet, as text
        assert_inert(page, tab)
        assert requests_outside(page, served) == []
    finally:
        served.close()
