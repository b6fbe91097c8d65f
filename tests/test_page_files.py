"""The page's own files: every ES module is preloaded by index.html as served (the lint of their text is
test_page_lint.py)."""

import re
from pathlib import Path

from skycap_viewer.page import PRELOADS
from skycap_viewer.server.web import static_files

STATIC = Path(__file__).resolve().parents[1] / "static"


def test_the_served_index_preloads_every_module_and_the_file_lists_none():
    assert PRELOADS in (STATIC / "index.html").read_text()
    assert "modulepreload\" href" not in (STATIC / "index.html").read_text()
    source, _ = static_files()["/index.html"]
    html = source.read_bytes().decode()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="js/([\w./-]+\.js)">', html))
    entry = set(re.findall(r'<script type="module" src="js/([\w./-]+\.js)">', html))
    modules = {path.relative_to(STATIC / "js").as_posix() for path in (STATIC / "js").rglob("*.js")}
    assert entry == {"app/app.js"}
    assert preloaded | entry == modules

