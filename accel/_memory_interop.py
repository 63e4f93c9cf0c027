"""Interop of DeviceBuffer without copies, shared by both memory twins: the CUDA Array Interface v3 and
DLPack 1.x (versioned and legacy capsules, the standard's ownership and stream rules), and the other way
round ``from_dlpack`` / ``as_buffer`` over another library's device memory.

Pure Python over ctypes (off the hot path, so one implementation serves both twins exactly alike).
Exports keep the exported DeviceBuffer alive until the consumer calls the deleter (or an unconsumed
capsule dies); an explicit ``free()`` of the buffer while an export is held closes the buffer and leaves its
memory to the last deleter (as CuPy and torch), so a consumer never aliases a later allocation.
"""
import ctypes as _ct
import importlib as _importlib
import operator as _operator
import threading as _threading

from accel import _memory_array as _ma
from accel._memory_common import _Guard, _live, copy_refused, wait_uses

KDLCUDA = 2           # DLDeviceType kDLCUDA
_FLAG_READ_ONLY = 1   # DLPACK_FLAG_BITMASK_READ_ONLY (DLManagedTensorVersioned.flags)
_KDLUINT = 1          # DLDataTypeCode kDLUInt
DLPACK_VERSION = (1, 0)


def _cai_stream(h):
    """A raw stream handle as the CUDA Array Interface / DLPack spell it: the legacy default stream is 1."""
    return 1 if h == 0 else h


def cuda_array_interface(buf):
    _live(buf)
    return {"shape": (buf.nbytes,), "typestr": "|u1", "data": (buf.ptr, buf.readonly), "strides": None,
            "version": 3, "stream": _cai_stream(buf.stream.cuda_stream)}


def array_interface(arr):
    """CUDA Array Interface v3 of a DeviceArray: its dtype's typestr, shape, byte strides (None when
    C-contiguous), the address of element 0 (0 when the array is empty, as the standard says), read-only flag
    and its buffer's stream; a structured dtype's fields in ``descr`` (numpy's array interface's)."""
    if arr.closed:
        raise ValueError("the DeviceArray was freed")
    strides = None if _ma.is_c_contiguous(arr.shape, arr.strides, arr.itemsize) else arr.strides
    cai = {"shape": arr.shape, "typestr": arr.dtype.str, "data": (arr.ptr if arr.size else 0, arr.readonly),
           "strides": strides, "version": 3, "stream": _cai_stream(arr.stream.cuda_stream)}
    if arr.dtype.names is not None:
        cai["descr"] = arr.dtype.descr
    return cai


# DLDataTypeCode: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool
_KDLINT, _KDLFLOAT, _KDLBFLOAT, _KDLCOMPLEX, _KDLBOOL = 0, 2, 4, 5, 6
_DL_KIND = {"i": _KDLINT, "u": _KDLUINT, "b": _KDLBOOL}


def dl_dtype(dt):
    """(code, bits, lanes) of numpy dtype ``dt`` in DLPack, else a BufferError naming it."""
    if dt.isnative and dt.names is None and dt.subdtype is None:
        kind, bits = dt.kind, dt.itemsize * 8
        if kind in _DL_KIND:
            return _DL_KIND[kind], bits, 1
        if kind == "f" and bits in (16, 32, 64):
            return _KDLFLOAT, bits, 1
        if kind == "c" and bits in (64, 128):
            return _KDLCOMPLEX, bits, 1
        if dt.name == "bfloat16" and bits == 16:     # ml_dtypes' (JAX's) bfloat16
            return _KDLBFLOAT, 16, 1
    raise BufferError(f"DLPack cannot express dtype {dt} (it has bool, int, uint, float16/32/64, bfloat16 and "
                      f"complex64/128 in native byte order)")


def np_dtype(code, bits, lanes):
    """The numpy dtype of a DLPack (code, bits, lanes), else a BufferError naming it."""
    import numpy as np

    name = None
    if lanes == 1:
        if code == _KDLINT and bits in (8, 16, 32, 64):
            name = f"int{bits}"
        elif code == _KDLUINT and bits in (8, 16, 32, 64):
            name = f"uint{bits}"
        elif code == _KDLFLOAT and bits in (16, 32, 64):
            name = f"float{bits}"
        elif code == _KDLCOMPLEX and bits in (64, 128):
            name = f"complex{bits}"
        elif code == _KDLBOOL and bits == 8:
            name = "bool"
        elif code == _KDLBFLOAT and bits == 16:
            try:
                import ml_dtypes
            except ImportError:
                raise BufferError("the DLPack tensor is bfloat16, which numpy has only with ml_dtypes "
                                  "(not importable)") from None
            return np.dtype(ml_dtypes.bfloat16)
    if name is None:
        raise BufferError(f"the DLPack tensor's dtype (code {code}, bits {bits}, lanes {lanes}) has no numpy "
                          f"dtype")
    return np.dtype(name)


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

# Exported tensors: address of the managed struct -> (struct, shape, strides, DeviceBuffer).  The deleter drops
# the entry (and with it the buffer reference that kept the memory alive) and unpins the buffer.
_exports = {}
_NAMES = {True: (b"dltensor_versioned", b"used_dltensor_versioned"), False: (b"dltensor", b"used_dltensor")}


@_DELETER
def _export_deleter(addr):
    entry = _exports.pop(addr, None)
    if entry is not None:
        entry[3]._unpin()       # the buffer's memory goes with its last export once it was freed


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
    work queued on the buffer's stream (an event, as the standard asks).  The buffer is not tied to the
    consumer's stream: the consumer orders its own use before the deleter, and may destroy its stream."""
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
    with _Guard(cudart, d, h):
        wait_uses(cudart, [buf.stream], h, d)


def _int_pair(v, what):
    """``v`` as a tuple of two ints (DLPack's max_version / dl_device), else a TypeError naming it."""
    try:
        t = tuple(v)
    except TypeError:
        t = None
    if t is None or len(t) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in t):
        raise TypeError(f"{what} must be None or a tuple of two ints, got {type(v).__name__}: {v!r}")
    return t


def dlpack(cudart, buf, stream, max_version, dl_device, copy, typed=False):
    """A DLPack capsule of ``buf``: a DeviceBuffer (1-d uint8), or with ``typed`` a DeviceArray (its dtype,
    shape and strides in items; a dtype or stride DLPack cannot express is a BufferError before anything
    else happens)."""
    what = type(buf).__name__
    if typed:
        if buf.closed:
            raise ValueError("the DeviceArray was freed")
        code, bits, lanes = dl_dtype(buf.dtype)
        dims = buf.shape
        elem = []
        for st in buf.strides:
            if st % buf.itemsize:
                raise BufferError(f"DLPack strides count items: the DeviceArray's byte strides {buf.strides} are "
                                  f"not multiples of its item size {buf.itemsize}")
            elem.append(st // buf.itemsize)
    else:
        _live(buf)
        code, bits, lanes = _KDLUINT, 8, 1
        dims, elem = (buf.nbytes,), None
    if max_version is not None:
        max_version = _int_pair(max_version, "max_version")
    if dl_device is not None:
        dl_device = _int_pair(dl_device, "dl_device")
    if dl_device is not None and dl_device != (KDLCUDA, buf.device.index):
        raise BufferError(f"dl_device {tuple(dl_device)} is not the buffer's device {(KDLCUDA, buf.device.index)}")
    if copy:
        raise BufferError(f"a {what} is exported without copying (copy=True is not supported)")
    versioned = max_version is not None and max_version[0] >= 1
    if buf.readonly and not versioned:
        raise BufferError(f"a read-only {what} needs a versioned DLPack capsule (max_version >= (1, 0)): "
                          "a legacy capsule cannot say read-only")
    _consumer_wait(cudart, buf, stream)
    nd = len(dims)
    shape = (_ct.c_int64 * max(nd, 1))(*dims)
    strides = None if elem is None else (_ct.c_int64 * max(nd, 1))(*elem)
    m = (_DLManagedVersioned if versioned else _DLManaged)()
    t = m.dl_tensor
    t.data = buf.ptr or None
    t.device.device_type, t.device.device_id = KDLCUDA, buf.device.index
    t.ndim = nd
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, lanes
    t.shape = _ct.cast(shape, _ct.POINTER(_ct.c_int64))
    t.strides = None if strides is None else _ct.cast(strides, _ct.POINTER(_ct.c_int64))
    t.byte_offset = 0
    m.deleter = _ct.cast(_export_deleter, _ct.c_void_p).value
    if versioned:
        m.version.major, m.version.minor = DLPACK_VERSION
        m.flags = _FLAG_READ_ONLY if buf.readonly else 0
    addr = _ct.addressof(m)
    m.manager_ctx = addr
    owner = buf.buffer if typed else buf
    owner._pin()
    _exports[addr] = (m, shape, strides, owner)
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

    def __reduce__(self):
        raise copy_refused(self)


def _ints(seq):
    """``seq`` as a tuple of ints (``__index__`` objects accepted, bools refused), or None."""
    out = []
    for x in seq:
        if isinstance(x, bool) or not hasattr(type(x), "__index__"):
            return None
        out.append(_operator.index(x))
    return tuple(out)


def _layout(shape, strides, itemsize, what, typed):
    """(shape, byte strides or None, nbytes, lowest, end) of an imported array: its shape and strides
    checked; ``lowest`` / ``end`` are the byte offsets from element 0 of the memory it spans.  Without
    ``typed`` (a DeviceBuffer of its bytes) it must be C-contiguous."""
    shape = tuple(shape)
    ints = _ints(shape)
    if ints is None or any(s < 0 for s in ints):
        raise ValueError(f"{what}'s shape must hold non-negative ints, got {shape}")
    shape = ints
    if typed:
        _ma.check_shape(shape, itemsize)
    if strides is not None:
        strides = tuple(strides)
        if len(strides) != len(shape):
            raise ValueError(f"{what}'s strides {strides} must have one entry per dimension of its shape "
                             f"{shape}")
        ints = _ints(strides)
        if ints is None:
            raise ValueError(f"{what}'s strides must hold ints, got {strides}")
        strides = ints
    n = itemsize
    for s in shape:
        n *= s
    if strides is None or not n:
        return shape, strides, n, 0, n
    if not typed:
        expect = itemsize
        for dim, st in zip(reversed(shape), reversed(strides)):
            if dim != 1 and st != expect:
                raise BufferError(f"{what} is not C-contiguous (shape {tuple(shape)}, strides {tuple(strides)})")
            expect *= dim
        return shape, strides, n, 0, n
    lo, hi = _ma.span(shape, strides, itemsize)
    return shape, strides, n, lo, hi


def _contiguous_nbytes(shape, strides, itemsize, what):
    return _layout(shape, strides, itemsize, what, False)[2]


def from_dlpack(mem, stream_mod, obj, typed=False):
    """A DeviceBuffer over ``obj``'s device memory through DLPack (keeps ``obj``'s tensor alive); with
    ``typed`` a DeviceArray of the tensor's dtype, shape and strides over it."""
    if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ and __dlpack_device__, "
                        f"got {type(obj).__name__}")
    dev = obj.__dlpack_device__()
    ints = _ints(dev) if isinstance(dev, tuple) else None
    if ints is None or len(ints) != 2:
        raise TypeError(f"__dlpack_device__() must return a tuple of two ints (device type, device id), got "
                        f"{type(dev).__name__}: {dev!r}")
    dev_type, dev_id = ints
    if dev_type != KDLCUDA:
        raise BufferError(f"from_dlpack needs CUDA memory (kDLCUDA = 2), got device type {dev_type}")
    s = stream_mod.current_stream(dev_id)
    h = _cai_stream(s.cuda_stream)
    # The tensor's device is current around the export (torch's __dlpack__ orders its work on the current
    # device's streams, and refuses a tensor on another device): exchange_device clears a pending target
    # (torch's too: accel._torch_link); the restore is an internal guard's (no context created, a failure
    # warns and records the target), so a made capsule is never lost to it.
    dm = _importlib.import_module(stream_mod.__name__.rpartition(".")[0] + "._device")
    prev = dm.exchange_device(dev_id)
    try:
        try:
            cap = obj.__dlpack__(stream=h, max_version=DLPACK_VERSION)
        except TypeError:
            cap = obj.__dlpack__(stream=h)   # a producer from before DLPack 1.0
    finally:
        if prev != dev_id:
            dm._guard_restore(prev)
    with _consume_lock:     # the check and the rename as one step: two threads cannot both consume it
        return _consume(mem, obj, cap, s, typed, dev_id)


_consume_lock = _threading.Lock()


def _consume(mem, obj, cap, s, typed, dev_id):
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
    if t.device.device_id != dev_id:
        raise BufferError(f"the capsule's tensor is on device {t.device.device_id} but __dlpack_device__() said "
                          f"{dev_id}")
    if t.ndim < 0:
        raise BufferError(f"the DLPack tensor's ndim must be >= 0, got {t.ndim}")
    if t.ndim > _ma.MAXDIMS:        # before its shape is read: numpy's limit
        raise BufferError(f"the DLPack tensor's ndim must be at most {_ma.MAXDIMS}, got {t.ndim}")
    if typed:
        dtype = np_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        itemsize = dtype.itemsize
    else:
        itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = [t.strides[i] * itemsize for i in range(t.ndim)] if t.strides else None
    shape, strides, nbytes, lo, hi = _layout(shape, strides, itemsize, "the DLPack tensor", typed)
    if not t.data and nbytes:
        raise BufferError(f"the DLPack tensor's data pointer is NULL but its shape {tuple(shape)} holds "
                          f"{nbytes} bytes")
    base = (t.data or 0) + t.byte_offset
    if nbytes and not (0 <= base + lo and base + hi <= 2**64):
        raise BufferError(f"the DLPack tensor's layout reaches bytes [{base + lo}, {base + hi}) outside the "
                          f"address space [0, 2**64)")
    readonly = versioned and bool(m.flags & _FLAG_READ_ONLY)
    _api.PyCapsule_SetName(cap, used)       # consumed: from now on the owner calls the deleter
    owner = _DLOwner(addr, m.deleter, obj)
    ptr = (t.data or 0) + t.byte_offset
    if not typed:
        return mem.wrap(ptr, nbytes, t.device.device_id, s, owner, readonly)
    buf = mem.wrap(ptr + lo if nbytes else ptr, hi - lo, t.device.device_id, s, owner, readonly)
    return mem.as_array(buf, dtype, shape, strides, -lo)


def _itemsize(typestr):
    """The item size in a CUDA Array Interface typestr ("<f4": byte order, kind, size in bytes)."""
    if not isinstance(typestr, str):
        raise TypeError(f"the CUDA array's typestr must be a str like '<f4', got {type(typestr).__name__}: "
                        f"{typestr!r}")
    size = typestr[2:]
    if len(typestr) < 3 or not size.isdigit() or int(size) == 0:
        raise ValueError(f"the CUDA array's typestr must be byte order, kind and item size like '<f4', "
                         f"got {typestr!r}")
    return int(size)


def _typestr_dtype(typestr, descr=None):
    """The numpy dtype of a CUDA Array Interface typestr (its size already checked by _itemsize); a void
    typestr with a ``descr`` of fields (numpy's array interface's) is that structured dtype."""
    import numpy as np

    try:
        dt = np.dtype(typestr)
    except (TypeError, ValueError):
        raise ValueError(f"the CUDA array's typestr {typestr!r} is not a dtype numpy knows") from None
    if descr is not None and dt.kind == "V" and descr != [("", typestr)]:
        try:
            fields = np.lib.format.descr_to_dtype(list(descr))
        except (TypeError, ValueError, IndexError, KeyError):
            raise ValueError(f"the CUDA array's descr {descr!r} is not one numpy knows") from None
        if fields.itemsize != dt.itemsize:
            raise ValueError(f"the CUDA array's descr {descr!r} has item size {fields.itemsize} but the typestr "
                             f"{typestr!r} says {dt.itemsize}")
        dt = fields
    if dt.hasobject:
        raise TypeError(f"the CUDA array's typestr {typestr!r} holds Python objects")
    return dt


def _check_cai(cai):
    """The entries of a CUDA Array Interface dict have the standard's types (else an error naming them)."""
    if not isinstance(cai, dict):
        raise TypeError(f"__cuda_array_interface__ must be a dict, got {type(cai).__name__}: {cai!r}")
    for key in ("shape", "typestr", "data"):
        if key not in cai:
            raise ValueError(f"the CUDA array interface has no {key!r} entry (shape, typestr and data are "
                             f"required), got the keys {sorted(map(str, cai))}")
    data = cai["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"the CUDA array's data must be a tuple (pointer, read-only flag), got "
                        f"{type(data).__name__}: {data!r}")
    ptr = data[0]
    if ptr is not None and (isinstance(ptr, bool) or not hasattr(type(ptr), "__index__")):
        raise TypeError(f"the CUDA array's data pointer must be an int, got {type(ptr).__name__}: {ptr!r}")
    if ptr is not None and not 0 <= _operator.index(ptr) < 2**64:
        raise ValueError(f"the CUDA array's data pointer must be in [0, 2**64), got {ptr}")
    if not isinstance(cai["shape"], (tuple, list)):
        raise TypeError(f"the CUDA array's shape must be a tuple of ints, got {type(cai['shape']).__name__}: "
                        f"{cai['shape']!r}")
    strides = cai.get("strides")
    if strides is not None and not isinstance(strides, (tuple, list)):
        raise TypeError(f"the CUDA array's strides must be None or a tuple of ints, got {type(strides).__name__}: "
                        f"{strides!r}")
    version = cai.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"the CUDA array's version must be an int, got {type(version).__name__}: {version!r}")


def as_buffer(cudart, mem, stream_mod, obj, typed=False):
    """A DeviceBuffer over ``obj``'s device memory: through ``__cuda_array_interface__`` (keeping ``obj``
    alive; its ``stream`` is waited for on the current stream), else DLPack.  With ``typed`` a DeviceArray
    of its dtype, shape and strides."""
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        return from_dlpack(mem, stream_mod, obj, typed)
    _check_cai(cai)
    producer = cai.get("stream")
    if producer is not None and (isinstance(producer, bool) or not isinstance(producer, int)):
        raise TypeError(f"the CUDA array's stream must be an int or None, got {type(producer).__name__}: "
                        f"{producer!r}")
    if producer == 0:
        raise ValueError("the CUDA array's stream must not be 0 (CUDA Array Interface v3: 1 is the legacy default "
                         "stream, 2 the per-thread default stream, None no synchronisation)")
    if cai.get("mask") is not None:
        raise BufferError(f"masked CUDA arrays are not supported (the CUDA array's mask is "
                          f"{type(cai['mask']).__name__}, not None)")
    data = cai["data"]
    ptr = _operator.index(data[0] or 0)
    readonly = bool(data[1])
    itemsize = _itemsize(cai["typestr"])
    dtype = _typestr_dtype(cai["typestr"], cai.get("descr")) if typed else None
    shape, strides, nbytes, lo, hi = _layout(cai["shape"], cai.get("strides"), itemsize, "the CUDA array", typed)
    if not ptr and nbytes:
        raise ValueError(f"the CUDA array's data pointer is 0 but its shape {shape} holds {nbytes} bytes")
    if nbytes and not (0 <= ptr + lo and ptr + hi <= 2**64):
        raise ValueError(f"the CUDA array's layout reaches bytes [{ptr + lo}, {ptr + hi}) outside the address "
                         f"space [0, 2**64)")
    d = cudart.cudaPointerGetAttributes(ptr)[1] if ptr else cudart.cudaGetDevice()
    if d < 0:
        raise BufferError(f"the CUDA array's pointer {ptr:#x} is not device memory")
    s = stream_mod.current_stream(d)
    if producer is not None and cai.get("version", 0) >= 3 and producer != _cai_stream(s.cuda_stream):
        ph = 0 if producer == 1 else producer
        with _Guard(cudart, d, s.cuda_stream):
            wait_uses(cudart, [stream_mod.ExternalStream(ph, device=d)] if ph > 2 else
                      [stream_mod.default_stream(d)], s.cuda_stream, d)
    owner = _pinned_owner(obj)
    if not typed:
        return mem.wrap(ptr, nbytes, d, s, owner, readonly)
    buf = mem.wrap(ptr + lo if nbytes else ptr, hi - lo, d, s, owner, readonly)
    return mem.as_array(buf, dtype, shape, strides, -lo)


_TWIN_MEMORY = ("accel._native._memory", "accel._python._memory")


class _PinOwner:
    """Keeps an accel DeviceBuffer / DeviceArray that as_buffer viewed alive, and pinned as a DLPack export pins
    it: its free() while the view lives leaves the memory to the view (else the view would alias the next
    allocation at its address)."""

    __slots__ = ("obj", "buf")

    def __init__(self, obj, buf):
        buf._pin()
        self.obj, self.buf = obj, buf

    def __del__(self):
        self.buf._unpin()


def _pinned_owner(obj):
    """The owner of an as_buffer view of ``obj``: a _PinOwner for accel's own buffers and arrays (either twin's),
    else ``obj``."""
    t = type(obj)
    if t.__module__ not in _TWIN_MEMORY:
        return obj
    buf = obj.buffer if t.__name__ == "DeviceArray" else obj
    if type(buf).__name__ != "DeviceBuffer":
        return obj
    return _PinOwner(obj, buf)
