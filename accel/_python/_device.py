"""Device selection with torch's per-thread target-device semantics (the hot path, pure Python).

Twin of accel._native._device.  A guard's exit to a device that has no primary context yet records a
per-thread *target* instead of calling cudaSetDevice, so no context is ever created on exit;
``current_device()`` honours a pending target.  Device indices are ints here; accel.cuda parses the
other device arguments.  The ``_c_*`` functions mirror the native module's C-level API (_device.pxd).
"""
import gc
import threading
import warnings
from ctypes import CFUNCTYPE, POINTER, byref, c_bool, c_byte, c_int, c_uint

from accel import _stream_common as _sc
from accel import _torch_link
from accel._python import _cudart

__all__ = ["current_device", "set_device", "exchange_device", "maybe_exchange_device", "has_primary_context",
           "raw_device_count", "set_init_hook", "set_initialized", "is_initialized", "set_index_parser",
           "set_current_device", "device", "set_sync_debug_mode", "get_sync_debug_mode"]

_initialized = False
_init_hook = None
_parse_index = None
_parse_strict = None
_count = -1
_sync_debug_mode = 0
_sync_debug_warned = False

_INVALID_DEVICE = 101  # cudaErrorInvalidDevice


class _ThreadState(threading.local):
    target = -1  # the pending target device of this thread (-1: none)

    def __init__(self):
        # This thread's out parameter for cudaGetDevice, and its address: ``v, vp = _tls.dev_out`` then
        # ``_get(vp)`` and ``v.value``, with no call in between (another thread has its own buffer; a
        # collection that runs in between is undone by _keep_dev_out).
        v = c_int()
        self.dev_out = (v, byref(v))


_tls = _ThreadState()


def _keep_dev_out(phase, info):
    # A collection can run between ``_get(vp)`` and the read of ``v`` (from Python 3.12 the collector runs
    # at the eval-breaker check that follows every call), and its finalizers can switch devices through
    # the same buffer (Event.__del__ does): the collecting thread's buffer gets back its value.
    try:
        v = _tls.dev_out[0]
        if phase == "start":
            _tls.gc_saved = v.value
        else:
            v.value = _tls.gc_saved
    except Exception:  # noqa: BLE001 - interpreter shutdown
        pass


gc.callbacks.append(_keep_dev_out)
# True (for good) once any thread has recorded a pending target.  Each thread sets it before its first
# ``_tls.target = d``, so while it is False no thread has a target and the hot paths skip the
# thread-local lookup.
_targets = False


def _target():
    return _tls.target if _targets else -1


def _record_target(d):
    # d has no primary context (the caller probed it)
    global _targets
    _targets = True
    _tls.target = d


def _record_own(d):
    # A failed restore's fallback: accel keeps d as its own target, also once linked to torch (c10's
    # MaybeSetDevice would probe d again, and throw where accel's probe failed).
    global _targets
    _targets = True
    _tls.__dict__["target"] = d


# cudaGetDevice / cudaSetDevice, bound on first use: the hot paths call these module globals instead of
# looking a table up on every call.  Both are unprototyped (no per-argument conversion): _get takes the
# address of a c_int (``_tls.dev_out``), _set an int.
def _bind_get(vp):
    global _get
    _get = _cudart._unprototyped("cudaGetDevice")
    return _get(vp)


def _bind_set(d):
    global _set
    _set = _cudart._unprototyped("cudaSetDevice")
    return _set(d)


_get, _set = _bind_get, _bind_set


# -- mirror of the native C-level API ---------------------------------------------------------------

def _c_uninitialized():
    """A lazy-init hook is set and CUDA is not initialized (never used yet, or a forked child)."""
    return not _initialized and _init_hook is not None


def _c_ensure_init():
    global _initialized
    if _initialized or _init_hook is None:
        return
    # The hook returns False while an initialisation is still under way (a re-entrant call from a queued
    # call): CUDA is not initialised yet, so the next use must run the hook again.
    if _init_hook() is not False:
        _initialized = True


def _device_error(err, d):
    """The CudaError for ``err`` from cudaSetDevice(d); an invalid ordinal also names d and the count."""
    exc = _cudart._error(err)
    if err == _INVALID_DEVICE:
        exc.args = (f"{exc.args[0]}\nDevice index {d} is out of range: {_c_device_count()} CUDA device(s) "
                    f"are visible (valid indices are 0 .. count-1)",)
    return exc


def _c_device_count():
    try:
        return _c_checked_device_count()
    except Exception:  # a CudaError: _error cleared the sticky error
        return 0


def _c_checked_device_count():
    global _count
    if _count >= 0:
        return _count
    n = c_int()
    err = _cudart._table().cudaGetDeviceCount(n)
    if err:
        raise _cudart._error(err)
    _count = n.value
    return _count


def _c_get_device():
    if _targets:
        if _torch is not None:
            return _torch_current()
        d = _tls.target
        if d >= 0:
            return d
    v, vp = _tls.dev_out
    err = _get(vp)
    if err:
        raise _cudart._error(err)
    return v.value


def _c_set_device(d, force):
    # c10 clears the target first; here it is cleared only once the switch is done, so that a failed
    # call leaves the thread's device (runtime and target) as it was.
    if d < 0:
        raise RuntimeError(f"device id must be non-negative!{d}")
    if not force:
        cur, vp = _tls.dev_out
        err = _get(vp)
        if err:
            raise _cudart._error(err)
        if cur.value == d:
            if _targets:
                _tls.target = -1
            return
    err = _set(d)
    if err:
        raise _device_error(err, d)
    if _targets:
        _tls.target = -1


_probe = None  # cuDevicePrimaryCtxGetState, bound on first use


def _c_has_primary_context(d):
    global _probe
    n = _count if _count >= 0 else _c_checked_device_count()
    if d < 0 or d >= n:
        raise RuntimeError(f"hasPrimaryContext expects a valid device index, but got device_index={d} "
                           f"(device count is {n})")
    if _probe is None:
        _probe = _cudart._driver().cuDevicePrimaryCtxGetState
    flags, active = c_uint(), c_int()
    err = _probe(d, flags, active)
    if err:
        raise _cudart._driver_error(err)
    return active.value == 1


def _set_device_code(d):
    """SetDevice(d) without force (cudaGetDevice, then cudaSetDevice if d differs) as an error code; the
    target is cleared once done."""
    v, vp = _tls.dev_out
    err = _get(vp)
    if not err and v.value != d:
        err = _set(d)
    if not err and _targets:
        _tls.target = -1
    return err


def _c_maybe_set_device(d):
    # An internal guard's exit (c10's CUDAGuard destructor: C10_CUDA_CHECK_WARN(MaybeSetDevice(d))): a
    # failure is a RuntimeWarning, and d is recorded as the target instead.
    try:
        active = _c_has_primary_context(d)
    except Exception as exc:
        return _warn_fallback(d, exc)
    if not active:
        _record_target(d)
        return
    err = _set_device_code(d)
    if err:
        _warn_fallback(d, _device_error(err, d))


def _guard_restore(d):
    """An internal guard's exit for the shared memory code (accel._memory_common._Guard): as
    _c_maybe_set_device."""
    _c_maybe_set_device(d)


def _warn_fallback(d, exc):
    _record_own(d)
    warnings.warn(f"could not restore CUDA device {d} after a guarded call ({type(exc).__name__}: "
                  f"{str(exc).partition(chr(10))[0]}); device {d} is recorded as this thread's target "
                  f"device instead", RuntimeWarning, stacklevel=3)


def _c_restore_device(d, unless_current):
    # A stream context's exit: SetDevice(d), which skips cudaSetDevice when the runtime device is d
    # already; with unless_current a pending target d is left pending.  On failure d is recorded as the
    # target (the logical device is d again), then the real error propagates.
    if unless_current and _targets and _tls.target == d:
        return
    v, vp = _tls.dev_out  # _set_device_code(d), inlined: a stream context's exit is a hot path
    err = _get(vp)
    if not err and v.value != d:
        err = _set(d)
    if err:
        _record_own(d)
        raise _device_error(err, d)
    if _targets:
        _tls.target = -1


def _c_exchange_device(to):
    if _targets:
        tls = _tls
        cur = tls.target
        if cur >= 0:
            err = _set(to)
            if err:
                raise _device_error(err, to)  # the target is kept: nothing changed
            tls.target = -1
            return cur
    v, vp = _tls.dev_out
    err = _get(vp)
    if err:
        raise _cudart._error(err)
    cur = v.value
    if to == cur:
        return cur
    err = _set(to)
    if err:
        raise _device_error(err, to)
    return cur


def _c_maybe_exchange_device(to):
    v, vp = _tls.dev_out
    err = _get(vp)
    if err:
        raise _cudart._error(err)
    cur = v.value
    if to == cur:
        return cur
    if _c_has_primary_context(to):
        err = _set(to)
        if err:
            raise _cudart._error(err)
    else:
        _record_target(to)
    return cur


def _c_set_target_device():
    d = _target()
    if d >= 0:
        _c_set_device(d, False)


def _c_get_sync_debug_mode():
    return _sync_debug_mode


def _c_warn_or_error_on_sync():
    if _sync_debug_mode == 2:
        raise RuntimeError("called a synchronizing CUDA operation")
    if _sync_debug_mode == 1:
        warnings.warn("called a synchronizing CUDA operation", stacklevel=2)


# -- argument checks --------------------------------------------------------------------------------

def _unpack_index(d, what):
    """An int8 device index (torch's THPUtils_unpackDeviceIndex); TypeError / ValueError naming ``d``."""
    if type(d) is not int:
        if isinstance(d, bool) or not hasattr(type(d), "__index__"):
            raise TypeError(f"invalid argument to {what}: expected an int device index, "
                            f"got {type(d).__name__}: {d!r}")
        d = _sc.index_of(d, f"argument to {what}")
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


def set_index_parser(parser, strict=None):
    """Register ``parser(obj) -> int | None`` for non-int arguments of ``device(...)`` and ``strict(obj) ->
    int`` for those of ``set_current_device``; None clears them."""
    global _parse_index, _parse_strict
    for f in (parser, strict):
        if f is not None and not callable(f):
            raise TypeError(f"parser must be callable or None, got {type(f).__name__}: {f!r}")
    _parse_index = parser
    _parse_strict = strict


def raw_device_count():
    """cudaGetDeviceCount, cached once it succeeds; 0 (not cached) when it fails."""
    return _c_device_count()


def current_device():
    """The calling thread's logical current device: its pending target, else cudaGetDevice."""
    if not _initialized and _init_hook is not None:
        _c_ensure_init()
    if _targets:  # _c_get_device, inlined: this is the hot path
        if _torch is not None:
            return _torch_current()
        d = _tls.target
        if d >= 0:
            return d
    v, vp = _tls.dev_out
    err = _get(vp)
    if err:
        raise _cudart._error(err)
    return v.value


def set_device(device):
    """Make ``device`` current for this thread: always calls cudaSetDevice (creates its context)."""
    d = _unpack_index(device, "setDevice")
    if not _initialized:
        _c_ensure_init()
    _c_set_device(d, True)


def set_current_device(device):
    """torch.cuda.set_device: make ``device`` current for this thread (always cudaSetDevice, creating its
    context); a negative index is a no-op.  Non-int arguments go through set_index_parser's ``strict``."""
    if type(device) is int and 0 <= device <= 127:  # _c_set_device(device, True), inlined: the hot path
        if not _initialized:
            _c_ensure_init()
        err = _set(device)
        if err:
            raise _device_error(err, device)
        if _targets:
            _tls.target = -1
        return
    if type(device) is not int:
        device = _parse_strict(device) if _parse_strict is not None else _unpack_index(device, "setDevice")
        if type(device) is not int:
            device = _unpack_index(device, "setDevice")
    if device < 0:
        return
    if device > 127:
        _unpack_index(device, "setDevice")  # raises ValueError naming the value
    if not _initialized:
        _c_ensure_init()
    _c_set_device(device, True)


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


def set_sync_debug_mode(mode):
    """Set the global sync debug mode: 0 off, 1 warn, 2 error on synchronizing calls; TypeError /
    RuntimeError for a non-int or a value outside 0..2."""
    global _sync_debug_mode, _sync_debug_warned
    if type(mode) is not int and (isinstance(mode, bool) or not hasattr(type(mode), "__index__")):
        raise TypeError(f"invalid argument to set_sync_debug_mode: expected an int, "
                        f"got {type(mode).__name__}: {mode!r}")
    m = mode.__index__()
    if m < 0 or m > 2:
        raise RuntimeError(f"invalid value of debug_mode, expected one of 0,1,2 (got {m!r})")
    if not _sync_debug_warned:
        _sync_debug_warned = True
        warnings.warn("Synchronization debug mode is a prototype feature and does not yet detect all "
                      "synchronizing operations", stacklevel=2)
    _sync_debug_mode = m


def get_sync_debug_mode():
    """The global sync debug mode: 0 off, 1 warn, 2 error."""
    return _sync_debug_mode


def _warn_or_error_on_sync():
    """Apply the sync debug mode before a synchronizing call (the C-level check, for tests)."""
    _c_warn_or_error_on_sync()


class device:
    """Context manager that makes ``device`` current and restores the previous device on exit without
    creating a context there (torch.cuda.device).  ``idx`` is the index; -1 / None are no-ops.  The same
    object may be re-entered while entered (each exit restores the device of its own entry)."""

    # _idx / _prev back ``idx`` / ``prev_idx``: the hot path reads the slots, and the properties give a bare
    # ``device.__new__(device)`` (no slot set) the compiled twin's zeroed values (_prev is unset until the
    # first entry).  _outer: None while not entered, () while entered once, (outer entry's _prev, its
    # _outer) while re-entered.
    __slots__ = ("_idx", "_prev", "_outer")

    def __init__(self, device):
        if type(device) is int or device is None and _parse_index is None:
            self._idx = device
        elif _parse_index is not None:
            self._idx = _parse_index(device)
        else:
            self._idx = _unpack_index(device, "exchangeDevice")
        self._outer = None

    @property
    def idx(self):
        try:
            return self._idx
        except AttributeError:
            return None

    @idx.setter
    def idx(self, value):
        self._idx = value

    @property
    def prev_idx(self):
        try:
            return self._prev
        except AttributeError:
            return -1

    @prev_idx.setter
    def prev_idx(self, value):
        self._prev = _unpack_index(value, "exchangeDevice")

    def __enter__(self):
        """Make ``idx`` the current device (nothing for -1 / None), remembering the one it replaces; returns the guard."""
        try:
            d = self._idx
        except AttributeError:  # a bare device.__new__(device)
            self._idx = d = None
            self._outer = None
        if type(d) is not int or d > 127 or d < -128:
            d = _unpack_index(d, "exchangeDevice") if d is not None else -1
        if d < 0:
            cur = -1
        else:
            if not _initialized and _init_hook is not None:
                _c_ensure_init()
            # _c_exchange_device(d), inlined: this is the hot path
            cur = _tls.target if _targets else -1
            if cur >= 0:
                err = _set(d)
                if err:
                    raise _device_error(err, d)  # the target is kept: nothing changed
                _tls.target = -1
            else:
                v, vp = _tls.dev_out
                err = _get(vp)
                if err:
                    raise _cudart._error(err)
                cur = v.value
                if cur != d:
                    err = _set(d)
                    if err:
                        raise _device_error(err, d)
        # only now that the switch is done: a failed entry leaves the guard as it was
        outer = self._outer
        self._outer = () if outer is None else (self._prev, outer)  # re-entered: keep the outer entry's
        self._prev = cur
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        """Make the device that was current at ``__enter__`` current again; exceptions propagate."""
        try:
            p = self._prev
            outer = self._outer
        except AttributeError:  # not entered yet (or a bare device.__new__(device))
            p, outer = -1, None
        if outer:
            self._prev, self._outer = outer
        else:
            self._outer = None
        if p < 0:
            self._idx = -1
            return False
        # MaybeExchangeDevice(p) (the compiled twin's _guard_exit), inlined: this is the hot path
        v, vp = _tls.dev_out
        err = _get(vp)
        if err:
            _record_own(p)
            raise _cudart._error(err)
        cur = v.value
        if p != cur:
            try:
                if _c_has_primary_context(p):
                    err = _set(p)
                    if err:
                        raise _cudart._error(err)
                else:
                    _record_target(p)
            except BaseException:
                _record_own(p)  # the logical device is p again (no CUDA call), then the real error
                raise
        self._idx = cur
        return False

    def __repr__(self):
        return f"device({self.idx!r})"


# -- accel in a torch process (accel._torch_link) ---------------------------------------------------
# Once linked, ``_tls.target`` is a property over c10's target: reading it asks c10's GetDevice (the target
# is pending where it differs from the runtime's device), recording ``d`` is c10's MaybeSetDevice(d) (d has
# no primary context: every caller probed it), clearing it is c10's SetDevice(runtime device) (which makes
# no runtime call).  A thread's own target from before the link (or one c10 could not take) stays in the
# thread's dict and wins until cleared.

_torch = None  # (GetDevice, SetDevice, MaybeSetDevice) once linked


def _torch_target(tls):
    own = tls.__dict__.get("target", -1)
    if own >= 0:
        return own
    get = _torch[0]
    t, r = c_byte(), c_int()
    if get(byref(t)) or _get(byref(r)):
        return -1  # the caller's own cudaGetDevice reports the error
    return t.value if t.value != r.value else -1


def _torch_current():
    # current_device once linked: the thread's own target, else c10's GetDevice, which is the answer (its
    # target, else the runtime's device), as torch.cuda.current_device() reads it: one call, not the three of
    # reading _tls.target (GetDevice and cudaGetDevice, to tell a target from the runtime's device) and then
    # cudaGetDevice
    own = _tls.__dict__.get("target", -1)
    if own >= 0:
        return own
    t = c_byte()
    err = _torch[0](byref(t))
    if err:
        raise _cudart._error(err)
    return t.value


def _torch_record(tls, d):
    if d < 0:
        tls.__dict__.pop("target", None)
        r = c_int()
        if not _get(byref(r)):
            _torch[1](r.value, False)
    elif 0 <= d < _count and not _torch[2](d):
        tls.__dict__.pop("target", None)
    else:  # out of range (c10 would throw) or refused: accel keeps it
        tls.__dict__["target"] = d


def _link_torch(get, set_, maybe_set):
    """Share c10's pending target device (accel._torch_link calls this once torch's CUDA libraries are
    loaded and use accel's runtime)."""
    global _torch, _targets
    _c_device_count()  # the range c10's MaybeSetDevice accepts (0, not cached, if the count fails)
    _torch = (CFUNCTYPE(c_int, POINTER(c_byte))(get), CFUNCTYPE(c_int, c_byte, c_bool)(set_),
              CFUNCTYPE(c_int, c_byte)(maybe_set))
    _ThreadState.target = property(_torch_target, _torch_record)
    _targets = True
    own = _tls.__dict__.get("target", -1)
    try:
        hand_over = own >= 0 and not _c_has_primary_context(own)
    except Exception:  # noqa: BLE001 - accel keeps it
        hand_over = False
    if hand_over:
        _tls.target = own  # this thread's pending target becomes c10's


_torch_link.register(_link_torch)
