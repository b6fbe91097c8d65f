"""The terminal commands, one module each, and what they share for a terminal.

- `check`: validate records against format v1, sidecars included.
- `show`: one rollout as text (or the `/paths` JSON); `snapshot`: its one-file HTML (`show --html`).
- `diff`: two rollouts compared turn by turn, as the page's pair view compares them.
- `summary`: what each run holds, from its documents (`counts`: the run statistics it prints).
- `export`: the rows a listing's filters keep, as JSON lines.
- `grep`: the API's run-wide text search.
- `timeline`: one step's rollouts on one time axis, a line each (`/v1/steps/timeline`'s lanes).
- `bundle`: the page and the server's answers for the rollouts the filters keep, as a folder any static host serves;
  `bundle_names`: the file each request's answer is kept in (the page's `bundle-name.js` says the same).
- `terminal`: colour on a terminal only, a progress line, record text escaped for a terminal.
"""
