"""LTC's LRU ``Cache`` (cache.h) as ComputationCache, and the device-data cache that dedups constants."""
import collections
import operator
import os
import threading
import weakref

import numpy as _np

from accel import _impl
from accel.lazy import metrics
from accel.lazy._dtypes import dtype_to_code

_hash = _impl.module("_hash")


_caches = weakref.WeakSet()


def _after_fork_in_child():
    for c in list(_caches):            # (a thread that held a lock is not in the child)
        c._lock._at_fork_reinit()


os.register_at_fork(after_in_child=_after_fork_in_child)


class ComputationCache:
    """LTC's LRU cache keyed by graph hash: add() of an existing key keeps and returns the OLD value;
    maxsize 0 disables the cache (nothing is stored, get() is always None).

    Beyond LTC, ``max_bytes`` (None: no limit) bounds the bytes the cached values hold, each value's
    ``nbytes`` (0 when it has none; a compiled program's scratch buffers and source): past it the least
    recent entries are evicted as past ``maxsize``, except the most recent one, which always stays (a
    program larger than the budget is still reused from step to step)."""

    def __init__(self, maxsize=1024, max_bytes=None):
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"ComputationCache maxsize must be an int >= 0, got {maxsize!r}")
        self.maxsize = maxsize
        self._max_bytes = _check_max_bytes(max_bytes)
        self._items = collections.OrderedDict()   # last = most recent
        self._sizes = {}                          # key -> the value's nbytes when added
        self._nbytes = 0
        self._lock = threading.Lock()
        _caches.add(self)

    @property
    def max_bytes(self):
        """The byte budget of the cached values (None: unbounded); setting it evicts down to it now."""
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value):
        value = _check_max_bytes(value)
        with self._lock:
            self._max_bytes = value
            self._evict()

    @property
    def nbytes(self):
        """The bytes the cached values hold (the sum of their ``nbytes`` when added)."""
        return self._nbytes

    def _evict(self):
        items, sizes = self._items, self._sizes
        while len(items) > self.maxsize or (
                self._max_bytes is not None and self._nbytes > self._max_bytes and len(items) > 1):
            key, _ = items.popitem(last=False)
            self._nbytes -= sizes.pop(key)

    def add(self, key, value):
        """Insert ``value`` (evicting the least recent entries past maxsize or max_bytes); returns the value
        now cached."""
        if self.maxsize == 0:
            return value
        size = _nbytes_of(value)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            self._items[key] = value
            self._sizes[key] = size
            self._nbytes += size
            self._evict()
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
            if self._items.pop(key, _MISSING) is _MISSING:
                return False
            self._nbytes -= self._sizes.pop(key)
            return True

    def clear(self):
        with self._lock:
            self._items.clear()
            self._sizes.clear()
            self._nbytes = 0

    def numel(self):
        """Number of cached entries (0 when disabled)."""
        return len(self._items) if self.maxsize else 0

    __len__ = numel

    def __contains__(self, key):
        return self.maxsize != 0 and key in self._items


def _check_max_bytes(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"ComputationCache max_bytes must be None or an int >= 0, got {value!r}")
    return value


def _nbytes_of(value):
    n = getattr(value, "nbytes", 0)
    try:
        if isinstance(n, bool):
            raise TypeError
        n = operator.index(n)
    except TypeError:
        n = -1
    if n < 0:
        raise TypeError(f"a ComputationCache value's nbytes must be an int >= 0, got "
                        f"{getattr(value, 'nbytes', 0)!r} from {type(value).__name__}")
    return n


_MISSING = object()


class _ArrayKey:
    """A private copy of a numpy array hashed like LTC's TensorHasher and compared by dtype, shape, bytes."""
    __slots__ = ("array", "_h")

    def __init__(self, array):
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
