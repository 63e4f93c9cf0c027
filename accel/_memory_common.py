"""Pieces shared by the memory twins (accel._native._memory / accel._python._memory), off the hot path.

Both twins import this module so that their slow-path results and messages are the very same: argument
checks, torch's size formatting and out-of-memory message, the record_stream hand-over at free time,
and the copy methods of DeviceBuffer (which are not hot: each is one stream-ordered CUDA call plus checks).
Every function takes the calling twin's raw binding module (``cudart``) where it calls CUDA.
"""
import operator

from accel.errors import OutOfMemoryError

# cudaMemcpyKind, cudaMemPoolAttr, cudaMemoryType, cudaEvent flags
H2D, D2H, D2D = 1, 2, 3
ATTR_RELEASE_THRESHOLD, ATTR_RESERVED, ATTR_RESERVED_HIGH, ATTR_USED, ATTR_USED_HIGH = 4, 5, 6, 7, 8
MEMORY_TYPE_HOST = 1
EVENT_DISABLE_TIMING = 0x2
ERR_MEMORY_ALLOCATION = 2
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


def wait_uses(cudart, uses, handle, d):
    """record_stream at free time: make stream ``handle`` (device ``d``, current) wait for the work queued
    so far on every stream in ``uses`` (events, no host synchronisation)."""
    seen = set()
    for s in uses:
        key = (s.device_index, s.cuda_stream)
        if key in seen or key == (d, handle):
            continue
        seen.add(key)
        prev = cudart.cudaGetDevice()
        if prev != s.device_index:
            cudart.cudaSetDevice(s.device_index)
        try:
            ev = cudart.cudaEventCreateWithFlags(EVENT_DISABLE_TIMING)
            try:
                cudart.cudaEventRecord(ev, s.cuda_stream)
            finally:
                if prev != s.device_index:
                    cudart.cudaSetDevice(prev)
            try:
                cudart.cudaStreamWaitEvent(handle, ev, 0)
            finally:
                cudart.cudaEventDestroy(ev)
        finally:
            if cudart.cudaGetDevice() != prev:
                cudart.cudaSetDevice(prev)


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


class _Guard:
    """Makes device ``d`` the runtime's current device for a call on stream handle ``h`` when ``h`` is a
    default-stream handle (0, 1, 2: "the current device's"); restores it after."""

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
            self.cudart.cudaSetDevice(self.prev)


def _host_view(array, what, writable):
    """(keep-alive object, address, nbytes) of a C-contiguous host buffer (a numpy array of any dtype, or
    any object with the buffer protocol)."""
    import numpy as np

    if isinstance(array, np.ndarray):
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


def _stream_of(buf, stream):
    if stream is None:
        return buf.stream
    if not (hasattr(stream, "cuda_stream") and hasattr(stream, "device_index")) or isinstance(stream, type):
        raise bad_stream(stream)
    if stream.device_index != buf.device.index:
        raise stream_device_mismatch(stream, buf.device.index)
    if stream != buf.stream:
        buf.record_stream(stream)
    return stream


def _live(buf):
    if buf.closed:
        raise ValueError("the DeviceBuffer was freed")


def _pinned(cudart, addr):
    return cudart.cudaPointerGetAttributes(addr)[0] == MEMORY_TYPE_HOST


def copy_from_host(cudart, buf, array, stream):
    """H2D: asynchronous on the stream from pinned memory; from pageable memory the stream is synchronised
    before returning (the host buffer may then be reused at once, as CUDA's pageable copies allow)."""
    _live(buf)
    flat, addr, n = _host_view(array, "array", False)
    _check_size(buf, n, "array")
    s = _stream_of(buf, stream)
    if not n:
        return
    with _Guard(cudart, buf.device.index, s.cuda_stream):
        cudart.cudaMemcpyAsync(buf.ptr, addr, n, H2D, s.cuda_stream)
    if not _pinned(cudart, addr):
        s.synchronize()
    del flat


def copy_to_host(cudart, buf, out, stream):
    """D2H into ``out`` (None: a new uint8 numpy array, returned once the copy is done).  Into pinned
    ``out`` the copy is asynchronous (synchronise the stream before reading it); into pageable ``out`` the
    stream is synchronised before returning."""
    import numpy as np

    _live(buf)
    if out is None:
        out = np.empty(buf.nbytes, dtype=np.uint8)
    flat, addr, n = _host_view(out, "out", True)
    _check_size(buf, n, "out")
    s = _stream_of(buf, stream)
    if n:
        with _Guard(cudart, buf.device.index, s.cuda_stream):
            cudart.cudaMemcpyAsync(addr, buf.ptr, n, D2H, s.cuda_stream)
        if not _pinned(cudart, addr):
            s.synchronize()
    del flat
    return out


def copy_from(cudart, buf, other, stream):
    """D2D (also across devices), ordered after the work queued so far on ``other``'s stream."""
    if type(other) is not type(buf):
        raise TypeError(f"other must be a DeviceBuffer, got {type(other).__name__}")
    _live(buf)
    _live(other)
    _check_size(buf, other.nbytes, "other")
    s = _stream_of(buf, stream)
    if not buf.nbytes:
        return
    h = s.cuda_stream
    d = buf.device.index
    if other.stream != s:
        other.record_stream(s)
    with _Guard(cudart, d, h):
        if other.stream != s:
            wait_uses(cudart, [other.stream], h, d)
        cudart.cudaMemcpyAsync(buf.ptr, other.ptr, buf.nbytes, D2D, h)


def memset(cudart, buf, value, stream):
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"value must be an int byte (0-255), got {type(value).__name__}: {value!r}")
    value = operator.index(value)
    if not 0 <= value <= 255:
        raise ValueError(f"value must be a byte (0-255), got {value}")
    _live(buf)
    s = _stream_of(buf, stream)
    if buf.nbytes:
        with _Guard(cudart, buf.device.index, s.cuda_stream):
            cudart.cudaMemsetAsync(buf.ptr, value, buf.nbytes, s.cuda_stream)


# -- interop: CUDA Array Interface v3, DLPack 1.x ----------------------------------------------------------

KDLCUDA = 2           # DLDeviceType kDLCUDA
_KDLUINT = 1          # DLDataTypeCode kDLUInt
DLPACK_VERSION = (1, 0)
_FLAG_READ_ONLY = 1


def _cai_stream(h):
    """A raw stream handle as the CUDA Array Interface / DLPack spell it: the legacy default stream is 1."""
    return 1 if h == 0 else h


def cuda_array_interface(buf):
    _live(buf)
    return {"shape": (buf.nbytes,), "typestr": "|u1", "data": (buf.ptr, False), "strides": None,
            "version": 3, "stream": _cai_stream(buf.stream.cuda_stream)}


import ctypes as _ct  # noqa: E402  (only the interop half needs it)


class _DLDevice(_ct.Structure):
    _fields_ = [("device_type", _ct.c_int32), ("device_id", _ct.c_int32)]


class _DLDataType(_ct.Structure):
    _fields_ = [("code", _ct.c_uint8), ("bits", _ct.c_uint8), ("lanes", _ct.c_uint16)]


class _DLTensor(_ct.Structure):
    _fields_ = [("data", _ct.c_void_p), ("device", _DLDevice), ("ndim", _ct.c_int32), ("dtype", _DLDataType),
                ("shape", _ct.POINTER(_ct.c_int64)), ("strides", _ct.POINTER(_ct.c_int64)),
                ("byte_offset", _ct.c_uint64)]


class _DLManaged(_ct.Structure):
    pass


_DELETER = _ct.CFUNCTYPE(None, _ct.c_void_p)
_DLManaged._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", _ct.c_void_p), ("deleter", _ct.c_void_p)]


class _DLVersion(_ct.Structure):
    _fields_ = [("major", _ct.c_uint32), ("minor", _ct.c_uint32)]


class _DLManagedVersioned(_ct.Structure):
    _fields_ = [("version", _DLVersion), ("manager_ctx", _ct.c_void_p), ("deleter", _ct.c_void_p),
                ("flags", _ct.c_uint64), ("dl_tensor", _DLTensor)]


_api = _ct.pythonapi
_api.PyCapsule_New.restype = _ct.py_object
_api.PyCapsule_New.argtypes = [_ct.c_void_p, _ct.c_char_p, _ct.c_void_p]
_api.PyCapsule_IsValid.restype = _ct.c_int
_api.PyCapsule_IsValid.argtypes = [_ct.py_object, _ct.c_char_p]
_api.PyCapsule_GetPointer.restype = _ct.c_void_p
_api.PyCapsule_GetPointer.argtypes = [_ct.py_object, _ct.c_char_p]
_api.PyCapsule_SetName.restype = _ct.c_int
_api.PyCapsule_SetName.argtypes = [_ct.py_object, _ct.c_char_p]
_CAPSULE_DESTRUCTOR = _ct.CFUNCTYPE(None, _ct.c_void_p)
_cap_is_valid = _ct.PYFUNCTYPE(_ct.c_int, _ct.c_void_p, _ct.c_char_p)(("PyCapsule_IsValid", _api))
_cap_get_pointer = _ct.PYFUNCTYPE(_ct.c_void_p, _ct.c_void_p, _ct.c_char_p)(("PyCapsule_GetPointer", _api))

# Exported tensors: address of the managed struct -> (struct, shape, buffer).  The deleter drops the entry
# (and with it the buffer reference that kept the memory alive).
_exports = {}
_NAMES = {True: (b"dltensor_versioned", b"used_dltensor_versioned"), False: (b"dltensor", b"used_dltensor")}


@_DELETER
def _export_deleter(addr):
    _exports.pop(addr, None)


def _capsule_destructor(versioned):
    name = _NAMES[versioned][0]

    def destructor(capsule):
        # an unconsumed capsule still owns its tensor: call the deleter; a consumed one was renamed
        if _cap_is_valid(capsule, name):
            addr = _cap_get_pointer(capsule, name)
            if addr:
                _export_deleter(addr)
    return _CAPSULE_DESTRUCTOR(destructor)


_DESTRUCTORS = {True: _capsule_destructor(True), False: _capsule_destructor(False)}


def _consumer_wait(cudart, buf, stream):
    """Make the consumer's ``stream`` (DLPack's int: None / 1 legacy, 2 per-thread, -1 none) wait for the
    work queued on the buffer's stream; the buffer then also counts as used there (record_stream)."""
    if stream == -1:
        return
    if stream is None:
        stream = 1
    if isinstance(stream, bool) or not isinstance(stream, int) or stream == 0 or stream < -1:
        raise BufferError(f"stream must be None, -1 or a CUDA stream handle (1: legacy default, 2: per-thread), "
                          f"got {stream!r}")
    h = 0 if stream == 1 else stream
    d = buf.device.index
    if h == buf.stream.cuda_stream:
        return
    import importlib

    ext = importlib.import_module(type(buf.stream).__module__).ExternalStream
    with _Guard(cudart, d, h):
        wait_uses(cudart, [buf.stream], h, d)
    if h > 2:
        buf.record_stream(ext(h, device=d))


def dlpack(cudart, buf, stream, max_version, dl_device, copy):
    _live(buf)
    if dl_device is not None and tuple(dl_device) != (KDLCUDA, buf.device.index):
        raise BufferError(f"dl_device {tuple(dl_device)} is not the buffer's device {(KDLCUDA, buf.device.index)}")
    if copy:
        raise BufferError("a DeviceBuffer is exported without copying (copy=True is not supported)")
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    _consumer_wait(cudart, buf, stream)
    shape = (_ct.c_int64 * 1)(buf.nbytes)
    m = (_DLManagedVersioned if versioned else _DLManaged)()
    t = m.dl_tensor
    t.data = buf.ptr or None
    t.device.device_type, t.device.device_id = KDLCUDA, buf.device.index
    t.ndim = 1
    t.dtype.code, t.dtype.bits, t.dtype.lanes = _KDLUINT, 8, 1
    t.shape = _ct.cast(shape, _ct.POINTER(_ct.c_int64))
    t.strides = None
    t.byte_offset = 0
    m.deleter = _ct.cast(_export_deleter, _ct.c_void_p).value
    if versioned:
        m.version.major, m.version.minor = DLPACK_VERSION
        m.flags = 0
    addr = _ct.addressof(m)
    m.manager_ctx = addr
    _exports[addr] = (m, shape, buf)
    return _api.PyCapsule_New(addr, _NAMES[versioned][0], _ct.cast(_DESTRUCTORS[versioned], _ct.c_void_p))


class _DLOwner:
    """Holds a consumed DLPack tensor; calls its producer's deleter when dropped."""

    __slots__ = ("addr", "deleter", "producer")

    def __init__(self, addr, deleter, producer):
        self.addr, self.deleter, self.producer = addr, deleter, producer

    def __del__(self):
        if self.deleter:
            _DELETER(self.deleter)(self.addr)
            self.deleter = None


def _contiguous_nbytes(shape, strides, itemsize, what):
    n = itemsize
    for s in shape:
        n *= s
    if strides is not None and n:
        expect = itemsize
        for dim, st in zip(reversed(shape), reversed(strides)):
            if dim != 1 and st != expect:
                raise BufferError(f"{what} is not C-contiguous (shape {tuple(shape)}, strides {tuple(strides)})")
            expect *= dim
    return n


def from_dlpack(mem, stream_mod, obj):
    """A DeviceBuffer over ``obj``'s device memory through DLPack (keeps ``obj``'s tensor alive)."""
    if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ and __dlpack_device__, "
                        f"got {type(obj).__name__}")
    dev_type, dev_id = obj.__dlpack_device__()
    if dev_type != KDLCUDA:
        raise BufferError(f"from_dlpack needs CUDA memory (kDLCUDA = 2), got device type {dev_type}")
    s = stream_mod.current_stream(dev_id)
    h = _cai_stream(s.cuda_stream)
    try:
        cap = obj.__dlpack__(stream=h, max_version=DLPACK_VERSION)
    except TypeError:
        cap = obj.__dlpack__(stream=h)   # a producer from before DLPack 1.0
    for versioned in (True, False):
        name, used = _NAMES[versioned]
        if _api.PyCapsule_IsValid(cap, name):
            break
    else:
        raise BufferError("__dlpack__ did not return an unconsumed DLPack capsule")
    addr = _api.PyCapsule_GetPointer(cap, name)
    m = (_DLManagedVersioned if versioned else _DLManaged).from_address(addr)
    if versioned and m.version.major != 1:
        raise BufferError(f"unsupported DLPack version {m.version.major}.{m.version.minor}")
    t = m.dl_tensor
    if t.device.device_type != KDLCUDA:
        raise BufferError(f"the capsule's tensor is not CUDA memory (device type {t.device.device_type})")
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = [t.strides[i] * ((t.dtype.bits * t.dtype.lanes + 7) // 8) for i in range(t.ndim)] \
        if t.strides else None
    nbytes = _contiguous_nbytes(shape, strides, (t.dtype.bits * t.dtype.lanes + 7) // 8, "the DLPack tensor")
    _api.PyCapsule_SetName(cap, used)       # consumed: from now on the owner calls the deleter
    owner = _DLOwner(addr, m.deleter, obj)
    return mem.wrap((t.data or 0) + t.byte_offset, nbytes, t.device.device_id, s, owner)


def as_buffer(cudart, mem, stream_mod, obj):
    """A DeviceBuffer over ``obj``'s device memory: through ``__cuda_array_interface__`` (keeping ``obj``
    alive; its ``stream`` is waited for on the current stream), else DLPack."""
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        return from_dlpack(mem, stream_mod, obj)
    ptr = cai["data"][0] or 0
    typestr = cai["typestr"]
    itemsize = int(typestr[2:])
    shape = tuple(cai["shape"])
    nbytes = _contiguous_nbytes(shape, cai.get("strides"), itemsize, "the CUDA array")
    d = cudart.cudaPointerGetAttributes(ptr)[1] if ptr else cudart.cudaGetDevice()
    if d < 0:
        raise BufferError(f"the CUDA array's pointer {ptr:#x} is not device memory")
    s = stream_mod.current_stream(d)
    producer = cai.get("stream")
    if producer is not None and cai.get("version", 0) >= 3 and producer != _cai_stream(s.cuda_stream):
        ph = 0 if producer == 1 else producer
        with _Guard(cudart, d, s.cuda_stream):
            wait_uses(cudart, [stream_mod.ExternalStream(ph, device=d)] if ph > 2 else
                      [stream_mod.default_stream(d)], s.cuda_stream, d)
    return mem.wrap(ptr, nbytes, d, s, obj)
