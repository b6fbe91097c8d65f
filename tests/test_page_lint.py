"""The page's JS, CSS and HTML under the rules the Python has (no npm, so a small checker of our own):
lines of at most 120 characters with no trailing space or tab, every import used and found, no sink
that would parse record text as markup or code, and no export that nothing imports (dead code)."""

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "static"
SNAPSHOT_PAGE = ROOT / "skycap_viewer" / "views" / "record" / "snapshot_page"
FILES = sorted(path for folder in (STATIC, SNAPSHOT_PAGE) for path in folder.rglob("*")
               if path.suffix in (".js", ".css", ".html"))
MODULES = sorted((STATIC / "js").rglob("*.js"))
MAX_LINE = 120
SINKS = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|\bnew Function\b")
# `import {a, b as c} from "./x.js";` and the re-export `export {a} from "./x.js";` (or "../draw/x.js")
IMPORT = re.compile(r'^(import|export) \{([^}]*)\} from "(\.\.?/[\w./-]+\.js)";', re.M)
EXPORT = re.compile(r"^export (?:async )?(?:function\*?|class|const|let|var) ([\w$]+)", re.M)
# Where a `/` starts a regular expression, not a division (the token before it is not a value).
REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {""}


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def imported_from(path: Path, module: str) -> Path:
    """The file an import names: the snapshot's script imports the page's modules that fetch nothing
    (`js/draw/`), which `views/record/snapshot.py` writes into the file beside it."""
    return ((STATIC / "js" / "draw") if path.parent == SNAPSHOT_PAGE else path.parent) / module


def without_comments(source: str) -> str:
    """The JS source with its comments blanked (newlines kept, so line numbers hold); strings, template
    literals and regular expressions are read past, so a `//` in a URL or a pattern is no comment."""
    out, i, n, before = [], 0, len(source), ""
    while i < n:
        char, pair = source[i], source[i:i + 2]
        if pair == "//":
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        if pair == "/*":
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * source.count("\n", i, end))
            i = end
            continue
        if char in "\"'`" or (char == "/" and before in REGEX_AFTER):
            end = literal_end(source, i)
            out.append(source[i:end])
            i, before = end, "a"
            continue
        out.append(char)
        if not char.isspace():
            before = char if char in REGEX_AFTER else "a"
        i += 1
    return "".join(out)


def literal_end(source: str, start: int) -> int:
    """Where the string, template literal or regular expression opening at `start` ends (past its
    closing character); a template's `${...}` is skipped by brace depth."""
    quote, i, in_class, depth = source[start], start + 1, False, 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
            continue
        if quote == "`" and source.startswith("${", i):
            depth, i = depth + 1, i + 2
            continue
        if depth:
            depth += {"{": 1, "}": -1}.get(char, 0)
        elif quote == "/" and char in "[]":
            in_class = char == "["
        elif char == quote and not in_class:
            return i + 1
        elif char == "\n" and quote != "`":
            break  # an unclosed string or a `/` that was a division after all: read on as code
        i += 1
    return start + 1


def imports(source: str) -> list[tuple[str, str, str, str, int]]:
    """(`import` or `export`, the name in the module, the name here, the module's path, the line) for each
    name an `import {...} from` or `export {...} from` statement names."""
    found = []
    for match in IMPORT.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        for item in filter(None, (part.strip() for part in match[2].split(","))):
            name, _, alias = item.partition(" as ")
            found.append((match[1], name.strip(), (alias or name).strip(), match[3], line))
    return found


def exports(source: str) -> set[str]:
    """The names a module exports: its `export function|class|const ...` and its re-exports."""
    return set(EXPORT.findall(source)) | {here for kind, _, here, _, _ in imports(source) if kind == "export"}


def code_of(path: Path) -> str:
    return without_comments(path.read_text("utf-8")) if path.suffix == ".js" else path.read_text("utf-8")


def used(name: str, code: str) -> bool:
    """Whether `code` names `name` as a variable: not as a property (`x.name`), but spread (`...name`)."""
    return re.search(rf"(?<![\w$])(?:(?<=\.\.\.)|(?<!\.)){re.escape(name)}(?![\w$])", code) is not None


@pytest.mark.parametrize("path", FILES, ids=relative)
def test_lines_fit_and_are_clean(path):
    bad = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if len(line) > MAX_LINE:
            bad.append(f"{relative(path)}:{number}: {len(line)} characters (max {MAX_LINE})")
        if "\t" in line:
            bad.append(f"{relative(path)}:{number}: a tab character")
        if line != line.rstrip():
            bad.append(f"{relative(path)}:{number}: trailing whitespace")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", FILES, ids=relative)
def test_no_markup_or_code_sink(path):
    """Record text goes into the page as text: nothing parses a string as HTML or as code."""
    bad = [f"{relative(path)}:{number}: {match[0]}"
           for number, line in enumerate(path.read_text("utf-8").splitlines(), 1) for match in SINKS.finditer(line)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", [path for path in FILES if path.suffix == ".js"], ids=relative)
def test_every_import_is_used_and_found(path):
    code = code_of(path)
    body = IMPORT.sub(lambda match: "\n" * match[0].count("\n"), code)  # a re-export uses no name of this file
    bad = []
    for kind, name, here, module, line in imports(code):
        target = imported_from(path, module)
        if not target.is_file():
            bad.append(f"{relative(path)}:{line}: {kind}s from {module}, which is not there")
        elif name not in exports(target.read_text("utf-8")):
            bad.append(f"{relative(path)}:{line}: {kind}s {name}, which {module} does not export")
        if kind == "import" and not used(here, body):
            bad.append(f"{relative(path)}:{line}: imports {here} and never uses it")
    assert not bad, "\n".join(bad)


def line_of(source: str, name: str) -> int:
    """The line of the `export` statement that names `name`."""
    match = re.search(rf"^export\b[^\n]*(?<![\w$]){re.escape(name)}(?![\w$])", source, re.M)
    return source.count("\n", 0, match.start()) + 1 if match else 0


@cache
def importers() -> dict[Path, set[str]]:
    """Each module's names that some file of the page (the snapshot's script included) imports or re-exports."""
    wanted: dict[Path, set[str]] = {}
    for path in FILES:
        for _, name, _, module, _ in imports(code_of(path)):
            wanted.setdefault(imported_from(path, module).resolve(), set()).add(name)
    return wanted


@pytest.mark.parametrize("path", MODULES, ids=relative)
def test_every_export_is_imported(path):
    """An export nothing imports is dead code (or should not be exported)."""
    source = path.read_text("utf-8")
    wanted = importers().get(path.resolve(), set())
    bad = [f"{relative(path)}:{line_of(source, name)}: exports {name}, which nothing imports"
           for name in sorted(exports(source) - wanted)]
    assert not bad, "\n".join(bad)


TAB_LIST = STATIC / "js" / "draw" / "tab-list.js"
TAB_ENTRY = re.compile(
    r'^  \{name: "(\w+)", label: .*, find: (true|false), snapshot: (true|false), retok: (?:true|false)\},$', re.M)
STRING_LIST = re.compile(r'\[\s*"\w+"(?:\s*,\s*"\w+")+\s*,?\s*\]')


def tab_entries() -> list[tuple[str, str, str]]:
    return TAB_ENTRY.findall(TAB_LIST.read_text("utf-8"))


def test_tab_names_are_listed_once():
    """The tabs live in tab-list.js alone: no other page module (nor the snapshot's script) writes a
    list of two or more tab names, and views/record/snapshot.py's TABS are the ones tab-list.js says a
    snapshot has, in its order (the one twin the server keeps, held here)."""
    from skycap_viewer.views.record.snapshot import TABS as SNAPSHOT_TABS
    names = {name for name, _, _ in tab_entries()}
    assert {"path", "chat", "tree", "calls"} <= names
    bad = []
    for path in [path for path in FILES if path.suffix == ".js" and path != TAB_LIST]:
        code = without_comments(path.read_text("utf-8"))
        for found in STRING_LIST.finditer(code):
            if len(set(re.findall(r'"(\w+)"', found[0])) & names) >= 2:
                bad.append(f"{relative(path)}:{code.count(chr(10), 0, found.start()) + 1}: lists tabs {found[0]}")
    assert not bad, "\n".join(bad)
    assert list(SNAPSHOT_TABS) == [name for name, _, snapshot in tab_entries() if snapshot == "true"]


DRAW, APP = STATIC / "js" / "draw", STATIC / "js" / "app"
# What asks the network, or loads code from it, in a page module.
FETCHES = re.compile(r"\bfetch\(|\bXMLHttpRequest\b|\bEventSource\b|\bWebSocket\b|\bsendBeacon\b|\bimport\(")


def test_the_page_modules_are_in_folders_that_say_what_they_are():
    """`js/` is two folders: `draw/` (draws what it is handed, fetches nothing) and `app/` (the API's door,
    boot, routing, and what asks the API); the pattern below finds a fetch where there is one."""
    assert sorted(item.name for item in (STATIC / "js").iterdir()) == ["app", "draw"]
    assert FETCHES.search(code_of(APP / "api.js"))


@pytest.mark.parametrize("path", sorted(DRAW.glob("*.js")), ids=relative)
def test_a_drawing_module_fetches_nothing(path):
    """A module of `js/draw/` imports only from `js/draw/` (never `app/`, where `api.js` is) and asks
    nothing of the network itself, so a rollout's snapshot file may inline it (under a CSP that refuses any
    request)."""
    code = code_of(path)
    bad = [f"{relative(path)}:{line}: {kind}s from {module}, outside js/draw/"
           for kind, _, _, module, line in imports(code) if imported_from(path, module).resolve().parent != DRAW]
    bad += [f"{relative(path)}:{code.count(chr(10), 0, found.start()) + 1}: {found[0]}"
            for found in FETCHES.finditer(code)]
    assert not bad, "\n".join(bad)


MAX_CLASS_LINES = 250
CLASS = re.compile(r"^(?:export )?class (\w+)[^\n]*\{\n(.*?)^\}\n", re.M | re.S)


def test_no_page_class_grows_past_the_limit():
    """A page class of more than ~250 lines is a switchboard (the drawer's reached 570): take it apart
    along its seams instead (loading, a tab's drawing, a part of the view in its own module)."""
    sizes = {name: body.count("\n") + 2 for path in MODULES
             for name, body in CLASS.findall(path.read_text("utf-8"))}
    assert "Drawer" in sizes and "FindBar" in sizes  # the pattern finds the page's classes
    over = [f"{name}: {size} lines (at most {MAX_CLASS_LINES})"
            for name, size in sizes.items() if size > MAX_CLASS_LINES]
    assert not over, "\n".join(over)
