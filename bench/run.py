"""Benchmark the viewer on a synthetic GRPO-shaped run: `python bench/run.py [--rollouts 10000] [--huge]
[--json] [--keep DIR] [--repeat 3]`, or on runs of many small rollouts: `--rows 10000,100000,1000000`.

Writes the run with the project's own writer (`synth.py`) into a temporary directory, then
measures the real server as a user meets it: cold index time against the floor (a plain loop
that only decompresses and parses every document, in one process and on all cores), reopen time
with the persisted index, memory of the server's process tree, latency and size of every
listing and of the huge rollout's views, how much a listing slows while the huge rollout is
served, and the first paint of the huge rollout's Path tab in headless Chromium. A route or
feature the server does not have yet is reported as "n/a". With `--run-index`, the trainer's run
index (`run_index.py`) is then written beside the records and what it costs is measured too. Standard
library (plus Playwright for the paint, skipped when missing).
"""

import argparse
import gzip
import http.client
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))  # a clean clone works without installing the package

import run_index  # noqa: E402
import synth  # noqa: E402
from floor import cores, document_paths, floor_all_cores, floor_one_process, use_cores  # noqa: E402

from skycap_viewer.record.document import record_id_of  # noqa: E402
from tests.support.api_paths import api_path  # noqa: E402
from tests.support.process_memory import cpu_seconds, resident_bytes, tree_cpu_seconds, tree_resident_bytes  # noqa: E402
from tests.support.server_process import ServerProcess  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
INDEX_TIMEOUT = 1800  # seconds: bounds every wait for the server
NA = "n/a"


# -- the server under test ---------------------------------------------------------------------

class Server(ServerProcess):
    """The tests' server process (`tests/support/server_process.py`) run in this clone, with its memory sampled,
    and requests asked as a browser asks them (gzip) for the bytes on the wire."""

    def __init__(self, *directories, cache: bool, env: dict):
        super().__init__(directories, env=env, cache_home=env["XDG_CACHE_HOME"] if cache else None, cwd=REPO)
        self.peak_rss = 0
        self._stop = threading.Event()

    def __enter__(self):
        self.started = time.perf_counter()
        super().__enter__()
        self.cpu_at_start = self.cpu()  # serving: what starting Python and importing cost is left out
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far: (the server's own process, its whole process tree)."""
        pid = self.process.pid
        return cpu_seconds(pid), tree_cpu_seconds(pid)

    def _sample(self):
        """Peak memory, every 0.2 s (its tree read from /proc: a few ms, so the server's cores stay its own)."""
        while not self._stop.wait(0.2):
            self.peak_rss = max(self.peak_rss, tree_resident_bytes(self.process.pid))

    def rss(self) -> int:
        return tree_resident_bytes(self.process.pid)

    def __exit__(self, *exc):
        self._stop.set()
        super().__exit__(*exc)

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def fetch(self, path: str, *, gzip_ok: bool = True, connection=None):
        """(status, headers, wire bytes) of one GET."""
        own = connection is None
        connection = connection or self.connection()
        try:
            connection.request("GET", path, headers={"Accept-Encoding": "gzip"} if gzip_ok else {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            if own:
                connection.close()

    def json(self, path: str, connection=None):
        status, headers, body = self.fetch(path, connection=connection)
        if status != 200:
            return None
        if headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return json.loads(body)

    def runs_on(self, connection: http.client.HTTPConnection) -> tuple[list, http.client.HTTPConnection]:
        """(`/v1/runs`'s runs, [] without an answer; the connection they were asked on): asked on `connection`, and
        again on a new one when the server had closed it (an idle kept connection is closed after 30 s)."""
        for _ in range(2):
            try:
                return (self.json(api_path("runs"), connection) or {}).get("data") or [], connection
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = self.connection()
        return [], connection

    def wait_listed(self, records: int, index_facts: dict | None = None) -> float | None:
        """Seconds from launch until every record is indexed (and, given `index_facts`, until a run's
        `run_index` in /v1/runs holds those facts); None when that never happens. On the way,
        `first_rows` notes when the first indexed rows were listed, `run_index_complete` when the index was.
        It asks on one connection kept open, as the page does: a new connection a poll cost the server's process
        twice the CPU (0.43 ms a poll, 0.20 ms on a kept one; ~100 polls during the realistic run's cold index
        were 4 µs of its 17 µs a record)."""
        connection = self.connection()
        try:
            deadline = time.perf_counter() + INDEX_TIMEOUT
            self.first_rows = self.run_index_complete = self.index_cpu = None
            while time.perf_counter() < deadline:
                asked = time.perf_counter()
                runs, connection = self.runs_on(connection)
                indexed = sum(run.get("indexed", run.get("trajectory_count")) or 0 for run in runs)
                if indexed and self.first_rows is None:
                    self.first_rows = time.perf_counter() - self.started
                if index_facts is not None and self.run_index_complete is None and any(
                        index_facts.items() <= (run.get("run_index") or {}).items() for run in runs):
                    self.run_index_complete = time.perf_counter() - self.started
                if runs and not any(run.get("indexing") for run in runs) and indexed >= records and (
                        index_facts is None or self.run_index_complete is not None):
                    done = time.perf_counter() - self.started
                    own, tree = self.cpu()
                    self.index_cpu = own - self.cpu_at_start[0], tree - self.cpu_at_start[1]
                    return done
                if self.process.poll() is not None:
                    return None
                # every 50 ms until rows are listed (however long an answer took while the server lists a million
                # names: the first rows are seen when they come); then a big run's entry is big, so it is polled less,
                # and every hundredth of the time so far (the index's end is known to within 1%, and the server's CPU
                # a record is its own, not the polls')
                if self.first_rows is None:
                    time.sleep(0.05)
                else:
                    time.sleep(max(0.05, (time.perf_counter() - self.started) / 100, 4 * (time.perf_counter() - asked)))
            return None
        finally:
            connection.close()


# -- latency -----------------------------------------------------------------------------------

def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def timed_requests(server: Server, path: str, count: int, budget: float = 30.0) -> dict:
    """p50/p95 over `count` gzip-accepting GETs on one keep-alive connection (bounded by `budget` s)."""
    try:
        return _timed_requests(server, path, count, budget)
    except (OSError, http.client.HTTPException) as error:  # the server died or hung up: say so, go on
        return {"status": f"failed: {type(error).__name__}"}


def _timed_requests(server: Server, path: str, count: int, budget: float) -> dict:
    connection = server.connection()
    try:
        started = time.perf_counter()
        status, headers, body = server.fetch(path, connection=connection)
        first = time.perf_counter() - started
        if status != 200:
            return {"status": status}
        times = []
        deadline = time.perf_counter() + budget
        while len(times) < count and time.perf_counter() < deadline:
            started = time.perf_counter()
            server.fetch(path, connection=connection)
            times.append(time.perf_counter() - started)
    finally:
        connection.close()
    plain = server.fetch(path, gzip_ok=False)[2]
    return {
        "status": 200, "first_ms": first * 1000, "p50_ms": percentile(times, 0.5) * 1000,
        "p95_ms": percentile(times, 0.95) * 1000, "requests": len(times), "bytes": len(plain),
        "gzip_bytes": len(body) if headers.get("Content-Encoding") == "gzip" else None,
    }


def routes(server: Server, run_id: str) -> dict[str, str]:
    """The requests to time, built from what the server lists (a middle step, a real group)."""
    run = urllib.parse.quote(run_id)
    base = f"{api_path('trajectories')}?run_id={run}"
    runs = server.json(api_path("runs"))["data"]
    steps = next((r.get("steps") for r in runs if r.get("id") == run_id), None) or [0]
    groups = server.json(f"{api_path('groups')}?run_id={run}") or {}
    group_key = next((g["key"] for g in groups.get("data") or []), "0~none")
    return {
        "runs": api_path("runs"),
        "rollouts (default)": base,
        "rollouts sorted by reward": f"{base}&sort=reward&order=desc",
        "rollouts flag=truncated": f"{base}&flag=truncated",
        "rollouts step=(middle step)": f"{base}&step={steps[len(steps) // 2]}",
        "rollouts q=task-01": f"{base}&q=task-01",
        "groups": f"{api_path('groups')}?run_id={run}",
        "one group": f"{api_path('group', group_key)}?run_id={run}",
        "huge: paths": f"{api_path('paths', synth.HUGE_ID)}?run_id={run}",
        "huge: graph": f"{api_path('graph', synth.HUGE_ID)}?run_id={run}",
        "huge: exchanges": f"{api_path('exchanges', synth.HUGE_ID)}?run_id={run}",
        "huge: forks 0/20": f"{api_path('forks', synth.HUGE_ID)}?a=0&b=20&run_id={run}",
    }


def variants(server: Server, run_id: str) -> dict[str, list[str]]:
    """Per listing, distinct queries of the same kind (the clicks a user makes), each asked once:
    a server may answer a repeated query from a cache, so repeats alone would hide the real cost."""
    run = urllib.parse.quote(run_id)
    base = f"{api_path('trajectories')}?run_id={run}"
    runs = server.json(api_path("runs"))["data"]
    steps = next((r.get("steps") for r in runs if r.get("id") == run_id), None) or [0]
    steps = steps[:: max(1, len(steps) // 20)][:20]
    flags = [f["flag"] for f in (server.json(api_path("viewer")) or {}).get("flags", []) if f.get("unit") == "rollout"]
    keys = [g["key"] for g in (server.json(f"{api_path('groups')}?run_id={run}&limit=20") or {}).get("data") or []]
    sorts = ["step", "task", "reward", "turns", "tokens", "health", "created"]
    return {
        "rollouts (default)": [f"{base}&cursor={100 * page}" for page in range(1, 21)],
        "rollouts sorted by reward": [f"{base}&sort={key}&order={order}" for key in sorts
                                      for order in ("asc", "desc")],
        "rollouts flag=truncated": [f"{base}&flag={flag}" for flag in flags],
        "rollouts step=(middle step)": [f"{base}&step={step}" for step in steps],
        "rollouts q=task-01": [f"{base}&q=task-{digit}{other}" for digit in "02468" for other in "1357"],
        "groups": [f"{api_path('groups')}?run_id={run}&step={step}" for step in steps],
        "one group": [f"{api_path('group', key)}?run_id={run}" for key in keys],
    }


SMALL_RUN_NAMES = {  # `variants`' names say which query the realistic run repeats; here, what the kind varies
    "rollouts (default)": "rollouts (default), pages",
    "rollouts flag=truncated": "rollouts flag=",
    "rollouts step=(middle step)": "rollouts step=",
    "rollouts q=task-01": "rollouts q=task-…",
    "groups": "groups step=",
    "one group": "one group",
}


def listing_kinds(server: Server, run_id: str) -> dict[str, list[str]]:
    """Every listing kind a user meets, each over distinct queries asked once: each sort key first (both
    orders, five pages each: ten queries, so p95 is the slowest, the first sort by the key), then
    `variants` (but its every sort key and order once, which would have sorted every key already), the
    other filters (an annotation's value, and a key's presence), pages of 500, and search."""
    run = urllib.parse.quote(run_id)
    base = f"{api_path('trajectories')}?run_id={run}"
    kinds = {f"rollouts sort={key}": [f"{base}&sort={key}&order={order}&cursor={100 * page}"
                                      for order in ("asc", "desc") for page in range(5)]
             for key in ("step", "task", "reward", "turns", "tokens", "health", "created")}
    shared = variants(server, run_id)
    del shared["rollouts sorted by reward"]
    flags = [path.rpartition("&flag=")[2] for path in shared["rollouts flag=truncated"]]
    kinds |= {SMALL_RUN_NAMES.get(name, name): paths for name, paths in shared.items()}
    kinds["rollouts status="] = [f"{base}&status={status}&cursor={100 * page}"
                                 for status in ("finished", "open", "abandoned") for page in range(7)]
    kinds["rollouts annotation=stop_reason="] = [f"{base}&annotation=stop_reason={reason}&cursor={100 * page}"
                                                 for reason in ("complete", "agent_timeout", "error")
                                                 for page in range(7)]
    for key in ("reward", "stop_reason"):  # a key's presence: nearly every row has it, so each page is a walk
        kinds[f"rollouts annotation={key} (present), pages"] = [
            f"{base}&annotation={key}&sort={sort}&order=desc&cursor={100 * page}"
            for sort in ("created", "reward") for page in range(10)]
    kinds["rollouts exclude_flag="] = [f"{base}&exclude_flag={flag}" for flag in flags]
    kinds["rollouts reward range"] = [f"{base}&reward_min={low / 10}&reward_max={low / 10 + width}"
                                      for low in range(10) for width in (0.3, 0.6)]
    kinds["rollouts limit=500"] = [f"{base}&limit=500&cursor={500 * page}" for page in range(20)]
    kinds["search: first page"] = [f"{api_path('search')}?run_id={run}&limit={SEARCH_LIMIT}&text={needle}"
                                   for needle in synth.search_needles(20)]
    return kinds


def new_queries(server: Server, paths: list[str]) -> dict:
    """p50/p95 of distinct queries asked once each, on one keep-alive connection; `new_status` is 200
    when every one answered 200, else the first other status (or the error)."""
    times, worst = [], 200
    connection = server.connection()
    try:
        for path in paths:
            started = time.perf_counter()
            status = server.fetch(path, connection=connection)[0]
            if status == 200:
                times.append(time.perf_counter() - started)
            elif worst == 200:
                worst = status
    except (OSError, http.client.HTTPException) as error:
        worst = f"failed: {type(error).__name__}"
    finally:
        connection.close()
    if not times:
        return {"new_status": worst if paths else "no queries"}
    return {"new_p50_ms": percentile(times, 0.5) * 1000, "new_p95_ms": percentile(times, 0.95) * 1000,
            "new_queries": len(times), "new_status": worst}


def listing_under_load(server: Server, listings: list[str], huge_paths: str) -> dict:
    """Distinct listing queries' p50 while another client fetches the huge rollout's paths in a loop."""
    stop = threading.Event()
    fetched = []

    def hammer():
        connection = server.connection()
        try:
            while not stop.is_set() and len(fetched) < 10_000:
                server.fetch(huge_paths, connection=connection)
                fetched.append(1)
        finally:
            connection.close()

    thread = threading.Thread(target=hammer, daemon=True)
    thread.start()
    time.sleep(0.2)
    try:
        loaded = new_queries(server, listings)
    finally:
        stop.set()
        thread.join(timeout=120)
    return {"p50_ms": loaded.get("new_p50_ms"), "p95_ms": loaded.get("new_p95_ms"), "huge_fetches": len(fetched)}


# -- search ------------------------------------------------------------------------------------

COMMON_TEXT = "kadeispa"  # a frequent word of the synthetic corpus: 100 hits come from the first documents
SEARCH_LIMIT = 100


def follow_search(server: Server, query: str) -> dict:
    """Seconds to the first answer and to `done` for one search, following its cursor."""
    started = time.perf_counter()
    answer = server.json(f"{api_path('search')}?{query}")
    if answer is None:
        return {"status": "failed"}
    first, first_hits = time.perf_counter() - started, len(answer["data"])
    hits = first_hits
    while answer and answer.get("next_cursor"):
        answer = server.json(f"{api_path('search')}?{query}&cursor={answer['next_cursor']}")
        hits += len(answer["data"]) if answer else 0
    if not answer:
        return {"status": "failed"}
    return {"status": 200, "first_s": first, "first_hits": first_hits, "complete_s": time.perf_counter() - started,
            "hits": hits, "scanned": answer["scanned"], "capped": answer["capped"],
            "skipped": answer["skipped_count"]}


def search_figures(server: Server, run_id: str, listings: list[str]) -> dict:
    """The first page of a common phrase (cold: the search workers start), a full scan for a needle (the huge
    rollout's marker), the same needle again, the server's memory meanwhile, and new listing queries while a
    search runs against the same kind of queries idle."""
    run = urllib.parse.quote(run_id)
    query = f"run_id={run}&limit={SEARCH_LIMIT}&text="
    server_rss, tree = resident_bytes(server.process.pid), server.rss()
    peaks = {"server": server_rss, "tree": tree}
    stop = threading.Event()

    def sample():
        while not stop.wait(0.05):
            peaks["server"] = max(peaks["server"], resident_bytes(server.process.pid))
            peaks["tree"] = max(peaks["tree"], server.rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        common = follow_search(server, query + urllib.parse.quote(COMMON_TEXT))
        needle = follow_search(server, query + urllib.parse.quote(synth.HUGE_MARKER))
        repeat = follow_search(server, query + urllib.parse.quote(synth.HUGE_MARKER))
    finally:
        stop.set()
        sampler.join()
    results = {"common": common, "needle": needle, "repeat": repeat,
               "server_rss_delta_mib": (peaks["server"] - server_rss) / 2**20,
               "tree_rss_delta_mib": (peaks["tree"] - tree) / 2**20}
    idle = new_queries(server, listings[0::2]).get("new_p50_ms")
    running = threading.Thread(target=follow_search, daemon=True,
                               args=(server, query + urllib.parse.quote(synth.HUGE_MARKER) + "&case=true"))
    running.start()
    time.sleep(0.2)
    loaded = new_queries(server, listings[1::2]).get("new_p50_ms")
    searching = running.is_alive()  # the figure counts only if the search outlasted the queries
    running.join(timeout=INDEX_TIMEOUT)
    if idle and loaded:
        results["listing"] = {"idle_p50_ms": idle, "p50_ms": loaded, "slowdown": loaded / idle,
                              "search_outlasted": searching}
    return results


# -- comparing ---------------------------------------------------------------------------------

def compare_figures(server: Server, run_id: str, requests: int) -> dict:
    """Two rollouts compared (the two longest outside the huge group, and the huge rollout with its
    group's other member): the first answer (documents and tokens read, nothing cached) and the
    same again; then groups of 8 lined up, each group asked once."""
    run = urllib.parse.quote(run_id)
    huge_group = {synth.HUGE_ID, synth.HUGE_SIBLING_ID}
    listed = (server.json(f"{api_path('trajectories')}?run_id={run}&sort=tokens&order=desc&limit=4") or {}).get(
        "data") or []
    longest = [row["id"] for row in listed if row["id"] not in huge_group][:2]
    pairs = {"the two longest rollouts": longest, "the huge rollout and its group's other member": sorted(huge_group)}
    figures = {}
    for name, pair in pairs.items():
        if len(pair) == 2:
            path = f"{api_path('compare')}?a={pair[0]}&b={pair[1]}&run_a={run}&run_b={run}"
            figures[f"compare: {name}"] = timed_requests(server, path, requests)
    groups = (server.json(f"{api_path('groups')}?run_id={run}&limit=100") or {}).get("data") or []
    keys = [g["key"] for g in groups if g["n"] == synth.GROUP_SIZE][:20]
    lineups = [f"{api_path('lineup', key)}?run_id={run}" for key in keys]
    figures["line-up of a group of 8"] = new_queries(server, lineups)
    return figures


def runs_compare_figures(directory: Path, other: Path, env: dict) -> dict:
    """Two runs of the same shape served together and compared group by group: the whole runs,
    then one step against another (distinct steps, each pair asked once)."""
    with Server(directory, other, cache=False, env=env) as server:
        if server.wait_listed(len(document_paths(directory)) + len(document_paths(other))) is None:
            return {"status": "not indexed"}
        runs = {run["path"]: run for run in server.json(api_path("runs"))["data"]}
        a, b = (urllib.parse.quote(runs[str(d)]["id"]) for d in (directory, other))
        whole = timed_requests(server, f"{api_path('compare_runs')}?a={a}&b={b}", 10)
        steps = (runs[str(directory)].get("steps") or [0])[:20]
        stepped = new_queries(server, [f"{api_path('compare_runs')}?a={a}&b={b}&step_a={s}&step_b={s}" for s in steps])
        return whole | stepped


# -- the page ----------------------------------------------------------------------------------

PAINTED = """selector => new MutationObserver((changes, observer) => {
  if (!document.querySelector(selector)) return;
  observer.disconnect();
  requestAnimationFrame(() => { window.__painted = performance.now(); });
}).observe(document, {subtree: true, childList: true})"""


def paint_times(url: str, selector: str, tries: int, last=None) -> dict:
    """Milliseconds from navigation to the first frame after `selector` is in the page (timed in the
    page: the time Playwright takes to look for it is not the page's), `tries` times in fresh pages;
    `last(page, locator)` adds its figures after the last try."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"status": "playwright missing"}
    executable = CHROMIUM if Path(CHROMIUM).exists() else None
    times, extra = [], {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
            try:
                for attempt in range(tries):
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    context.add_init_script(f"({PAINTED})({json.dumps(selector)})")
                    page = context.new_page()
                    page.goto(url, wait_until="commit")
                    shown = page.locator(selector).first
                    shown.wait_for(state="visible", timeout=60_000)
                    page.wait_for_function("() => window.__painted !== undefined", timeout=60_000)
                    times.append(page.evaluate("() => window.__painted") / 1000)
                    if last is not None and attempt == tries - 1:
                        extra = last(page, shown)
                    context.close()
            finally:
                browser.close()
    except Exception as error:  # no browser, or the page never showed it: report, don't crash
        return {"status": f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"}
    return {"status": "ok", "median_s": statistics.median(times), "tries": times, **extra}


def first_paint(server: Server, run_id: str, tries: int) -> dict:
    """Seconds from navigation to the huge rollout's first block on screen (Path tab), then how
    smooth scrolling through its 21 paths' text is (frame intervals while the wheel turns)."""
    def smoothness(page, block) -> dict:
        frames = scroll_frames(page, block)
        if not frames:
            return {}
        return {"scroll_frame_p95_ms": percentile(frames, 0.95), "scroll_frame_max_ms": max(frames),
                "scroll_frames": len(frames)}

    url = f"{server.url}/#/run/{urllib.parse.quote(run_id)}/t/{synth.HUGE_ID}?tab=path"
    return paint_times(url, "#drawer-body section.block", tries, smoothness)


def chat_paint(server: Server, run_id: str, tries: int) -> dict:
    """Seconds from navigation to the huge rollout's first Chat card drawn with its text: the Chat tab
    should open as fast as the Path tab does."""
    url = f"{server.url}/#/run/{urllib.parse.quote(run_id)}/t/{synth.HUGE_ID}?tab=chat"
    return paint_times(url, "#drawer-body .chat-card .chat-text", tries)


def compare_paint(server: Server, run_id: str, tries: int) -> dict:
    """Seconds from navigation to the huge rollout and its group's other member side by side:
    the row where they part drawn in the pair view."""
    run = urllib.parse.quote(run_id)
    url = f"{server.url}/#/run/{run}/compare?a={synth.HUGE_ID}&b={synth.HUGE_SIBLING_ID}"
    return paint_times(url, "p.pair-label", tries)


def scroll_frames(page, block) -> list[float]:
    """Milliseconds between animation frames while the wheel scrolls down over the text (bounded)."""
    box = block.bounding_box()
    if box is None:
        return []
    page.mouse.move(box["x"] + min(box["width"] / 2, 200), box["y"] + min(box["height"] / 2, 100))
    page.evaluate("""() => { window.__frames = []; let last = performance.now();
        const tick = (now) => { window.__frames.push(now - last); last = now;
            if (window.__frames.length < 600) requestAnimationFrame(tick); };
        requestAnimationFrame(tick); }""")
    for _ in range(60):
        page.mouse.wheel(0, 600)
        page.wait_for_timeout(16)
    return page.evaluate("() => window.__frames.slice(1)")


# -- the suite ---------------------------------------------------------------------------------

def private_env(work: Path) -> dict:
    return {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}  # never the user's own cache


def idle_rss(work: Path, env: dict) -> int:
    """The process tree of a server with nothing to index: what a row's memory is counted against."""
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    with Server(empty, cache=False, env=env) as idle:
        time.sleep(0.5)
        return idle.rss()


def cold_starts(directory: Path, records: int, env: dict, repeat: int, before_each=lambda: None,
                cache: bool = False, index_facts: dict | None = None) -> tuple:
    """`repeat` cold starts (--no-cache unless `cache`: then `before_each` must empty it), `before_each`
    run before each one, each until listed (and its `run_index` holds `index_facts`, when given);
    (figures, the last server, still serving: the caller stops it)."""
    cold, first_rows, index_complete, own_cpu, all_cpu = [], [], [], [], []
    for attempt in range(repeat):
        before_each()
        server = Server(directory, cache=cache, env=env).__enter__()
        try:
            cold.append(server.wait_listed(records, index_facts))
            first_rows.append(server.first_rows)
            index_complete.append(server.run_index_complete)
            if server.index_cpu is not None:
                own_cpu.append(server.index_cpu[0] * 1e6 / records)
                all_cpu.append(server.index_cpu[1] * 1e6 / records)
        except BaseException:  # Ctrl-C included: no server outlives the bench
            server.__exit__()
            raise
        if attempt < repeat - 1:
            server.__exit__()
    figures = {"cold_index_s": median_of(cold), "cold_index_runs_s": cold, "first_rows_s": median_of(first_rows),
               "server_cpu_per_record_us": median_of(own_cpu), "all_cpu_per_record_us": median_of(all_cpu)}
    if index_facts is not None:
        figures["run_index_complete_s"] = median_of(index_complete)
    return figures, server


def cpu_figures(cold: dict, floor_cpu: float, records: int) -> dict:
    """CPU a record during a cold index (`cold_starts`'s figures), the server's own process and all of its,
    against the floor's: what bounds the cold index on a machine with more cores, where the wall time does not
    show it."""
    floor = floor_cpu * 1e6 / records
    every = cold.get("all_cpu_per_record_us")
    return {"server_cpu_per_record_us": cold.get("server_cpu_per_record_us"), "all_cpu_per_record_us": every,
            "floor_cpu_per_record_us": floor, "all_cpu_vs_floor": every / floor if every and floor else None}


def median_of(values: list) -> float | None:
    """The median of the figures that were measured (None: none was)."""
    done = [value for value in values if value is not None]
    return statistics.median(done) if done else None


def indexed_memory(server: Server, idle: int, records: int) -> dict:
    return {"rss_indexed_mib": server.rss() / 2**20, "rss_per_rollout_kib": (server.rss() - idle) / 1024 / records}


def first_run_id(server: Server) -> str:
    return (server.json(api_path("runs"))["data"] or [{}])[0].get("id", "")


def measure(directory: Path, work: Path, args, other: Path | None = None) -> dict:
    paths = document_paths(directory)
    workers = cores()
    results = {"records": len(paths), "workers": workers, "load_average_before": os.getloadavg()[0],
               "documents_mib": sum(p.stat().st_size for p in paths) / 2**20}
    env = private_env(work)
    idle = idle_rss(work, env)

    # The floor and the index take turns, so a burst of other work on the machine hits both alike.
    floor_one, floor_all, floor_cpu = [], [], []

    def floors():
        floor_one.append(floor_one_process(paths))
        elapsed, cpu = floor_all_cores(paths, workers)
        floor_all.append(elapsed)
        floor_cpu.append(cpu)

    cold, server = cold_starts(directory, len(paths), env, args.repeat, floors)
    try:  # the last server serves the rest of the suite
        results |= cold
        results["floor_one_process_s"] = statistics.median(floor_one)
        results["floor_all_cores_s"] = statistics.median(floor_all)
        results |= cpu_figures(results, statistics.median(floor_cpu), len(paths))
        done = results["cold_index_s"] is not None
        results["index_vs_floor"] = (results["cold_index_s"] / results["floor_all_cores_s"]) if done else None
        results |= indexed_memory(server, idle, len(paths))
        run_id = results["run_id"] = first_run_id(server)
        latency, requests = {}, routes(server, run_id)
        for name, path in requests.items():
            heavy = name.startswith("huge")
            latency[name] = timed_requests(server, path, max(1, args.requests // 3) if heavy else args.requests)
        for name, paths in variants(server, run_id).items():
            if latency[name].get("status") == 200:
                latency[name] |= new_queries(server, paths)
        results["latency"] = latency
        # New queries of one kind (a step, sorted by tokens or turns): every other one idle, the rest beside
        # the huge rollout's payloads, so neither half is answered from a cache the other half filled.
        combos = [f"{path}&sort={key}&order={order}" for path in variants(server, run_id)["rollouts step=(middle step)"]
                  for key in ("tokens", "turns") for order in ("asc", "desc")][:20]
        idle = new_queries(server, combos[0::2]).get("new_p50_ms")
        if latency["huge: paths"].get("status") == 200 and idle and len(combos) > 1:
            loaded = listing_under_load(server, combos[1::2], requests["huge: paths"])
            if loaded["p50_ms"]:
                loaded |= {"idle_p50_ms": idle, "slowdown": loaded["p50_ms"] / idle}
                results["listing_under_load"] = loaded
        steps = variants(server, run_id)["rollouts step=(middle step)"]
        searched = [f"{path}&sort={key}&order={order}" for path in steps  # queries no figure above asked
                    for key in ("reward", "task") for order in ("asc", "desc")][:20]
        results["search"] = search_figures(server, run_id, searched)
        results["compare"] = compare_figures(server, run_id, args.requests)
        results["compare_paint"] = compare_paint(server, run_id, tries=3) if not args.no_browser else {
            "status": "skipped"}
        results["first_paint"] = first_paint(server, run_id, tries=3) if not args.no_browser else {
            "status": "skipped"}
        results["chat_paint"] = chat_paint(server, run_id, tries=3) if not args.no_browser else {"status": "skipped"}
        results["rss_after_suite_mib"] = server.rss() / 2**20
        results["rss_peak_mib"] = server.peak_rss / 2**20
        results["load_average_after"] = os.getloadavg()[0]
    finally:
        server.__exit__()

    if other is not None:
        results["runs_compare"] = runs_compare_figures(directory, other, env)
    return results | reopen_figures(directory, work, env, len(paths))


def reopen_figures(directory: Path, work: Path, env: dict, records: int) -> dict:
    """A first open that writes the persisted index, then a reopen with what it wrote."""
    with Server(directory, cache=True, env=env) as first:
        results = {"first_open_with_cache_s": first.wait_listed(records)}
        run_id = first_run_id(first)
    return results | reopened(directory, env, records, run_id)


def reopened(directory: Path, env: dict, records: int, run_id: str) -> dict:
    """A server opening the persisted index another one left: until listed, its first listing, its memory."""
    with Server(directory, cache=True, env=env) as again:
        return {"reopen_s": again.wait_listed(records), "reopen_rss_mib": again.rss() / 2**20,
                "reopen_first_listing": timed_requests(again, f"{api_path('trajectories')}?run_id={run_id}", 1)}


# -- many small records -------------------------------------------------------------------

DISK_PER_SMALL_RECORD = 8192  # bytes allocated (two files, a 4 KiB block each; ~2.8 KB written), at 10k
RECORDS_PER_ROLLOUT = 1.01  # 1% of rollouts were retried: their superseded attempt is a record too


def refuse_without_disk(directory: Path, rows: int) -> None:
    """Stop before writing a small run the disk cannot hold twice over (its cache and other work need room)."""
    needed = 2 * rows * RECORDS_PER_ROLLOUT * DISK_PER_SMALL_RECORD
    existing = next(parent for parent in (directory, *directory.parents) if parent.exists())
    free = shutil.disk_usage(existing).free
    if free < needed:
        raise SystemExit(f"refusing to write {rows} small rollouts to {directory}: {free / 2**30:.1f} GiB free, "
                         f"{needed / 2**30:.1f} GiB wanted (twice the estimate of {DISK_PER_SMALL_RECORD} B a record)")


def small_run(directory: Path, rows: int) -> dict:
    """Write `rows` small rollouts to `directory` unless it holds a run already; how the writing went."""
    if directory.is_dir() and document_paths(directory):
        return {"generation_s": "reused"}
    refuse_without_disk(directory, rows)
    print(f"writing {rows} small rollouts to {directory} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    written = synth.generate_small(directory, rows)
    elapsed = time.perf_counter() - started
    records = written["records"]
    return {"generation_s": elapsed, "write_records_per_s": records / elapsed,
            "write_cpu_ms_per_record": written["cpu_s"] * 1000 / records,
            "bytes_per_record": written["bytes"] / records, "disk_bytes_per_record": written["disk_bytes"] / records}


def measure_rows(directory: Path, work: Path, args) -> dict:
    """A small run as a user meets it: cold index, memory, every listing kind over distinct queries, reopen."""
    records = len(document_paths(directory))
    results = {"records": records, "load_average_before": os.getloadavg()[0],
               "documents_mib": sum(p.stat().st_size for p in directory.iterdir()) / 2**20}
    env = private_env(work)
    idle = idle_rss(work, env)
    paths = document_paths(directory)
    results["workers"] = cores()
    results["floor_all_cores_s"], floor_cpu = floor_all_cores(paths, results["workers"])
    uncached = None
    if not args.cached_only:
        uncached, server = cold_starts(directory, records, env, 1)  # --no-cache: the temporary index costs the same?
        server.__exit__()
        results["cold_index_no_cache_s"] = uncached["cold_index_s"]
        if uncached["cold_index_s"] is not None:
            results["no_cache_vs_floor"] = uncached["cold_index_s"] / results["floor_all_cores_s"]
    cold, server = cold_starts(directory, records, env, args.repeat, cache=True,  # the index a reopen opens
                               before_each=lambda: shutil.rmtree(work / "cache", ignore_errors=True))
    uncached = uncached or cold  # with --cached-only, the CPU a record of the cold start that wrote the index
    try:
        results |= cold | indexed_memory(server, idle, records)
        results |= cpu_figures(uncached, floor_cpu, records)
        if results["cold_index_s"] is not None:
            results["cold_index_per_document_us"] = results["cold_index_s"] * 1e6 / records
            results["index_vs_floor"] = results["cold_index_s"] / results["floor_all_cores_s"]
        results["index_bytes_per_record"] = sum(p.stat().st_size for p in (work / "cache").rglob("*")
                                                if p.is_file()) / records
        run_id = results["run_id"] = first_run_id(server)
        results["listings"] = {name: new_queries(server, paths)
                               for name, paths in listing_kinds(server, run_id).items()}
        results["rss_after_suite_mib"] = server.rss() / 2**20
        results["rss_peak_mib"] = server.peak_rss / 2**20
        results["load_average_after"] = os.getloadavg()[0]
    finally:
        server.__exit__()
    return results | reopened(directory, env, records, run_id)  # the database the cold start wrote


def rows_runs(counts: list[int], args) -> dict[int, dict]:
    """Each small run written (or reused from --keep DIR/rows-N) and measured, smallest first, one server at
    a time; a temporary run is deleted before the next is written."""
    work = Path(tempfile.mkdtemp(prefix="skycap-bench-rows-"))
    figures = {}
    try:
        for rows in counts:
            directory = (Path(args.keep) if args.keep else work) / f"rows-{rows}"
            if args.run_index:
                refuse_index_there(directory)
            written = small_run(directory, rows)
            print(f"measuring {rows} small rollouts ...", file=sys.stderr, flush=True)
            (work / f"work-{rows}").mkdir()
            figures[rows] = {"rows": rows} | written | measure_rows(directory, work / f"work-{rows}", args)
            # each run's figures as soon as they are taken: a bench cut short (a million takes an hour) keeps them
            print(f"figures of {rows} small rollouts: {json.dumps(figures[rows])}", file=sys.stderr, flush=True)
            if args.run_index:
                print(f"measuring {rows} small rollouts with the run index ...", file=sys.stderr, flush=True)
                figures[rows]["run_index"] = run_index_figures(directory, work / f"work-{rows}", args, rows,
                                                               small=True, plain=figures[rows]["cold_index_s"],
                                                               cache=True)
            if not args.keep:
                shutil.rmtree(directory)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = figures[counts[0]].get("cold_index_per_document_us")
    for results in figures.values():
        per_document = results.get("cold_index_per_document_us")
        results["per_document_vs_smallest"] = per_document / base if base and per_document else None
    return figures


CPU_ROW = "CPU a record, cold index (--no-cache): server's process / all processes / floor"
CPU_TARGET = "server <= 15 µs; all <= 2.5x the floor"


ROWS_TARGETS = {  # on 2 cores; every other listing kind: p95 <= 100 ms (1M)
    CPU_ROW: CPU_TARGET,
    "cold index (--no-cache) / all-core floor": "<= 2.0x",
    "cold index (an empty persisted index)": "100k: <= 0.5x the original viewer's 24-30 s",
    "cold index per document / the smallest run's": "<= 1.1x (1M against 10k)",
    "reopen with the persisted index": "<= 0.5 s (1M)",
    "RSS after the suite (process tree)": "<= 512 MiB (1M), <= 250 MiB (10k)",
    "groups step=: p50 / p95": "p95 <= 150 ms (1M)",
    "one group: p50 / p95": "p95 <= 20 ms (1M)",
    "search: first page: p50 / p95": "p95 <= 1 s (1M)",
}


def cpu_per_record(results: dict) -> str:
    """`cpu_figures` as a table cell."""
    own, every, floor = (results.get(key) for key in ("server_cpu_per_record_us", "all_cpu_per_record_us",
                                                       "floor_cpu_per_record_us"))
    if own is None or every is None or not floor:
        return NA
    return f"{own:.0f} µs / {every:.0f} µs / {floor:.0f} µs ({ratio(every / floor)} the floor)"


def rows_target(name: str) -> str:
    return ROWS_TARGETS.get(name) or ("p95 <= 100 ms (1M)" if name.endswith(": p50 / p95") else "")


def reopen_rows(results: dict) -> list[tuple[str, str]]:
    """The reopen's figures, as both tables show them (`reopened`)."""
    return [
        ("reopen with the persisted index", seconds(results["reopen_s"])),
        ("reopened: first listing", ms(results["reopen_first_listing"], "first_ms")),
        ("reopened: RSS (process tree)", f"{results['reopen_rss_mib']:.0f} MiB"),
    ]


def rows_table(results: dict) -> list[tuple[str, str]]:
    generation = results["generation_s"]
    if isinstance(generation, float):
        generation = (f"{generation:.1f} s, {results['write_records_per_s']:.0f} records/s "
                      f"({results['write_cpu_ms_per_record']:.2f} CPU ms each), "
                      f"{results['bytes_per_record']:.0f} B written, "
                      f"{results['disk_bytes_per_record']:.0f} B on disk each")
    per_document = results.get("cold_index_per_document_us")
    rows = [
        ("records (documents)", f"{results['records']} ({results['documents_mib']:.0f} MiB of files)"),
        ("generation", generation),
        ("load average (1 min) before / after", (
            f"{results['load_average_before']:.1f} / {results['load_average_after']:.1f}")),
        ("first rows listed while indexing", seconds(results["first_rows_s"])),
        (f"floor, all cores ({results['workers']})", seconds(results.get("floor_all_cores_s"))),
        ("cold index (--no-cache)", seconds(results.get("cold_index_no_cache_s"))),
        ("cold index (--no-cache) / all-core floor", ratio(results.get("no_cache_vs_floor"))),
        (CPU_ROW, cpu_per_record(results)),
        ("cold index (an empty persisted index)", seconds(results["cold_index_s"])),
        ("cold index (an empty persisted index) / all-core floor", ratio(results.get("index_vs_floor"))),
        ("cold index per document", f"{per_document:.0f} µs" if per_document else NA),
        ("cold index per document / the smallest run's", ratio(results["per_document_vs_smallest"])),
        *reopen_rows(results),
        ("index database on disk, per record", f"{results['index_bytes_per_record'] / 1024:.1f} KiB"),
        ("RSS after indexing", f"{results['rss_indexed_mib']:.0f} MiB"),
        ("RSS after the suite (process tree)", f"{results['rss_after_suite_mib']:.0f} MiB"),
        ("peak RSS (process tree)", f"{results['rss_peak_mib']:.0f} MiB"),
    ]
    rows += [(f"{name}: p50 / p95", distinct(entry)) for name, entry in results["listings"].items()]
    return rows + run_index_rows(results.get("run_index"))


def row_counts(text: str) -> list[int]:
    """`--rows 10000,100000`: one or more counts."""
    return [int(part) for part in text.split(",") if part.strip()]


# -- the trainer's run index -------------------------------------------------------------------

REWRITES = 3  # rows whose step file is rewritten (one row changed), each timed until the listing shows it
REWRITE_PAUSE = 0.6  # seconds more before each next rewrite: they land at other points of the watcher's poll
MISSING_PAGES = 20  # pages of `missing=true` followed at most


def refuse_index_there(directory: Path) -> None:
    """--run-index writes and then removes `DIR/index/`: never over an index the bench did not write."""
    if (directory / "index").exists():
        raise SystemExit(f"refusing --run-index: {directory / 'index'} exists (the bench writes its own run index "
                         "there and removes it afterwards); remove it, or --keep another directory")


def record_ids(directory: Path) -> set[str]:
    """The ids of the records in `directory`, from their documents' names (the writer names them so)."""
    return {record_id_of(path.name) for path in document_paths(directory)}


def expected_index(written: dict[int, list], directory: Path) -> dict:
    """What /v1/runs should say of the index written (`run_index.write_run_index`) against the records in
    `directory`, and how many of the records here it says were not trained, or superseded."""
    present = record_ids(directory)
    rows = [row for step_rows in written.values() for row in step_rows]
    here = [(trained, superseded) for record_id, trained, superseded in rows if record_id in present]
    return {"files": len(written), "rows": len(rows), "rows_without_record": len(rows) - len(here),
            "records_listed": len(here), "not_trained": sum(1 for trained, _ in here if trained is False),
            "superseded": sum(1 for _, superseded in here if superseded)}


def run_index_figures(directory: Path, work: Path, args, rollouts: int, *, small: bool, plain: float | None,
                      cache: bool) -> dict:
    """Once the figures without it are taken: the run index written beside the records, a cold start with
    it (until listed and until /v1/runs says the whole index is applied) against `plain` (the cold index
    without it), its listings, and how long a rewritten step file takes to show. The index is removed
    afterwards, so a kept run is measured without it next time."""
    started = time.perf_counter()
    written = run_index.write_run_index(directory, rollouts, small=small)
    results = {"write_s": time.perf_counter() - started}
    try:
        expected = results["written"] = expected_index(written, directory)
        facts = {key: expected[key] for key in ("files", "rows", "rows_without_record", "records_listed")}
        records = len(document_paths(directory))
        cold, server = cold_starts(directory, records, private_env(work), args.repeat, cache=cache,
                                   before_each=lambda: shutil.rmtree(work / "cache", ignore_errors=True),
                                   index_facts=facts)
        try:
            results |= cold
            results["rss_indexed_mib"] = server.rss() / 2**20
            if plain and cold["cold_index_s"]:
                results["vs_plain"] = cold["cold_index_s"] / plain
                results["extra_per_document_us"] = (cold["cold_index_s"] - plain) * 1e6 / records
            run_id = first_run_id(server)
            results |= index_listings(server, run_id, args.requests)
            results["rewrite"] = rewrite_times(server, directory, run_id, written)
        finally:
            server.__exit__()
    finally:
        shutil.rmtree(directory / "index", ignore_errors=True)
    return results


def missing_pages(server: Server, first: str) -> list[str]:
    """The pages of a `missing=true` listing, following `next_cursor` (at most `MISSING_PAGES`)."""
    pages = [first]
    while len(pages) < MISSING_PAGES:
        cursor = (server.json(pages[-1]) or {}).get("next_cursor")
        if not cursor:
            break
        pages.append(f"{first}&cursor={urllib.parse.quote(cursor)}")
    return pages


def index_listings(server: Server, run_id: str, requests: int) -> dict:
    """What the index adds to the listings, each over distinct queries asked once, then one repeated:
    rows not trained (pages), sorted by trained (both orders, five pages each), the index rows without a
    record (the first page, every page, the last page followed), and /v1/runs with its `run_index`; and
    whether the totals are what was written (`applied`)."""
    base = f"{api_path('trajectories')}?run_id={urllib.parse.quote(run_id)}"
    pages = missing_pages(server, f"{base}&missing=true&limit=100")
    kinds = {
        "run index: rollouts trained=false": [f"{base}&trained=false&cursor={100 * page}" for page in range(20)],
        "run index: rollouts sort=trained": [f"{base}&sort=trained&order={order}&cursor={100 * page}"
                                             for order in ("asc", "desc") for page in range(5)],
    }
    listings = {name: new_queries(server, paths) | timed_requests(server, paths[0], requests)
                for name, paths in kinds.items()}
    listings["run index: missing=true&limit=100, every page"] = new_queries(server, pages)
    listings["run index: missing=true&limit=100, first page"] = timed_requests(server, pages[0], requests)
    later = {"status": "one page only"}
    if len(pages) > 1:
        later = timed_requests(server, pages[-1], requests) | {"page": len(pages)}
    listings["run index: missing=true&limit=100, a later page"] = later
    listings["run index: runs"] = timed_requests(server, api_path("runs"), requests)
    applied = {"trained_false_total": (server.json(f"{base}&trained=false&limit=1") or {}).get("total"),
               "missing_total": (server.json(pages[0]) or {}).get("total")}
    return {"listings": listings, "applied": applied}


def rewrite_times(server: Server, directory: Path, run_id: str, written: dict[int, list]) -> dict:
    """Seconds from a step file rewritten with one row's `trained` turned false (renamed in, as a trainer
    writes it) until that row is in the step's `trained=false` listing, for `REWRITES` rows of a middle step,
    each `REWRITE_PAUSE` later than the last (the watcher polls: one right after a poll waits for the next),
    with how many records' sidecars were verified before each (the background pass holds up the polls)."""
    step = sorted(written)[len(written) // 2]
    present = record_ids(directory)
    chosen = [record_id for record_id, trained, _ in written[step] if trained and record_id in present][:REWRITES]
    listing = f"{api_path('trajectories')}?run_id={urllib.parse.quote(run_id)}&step={step}&trained=false&limit=1000"
    times, verified = [], []
    for number, record_id in enumerate(chosen):
        time.sleep(number * REWRITE_PAUSE)
        verified.append(sum(run.get("sidecars_verified") or 0 for run in server.json(api_path("runs"))["data"]))
        run_index.set_trained(directory, step, record_id, False)
        started = time.perf_counter()
        times.append(wait_for_row(server, listing, record_id, started))
    return {"step": step, "times_s": times, "median_s": median_of(times), "sidecars_verified_before": verified}


def wait_for_row(server: Server, listing: str, record_id: str, started: float, timeout: float = 120) -> float | None:
    """Seconds since `started` until `listing` holds the row `record_id` (None: not within `timeout`)."""
    while time.perf_counter() - started < timeout:
        try:
            answer = server.json(listing) or {}
        except OSError:
            answer = {}
        if any(row.get("id") == record_id for row in answer.get("data") or []):
            return time.perf_counter() - started
        time.sleep(0.02)
    return None


def run_index_rows(index: dict | None) -> list[tuple[str, str]]:
    """The run index's figures, as both tables show them (nothing without --run-index)."""
    if index is None:
        return []
    written, applied, rewrite = index["written"], index["applied"], index["rewrite"]
    extra = index.get("extra_per_document_us")
    rows = [
        ("run index: written", (
            f"step files {written['files']}, rows {written['rows']}, in {index['write_s']:.2f} s; of the "
            f"{written['records_listed']} records here {written['not_trained']} not trained "
            f"({written['superseded']} superseded); {written['rows_without_record']} rows without a record")),
        ("run index: cold index with it", (
            f"{seconds(index['cold_index_s'])}, {ratio(index.get('vs_plain'))} the cold index without it"
            + (f" ({extra:+.0f} µs a document)" if extra is not None else ""))),
        ("run index: applied in full (/v1/runs, since launch)", seconds(index["run_index_complete_s"])),
        ("run index: listed / written", (
            f"trained=false {applied['trained_false_total']} / {written['not_trained']}, "
            f"missing=true {applied['missing_total']} / {written['rows_without_record']}")),
        ("run index: RSS after indexing", f"{index['rss_indexed_mib']:.0f} MiB"),
    ]
    for name, entry in index["listings"].items():
        page = f" (page {entry['page']})" if "page" in entry else ""
        rows.append((f"{name}: p50 / p95", latency(entry) + page))
    times = [t for t in rewrite["times_s"] if t is not None]
    rows.append(("run index: a step file rewritten, until listed", (
        f"{rewrite['median_s']:.2f} s median over {len(times)} rewrites ({min(times):.2f} to {max(times):.2f} s;"
        f" sidecars verified before each: {', '.join(map(str, rewrite['sidecars_verified_before']))})"
        if times else NA)))
    return rows


# -- report ------------------------------------------------------------------------------------

def distinct(entry: dict, unit: str = "queries") -> str:
    """p50 / p95 over distinct queries, and what went wrong when not every one answered 200."""
    if "new_p50_ms" not in entry:
        return f"{NA} ({entry.get('new_status', 'not asked')})"
    failed = "" if entry["new_status"] == 200 else f" ({entry['new_status']} for some)"
    return f"{entry['new_p50_ms']:.1f} ms / {entry['new_p95_ms']:.1f} ms over {entry['new_queries']} {unit}{failed}"


def latency(entry: dict) -> str:
    """Distinct queries (what a click costs), then the same one again; or only one of the two."""
    if "status" not in entry:
        return distinct(entry)
    if "new_p50_ms" in entry:
        return f"{distinct(entry)}; repeated {ms(entry)}"
    return f"{ms(entry)} / {ms(entry, 'p95_ms')}" if entry["status"] == 200 else ms(entry)


def ms(entry: dict, key: str = "p50_ms") -> str:
    status = entry.get("status")
    if status != 200:
        return f"{NA} (HTTP {status})" if isinstance(status, int) else f"{NA} ({status})"
    return f"{entry[key]:.1f} ms"


def size(entry: dict) -> str:
    if entry.get("status") != 200:
        return NA
    zipped = f" / {entry['gzip_bytes'] / 1024:.0f} KiB gzip" if entry.get("gzip_bytes") else " (no gzip)"
    return f"{entry['bytes'] / 1024:.0f} KiB{zipped}"


def seconds(value) -> str:
    return f"{value:.2f} s" if isinstance(value, (int, float)) else (value or "did not finish")


ORIGINAL_VIEWER_FLOORS = 2.27  # the original viewer's cold open of the realistic run, in all-core floors
TARGETS = {  # for a 10k-rollout run on 2 cores
    "cold index / all-core floor": "<= 1.5x",
    CPU_ROW: CPU_TARGET,
    "cold index / the original viewer's (2.27 floors)": "<= 0.7x",
    "reopen with the persisted index": "<= 0.3 s",
    "peak RSS (process tree, whole suite)": "<= 300 MiB",
    "rollouts (default): p50 / p95": "p50 <= 15 ms (<= 60 ms at 100k)",
    "groups: p50 / p95": "p50 <= 20 ms (<= 60 ms at 100k)",
    "huge: paths, first fetch": "<= 100 ms",
    "huge: paths: size": "<= 2 MiB on the wire",
    "listing while huge paths are served": "<= 1.5x slower",
    "huge Path tab, first paint (Chromium)": "<= 1 s",
    "search: first page": "<= 1 s",
    "search: complete / all-core floor": "<= 1.5x",
    "search: the same search again": "faster than the first",
    "search: memory while searching": "server <= 64 MiB over idle",
    "compare: the two longest rollouts, first answer": "<= 150 ms",
    "compare: the huge rollout and its group's other member, first answer": "<= 150 ms",
    "compare view, first paint (Chromium)": "<= 1 s",
    "line-up of a group of 8: p50 / p95": "<= 200 ms",
    "two runs compared group by group": "<= 300 ms",
}


def table(results: dict) -> list[tuple[str, str]]:
    floor_all = results["floor_all_cores_s"]
    rows = [
        ("records (documents)", f"{results['records']} ({results['documents_mib']:.0f} MiB of documents)"),
        ("generation", seconds(results.get("generation_s"))),
        ("load average (1 min) before / after", (
            f"{results['load_average_before']:.1f} / {results['load_average_after']:.1f}"
            f" ({results['workers']} cores)")),
        ("floor, 1 process", seconds(results["floor_one_process_s"])),
        (f"floor, {results['workers']} processes", seconds(floor_all)),
        ("first rows listed while indexing", seconds(results.get("first_rows_s"))),
        ("cold index (--no-cache)", seconds(results["cold_index_s"])),
        ("cold index / all-core floor", ratio(results["index_vs_floor"])),
        (CPU_ROW, cpu_per_record(results)),
        ("cold index / the original viewer's (2.27 floors)", ratio(
            results["index_vs_floor"] / ORIGINAL_VIEWER_FLOORS if results["index_vs_floor"] else None)),
        ("first open writing the cache", seconds(results["first_open_with_cache_s"])),
        *reopen_rows(results),
        ("RSS after indexing", f"{results['rss_indexed_mib']:.0f} MiB"),
        ("RSS per indexed rollout", f"{results['rss_per_rollout_kib']:.1f} KiB"),
        ("peak RSS (process tree, whole suite)", f"{results['rss_peak_mib']:.0f} MiB"),
        ("RSS after the suite", f"{results['rss_after_suite_mib']:.0f} MiB"),
    ]
    for name, entry in results["latency"].items():
        rows.append((f"{name}: p50 / p95", latency(entry)))
        if name.startswith("huge: paths"):
            rows.append(("huge: paths, first fetch", ms(entry, "first_ms")))
        if name in ("rollouts (default)", "groups", "huge: paths", "huge: graph"):
            rows.append((f"{name}: size", size(entry)))
    loaded = results.get("listing_under_load")
    under_load = NA
    if loaded:
        under_load = f"{loaded['p50_ms']:.1f} ms p50 (idle {loaded['idle_p50_ms']:.1f}), {ratio(loaded['slowdown'])}"
        under_load += f" ({loaded['huge_fetches']} huge fetches meanwhile)"
    rows.append(("listing while huge paths are served", under_load))
    paint = results["first_paint"]
    shown = f"{NA} ({paint['status']})"
    if paint.get("status") == "ok":
        shown = f"{paint['median_s'] * 1000:.0f} ms"
    rows.append(("huge Path tab, first paint (Chromium)", shown))
    chat = results.get("chat_paint") or {"status": "not measured"}
    rows.append(("huge Chat tab, first paint (Chromium)", f"{chat['median_s'] * 1000:.0f} ms"
                 if chat.get("status") == "ok" else f"{NA} ({chat['status']})"))
    rows += search_rows(results.get("search"), floor_all)
    rows += compare_rows(results.get("compare") or {}, results.get("runs_compare"))
    painted = results.get("compare_paint") or {"status": "not measured"}
    rows.append(("compare view, first paint (Chromium)", f"{painted['median_s'] * 1000:.0f} ms"
                 if painted.get("status") == "ok" else f"{NA} ({painted['status']})"))
    if "scroll_frames" in paint:
        rows.append(("huge Path tab, scrolling: frame p95 / longest", (
            f"{paint['scroll_frame_p95_ms']:.0f} ms / {paint['scroll_frame_max_ms']:.0f} ms"
            f" over {paint['scroll_frames']} frames")))
    return rows + run_index_rows(results.get("run_index"))


def search_rows(search: dict | None, floor_all: float) -> list[tuple[str, str]]:
    if not search or search["common"].get("status") != 200 or search["needle"].get("status") != 200:
        return [("search", NA)]
    common, needle, repeat = search["common"], search["needle"], search["repeat"]
    rows = [
        ("search: first page", f"{common['first_s'] * 1000:.0f} ms for {common['first_hits']} hits of "
                               f"{COMMON_TEXT!r} (workers started cold)"),
        ("search: complete", f"{seconds(needle['complete_s'])} for {needle['scanned']} documents, "
                             f"{needle['hits']} hits, {needle['skipped']} skipped"),
        ("search: complete / all-core floor", ratio(needle["complete_s"] / floor_all)),
        ("search: the same search again", seconds(repeat.get("complete_s"))),
        ("search: memory while searching", f"server +{search['server_rss_delta_mib']:.0f} MiB, "
                                           f"process tree +{search['tree_rss_delta_mib']:.0f} MiB (workers)"),
    ]
    loaded = search.get("listing")
    if loaded:
        outlasted = "" if loaded["search_outlasted"] else " (the search ended first)"
        rows.append(("listing while a search runs", f"{loaded['p50_ms']:.1f} ms p50 (idle "
                     f"{loaded['idle_p50_ms']:.1f}), {ratio(loaded['slowdown'])}{outlasted}"))
    return rows


def compare_rows(compare: dict, runs: dict | None) -> list[tuple[str, str]]:
    rows = []
    for name, entry in compare.items():
        if name.startswith("compare:"):
            rows.append((f"{name}, first answer", ms(entry, "first_ms")))
            rows.append((f"{name}: repeated p50 / size", f"{ms(entry)} / {size(entry)}"))
    lined = compare.get("line-up of a group of 8") or {}
    rows.append(("line-up of a group of 8: p50 / p95", distinct(lined, "groups") if lined else NA))
    if runs is not None:
        whole = ms(runs, "first_ms") if runs.get("status") == 200 else ms(runs)
        stepped = f"; one step against another {distinct(runs, 'steps')}" if "new_p50_ms" in runs else ""
        rows.append(("two runs compared group by group", f"{whole} first, {ms(runs)} repeated{stepped}"))
    return rows


def markdown(columns: dict[str, list[tuple[str, str]]], target) -> str:
    """One Markdown table: a row per figure, a column per run (label -> its (figure, value) rows), and
    the target of each figure (`target(name)`)."""
    tables = [dict(rows) for rows in columns.values()]
    lines = ["| Figure | " + " | ".join(columns) + " | Target |", "| --- " * (len(columns) + 2) + "|"]
    for name in tables[0]:
        values = " | ".join(t.get(name, NA) for t in tables)
        lines.append(f"| {name} | {values} | {target(name) or ''} |")
    return "\n".join(lines)


def ratio(value) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) else NA


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=10_000, help="rollouts in the run (default 10000)")
    parser.add_argument("--huge", action="store_true", help="a 100k-rollout run (same as --rollouts 100000)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table (docs/benchmark.md)")
    parser.add_argument("--keep", metavar="DIR",
                        help="write the run to DIR (the second run to DIR-b) and keep them (reused when there)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the floor and the cold index (median)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per route")
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium first paint")
    parser.add_argument("--no-second-run", action="store_true",
                        help="skip the second run (seed 2) that two runs are compared with")
    parser.add_argument("--rows", metavar="N[,N...]", type=row_counts, action="append",
                        help="instead of the realistic run, N small rollouts (repeatable or a comma list; "
                             "with --keep DIR written to DIR/rows-N and reused)")
    parser.add_argument("--run-index", action="store_true",
                        help="then write the trainer's run index beside the records (bench/run_index.py) and "
                             "measure what it costs: a cold start with it, its listings, a step file rewritten")
    parser.add_argument("--s3", action="store_true",
                        help="instead, serve the run from an S3 server on loopback, with 0 and 20 ms added to each "
                             "request, against its fetch floor (bench/s3.py; needs the test extra)")
    parser.add_argument("--cached-only", action="store_true",
                        help="with --rows, skip the --no-cache cold start (a million records take half an hour "
                             "each): the CPU figures are then the cold start's that writes the persisted index")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="run everything on N cores: the viewer starts N workers and the floor N processes")
    args = parser.parse_args(argv)
    if args.workers:
        use_cores(args.workers)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated bench still stops its servers,
    signal.signal(signal.SIGINT, signal.default_int_handler)  # and so does Ctrl-C, even when started with it ignored
    if args.rows:
        return report_rows(rows_runs(sorted({n for counts in args.rows for n in counts}), args), args)
    rollouts = 100_000 if args.huge else args.rollouts
    work = Path(tempfile.mkdtemp(prefix="skycap-bench-"))
    try:
        directory = Path(args.keep) if args.keep else work / "grpo-run"
        other = directory.with_name(directory.name + "-b") if not args.no_second_run else None
        generation = None
        if args.run_index:
            refuse_index_there(directory)
        if not (directory.is_dir() and document_paths(directory)):
            print(f"writing {rollouts} rollouts to {directory} ...", file=sys.stderr, flush=True)
            started = time.perf_counter()
            synth.generate(directory, rollouts)
            generation = time.perf_counter() - started
        if other is not None and not (other.is_dir() and document_paths(other)):
            print(f"writing a second run of {rollouts} rollouts to {other} ...", file=sys.stderr, flush=True)
            synth.generate(other, rollouts, seed=2)
        if args.s3:
            from s3 import measure_s3

            print("measuring over S3 ...", file=sys.stderr, flush=True)
            print(json.dumps(measure_s3(directory, work), indent=1))
            return 0
        print("measuring ...", file=sys.stderr, flush=True)
        results = measure(directory, work, args, other)
        if args.run_index:
            print("measuring with the run index ...", file=sys.stderr, flush=True)
            results["run_index"] = run_index_figures(directory, work, args, rollouts, small=False,
                                                     plain=results["cold_index_s"], cache=False)
        results["generation_s"] = generation if generation is not None else "reused"
        results["rollouts_asked"] = rollouts
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=1))
    elif args.markdown:
        print(markdown({f"{results['records']} records": table(results)}, TARGETS.get))
    else:
        rows = table(results)
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            target = f"   (target {TARGETS[name]})" if name in TARGETS else ""
            print(f"{name:<{width}}  {value}{target}")
    return 0


def report_rows(figures: dict[int, dict], args) -> int:
    """--json: every figure; otherwise one Markdown table, a column per run."""
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        columns = {f"{rows:,} rows": rows_table(results) for rows, results in figures.items()}
        print(markdown(columns, rows_target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
