"""The package's layers hold: no module imports a layer above its own, and no imports form a cycle.

The data flows record → catalog → views → server, with the terminal commands beside the server
and the demo beside the catalog (see `skycap_viewer/__init__.py`); the Python API asks the server's
`Api` (and `check`'s verdicts) in process, and the MCP server asks the Python API. Every import counts,
those inside functions too: a lazy import hides a cycle from Python, not from this test. The server
keeps to routes and the reading protocol: the store's schema and the groupings are the views'.

One door is named, not counted: the package's face (`skycap_viewer/__init__.py`, the base) hands out
`skycap_viewer.open` by loading the Python API in its `__getattr__`, the first time a user asks for it.
No module of the package goes through it (they import the Python API by name, or not at all), and
`import skycap_viewer` loads nothing of the layers: both are tested below, so the door cannot become
an import at import time or one hidden elsewhere.

The tests and the bench hold a layout too: what they share is in `tests/support/` (and the browser's
`tests/browser/` modules that are no test), so no test module imports another, or a conftest; the
bench's modules import each other one way only.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "skycap_viewer"
BASE = {"skycap_viewer", "skycap_viewer.errors", "skycap_viewer.flags", "skycap_viewer.wire", "skycap_viewer.printable",
        "skycap_viewer.page"}
ENTRY = {"skycap_viewer.cli", "skycap_viewer.__main__"}
BELOW = {  # layer -> the layers its modules may import (its own included)
    "base": {"base"},
    "record": {"base", "record"},
    "demo": {"base", "record", "demo"},
    "catalog": {"base", "record", "catalog"},
    "views": {"base", "record", "catalog", "views"},
    "server": {"base", "record", "catalog", "views", "server"},
    "commands": {"base", "record", "catalog", "views", "commands"},
    "python_api": {"base", "record", "catalog", "views", "server", "commands", "python_api"},
    "mcp_server": {"base", "record", "catalog", "views", "server", "commands", "python_api", "mcp_server"},
    "entry": {"base", "record", "demo", "catalog", "views", "server", "commands", "python_api", "mcp_server",
              "entry"},
}
FACE_DOOR = ("__getattr__", "skycap_viewer.python_api")  # the face's function, and the one module it may load


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    if module in BASE:
        return "base"
    if module in ENTRY:
        return "entry"
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in BELOW:
        return parts[1]
    raise AssertionError(f"{module} belongs to no layer: put it in one, or name its layer in tests/test_layers.py")


def imports_of(path: Path, modules: set[str], top: str) -> set[str]:
    """The package modules `path` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == top)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == top:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    files = {module_name(path, root): path for path in root.rglob("*.py")}
    graph = {name: imports_of(path, set(files), root.name) - {name} for name, path in files.items()}
    face = root / "__init__.py"
    if face.is_file():
        graph[root.name] -= face_door(face, root.name)
    return graph


def face_door(face: Path, top: str) -> set[str]:
    """The Python API, when the package's face imports it inside its `__getattr__`; else nothing."""
    function, door = FACE_DOOR
    for node in ast.walk(ast.parse(face.read_text(), str(face))):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.module == top and \
                        any(f"{top}.{alias.name}" == door for alias in inner.names):
                    return {door}
    return set()


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
                  for module, targets in graph.items() for target in targets
                  if layer_of(target) not in BELOW[layer_of(module)])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules that import each other (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_a_higher_layer():
    assert upward_imports(import_graph(PACKAGE)) == []


def test_no_imports_form_a_cycle():
    assert cycles(import_graph(PACKAGE)) == []


def test_every_layer_is_there():
    layers = {layer_of(module) for module in import_graph(PACKAGE)}
    assert layers == set(BELOW)


SERVER_NEVER_IMPORTS = {"skycap_viewer.catalog.store", "skycap_viewer.catalog.groups"}  # schema, grouping: views'
API_MOST_LINES = 650


def server_reaches(graph: dict[str, set[str]]) -> list[str]:
    """The server's imports of the store's schema and the groupings: their SQL and answers are the views'."""
    return sorted(f"{module} imports {target}" for module, targets in graph.items()
                  if module.startswith("skycap_viewer.server") for target in targets & SERVER_NEVER_IMPORTS)


def test_the_server_leaves_the_store_and_the_groupings_to_the_views():
    assert server_reaches(import_graph(PACKAGE)) == []


def test_the_api_keeps_to_routes_and_the_reading_protocol():
    lines = len((PACKAGE / "server" / "api.py").read_text().splitlines())
    assert lines <= API_MOST_LINES, f"server/api.py has {lines} lines: move view work to views/"


@pytest.mark.parametrize("package", ["record", "server", "commands", "python_api", "mcp_server"])
def test_each_package_face_lists_its_modules(package):
    """A package's docstring says each of its modules' jobs: a module added or renamed is named there."""
    face = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
    modules = sorted(path.stem for path in (PACKAGE / package).glob("*.py") if path.stem != "__init__")
    assert [name for name in modules if f"`{name}`" not in face] == []


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write each file (path under `root` → its text), with the directories it needs."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def bad_tree(tmp_path):
    """A package of the same shape where the record layer reaches up, two views import each other and
    the server groups rows itself."""
    root = tmp_path / "skycap_viewer"
    files = {
        "__init__.py": "",
        "record/__init__.py": "",
        "record/document.py": "def read():\n    from skycap_viewer.server.web import serve\n",
        "server/__init__.py": "",
        "server/web.py": "from skycap_viewer.record import document\n",
        "server/api.py": "def groups():\n    from skycap_viewer.catalog.groups import build_grouping\n",
        "views/__init__.py": "",
        "views/a.py": "import skycap_viewer.views.b\n",
        "views/b.py": "from skycap_viewer.views import a\n",
    }
    return write_tree(root, files)


def test_the_checks_catch_an_upward_lazy_import_a_cycle_and_the_server_grouping(bad_tree):
    graph = import_graph(bad_tree)
    assert upward_imports(graph) == [
        "skycap_viewer.record.document (record) imports skycap_viewer.server.web (server)"]
    assert sorted(cycles(graph)) == [["skycap_viewer.record.document", "skycap_viewer.server.web"],
                                     ["skycap_viewer.views.a", "skycap_viewer.views.b"]]
    assert server_reaches(graph) == ["skycap_viewer.server.api imports skycap_viewer.catalog.groups"]


def test_the_face_door_opens_only_the_python_api_and_only_when_asked(tmp_path):
    """A face importing the server, or importing the Python API at import time, is an upward import."""
    root = tmp_path / "skycap_viewer"
    (root / "python_api").mkdir(parents=True)
    (root / "python_api" / "__init__.py").write_text("")
    (root / "__init__.py").write_text("def __getattr__(name):\n    from skycap_viewer import python_api\n")
    assert upward_imports(import_graph(root)) == []
    (root / "__init__.py").write_text("from skycap_viewer import python_api\n")
    assert upward_imports(import_graph(root)) == [
        "skycap_viewer (base) imports skycap_viewer.python_api (python_api)"]
    (root / "server").mkdir()
    (root / "server" / "__init__.py").write_text("")
    (root / "__init__.py").write_text("def __getattr__(name):\n    from skycap_viewer import server\n")
    assert upward_imports(import_graph(root)) == ["skycap_viewer (base) imports skycap_viewer.server (server)"]


def test_importing_the_package_loads_no_layer_until_open_is_asked_for():
    script = ("import sys, skycap_viewer\n"
              "print(sorted(m for m in sys.modules if m.startswith('skycap_viewer.')))\n"
              "skycap_viewer.open\n"
              "print('skycap_viewer.python_api' in sys.modules, 'skycap_viewer.server.api' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=PACKAGE.parent)
    assert done.stdout.splitlines() == ["[]", "True True"]

# -- the tests' and the bench's own layout ------------------------------------------------------------


def imported_modules(path: Path) -> set[str]:
    """Every module `path` names in an import, anywhere in it (`from a import b` names `a` and `a.b`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def imports_of_tests(root: Path) -> list[str]:
    """Imports of a test module (`test_*`) or a conftest by any module of `root`'s tests/ and bench/."""
    return sorted(f"{path.relative_to(root)} imports {module}"
                  for path in [*(root / "tests").rglob("*.py"), *(root / "bench").glob("*.py")]
                  for module in imported_modules(path)
                  if module.startswith("tests.") and module.split(".")[-1].startswith(("test_", "conftest")))


def bench_graph(bench: Path) -> dict[str, set[str]]:
    """The bench's scripts and the ones of them each imports (by their bare names: `bench/` is on the path)."""
    scripts = {path.stem for path in bench.glob("*.py")}
    return {path.stem: {module.split(".")[0] for module in imported_modules(path)} & scripts - {path.stem}
            for path in bench.glob("*.py")}


def test_no_test_module_imports_another_or_a_conftest():
    """Shared helpers live in tests/support/ (browser ones in tests/browser/'s modules that are no test)."""
    assert imports_of_tests(REPO) == []


def test_the_bench_modules_form_no_cycle():
    assert cycles(bench_graph(REPO / "bench")) == []


def test_the_support_package_face_lists_its_modules():
    face = ast.get_docstring(ast.parse((REPO / "tests" / "support" / "__init__.py").read_text()))
    modules = sorted(path.stem for path in (REPO / "tests" / "support").glob("*.py") if path.stem != "__init__")
    assert [name for name in modules if f"`{name}`" not in face] == []


def test_the_checks_catch_a_test_importing_a_test_or_a_conftest_and_a_bench_cycle(tmp_path):
    files = {
        "tests/test_a.py": "def test_it():\n    from tests.test_b import helper\n",
        "tests/browser/test_c.py": "from tests.browser import test_d\nfrom tests.support.corpus import FIXTURES\n",
        "tests/support/x.py": "import tests.conftest\n",
        "bench/run.py": "def later():\n    from s3 import measure\n",
        "bench/s3.py": "from run import floor\nimport synth\n",
        "bench/synth.py": "import json\n",
    }
    write_tree(tmp_path, files)
    assert imports_of_tests(tmp_path) == ["tests/browser/test_c.py imports tests.browser.test_d",
                                          "tests/support/x.py imports tests.conftest",
                                          "tests/test_a.py imports tests.test_b"]
    assert cycles(bench_graph(tmp_path / "bench")) == [["run", "s3"]]


# -- the map: every module named where a newcomer looks ---------------------------------------------------

LAYOUT = PACKAGE.parent / "docs" / "layout.md"
PACKAGES = sorted(path.parent for path in PACKAGE.rglob("*/__init__.py"))


@pytest.mark.parametrize("package", PACKAGES, ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_every_package_docstring_names_its_modules(package):
    """Each package's docstring names its modules and its subpackages (`views`' two families too)."""
    said = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    modules = [module.stem for module in sorted(package.glob("*.py")) if module.stem != "__init__"]
    modules += [inner.parent.name for inner in sorted(package.glob("*/__init__.py"))]
    unnamed = [name for name in modules if f"`{name}`" not in said]
    assert not unnamed, f"{package.name}/__init__.py does not name {unnamed}: say what each one does"


def test_the_layout_doc_names_every_module_python_and_page():
    layout = LAYOUT.read_text()
    python = [module.stem for module in sorted(PACKAGE.rglob("*.py"))
              if module.stem not in ("__init__", "__main__") and "snapshot_page" not in module.parts]
    page = [module.relative_to(PACKAGE.parent / "static" / "js").as_posix()
            for module in sorted((PACKAGE.parent / "static" / "js").rglob("*.js"))]
    unnamed = [name for name in python + page if f"`{name}`" not in layout]
    assert not unnamed, f"docs/layout.md does not name {unnamed}: add each to its layer's row or the page's map"
