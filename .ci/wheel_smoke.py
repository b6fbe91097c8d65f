"""CI: the installed wheel (not the source tree) serves the demo run, every page file and the API.

Run with the fresh venv's Python from outside the repository, so nothing is imported from the
source tree: a package or page file left out of pyproject.toml fails here.
"""

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

executable = Path(sys.executable).parent / "skycap-viewer"
server = subprocess.Popen([str(executable), "--demo", "--port", "0", "--no-cache", "--quiet"],
                          stdout=subprocess.PIPE, text=True)
try:
    found = re.search(r"http://\S+/", server.stdout.readline())
    if found is None:
        sys.exit(f"wheel smoke: the installed skycap-viewer did not start (exit {server.wait(timeout=10)})")
    url = found.group(0)

    def get(path: str) -> bytes:
        with urllib.request.urlopen(url + path.lstrip("/"), timeout=10) as response:
            return response.read()

    page = get("/").decode()
    files = re.findall(r'(?:href|src)="([^"#:]+)"', page)
    for name in files:
        get(name)
    deadline = time.monotonic() + 60
    while (runs := json.loads(get("/v1/runs"))["data"]) and runs[0]["indexing"] and time.monotonic() < deadline:
        time.sleep(0.2)
    rows = json.loads(get(f"/v1/trajectories?run_id={runs[0]['id']}"))["data"]
    paths = json.loads(get(f"/v1/trajectories/{rows[0]['id']}/paths"))
    assert rows and paths["paths"], "the demo run lists no rollout"
    print(f"wheel smoke: {len(files)} page files, {len(rows)} demo rollouts served from the installed wheel")
finally:
    server.terminate()
    server.wait(timeout=10)
