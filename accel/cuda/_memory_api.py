"""Device memory: torch.cuda.memory's names over CUDA's stream-ordered allocator (accel._impl's twin).

``alloc`` / ``DeviceBuffer`` / ``DeviceArray`` and the counter reads are the twin's own objects (no wrapper
layer).  A ``DeviceBuffer`` is bytes; a ``DeviceArray`` (from ``to_device``, ``empty``, ``zeros``,
``empty_like``, ``from_dlpack``, ``as_buffer``) is a typed view over one: numpy dtype, shape and byte strides,
views by basic indexing / ``reshape`` / ``view(dtype)`` / ``.T``, exported with its layout over DLPack and the
CUDA Array Interface.  Copies are methods of both:

- ``copy_from_host(array, stream=None)``: host -> device.  Asynchronous on the stream when ``array``
  is pinned (``pinned_empty``, ``host_register``); from pageable memory it synchronises the stream
  before returning, so the array may be reused at once.  A DeviceBuffer takes any C-contiguous array of
  exactly ``nbytes``; a DeviceArray one of its dtype and shape (into a strided view: one copy per
  contiguous run, synchronised).
- ``copy_to_host(out=None, stream=None)``: device -> host.  With ``out=None`` a new numpy array (uint8 for a
  buffer; the array's dtype and shape for a DeviceArray) is returned after the copy is done.  Into a given
  pinned ``out`` the copy is asynchronous: synchronise the stream before reading it; into a pageable
  ``out`` it is synchronous.  A strided DeviceArray reads the bytes it spans and gathers them (synchronous).
- ``copy_from(other, stream=None)``: device -> device, also across devices, ordered after the work
  queued so far on ``other``'s stream (DeviceArrays: the same dtype and shape, both C-contiguous, not
  partially overlapping).
- ``memset(byte, stream=None)`` (a DeviceArray: C-contiguous).

``stream`` defaults to the current stream of the buffer's device (torch's rule: inside ``with stream(s)`` or
``with graph(g)`` the work goes there); a copy on a stream other than the buffer's own records that stream on
the buffer (``record_stream``), so the memory is not reused before the copy ran.  In a capture begun by an
accel CUDAGraph the graph keeps the host arrays of its copy nodes alive, and freeing a buffer its nodes use
makes its replays raise CudaError (nothing queued).
"""
import atexit
import operator
import threading
import warnings

from accel import _impl
from accel import _memory_array as _ma
from accel import _memory_common as _mc
from accel import _memory_interop as _mi
from accel.cuda._init import _is_in_bad_fork, _lazy_init, is_initialized
from accel.cuda._utils import _get_device_index
from accel.errors import OutOfMemoryError

_memory = _impl.module("_memory")

__all__ = ["DeviceBuffer", "DeviceArray", "alloc", "to_device", "empty", "zeros", "empty_like", "from_dlpack",
           "as_buffer", "pinned_empty", "host_register", "HostRegistration",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_stats", "memory_summary", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
           "empty_cache", "set_per_process_memory_fraction", "get_per_process_memory_fraction",
           "OutOfMemoryError", "memory_stats_as_nested_dict", "memory_cached", "max_memory_cached",
           "reset_max_memory_allocated", "reset_max_memory_cached"]

DeviceBuffer = _memory.DeviceBuffer
DeviceArray = _memory.DeviceArray
alloc = _memory.alloc
memory_allocated = _memory.memory_allocated
max_memory_allocated = _memory.max_memory_allocated


def _parse_device(device):
    return _get_device_index(device, optional=True)


_memory.set_index_parser(_parse_device)


def _cudart():
    mod = _impl.cudart
    mod.load()
    return mod


def _host_cudart():
    """The runtime for a page-locked host memory call, after torch's lazy init (which refuses a forked child
    of a process that used CUDA with torch's error, as pinned memory does in torch)."""
    _lazy_init()
    return _impl.cudart


def _device(device):
    """A memory function's device index (None: the current device), refused out of range with the twins'
    message (as memory_allocated refuses it)."""
    d = _get_device_index(device, optional=True)
    if d is None:
        return _cudart().cudaGetDevice()
    from accel.cuda import device_count

    n = device_count()
    if not 0 <= d < n:
        raise _mc.bad_device(d, n)
    return d


def to_device(array, device=None, stream=None):
    """A new DeviceArray with the dtype, shape and elements of the C-contiguous host ``array`` (a numpy
    array, or any object with the buffer protocol), allocated and copied on ``stream`` (default: the current
    stream of ``device``); see copy_from_host."""
    _, _, n = _mc._host_view(array, "array", False)
    host = _ma._host_array(array, "array")
    dtype = _ma.dtype_arg(host.dtype)
    shape = host.shape
    buf = alloc(n, device=device, stream=stream)
    try:
        buf.copy_from_host(array, stream=buf.stream)
        return _memory.as_array(buf, dtype, shape)
    except BaseException:
        buf.free()
        raise


def empty(shape, dtype="float64", device=None, stream=None):
    """An uninitialised C-contiguous DeviceArray of ``shape`` (an int or a tuple) and ``dtype`` (numpy's
    default float64), allocated stream-ordered on ``stream`` (default: the current stream of ``device``)."""
    dt = _ma.dtype_arg(dtype)
    shape = _ma.shape_arg(shape)
    n = dt.itemsize
    for s in shape:
        n *= s
    if n >= 2**63:
        raise ValueError(f"a DeviceArray of shape {shape} and dtype {dt} would hold {n} bytes (at most 2**63 - 1)")
    return _memory.as_array(alloc(n, device=device, stream=stream), dt, shape)


def zeros(shape, dtype="float64", device=None, stream=None):
    """``empty(...)`` with every byte set to 0 (cudaMemsetAsync on the array's stream)."""
    a = empty(shape, dtype, device=device, stream=stream)
    try:
        a.memset(0, stream=a.stream)
    except BaseException:
        a.free()
        raise
    return a


def empty_like(a, dtype=None, shape=None, device=None, stream=None):
    """An uninitialised C-contiguous DeviceArray with the dtype and shape of ``a`` (a DeviceArray, a numpy
    array or anything with ``dtype`` and ``shape``) unless given; on ``a``'s device when it is a
    DeviceArray, else on ``device``."""
    if not hasattr(a, "dtype") or not hasattr(a, "shape"):
        raise TypeError(f"empty_like needs an array with dtype and shape, got {type(a).__name__}")
    if device is None and isinstance(a, DeviceArray):
        device = a.device.index
    return empty(a.shape if shape is None else shape, a.dtype if dtype is None else dtype, device=device,
                 stream=stream)


def from_dlpack(obj):
    """A DeviceArray with the dtype, shape and strides of the CUDA memory of a DLPack producer
    (``__dlpack__`` / ``__dlpack_device__``: torch, CuPy, JAX, ...), without a copy; it keeps the producer's
    tensor alive (and is read-only when the producer says so).  The producer's pending work is ordered
    before the current stream of the tensor's device."""
    return _mi.from_dlpack(_memory, _impl.module("_stream"), obj, True)


def as_buffer(obj):
    """A DeviceArray over ``obj``'s CUDA memory without a copy, with its dtype, shape and strides:
    ``__cuda_array_interface__`` (v3 streams honoured, read-only flag kept) when ``obj`` has it, else
    DLPack.  Keeps ``obj`` alive until freed (``.buffer`` is its memory as a DeviceBuffer)."""
    return _mi.as_buffer(_cudart(), _memory, _impl.module("_stream"), obj, True)


def memory_reserved(device=None):
    """Bytes the device's pool holds from the device (in use or cached): cudaMemPoolAttrReservedMemCurrent.
    0 while CUDA is not initialised (nothing checked or initialised then, as torch)."""
    if not is_initialized():
        return 0
    return _cudart().cudaMemPoolGetAttribute(_memory.pool_handle(device), _mc.ATTR_RESERVED)


def max_memory_reserved(device=None):
    """Peak of memory_reserved (cudaMemPoolAttrReservedMemHigh) since the last reset_peak_memory_stats; 0
    while CUDA is not initialised."""
    if not is_initialized():
        return 0
    return _cudart().cudaMemPoolGetAttribute(_memory.pool_handle(device), _mc.ATTR_RESERVED_HIGH)


def reset_peak_memory_stats(device=None):
    """Reset the peaks: accel's counters and the pool's high watermarks."""
    pool = _memory.pool_handle(device)
    _memory.reset_peak(device)
    rt = _cudart()
    rt.cudaMemPoolSetAttribute(pool, _mc.ATTR_RESERVED_HIGH, 0)
    rt.cudaMemPoolSetAttribute(pool, _mc.ATTR_USED_HIGH, 0)


def reset_accumulated_memory_stats(device=None):
    """Reset the cumulative counters (``*.allocated``, ``*.freed``, ``num_alloc_retries``, ``num_ooms``)."""
    _memory.reset_accumulated(device)


def memory_stats(device=None):
    """torch.cuda.memory_stats's keys for what accel knows, sorted: ``allocated_bytes.all.*`` /
    ``requested_bytes.all.*`` (bytes accel allocated), ``allocation.all.*`` (buffers),
    ``reserved_bytes.all.current`` / ``.peak`` (the pool's), ``num_alloc_retries``, ``num_ooms``.
    ``{}`` while CUDA is not initialised (nothing checked or initialised then, as torch)."""
    if not is_initialized():
        return {}
    pool = _memory.pool_handle(device)
    rt = _cudart()
    return _mc.stats_dict(_memory.counters(device), rt.cudaMemPoolGetAttribute(pool, _mc.ATTR_RESERVED),
                          rt.cudaMemPoolGetAttribute(pool, _mc.ATTR_RESERVED_HIGH))


def memory_stats_as_nested_dict(device=None):
    """``memory_stats(device)`` nested by its dotted keys, as torch's: ``{"allocated_bytes": {"all":
    {"current": ...}}, "num_ooms": ...}``."""
    nested = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def memory_cached(device=None):
    """Deprecated torch name of ``memory_reserved`` (FutureWarning, as torch)."""
    warnings.warn("torch.cuda.memory_cached has been renamed to torch.cuda.memory_reserved", FutureWarning,
                  stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated torch name of ``max_memory_reserved`` (FutureWarning, as torch)."""
    warnings.warn("torch.cuda.max_memory_cached has been renamed to torch.cuda.max_memory_reserved",
                  FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def reset_max_memory_allocated(device=None):
    """Deprecated torch name: calls ``reset_peak_memory_stats`` (FutureWarning, as torch)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, "
                  "which resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated torch name: calls ``reset_peak_memory_stats`` (FutureWarning, as torch)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, "
                  "which resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device)


def memory_summary(device=None, abbreviated=False):
    """A table of memory_stats, laid out like torch.cuda.memory_summary."""
    d = _device(device)
    s = memory_stats(d)
    f = _mc.format_size
    width = 75
    rows = [("Allocated memory", "allocated_bytes", f), ("Requested memory", "requested_bytes", f),
            ("Allocations", "allocation", str)]
    lines = ["=" * width,
             f" accel CUDA memory summary, device ID {d:<3d}|  (stream-ordered pool: cudaMallocAsync)".ljust(width),
             "-" * width,
             f"  num_alloc_retries: {s['num_alloc_retries']:<8d} num_ooms: {s['num_ooms']:<8d}",
             "=" * width,
             f"{'Metric':<24s}| {'Cur Usage':>11s} | {'Peak Usage':>11s} | {'Tot Alloc':>11s} | {'Tot Freed':>11s}",
             "-" * width]
    for title, key, fmt in rows:
        lines.append(f"{title:<24s}| {fmt(s[key + '.all.current']):>11s} | {fmt(s[key + '.all.peak']):>11s} | "
                     f"{fmt(s[key + '.all.allocated']):>11s} | {fmt(s[key + '.all.freed']):>11s}")
        lines.append("-" * width)
    lines.append(f"{'Reserved memory (pool)':<24s}| {f(s['reserved_bytes.all.current']):>11s} | "
                 f"{f(s['reserved_bytes.all.peak']):>11s} | {'':>11s} | {'':>11s}")
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


def empty_cache():
    """Release the memory the current device's pool holds unused (cudaMemPoolTrimTo(pool, 0)); nothing while
    CUDA is not initialised (as torch)."""
    if is_initialized():
        _cudart().cudaMemPoolTrimTo(_memory.pool_handle(None), 0)


def set_per_process_memory_fraction(fraction, device=None):
    """Limit accel's allocations on ``device`` to ``fraction`` of its total memory (checked by accel before
    calling CUDA; beyond it, OutOfMemoryError).  ``fraction`` in [0, 1]."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise TypeError(f"Invalid type for fraction argument, must be `float`, got {type(fraction).__name__}")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    d = _device(device)
    from accel.cuda import get_device_properties

    total = get_device_properties(d).total_memory
    _memory.set_limit(int(fraction * total) if fraction < 1 else None, d)
    _fractions[d] = float(fraction)


_fractions = {}


def get_per_process_memory_fraction(device=None):
    """The fraction set by set_per_process_memory_fraction (1.0 when none)."""
    return _fractions.get(_device(device), 1.0)


# -- pinned host memory ------------------------------------------------------------------------------------

class _PinnedHost:
    """Owns a cudaHostAlloc block of ``nbytes``, exposed as a 1-d uint8 array; numpy arrays over it keep it
    alive (their ``base``)."""

    __slots__ = ("ptr", "nbytes", "__array_interface__", "__weakref__")

    def __init__(self, nbytes):
        self.ptr = 0
        self.ptr = _host_cudart().cudaHostAlloc(nbytes, 0) if nbytes else 0
        self.nbytes = nbytes
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                                    "version": 3}

    def __repr__(self):
        return f"<accel.cuda._PinnedHost nbytes={self.nbytes} ptr={self.ptr:#x}>"

    def __reduce__(self):
        raise _mc.copy_refused(self)

    def __del__(self):
        ptr, self.ptr = self.ptr, 0
        # in a forked child the block is the parent's: CUDA cannot be used there (the emulator's
        # cudaFreeHost would wait for streams whose workers the child does not have)
        if ptr and not _at_exit() and not _is_in_bad_fork():
            try:
                _impl.cudart.cudaFreeHost(ptr)
            except Exception:  # noqa: BLE001 - nothing to raise to at garbage collection
                pass


_exiting = []
atexit.register(_exiting.append, True)   # pinned blocks alive at exit are left to the process's end


def _at_exit():
    return bool(_exiting)


def pinned_empty(shape, dtype="uint8"):
    """An uninitialised numpy array of ``shape`` / ``dtype`` in page-locked memory (cudaHostAlloc), freed
    when the array (and every view of it) is gone.  Copies from and to it are asynchronous."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise TypeError(f"pinned_empty cannot hold Python objects (dtype {dtype})")
    shape = (_shape_entry(shape),) if not isinstance(shape, (tuple, list)) else tuple(
        _shape_entry(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    n = dtype.itemsize
    for s in shape:
        n *= s
    if n == 0:
        return np.empty(shape, dtype)
    # numpy lays out the dtype (a subarray dtype adds dimensions, an aligned struct keeps its padding) over
    # the raw block exactly as np.empty would
    return np.ndarray(shape, dtype, buffer=np.asarray(_PinnedHost(n)))


def _shape_entry(x):
    if isinstance(x, bool):
        raise TypeError(f"shape entries must be ints, got bool: {x!r}")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"shape entries must be ints, got {type(x).__name__}: {x!r}") from None


class HostRegistration:
    """An existing host array page-locked with cudaHostRegister (from ``host_register``); unregistered by
    ``unregister()``, by leaving a ``with`` block, or when garbage collected.  Keeps the array alive."""

    __slots__ = ("array", "ptr", "nbytes", "_export", "__weakref__")

    def __init__(self, array):
        self.ptr = 0
        keep, ptr, n = _mc._host_view(array, "array", False)
        if n == 0:
            raise ValueError("host_register needs a non-empty array")
        _host_cudart().cudaHostRegister(ptr, n, 0)
        # the buffer export (numpy's view of it) is held while registered: the memory cannot be resized
        # or released under the registration (a bytearray refuses to resize while exported)
        self.array, self.ptr, self.nbytes, self._export = array, ptr, n, keep

    @property
    def registered(self):
        return self.ptr != 0

    def unregister(self):
        """cudaHostUnregister (a second call does nothing; after a failed one the array stays registered)."""
        with _host_lock:    # the test and the clear as one step: threads racing here unregister once
            if self.ptr:
                _host_cudart().cudaHostUnregister(self.ptr)
                self.ptr = 0
                self._export = None

    def __repr__(self):
        state = f"ptr={self.ptr:#x}" if self.ptr else "unregistered"
        return f"<accel.cuda.HostRegistration nbytes={getattr(self, 'nbytes', 0)} {state}>"

    def __reduce__(self):
        raise _mc.copy_refused(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unregister()

    def __del__(self):
        if getattr(self, "ptr", 0) and not _at_exit():
            try:
                self.unregister()
            except Exception:  # noqa: BLE001
                pass


_host_lock = threading.RLock()     # RLock: a collection inside unregister may unregister another one


def host_register(array):
    """Page-lock the memory of the C-contiguous host ``array`` (cudaHostRegister) so that copies from and
    to it are asynchronous; returns the HostRegistration (keep it, or use it as a context manager)."""
    return HostRegistration(array)

