"""Current stream, stream pool, Stream / ExternalStream / Event and stream contexts (pure Python).

Twin of accel._native._stream, with torch's semantics (reference/torch_device_stream.md §3, §4.2, §6.2-6.4,
§7.4-7.6): a per-thread, per-device current stream kept in a threading.local (a new thread sees the
default stream on every device), a per-device pool of 32 non-blocking streams per priority level handed
out round-robin and created lazily, events created lazily on first record.  Device indices are ints
here; accel.cuda registers a parser for the other device arguments (``set_index_parser``).
"""
import atexit
import ctypes
import itertools
import os
import threading
from ctypes import c_int, c_size_t, c_void_p

from accel import _graph_common as _gc
from accel import _stream_common as _sc
from accel import _torch_link
from accel._python import _cudart
from accel._python import _device as _dm
from accel._python._device import (_c_checked_device_count, _c_ensure_init, _c_exchange_device, _c_get_device,
                                   _c_maybe_set_device, _c_restore_device, _c_set_device, _c_set_target_device,
                                   _c_warn_or_error_on_sync)

__all__ = ["Stream", "ExternalStream", "Event", "CUDAGraph", "StreamContext", "current_stream", "current_raw_stream",
           "default_stream", "set_stream", "stream", "priority_range", "set_index_parser", "_set_stream_by_id"]

_NPRI, _POOL, _NOT_READY = _sc.MAX_PRIORITIES, _sc.STREAMS_PER_POOL, _sc.NOT_READY
_DISABLE_TIMING, _INTERPROCESS = _sc.EVENT_DISABLE_TIMING, _sc.EVENT_INTERPROCESS

_T = None          # the bound ctypes table, once _init_global ran
_ndev = -1
_max_pri = 1
_least = _greatest = 0
_defaults = []
_pool = []
_counters = []     # _counters[d][p]: itertools.count (next() is atomic under the GIL)
_parse_index = None
_lock = threading.RLock()


_osa = object.__setattr__  # writes a Stream's fields (Stream.__setattr__ refuses every assignment)


def _make(d, sid, ptr):
    s = object.__new__(Stream)
    _osa(s, "device_index", d)
    _osa(s, "_sid", sid)
    _osa(s, "_ptr", ptr)
    _osa(s, "_pp", c_void_p(ptr) if ptr else None)
    return s


def _init_global():
    global _T, _ndev, _max_pri, _least, _greatest, _defaults, _pool, _counters
    if _ndev >= 0:
        return
    _c_ensure_init()
    with _lock:
        if _ndev >= 0:
            return
        _T = _cudart._table()
        n = _c_checked_device_count()  # a failed count raises its CudaError, not "No CUDA GPUs"
        if n <= 0:
            raise RuntimeError("No CUDA GPUs are available")
        if n > _sc.MAX_DEVICES:
            raise RuntimeError(f"Number of CUDA devices on the machine is larger than the compiled max number "
                               f"of gpus expected ({_sc.MAX_DEVICES}). Increase that and recompile.")
        least, greatest = c_int(), c_int()
        err = _T.cudaDeviceGetStreamPriorityRange(least, greatest)
        if err:
            raise _cudart._error(err)
        _least, _greatest = least.value, greatest.value
        _max_pri = max(1, min(_least - _greatest + 1, _NPRI))
        _defaults = [_make(d, 0, 0) for d in range(n)]
        _pool = [[[None] * _POOL for _ in range(_max_pri)] for _ in range(n)]
        _counters = [[itertools.count() for _ in range(_max_pri)] for _ in range(n)]
        _ndev = n


class _Events(list):
    """The cached wait_stream event handle of each device for one thread; destroyed with the thread."""

    def __del__(self):
        try:
            for h in self:
                if h:
                    _T.cudaEventDestroy(h)
            _T.cudaGetLastError()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _ThreadState(threading.local):
    cur = None       # the current Stream of each device
    events = None    # _Events


_tls = _ThreadState()
_dtls = _dm._tls  # accel._python._device's thread state (the pending target device)


def _tstate_cur():
    _init_global()
    cur = _tls.cur = list(_defaults)
    _tls.events = _Events([0] * _ndev)
    return cur


def _device_arg(device):
    """A device argument as an index; -1 for None / -1 (the current device)."""
    if device is None:
        return -1
    if type(device) is not int:
        if _parse_index is not None:
            device = _parse_index(device)
            if device is None:
                return -1
        device = _sc.device_index(device)  # the one check of both twins: an int, never a bool
    if device == -1:
        return -1
    _c_ensure_init()  # lazy init (and the fork check) like torch.cuda's Python layer
    _init_global()
    if device < 0 or device >= _ndev:
        raise _sc.out_of_range(device, _ndev)
    return device


def _resolve(device):
    """The device index for ``device`` (None: the current device, materialising a pending target)."""
    d = _device_arg(device)
    if d < 0:
        _c_ensure_init()
        d = _c_get_device()
        _c_set_target_device()
        _init_global()
        if d >= _ndev:
            raise _sc.out_of_range(d, _ndev)
    return d


def _enter(d):
    """A device guard's entry that skips the switch when the runtime device already is ``d``: returns
    the device to restore, or -1 when nothing was switched."""
    r, vp = _dm._tls.dev_out
    err = _dm._get(vp)
    if err:
        raise _cudart._error(err)
    if r.value == d:
        return -1
    return _c_exchange_device(d)


def _leave(orig):
    if orig >= 0:
        _c_maybe_set_device(orig)


def _as_stream(s):
    if isinstance(s, Stream):
        return s
    if hasattr(type(s), "__cuda_stream__"):
        return ExternalStream(s)
    raise _sc.bad_stream(s)


def _check(err, orig):
    """Raise the CudaError for ``err`` (if any) after restoring the device."""
    if err:
        ex = _cudart._error(err)
        _leave(orig)
        raise ex
    _leave(orig)


def _new_pool_stream(d, p, i):
    """Create pool stream ``i`` of device ``d``, priority level ``p`` (unless another thread just did)."""
    slots = _pool[d][p]
    with _lock:
        s = slots[i]
        if s is not None:
            return s
        orig = _c_exchange_device(d)
        ptr = c_size_t()
        err = _T.cudaStreamCreateWithPriority(ptr, _sc.STREAM_NON_BLOCKING, -p)
        if err:
            ex = _cudart._error(err)
            _c_maybe_set_device(orig)
            raise ex
        s = slots[i] = _make(d, (i << 5) | ((p + 1) << 1) | 1, ptr.value)
        _c_maybe_set_device(orig)
    return s


def _from_id(stream_id, device_index, device_type, priority):
    """The stream torch's (stream_id, device_index, device_type) triple names (see _sc.decode_stream_id)."""
    if type(priority) is not int:
        priority = _sc.check_priority(priority)
    d, kind, a, b = _sc.decode_stream_id(stream_id, device_index, device_type, priority)
    if d == -1:  # _device_arg's "current device": not a stream's device
        _c_ensure_init()
        _init_global()
        raise _sc.out_of_range(d, _ndev)
    d = _device_arg(d)  # lazy init, range check
    if kind == "default":
        return _defaults[d]
    if kind == "external":
        return _make(d, a - (a >> 63 << 64), a)
    if a >= _max_pri:
        raise ValueError(f"invalid StreamId {stream_id}: priority level {a} but device {d} has {_max_pri} "
                         "stream priority level(s)")
    if _torch_ids:      # in a torch process a pool id is torch's (accel's own pool streams carry their handle)
        h = _sc.torch_pool_handle(stream_id, d)
        return _make(d, h - (h >> 63 << 64), h)
    s = _pool[d][a][b]
    return s if s is not None else _new_pool_stream(d, a, b)


def _set_stream_by_id(stream_id, device_index, device_type):
    """set_stream(Stream(stream_id=, device_index=, device_type=)): torch.cuda._set_stream_by_id."""
    set_stream(_from_id(stream_id, device_index, device_type, 0))


# -- module functions -------------------------------------------------------------------------------

def set_index_parser(parser):
    """Register ``parser(obj) -> int | None`` for non-int device arguments; None clears it."""
    global _parse_index
    if parser is not None and not callable(parser):
        raise TypeError(f"parser must be callable or None, got {type(parser).__name__}: {parser!r}")
    _parse_index = parser


def current_stream(device=None):
    """The calling thread's current Stream on ``device`` (None: the current device); no CUDA call
    when ``device`` is given.  ValueError for an index out of range."""
    if device is None:
        # _c_ensure_init(), _c_get_device(), _c_set_target_device(), inlined: this is the hot path
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()
        d = _dtls.target if _dm._targets else -1
        if d >= 0:
            _c_set_device(d, False)
        else:
            v, vp = _dm._tls.dev_out
            err = _dm._get(vp)
            if err:
                raise _cudart._error(err)
            d = v.value
    else:
        d = _device_arg(device)
        if d < 0:
            d = _resolve(None)
    cur = _tls.cur
    if cur is None:
        cur = _tstate_cur()
    if d >= _ndev:
        raise _sc.out_of_range(d, _ndev)
    return cur[d]


def current_raw_stream(device=None):
    """The raw cudaStream_t (int, 0 for the default stream) of the current stream on ``device``."""
    return current_stream(device)._ptr


def default_stream(device=None):
    """The default (legacy, id 0) Stream of ``device`` (None: the current device)."""
    d = _resolve(device)  # first: it may initialise _defaults
    return _defaults[d]


def set_stream(stream):
    """Make ``stream`` current on its device for this thread, switching the current device to it
    (torch.cuda.set_stream); None is a no-op.  TypeError for a non-stream."""
    if stream is None:
        return
    s = _as_stream(stream)
    cur = _tls.cur
    if cur is None:
        cur = _tstate_cur()
    d = s.device_index
    if _c_get_device() != d:
        _c_set_device(d, False)
    cur[d] = s


def stream(stream):
    """A StreamContext that makes ``stream`` current (and its device) and restores both on exit."""
    return StreamContext(stream)


def priority_range():
    """``(least, greatest)`` stream priorities the pool uses (greatest clamped to -3 like torch)."""
    _init_global()
    return _least, max(_greatest, _least - (_max_pri - 1))


class StreamContext:
    """Context manager making ``stream`` current (switching to its device); exit restores the stream
    and device current at entry, and the previous stream of the stream's device.  None: no-op."""

    __slots__ = ("stream", "_src", "_dst", "_stack")

    def __init__(self, stream):
        if stream is not None and not isinstance(stream, Stream):
            stream = _as_stream(stream)
        self.stream = stream
        self._src = self._dst = self._stack = None

    def __enter__(self):
        """Make the stream's device and the stream current (nothing for None); returns the stream."""
        s = self.stream
        if s is None:
            return None
        _c_ensure_init()
        cur_dev = _c_get_device()
        _c_set_target_device()
        cur = _tls.cur
        if cur is None:
            cur = _tstate_cur()
        d = s.device_index
        if d != cur_dev:
            _c_set_device(d, False)
        # only now that the switch is done: a failed entry leaves the context as it was
        if self._src is not None:
            if self._stack is None:
                self._stack = []
            self._stack.append((self._src, self._dst))
        self._src = cur[cur_dev]
        self._dst = cur[d] if d != cur_dev else None
        cur[d] = s
        return s

    def __exit__(self, exc_type, exc_value, traceback):
        """Make the device and the streams that were current at ``__enter__`` current again."""
        src, dst = self._src, self._dst
        if src is None:
            return False
        if self._stack:
            self._src, self._dst = self._stack.pop()
        else:
            self._src = self._dst = None
        cur = _tls.cur
        if cur is None:
            cur = _tstate_cur()
        if dst is not None:
            cur[dst.device_index] = dst
        cur[src.device_index] = src
        _c_restore_device(src.device_index, True)  # a failure still leaves src's device the logical one
        return False


class Stream:
    """A CUDA stream from the device's pool (32 per priority level, round-robin, non-blocking); lower
    ``priority`` is higher, clamped to the device's range.  ValueError / TypeError for bad arguments."""

    # Immutable like the compiled twin's: __setattr__ refuses every assignment, and the module writes an
    # instance's fields once, with object.__setattr__ (_osa).  The class attributes are the compiled twin's
    # zeroed fields: what a bare ``Stream.__new__(Stream)`` reads (the legacy stream of device 0), and
    # _owner / _ctx until set.  (A __dict__ rather than slots: a slot has no default, and __getattr__ would
    # slow down every attribute read.)
    __slots__ = ("__dict__", "__weakref__")   # weak references, as torch's Stream
    device_index = _sid = _ptr = 0   # _sid: torch's StreamId encoding (stream_id reads it)
    _owner = _ctx = None
    _pp = None  # _ptr as a c_void_p (None for 0), what the unprototyped hot-path calls take

    def __init__(self, device=None, priority=0, *, stream_id=None, device_index=None, device_type=None):
        if stream_id is not None or device_index is not None or device_type is not None:
            if device is not None:
                raise ValueError(f"device cannot be given with stream_id / device_index, got device={device!r}")
            s = _from_id(stream_id, device_index, device_type, priority)
            _osa(self, "device_index", s.device_index)
            _osa(self, "_sid", s._sid)
            _osa(self, "_ptr", s._ptr)
            _osa(self, "_pp", s._pp)
            return
        if type(device) is int and 0 <= device < _ndev and (_dm._initialized or _dm._init_hook is None):
            d = device  # _resolve(device), for an index in range once CUDA is initialised
        else:
            d = _resolve(device)
        if type(priority) is not int:
            priority = _sc.check_priority(priority)
        p = -priority
        if p <= 0:
            p = 0
        elif p >= _max_pri:
            p = _max_pri - 1
        i = next(_counters[d][p]) % _POOL
        s = _pool[d][p][i]
        if s is None:
            s = _new_pool_stream(d, p, i)
        _osa(self, "device_index", d)
        _osa(self, "_sid", s._sid)
        _osa(self, "_ptr", s._ptr)
        _osa(self, "_pp", s._pp)

    def __setattr__(self, name, value):
        if type(self).__module__ == __name__ or name in _STREAM_FIELDS or name in _STREAM_DATA:
            if name == "__class__" and not isinstance(value, type):
                object.__setattr__(self, name, value)  # raises CPython's own TypeError, as the compiled twin
            raise _frozen(self, name)
        object.__setattr__(self, name, value)  # a user subclass's own attribute, as on the compiled twin

    def __delattr__(self, name):
        if name == "__class__":
            object.__delattr__(self, name)  # raises CPython's own TypeError, as the compiled twin
        if type(self).__module__ == __name__ or name in _STREAM_FIELDS or name in _STREAM_DATA:
            raise _frozen(self, name)
        object.__delattr__(self, name)

    @property
    def device(self):
        """The stream's device (``.type == "cuda"``, ``.index``)."""
        return _sc.cuda_device(self.device_index)

    @property
    def stream_id(self):
        """torch's StreamId: 0 for the default stream, the pool encoding (slot, priority level) for a pool
        stream, the handle for an external one.  Once accel shares a process with torch
        (accel._torch_link), a pool stream's id is its handle too: torch reads a pool id as one of its own
        pool's streams, so ``torch.cuda.stream(s)`` / ``set_stream(s)`` would run on another stream."""
        sid = self._sid
        if _torch_ids and sid & 1:
            return self._ptr - (self._ptr >> 63 << 64)
        return sid

    @property
    def device_type(self):
        """1, c10's DeviceType::CUDA (torch.Stream.device_type)."""
        return _sc.DEVICE_TYPE_CUDA

    @property
    def cuda_stream(self):
        """The raw cudaStream_t as an int (0 for the default stream)."""
        return self._ptr

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self._ptr)

    def __cuda_stream__(self):
        """The CUDA stream protocol: ``(0, cuda_stream)``."""
        return (0, self._ptr)

    @property
    def priority(self):
        """cudaStreamGetPriority, under a guard on the stream's device."""
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()  # the fork check (as every method that calls CUDA)
        prio = c_int()
        orig = _enter(self.device_index)
        _check(_T.cudaStreamGetPriority(self._ptr, prio), orig)
        return prio.value

    @staticmethod
    def priority_range():
        """``(least, greatest)`` priorities (see accel.cuda priority_range)."""
        return priority_range()

    def query(self):
        """True if all work on the stream is done, False if not; CudaError for a bad stream."""
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()  # the fork check (as every method that calls CUDA)
        orig = _enter(self.device_index)
        err = _T.cudaStreamQuery(self._ptr)
        if err == _NOT_READY:
            _T.cudaGetLastError()
            _leave(orig)
            return False
        _check(err, orig)
        return True

    def synchronize(self):
        """Wait (GIL released) until all work on the stream is done (honours the sync debug mode)."""
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()  # the fork check (as every method that calls CUDA)
        _c_warn_or_error_on_sync()
        orig = _enter(self.device_index)
        _check(_T.cudaStreamSynchronize(self._ptr), orig)

    def wait_event(self, event):
        """Make future work on this stream wait for ``event``'s latest record: ``event.wait(self)`` for
        an accel Event, else cudaStreamWaitEvent on the handle another library's event exposes (torch's
        ``cuda_event``, cuda.core's ``handle``; 0, never created, is a no-op as torch's), else
        ``event.wait(self)`` for any other event with a ``wait(stream)`` method; TypeError otherwise."""
        if isinstance(event, Event):
            event.wait(self)
            return
        h = _sc.event_handle_of(event)
        if h is None:
            if hasattr(type(event), "__cuda_stream__") or not callable(getattr(event, "wait", None)):
                raise _sc.bad_event(event)   # a stream's wait(s) would order the other way round
            event.wait(self)
            return
        if not h:
            return
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()
        orig = _enter(self.device_index)
        _check(_T.cudaStreamWaitEvent(self._ptr, h, 0), orig)

    def wait_stream(self, stream):
        """Make future work on this stream wait for the work queued on ``stream`` so far (through a
        cached per-thread event, no event churn)."""
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()  # the fork check (as every method that calls CUDA)
        src = _as_stream(stream)
        if _tls.cur is None:
            _tstate_cur()
        events = _tls.events
        sd = src.device_index
        h = events[sd]
        orig = _enter(sd)
        err = 0
        if not h:
            out = c_size_t()
            err = _T.cudaEventCreateWithFlags(out, _DISABLE_TIMING)
            if not err:
                h = events[sd] = out.value
        if not err:
            err = _T.cudaEventRecord(h, src._ptr)
        if err:
            _check(err, orig)
        if self.device_index != sd:
            _leave(orig)
            orig = _enter(self.device_index)
        _check(_T.cudaStreamWaitEvent(self._ptr, h, 0), orig)

    def record_event(self, event=None):
        """Record ``event`` (a new Event if None) on this stream and return it."""
        if event is None:
            event = Event()
        elif not isinstance(event, Event):
            raise TypeError(f"expected an accel.cuda.Event or None, got {type(event).__name__}: {event!r}")
        event.record(self)
        return event

    def launch_host_func(self, fn):
        """Enqueue the Python callable ``fn()`` on the stream; it runs on a CUDA thread, and an exception
        it raises is reported through sys.unraisablehook.  ``fn`` is kept alive until it ran.  At exit the
        interpreter waits for the host functions already queued; RuntimeError once it is shutting down."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}: {fn!r}")
        if _host_closing:
            raise RuntimeError(_sc.HOST_FUNC_AT_EXIT)
        if not _dm._initialized and _dm._init_hook is not None:
            _c_ensure_init()  # the fork check (as every method that calls CUDA)
        orig = _enter(self.device_index)
        st = c_int()
        if not _T.cudaStreamIsCapturing(self._ptr, st) and st.value:
            _leave(orig)
            raise RuntimeError(_gc.HOST_FUNC.format(self))
        _T.cudaGetLastError()
        key = next(_host_keys)
        _host_pending[key] = fn
        _host_devices.add(self.device_index)
        err = _T.cudaLaunchHostFunc(self._ptr, _host_ptr, key)
        if err:
            _host_pending.pop(key, None)
        _check(err, orig)

    def __enter__(self):
        """Make the stream's device and the stream current; returns the stream."""
        if self._ctx is not None:
            raise RuntimeError("Stream's context should not be initialized.")
        _c_ensure_init()
        cur = _tls.cur
        if cur is None:
            cur = _tstate_cur()
        cur_dev, d = _c_get_device(), self.device_index
        if cur_dev != d:
            _c_set_device(d, False)
        _osa(self, "_ctx", (cur_dev, cur[d]))
        cur[d] = self
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        """Make the device and the stream that were current at ``__enter__`` current again."""
        if self._ctx is None:
            return False
        cur_dev, prev = self._ctx
        _osa(self, "_ctx", None)
        cur = _tls.cur
        if cur is None:
            cur = _tstate_cur()
        cur[self.device_index] = prev
        if cur_dev != self.device_index:
            _c_restore_device(cur_dev, False)  # a failure still leaves ``cur_dev`` the logical device
        return False

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self.device_index == other.device_index and self._ptr == other._ptr

    def __hash__(self):
        return hash((self._ptr, self.device_index))

    def __repr__(self):
        return f"<accel.cuda.{type(self).__name__} device=cuda:{self.device_index} cuda_stream={self._ptr:#x}>"

    def __reduce__(self):
        """Refused (TypeError): a stream is only valid in its own process."""
        raise TypeError(f"cannot pickle {self!r}: a stream is only valid in its own process")


_host_pending = {}             # key -> callable, until the host function returned
_host_keys = itertools.count(1)
_host_closing = False          # set at exit: no new host functions
_host_devices = set()          # the devices host functions were launched on


def _host_entry(key):
    # Runs on a CUDA thread; ctypes reports an exception through sys.unraisablehook.  ctypes takes the
    # GIL before this runs, so unlike the native trampoline it cannot stay out of a finalised
    # interpreter: the exit hook's wait is what keeps every call before finalisation.
    try:
        fn = _host_pending.get(key)
        if fn is not None:
            fn()
    finally:
        _host_pending.pop(key, None)


_host_cfunc = ctypes.CFUNCTYPE(None, ctypes.c_size_t)(_host_entry)
_host_ptr = ctypes.cast(_host_cfunc, ctypes.c_void_p).value


def _drain_host_functions():
    """atexit: refuse new host functions and wait (GIL released) for those already queued, so that none
    runs after finalisation (segfault otherwise)."""
    global _host_closing
    _host_closing = True
    _sc.wait_for_host_functions(_host_in_flight)
    # ctypes reports an exception a host function raised after _host_entry returned (so after its key
    # left _host_pending): a device synchronisation waits until every callback is back in the runtime.
    for d in sorted(_host_devices):
        try:
            orig = _enter(d)
            if _T.cudaDeviceSynchronize():
                _T.cudaGetLastError()
            _leave(orig)
        except Exception:  # noqa: BLE001 - at exit, with nothing left to report to
            pass


def _host_in_flight():
    return len(_host_pending)


def _forget_parent_host_functions():
    _host_pending.clear()  # the parent's queued host functions never run in a fork child
    _host_devices.clear()


atexit.register(_drain_host_functions)
os.register_at_fork(after_in_child=_forget_parent_host_functions)


class ExternalStream(Stream):
    """Wrap a stream made elsewhere: an int cudaStream_t or any object with ``__cuda_stream__`` (kept
    alive).  The device comes from cudaStreamGetDevice unless given; CudaError for a foreign handle."""

    __slots__ = ()

    def __init__(self, stream_ptr, device=None):
        ptr, owner = _sc.stream_ptr_of(stream_ptr)
        d = _device_arg(device)
        actual = -1
        _init_global()
        if ptr > 2 and not isinstance(_T.cudaStreamGetDevice, _cudart._Missing):
            v = c_int()
            err = _T.cudaStreamGetDevice(ptr, v)
            if err:
                raise _cudart._error(err)
            actual = v.value
        if d < 0:
            d = actual if actual >= 0 else _resolve(None)
        elif actual >= 0 and actual != d:
            raise ValueError(f"stream {ptr:#x} belongs to device {actual}, not to the device given ({d})")
        _osa(self, "device_index", d)
        _osa(self, "_sid", ptr - (ptr >> 63 << 64))
        _osa(self, "_ptr", ptr)
        _osa(self, "_pp", c_void_p(ptr) if ptr else None)
        _osa(self, "_owner", owner)


_STREAM_FIELDS = frozenset(("device_index", "_sid", "_ptr", "_pp", "_owner", "_ctx"))
# What the compiled twin's Stream exposes as data attributes (readonly members and properties); its
# cdef fields (_ptr, ...) are not attributes at all.
_STREAM_DATA = frozenset(("device_index", "stream_id", "device", "device_type", "cuda_stream", "_as_parameter_",
                          "priority"))


def _type_name(cls):
    # tp_name as a compiled class has it: qualified for the twin's own classes, bare for subclasses
    return f"{__name__}.{cls.__name__}" if cls.__module__ == __name__ else cls.__name__


def _frozen(s, name, cls=None, fields=_STREAM_FIELDS, data=_STREAM_DATA):
    """The error the compiled twin gives for setting or deleting ``name`` on ``s``, an instance of
    ``cls`` (Stream by default) whose private fields are ``fields`` and data attributes ``data``."""
    if name == "__class__":
        return TypeError("__class__ assignment only supported for mutable types or ModuleType subclasses")
    if name in data:
        return AttributeError(f"attribute '{name}' of '{_type_name(cls or Stream)}' objects is not writable")
    if name not in fields and name != "__dict__" and hasattr(type(s), name):
        return AttributeError(f"'{_type_name(type(s))}' object attribute '{name}' is read-only")
    return AttributeError(f"'{_type_name(type(s))}' object has no attribute '{name}'")


# True once accel shares a process (and runtime) with torch's CUDA libraries: see Stream.stream_id.
_torch_ids = False


def _link_torch(*addrs):
    global _torch_ids
    _torch_ids = True


_torch_link.register(_link_torch)


from accel._python._stream_event import Event  # noqa: E402  (Event needs the names above)
from accel._python._stream_graph import CUDAGraph  # noqa: E402  (as Event)
