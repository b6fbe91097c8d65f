"""Where the page's files are: `static/` beside the package in a source tree, else the packaged copy.

A clone run without installing (the bench, a second work tree) has no `skycap_viewer.static`: the
wheel maps `static/` there. An editable install of another tree would answer that name with its own
files, so the tree this package was imported from is asked first."""

from importlib.resources import files
from pathlib import Path

SOURCE_TREE = Path(__file__).resolve().parent.parent


def page_folder():
    """The folder of `index.html`, `style.css` and `js/` (a `Path` or a packaged `Traversable`)."""
    source = SOURCE_TREE / "static"
    if (source / "index.html").is_file() and (SOURCE_TREE / "pyproject.toml").is_file():
        return source
    return files("skycap_viewer.static")
