# cython: binding=True
"""Current stream, stream pool, Stream / ExternalStream / Event and stream contexts (the hot path, in C).

Twin of accel._python._stream, with torch's semantics (reference/torch_device_stream.md §3, §4.2, §6.2-6.4,
§7.4-7.6): a per-thread, per-device current stream kept in C thread-local storage (a new thread sees the
default stream on every device), a per-device pool of 32 non-blocking streams per priority level handed
out round-robin and created lazily, events created lazily on first record.  Device indices are ints
here; accel.cuda registers a parser for the other device arguments (``set_index_parser``).
"""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_GET_ITEM
from cpython.exc cimport PyErr_SetObject
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from libc.stdint cimport uintptr_t
from libc.string cimport memcpy

import atexit
import ctypes
import os
import threading

from accel._native._cudart cimport (Table, table, error, cudaStream_t, cudaEvent_t, IpcEventHandle, cudaGraph_t,
                                    cudaGraphExec_t)
from accel._native._device cimport (c_get_device, c_set_device, c_maybe_set_device, c_exchange_device,
                                    c_restore_device, c_set_target_device, c_checked_device_count,
                                    c_ensure_init, c_warn_or_error_on_sync, c_enter_device, c_leave_device,
                                    c_uninitialized)
from accel import _graph_common as _gc
from accel import _stream_common as _sc
from accel import _torch_link

cdef extern from "Python.h":
    void PyErr_WriteUnraisable(object obj)

cdef extern from *:
    """
    /* The calling thread's _ThreadState (borrowed: a threading.local owns it; its dealloc clears this). */
    static __thread PyObject* accel_stream_tls = NULL;

    /* Host functions launched and not yet finished (their trampoline has not returned); CUDA threads
     * decrement it without the GIL.  accel_host_closed: set at exit once they are drained; from then
     * on a trampoline never touches Python (it may run after Py_Finalize on a CUDA thread). */
    static long accel_host_pending = 0;
    static int accel_host_closed = 0;

    static void accel_host_launched(void) { __atomic_add_fetch(&accel_host_pending, 1, __ATOMIC_SEQ_CST); }
    static void accel_host_finished(void) { __atomic_sub_fetch(&accel_host_pending, 1, __ATOMIC_SEQ_CST); }
    static long accel_host_in_flight(void) { return __atomic_load_n(&accel_host_pending, __ATOMIC_SEQ_CST); }
    static void accel_host_reset(void) { __atomic_store_n(&accel_host_pending, 0, __ATOMIC_SEQ_CST); }
    static void accel_host_close(void) { __atomic_store_n(&accel_host_closed, 1, __ATOMIC_SEQ_CST); }
    static int accel_host_may_enter_python(void)
    {
        if (__atomic_load_n(&accel_host_closed, __ATOMIC_SEQ_CST)) return 0;
    #if PY_VERSION_HEX >= 0x030D0000
        return !Py_IsFinalizing();
    #else
        return !_Py_IsFinalizing();
    #endif
    }
    """
    PyObject* accel_stream_tls
    void accel_host_launched() nogil
    void accel_host_finished() nogil
    long accel_host_in_flight() nogil
    void accel_host_reset() nogil
    void accel_host_close() nogil
    bint accel_host_may_enter_python() nogil

__all__ = ["Stream", "ExternalStream", "Event", "CUDAGraph", "StreamContext", "current_stream", "current_raw_stream",
           "default_stream", "set_stream", "stream", "priority_range", "set_index_parser", "_set_stream_by_id"]

DEF NPRI = 4
DEF POOL = 32
DEF MAXDEV = 512
DEF NOT_READY = 600
DEF DISABLE_TIMING = 2
DEF INTERPROCESS = 4
DEF NON_BLOCKING = 1
cdef unsigned int _EXTERNAL = _sc.EVENT_EXTERNAL   # read once: the hot paths test it without a module lookup

cdef Table* _t = NULL
cdef int _ndev = -1                 # device count, set once by _init_global
cdef int _max_pri = 1               # pools per device: min(priority range width, 4)
cdef int _least = 0, _greatest = 0  # cudaDeviceGetStreamPriorityRange
cdef list _defaults = []            # the default Stream of each device
cdef list _pool = []                # _pool[d][p][i]: Stream or None until first handed out
cdef unsigned int _counters[NPRI][MAXDEV]
cdef object _parse_index = None
_lock = threading.RLock()
_local = threading.local()


# -- global and per-thread state --------------------------------------------------------------------

cdef Stream _make(int d, long long sid, uintptr_t ptr):
    cdef Stream s = Stream.__new__(Stream)
    s.device_index = d
    s._sid = sid
    s._ptr = ptr
    return s


cdef int _init_global() except -1:
    global _t, _ndev, _max_pri, _least, _greatest, _defaults, _pool
    cdef int least = 0, greatest = 0, err, n
    if _ndev >= 0:
        return 0
    c_ensure_init()
    with _lock:
        if _ndev >= 0:
            return 0
        _t = table()
        n = c_checked_device_count()  # a failed count raises its CudaError, not "No CUDA GPUs"
        if n <= 0:
            raise RuntimeError("No CUDA GPUs are available")
        if n > MAXDEV:
            raise RuntimeError(f"Number of CUDA devices on the machine is larger than the compiled max number "
                               f"of gpus expected ({MAXDEV}). Increase that and recompile.")
        err = _t.cudaDeviceGetStreamPriorityRange(&least, &greatest)
        if err:
            raise error(err)
        _least, _greatest = least, greatest
        _max_pri = max(1, min(least - greatest + 1, NPRI))
        _defaults = [_make(d, 0, 0) for d in range(n)]
        _pool = [[[None] * POOL for _ in range(_max_pri)] for _ in range(n)]
        _ndev = n
    return 0


@cython.auto_pickle(False)
cdef class _ThreadState:
    cdef list cur       # the current Stream of each device
    cdef list events    # the cached wait_stream event handle of each device (0: none yet)

    def __dealloc__(self):
        global accel_stream_tls
        if accel_stream_tls == <PyObject*>self:
            accel_stream_tls = NULL
        if _t != NULL and self.events is not None:
            for h in self.events:
                if h:
                    _t.cudaEventDestroy(<cudaEvent_t><uintptr_t>h)
            _t.cudaGetLastError()


cdef _ThreadState _tstate():
    global accel_stream_tls
    if accel_stream_tls != NULL:
        return <_ThreadState>accel_stream_tls
    _init_global()
    cdef _ThreadState st = _ThreadState.__new__(_ThreadState)
    st.cur = list(_defaults)
    st.events = [0] * _ndev
    _local.state = st
    accel_stream_tls = <PyObject*>st
    return st


cdef int _device_arg(object device) except -2:
    """A device argument as an index; -1 for None / -1 (the current device)."""
    cdef long long v
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
    c_ensure_init()  # lazy init (and the fork check) like torch.cuda's Python layer
    _init_global()
    if device < 0 or device >= _ndev:
        raise _sc.out_of_range(device, _ndev)
    return <int>device


cdef int _resolve(object device) except -1:
    """The device index for ``device`` (None: the current device, materialising a pending target)."""
    cdef int d = _device_arg(device)
    if d < 0:
        c_ensure_init()
        d = c_get_device()
        c_set_target_device()
        _init_global()
        if d >= _ndev:
            raise _sc.out_of_range(d, _ndev)
    return d


cdef Stream _as_stream(object s):
    if isinstance(s, Stream):
        return <Stream>s
    if hasattr(type(s), "__cuda_stream__"):
        return ExternalStream(s)
    raise _sc.bad_stream(s)


cdef Stream _pool_stream(int d, int p):
    cdef int i = _counters[p][d] % POOL
    _counters[p][d] += 1
    return _pool_slot(d, p, i)


cdef Stream _pool_slot(int d, int p, int i):
    """Pool stream ``i`` of device ``d``, priority level ``p``, created on first use."""
    cdef list slots = _pool[d][p]
    cdef Stream s = slots[i]
    cdef uintptr_t ptr = 0
    cdef int err, orig
    if s is not None:
        return s
    with _lock:
        s = slots[i]
        if s is not None:
            return s
        orig = c_exchange_device(d)
        with nogil:
            err = _t.cudaStreamCreateWithPriority(<cudaStream_t*>&ptr, NON_BLOCKING, -p)
        if err:
            e = error(err)
            c_maybe_set_device(orig)
            raise e
        s = _make(d, (i << 5) | ((p + 1) << 1) | 1, ptr)
        slots[i] = s
        c_maybe_set_device(orig)
    return s


cdef Stream _from_id(stream_id, device_index, device_type, priority):
    """The stream torch's (stream_id, device_index, device_type) triple names (see _sc.decode_stream_id)."""
    priority = _sc.check_priority(priority)
    d, kind, a, b = _sc.decode_stream_id(stream_id, device_index, device_type, priority)
    if d == -1:  # _device_arg's "current device": not a stream's device
        c_ensure_init()
        _init_global()
        raise _sc.out_of_range(d, _ndev)
    cdef int dev = _device_arg(d)  # lazy init, range check
    if kind == "default":
        return _defaults[dev]
    if kind == "external":
        return _make(dev, <long long><uintptr_t>a, <uintptr_t>a)
    if a >= _max_pri:
        raise ValueError(f"invalid StreamId {stream_id}: priority level {a} but device {dev} has {_max_pri} "
                         "stream priority level(s)")
    if _torch_ids:      # in a torch process a pool id is torch's (accel's own pool streams carry their handle)
        h = _sc.torch_pool_handle(stream_id, dev)
        return _make(dev, <long long><uintptr_t>h, <uintptr_t>h)
    return _pool_slot(dev, a, b)


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
    cdef int d
    cdef PyObject* st = accel_stream_tls
    if device is None:
        c_ensure_init()
        d = c_get_device()
        c_set_target_device()
    else:
        d = _device_arg(device)
        if d < 0:
            d = _resolve(None)
    if st == NULL:
        _tstate()
        st = accel_stream_tls
    if <unsigned int>d >= <unsigned int>_ndev:
        raise _sc.out_of_range(d, _ndev)
    return <object>PyList_GET_ITEM((<_ThreadState>st).cur, d)


def current_raw_stream(device=None):
    """The raw cudaStream_t (int, 0 for the default stream) of the current stream on ``device``."""
    return (<Stream>current_stream(device))._ptr


def default_stream(device=None):
    """The default (legacy, id 0) Stream of ``device`` (None: the current device)."""
    cdef int d = _resolve(device)
    return _defaults[d]


def set_stream(stream):
    """Make ``stream`` current on its device for this thread, switching the current device to it
    (torch.cuda.set_stream); None is a no-op.  TypeError for a non-stream."""
    if stream is None:
        return
    cdef Stream s = _as_stream(stream)
    cdef _ThreadState st = _tstate()
    cdef int d = s.device_index
    if c_get_device() != d:
        c_set_device(d, False)
    st.cur[d] = s


def stream(stream):
    """A StreamContext that makes ``stream`` current (and its device) and restores both on exit."""
    return StreamContext(stream)


def priority_range():
    """``(least, greatest)`` stream priorities the pool uses (greatest clamped to -3 like torch)."""
    _init_global()
    return _least, max(_greatest, _least - (_max_pri - 1))


@cython.auto_pickle(False)
cdef class StreamContext:
    """StreamContext(stream)
--

    Context manager making ``stream`` current (switching to its device); exit restores the stream
    and device current at entry, and the previous stream of the stream's device.  None: no-op."""

    cdef readonly object stream
    cdef Stream _src      # current stream of the entry device, at entry
    cdef Stream _dst      # previous stream of the stream's device (None: same device)
    cdef list _stack      # saved (_src, _dst) while the same context object is entered again

    def __init__(self, stream):
        if stream is not None and not isinstance(stream, Stream):
            stream = _as_stream(stream)
        self.stream = stream

    def __enter__(self):
        """Make the stream's device and the stream current (nothing for None); returns the stream."""
        cdef Stream s
        cdef int cur, d
        if self.stream is None:
            return None
        s = <Stream>self.stream
        c_ensure_init()
        cur = c_get_device()
        c_set_target_device()
        cdef _ThreadState st = _tstate()
        d = s.device_index
        if d != cur:
            c_set_device(d, False)
        # only now that the switch is done: a failed entry leaves the context as it was
        if self._src is not None:
            if self._stack is None:
                self._stack = []
            self._stack.append((self._src, self._dst))
        self._src = <Stream>PyList_GET_ITEM(st.cur, cur)
        self._dst = <Stream>PyList_GET_ITEM(st.cur, d) if d != cur else None
        st.cur[d] = s
        return s

    def __exit__(self, exc_type, exc_value, traceback):
        """Make the device and the streams that were current at ``__enter__`` current again."""
        cdef Stream src = self._src, dst = self._dst
        if src is None:
            return False
        if self._stack:
            self._src, self._dst = self._stack.pop()
        else:
            self._src = self._dst = None
        cdef _ThreadState st = _tstate()
        if dst is not None:
            st.cur[dst.device_index] = dst
        st.cur[src.device_index] = src
        c_restore_device(src.device_index, True)  # a failure still leaves src's device the logical one
        return False


@cython.auto_pickle(False)
cdef class Stream:
    """Stream(device=None, priority=0, *, stream_id=None, device_index=None, device_type=None)
--

    A CUDA stream from the device's pool (32 per priority level, round-robin, non-blocking); lower
    ``priority`` is higher, clamped to the device's range.  ValueError / TypeError for bad arguments."""

    cdef readonly int device_index
    cdef long long _sid   # torch's StreamId encoding (stream_id reads it)
    cdef uintptr_t _ptr
    cdef object _owner    # the foreign object an ExternalStream came from (kept alive)
    cdef object _ctx      # (device, previous stream) while used as ``with stream:``
    cdef object __weakref__   # weak references, as torch's Stream

    def __cinit__(self, *args, **kwargs):
        # Its methods call through the binding table: bound here too, for a Stream made with __new__ alone
        # (which bypasses __init__ and the pool's initialisation) before any other CUDA use.
        global _t
        if _t == NULL:
            _t = table()

    def __init__(self, device=None, priority=0, *, stream_id=None, device_index=None, device_type=None):
        cdef Stream s
        if stream_id is not None or device_index is not None or device_type is not None:
            if device is not None:
                raise ValueError(f"device cannot be given with stream_id / device_index, got device={device!r}")
            s = _from_id(stream_id, device_index, device_type, priority)
            self.device_index = s.device_index
            self._sid = s._sid
            self._ptr = s._ptr
            return
        cdef int d = _resolve(device)
        prio = _sc.check_priority(priority)
        cdef int p = <int>min(max(-prio, 0), _max_pri - 1)
        s = _pool_stream(d, p)
        self.device_index = d
        self._sid = s._sid
        self._ptr = s._ptr

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
        if _torch_ids and self._sid & 1:
            return <long long>self._ptr
        return self._sid

    @property
    def device_type(self):
        """1, c10's DeviceType::CUDA (torch.Stream.device_type)."""
        return 1

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
        c_ensure_init()  # the fork check (as every method that calls CUDA)
        cdef int prio = 0, err
        cdef int orig = c_enter_device(_t, self.device_index)
        err = _t.cudaStreamGetPriority(<cudaStream_t>self._ptr, &prio)
        c_leave_device(orig)
        if err:
            raise error(err)
        return prio

    @staticmethod
    def priority_range():
        """``(least, greatest)`` priorities (see accel.cuda priority_range)."""
        return priority_range()

    def query(self):
        """True if all work on the stream is done, False if not; CudaError for a bad stream."""
        c_ensure_init()
        cdef int orig = c_enter_device(_t, self.device_index)
        cdef int err = _t.cudaStreamQuery(<cudaStream_t>self._ptr)
        if err == NOT_READY:
            _t.cudaGetLastError()
        c_leave_device(orig)
        if err == 0:
            return True
        if err == NOT_READY:
            return False
        raise error(err)

    def synchronize(self):
        """Wait (GIL released) until all work on the stream is done (honours the sync debug mode)."""
        cdef int err
        c_ensure_init()
        c_warn_or_error_on_sync()
        cdef int orig = c_enter_device(_t, self.device_index)
        cdef cudaStream_t s = <cudaStream_t>self._ptr
        with nogil:
            err = _t.cudaStreamSynchronize(s)
        if err:
            e = error(err)
            c_leave_device(orig)
            raise e
        c_leave_device(orig)

    def wait_event(self, event):
        """Make future work on this stream wait for ``event``'s latest record: ``event.wait(self)`` for
        an accel Event, else cudaStreamWaitEvent on the handle another library's event exposes (torch's
        ``cuda_event``, cuda.core's ``handle``; 0, never created, is a no-op as torch's), else
        ``event.wait(self)`` for any other event with a ``wait(stream)`` method; TypeError otherwise."""
        if isinstance(event, Event):
            (<Event>event).wait(self)
            return
        h = _sc.event_handle_of(event)
        if h is None:
            if hasattr(type(event), "__cuda_stream__") or not callable(getattr(event, "wait", None)):
                raise _sc.bad_event(event)   # a stream's wait(s) would order the other way round
            event.wait(self)
            return
        if not h:
            return
        c_ensure_init()
        cdef int err
        cdef cudaStream_t p = <cudaStream_t>self._ptr
        cdef cudaEvent_t e = <cudaEvent_t><uintptr_t>h
        cdef int orig = c_enter_device(_t, self.device_index)
        with nogil:
            err = _t.cudaStreamWaitEvent(p, e, 0)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        c_leave_device(orig)

    def wait_stream(self, stream):
        """Make future work on this stream wait for the work queued on ``stream`` so far (through a
        cached per-thread event, no event churn)."""
        c_ensure_init()
        cdef Stream src = _as_stream(stream)
        cdef _ThreadState st = _tstate()
        cdef int err = 0, orig
        cdef uintptr_t h = st.events[src.device_index]
        cdef cudaEvent_t e
        cdef cudaStream_t a = <cudaStream_t>src._ptr, b = <cudaStream_t>self._ptr
        orig = c_enter_device(_t, src.device_index)
        if h == 0:
            with nogil:
                err = _t.cudaEventCreateWithFlags(<cudaEvent_t*>&h, DISABLE_TIMING)
            if not err:
                st.events[src.device_index] = h
        e = <cudaEvent_t>h
        if not err:
            with nogil:
                err = _t.cudaEventRecord(e, a)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        if self.device_index != src.device_index:
            c_leave_device(orig)
            orig = c_enter_device(_t, self.device_index)
        with nogil:
            err = _t.cudaStreamWaitEvent(b, e, 0)
        if err:
            ex = error(err)
            c_leave_device(orig)
            raise ex
        c_leave_device(orig)

    def record_event(self, event=None):
        """Record ``event`` (a new Event if None) on this stream and return it."""
        if event is None:
            event = Event()
        elif not isinstance(event, Event):
            raise TypeError(f"expected an accel.cuda.Event or None, got {type(event).__name__}: {event!r}")
        (<Event>event).record(self)
        return event

    def launch_host_func(self, fn):
        """Enqueue the Python callable ``fn()`` on the stream; it runs on a CUDA thread, and an exception
        it raises is reported through sys.unraisablehook.  ``fn`` is kept alive until it ran.  At exit the
        interpreter waits for the host functions already queued; RuntimeError once it is shutting down."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}: {fn!r}")
        if _host_closing:
            raise RuntimeError(_sc.HOST_FUNC_AT_EXIT)
        cdef int err, capturing = 0
        c_ensure_init()
        cdef int orig = c_enter_device(_t, self.device_index)
        cdef cudaStream_t s = <cudaStream_t>self._ptr
        if not _t.cudaStreamIsCapturing(s, &capturing) and capturing:
            c_leave_device(orig)
            raise RuntimeError(_gc.HOST_FUNC.format(self))
        _t.cudaGetLastError()
        Py_INCREF(fn)
        accel_host_launched()
        with nogil:
            err = _t.cudaLaunchHostFunc(s, _host_trampoline, <void*>fn)
        if err:
            accel_host_finished()
            Py_DECREF(fn)
            e = error(err)
            c_leave_device(orig)
            raise e
        c_leave_device(orig)

    def __enter__(self):
        """Make the stream's device and the stream current; returns the stream."""
        if self._ctx is not None:
            raise RuntimeError("Stream's context should not be initialized.")
        c_ensure_init()
        cdef _ThreadState st = _tstate()
        cdef int cur = c_get_device(), d = self.device_index
        if cur != d:
            c_set_device(d, False)
        self._ctx = (cur, st.cur[d])
        st.cur[d] = self
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        """Make the device and the stream that were current at ``__enter__`` current again."""
        if self._ctx is None:
            return False
        cur, prev = self._ctx
        self._ctx = None
        cdef _ThreadState st = _tstate()
        st.cur[self.device_index] = prev
        if cur != self.device_index:
            c_restore_device(cur, False)  # a failure still leaves ``cur`` the logical device
        return False

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self.device_index == (<Stream>other).device_index and self._ptr == (<Stream>other)._ptr

    def __hash__(self):
        return hash((self._ptr, self.device_index))

    def __repr__(self):
        return f"<accel.cuda.{type(self).__name__} device=cuda:{self.device_index} cuda_stream={self._ptr:#x}>"

    def __reduce__(self):
        """Refused (TypeError): a stream is only valid in its own process."""
        raise TypeError(f"cannot pickle {self!r}: a stream is only valid in its own process")


cdef void _host_trampoline(void* arg) noexcept nogil:
    # Runs on a CUDA thread, possibly after the interpreter is gone: then it must not even take the GIL
    # (the reference to ``fn`` is left to the dying process).  The exit hook waits for every trampoline
    # that got past this check, so the check cannot race with finalisation.
    if accel_host_may_enter_python():
        _host_call(arg)
    accel_host_finished()


cdef void _host_call(void* arg) noexcept nogil:
    # An exception cannot propagate from here: it is reported through sys.unraisablehook
    # (PyErr_WriteUnraisable), as ctypes does for the python twin's callback.
    with gil:
        fn = <object>arg
        Py_DECREF(fn)  # the reference taken at launch; ``fn`` holds its own until the call is done
        try:
            fn()
        except BaseException as exc:
            PyErr_SetObject(type(exc), exc)
            PyErr_WriteUnraisable(fn)


cdef bint _host_closing = False   # set at exit: no new host functions


def _drain_host_functions():
    """atexit: refuse new host functions, wait (GIL released) for those already queued, then make every
    later trampoline a no-op, so that none touches Python after finalisation (segfault otherwise)."""
    global _host_closing
    _host_closing = True
    try:
        _sc.wait_for_host_functions(_host_in_flight)
    finally:
        accel_host_close()


def _host_in_flight():
    return accel_host_in_flight()


def _forget_parent_host_functions():
    accel_host_reset()  # the parent's queued host functions never run in a fork child


atexit.register(_drain_host_functions)
os.register_at_fork(after_in_child=_forget_parent_host_functions)


@cython.auto_pickle(False)
cdef class ExternalStream(Stream):
    """ExternalStream(stream_ptr, device=None)
--

    Wrap a stream made elsewhere: an int cudaStream_t or any object with ``__cuda_stream__`` (kept
    alive).  The device comes from cudaStreamGetDevice unless given; CudaError for a foreign handle."""

    def __init__(self, stream_ptr, device=None):
        ptr, owner = _sc.stream_ptr_of(stream_ptr)
        cdef int d = _device_arg(device)
        cdef int actual = -1, err
        cdef uintptr_t p = ptr
        _init_global()
        if p > 2 and _t.cudaStreamGetDevice != NULL:
            err = _t.cudaStreamGetDevice(<cudaStream_t>p, &actual)
            if err:
                raise error(err)
        if d < 0:
            d = actual if actual >= 0 else _resolve(None)
        elif actual >= 0 and actual != d:
            raise ValueError(f"stream {p:#x} belongs to device {actual}, not to the device given ({d})")
        self.device_index = d
        self._sid = <long long>p
        self._ptr = p
        self._owner = owner


# True once accel shares a process (and runtime) with torch's CUDA libraries: see Stream.stream_id.
cdef bint _torch_ids = False


def _link_torch(*addrs):
    global _torch_ids
    _torch_ids = True


_torch_link.register(_link_torch)


include "_stream_event.pxi"
include "_stream_graph.pxi"
