"""LTC's LRU ``Cache`` (cache.h) as ComputationCache, and the device-data cache that dedups constants."""
import collections
import threading

import numpy as _np

from accel.lazy import _hash, metrics


class ComputationCache:
    """LTC's LRU cache keyed by graph hash: add() of an existing key keeps and returns the OLD value;
    maxsize 0 disables the cache (nothing is stored, get() is always None)."""

    def __init__(self, maxsize=1024):
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"ComputationCache maxsize must be an int >= 0, got {maxsize!r}")
        self.maxsize = maxsize
        self._items = collections.OrderedDict()   # last = most recent
        self._lock = threading.Lock()

    def add(self, key, value):
        """Insert ``value`` (evicting the least recent entry past maxsize); returns the value now cached."""
        if self.maxsize == 0:
            return value
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            self._items[key] = value
            if len(self._items) > self.maxsize:
                self._items.popitem(last=False)
            return value

    def get(self, key):
        """The cached value (now most recent), or None."""
        if self.maxsize == 0:
            return None
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def get_latest(self):
        """The most recently added or used value; RuntimeError when the cache is empty."""
        with self._lock:
            if not self._items:
                raise RuntimeError("Expected !element_list_.empty() to be true, but got false: the cache is empty")
            return next(reversed(self._items.values()))

    def erase(self, key):
        """Remove ``key``; True if it was there."""
        if self.maxsize == 0:
            return False
        with self._lock:
            return self._items.pop(key, _MISSING) is not _MISSING

    def clear(self):
        with self._lock:
            self._items.clear()

    def numel(self):
        """Number of cached entries (0 when disabled)."""
        return len(self._items) if self.maxsize else 0

    __len__ = numel

    def __contains__(self, key):
        return self.maxsize != 0 and key in self._items


_MISSING = object()


class _ArrayKey:
    """A private copy of a numpy array hashed like LTC's TensorHasher and compared by dtype, shape, bytes."""
    __slots__ = ("array", "_h")

    def __init__(self, array):
        from accel.lazy import dtype_to_code
        a = _np.array(array, copy=True, order="C")
        self.array = a
        code = dtype_to_code(a.dtype)
        self._h = _hash.hash_reduce(_hash.hash_combine(code, _hash.data_hash(a)))

    def __hash__(self):
        return self._h

    def __eq__(self, other):
        a, b = self.array, other.array
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


class DataCache:
    """Device-data dedup by content (DataCacheArena): equal arrays map to the same cached value."""

    def __init__(self, maxsize=128):
        self._cache = ComputationCache(maxsize)

    @property
    def maxsize(self):
        return self._cache.maxsize

    def get(self, array):
        """The value cached for an array with the same dtype, shape and bytes, or None."""
        return self._cache.get(_ArrayKey(array))

    def add(self, array, value):
        """Cache ``value`` under a copy of ``array``; returns the value now cached (the old one if present)."""
        return self._cache.add(_ArrayKey(array), value)

    def get_or_create(self, array, factory):
        """The cached value, or ``factory(array)`` cached now (counter DeviceDataCacheMiss)."""
        key = _ArrayKey(array)
        value = self._cache.get(key)
        if value is None:
            metrics.Counter("DeviceDataCacheMiss").add(1)
            value = self._cache.add(key, factory(array))
        return value

    def clear(self):
        self._cache.clear()

    def __len__(self):
        return len(self._cache)
