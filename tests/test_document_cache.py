"""The server's document and record-view caches: bounded by what they hold, one read per version."""

import threading
import time

from skycap_viewer.server import caches
from skycap_viewer.server.caches import DocumentCache, ViewCache
from tests.support.corpus import BROKEN
from tests.support.records import BASE_ID, copy_record


def test_documents_are_bounded_by_their_json_and_the_last_one_is_kept(tmp_path):
    paths = [copy_record(BROKEN, BASE_ID, tmp_path, f"tr_{i}") for i in range(6)]
    cache = DocumentCache(max_bytes=1)  # smaller than any document: only the last one read stays
    for path in paths:
        cache.get(path)
        assert len(cache.entries) == 1
    assert cache.holds(cache.version(paths[-1]), cache.get(paths[-1]))
    roomy = DocumentCache(max_bytes=10**9)
    documents = [roomy.get(path) for path in paths]
    assert len(roomy.entries) == 6 and all(roomy.get(p) is d for p, d in zip(paths, documents, strict=True))
    assert roomy.size == sum(size for _, size in roomy.entries.values()) > 0


def test_requests_that_miss_together_share_one_read(tmp_path, monkeypatch):
    path = copy_record(BROKEN, BASE_ID, tmp_path, "tr_shared")
    reads = []
    real = caches.read_document_sized

    def slow_read(where):
        reads.append(where)
        time.sleep(0.3)  # long enough for every thread to miss before the first read lands
        return real(where)

    monkeypatch.setattr(caches, "read_document_sized", slow_read)
    cache = DocumentCache(max_bytes=10**9)
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get(path))) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reads) == 1, "one read for five requests"
    assert len(got) == 5 and all(document is got[0] for document in got)


def test_views_are_bounded_by_weight_and_the_newest_stays():
    cache = ViewCache(size=4, max_weight=10)
    cache.get("a", lambda: ("x" * 4, 4))
    cache.get("b", lambda: ("x" * 4, 4))
    assert list(cache.entries) == ["a", "b"]
    cache.get("c", lambda: ("x" * 4, 4))  # 12 > 10: the oldest goes
    assert list(cache.entries) == ["b", "c"]
    cache.get("huge", lambda: ("x" * 50, 50))  # heavier than the budget alone: kept, everything else goes
    assert list(cache.entries) == ["huge"]


def test_a_value_heavier_than_the_budget_is_let_go_before_the_next_is_made():
    """Kept alone as the last made, it is not held while another is made: two of the heaviest records
    were held at once while the second was built (1.4 GB opening 45 MB records of strings in turn)."""
    cache = ViewCache(size=4, max_weight=10)
    cache.get("huge", lambda: ("x" * 50, 50))
    held_while_making = []
    cache.get("next", lambda: (held_while_making.append(list(cache.entries)) or "y", 1))
    assert held_while_making == [["next"]] and list(cache.entries) == ["next"]


def test_a_document_heavier_than_the_budget_is_let_go_before_the_next_is_read(tmp_path, monkeypatch):
    heavy, light = (copy_record(BROKEN, BASE_ID, tmp_path, name) for name in ("tr_heavy", "tr_light"))
    cache = DocumentCache(max_bytes=1)  # every document is heavier than this budget alone
    cache.get(heavy)
    real, held_while_reading = caches.read_document_sized, []

    def watched_read(where):
        held_while_reading.append(len(cache.entries))
        return real(where)

    monkeypatch.setattr(caches, "read_document_sized", watched_read)
    cache.get(light)
    assert held_while_reading == [0] and len(cache.entries) == 1
