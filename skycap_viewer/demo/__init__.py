"""The example run shipped with the viewer (`--demo`), and the writer that makes it (`make`, `writer`)."""

from importlib.resources import files
from pathlib import Path


def records_directory() -> Path:
    """The example run's record directory, inside the installed package."""
    return Path(str(files(__name__) / "records"))
