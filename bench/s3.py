"""The viewer over a run in object storage: `python bench/run.py --s3 [--keep DIR]` (or `bench/s3.py DIR`).

The run is uploaded to a real S3-compatible server on loopback (moto's server mode, from the test
extra, in a process of its own) and read through a proxy, in another, that adds a fixed latency to
every request (0 and 20 ms). For each latency: the **fetch floor** (a plain loop that lists the prefix, gets
every document 32 at a time, then decompresses and parses them on all cores), the viewer's cold index
(from its start to every row listed), a reopen (every row listed again, and how many files it
fetched again: a fetched file is a new inode in the copy), a rollout's first open (its sidecars
fetched) and a second one after the reopen (nothing fetched), and
the server's memory while it indexes, against the same run served from its directory.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(REPO))

from floor import document_paths, floor_all_cores  # noqa: E402

from skycap_viewer.catalog.remote_copy import copy_directory  # noqa: E402
from tests.support.api_paths import api_path  # noqa: E402
from tests.support.process_memory import tree_resident_bytes  # noqa: E402
from tests.support.s3_store import BUCKET, S3Store  # noqa: E402
from tests.support.server_process import ServerProcess  # noqa: E402

LATENCIES_MS = (0, 20)
IN_FLIGHT = 32


class LatencyProxy:
    """A TCP proxy on loopback, in a process of its own, that holds each request `latency` seconds
    before passing it on (`python bench/s3.py --proxy HOST:PORT MS` prints the port it listens on)."""

    def __init__(self, upstream: str, latency_ms: int):
        self.process = subprocess.Popen([sys.executable, __file__, "--proxy", upstream, str(latency_ms)],
                                        stdout=subprocess.PIPE, text=True)
        self.endpoint = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def serve_proxy(upstream: str, latency: float):
    host, port = upstream.split(":")
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)

    def pipe(source, target, requests: bool):
        try:
            while data := source.recv(65536):
                if requests and data[:4] in (b"GET ", b"HEAD", b"PUT "):
                    time.sleep(latency)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    while True:
        client, _ = listener.accept()
        server = socket.create_connection((host, int(port)))
        threading.Thread(target=pipe, args=(client, server, True), daemon=True).start()
        threading.Thread(target=pipe, args=(server, client, False), daemon=True).start()


def fetched_files(copy: Path) -> dict[str, int]:
    """{file: inode} of every record file in the copy: a file fetched again is a new inode."""
    return {path.name: path.stat().st_ino for path in copy.rglob("*.zst") if not path.name.startswith(".")}


def downloads(before: dict[str, int], after: dict[str, int]) -> int:
    return sum(1 for name, inode in after.items() if before.get(name) != inode)


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
            peak[0] = max(peak[0], tree_resident_bytes(server.process.pid))
            time.sleep(0.05)

    if peak is not None:
        threading.Thread(target=sample, daemon=True).start()
    while True:
        runs = server.get(api_path("runs"))["data"]
        if runs and sum(run["indexed"] for run in runs) >= records and not any(run["indexing"] for run in runs):
            break
        time.sleep(0.05)
    sampling.set()
    return server, time.perf_counter() - started


def first_open(server: ServerProcess, record_id: str) -> float:
    started = time.perf_counter()
    paths = server.get(api_path("paths", record_id))
    assert paths.get("text_only") in (None, "text-mode"), paths.get("tokens_error")
    return time.perf_counter() - started


def measure_latency(store: S3Store, url: str, records: int, latency_ms: int, work: Path, workers: int) -> dict:
    proxy = LatencyProxy(store.endpoint.removeprefix("http://"), latency_ms)
    try:
        floor = fetch_floor(store, proxy.endpoint, url.split("/", 3)[3], workers)
        cache = work / f"cache-{latency_ms}"
        env = {**store.env, "AWS_ENDPOINT_URL": proxy.endpoint, "XDG_CACHE_HOME": str(cache)}
        copy = copy_directory(cache / "skycap-viewer", url)
        peak = [0]
        server, cold = served_until_listed(url, records, env, peak)
        record_id = server.get(f"{api_path('trajectories')}?limit=1")["data"][0]["id"]
        listed = fetched_files(copy)
        opened = first_open(server, record_id)
        after_open = fetched_files(copy)
        server.__exit__(None, None, None)
        server, reopen = served_until_listed(url, records, env)
        after_reopen = fetched_files(copy)
        again = first_open(server, record_id)
        after_again = fetched_files(copy)
        server.__exit__(None, None, None)
    finally:
        proxy.close()
    return {"latency_ms": latency_ms, "floor": floor, "cold_seconds": round(cold, 3),
            "cold_vs_floor": round(cold / floor["floor_seconds"], 2), "cold_downloads": len(listed),
            "peak_rss_mib": round(peak[0] / 2**20), "first_open_seconds": round(opened, 3),
            "first_open_downloads": downloads(listed, after_open), "reopen_seconds": round(reopen, 3),
            "reopen_downloads": downloads(after_open, after_reopen), "second_open_seconds": round(again, 3),
            "second_open_downloads": downloads(after_reopen, after_again)}


def measure_s3(directory: Path, work: Path, workers: int = os.cpu_count() or 1) -> dict:
    """Every figure of the module docstring for the run in `directory`."""
    records = len(document_paths(directory))
    store = S3Store(work / "store-cache", own_process=True)
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
        results["latencies"] = [measure_latency(store, url, records, latency, work, workers)
                                for latency in LATENCIES_MS]
    finally:
        store.stop()
    for entry in results["latencies"]:
        entry["rss_vs_local"] = round(entry["peak_rss_mib"] / max(results["local_peak_rss_mib"], 1), 2)
    return results


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--proxy"]:
        serve_proxy(argv[1], int(argv[2]) / 1000)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="a record directory (e.g. one `bench/run.py --keep` wrote)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="skycap-s3-bench-") as work:
        print(json.dumps(measure_s3(args.directory, Path(work)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
