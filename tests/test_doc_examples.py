"""The examples in docs/python.md and docs/agents.md run, as a reader would run them.

python.md's blocks run one after the other in one fresh interpreter (a notebook's cells), over the
example run, with the persisted index in a temporary cache. agents.md's `mcpServers` configuration
starts the server it names (over the example run), and the official SDK's client lists its tools.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from skycap_viewer.demo import records_directory

pytestmark = pytest.mark.slow  # each starts an interpreter that indexes the example run
REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", page.read_text(), re.MULTILINE | re.DOTALL)


def test_the_notebook_walk_through_runs(tmp_path):
    cells = blocks(DOCS / "python.md", "python")
    assert len(cells) >= 5
    environment = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", "\n".join(cells)], capture_output=True, text=True, cwd=tmp_path,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    said = done.stdout
    assert re.match(r"records \d+ rollouts, steps \[1, 2, 3\]\n", said)
    assert re.search(r"^tr_\w+ n\d+ [Ll]ecture$", said, re.MULTILINE)  # a search hit (the first to be found)
    assert re.search(r"^truncated \d+ tokens, \d+ in the loss$", said, re.MULTILINE)
    assert ("pandas is not installed here" in said) != has("pandas")
    assert (tmp_path / "skycap-viewer").is_dir()  # the persisted index went to the cache it was given


def has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


async def listed_tools(parameters: StdioServerParameters) -> list[str]:
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return sorted(tool.name for tool in (await session.list_tools()).tools)


def test_the_agents_configuration_starts_the_server(tmp_path):
    (configuration,) = [json.loads(block) for block in blocks(DOCS / "agents.md", "json")]
    entry = configuration["mcpServers"]["skycap"]
    assert entry["command"] == "skycap-viewer" and entry["args"][0] == "mcp"
    args = ["-m", "skycap_viewer", *entry["args"][:-1], str(records_directory())]  # this tree's viewer, the demo
    parameters = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path),
                                       env={"PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp_path)})
    assert asyncio.run(listed_tools(parameters)) == sorted(
        ["check", "diff", "export_rows", "get_rollout", "list_groups", "list_rollouts", "list_runs", "read_path",
         "search"])


def test_every_package_of_the_source_is_installed():
    """A plain `pip install .` installs each package (`[tool.setuptools] packages`), the Python API's too."""
    project = (REPO / "pyproject.toml").read_text()  # (tomllib is 3.11's; the viewer runs on 3.10)
    listed = set(re.findall(r'"(skycap_viewer[a-z_.]*)"', re.search(r"^packages = \[(.*?)\]", project,
                                                                     re.MULTILINE | re.DOTALL).group(1)))
    packages = {".".join(path.parent.relative_to(REPO).parts) for path in (REPO / "skycap_viewer").rglob("__init__.py")}
    assert packages <= listed
