"""Pieces shared by the memory twins (accel._native._memory / accel._python._memory), off the hot path.

Both twins import this module so that their slow-path results and messages are the very same: argument
checks, torch's size formatting and out-of-memory message, the record_stream hand-over at free time,
and the copy methods of DeviceBuffer (which are not hot: each is one stream-ordered CUDA call plus checks).
The interop half (CUDA Array Interface, DLPack) is accel._memory_interop.
Every function takes the calling twin's raw binding module (``cudart``) where it calls CUDA.
"""
import operator

from accel import _graph_common as _gc
from accel.errors import OutOfMemoryError

# cudaMemcpyKind, cudaMemPoolAttr, cudaMemoryType, cudaEvent flags
H2D, D2H, D2D = 1, 2, 3
ATTR_RELEASE_THRESHOLD, ATTR_RESERVED, ATTR_RESERVED_HIGH, ATTR_USED, ATTR_USED_HIGH = 4, 5, 6, 7, 8
MEMORY_TYPE_HOST = 1
EVENT_DISABLE_TIMING = 0x2
KEEP_ALL = 2**64 - 1   # the release threshold accel sets on a pool it uses: keep freed memory cached


def nbytes_arg(nbytes):
    """``nbytes`` as a non-negative int (``__index__`` accepted, bool refused)."""
    if isinstance(nbytes, bool) or not hasattr(type(nbytes), "__index__"):
        raise TypeError(f"nbytes must be an int, got {type(nbytes).__name__}: {nbytes!r}")
    n = operator.index(nbytes)
    if n < 0:
        raise ValueError(f"nbytes must be >= 0, got {n}")
    if n >= 2**63:
        raise OverflowError(f"nbytes must be < 2**63, got {n}")
    return n


def bad_device(d, count):
    return ValueError(f"device index {d} is out of range: expected 0 <= device < {count}")


def bad_stream(stream):
    return TypeError(f"stream must be an accel.cuda.Stream (or None for the current stream), "
                     f"got {type(stream).__name__}: {stream!r}")


def stream_device_mismatch(stream, d):
    return ValueError(f"stream {stream!r} is on device {stream.device_index}, not on the requested device {d}")


def format_size(n):
    """torch's format_size: bytes up to 1 KiB, then KiB / MiB / GiB with two decimals."""
    if n <= 1024:
        return f"{n} bytes"
    if n <= 1048576:
        return f"{n / 1024.0:.2f} KiB"
    if n <= 1073741824:
        return f"{n / 1048576.0:.2f} MiB"
    return f"{n / 1073741824.0:.2f} GiB"


def oom_error(cudart, d, nbytes, allocated, limit, pool):
    """The OutOfMemoryError for a failed allocation of ``nbytes`` on device ``d`` (torch's message shape).
    ``limit``: the per-process limit in bytes plus one (0: none)."""
    reserved = used = 0
    if pool:
        try:
            reserved = cudart.cudaMemPoolGetAttribute(pool, ATTR_RESERVED)
            used = cudart.cudaMemPoolGetAttribute(pool, ATTR_USED)
        except Exception:  # noqa: BLE001
            pass
    with _Guard(cudart, d):
        try:
            free, total = cudart.cudaMemGetInfo()
        except Exception:  # noqa: BLE001 - the message does without it
            free = total = 0
    allowed = (f"This process's memory fraction limit allows {format_size(limit - 1)}. " if limit else "")
    msg = (f"CUDA out of memory. Tried to allocate {format_size(nbytes)}. GPU {d} has a total capacity of "
           f"{format_size(total)} of which {format_size(free)} is free. {allowed}Of the allocated memory "
           f"{format_size(allocated)} is allocated by accel, and {format_size(max(reserved - used, 0))} is "
           f"reserved by accel but unallocated.")
    return OutOfMemoryError(msg)


NOT_MADE = ("this {} was made with __new__, bypassing its constructor: it has no device memory (make one with "
            "accel.cuda.alloc / to_device / empty)")


def copy_refused(obj):
    """The TypeError of copy.copy / deepcopy / pickle of an object that owns a CUDA resource (as Stream's)."""
    return TypeError(f"cannot pickle {obj!r}: it owns a CUDA resource of this process that a copy would "
                     f"release twice")


def sync_and_trim(cudart, d, pool):
    """The out-of-memory retry's preparation (torch's): wait for all work of device ``d``, so that the frees
    queued on any of its streams have returned their blocks to the pool, then release the pool's unused
    memory to the device."""
    with _Guard(cudart, d):
        cudart.cudaDeviceSynchronize()
    cudart.cudaMemPoolTrimTo(pool, 0)


def wait_uses(cudart, uses, handle, d):
    """record_stream at free time: make stream ``handle`` (device ``d``, current) wait for the work queued
    so far on every stream in ``uses`` (events, no host synchronisation)."""
    seen = set()
    for s in uses:
        key = (s.device_index, s.cuda_stream)
        if key in seen or key == (d, handle):
            continue
        seen.add(key)
        with _Guard(cudart, s.device_index):
            ev = cudart.cudaEventCreateWithFlags(EVENT_DISABLE_TIMING)
            try:
                cudart.cudaEventRecord(ev, s.cuda_stream)
            except BaseException:
                cudart.cudaEventDestroy(ev)
                raise
        try:
            cudart.cudaStreamWaitEvent(handle, ev, 0)
        finally:
            cudart.cudaEventDestroy(ev)


def sync_uses(cudart, uses):
    """The fallback of a buffer released by the garbage collector whose ``wait_uses`` failed (no event could
    be made or recorded): wait on the host for every stream in ``uses``, so the memory can go back to the
    pool without racing their work (rather than leaking it)."""
    for s in uses:
        with _Guard(cudart, s.device_index):
            cudart.cudaStreamSynchronize(s.cuda_stream)


def stats_dict(c, reserved, reserved_high):
    """torch.cuda.memory_stats keys from a twin's counters ``c`` (a dict) and the pool's reserved bytes."""
    out = {}
    for key, cur, peak, alloc, freed in (
            ("allocated_bytes", "bytes", "bytes_peak", "bytes_alloc", "bytes_freed"),
            ("requested_bytes", "bytes", "bytes_peak", "bytes_alloc", "bytes_freed"),
            ("allocation", "count", "count_peak", "count_alloc", "count_freed")):
        out[f"{key}.all.current"] = c[cur]
        out[f"{key}.all.peak"] = c[peak]
        out[f"{key}.all.allocated"] = c[alloc]
        out[f"{key}.all.freed"] = c[freed]
    out["reserved_bytes.all.current"] = reserved
    out["reserved_bytes.all.peak"] = reserved_high
    out["num_alloc_retries"] = c["retries"]
    out["num_ooms"] = c["ooms"]
    return dict(sorted(out.items()))


# cudart module of a twin -> that twin's internal-guard restore (accel._<twin>._device._guard_restore), its
# Stream class and its current_stream: registered by each memory twin at import
_RESTORE = {}
_STREAM = {}
_CURRENT = {}


def register_twin(cudart, guard_restore, stream_type, current_stream):
    _RESTORE[cudart] = guard_restore
    _STREAM[cudart] = stream_type
    _CURRENT[cudart] = current_stream


class _Guard:
    """Makes device ``d`` the runtime's current device for a call on stream handle ``h`` when ``h`` is a
    default-stream handle (0, 1, 2: "the current device's"); restores it after as c10's internal guards
    do: a failed restore is a RuntimeWarning and the previous device is recorded as the thread's target
    (the logical current device never changes, and the guarded call's outcome stands)."""

    __slots__ = ("cudart", "d", "prev")

    def __init__(self, cudart, d, h=0):
        self.cudart, self.d, self.prev = cudart, d, -1
        if h <= 2:
            prev = cudart.cudaGetDevice()
            if prev != d:
                cudart.cudaSetDevice(d)
                self.prev = prev

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.prev >= 0:
            restore = _RESTORE.get(self.cudart)
            if restore is None:
                self.cudart.cudaSetDevice(self.prev)
            else:
                restore(self.prev)


def _host_view(array, what, writable):
    """(keep-alive object, address, nbytes) of a C-contiguous host buffer (a numpy array of any dtype, or
    any object with the buffer protocol)."""
    import numpy as np

    if isinstance(array, np.ndarray):
        # a subclass's properties (nbytes, ctypes, flags, dtype) are its own code: read the base class's
        array = np.ndarray.view(array, np.ndarray)
        if array.dtype.hasobject:
            raise TypeError(f"{what} must not hold Python objects, got dtype {array.dtype}")
        if not array.flags.c_contiguous:
            raise ValueError(f"{what} must be C-contiguous, got a non-contiguous array of shape {array.shape}")
        if writable and not array.flags.writeable:
            raise ValueError(f"{what} must be writable, got a read-only array")
        return array, (array.ctypes.data if array.nbytes else 0), array.nbytes
    try:
        mv = memoryview(array)
    except TypeError:
        raise TypeError(f"{what} must be a host array (numpy array or another buffer), "
                        f"got {type(array).__name__}") from None
    if "O" in mv.format:
        raise TypeError(f"{what} must not hold Python objects, got a buffer of format {mv.format!r}")
    if not mv.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous, got a non-contiguous array of shape {mv.shape}")
    if writable and mv.readonly:
        raise ValueError(f"{what} must be writable, got a read-only buffer")
    if not mv.nbytes:
        return mv, 0, 0
    flat = np.frombuffer(mv.cast("B"), dtype=np.uint8)
    return flat, flat.ctypes.data, mv.nbytes


def _check_size(buf, nbytes, what):
    if nbytes != buf.nbytes:
        raise ValueError(f"{what} has {nbytes} bytes but the DeviceBuffer has {buf.nbytes}: sizes must match")


def _stream_of(cudart, buf, stream):
    """The stream of a copy / memset: ``stream``, else the current stream of the buffer's device (torch's
    rule: inside ``with stream(s)`` or a capture the work goes there).  Validated as record_stream validates
    it, before anything is queued; recorded on the buffer by _use once the call is queued."""
    if stream is None:
        return _CURRENT[cudart](buf.device.index)
    if not isinstance(stream, _STREAM[cudart]):
        raise bad_stream(stream)
    if stream.device_index != buf.device.index:
        raise stream_device_mismatch(stream, buf.device.index)
    return stream


_NOT_CAPTURING = (0, None)


def capture_of(cudart, buf, s):
    """(cudaStreamCaptureStatus of stream ``s``, the Uses of the accel CUDAGraph capturing it or None)."""
    d = buf.device.index
    with _Guard(cudart, d, s.cuda_stream):
        status, cid = cudart.cudaStreamGetCaptureInfo(s.cuda_stream)
    if not status:
        return _NOT_CAPTURING
    return status, _gc.capture_uses(status, cid)


def _buffer(buf):
    """The DeviceBuffer of a DeviceBuffer or a DeviceArray."""
    return getattr(buf, "buffer", buf)


def _use(buf, s, cap=_NOT_CAPTURING):
    """After work on ``buf`` was queued on ``s``: captured (``cap`` from capture_of), the capture's graph is
    noted on the buffer (its free() makes the graph's replays raise); else record_stream for ``s`` (nothing
    for the buffer's own stream)."""
    if cap[0]:
        if cap[1] is not None:
            b = _buffer(buf)
            b._graph_use(cap[1])
            if b in cap[1].born:
                cap[1].used.add(b)
    elif s is not buf.stream:
        buf.record_stream(s)


def _hold(cap, host, temp, s):
    """A host array that a captured copy node reads or writes at every replay: kept alive with the accel graph
    capturing ``s``; ``temp`` (an array accel made, which nothing else keeps) refused in another capture."""
    if not cap[0]:
        return
    if cap[1] is not None:
        cap[1].held.append(host)
    elif temp:
        raise RuntimeError(_gc.UNKNOWN_CAPTURE_OUT.format(s))


def _live(buf):
    if buf.closed:
        raise ValueError("the DeviceBuffer was freed")


def _writable(buf):
    if buf.readonly:
        raise ValueError("the DeviceBuffer is read-only")


def _pinned(cudart, addr):
    return cudart.cudaPointerGetAttributes(addr)[0] == MEMORY_TYPE_HOST


def copy_from_host(cudart, buf, array, stream):
    """H2D: asynchronous on the stream from pinned memory; from pageable memory the stream is synchronised
    before returning (the host buffer may then be reused at once, as CUDA's pageable copies allow).  In an
    accel capture the host array is kept alive with the graph (its node reads it at every replay)."""
    _live(buf)
    _writable(buf)
    flat, addr, n = _host_view(array, "array", False)
    _check_size(buf, n, "array")
    s = _stream_of(cudart, buf, stream)
    if not n:
        return
    pinned = _pinned(cudart, addr)      # before queuing: a failed query must leave no copy behind
    cap = capture_of(cudart, buf, s)
    _live(buf)                          # again: reading the host array may have run code that freed it
    with _Guard(cudart, buf.device.index, s.cuda_stream):
        cudart.cudaMemcpyAsync(buf.ptr, addr, n, H2D, s.cuda_stream)
    _hold(cap, flat, False, s)
    _use(buf, s, cap)
    if not pinned and not cap[0]:
        # (a pageable copy queued during graph capture is a graph node that reads the host array at each
        # replay, as CUDA captures it: synchronising the capturing stream would be illegal)
        s.synchronize()
    del flat


def copy_to_host(cudart, buf, out, stream, temp=False):
    """D2H into ``out`` (None: a new uint8 numpy array, returned once the copy is done).  Into pinned
    ``out`` the copy is asynchronous (synchronise the stream before reading it); into pageable ``out`` the
    stream is synchronised before returning.  In an accel capture ``out`` is kept alive with the graph (its
    node writes it at every replay); ``temp``: ``out`` is the caller's new array (copy_to_host() without out=)."""
    import numpy as np

    _live(buf)
    if out is None:
        out = np.empty(buf.nbytes, dtype=np.uint8)
        temp = True
    flat, addr, n = _host_view(out, "out", True)
    _check_size(buf, n, "out")
    s = _stream_of(cudart, buf, stream)
    if n:
        pinned = _pinned(cudart, addr)  # before queuing: a failed query must leave no copy behind
        cap = capture_of(cudart, buf, s)
        _hold(cap, flat, temp, s)       # (refused before anything is queued)
        _live(buf)                      # again: reading ``out`` may have run code that freed it
        with _Guard(cudart, buf.device.index, s.cuda_stream):
            cudart.cudaMemcpyAsync(addr, buf.ptr, n, D2H, s.cuda_stream)
        _use(buf, s, cap)
        if not pinned and not cap[0]:
            s.synchronize()
    del flat
    return out


def copy_from(cudart, buf, other, stream):
    """D2D (also across devices), ordered after the work queued so far on ``other``'s stream (outside a
    capture: a captured copy is ordered by the capture's own stream order)."""
    if type(other) is not type(buf):
        raise TypeError(f"other must be a DeviceBuffer, got {type(other).__name__}")
    _live(buf)
    _live(other)
    _writable(buf)
    _check_size(buf, other.nbytes, "other")
    s = _stream_of(cudart, buf, stream)
    if not buf.nbytes:
        return
    h = s.cuda_stream
    d = buf.device.index
    cap = capture_of(cudart, buf, s)
    with _Guard(cudart, d, h):
        if other.stream != s and not cap[0]:
            wait_uses(cudart, [other.stream], h, d)
        cudart.cudaMemcpyAsync(buf.ptr, other.ptr, buf.nbytes, D2D, h)
    _use(buf, s, cap)
    _use(other, s, cap)


def memset(cudart, buf, value, stream):
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"value must be an int byte (0-255), got {type(value).__name__}: {value!r}")
    value = operator.index(value)
    if not 0 <= value <= 255:
        raise ValueError(f"value must be a byte (0-255), got {value}")
    _live(buf)
    _writable(buf)
    s = _stream_of(cudart, buf, stream)
    if buf.nbytes:
        cap = capture_of(cudart, buf, s)
        with _Guard(cudart, buf.device.index, s.cuda_stream):
            cudart.cudaMemsetAsync(buf.ptr, value, buf.nbytes, s.cuda_stream)
        _use(buf, s, cap)
