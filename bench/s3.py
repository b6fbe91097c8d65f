"""The viewer over a run in object storage: `python bench/run.py --s3 [--keep DIR]` (or `bench/s3.py DIR`).

The run is uploaded to a real S3-compatible server on loopback (moto's server mode, from the test
extra) and read through a proxy that adds a fixed latency to every request (0 and 20 ms), and that
counts what is asked. For each latency: the **fetch floor** (a plain loop that lists the prefix, gets
every document 32 at a time, then decompresses and parses them on all cores), the viewer's cold index
(from its start to every row listed), a reopen (every row listed again, and how many objects it
downloaded), a rollout's first open (its sidecars fetched) and a second one (nothing downloaded), and
the server's memory while it indexes, against the same run served from its directory.
"""

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))

from run import document_paths, floor_all_cores, tree_rss  # noqa: E402

from tests.s3_store import BUCKET, S3Store  # noqa: E402
from tests.server_process import ServerProcess  # noqa: E402

LATENCIES_MS = (0, 20)
IN_FLIGHT = 32


class LatencyProxy:
    """A TCP proxy on loopback that holds each request `latency` seconds before passing it on, and
    counts the object GETs (`gets`) and the listings (`lists`) it passes."""

    def __init__(self, upstream: tuple[str, int], latency: float):
        self.upstream, self.latency = upstream, latency
        self.gets = self.lists = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            threading.Thread(target=self.pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(upstream, client, False), daemon=True).start()

    def pipe(self, source, target, requests: bool):
        try:
            while data := source.recv(65536):
                if requests and data[:4] in (b"GET ", b"HEAD"):
                    self.count(data)
                    time.sleep(self.latency)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def count(self, head: bytes):
        line = head.split(b"\r\n", 1)[0]
        with self.lock:
            if b"list-type=" in line or b"?prefix=" in line:
                self.lists += 1
            elif line.startswith(b"GET "):
                self.gets += 1

    def reset(self) -> tuple[int, int]:
        with self.lock:
            counts, self.gets, self.lists = (self.gets, self.lists), 0, 0
        return counts

    def close(self):
        self.listener.close()


def fetch_floor(store: S3Store, endpoint: str, prefix: str, workers: int) -> dict:
    """List the prefix, get every document `IN_FLIGHT` at a time, then parse them on all cores."""
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="testing", secret="testing", use_listings_cache=False)
    started = time.perf_counter()
    names = [name for name in fs.find(f"{BUCKET}/{prefix}") if name.endswith(".json.zst")]
    with tempfile.TemporaryDirectory() as scratch:
        def get(name):
            Path(scratch, name.rsplit("/", 1)[1]).write_bytes(fs.cat_file(name))

        with ThreadPoolExecutor(IN_FLIGHT) as pool:
            list(pool.map(get, names))
        fetched = time.perf_counter() - started
        parsed = floor_all_cores(sorted(Path(scratch).iterdir()), workers)
    return {"documents": len(names), "fetch_seconds": round(fetched, 3), "parse_seconds": round(parsed, 3),
            "floor_seconds": round(fetched + parsed, 3)}


def served_until_listed(target: str, records: int, env: dict, peak: list | None = None) -> tuple[ServerProcess, float]:
    """A server over `target`, and the seconds from its start to every one of `records` rows listed."""
    started = time.perf_counter()
    server = ServerProcess([target], env=env, cache_home=env["XDG_CACHE_HOME"]).__enter__()
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            peak[0] = max(peak[0], tree_rss(server.process.pid))
            time.sleep(0.05)

    if peak is not None:
        threading.Thread(target=sample, daemon=True).start()
    while True:
        runs = server.get("/v1/runs")["data"]
        if runs and sum(run["indexed"] for run in runs) >= records and not any(run["indexing"] for run in runs):
            break
        time.sleep(0.05)
    sampling.set()
    return server, time.perf_counter() - started


def first_open(server: ServerProcess, record_id: str) -> float:
    started = time.perf_counter()
    paths = server.get(f"/v1/trajectories/{record_id}/paths")
    assert paths.get("text_only") in (None, "text-mode"), paths.get("tokens_error")
    return time.perf_counter() - started


def measure_latency(store: S3Store, directory: Path, url: str, records: int, latency_ms: int, work: Path,
                    workers: int) -> dict:
    host, port = store.endpoint.removeprefix("http://").split(":")
    proxy = LatencyProxy((host, int(port)), latency_ms / 1000)
    try:
        floor = fetch_floor(store, proxy.endpoint, url.split("/", 3)[3], workers)
        proxy.reset()
        env = {**store.env, "AWS_ENDPOINT_URL": proxy.endpoint, "XDG_CACHE_HOME": str(work / f"cache-{latency_ms}")}
        peak = [0]
        server, cold = served_until_listed(url, records, env, peak)
        cold_gets, cold_lists = proxy.reset()
        record_id = server.get("/v1/trajectories?limit=1")["data"][0]["id"]
        opened = first_open(server, record_id)
        open_gets, _ = proxy.reset()
        server.__exit__(None, None, None)
        server, reopen = served_until_listed(url, records, env)
        reopen_gets, reopen_lists = proxy.reset()
        again = first_open(server, record_id)
        again_gets, _ = proxy.reset()
        server.__exit__(None, None, None)
    finally:
        proxy.close()
    return {"latency_ms": latency_ms, "floor": floor, "cold_seconds": round(cold, 3),
            "cold_vs_floor": round(cold / floor["floor_seconds"], 2), "cold_gets": cold_gets,
            "cold_lists": cold_lists, "peak_rss_mib": round(peak[0] / 2**20),
            "first_open_seconds": round(opened, 3), "first_open_gets": open_gets,
            "reopen_seconds": round(reopen, 3), "reopen_gets": reopen_gets, "reopen_lists": reopen_lists,
            "second_open_seconds": round(again, 3), "second_open_gets": again_gets}


def measure_s3(directory: Path, work: Path, workers: int = os.cpu_count() or 1) -> dict:
    """Every figure of the module docstring for the run in `directory`."""
    records = len(document_paths(directory))
    store = S3Store(work / "store-cache")
    try:
        started = time.perf_counter()
        url = store.upload(directory, "bench/run")
        uploaded = time.perf_counter() - started
        peak = [0]
        local_env = {"XDG_CACHE_HOME": str(work / "cache-local")}
        server, local_cold = served_until_listed(str(directory), records, local_env, peak)
        server.__exit__(None, None, None)
        results = {"records": records, "upload_seconds": round(uploaded, 1), "local_cold_seconds": round(local_cold, 3),
                   "local_peak_rss_mib": round(peak[0] / 2**20)}
        results["latencies"] = [measure_latency(store, directory, url, records, latency, work, workers)
                                for latency in LATENCIES_MS]
    finally:
        store.stop()
    for entry in results["latencies"]:
        entry["rss_vs_local"] = round(entry["peak_rss_mib"] / max(results["local_peak_rss_mib"], 1), 2)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="a record directory (e.g. one `bench/run.py --keep` wrote)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="skycap-s3-bench-") as work:
        print(json.dumps(measure_s3(args.directory, Path(work)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
