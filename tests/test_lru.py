"""The bounded LRU every long-lived cache holds its entries in: eviction order, the limit, and sharing between
threads (the language server analyses two documents at a time)."""

from __future__ import annotations

import sys
import threading

from kerncast.analysis.lru import BoundedLru


def test_the_least_recently_used_entry_goes_first():
    lru: BoundedLru[str, int] = BoundedLru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "a" is now the most recently used: "b" is the oldest
    lru.put("c", 3)
    assert lru.get("b") is None
    assert (lru.get("a"), lru.get("c"), len(lru)) == (1, 3, 2)
    lru.put("a", 10)  # storing again refreshes the entry and replaces its value
    lru.put("d", 4)
    assert (lru.get("c"), lru.get("a"), lru.get("d")) == (None, 10, 4)
    lru.clear()
    assert len(lru) == 0 and lru.get("a") is None


def test_threads_sharing_it_lose_no_entry_and_keep_the_limit():
    lru: BoundedLru[tuple[int, int], int] = BoundedLru(64)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(worker: int) -> None:
        try:
            start.wait()
            for i in range(5000):
                lru.put((worker, i), i)
                found = lru.get((worker, i))
                # another thread's puts may have evicted it, but never left a half-made entry
                assert found is None or found == i
                assert len(lru) <= 64
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so that an unguarded map would meet its races
    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert len(lru) == 64
    for i in range(64):  # still a working map of the newest 64
        lru.put((9, i), i)
    assert [lru.get((9, i)) for i in range(64)] == list(range(64))
