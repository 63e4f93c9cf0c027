"""Device buffers on CUDA's stream-ordered allocator, and accel's memory counters (pure Python).

Twin of accel._native._memory.  ``alloc`` takes ``nbytes`` from the memory pool of the device with
cudaMallocAsync on a stream (the current stream of the device unless one is given); ``DeviceBuffer.free``
(also its context manager exit and its garbage collection) returns them with cudaFreeAsync on that same
stream, after making it wait for every stream the buffer was recorded on (``record_stream``).  On the
first use of a device accel sets its pool's release threshold to keep freed memory cached (a warm pool).
An allocation that fails for lack of memory is retried once after synchronising the device (frees queued
on any of its streams complete) and trimming the pool; then it raises OutOfMemoryError.  The counters (torch's ``allocated_bytes``, ``allocation``, ...)
count what accel allocated; the reserved bytes are the pool's own.  Device indices are ints here;
accel.cuda registers a parser for the other device arguments (``set_index_parser``).
In a forked child of a process that used CUDA every buffer operation raises torch's "Cannot
re-initialize CUDA" error (the init hook's).
"""
import atexit
import threading
from ctypes import byref, c_int, c_size_t

from accel import _memory_common as _mc
from accel import _memory_interop as _mi
from accel import _stream_common as _sc
from accel._python import _cudart
from accel._python import _device as _dev
from accel._python import _stream as _stream_mod
from accel._python._device import _c_checked_device_count, _c_ensure_init, _c_get_device, _c_uninitialized


__all__ = ["DeviceBuffer", "alloc", "memory_allocated", "max_memory_allocated", "counters", "pool_handle",
           "reset_peak", "reset_accumulated", "set_limit", "get_limit", "set_index_parser", "wrap"]

_MAXDEV = 512
_ERR_OOM = 2
_FIELDS = ("bytes", "bytes_peak", "bytes_alloc", "bytes_freed", "count", "count_peak", "count_alloc",
           "count_freed", "retries", "ooms", "limit", "pool")


class _Counters:
    __slots__ = _FIELDS

    def __init__(self):
        for f in _FIELDS:
            setattr(self, f, 0)


_c = [_Counters() for _ in range(_MAXDEV)]
_lock = threading.Lock()     # counter updates (read-modify-write) from several threads
_ndev = -1
_T = None          # the raw ctypes table, bound when a pool is first used
_closing = False
_parse_index = None
_Stream = _stream_mod.Stream
_mc.register_twin(_cudart, _dev._guard_restore, _Stream)
_current_stream = _stream_mod.current_stream


def _close():
    global _closing
    _closing = True


atexit.register(_close)   # buffers still alive at exit are left to the process's end


def _count():
    global _ndev
    if _ndev < 0:
        _c_ensure_init()
        _ndev = _c_checked_device_count()
    return _ndev


def _index(device):
    if device is None:
        return -1
    if type(device) is int and 0 <= device < _ndev:
        return device
    if _parse_index is not None and not isinstance(device, int):
        device = _parse_index(device)
        if device is None:
            return -1
    d = _sc.device_index(device)
    if d < 0 or d >= _count() or d >= _MAXDEV:
        raise _mc.bad_device(d, _count())
    return d


_device_enter, _leave = _stream_mod._enter, _stream_mod._leave  # the stream twin's internal device guard


def _enter(d, h):
    """Make ``d`` the runtime's current device when stream handle ``h`` means "this device's default
    stream" (0, 1, 2); returns the device to restore (_leave), or -1."""
    if h > 2:
        return -1
    return _device_enter(d)


def _pool(d):
    global _T
    c = _c[d]
    p = c.pool
    if p:
        return p
    _T = _cudart._table()
    p = _cudart.cudaDeviceGetMemPool(d)
    _cudart.cudaMemPoolSetAttribute(p, _mc.ATTR_RELEASE_THRESHOLD, _mc.KEEP_ALL)
    c.pool = p
    return p


def _ready():
    """In a forked child (or before the first use): run the init hook, which raises torch's fork error."""
    if _c_uninitialized():
        _c_ensure_init()


def _retry(d, h, n, pool, out):
    c = _c[d]
    with _lock:
        c.retries += 1
    _mc.sync_and_trim(_cudart, d, pool)
    err = _T.cudaMallocAsync(byref(out), n, h)
    if err == _ERR_OOM:
        _T.cudaGetLastError()
        with _lock:
            c.ooms += 1
        return _mc.oom_error(_cudart, d, n, c.bytes, c.limit, pool)
    if err:
        return _cudart._error(err)
    return None


class DeviceBuffer:
    """``nbytes`` of device memory from ``alloc``, freed stream-ordered on its stream by ``free()``, by
    leaving a ``with`` block, or when it is garbage collected."""

    __slots__ = ("_ptr", "_n", "_dev", "_h", "_stream", "_uses", "_live", "_foreign", "_readonly", "_owner",
                 "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceBuffer cannot be created directly: use accel.cuda.alloc(nbytes)")

    @property
    def ptr(self):
        """The device address (int; 0 for a zero-byte buffer)."""
        return self._ptr

    @property
    def nbytes(self):
        return self._n

    @property
    def device(self):
        """The buffer's device (``.type == "cuda"``, ``.index``)."""
        return _sc.CudaDevice(self._dev)

    @property
    def stream(self):
        """The Stream the buffer was allocated on (and will be freed on)."""
        return self._stream

    @property
    def closed(self):
        """True once the buffer was freed."""
        return not self._live

    @property
    def readonly(self):
        """True for a view of a read-only CUDA array / DLPack tensor: copies into it and memset are refused."""
        return self._readonly

    def record_stream(self, stream):
        """Mark the buffer as used by the work queued on ``stream`` so far and later: its memory is not
        reused before that work is done (torch's Tensor.record_stream; events, no host synchronisation).
        The streams are a set; the buffer's own stream is not recorded."""
        if not isinstance(stream, _Stream):
            raise _mc.bad_stream(stream)
        if not self._live:
            raise ValueError("record_stream on a freed DeviceBuffer")
        _ready()
        if stream is self._stream or stream == self._stream:
            return
        if self._uses is None:
            self._uses = (stream,)
        elif stream not in self._uses:
            self._uses += (stream,)

    def free(self):
        """Return the memory to the pool, stream-ordered on the buffer's stream (a second call does nothing)."""
        if not _dev._initialized and self._live:
            _ready()
        with _lock:     # test-and-clear in one step: two threads freeing one buffer free it once
            if not self._live:
                return
            self._live = False
        if self._foreign:
            self._owner = None
            self._uses = None
            return
        if _closing or self._n == 0:
            return
        d = self._dev
        try:
            orig = _enter(d, self._h)
        except BaseException:
            self._live = True
            raise
        try:
            if self._uses:
                _mc.wait_uses(_cudart, self._uses, self._h, d)
            err = _T.cudaFreeAsync(self._ptr, self._h)
        except BaseException:
            self._live = True
            _leave(orig)
            raise
        _leave(orig)
        if err:
            self._live = True
            raise _cudart._error(err)
        self._uses = None
        c = _c[d]
        n = self._n
        with _lock:
            c.bytes -= n
            c.bytes_freed += n
            c.count -= 1
            c.count_freed += 1

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.free()

    def __del__(self):
        if not getattr(self, "_live", False) or _closing or self._n == 0 or self._foreign:
            return
        try:
            self.free()
        except BaseException:  # noqa: BLE001 - nothing to raise to; the memory stays with the pool
            pass

    def __reduce__(self):
        raise _mc.copy_refused(self)

    def copy_from_host(self, array, stream=None):
        """Copy a C-contiguous host array of exactly ``nbytes`` into the buffer (see accel.cuda)."""
        _ready()
        return _mc.copy_from_host(_cudart, self, array, stream)

    def copy_to_host(self, out=None, stream=None):
        """The buffer's bytes in a host array (see accel.cuda)."""
        _ready()
        return _mc.copy_to_host(_cudart, self, out, stream)

    def copy_from(self, other, stream=None):
        """Copy another DeviceBuffer of the same size into this one (see accel.cuda)."""
        _ready()
        return _mc.copy_from(_cudart, self, other, stream)

    def memset(self, value, stream=None):
        """Set every byte to ``value`` (0-255), stream-ordered."""
        _ready()
        return _mc.memset(_cudart, self, value, stream)

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3: a 1-d uint8 array of ``nbytes``, with the buffer's stream."""
        _ready()
        return _mi.cuda_array_interface(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule (versioned 1.x when ``max_version`` allows it) of a 1-d uint8 tensor; ``stream``
        (the consumer's) is made to wait for the work queued on the buffer's stream."""
        _ready()
        return _mi.dlpack(_cudart, self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """``(2, device)``: kDLCUDA."""
        return (_mi.KDLCUDA, self._dev)

    def __repr__(self):
        state = "freed" if not self._live else f"ptr={self._ptr:#x}"
        return f"<accel.cuda.DeviceBuffer nbytes={self._n} device=cuda:{self._dev} {state}>"


_new = object.__new__


def alloc(nbytes, *, device=None, stream=None):
    """``nbytes`` of device memory, allocated stream-ordered on ``stream`` (default: the current stream of
    ``device``, default the current device).  OutOfMemoryError when the pool cannot supply it."""
    if not _dev._initialized:      # one attribute read on the hot path; _ready checks for the hook
        _ready()
    if type(nbytes) is int and 0 <= nbytes < 0x8000000000000000:
        n = nbytes
    else:
        n = _mc.nbytes_arg(nbytes)
    d = _index(device)
    if stream is None:
        s = _current_stream(None if d < 0 else d)
        if d < 0:
            d = s.device_index
    elif isinstance(stream, _Stream):
        s = stream
        if d < 0:
            d = _index(s.device_index)
        elif s.device_index != d:
            raise _mc.stream_device_mismatch(s, d)
    else:
        raise _mc.bad_stream(stream)
    h = s.cuda_stream
    p = c_size_t(0)
    if n:
        c = _c[d]
        pool = c.pool or _pool(d)
        if c.limit and c.bytes + n >= c.limit:
            with _lock:
                c.ooms += 1
            raise _mc.oom_error(_cudart, d, n, c.bytes, c.limit, pool)
        # current_stream(None) made d the runtime's current device: no guard needed then
        orig = -1 if device is None and stream is None else _enter(d, h)
        err = _T.cudaMallocAsync(byref(p), n, h)
        if err:
            if err == _ERR_OOM:
                _T.cudaGetLastError()
                try:
                    exc = _retry(d, h, n, pool, p)
                except BaseException:
                    _leave(orig)
                    raise
            else:
                exc = _cudart._error(err)
            if exc is not None:
                _leave(orig)
                raise exc
        _leave(orig)
        with _lock:
            c.bytes += n
            c.bytes_alloc += n
            if c.bytes > c.bytes_peak:
                c.bytes_peak = c.bytes
            c.count += 1
            c.count_alloc += 1
            if c.count > c.count_peak:
                c.count_peak = c.count
    b = _new(DeviceBuffer)
    b._ptr = p.value or 0
    b._n = n
    b._dev = d
    b._h = h
    b._stream = s
    b._uses = None
    b._live = True
    b._foreign = b._readonly = False
    b._owner = None
    return b


def _dev_arg(device):
    """A statistics function's device: the given one, else the current device (torch's current_device)."""
    d = _index(device)
    if d < 0:
        _c_ensure_init()
        d = _c_get_device()
    return d


def memory_allocated(device=None):
    """Bytes currently allocated by accel on ``device`` (a counter read); 0 while CUDA is not initialised
    (nothing checked or initialised then, as torch)."""
    if not _dev._initialized and _dev._init_hook is not None:     # _c_uninitialized(), inlined: a hot read
        return 0
    return _c[_dev_arg(device)].bytes


def max_memory_allocated(device=None):
    """Peak of memory_allocated since the start or the last reset_peak (0 while CUDA is not initialised)."""
    if not _dev._initialized and _dev._init_hook is not None:     # _c_uninitialized(), inlined: a hot read
        return 0
    return _c[_dev_arg(device)].bytes_peak


def counters(device=None):
    """All counters of ``device`` as a dict (for memory_stats)."""
    c = _c[_dev_arg(device)]
    return {f: getattr(c, f) for f in _FIELDS if f not in ("pool", "limit")}


def pool_handle(device=None):
    """The device's pool (cudaMemPool_t int), warmed (release threshold set) on first use."""
    return _pool(_dev_arg(device))


def reset_peak(device=None):
    """Peaks of the counters back to their current values."""
    c = _c[_dev_arg(device)]
    with _lock:
        c.bytes_peak = c.bytes
        c.count_peak = c.count


def reset_accumulated(device=None):
    """The cumulative counters (allocated / freed totals, retries, OOMs) back to zero."""
    c = _c[_dev_arg(device)]
    with _lock:
        c.bytes_alloc = c.bytes_freed = 0
        c.count_alloc = c.count_freed = 0
        c.retries = c.ooms = 0


def set_limit(nbytes, device=None):
    """Refuse allocations that would take accel's allocated bytes on ``device`` above ``nbytes`` (None: no
    limit); stored as ``nbytes + 1`` (0: none)."""
    n = 0 if nbytes is None else _mc.nbytes_arg(nbytes) + 1
    _c[_dev_arg(device)].limit = n


def get_limit(device=None):
    """The limit set by set_limit (None: none)."""
    n = _c[_dev_arg(device)].limit
    return n - 1 if n else None


def set_index_parser(parser):
    """Register ``parser(obj) -> int | None`` for non-int device arguments; None clears it."""
    global _parse_index
    if parser is not None and not callable(parser):
        raise TypeError(f"parser must be callable or None, got {type(parser).__name__}: {parser!r}")
    _parse_index = parser


def wrap(ptr, nbytes, device, stream, owner, readonly=False):
    """A DeviceBuffer over foreign device memory that ``owner`` keeps alive (for from_dlpack / as_buffer):
    freeing it only drops ``owner``; it is not counted in the statistics.  ``readonly``: refuse writes."""
    b = _new(DeviceBuffer)
    b._ptr = ptr
    b._n = _mc.nbytes_arg(nbytes)
    b._dev = _index(device)
    b._h = stream.cuda_stream
    b._stream = stream
    b._uses = None
    b._live = True
    b._foreign = True
    b._readonly = bool(readonly)
    b._owner = owner
    return b
