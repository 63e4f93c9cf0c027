"""Device selection with torch's per-thread target-device semantics (the hot path, pure Python).

Twin of accel._native._device.  A guard's exit to a device that has no primary context yet records a
per-thread *target* instead of calling cudaSetDevice, so no context is ever created on exit;
``current_device()`` honours a pending target.  Device indices are ints here; accel.cuda parses the
other device arguments.  The ``_c_*`` functions mirror the native module's C-level API (_device.pxd).
"""
import threading
from ctypes import c_int, c_uint

from accel._python import _cudart

__all__ = ["current_device", "set_device", "exchange_device", "maybe_exchange_device", "has_primary_context",
           "raw_device_count", "set_init_hook", "set_initialized", "is_initialized", "set_index_parser",
           "device"]

_initialized = False
_init_hook = None
_parse_index = None
_count = -1


class _ThreadState(threading.local):
    target = -1  # the pending target device of this thread (-1: none)


_tls = _ThreadState()


def _target():
    return _tls.target


# -- mirror of the native C-level API ---------------------------------------------------------------

def _c_ensure_init():
    global _initialized
    if _initialized or _init_hook is None:
        return
    _init_hook()
    _initialized = True


def _c_device_count():
    global _count
    if _count >= 0:
        return _count
    t = _cudart._table()
    n = c_int()
    if t.cudaGetDeviceCount(n):
        t.cudaGetLastError()
        return 0
    _count = n.value
    return _count


def _c_get_device():
    d = _target()
    if d >= 0:
        return d
    v = c_int()
    err = _cudart._T.cudaGetDevice(v)
    if err:
        raise _cudart._error(err)
    return v.value


def _c_set_device(d, force):
    if d < 0:
        raise RuntimeError(f"device id must be non-negative!{d}")
    _tls.target = -1
    t = _cudart._table()
    if not force:
        cur = c_int()
        err = t.cudaGetDevice(cur)
        if err:
            raise _cudart._error(err)
        if cur.value == d:
            return
    err = t.cudaSetDevice(d)
    if err:
        raise _cudart._error(err)


def _c_has_primary_context(d):
    n = _c_device_count()
    if d < 0 or d >= n:
        raise RuntimeError(f"hasPrimaryContext expects a valid device index, but got device_index={d}")
    dt = _cudart._driver()
    flags, active = c_uint(), c_int()
    err = dt.cuDevicePrimaryCtxGetState(d, flags, active)
    if err:
        raise _cudart._driver_error(err)
    return active.value == 1


def _c_maybe_set_device(d):
    if _c_has_primary_context(d):
        _c_set_device(d, False)
    else:
        _tls.target = d


def _c_exchange_device(to):
    cur = _target()
    _tls.target = -1
    t = _cudart._T
    if cur < 0:
        v = c_int()
        err = t.cudaGetDevice(v)
        if err:
            raise _cudart._error(err)
        cur = v.value
        if to == cur:
            return cur
    err = t.cudaSetDevice(to)
    if err:
        raise _cudart._error(err)
    return cur


def _c_maybe_exchange_device(to):
    t = _cudart._T
    v = c_int()
    err = t.cudaGetDevice(v)
    if err:
        raise _cudart._error(err)
    cur = v.value
    if to == cur:
        return cur
    if _c_has_primary_context(to):
        err = t.cudaSetDevice(to)
        if err:
            raise _cudart._error(err)
    else:
        _tls.target = to
    return cur


def _c_set_target_device():
    d = _target()
    if d >= 0:
        _c_set_device(d, False)


# -- argument checks --------------------------------------------------------------------------------

def _unpack_index(d, what):
    """An int8 device index (torch's THPUtils_unpackDeviceIndex); TypeError / ValueError naming ``d``."""
    if type(d) is not int:
        if isinstance(d, bool) or not hasattr(type(d), "__index__"):
            raise TypeError(f"invalid argument to {what}: expected an int device index, "
                            f"got {type(d).__name__}: {d!r}")
        d = d.__index__()
    if d < -128 or d > 127:
        raise ValueError(f"Overflow when unpacking DeviceIndex: {d!r} is outside [-128, 127]")
    return d


# -- Python API -------------------------------------------------------------------------------------

def set_init_hook(hook):
    """Register ``hook()`` (accel.cuda's lazy init), run before the first CUDA use; None clears it."""
    global _init_hook
    if hook is not None and not callable(hook):
        raise TypeError(f"hook must be callable or None, got {type(hook).__name__}: {hook!r}")
    _init_hook = hook


def set_initialized(flag):
    """Mark CUDA initialized (skip the hook) or not (run it again: e.g. in a fork child)."""
    global _initialized
    _initialized = bool(flag)


def is_initialized():
    """Whether the lazy-init hook has run successfully (and not been reset)."""
    return _initialized


def set_index_parser(parser):
    """Register ``parser(obj) -> int | None`` for non-int arguments of ``device(...)``; None clears it."""
    global _parse_index
    if parser is not None and not callable(parser):
        raise TypeError(f"parser must be callable or None, got {type(parser).__name__}: {parser!r}")
    _parse_index = parser


def raw_device_count():
    """cudaGetDeviceCount, cached once it succeeds; 0 (not cached) when it fails."""
    return _c_device_count()


def current_device():
    """The calling thread's logical current device: its pending target, else cudaGetDevice."""
    if not _initialized:
        _c_ensure_init()
    return _c_get_device()


def set_device(device):
    """Make ``device`` current for this thread: always calls cudaSetDevice (creates its context)."""
    d = _unpack_index(device, "setDevice")
    if not _initialized:
        _c_ensure_init()
    _c_set_device(d, True)


def exchange_device(device):
    """Switch to ``device`` (creating its context) and return the previous logical device; -1 for d < 0."""
    d = _unpack_index(device, "exchangeDevice")
    if d < 0:
        return -1
    if not _initialized:
        _c_ensure_init()
    return _c_exchange_device(d)


def maybe_exchange_device(device):
    """Switch to ``device`` only if it has a primary context, else record it as the target; returns the
    runtime device at call time; -1 for d < 0."""
    d = _unpack_index(device, "exchangeDevice")
    if d < 0:
        return -1
    if not _initialized:
        _c_ensure_init()
    return _c_maybe_exchange_device(d)


def has_primary_context(device):
    """Whether ``device``'s primary context exists (driver query; RuntimeError if out of range)."""
    d = _unpack_index(device, "has_primary_context")
    return _c_has_primary_context(d)


class device:
    """Context manager that makes ``device`` current and restores the previous device on exit without
    creating a context there (torch.cuda.device).  ``idx`` is the index; -1 / None are no-ops."""

    __slots__ = ("idx", "prev_idx")

    def __init__(self, device):
        if type(device) is int or device is None and _parse_index is None:
            self.idx = device
        elif _parse_index is not None:
            self.idx = _parse_index(device)
        else:
            self.idx = _unpack_index(device, "exchangeDevice")
        self.prev_idx = -1

    def __enter__(self):
        d = _unpack_index(self.idx, "exchangeDevice") if self.idx is not None else -1
        if d < 0:
            self.prev_idx = -1
            return self
        if not _initialized:
            _c_ensure_init()
        self.prev_idx = _c_exchange_device(d)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        p = self.prev_idx
        if p < 0:
            self.idx = -1
            return False
        self.idx = _c_maybe_exchange_device(p)
        return False

    def __repr__(self):
        return f"device({self.idx!r})"
