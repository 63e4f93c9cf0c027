"""ctypes twin of accel._native._cudart: one thin function per C function, named as the C function.

Each returns the C function's out parameter(s) and raises ``accel.errors.CudaError`` on failure, after
clearing the sticky error with cudaGetLastError.  Query functions return True (done) / False
(cudaErrorNotReady).  Handles (streams, events, pointers, function pointers) are plain ints.
The library is opened on first use (``load()``); ctypes releases the GIL around every call.
"""
import ctypes
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint, c_ulonglong, c_void_p

from accel import _lib
from accel.errors import CudaDriverError, CudaError

__all__ = [
    "load", "driver_loaded",
    "cudaGetDeviceCount", "cudaGetDevice", "cudaSetDevice", "cudaDeviceSynchronize",
    "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetLastError", "cudaPeekAtLastError",
    "cudaGetErrorString", "cudaGetErrorName", "cudaDeviceGetStreamPriorityRange",
    "cudaDeviceGetAttribute", "cudaGetDeviceProperties", "cudaDeviceCanAccessPeer", "cudaMemGetInfo",
    "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cudaStreamDestroy",
    "cudaStreamQuery", "cudaStreamSynchronize", "cudaStreamGetPriority", "cudaStreamGetFlags",
    "cudaStreamGetId", "cudaStreamGetDevice", "cudaStreamWaitEvent", "cudaStreamIsCapturing",
    "cudaThreadExchangeStreamCaptureMode",
    "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventDestroy", "cudaEventRecord",
    "cudaEventRecordWithFlags", "cudaEventQuery", "cudaEventSynchronize", "cudaEventElapsedTime",
    "cudaIpcGetEventHandle", "cudaIpcOpenEventHandle",
    "cudaMalloc", "cudaFree", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaPointerGetAttributes",
    "cudaLaunchHostFunc", "cuDevicePrimaryCtxGetState",
]

_NOT_READY = 600
_P = c_size_t  # a raw handle / pointer: accepts only ints, like the native twin's uintptr_t
_IPC_HANDLE_SIZE = 64


class _IpcEventHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * _IPC_HANDLE_SIZE)]


class _PointerAttributes(ctypes.Structure):
    _fields_ = [("type", c_int), ("device", c_int), ("devicePointer", c_void_p), ("hostPointer", c_void_p)]


# name: (argtypes, required).  Every runtime function returns cudaError_t (int) unless in _RESTYPES.
_PROTOTYPES = {
    "cudaGetDeviceCount": ([POINTER(c_int)], True),
    "cudaGetDevice": ([POINTER(c_int)], True),
    "cudaSetDevice": ([c_int], True),
    "cudaDeviceSynchronize": ([], False),
    "cudaDriverGetVersion": ([POINTER(c_int)], False),
    "cudaRuntimeGetVersion": ([POINTER(c_int)], False),
    "cudaGetLastError": ([], True),
    "cudaPeekAtLastError": ([], False),
    "cudaGetErrorString": ([c_int], True),
    "cudaGetErrorName": ([c_int], True),
    "cudaDeviceGetStreamPriorityRange": ([POINTER(c_int), POINTER(c_int)], False),
    "cudaDeviceGetAttribute": ([POINTER(c_int), c_int, c_int], False),
    "cudaGetDeviceProperties_v2": ([c_void_p, c_int], False),
    "cudaGetDeviceProperties": ([c_void_p, c_int], False),
    "cudaDeviceCanAccessPeer": ([POINTER(c_int), c_int, c_int], False),
    "cudaMemGetInfo": ([POINTER(c_size_t), POINTER(c_size_t)], False),
    "cudaStreamCreate": ([POINTER(_P)], False),
    "cudaStreamCreateWithFlags": ([POINTER(_P), c_uint], False),
    "cudaStreamCreateWithPriority": ([POINTER(_P), c_uint, c_int], False),
    "cudaStreamDestroy": ([_P], False),
    "cudaStreamQuery": ([_P], False),
    "cudaStreamSynchronize": ([_P], False),
    "cudaStreamGetPriority": ([_P, POINTER(c_int)], False),
    "cudaStreamGetFlags": ([_P, POINTER(c_uint)], False),
    "cudaStreamGetId": ([_P, POINTER(c_ulonglong)], False),
    "cudaStreamGetDevice": ([_P, POINTER(c_int)], False),
    "cudaStreamWaitEvent": ([_P, _P, c_uint], False),
    "cudaStreamIsCapturing": ([_P, POINTER(c_int)], False),
    "cudaThreadExchangeStreamCaptureMode": ([POINTER(c_int)], False),
    "cudaEventCreate": ([POINTER(_P)], False),
    "cudaEventCreateWithFlags": ([POINTER(_P), c_uint], False),
    "cudaEventDestroy": ([_P], False),
    "cudaEventRecord": ([_P, _P], False),
    "cudaEventRecordWithFlags": ([_P, _P, c_uint], False),
    "cudaEventQuery": ([_P], False),
    "cudaEventSynchronize": ([_P], False),
    "cudaEventElapsedTime": ([POINTER(c_float), _P, _P], False),
    "cudaIpcGetEventHandle": ([POINTER(_IpcEventHandle), _P], False),
    "cudaIpcOpenEventHandle": ([POINTER(_P), _IpcEventHandle], False),
    "cudaMalloc": ([POINTER(_P), c_size_t], False),
    "cudaFree": ([_P], False),
    "cudaMemcpyAsync": ([_P, _P, c_size_t, c_int, _P], False),
    "cudaMemsetAsync": ([_P, c_int, c_size_t, _P], False),
    "cudaPointerGetAttributes": ([POINTER(_PointerAttributes), _P], False),
    "cudaLaunchHostFunc": ([_P, _P, _P], False),
}
_RESTYPES = {"cudaGetErrorString": c_char_p, "cudaGetErrorName": c_char_p}
_DRIVER_PROTOTYPES = {
    "cuDevicePrimaryCtxGetState": [c_int, POINTER(c_uint), POINTER(c_int)],
    "cuGetErrorName": [c_int, POINTER(c_char_p)],
    "cuGetErrorString": [c_int, POINTER(c_char_p)],
}
_PROPS_SIZE = 4096  # cudaDeviceProp is ~1 KB; only its stable head is read


class _Missing:
    """Stands in for an optional symbol the library does not export: fails only when called."""

    def __init__(self, name, path):
        self.name = name
        self.path = path

    def __call__(self, *args):
        raise NotImplementedError(f"{self.name} is not exported by {self.path}")


class _Table:
    __slots__ = tuple(_PROTOTYPES) + ("path",)


# Calls that can block release the GIL (a CDLL function); the others keep it (a PyDLL function over
# the same handle), like the native twin.
_BLOCKING = frozenset((
    "cudaDeviceSynchronize", "cudaGetDeviceCount", "cudaMemGetInfo", "cudaStreamCreate",
    "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cudaStreamDestroy", "cudaStreamSynchronize",
    "cudaStreamWaitEvent", "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventDestroy", "cudaEventRecord",
    "cudaEventRecordWithFlags", "cudaEventSynchronize", "cudaIpcOpenEventHandle", "cudaMalloc", "cudaFree",
    "cudaMemcpyAsync", "cudaMemsetAsync", "cudaLaunchHostFunc",
))


def _bind(library, prototypes, restypes, missing_ok):
    table = _Table() if prototypes is _PROTOTYPES else type("_DriverTable", (), {})()
    holds_gil = ctypes.PyDLL(library.path, handle=library.handle)
    for name, proto in prototypes.items():
        argtypes, required = proto if isinstance(proto, tuple) else (proto, False)
        try:
            fn = getattr(library.cdll if name in _BLOCKING else holds_gil, name)
        except AttributeError:
            if required and not missing_ok:
                raise _lib.LibraryNotFoundError(
                    "CUDA runtime library (libcudart)", [f"{library.path}: does not export {name}"]) from None
            fn = _Missing(name, library.path)
        else:
            fn.argtypes = argtypes
            fn.restype = restypes.get(name, c_int)
        setattr(table, name, fn)
    return table


class _Lazy:
    """Loads and binds the library on first attribute access, then replaces itself."""

    def __getattr__(self, name):
        return getattr(_load_table(), name)


_T = _Lazy()
_D = None  # the driver table, bound on first use
_path = None


def _load_table():
    global _T, _path
    if isinstance(_T, _Lazy):
        library = _lib.cudart()
        table = _bind(library, _PROTOTYPES, _RESTYPES, missing_ok=False)
        table.path = library.path
        _path = library.path
        _T = table
    return _T


def _table():
    """The bound ctypes table (for the other python twins: accel._python._device, _stream, ...)."""
    return _T if not isinstance(_T, _Lazy) else _load_table()


def load():
    """Open and bind the CUDA runtime now; returns its path.  Raises LibraryNotFoundError."""
    _load_table()
    return _path


def driver_loaded():
    """True once the driver library has been opened for cuDevicePrimaryCtxGetState."""
    return _D is not None


def _error(err):
    """Clear the sticky error and build the CudaError for ``err``."""
    _T.cudaGetLastError()
    name = _T.cudaGetErrorName(err)
    string = _T.cudaGetErrorString(err)
    return CudaError(err, name.decode() if name else None, string.decode() if string else None)


def _bad_arg(what, value):
    return TypeError(f"{what} must be an int, not {type(value).__name__}: {value!r}")


# -- devices ---------------------------------------------------------------------------------------

def cudaGetDeviceCount():
    """Number of devices; raises CudaError (e.g. 35 without a driver, 100 with no device)."""
    v = c_int()
    err = _T.cudaGetDeviceCount(v)
    if err:
        raise _error(err)
    return v.value


def cudaGetDevice():
    """The calling thread's current device."""
    v = c_int()
    err = _T.cudaGetDevice(v)
    if err:
        raise _error(err)
    return v.value


def cudaSetDevice(device):
    """Make ``device`` current for the calling thread (creates its primary context)."""
    try:
        err = _T.cudaSetDevice(device)
    except ctypes.ArgumentError:
        raise _bad_arg("device", device) from None
    if err:
        raise _error(err)


def cudaDeviceSynchronize():
    """Wait for all work on the current device."""
    err = _T.cudaDeviceSynchronize()
    if err:
        raise _error(err)


def cudaDriverGetVersion():
    """The driver's CUDA version (e.g. 13000), 0 when no driver is installed."""
    v = c_int()
    err = _T.cudaDriverGetVersion(v)
    if err:
        raise _error(err)
    return v.value


def cudaRuntimeGetVersion():
    """The runtime library's CUDA version (e.g. 13000)."""
    v = c_int()
    err = _T.cudaRuntimeGetVersion(v)
    if err:
        raise _error(err)
    return v.value


def cudaGetLastError():
    """Return and clear the calling thread's last error code (never raises)."""
    return _T.cudaGetLastError()


def cudaPeekAtLastError():
    """Return the calling thread's last error code without clearing it (never raises)."""
    return _T.cudaPeekAtLastError()


def cudaGetErrorString(error):
    """The runtime's description of ``error``."""
    try:
        s = _T.cudaGetErrorString(error)
    except ctypes.ArgumentError:
        raise _bad_arg("error", error) from None
    return s.decode() if s is not None else None


def cudaGetErrorName(error):
    """The runtime's enum name of ``error``."""
    try:
        s = _T.cudaGetErrorName(error)
    except ctypes.ArgumentError:
        raise _bad_arg("error", error) from None
    return s.decode() if s is not None else None


def cudaDeviceGetStreamPriorityRange():
    """(leastPriority, greatestPriority) of the current device, e.g. (0, -5)."""
    lo, hi = c_int(), c_int()
    err = _T.cudaDeviceGetStreamPriorityRange(lo, hi)
    if err:
        raise _error(err)
    return lo.value, hi.value


def cudaDeviceGetAttribute(attr, device):
    """Integer value of cudaDeviceAttr ``attr`` for ``device``."""
    v = c_int()
    try:
        err = _T.cudaDeviceGetAttribute(v, attr, device)
    except ctypes.ArgumentError:
        raise _bad_arg("attr and device", (attr, device)) from None
    if err:
        raise _error(err)
    return v.value


def cudaGetDeviceProperties(device):
    """(name, uuid, total_memory) from the stable head of cudaDeviceProp for ``device``."""
    buf = ctypes.create_string_buffer(_PROPS_SIZE)
    fn = _T.cudaGetDeviceProperties_v2
    if isinstance(fn, _Missing):
        fn = _T.cudaGetDeviceProperties
    try:
        err = fn(buf, device)
    except ctypes.ArgumentError:
        raise _bad_arg("device", device) from None
    if err:
        raise _error(err)
    raw = buf.raw
    return (raw[:256].split(b"\0", 1)[0].decode(errors="replace"), raw[256:272],
            int.from_bytes(raw[288:296], "little"))


def cudaDeviceCanAccessPeer(device, peer):
    """Whether ``device`` can access ``peer``'s memory directly."""
    v = c_int()
    try:
        err = _T.cudaDeviceCanAccessPeer(v, device, peer)
    except ctypes.ArgumentError:
        raise _bad_arg("device and peer", (device, peer)) from None
    if err:
        raise _error(err)
    return bool(v.value)


def cudaMemGetInfo():
    """(free, total) bytes on the current device."""
    free, total = c_size_t(), c_size_t()
    err = _T.cudaMemGetInfo(free, total)
    if err:
        raise _error(err)
    return free.value, total.value


# -- streams ---------------------------------------------------------------------------------------

def cudaStreamCreate():
    """A new blocking stream on the current device (handle int)."""
    s = _P()
    err = _T.cudaStreamCreate(s)
    if err:
        raise _error(err)
    return s.value


def cudaStreamCreateWithFlags(flags):
    """A new stream with ``flags`` (0 default, 1 non-blocking) on the current device."""
    s = _P()
    try:
        err = _T.cudaStreamCreateWithFlags(s, flags)
    except ctypes.ArgumentError:
        raise _bad_arg("flags", flags) from None
    if err:
        raise _error(err)
    return s.value


def cudaStreamCreateWithPriority(flags, priority):
    """A new stream with ``flags`` and ``priority`` (clamped by the runtime) on the current device."""
    s = _P()
    try:
        err = _T.cudaStreamCreateWithPriority(s, flags, priority)
    except ctypes.ArgumentError:
        raise _bad_arg("flags and priority", (flags, priority)) from None
    if err:
        raise _error(err)
    return s.value


def cudaStreamDestroy(stream):
    """Destroy ``stream`` (its pending work still completes)."""
    try:
        err = _T.cudaStreamDestroy(stream)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err:
        raise _error(err)


def cudaStreamQuery(stream):
    """True if all work on ``stream`` is done, False if not (cudaErrorNotReady)."""
    try:
        err = _T.cudaStreamQuery(stream)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err == 0:
        return True
    if err == _NOT_READY:
        _T.cudaGetLastError()
        return False
    raise _error(err)


def cudaStreamSynchronize(stream):
    """Wait for all work on ``stream``."""
    try:
        err = _T.cudaStreamSynchronize(stream)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err:
        raise _error(err)


def cudaStreamGetPriority(stream):
    """The priority of ``stream``."""
    v = c_int()
    try:
        err = _T.cudaStreamGetPriority(stream, v)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err:
        raise _error(err)
    return v.value


def cudaStreamGetFlags(stream):
    """The creation flags of ``stream``."""
    v = c_uint()
    try:
        err = _T.cudaStreamGetFlags(stream, v)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err:
        raise _error(err)
    return v.value


def cudaStreamGetId(stream):
    """The runtime's unique id of ``stream``."""
    v = c_ulonglong()
    try:
        err = _T.cudaStreamGetId(stream, v)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err:
        raise _error(err)
    return v.value


def cudaStreamGetDevice(stream):
    """The device of ``stream`` (CUDA >= 12.8; NotImplementedError if the library lacks it)."""
    v = c_int()
    try:
        err = _T.cudaStreamGetDevice(stream, v)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err:
        raise _error(err)
    return v.value


def cudaStreamWaitEvent(stream, event, flags=0):
    """Make future work on ``stream`` wait for ``event``'s latest record."""
    try:
        err = _T.cudaStreamWaitEvent(stream, event, flags)
    except ctypes.ArgumentError:
        raise _bad_arg("stream, event and flags", (stream, event, flags)) from None
    if err:
        raise _error(err)


def cudaStreamIsCapturing(stream):
    """cudaStreamCaptureStatus of ``stream`` (0 none, 1 active, 2 invalidated)."""
    v = c_int()
    try:
        err = _T.cudaStreamIsCapturing(stream, v)
    except ctypes.ArgumentError:
        raise _bad_arg("stream", stream) from None
    if err:
        raise _error(err)
    return v.value


def cudaThreadExchangeStreamCaptureMode(mode):
    """Set this thread's capture mode to ``mode``; returns the previous mode."""
    try:
        v = c_int(mode)
    except TypeError:
        raise _bad_arg("mode", mode) from None
    err = _T.cudaThreadExchangeStreamCaptureMode(v)
    if err:
        raise _error(err)
    return v.value


# -- events ----------------------------------------------------------------------------------------

def cudaEventCreate():
    """A new event (default flags) on the current device."""
    e = _P()
    err = _T.cudaEventCreate(e)
    if err:
        raise _error(err)
    return e.value


def cudaEventCreateWithFlags(flags):
    """A new event with ``flags`` (1 blocking sync, 2 disable timing, 4 interprocess)."""
    e = _P()
    try:
        err = _T.cudaEventCreateWithFlags(e, flags)
    except ctypes.ArgumentError:
        raise _bad_arg("flags", flags) from None
    if err:
        raise _error(err)
    return e.value


def cudaEventDestroy(event):
    """Destroy ``event``."""
    try:
        err = _T.cudaEventDestroy(event)
    except ctypes.ArgumentError:
        raise _bad_arg("event", event) from None
    if err:
        raise _error(err)


def cudaEventRecord(event, stream):
    """Record ``event`` at the current end of ``stream``."""
    try:
        err = _T.cudaEventRecord(event, stream)
    except ctypes.ArgumentError:
        raise _bad_arg("event and stream", (event, stream)) from None
    if err:
        raise _error(err)


def cudaEventRecordWithFlags(event, stream, flags=0):
    """Record ``event`` on ``stream`` with ``flags`` (1 = external, during capture)."""
    try:
        err = _T.cudaEventRecordWithFlags(event, stream, flags)
    except ctypes.ArgumentError:
        raise _bad_arg("event, stream and flags", (event, stream, flags)) from None
    if err:
        raise _error(err)


def cudaEventQuery(event):
    """True if ``event``'s latest record was reached (or it was never recorded), else False."""
    try:
        err = _T.cudaEventQuery(event)
    except ctypes.ArgumentError:
        raise _bad_arg("event", event) from None
    if err == 0:
        return True
    if err == _NOT_READY:
        _T.cudaGetLastError()
        return False
    raise _error(err)


def cudaEventSynchronize(event):
    """Wait until ``event``'s latest record is reached."""
    try:
        err = _T.cudaEventSynchronize(event)
    except ctypes.ArgumentError:
        raise _bad_arg("event", event) from None
    if err:
        raise _error(err)


def cudaEventElapsedTime(start, end):
    """Milliseconds between two completed timing events (a float32 value)."""
    ms = c_float()
    try:
        err = _T.cudaEventElapsedTime(ms, start, end)
    except ctypes.ArgumentError:
        raise _bad_arg("start and end", (start, end)) from None
    if err:
        raise _error(err)
    return ms.value


def cudaIpcGetEventHandle(event):
    """The 64-byte IPC handle of an interprocess ``event``."""
    h = _IpcEventHandle()
    try:
        err = _T.cudaIpcGetEventHandle(h, event)
    except ctypes.ArgumentError:
        raise _bad_arg("event", event) from None
    if err:
        raise _error(err)
    return ctypes.string_at(ctypes.addressof(h), _IPC_HANDLE_SIZE)


def cudaIpcOpenEventHandle(handle):
    """Open an event from its 64-byte IPC ``handle`` (bytes-like); returns the event handle."""
    try:
        raw = bytes(memoryview(handle))
    except TypeError:
        raise TypeError(f"handle must be a bytes-like object of {_IPC_HANDLE_SIZE} bytes, "
                        f"not {type(handle).__name__}: {handle!r}") from None
    if len(raw) != _IPC_HANDLE_SIZE:
        raise ValueError(f"handle must be {_IPC_HANDLE_SIZE} bytes, got {len(raw)}")
    h = _IpcEventHandle.from_buffer_copy(raw)
    e = _P()
    err = _T.cudaIpcOpenEventHandle(e, h)
    if err:
        raise _error(err)
    return e.value


# -- memory and host functions ---------------------------------------------------------------------

def cudaMalloc(size):
    """Allocate ``size`` bytes on the current device; returns the pointer int."""
    p = _P()
    try:
        err = _T.cudaMalloc(p, size)
    except ctypes.ArgumentError:
        raise _bad_arg("size", size) from None
    if err:
        raise _error(err)
    return p.value or 0


def cudaFree(ptr):
    """Free device memory at ``ptr`` (0 is a no-op)."""
    try:
        err = _T.cudaFree(ptr)
    except ctypes.ArgumentError:
        raise _bad_arg("ptr", ptr) from None
    if err:
        raise _error(err)


def cudaMemcpyAsync(dst, src, count, kind, stream):
    """Copy ``count`` bytes from ``src`` to ``dst`` in ``stream`` order (cudaMemcpyKind ``kind``)."""
    try:
        err = _T.cudaMemcpyAsync(dst, src, count, kind, stream)
    except ctypes.ArgumentError:
        raise _bad_arg("dst, src, count, kind and stream", (dst, src, count, kind, stream)) from None
    if err:
        raise _error(err)


def cudaMemsetAsync(ptr, value, count, stream):
    """Set ``count`` bytes at ``ptr`` to ``value`` in ``stream`` order."""
    try:
        err = _T.cudaMemsetAsync(ptr, value, count, stream)
    except ctypes.ArgumentError:
        raise _bad_arg("ptr, value, count and stream", (ptr, value, count, stream)) from None
    if err:
        raise _error(err)


def cudaPointerGetAttributes(ptr):
    """(type, device, devicePointer, hostPointer) of ``ptr`` (cudaMemoryType codes)."""
    a = _PointerAttributes()
    try:
        err = _T.cudaPointerGetAttributes(a, ptr)
    except ctypes.ArgumentError:
        raise _bad_arg("ptr", ptr) from None
    if err:
        raise _error(err)
    return a.type, a.device, a.devicePointer or 0, a.hostPointer or 0


def cudaLaunchHostFunc(stream, fn, user_data):
    """Enqueue the C function pointer ``fn(user_data)`` on ``stream`` (both ints)."""
    try:
        err = _T.cudaLaunchHostFunc(stream, fn, user_data)
    except ctypes.ArgumentError:
        raise _bad_arg("stream, fn and user_data", (stream, fn, user_data)) from None
    if err:
        raise _error(err)


# -- driver ----------------------------------------------------------------------------------------

def _driver():
    global _D
    if _D is None:
        _load_table()
        _D = _bind(_lib.driver(), _DRIVER_PROTOTYPES, {}, missing_ok=True)
    return _D


def _driver_error(err):
    d = _D
    name, string = c_char_p(), c_char_p()
    if not isinstance(d.cuGetErrorName, _Missing):
        d.cuGetErrorName(err, name)
    if not isinstance(d.cuGetErrorString, _Missing):
        d.cuGetErrorString(err, string)
    return CudaDriverError(err, name.value.decode() if name.value else None,
                           string.value.decode() if string.value else None)


def cuDevicePrimaryCtxGetState(device):
    """(flags, active) of ``device``'s primary context, from the driver (libcuda or the emulator)."""
    d = _D if _D is not None else _driver()
    flags, active = c_uint(), c_int()
    try:
        err = d.cuDevicePrimaryCtxGetState(device, flags, active)
    except ctypes.ArgumentError:
        raise _bad_arg("device", device) from None
    if err:
        raise _driver_error(err)
    return flags.value, bool(active.value)
