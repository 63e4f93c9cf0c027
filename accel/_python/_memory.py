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
from ctypes import byref, c_int, c_size_t, c_ulonglong

from accel import _graph_common as _gc
from accel import _memory_array as _ma
from accel import _memory_common as _mc
from accel import _memory_interop as _mi
from accel import _stream_common as _sc
from accel._python import _cudart
from accel._python import _device as _dev
from accel._python import _stream as _stream_mod
from accel._python._device import _c_checked_device_count, _c_ensure_init, _c_get_device, _c_uninitialized


__all__ = ["DeviceBuffer", "DeviceArray", "alloc", "as_array", "memory_allocated", "max_memory_allocated", "counters", "pool_handle",
           "reset_peak", "reset_accumulated", "set_limit", "get_limit", "set_index_parser", "wrap"]

_MAXDEV = 512
_LL = 2**63          # ints beyond a C long long: the general path (as the native twin)
_FAST = 2**31        # |step|, |stride| below this: the fast path of a[i:j:k] (as the native twin)
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
_current_stream = _stream_mod.current_stream
_mc.register_twin(_cudart, _dev._guard_restore, _Stream, _current_stream)


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


def _in_capture(h):
    """The id of the capture stream handle ``h`` is in (for a free that a graph's buffer saw, an allocation
    while an accel capture is open); 0 when it is not capturing or when unknown."""
    st, cid = c_int(0), c_ulonglong(0)
    if _T is None or _T.cudaStreamGetCaptureInfo(h, byref(st), byref(cid), None, None, None, None):
        if _T is not None:
            _T.cudaGetLastError()
        return 0
    return cid.value or 1 if st.value else 0


def _retry(d, h, n, pool, out):
    c = _c[d]
    if _in_capture(h) or _gc.captures_open():
        # torch's rule: no synchronising release while a capture is under way (it would invalidate it)
        with _lock:
            c.ooms += 1
        return _mc.oom_error(_cudart, d, n, c.bytes, c.limit, pool)
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
                 "_graphs", "_pins", "__weakref__")

    def __new__(cls, *args, **kwargs):
        # made with __new__ alone (alloc / wrap use object.__new__): a closed buffer of no device, as the
        # compiled twin's C fields
        b = _new(cls)
        b._ptr = b._n = b._h = b._pins = 0
        b._dev = -1
        b._stream = b._uses = b._owner = b._graphs = None
        b._live = b._foreign = b._readonly = False
        return b

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
        if self._dev < 0:
            raise ValueError(_mc.NOT_MADE.format("DeviceBuffer"))
        return _sc.cuda_device(self._dev)

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
        """Return the memory to the pool, stream-ordered on the buffer's stream (a second call does nothing).
        While a DLPack consumer still holds an export of it, the buffer is closed at once and its memory
        released by the last consumer's deleter (as CuPy and torch)."""
        if not _dev._initialized and self._live:
            _ready()
        with _lock:     # test-and-clear in one step: two threads freeing one buffer free it once
            if not self._live:
                return
            self._live = False
            if self._pins:
                deferred = True
            else:
                deferred = False
        if not deferred:
            self._release()
        if self._graphs:
            graphs = self._graphs
            self._graphs = None
            _gc.buffer_freed(graphs, _in_capture(self._h), self)

    def _release(self):
        """free()'s release of the memory (the buffer already closed); on failure it is open again."""
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

    def _pin(self):
        """A DLPack export of the buffer was made: free() leaves the memory to the last export's deleter."""
        with _lock:
            self._pins += 1

    def _unpin(self):
        """A DLPack export's deleter ran: the memory goes once the buffer was freed and no export is left."""
        with _lock:
            self._pins -= 1
            release = not self._pins and not self._live
        if release:
            try:
                self._release()
            except BaseException:  # noqa: BLE001 - a deleter has no caller: the buffer is open again, freed by its collection
                pass

    def _graph_use(self, uses):
        """A capture's copy or memset used this buffer (accel._graph_common.Uses): free() marks its graph."""
        g = self._graphs
        if g is None:
            self._graphs = (uses,)
        elif uses not in g:
            self._graphs = tuple(u for u in g if u.live) + (uses,)

    def __enter__(self):
        """Returns the buffer; the ``with`` block frees it on exit."""
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        """free() the buffer; exceptions propagate."""
        self.free()

    def __del__(self):
        if not getattr(self, "_live", False) or _closing or self._n == 0 or self._foreign:
            return
        try:
            self.free()
        except BaseException:  # noqa: BLE001 - nothing to raise to
            if self._live and self._uses:
                # the streams it was recorded on could not be waited for with events: wait on the host, then
                # free it (else the memory would leak)
                try:
                    _mc.sync_uses(_cudart, self._uses)
                    self._uses = None
                    self.free()
                except BaseException:  # noqa: BLE001 - the memory stays with the pool
                    pass

    def __reduce__(self):
        """Refused (TypeError): a copy would release the device memory twice."""
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
        if self._dev < 0:
            raise ValueError(_mc.NOT_MADE.format("DeviceBuffer"))
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
        cid = _in_capture(h) if _gc._open else 0     # graph memory of an accel capture (its Uses' born)
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
    b._owner = b._graphs = None
    b._pins = 0
    if n and cid:
        _gc.note_alloc(1, cid, b)
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
    b._graphs = None
    b._pins = 0
    return b


class DeviceArray:
    """A typed view (numpy dtype, shape, byte strides) over the memory of a DeviceBuffer, which it keeps
    alive: what ``to_device`` / ``empty`` / ``from_dlpack`` return, exported with its dtype, shape and
    strides over DLPack and the CUDA Array Interface.  Basic indexing, ``reshape``, ``view(dtype)`` and
    ``.T`` make views of the same memory; ``free()`` frees the buffer (and so every view of it)."""

    __slots__ = ("_buf", "_ptr", "_dtype", "_shape", "_strides", "_itemsize", "__weakref__")

    def __new__(cls, *args, **kwargs):
        # made with __new__ alone (_make uses object.__new__): over a closed buffer of no device, as the
        # compiled twin's
        a = _new(cls)
        a._buf = _UNMADE
        a._ptr = a._itemsize = 0
        a._dtype = a._shape = a._strides = None
        return a

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceArray cannot be created directly: use accel.cuda.to_device(array) or "
                        "accel.cuda.empty(shape, dtype)")

    @property
    def ptr(self):
        """The device address of element 0 (int)."""
        return self._ptr

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    @property
    def strides(self):
        """Bytes between consecutive elements of each dimension (numpy's strides; may be negative)."""
        return self._strides

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        n = 1
        for s in self._shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self._itemsize

    @property
    def nbytes(self):
        """size * itemsize (the bytes of the elements, not of the span of a strided view)."""
        return self.size * self._itemsize

    @property
    def device(self):
        if self._buf._dev < 0:
            raise ValueError(_mc.NOT_MADE.format("DeviceArray"))
        return _sc.cuda_device(self._buf._dev)

    @property
    def stream(self):
        """The stream of the buffer (the default stream of copies and exports)."""
        return self._buf._stream

    @property
    def buffer(self):
        """The DeviceBuffer whose memory this views (kept alive by the array)."""
        return self._buf

    @property
    def readonly(self):
        return self._buf._readonly

    @property
    def closed(self):
        """True once the buffer was freed."""
        return not self._buf._live

    @property
    def T(self):
        """The transposed view (shape and strides reversed)."""
        return _make(self._buf, self._ptr, self._dtype, self._shape[::-1], self._strides[::-1], self._itemsize)

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def __iter__(self):
        """The views ``a[0]``, ``a[1]``, ... (numpy's iteration: a 0-d array is a TypeError)."""
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._shape[0]))

    def __contains__(self, value):
        raise TypeError("a DeviceArray is device memory: use copy_to_host() to test membership")

    def __bool__(self):
        """numpy's truth value: the one element's (read from the device), else a ValueError."""
        n = self.size
        if n != 1:
            raise ValueError(f"The truth value of a DeviceArray with {n} elements is ambiguous (numpy's rule: "
                             f"exactly one element has a truth value)")
        return bool(self.copy_to_host())

    def __getitem__(self, key):
        """A view for basic indexing (ints, slices with any step, ..., None), as numpy's."""
        if not self._buf._live:
            raise ValueError("the DeviceArray was freed")
        shape = self._shape
        nd = len(shape)
        if nd and type(key) is int and -_LL <= key < _LL:
            n = shape[0]
            i = key + n if key < 0 else key
            if not 0 <= i < n:
                raise _ma.out_of_bounds(key, 0, n)
            return _make(self._buf, self._ptr + i * self._strides[0], self._dtype, shape[1:], self._strides[1:],
                         self._itemsize)
        elif nd and type(key) is slice:
            start, stop, step = key.indices(shape[0])
            st = self._strides[0]
            if -_FAST < step < _FAST and -_FAST < st < _FAST:
                n = len(range(start, stop, step))
                if not n:
                    start, step = 0, 1      # numpy's empty slice: element 0 at the start, the axis's stride
                return _make(self._buf, self._ptr + start * st, self._dtype, (n,) + shape[1:],
                             (st * step,) + self._strides[1:], self._itemsize)
        elif nd and type(key) is tuple and len(key) <= nd:
            view = _tuple_view(self, key)
            if view is not None:
                return view
        off, shape, strides = _ma.index(shape, self._strides, self._itemsize, key)
        return _make(self._buf, self._ptr + off, self._dtype, shape, strides, self._itemsize)

    def reshape(self, *shape):
        """A view of another shape (-1: inferred) with the same elements in C order; ValueError when the
        layout needs a copy."""
        shape, strides = _ma.reshape(self._shape, self._strides, self._itemsize, shape)
        return _make(self._buf, self._ptr, self._dtype, shape, strides, self._itemsize)

    def view(self, dtype):
        """The same bytes as ``dtype`` (numpy's view: another item size needs a contiguous last axis)."""
        dt = _ma.dtype_arg(dtype)
        shape, strides = _ma.view(self._shape, self._strides, self._dtype, dt)
        return _make(self._buf, self._ptr, dt, shape, strides, dt.itemsize)

    def record_stream(self, stream):
        """The buffer's record_stream (see DeviceBuffer)."""
        return self._buf.record_stream(stream)

    def free(self):
        """Free the buffer (see DeviceBuffer.free): every view of it is then closed."""
        return self._buf.free()

    def __enter__(self):
        """Returns the array; the ``with`` block frees its buffer on exit."""
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        """free() the array's buffer; exceptions propagate."""
        self._buf.free()

    def __reduce__(self):
        """Refused (TypeError): a copy would release the device memory twice."""
        raise _mc.copy_refused(self)

    def copy_to_host(self, out=None, stream=None):
        """The elements in a host array of the same dtype and shape (``out``: C-contiguous, same dtype and
        number of elements); see accel.cuda."""
        _ready()
        if out is None and self._buf._live and _whole(self):
            # the whole buffer, C-contiguous: the buffer's copy into an array of the right type
            return _mc.copy_to_host(_cudart, self._buf, _np().empty(self._shape, self._dtype), stream, True)
        return _ma.copy_to_host(_cudart, self, out, stream)

    def copy_from_host(self, array, stream=None):
        """Copy a host array of the same dtype and shape into the array (see accel.cuda)."""
        _ready()
        if (self._buf._live and not self._buf._readonly and type(array) is _np().ndarray and _whole(self)
                and array.shape == self._shape and array.dtype == self._dtype):
            return self._buf.copy_from_host(array, stream)
        return _ma.copy_from_host(_cudart, self, array, stream)

    def copy_from(self, other, stream=None):
        """Copy another DeviceArray of the same dtype and shape into this one (both C-contiguous; memory
        partially overlapping this one's is a ValueError)."""
        _ready()
        return _ma.copy_from(_cudart, self, other, stream)

    def memset(self, value, stream=None):
        """Set every byte of a C-contiguous array to ``value`` (0-255), stream-ordered."""
        _ready()
        return _ma.memset(_cudart, self, value, stream)

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3 with the array's typestr, shape and strides, and its buffer's stream."""
        _ready()
        return _mi.array_interface(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule (versioned 1.x when ``max_version`` allows it) with the array's dtype, shape and
        strides; ``stream`` (the consumer's) is made to wait for the work queued on the buffer's stream."""
        _ready()
        return _mi.dlpack(_cudart, self, stream, max_version, dl_device, copy, True)

    def __dlpack_device__(self):
        """``(2, device)``: kDLCUDA."""
        if self._buf._dev < 0:
            raise ValueError(_mc.NOT_MADE.format("DeviceArray"))
        return (_mi.KDLCUDA, self._buf._dev)

    def __array__(self, dtype=None, copy=None):
        """Refused: numpy would read the array as a sequence of 0-d views (CuPy and torch refuse too)."""
        raise TypeError("a DeviceArray is device memory: use copy_to_host() for a numpy array")

    def __repr__(self):
        state = "freed" if not self._buf._live else f"ptr={self._ptr:#x}"
        return (f"<accel.cuda.DeviceArray shape={self._shape} dtype={self._dtype} device=cuda:{self._buf._dev} "
                f"{state}>")


_UNMADE = DeviceBuffer.__new__(DeviceBuffer)     # the buffer of a DeviceArray made by __new__
_numpy = None


def _np():
    global _numpy
    if _numpy is None:
        import numpy
        _numpy = numpy
    return _numpy


def _whole(a):
    """C-contiguous and exactly its buffer (to_device's, empty's): copies are the buffer's own."""
    if a._ptr != a._buf._ptr:
        return False
    expect = a._itemsize
    for dim, st in zip(reversed(a._shape), reversed(a._strides)):
        if dim != 1 and st != expect:
            return False
        expect *= dim
    return expect == a._buf._n


def _tuple_view(a, key):
    """``a[key]`` for a tuple of ints and slices (no more than ``a.ndim``), or None for the general path (the
    native twin's rules: another index, an int beyond a C long long, a step or stride of 2**31 or more)."""
    shape = []
    strides = []
    off = 0
    for k, item in enumerate(key):
        dim = a._shape[k]
        st = a._strides[k]
        if type(item) is int:
            if not -_LL <= item < _LL:
                return None
            i = item + dim if item < 0 else item
            if not 0 <= i < dim:
                raise _ma.out_of_bounds(item, k, dim)
            off += i * st
        elif type(item) is slice:
            start, stop, step = item.indices(dim)
            if not (-_FAST < step < _FAST and -_FAST < st < _FAST):
                return None
            n = len(range(start, stop, step))
            if not n:
                start, step = 0, 1
            off += start * st
            shape.append(n)
            strides.append(st * step)
        else:
            return None     # (the items before it were ints and slices: an error so far named numpy's axis)
    nk = len(key)
    return _make(a._buf, a._ptr + off, a._dtype, tuple(shape) + a._shape[nk:], tuple(strides) + a._strides[nk:],
                 a._itemsize)


def _make(buf, ptr, dtype, shape, strides, itemsize):
    a = _new(DeviceArray)
    a._buf = buf
    a._ptr = ptr
    a._dtype = dtype
    a._shape = shape
    a._strides = strides
    a._itemsize = itemsize
    return a


def as_array(buf, dtype, shape, strides=None, offset=0):
    """A DeviceArray of ``dtype`` / ``shape`` / byte ``strides`` (None: C-contiguous) viewing ``buf``'s memory
    from byte ``offset`` (element 0's); ValueError when the layout reaches outside the buffer."""
    if type(buf) is not DeviceBuffer:
        raise TypeError(f"buf must be a DeviceBuffer, got {type(buf).__name__}")
    if strides is None and type(offset) is int and offset == 0 and type(shape) is tuple and len(shape) <= 64:
        # to_device's and empty's case: a numpy dtype, a tuple of ints, C-contiguous (as the native twin)
        dt = dtype
        if isinstance(dt, _np().dtype) and dt.itemsize and not dt.hasobject and dt.subdtype is None:
            n = dt.itemsize
            st = [0] * len(shape)
            for k in range(len(shape) - 1, -1, -1):
                d = shape[k]
                if type(d) is not int or d <= 0 or d >= _FAST:
                    break
                st[k] = n
                n *= d
            else:
                if n <= buf._n:
                    return _make(buf, buf._ptr, dt, shape, tuple(st), dt.itemsize)
    dt = _ma.dtype_arg(dtype)
    shape = _ma.shape_arg(shape)
    strides = _ma.c_strides(shape, dt.itemsize) if strides is None else _ma.strides_arg(strides)
    offset = _ma.offset_arg(offset)
    _ma.check_view(buf._n, offset, shape, strides, dt.itemsize)
    return _make(buf, buf._ptr + offset, dt, shape, strides, dt.itemsize)
