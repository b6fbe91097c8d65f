"""The docs say what the code has: every route of the route table in the API reference, every
subcommand and option of the command line in the commands doc, links that lead somewhere, a README
short enough to read, and no issue numbers in the product.

The routes and options are taken from the code (`ROUTES`, `build_parsers`), so a route or option
added without its docs, or a docs entry left behind by one removed, fails here.
"""

import re
from pathlib import Path

import pytest

from skycap_viewer.cli import COMMANDS, build_parsers
from skycap_viewer.server.web import CAPTURE, ROUTES

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
API_DOC = DOCS / "api.md"
COMMANDS_DOC = DOCS / "commands.md"
ROUTE_HEADING = re.compile(r"^#{2,4} `GET (/[^`]*)`", re.MULTILINE)
COMMAND_HEADING = re.compile(r"^## `skycap-viewer(?: ([a-z]+))?[^`]*`")


def route_pattern(route) -> re.Pattern:
    """A route's path as the docs write it: its literal segments, and a `{name}` for each capture."""
    parts = [r"\{[a-z_]+\}" if segment is CAPTURE else re.escape(segment) for segment in route.segments]
    return re.compile("/" + "/".join(parts))


def documented_routes() -> list[str]:
    return ROUTE_HEADING.findall(API_DOC.read_text())


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.answer)
def test_every_route_has_its_entry_in_the_api_reference(route):
    pattern = route_pattern(route)
    assert any(pattern.fullmatch(path) for path in documented_routes()), \
        f"docs/api.md has no heading `GET {pattern.pattern}` for the route answered by Api.{route.answer}"


def test_every_route_entry_in_the_api_reference_is_a_route():
    patterns = [route_pattern(route) for route in ROUTES]
    for path in documented_routes():
        assert any(pattern.fullmatch(path) for pattern in patterns), f"docs/api.md documents {path}: no such route"


def command_sections() -> dict[str, str]:
    """The commands doc cut at its `## \\`skycap-viewer …\\`` headings: each command's text, by name."""
    sections, name = {}, None
    for line in COMMANDS_DOC.read_text().splitlines():
        if line.startswith("## "):
            found = COMMAND_HEADING.match(line)
            name = None if not found else found.group(1) if found.group(1) in COMMANDS else "serve"
            if name is not None:
                sections.setdefault(name, "")
        if name is not None:
            sections[name] += line + "\n"
    return sections


def options_of(parser) -> list[str]:
    return [option for action in parser._actions for option in action.option_strings if option not in ("-h", "--help")]


PARSERS = build_parsers()


def test_every_subcommand_has_its_section_in_the_commands_doc():
    assert set(command_sections()) == set(PARSERS) == {"serve", *COMMANDS}


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_every_option_is_in_its_command_section(command):
    section = command_sections().get(command, "")
    missing = [option for option in options_of(PARSERS[command])
               if not re.search(re.escape(option) + r"(?![\w-])", section)]
    assert not missing, f"docs/commands.md's section on {command} does not name {missing}"


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in path.read_text().splitlines() if re.match(r"#{1,6} ", line)}


MARKDOWN = [REPO / "README.md", REPO / "CHANGES.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda page: page.name)
def test_every_local_link_leads_to_a_file_and_heading(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        assert linked.exists(), f"{page.name} links to {target}: no such file"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{page.name} links to {target}: no such heading"


def test_the_readme_is_short():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines <= 250, f"README.md has {lines} lines: move reference text to docs/"


def test_the_readme_links_every_doc():
    readme = (REPO / "README.md").read_text()
    unlinked = [doc.name for doc in sorted(DOCS.glob("*.md")) if f"(docs/{doc.name}" not in readme]
    assert not unlinked, f"README.md does not link {unlinked}"


PRODUCT = [REPO / "README.md", REPO / "CHANGES.md", *DOCS.rglob("*"), *(REPO / "skycap_viewer").rglob("*"),
           *(REPO / "static").rglob("*")]
TEXT_SUFFIXES = {".md", ".py", ".js", ".css", ".html", ".svg", ".json", ".txt"}


def test_no_issue_numbers_in_the_product():
    said = [f"{path.relative_to(REPO)}: {match.group(0)}"
            for path in PRODUCT if path.is_file() and path.suffix in TEXT_SUFFIXES
            for match in re.finditer(r"issue ?#?[0-9]+", path.read_text(errors="replace"), re.IGNORECASE)]
    assert not said, f"issue numbers in the product (say what, not which issue): {said}"


def test_ci_runs_the_readmes_test_command():
    """CI runs the test command the README gives a new user, not another one."""
    command = re.search(r"^python3 -m pip install -e '\.\[test\]' && (python3 -m pytest[^\n]*)$",
                        (REPO / "README.md").read_text(), re.MULTILINE)
    assert command, "the README gives no test command"
    assert re.search(rf"^{re.escape(command[1])}$", (REPO / ".ci" / "run").read_text(), re.MULTILINE)
