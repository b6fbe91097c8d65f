"""The page's files: where they are, and its `index.html` as served.

A clone run without installing (the bench, a second work tree) has no `skycap_viewer.static`: the
wheel maps `static/` there. An editable install of another tree would answer that name with its own
files, so the tree this package was imported from is asked first.

The ES modules are in two folders of `js/` that say what a module is: `draw/` draws what it is handed and
fetches nothing (imports nothing from `app/`), so a rollout's snapshot file may inline it; `app/` runs the
page: the API and a bundle's files behind one door, boot and routing, the keys, the theme, and every module
that asks the API or drives those that do.

`index.html` preloads every ES module, so the browser fetches them all at once instead of one import
level at a time; the list is written from `js/` as the page is served (and bundled), never by hand."""

from importlib.resources import files
from pathlib import Path

SOURCE_TREE = Path(__file__).resolve().parent.parent


def page_folder():
    """The folder of `index.html`, `style.css` and `js/` (a `Path` or a packaged `Traversable`)."""
    source = SOURCE_TREE / "static"
    if (source / "index.html").is_file() and (SOURCE_TREE / "pyproject.toml").is_file():
        return source
    return files("skycap_viewer.static")


DRAW = "draw"  # js/'s folder of the modules that fetch nothing
APP = "app"  # js/'s folder of the modules that ask the API or drive the page
ENTRY = f"{APP}/app.js"  # what index.html loads: it imports the rest
PRELOADS = "<!-- modulepreload: a line per module of js/, written as the page is served (skycap_viewer/page.py) -->\n"


class IndexPage:
    """`index.html` with its preload line written out: read as the page's other files are (`read_bytes`)."""

    name = "index.html"

    def __init__(self, source):
        self.source = source

    def read_bytes(self) -> bytes:
        html = self.source.read_bytes().decode("utf-8")
        js = page_folder() / "js"
        modules = sorted(f"{folder}/{item.name}" for folder in (APP, DRAW) for item in (js / folder).iterdir()
                         if item.name.endswith(".js"))
        links = "".join(f'<link rel="modulepreload" href="js/{name}">\n' for name in modules if name != ENTRY)
        return html.replace(PRELOADS, links).encode("utf-8")
