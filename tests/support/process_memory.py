"""Resident memory (and CPU time) of a process and all its descendants, sampled while a test runs.

The targets of the robustness tests are in resident memory of the whole process tree (the
server and its indexing workers), read from `/proc` (Linux), so a worker that blows up
counts as much as the server itself.
"""

import os
import threading
import time
from pathlib import Path

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
GIB = 2**30


def children_of(pid: int) -> list[int]:
    """Direct children, from every thread's `children` list."""
    found = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process has ended
        return found
    for task in tasks:
        try:
            found.extend(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def tree_pids(pid: int) -> list[int]:
    pids, pending = [], [pid]
    while pending:
        current = pending.pop()
        pids.append(current)
        pending.extend(children_of(current))
    return pids


def resident_bytes(pid: int) -> int:
    """Resident bytes of one process (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0


def tree_resident_bytes(pid: int) -> int:
    return sum(resident_bytes(p) for p in tree_pids(pid))


def cpu_seconds(pid: int, children: bool = False) -> float:
    """CPU seconds (user and system) one process used; with `children`, those of the children it reaped too
    (a worker that exited counts in its parent's). 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    ticks = sum(int(value) for value in fields[11 : 15 if children else 13])  # utime stime [cutime cstime]
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and all its descendants, the children they reaped included."""
    return sum(cpu_seconds(p, children=True) for p in tree_pids(pid))


class PeakMemory:
    """`with PeakMemory(pid) as peak: ...` then `peak.bytes`: the largest tree RSS seen, sampled every 20 ms."""

    def __init__(self, pid: int, interval: float = 0.02):
        self.pid = pid
        self.interval = interval
        self.bytes = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while not self.stopping.is_set():
            self.bytes = max(self.bytes, tree_resident_bytes(self.pid))
            time.sleep(self.interval)

    def __enter__(self):
        self.bytes = tree_resident_bytes(self.pid)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join()
        self.bytes = max(self.bytes, tree_resident_bytes(self.pid))
