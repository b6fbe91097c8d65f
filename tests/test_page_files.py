"""The page's own files: every ES module is preloaded by index.html (the lint of their text is test_page_lint.py)."""

import re
from pathlib import Path

STATIC = Path(__file__).resolve().parents[1] / "static"


def test_index_preloads_every_module():
    html = (STATIC / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="js/([\w.-]+\.js)">', html))
    entry = set(re.findall(r'<script type="module" src="js/([\w.-]+\.js)">', html))
    modules = {path.name for path in (STATIC / "js").glob("*.js")}
    assert entry == {"app.js"}
    assert preloaded | entry == modules

