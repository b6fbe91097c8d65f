"""Answer rows as a list, and as a data frame of the user's own library.

pandas and polars are never dependencies of the viewer: each is imported only when its frame is asked
for, and its absence is said in one line naming what to install.
"""

import importlib


class Rows(list):
    """A list of the API's rows (dicts, as the HTTP answer has them)."""

    def to_pandas(self):
        """The rows as a `pandas.DataFrame`, a column per key (nested values kept as they are)."""
        return installed("pandas").DataFrame(list(self))

    def to_polars(self):
        """The rows as a `polars.DataFrame`, a column per key, its schema read from every row."""
        return installed("polars").from_dicts(list(self), infer_schema_length=None)


def installed(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"{name} is not installed (skycap-viewer does not need it): pip install {name}") from None
