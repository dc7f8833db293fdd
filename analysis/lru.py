"""A bounded, thread-safe least-recently-used map: the one eviction rule of Kerncast's long-lived caches.

The language server keeps compilations, kernel reports, ptxas's numbers, parsed PTX functions and power
predictions between analyses, and analyses two documents at a time in threads that share them. Each of those
caches must stay bounded (an editor session runs for hours) and must not lose an entry to a race, so they all
hold their entries here: a lookup marks an entry as recently used, and a store drops the least recently used
entries beyond the limit.

Kept rather than `cachetools.LRUCache` for one missing feature: cachetools' caches are not thread-safe (its
documentation asks every shared cache to be guarded by the caller), and every cache here is shared by the
analysis threads, so each use would need its own lock beside it; this map is that lock and the
`OrderedDict` bookkeeping in one place, with no dependency.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedLru(Generic[K, V]):
    """At most `limit` entries; the least recently looked up or stored one goes first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The entry for `key` (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        """Store `value` as the most recently used entry, dropping the oldest beyond the limit."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        # under the lock: a put between its insert and its eviction holds one entry over the limit
        with self._lock:
            return len(self._entries)
