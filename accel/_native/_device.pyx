# cython: binding=True
"""Device selection with torch's per-thread target-device semantics (the hot path, in C).

Twin of accel._python._device.  A guard's exit to a device that has no primary context yet records a
per-thread *target* instead of calling cudaSetDevice, so no context is ever created on exit;
``current_device()`` honours a pending target.  Device indices are ints here; accel.cuda parses the
other device arguments.  C-level API for the other native modules: see _device.pxd.
"""
import warnings

cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.long cimport PyLong_AsLongLong, PyLong_AsLongAndOverflow

from accel._native._cudart cimport Table, DriverTable, table, driver_table, error, driver_error
from accel import _stream_common as _sc
from accel import _torch_link

cdef extern from *:
    """
    static __thread int accel_target_device = -1;
    """
    int accel_target_device

# ``device(i)`` is made once per ``with`` block: its type's vectorcall slot (CPython's constructor hook,
# never inherited by subclasses) builds it without type.__call__'s argument tuple and __init__ dispatch.
cdef extern from *:
    """
    static void accel_set_ctor(PyObject *type, void *f) { ((PyTypeObject *)type)->tp_vectorcall = (vectorcallfunc)f; }
    /* The type's default call (tp_new + tp_init) from vectorcall arguments. */
    static PyObject *accel_type_call(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
    {
        Py_ssize_t n = PyVectorcall_NARGS(nargsf), nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        PyObject *tuple = PyTuple_New(n), *kwargs = NULL, *res = NULL;
        if (!tuple) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) { Py_INCREF(args[i]); PyTuple_SET_ITEM(tuple, i, args[i]); }
        if (nk) {
            kwargs = PyDict_New();
            if (!kwargs) goto done;
            for (Py_ssize_t i = 0; i < nk; i++)
                if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[n + i])) goto done;
        }
        res = PyType_Type.tp_call(type, tuple, kwargs);
    done:
        Py_DECREF(tuple);
        Py_XDECREF(kwargs);
        return res;
    }
    """
    void accel_set_ctor(object type, void* f)
    object accel_type_call(PyObject* type, PyObject** args, size_t nargsf, PyObject* kwnames)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)

__all__ = ["current_device", "set_device", "exchange_device", "maybe_exchange_device", "has_primary_context",
           "raw_device_count", "set_init_hook", "set_initialized", "is_initialized", "set_index_parser",
           "set_current_device", "device", "set_sync_debug_mode", "get_sync_debug_mode"]

cdef bint _initialized = False
cdef object _init_hook = None
cdef object _parse_index = None
cdef object _parse_strict = None
cdef int _count = -1
cdef int _sync_debug_mode = 0
cdef bint _sync_debug_warned = False
# True (for good) once any thread has recorded a pending target.  A thread sets it before its first
# pending target (_record_target), so while it is False no thread has one and the hot paths skip the
# thread-local access.
cdef bint _targets = False

DEF INVALID_DEVICE = 101  # cudaErrorInvalidDevice

# The binding tables, cached once bound: table() / driver_table() return the addresses of _cudart's static
# structs, which never move and are filled once, so the hot paths skip the cross-module call.
cdef Table* _tab = NULL
cdef DriverTable* _dtab = NULL


cdef inline Table* _table() except NULL:
    global _tab
    if _tab == NULL:
        _tab = table()
    return _tab


cdef inline DriverTable* _driver_table() except NULL:
    global _dtab
    if _dtab == NULL:
        _dtab = driver_table()
    return _dtab


cdef inline int _pending() noexcept:
    # the calling thread's pending target device, -1: none
    if not _targets:
        return -1
    if _torch_get != NULL:
        return _torch_pending()
    return accel_target_device


cdef inline void _clear_target() noexcept:
    global accel_target_device
    if _targets:
        accel_target_device = -1
        if _torch_set != NULL:
            _torch_clear()


cdef inline void _record_target(int d) noexcept:
    # d has no primary context (the caller probed it)
    global accel_target_device, _targets
    _targets = True
    if _torch_maybe_set != NULL and 0 <= d < _count and _torch_maybe_set(<signed char>d) == 0:
        accel_target_device = -1
    else:  # no torch, or out of range (c10 would throw) or refused: accel keeps it
        accel_target_device = d


cdef inline void _record_own(int d) noexcept:
    # A failed restore's fallback: accel keeps d as its own target (c10's MaybeSetDevice would probe d
    # again, and throw where accel's probe failed).
    global accel_target_device, _targets
    _targets = True
    accel_target_device = d


# -- accel in a torch process (accel._torch_link) ---------------------------------------------------
# Once linked, the pending target is c10's: read through c10's GetDevice (the target is pending where it
# differs from the runtime's device), recorded by c10's MaybeSetDevice(d) (d has no primary context: every
# caller probed it), cleared by c10's SetDevice(runtime device) (which makes no runtime call).  A thread's
# own target from before the link (or one c10 could not take) stays in accel_target_device and wins
# until cleared.
ctypedef int (*torch_get_t)(signed char*) noexcept nogil
ctypedef int (*torch_set_t)(signed char, unsigned char) noexcept nogil   # (DeviceIndex, bool force)
ctypedef int (*torch_maybe_set_t)(signed char) noexcept nogil
cdef torch_get_t _torch_get = NULL
cdef torch_set_t _torch_set = NULL
cdef torch_maybe_set_t _torch_maybe_set = NULL


cdef int _torch_pending() noexcept:
    cdef signed char t = 0
    cdef int r = 0
    if accel_target_device >= 0:
        return accel_target_device
    if _torch_get(&t) or _tab.cudaGetDevice(&r):
        return -1  # the caller's own cudaGetDevice reports the error
    return t if t != r else -1


cdef void _torch_clear() noexcept:
    cdef int r = 0
    if _tab.cudaGetDevice(&r) == 0:
        _torch_set(<signed char>r, 0)


def _link_torch(size_t get, size_t set_, size_t maybe_set):
    """Share c10's pending target device (accel._torch_link calls this once torch's CUDA libraries are
    loaded and use accel's runtime)."""
    global _torch_get, _torch_set, _torch_maybe_set, _targets
    _table()
    c_device_count()  # the range c10's MaybeSetDevice accepts (0, not cached, if the count fails)
    cdef int own = accel_target_device, active = 0, err = 0
    _torch_get = <torch_get_t>get
    _torch_set = <torch_set_t>set_
    _torch_maybe_set = <torch_maybe_set_t>maybe_set
    _targets = True
    if own >= 0 and _dtab != NULL and _probe(_dtab, own, &active, &err) == 0 and not active:
        _record_target(own)  # this thread's pending target becomes c10's (else accel keeps it)


# -- C-level API (declared in _device.pxd) --------------------------------------------------------

cdef int c_ensure_init() except -1:
    global _initialized
    if _initialized or _init_hook is None:
        return 0
    # The hook returns False while an initialisation is still under way (a re-entrant call from a queued
    # call): CUDA is not initialised yet, so the next use must run the hook again.
    if _init_hook() is not False:
        _initialized = True
    return 0


cdef bint c_uninitialized() noexcept:
    return not _initialized and _init_hook is not None


cdef object _device_error(int err, int d):
    """The CudaError for ``err`` from cudaSetDevice(d); an invalid ordinal also names d and the count."""
    exc = error(err)
    if err == INVALID_DEVICE:
        exc.args = (f"{exc.args[0]}\nDevice index {d} is out of range: {c_device_count()} CUDA device(s) "
                    f"are visible (valid indices are 0 .. count-1)",)
    return exc


cdef int c_device_count() except -1:
    try:
        return c_checked_device_count()
    except Exception:  # a CudaError: the binding cleared the sticky error
        return 0


cdef int c_checked_device_count() except -1:
    global _count
    cdef int n = 0, err
    cdef Table* t
    if _count >= 0:
        return _count
    t = table()
    with nogil:
        err = t.cudaGetDeviceCount(&n)
    if err:
        raise error(err)
    _count = n
    return n


cdef int c_get_device() except -1:
    cdef int d, err
    cdef signed char t = 0
    if _targets:
        d = accel_target_device
        if d >= 0:
            return d
        if _torch_get != NULL:
            # linked to torch: c10's GetDevice is the answer (its pending target, else the runtime's device, one
            # cudaGetDevice), as torch.cuda.current_device() reads it.  (_pending() would read the runtime's
            # device again to tell a target from it, and then the runtime's device once more: three calls.)
            err = _torch_get(&t)
            if err:
                raise error(err)
            return t
    err = _table().cudaGetDevice(&d)
    if err:
        raise error(err)
    return d


cdef int c_set_device(int d, bint force) except -1:
    # c10 clears the target first; here it is cleared only once the switch is done, so that a failed
    # call leaves the thread's device (runtime and target) as it was.
    cdef int cur = 0, err
    if d < 0:
        raise RuntimeError(f"device id must be non-negative!{d}")
    cdef Table* t = _table()
    if not force:
        err = t.cudaGetDevice(&cur)
        if err:
            raise error(err)
        if cur == d:
            _clear_target()
            return 0
    err = t.cudaSetDevice(d)
    if err:
        raise _device_error(err, d)
    _clear_target()
    return 0


cdef bint c_has_primary_context(int d) except -1:
    return _has_primary_context(d)


# hasPrimaryContext's steps with an error code instead of an exception, so that a guard's exit can record
# its fallback target before raising, with no try block on its hot path.
DEF PROBE_COUNT = 1   # cudaGetDeviceCount failed: *err is its error
DEF PROBE_RANGE = 2   # d is outside [0, count): *err is the count
DEF PROBE_DRIVER = 3  # cuDevicePrimaryCtxGetState failed: *err is its error

cdef inline int _probe(DriverTable* dt, int d, int* active, int* err) noexcept:
    """Whether ``d``'s primary context is active (into ``*active``); 0, or what failed (PROBE_*).
    The caller has bound the runtime table (_table())."""
    global _count
    cdef unsigned int flags = 0
    cdef int n = _count
    if n < 0:
        with nogil:
            err[0] = _tab.cudaGetDeviceCount(&n)
        if err[0]:
            return PROBE_COUNT
        _count = n
    if d < 0 or d >= n:
        err[0] = n
        return PROBE_RANGE
    active[0] = 0
    err[0] = dt.cuDevicePrimaryCtxGetState(d, &flags, active)
    return PROBE_DRIVER if err[0] else 0


cdef object _probe_error(int what, int err, int d):
    if what == PROBE_COUNT:
        return error(err)
    if what == PROBE_RANGE:
        return RuntimeError(f"hasPrimaryContext expects a valid device index, but got device_index={d} "
                            f"(device count is {err})")
    return driver_error(err)


cdef inline bint _has_primary_context(int d) except -1:
    cdef int active = 0, err = 0, what
    _table()
    what = _probe(_driver_table(), d, &active, &err)
    if what:
        raise _probe_error(what, err, d)
    return active == 1


cdef inline int _set_device_code(int d) noexcept:
    """SetDevice(d) without force (cudaGetDevice, then cudaSetDevice if d differs) as an error code; the
    target is cleared once done.  The caller has bound the runtime table."""
    cdef int cur = 0
    cdef int err = _tab.cudaGetDevice(&cur)
    if err == 0 and cur != d:
        err = _tab.cudaSetDevice(d)
    if err == 0:
        _clear_target()
    return err


cdef int _fallback(int d, object exc) except -2:
    """A guard's restore of ``d`` failed: ``d`` becomes the thread's target (the logical device is ``d``
    again, with no CUDA call), then ``exc`` (the real error) is raised."""
    _record_own(d)
    raise exc


cdef DriverTable* _driver_table_or_fallback(int d) except NULL:
    # the first use of the driver table loads it (which may fail) from a guard's exit
    try:
        return _driver_table()
    except BaseException:
        _record_own(d)
        raise


cdef int c_maybe_set_device(int d) except -1:
    # An internal guard's exit (c10's CUDAGuard destructor: C10_CUDA_CHECK_WARN(MaybeSetDevice(d))): a
    # failure is a RuntimeWarning, and d is recorded as the target instead.
    cdef int active = 0, err = 0, what
    _table()
    if _dtab == NULL:
        try:
            _driver_table()
        except Exception as exc:
            return _warn_fallback(d, exc)
    what = _probe(_dtab, d, &active, &err)
    if what:
        return _warn_fallback(d, _probe_error(what, err, d))
    if not active:
        _record_target(d)
        return 0
    err = _set_device_code(d)
    if err:
        return _warn_fallback(d, _device_error(err, d))
    return 0


cdef int _warn_fallback(int d, object exc) except -1:
    _record_own(d)
    warnings.warn(f"could not restore CUDA device {d} after a guarded call ({type(exc).__name__}: "
                  f"{str(exc).partition(chr(10))[0]}); device {d} is recorded as this thread's target "
                  f"device instead", RuntimeWarning, stacklevel=3)
    return 0


cdef int c_restore_device(int d, bint unless_current) except -1:
    # A stream context's exit (see _device.pxd): SetDevice(d), which skips cudaSetDevice when the runtime
    # device is d already; with unless_current a pending target d is left pending.
    if unless_current and _pending() == d:
        return 0
    _table()
    cdef int err = _set_device_code(d)
    if err:
        _fallback(d, _device_error(err, d))
    return 0


cdef int c_exchange_device(int to) except -2:
    return _exchange_device(to)


cdef int c_maybe_exchange_device(int to) except -2:
    return _maybe_exchange_device(to)


# The bodies, inline so that the guard class's __enter__ / __exit__ make no C call of their own.
cdef inline int _exchange_device(int to) except -2:
    cdef int cur = _pending(), err
    cdef Table* t = _table()
    if cur < 0:
        err = t.cudaGetDevice(&cur)
        if err:
            raise error(err)
        if to == cur:
            return cur
    err = t.cudaSetDevice(to)
    if err:
        raise _device_error(err, to)  # the target (if any) is kept: nothing changed
    _clear_target()
    return cur


cdef inline int _maybe_exchange_device(int to) except -2:
    cdef int cur = 0, err
    cdef Table* t = _table()
    err = t.cudaGetDevice(&cur)
    if err:
        raise error(err)
    if to == cur:
        return cur
    if _has_primary_context(to):
        err = t.cudaSetDevice(to)
        if err:
            raise error(err)
    else:
        _record_target(to)
    return cur


cdef inline int _guard_exit(int p) except -2:
    """``device.__exit__``: MaybeExchangeDevice(p), and if that fails, ``p`` becomes the thread's target
    (the logical device is ``p`` again, no CUDA call) before the real error propagates."""
    cdef int cur = 0, active = 0, what
    cdef Table* t = _table()
    cdef int err = t.cudaGetDevice(&cur)
    if err:
        return _fallback(p, error(err))
    if p == cur:
        return cur
    what = _probe(_dtab if _dtab != NULL else _driver_table_or_fallback(p), p, &active, &err)
    if what:
        return _fallback(p, _probe_error(what, err, p))
    if active:
        err = t.cudaSetDevice(p)
        if err:
            return _fallback(p, error(err))
    else:
        _record_target(p)
    return cur


cdef int c_set_target_device() except -1:
    cdef int d = _pending()
    if d >= 0:
        c_set_device(d, False)
    return 0


cdef int c_get_sync_debug_mode() noexcept:
    return _sync_debug_mode


cdef int c_warn_or_error_on_sync() except -1:
    if _sync_debug_mode == 2:
        raise RuntimeError("called a synchronizing CUDA operation")
    if _sync_debug_mode == 1:
        warnings.warn("called a synchronizing CUDA operation", stacklevel=2)
    return 0


# -- argument checks --------------------------------------------------------------------------------

cdef inline bint _is_index(object d):
    # torch's THPUtils_checkLong: an int that is not a bool, or anything with __index__ but not bool.
    return (type(d) is int) or (not isinstance(d, bool) and hasattr(type(d), "__index__"))


cdef int _unpack_index(object d, str what) except -200:
    """An int8 device index (torch's THPUtils_unpackDeviceIndex); TypeError / ValueError naming ``d``."""
    cdef long long v
    if type(d) is not int:
        if not _is_index(d):
            raise TypeError(f"invalid argument to {what}: expected an int device index, "
                            f"got {type(d).__name__}: {d!r}")
        d = _sc.index_of(d, f"argument to {what}")
    try:
        v = PyLong_AsLongLong(d)
    except OverflowError:
        v = 1 << 20
    if v < -128 or v > 127:
        raise ValueError(f"Overflow when unpacking DeviceIndex: {d!r} is outside [-128, 127]")
    return <int>v


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


def _guard_restore(int d):
    """An internal guard's exit for the shared memory code (accel._memory_common._Guard): as
    c_maybe_set_device."""
    c_maybe_set_device(d)


def raw_device_count():
    """cudaGetDeviceCount, cached once it succeeds; 0 (not cached) when it fails."""
    return c_device_count()


def current_device():
    """The calling thread's logical current device: its pending target, else cudaGetDevice."""
    if not _initialized:
        c_ensure_init()
    return c_get_device()


def set_device(device):
    """Make ``device`` current for this thread: always calls cudaSetDevice (creates its context)."""
    cdef int d = _unpack_index(device, "setDevice")
    if not _initialized:
        c_ensure_init()
    c_set_device(d, True)


def set_current_device(device):
    """torch.cuda.set_device: make ``device`` current for this thread (always cudaSetDevice, creating its
    context); a negative index is a no-op.  Non-int arguments go through set_index_parser's ``strict``."""
    cdef long v
    cdef int overflow = 0
    if type(device) is not int:
        device = _parse_strict(device) if _parse_strict is not None else _unpack_index(device, "setDevice")
        if type(device) is not int:
            device = _unpack_index(device, "setDevice")
    v = PyLong_AsLongAndOverflow(device, &overflow)
    if overflow < 0 or overflow == 0 and v < 0:
        return
    if overflow or v > 127:
        _unpack_index(device, "setDevice")  # raises ValueError naming the value
    if not _initialized:
        c_ensure_init()
    c_set_device(<int>v, True)


def exchange_device(device):
    """Switch to ``device`` (creating its context) and return the previous logical device; -1 for d < 0."""
    cdef int d = _unpack_index(device, "exchangeDevice")
    if d < 0:
        return -1
    if not _initialized:
        c_ensure_init()
    return c_exchange_device(d)


def maybe_exchange_device(device):
    """Switch to ``device`` only if it has a primary context, else record it as the target; returns the
    runtime device at call time; -1 for d < 0."""
    cdef int d = _unpack_index(device, "exchangeDevice")
    if d < 0:
        return -1
    if not _initialized:
        c_ensure_init()
    return c_maybe_exchange_device(d)


def has_primary_context(device):
    """Whether ``device``'s primary context exists (driver query; RuntimeError if out of range)."""
    cdef int d = _unpack_index(device, "has_primary_context")
    return c_has_primary_context(d)


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
    c_warn_or_error_on_sync()


# Not tracked by the cyclic GC (a guard is made per ``with``): it holds only ``idx``, an index or None, and
# ``_stack``, a list of ints, so it is in no reference cycle (one made by assigning ``idx`` an object that
# refers back to it would leak).
@cython.freelist(16)
@cython.no_gc
cdef class device:
    """device(device)
--

    Context manager that makes ``device`` current and restores the previous device on exit without
    creating a context there (torch.cuda.device).  ``idx`` is the index; -1 / None are no-ops.  The same
    object may be re-entered while entered (each exit restores the device of its own entry)."""

    cdef public object idx
    # The logical device before the latest __enter__, plus one: 0 (also the state of a bare
    # ``device.__new__(device)``) means nothing to restore, so prev_idx reads -1 as torch's does.
    cdef int _prev1
    cdef int _depth     # entries not exited yet
    cdef list _stack    # the _prev1 of the outer entries while re-entered (None until needed)

    def __init__(self, device):
        if type(device) is int or device is None and _parse_index is None:
            self.idx = device
        elif _parse_index is not None:
            self.idx = _parse_index(device)
        else:
            self.idx = _unpack_index(device, "exchangeDevice")
        self._prev1 = 0

    @property
    def prev_idx(self):
        return self._prev1 - 1

    @prev_idx.setter
    def prev_idx(self, value):
        self._prev1 = _unpack_index(value, "exchangeDevice") + 1

    def __enter__(self):
        """Make ``idx`` the current device (nothing for -1 / None), remembering the one it replaces; returns the guard."""
        cdef object idx = self.idx
        cdef int d, prev, overflow = 0
        cdef long v
        if type(idx) is int:  # the common case, unpacked inline: an int8 or _unpack_index's ValueError
            v = PyLong_AsLongAndOverflow(idx, &overflow)
            d = <int>v if overflow == 0 and -128 <= v <= 127 else _unpack_index(idx, "exchangeDevice")
        else:
            d = _unpack_index(idx, "exchangeDevice") if idx is not None else -1
        if d < 0:
            prev = -1
        else:
            if not _initialized and _init_hook is not None:
                c_ensure_init()
            prev = _exchange_device(d)
        if self._depth:  # re-entered: keep the outer entry's device (only now: a failed entry changes nothing)
            if self._stack is None:
                self._stack = []
            self._stack.append(self._prev1)
        self._depth += 1
        self._prev1 = prev + 1
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        """Make the device that was current at ``__enter__`` current again; exceptions propagate."""
        cdef int p = self._prev1 - 1
        if self._depth > 1:
            self._prev1 = self._stack.pop()
        if self._depth:
            self._depth -= 1
        if p < 0:
            self.idx = -1
            return False
        self.idx = _guard_exit(p)
        return False

    def __repr__(self):
        return f"device({self.idx!r})"


cdef PyObject* _device_ctor(PyObject* tp, PyObject** args, size_t nargsf, PyObject* kwnames) except NULL:
    # device(i) for an int or None (the common case): __init__'s fast branch without type.__call__;
    # anything else, and subclasses, take the type's default call.
    cdef device g
    cdef object a
    if kwnames == NULL and PyVectorcall_NARGS(nargsf) == 1 and tp == <PyObject*>device:
        a = <object>args[0]
        if type(a) is int or a is None and _parse_index is None:
            g = device.__new__(device)
            g.idx = a
            Py_INCREF(g)
            return <PyObject*>g
    r = accel_type_call(tp, args, nargsf, kwnames)
    Py_INCREF(r)
    return <PyObject*>r


accel_set_ctor(device, <void*>_device_ctor)


_torch_link.register(_link_torch)
