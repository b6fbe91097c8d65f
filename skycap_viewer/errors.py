"""The one error type the project raises for a record it cannot read."""


class RecordError(Exception):
    """A record file that is not valid skycap format v1.

    The message always names the file and the problem, on one line, so the CLI can print it
    as is and the server can show it next to the record.
    """

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = " ".join(str(problem).split())
        super().__init__(f"{self.path}: {self.problem}")
