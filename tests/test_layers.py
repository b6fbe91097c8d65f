"""The package's layers hold: no module imports a layer above its own, and no imports form a cycle.

The data flows record → catalog → views → server, with the terminal commands beside the server
and the demo beside the catalog (see `skycap_viewer/__init__.py`). Every import counts, those
inside functions too: a lazy import hides a cycle from Python, not from this test. The server
keeps to routes and the reading protocol: the store's schema and the groupings are the views'.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skycap_viewer"
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
    "entry": {"base", "record", "demo", "catalog", "views", "server", "commands", "entry"},
}


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
    return {name: imports_of(path, set(files), root.name) - {name} for name, path in files.items()}


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


@pytest.mark.parametrize("package", ["record", "server", "commands"])
def test_each_package_face_lists_its_modules(package):
    """A package's docstring says each of its modules' jobs: a module added or renamed is named there."""
    face = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
    modules = sorted(path.stem for path in (PACKAGE / package).glob("*.py") if path.stem != "__init__")
    assert [name for name in modules if f"`{name}`" not in face] == []


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
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_checks_catch_an_upward_lazy_import_a_cycle_and_the_server_grouping(bad_tree):
    graph = import_graph(bad_tree)
    assert upward_imports(graph) == [
        "skycap_viewer.record.document (record) imports skycap_viewer.server.web (server)"]
    assert sorted(cycles(graph)) == [["skycap_viewer.record.document", "skycap_viewer.server.web"],
                                     ["skycap_viewer.views.a", "skycap_viewer.views.b"]]
    assert server_reaches(graph) == ["skycap_viewer.server.api imports skycap_viewer.catalog.groups"]
