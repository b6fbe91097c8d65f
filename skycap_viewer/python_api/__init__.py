"""The viewer in Python, for notebooks and scripts: `open()` gives a `Viewer` over the same catalog the
server uses, and every answer comes from the server's own route functions (`server.api.Api`), so a
notebook and the page cannot disagree.

- `viewer`: `open`, the `Viewer` (the catalog, its watcher and the API; runs, rollouts, groups, search,
  compare, a filtered set's trainer rows);
- `asking`: a question put to the API as a request is (keyword arguments made query parameters, the
  same names and parser), its answer decoded as the HTTP client gets it, and its refusal raised;
- `rollout`: one rollout (`Rollout`) and one of its paths (`Path`);
- `rows`: a list of answer rows that becomes a pandas or polars frame when the user has one;
- `notebook`: how a rollout shows in Jupyter (its snapshot file in a sandboxed `<iframe srcdoc>`).
"""

from skycap_viewer.errors import ApiError
from skycap_viewer.python_api.rollout import Path, Rollout
from skycap_viewer.python_api.rows import Rows
from skycap_viewer.python_api.viewer import Viewer, open

__all__ = ["ApiError", "Path", "Rollout", "Rows", "Viewer", "open"]
