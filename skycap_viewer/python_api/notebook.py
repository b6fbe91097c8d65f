"""A rollout in Jupyter: its snapshot file, drawn inside an `<iframe srcdoc>`.

The snapshot is one self-contained HTML file whose `<meta>` Content-Security-Policy allows only its own
style and script (by hash). Framed with `sandbox="allow-scripts"` it runs in an origin of its own: it
cannot reach the notebook, and its policy holds inside the frame as it does from disk.
"""

from html import escape

FRAME_HEIGHT = "640px"


def framed(snapshot: bytes, title: str) -> str:
    """The notebook's HTML for one snapshot file: one sandboxed iframe holding it whole."""
    document = snapshot.decode("utf-8")
    return (f'<iframe sandbox="allow-scripts" title="{escape(title)}" '
            f'style="width: 100%; height: {FRAME_HEIGHT}; border: 1px solid #ccc" '
            f'srcdoc="{escape(document, quote=True)}"></iframe>')


def refused(trajectory_id: str, reason: str) -> str:
    """What shows instead of a snapshot the API refuses (an unreadable record): the reason, as text."""
    return f"<p>rollout {escape(trajectory_id)}: {escape(reason)}</p>"
