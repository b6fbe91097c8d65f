"""Every error type the package raises, each printed or sent as one line.

- `RecordError`: a record file that is not valid skycap format v1 (the reader's).
- `UsageError`: a bad command-line argument (the commands'; exit status 2).
- `ApiError`: a request the API answers with a status and `{"detail": ...}` (the views' and the server's).
"""


class RecordError(Exception):
    """A record file that is not valid skycap format v1.

    The message always names the file and the problem, on one line, so the CLI can print it
    as is and the server can show it next to the record.
    """

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = " ".join(str(problem).split())
        super().__init__(f"{self.path}: {self.problem}")


class UsageError(Exception):
    """A bad argument: printed as one line, exit status 2."""


class ApiError(Exception):
    """A request the API answers with `status` and `{"detail": ...}`."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail
