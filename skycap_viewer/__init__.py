"""skycap-viewer: a local, read-only viewer for skycap trajectory records (format v1)."""

__version__ = "0.1.0"
