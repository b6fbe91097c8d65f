"""Every error type the package raises, each printed or sent as one line.

- `RecordError`: a record file that is not valid skycap format v1 (the reader's).
- `UsageError`: a bad command-line argument (the commands'; exit status 2).
- `ApiError`: a request answered with a status and its detail: the API's `{"detail": ...}` (the views'
  and the server's), and a request head past a limit of the server's (414, 431).
"""


class RecordError(Exception):
    """A record file that is not valid skycap format v1.

    The message always names the file and the problem, on one line, so the CLI can print it
    as is and the server can show it next to the record.
    """

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = " ".join(str(problem).split())
        super().__init__(f"{shown_path(self.path)}: {self.problem}")


def shown_path(path: str) -> str:
    """How a file is named to the user: as it is, or where it is a store's copy the object's URL
    (`record/copies.py` puts its own namer here when it is imported, as every reader imports it)."""
    return path_namer(path)


path_namer = str


class UsageError(Exception):
    """A bad argument: printed as one line, exit status 2."""


class ApiError(Exception):
    """A request answered with `status` and `detail` (by the API as `{"detail": ...}`)."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail
