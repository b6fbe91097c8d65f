"""While a run is indexed its rows are published as they come, but a publish costs what the run's
size costs: the watcher spaces publishes out so they stay a tenth of the work (a clock it reads is
stood in for here, so nothing is timed)."""

from skycap_viewer.catalog import watcher as watcher_module
from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.rows import compute_row
from skycap_viewer.catalog.watcher import PUBLISH_COST_FACTOR, PUBLISH_SECONDS, Watcher
from tests.conftest import FIXTURES


class Clock:
    """`time.monotonic` for the watcher: it moves only when the test says."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


def rows_arriving(clock: Clock, seconds_each: float, copies: int):
    """A row source handing every `groups` record `copies` times, each row taking `seconds_each`."""
    def compute_rows(directory, names, verify=False):
        for name in names:
            row = compute_row(str(directory), name)
            for _ in range(copies):
                clock.now += seconds_each
                yield name, row
    return compute_rows


def published_while_indexing(tmp_path, monkeypatch, publish_cost: float) -> list[float]:
    """The clock's readings at each publish of a run indexed with a publish costing `publish_cost`."""
    clock = Clock()
    monkeypatch.setattr(watcher_module, "time", clock)
    catalog = Catalog([FIXTURES / "groups"])
    times = []

    def prepare(snapshot):
        times.append(clock.now)
        clock.now += publish_cost

    Watcher(catalog, compute_rows=rows_arriving(clock, 0.05, 20), prepare=prepare).poll()
    assert sum(len(s.rows) for s in catalog.snapshots()) == 28
    return times


def test_cheap_publishes_come_every_half_second(tmp_path, monkeypatch):
    times = published_while_indexing(tmp_path, monkeypatch, publish_cost=0.0)
    gaps = [later - earlier for earlier, later in zip(times, times[1:-1], strict=False)]
    assert len(times) > 40 and all(PUBLISH_SECONDS <= gap <= PUBLISH_SECONDS + 0.1 for gap in gaps)


def test_costly_publishes_are_spaced_to_a_tenth_of_the_work(tmp_path, monkeypatch):
    cost = 1.0
    times = published_while_indexing(tmp_path, monkeypatch, publish_cost=cost)
    gaps = [later - earlier for earlier, later in zip(times[1:], times[2:-1], strict=False)]
    assert gaps and all(gap >= PUBLISH_COST_FACTOR * cost for gap in gaps)
    assert len(times) <= 28 * 20 * 0.05 / (PUBLISH_COST_FACTOR * cost) + 3  # the first, the spaced ones, the last
