# cython: binding=True
"""Cython binding of the CUDA runtime: one thin function per C function, named as the C function.

The twin of accel._python._cudart (same names, signatures, results and exceptions).  The library is
the one accel._lib opened (the same dlopen handle); its functions are resolved once into a typed
table.  Each function returns the out parameter(s) and raises ``CudaError`` after clearing the sticky
error with cudaGetLastError.  Calls that can block run without the GIL.  Integer arguments convert
like ctypes does (``__index__``, masked to the C type); other types raise TypeError naming the value.
"""
from cpython.long cimport PyLong_AsUnsignedLongLongMask
from cpython.number cimport PyNumber_Index
from libc.stdint cimport uintptr_t
from libc.string cimport memset

from accel import _lib
from accel.errors import CudaDriverError, CudaError

cdef extern from "<dlfcn.h>" nogil:
    void* dlsym(void* handle, const char* symbol)

# Symbols a library must export to be a CUDA runtime at all; the others fail only when called.
_REQUIRED = ("cudaGetDeviceCount", "cudaGetDevice", "cudaSetDevice", "cudaGetLastError",
             "cudaGetErrorString", "cudaGetErrorName")
_NAMES = (
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
    "cudaLaunchHostFunc",
)
__all__ = ["load", "driver_loaded"] + [n for n in _NAMES] + ["cuDevicePrimaryCtxGetState"]

DEF NOT_READY = 600
DEF PROPS_SIZE = 4096
DEF IPC_HANDLE_SIZE = 64

cdef Table _t
cdef DriverTable _d
cdef bint _loaded = False
cdef bint _driver_ready = False
cdef object _path = None


cdef int _load() except -1:
    global _loaded, _path
    if _loaded:
        return 0
    library = _lib.cudart()
    cdef void* handle = <void*><uintptr_t>library.handle
    cdef void** slots = <void**>&_t
    cdef bytes sym
    for i, name in enumerate(_NAMES):
        sym = name.encode()
        slots[i] = dlsym(handle, sym)
        if slots[i] == NULL and name == "cudaGetDeviceProperties":
            slots[i] = dlsym(handle, b"cudaGetDeviceProperties_v2")
        if slots[i] == NULL and name in _REQUIRED:
            raise _lib.LibraryNotFoundError(
                "CUDA runtime library (libcudart)", [f"{library.path}: does not export {name}"])
    # CUDA 12 exports the current struct layout as _v2; prefer it over the legacy symbol.
    cdef void* v2 = dlsym(handle, b"cudaGetDeviceProperties_v2")
    if v2 != NULL:
        _t.cudaGetDeviceProperties = <cudaError_t (*)(void*, int) noexcept nogil>v2
    _path = library.path
    _loaded = True
    return 0


cdef Table* table() except NULL:
    if not _loaded:
        _load()
    return &_t


cdef DriverTable* driver_table() except NULL:
    if not _driver_ready:
        _load_driver()
    return &_d


def load():
    """Open and bind the CUDA runtime now; returns its path.  Raises LibraryNotFoundError."""
    _load()
    return _path


def driver_loaded():
    """True once the driver library has been opened for cuDevicePrimaryCtxGetState."""
    return _driver_ready


cdef object error(cudaError_t err):
    """Clear the sticky error and build the CudaError for ``err``."""
    _t.cudaGetLastError()
    cdef const char* name = _t.cudaGetErrorName(err)
    cdef const char* string = _t.cudaGetErrorString(err)
    return CudaError(err, name.decode() if name != NULL else None,
                     string.decode() if string != NULL else None)


cdef inline int _missing(const void* fn, str name) except -1:
    if fn == NULL:
        raise NotImplementedError(f"{name} is not exported by {_path}")
    return 0


cdef object _bad_arg(str what, value):
    return TypeError(f"{what} must be an int, not {type(value).__name__}: {value!r}")


cdef inline bint _isint(x):
    # What ctypes accepts for an integer argument: int or anything with __index__.
    return isinstance(x, int) or hasattr(type(x), "__index__")


cdef inline unsigned long long _u(x):
    # Converts like ctypes: masked to 64 bits (callers check _isint first).
    if type(x) is not int:
        x = PyNumber_Index(x)
    return PyLong_AsUnsignedLongLongMask(x)


# -- devices ---------------------------------------------------------------------------------------

def cudaGetDeviceCount():
    """Number of devices; raises CudaError (e.g. 35 without a driver, 100 with no device)."""
    cdef int v = 0
    if not _loaded:
        _load()
    cdef cudaError_t err
    with nogil:  # the first call initialises the runtime (slow on a real GPU)
        err = _t.cudaGetDeviceCount(&v)
    if err:
        raise error(err)
    return v


def cudaGetDevice():
    """The calling thread's current device."""
    cdef int v = 0
    if not _loaded:
        _load()
    cdef cudaError_t err = _t.cudaGetDevice(&v)
    if err:
        raise error(err)
    return v


def cudaSetDevice(device):
    """Make ``device`` current for the calling thread (creates its primary context)."""
    if not _loaded:
        _load()
    if not _isint(device):
        raise _bad_arg("device", device)
    cdef cudaError_t err = _t.cudaSetDevice(<int>_u(device))
    if err:
        raise error(err)


def cudaDeviceSynchronize():
    """Wait for all work on the current device."""
    if not _loaded:
        _load()
    _missing(_t.cudaDeviceSynchronize, "cudaDeviceSynchronize")
    cdef cudaError_t err
    with nogil:
        err = _t.cudaDeviceSynchronize()
    if err:
        raise error(err)


def cudaDriverGetVersion():
    """The driver's CUDA version (e.g. 13000), 0 when no driver is installed."""
    cdef int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaDriverGetVersion, "cudaDriverGetVersion")
    cdef cudaError_t err = _t.cudaDriverGetVersion(&v)
    if err:
        raise error(err)
    return v


def cudaRuntimeGetVersion():
    """The runtime library's CUDA version (e.g. 13000)."""
    cdef int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaRuntimeGetVersion, "cudaRuntimeGetVersion")
    cdef cudaError_t err = _t.cudaRuntimeGetVersion(&v)
    if err:
        raise error(err)
    return v


def cudaGetLastError():
    """Return and clear the calling thread's last error code (never raises)."""
    if not _loaded:
        _load()
    return _t.cudaGetLastError()


def cudaPeekAtLastError():
    """Return the calling thread's last error code without clearing it (never raises)."""
    if not _loaded:
        _load()
    _missing(_t.cudaPeekAtLastError, "cudaPeekAtLastError")
    return _t.cudaPeekAtLastError()


def cudaGetErrorString(error):
    """The runtime's description of ``error``."""
    if not _loaded:
        _load()
    if not _isint(error):
        raise _bad_arg("error", error)
    cdef const char* s = _t.cudaGetErrorString(<int>_u(error))
    return s.decode() if s != NULL else None


def cudaGetErrorName(error):
    """The runtime's enum name of ``error``."""
    if not _loaded:
        _load()
    if not _isint(error):
        raise _bad_arg("error", error)
    cdef const char* s = _t.cudaGetErrorName(<int>_u(error))
    return s.decode() if s != NULL else None


def cudaDeviceGetStreamPriorityRange():
    """(leastPriority, greatestPriority) of the current device, e.g. (0, -5)."""
    cdef int lo = 0, hi = 0
    if not _loaded:
        _load()
    _missing(_t.cudaDeviceGetStreamPriorityRange, "cudaDeviceGetStreamPriorityRange")
    cdef cudaError_t err = _t.cudaDeviceGetStreamPriorityRange(&lo, &hi)
    if err:
        raise error(err)
    return lo, hi


def cudaDeviceGetAttribute(attr, device):
    """Integer value of cudaDeviceAttr ``attr`` for ``device``."""
    cdef int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaDeviceGetAttribute, "cudaDeviceGetAttribute")
    if not (_isint(attr) and _isint(device)):
        raise _bad_arg("attr and device", (attr, device))
    cdef cudaError_t err = _t.cudaDeviceGetAttribute(&v, <int>_u(attr), <int>_u(device))
    if err:
        raise error(err)
    return v


def cudaGetDeviceProperties(device):
    """(name, uuid, total_memory) from the stable head of cudaDeviceProp for ``device``."""
    cdef char buf[PROPS_SIZE]
    if not _loaded:
        _load()
    _missing(_t.cudaGetDeviceProperties, "cudaGetDeviceProperties")
    if not _isint(device):
        raise _bad_arg("device", device)
    memset(buf, 0, PROPS_SIZE)
    cdef cudaError_t err = _t.cudaGetDeviceProperties(buf, <int>_u(device))
    if err:
        raise error(err)
    raw = buf[:296]
    return (raw[:256].split(b"\0", 1)[0].decode(errors="replace"), raw[256:272],
            int.from_bytes(raw[288:296], "little"))


def cudaDeviceCanAccessPeer(device, peer):
    """Whether ``device`` can access ``peer``'s memory directly."""
    cdef int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaDeviceCanAccessPeer, "cudaDeviceCanAccessPeer")
    if not (_isint(device) and _isint(peer)):
        raise _bad_arg("device and peer", (device, peer))
    cdef cudaError_t err = _t.cudaDeviceCanAccessPeer(&v, <int>_u(device), <int>_u(peer))
    if err:
        raise error(err)
    return bool(v)


def cudaMemGetInfo():
    """(free, total) bytes on the current device."""
    cdef size_t free = 0, total = 0
    if not _loaded:
        _load()
    _missing(_t.cudaMemGetInfo, "cudaMemGetInfo")
    cdef cudaError_t err
    with nogil:
        err = _t.cudaMemGetInfo(&free, &total)
    if err:
        raise error(err)
    return free, total


# -- streams ---------------------------------------------------------------------------------------

def cudaStreamCreate():
    """A new blocking stream on the current device (handle int)."""
    cdef cudaStream_t s = NULL
    if not _loaded:
        _load()
    _missing(_t.cudaStreamCreate, "cudaStreamCreate")
    cdef cudaError_t err
    with nogil:
        err = _t.cudaStreamCreate(&s)
    if err:
        raise error(err)
    return <uintptr_t>s


def cudaStreamCreateWithFlags(flags):
    """A new stream with ``flags`` (0 default, 1 non-blocking) on the current device."""
    cdef cudaStream_t s = NULL
    if not _loaded:
        _load()
    _missing(_t.cudaStreamCreateWithFlags, "cudaStreamCreateWithFlags")
    if not _isint(flags):
        raise _bad_arg("flags", flags)
    cdef unsigned int f = <unsigned int>_u(flags)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaStreamCreateWithFlags(&s, f)
    if err:
        raise error(err)
    return <uintptr_t>s


def cudaStreamCreateWithPriority(flags, priority):
    """A new stream with ``flags`` and ``priority`` (clamped by the runtime) on the current device."""
    cdef cudaStream_t s = NULL
    if not _loaded:
        _load()
    _missing(_t.cudaStreamCreateWithPriority, "cudaStreamCreateWithPriority")
    if not (_isint(flags) and _isint(priority)):
        raise _bad_arg("flags and priority", (flags, priority))
    cdef unsigned int f = <unsigned int>_u(flags)
    cdef int p = <int>_u(priority)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaStreamCreateWithPriority(&s, f, p)
    if err:
        raise error(err)
    return <uintptr_t>s


def cudaStreamDestroy(stream):
    """Destroy ``stream`` (its pending work still completes)."""
    if not _loaded:
        _load()
    _missing(_t.cudaStreamDestroy, "cudaStreamDestroy")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaStream_t s = <cudaStream_t><uintptr_t>_u(stream)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaStreamDestroy(s)
    if err:
        raise error(err)


def cudaStreamQuery(stream):
    """True if all work on ``stream`` is done, False if not (cudaErrorNotReady)."""
    if not _loaded:
        _load()
    _missing(_t.cudaStreamQuery, "cudaStreamQuery")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaError_t err = _t.cudaStreamQuery(<cudaStream_t><uintptr_t>_u(stream))
    if err == 0:
        return True
    if err == NOT_READY:
        _t.cudaGetLastError()
        return False
    raise error(err)


def cudaStreamSynchronize(stream):
    """Wait for all work on ``stream``."""
    if not _loaded:
        _load()
    _missing(_t.cudaStreamSynchronize, "cudaStreamSynchronize")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaStream_t s = <cudaStream_t><uintptr_t>_u(stream)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaStreamSynchronize(s)
    if err:
        raise error(err)


def cudaStreamGetPriority(stream):
    """The priority of ``stream``."""
    cdef int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaStreamGetPriority, "cudaStreamGetPriority")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaError_t err = _t.cudaStreamGetPriority(<cudaStream_t><uintptr_t>_u(stream), &v)
    if err:
        raise error(err)
    return v


def cudaStreamGetFlags(stream):
    """The creation flags of ``stream``."""
    cdef unsigned int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaStreamGetFlags, "cudaStreamGetFlags")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaError_t err = _t.cudaStreamGetFlags(<cudaStream_t><uintptr_t>_u(stream), &v)
    if err:
        raise error(err)
    return v


def cudaStreamGetId(stream):
    """The runtime's unique id of ``stream``."""
    cdef unsigned long long v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaStreamGetId, "cudaStreamGetId")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaError_t err = _t.cudaStreamGetId(<cudaStream_t><uintptr_t>_u(stream), &v)
    if err:
        raise error(err)
    return v


def cudaStreamGetDevice(stream):
    """The device of ``stream`` (CUDA >= 12.8; NotImplementedError if the library lacks it)."""
    cdef int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaStreamGetDevice, "cudaStreamGetDevice")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaError_t err = _t.cudaStreamGetDevice(<cudaStream_t><uintptr_t>_u(stream), &v)
    if err:
        raise error(err)
    return v


def cudaStreamWaitEvent(stream, event, flags=0):
    """Make future work on ``stream`` wait for ``event``'s latest record."""
    if not _loaded:
        _load()
    _missing(_t.cudaStreamWaitEvent, "cudaStreamWaitEvent")
    if not (_isint(stream) and _isint(event) and _isint(flags)):
        raise _bad_arg("stream, event and flags", (stream, event, flags))
    cdef cudaStream_t s = <cudaStream_t><uintptr_t>_u(stream)
    cdef cudaEvent_t e = <cudaEvent_t><uintptr_t>_u(event)
    cdef unsigned int f = <unsigned int>_u(flags)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaStreamWaitEvent(s, e, f)
    if err:
        raise error(err)


def cudaStreamIsCapturing(stream):
    """cudaStreamCaptureStatus of ``stream`` (0 none, 1 active, 2 invalidated)."""
    cdef int v = 0
    if not _loaded:
        _load()
    _missing(_t.cudaStreamIsCapturing, "cudaStreamIsCapturing")
    if not _isint(stream):
        raise _bad_arg("stream", stream)
    cdef cudaError_t err = _t.cudaStreamIsCapturing(<cudaStream_t><uintptr_t>_u(stream), &v)
    if err:
        raise error(err)
    return v


def cudaThreadExchangeStreamCaptureMode(mode):
    """Set this thread's capture mode to ``mode``; returns the previous mode."""
    if not _loaded:
        _load()
    _missing(_t.cudaThreadExchangeStreamCaptureMode, "cudaThreadExchangeStreamCaptureMode")
    if not _isint(mode):
        raise _bad_arg("mode", mode)
    cdef int v = <int>_u(mode)
    cdef cudaError_t err = _t.cudaThreadExchangeStreamCaptureMode(&v)
    if err:
        raise error(err)
    return v


# -- events ----------------------------------------------------------------------------------------

def cudaEventCreate():
    """A new event (default flags) on the current device."""
    cdef cudaEvent_t e = NULL
    if not _loaded:
        _load()
    _missing(_t.cudaEventCreate, "cudaEventCreate")
    cdef cudaError_t err
    with nogil:
        err = _t.cudaEventCreate(&e)
    if err:
        raise error(err)
    return <uintptr_t>e


def cudaEventCreateWithFlags(flags):
    """A new event with ``flags`` (1 blocking sync, 2 disable timing, 4 interprocess)."""
    cdef cudaEvent_t e = NULL
    if not _loaded:
        _load()
    _missing(_t.cudaEventCreateWithFlags, "cudaEventCreateWithFlags")
    if not _isint(flags):
        raise _bad_arg("flags", flags)
    cdef unsigned int f = <unsigned int>_u(flags)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaEventCreateWithFlags(&e, f)
    if err:
        raise error(err)
    return <uintptr_t>e


def cudaEventDestroy(event):
    """Destroy ``event``."""
    if not _loaded:
        _load()
    _missing(_t.cudaEventDestroy, "cudaEventDestroy")
    if not _isint(event):
        raise _bad_arg("event", event)
    cdef cudaEvent_t e = <cudaEvent_t><uintptr_t>_u(event)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaEventDestroy(e)
    if err:
        raise error(err)


def cudaEventRecord(event, stream):
    """Record ``event`` at the current end of ``stream``."""
    if not _loaded:
        _load()
    _missing(_t.cudaEventRecord, "cudaEventRecord")
    if not (_isint(event) and _isint(stream)):
        raise _bad_arg("event and stream", (event, stream))
    cdef cudaEvent_t e = <cudaEvent_t><uintptr_t>_u(event)
    cdef cudaStream_t s = <cudaStream_t><uintptr_t>_u(stream)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaEventRecord(e, s)
    if err:
        raise error(err)


def cudaEventRecordWithFlags(event, stream, flags=0):
    """Record ``event`` on ``stream`` with ``flags`` (1 = external, during capture)."""
    if not _loaded:
        _load()
    _missing(_t.cudaEventRecordWithFlags, "cudaEventRecordWithFlags")
    if not (_isint(event) and _isint(stream) and _isint(flags)):
        raise _bad_arg("event, stream and flags", (event, stream, flags))
    cdef cudaEvent_t e = <cudaEvent_t><uintptr_t>_u(event)
    cdef cudaStream_t s = <cudaStream_t><uintptr_t>_u(stream)
    cdef unsigned int f = <unsigned int>_u(flags)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaEventRecordWithFlags(e, s, f)
    if err:
        raise error(err)


def cudaEventQuery(event):
    """True if ``event``'s latest record was reached (or it was never recorded), else False."""
    if not _loaded:
        _load()
    _missing(_t.cudaEventQuery, "cudaEventQuery")
    if not _isint(event):
        raise _bad_arg("event", event)
    cdef cudaError_t err = _t.cudaEventQuery(<cudaEvent_t><uintptr_t>_u(event))
    if err == 0:
        return True
    if err == NOT_READY:
        _t.cudaGetLastError()
        return False
    raise error(err)


def cudaEventSynchronize(event):
    """Wait until ``event``'s latest record is reached."""
    if not _loaded:
        _load()
    _missing(_t.cudaEventSynchronize, "cudaEventSynchronize")
    if not _isint(event):
        raise _bad_arg("event", event)
    cdef cudaEvent_t e = <cudaEvent_t><uintptr_t>_u(event)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaEventSynchronize(e)
    if err:
        raise error(err)


def cudaEventElapsedTime(start, end):
    """Milliseconds between two completed timing events (a float32 value)."""
    cdef float ms = 0
    if not _loaded:
        _load()
    _missing(_t.cudaEventElapsedTime, "cudaEventElapsedTime")
    if not (_isint(start) and _isint(end)):
        raise _bad_arg("start and end", (start, end))
    cdef cudaError_t err = _t.cudaEventElapsedTime(
        &ms, <cudaEvent_t><uintptr_t>_u(start), <cudaEvent_t><uintptr_t>_u(end))
    if err:
        raise error(err)
    return ms


def cudaIpcGetEventHandle(event):
    """The 64-byte IPC handle of an interprocess ``event``."""
    cdef IpcEventHandle h
    if not _loaded:
        _load()
    _missing(_t.cudaIpcGetEventHandle, "cudaIpcGetEventHandle")
    if not _isint(event):
        raise _bad_arg("event", event)
    memset(&h, 0, sizeof(h))
    cdef cudaError_t err = _t.cudaIpcGetEventHandle(&h, <cudaEvent_t><uintptr_t>_u(event))
    if err:
        raise error(err)
    return (<char*>&h)[:IPC_HANDLE_SIZE]


def cudaIpcOpenEventHandle(handle):
    """Open an event from its 64-byte IPC ``handle`` (bytes-like); returns the event handle."""
    cdef IpcEventHandle h
    cdef cudaEvent_t e = NULL
    if not _loaded:
        _load()
    _missing(_t.cudaIpcOpenEventHandle, "cudaIpcOpenEventHandle")
    try:
        raw = bytes(memoryview(handle))
    except TypeError:
        raise TypeError(f"handle must be a bytes-like object of {IPC_HANDLE_SIZE} bytes, "
                        f"not {type(handle).__name__}: {handle!r}") from None
    if len(raw) != IPC_HANDLE_SIZE:
        raise ValueError(f"handle must be {IPC_HANDLE_SIZE} bytes, got {len(raw)}")
    cdef const char* src = raw
    for i in range(IPC_HANDLE_SIZE):
        h.reserved[i] = src[i]
    cdef cudaError_t err
    with nogil:
        err = _t.cudaIpcOpenEventHandle(&e, h)
    if err:
        raise error(err)
    return <uintptr_t>e


# -- memory and host functions ---------------------------------------------------------------------

def cudaMalloc(size):
    """Allocate ``size`` bytes on the current device; returns the pointer int."""
    cdef void* p = NULL
    if not _loaded:
        _load()
    _missing(_t.cudaMalloc, "cudaMalloc")
    if not _isint(size):
        raise _bad_arg("size", size)
    cdef size_t n = <size_t>_u(size)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaMalloc(&p, n)
    if err:
        raise error(err)
    return <uintptr_t>p


def cudaFree(ptr):
    """Free device memory at ``ptr`` (0 is a no-op)."""
    if not _loaded:
        _load()
    _missing(_t.cudaFree, "cudaFree")
    if not _isint(ptr):
        raise _bad_arg("ptr", ptr)
    cdef void* p = <void*><uintptr_t>_u(ptr)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaFree(p)
    if err:
        raise error(err)


def cudaMemcpyAsync(dst, src, count, kind, stream):
    """Copy ``count`` bytes from ``src`` to ``dst`` in ``stream`` order (cudaMemcpyKind ``kind``)."""
    if not _loaded:
        _load()
    _missing(_t.cudaMemcpyAsync, "cudaMemcpyAsync")
    if not (_isint(dst) and _isint(src) and _isint(count) and _isint(kind) and _isint(stream)):
        raise _bad_arg("dst, src, count, kind and stream", (dst, src, count, kind, stream))
    cdef void* d = <void*><uintptr_t>_u(dst)
    cdef const void* s = <const void*><uintptr_t>_u(src)
    cdef size_t n = <size_t>_u(count)
    cdef int k = <int>_u(kind)
    cdef cudaStream_t st = <cudaStream_t><uintptr_t>_u(stream)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaMemcpyAsync(d, s, n, k, st)
    if err:
        raise error(err)


def cudaMemsetAsync(ptr, value, count, stream):
    """Set ``count`` bytes at ``ptr`` to ``value`` in ``stream`` order."""
    if not _loaded:
        _load()
    _missing(_t.cudaMemsetAsync, "cudaMemsetAsync")
    if not (_isint(ptr) and _isint(value) and _isint(count) and _isint(stream)):
        raise _bad_arg("ptr, value, count and stream", (ptr, value, count, stream))
    cdef void* p = <void*><uintptr_t>_u(ptr)
    cdef int v = <int>_u(value)
    cdef size_t n = <size_t>_u(count)
    cdef cudaStream_t st = <cudaStream_t><uintptr_t>_u(stream)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaMemsetAsync(p, v, n, st)
    if err:
        raise error(err)


def cudaPointerGetAttributes(ptr):
    """(type, device, devicePointer, hostPointer) of ``ptr`` (cudaMemoryType codes)."""
    cdef PointerAttributes a
    if not _loaded:
        _load()
    _missing(_t.cudaPointerGetAttributes, "cudaPointerGetAttributes")
    if not _isint(ptr):
        raise _bad_arg("ptr", ptr)
    memset(&a, 0, sizeof(a))
    cdef cudaError_t err = _t.cudaPointerGetAttributes(&a, <const void*><uintptr_t>_u(ptr))
    if err:
        raise error(err)
    return a.type, a.device, <uintptr_t>a.devicePointer, <uintptr_t>a.hostPointer


def cudaLaunchHostFunc(stream, fn, user_data):
    """Enqueue the C function pointer ``fn(user_data)`` on ``stream`` (both ints)."""
    if not _loaded:
        _load()
    _missing(_t.cudaLaunchHostFunc, "cudaLaunchHostFunc")
    if not (_isint(stream) and _isint(fn) and _isint(user_data)):
        raise _bad_arg("stream, fn and user_data", (stream, fn, user_data))
    cdef cudaStream_t s = <cudaStream_t><uintptr_t>_u(stream)
    cdef cudaHostFn_t f = <cudaHostFn_t><uintptr_t>_u(fn)
    cdef void* u = <void*><uintptr_t>_u(user_data)
    cdef cudaError_t err
    with nogil:
        err = _t.cudaLaunchHostFunc(s, f, u)
    if err:
        raise error(err)


# -- driver ----------------------------------------------------------------------------------------

cdef int _load_driver() except -1:
    global _driver_ready
    if _driver_ready:
        return 0
    _load()
    library = _lib.driver()
    cdef void* handle = <void*><uintptr_t>library.handle
    _d.cuDevicePrimaryCtxGetState = <int (*)(int, unsigned int*, int*) noexcept nogil>dlsym(
        handle, b"cuDevicePrimaryCtxGetState")
    _d.cuGetErrorName = <int (*)(int, const char**) noexcept nogil>dlsym(handle, b"cuGetErrorName")
    _d.cuGetErrorString = <int (*)(int, const char**) noexcept nogil>dlsym(handle, b"cuGetErrorString")
    if _d.cuDevicePrimaryCtxGetState == NULL:
        raise NotImplementedError(f"cuDevicePrimaryCtxGetState is not exported by {library.path}")
    _driver_ready = True
    return 0


cdef object driver_error(int err):
    cdef const char* name = NULL
    cdef const char* string = NULL
    if _d.cuGetErrorName != NULL:
        _d.cuGetErrorName(err, &name)
    if _d.cuGetErrorString != NULL:
        _d.cuGetErrorString(err, &string)
    return CudaDriverError(err, name.decode() if name != NULL else None,
                           string.decode() if string != NULL else None)


def cuDevicePrimaryCtxGetState(device):
    """(flags, active) of ``device``'s primary context, from the driver (libcuda or the emulator)."""
    cdef unsigned int flags = 0
    cdef int active = 0
    if not _driver_ready:
        _load_driver()
    if not _isint(device):
        raise _bad_arg("device", device)
    cdef int err = _d.cuDevicePrimaryCtxGetState(<int>_u(device), &flags, &active)
    if err:
        raise driver_error(err)
    return flags, bool(active)
