"""Pieces shared by the twins (accel._native / accel._python: _stream, and _device's argument checks), off
the hot path.

Both twins import this module so that their slow-path results and messages are the very same:
the device object of ``Stream.device`` / ``Event.device``, the ``__cuda_stream__`` protocol parser,
argument checks and error messages.
"""
import sys
import time

from accel import _torch_link

IPC_HANDLE_SIZE = 64
MAX_PRIORITIES = 4      # torch's max_compile_time_stream_priorities
STREAMS_PER_POOL = 32   # torch's kStreamsPerPool
MAX_DEVICES = 512       # torch's C10_COMPILE_TIME_MAX_GPUS

# cudaEvent flags
EVENT_BLOCKING_SYNC = 0x1
EVENT_DISABLE_TIMING = 0x2
EVENT_INTERPROCESS = 0x4
EVENT_EXTERNAL = 0x100      # accel's own bit of Event._flags (torch's external=True): never passed to CUDA
STREAM_NON_BLOCKING = 0x1
NOT_READY = 600


class DeviceObject:
    """A device as ``Stream.device`` / ``Event.device`` return it: ``type`` (the subclass's) and ``index``
    like torch.device; usable wherever a device index is (``__index__``).  Shared by accel.cuda and
    accel.mtia."""

    __slots__ = ("index",)
    type = None

    def __init__(self, index):
        self.index = int(index)

    def __index__(self):
        return self.index

    def __eq__(self, other):
        if isinstance(other, str):
            return other == str(self)
        if isinstance(other, (int, float, bool)) or not hasattr(other, "index"):
            return NotImplemented
        return getattr(other, "type", None) == self.type and other.index == self.index

    def __hash__(self):
        return hash(str(self))  # equal to the string "type:N", so hashed like it

    def __str__(self):
        return f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}', index={self.index})"


class CudaDevice(DeviceObject):
    """A CUDA device as ``Stream.device`` / ``Event.device`` return it (``type == "cuda"``, ``index``)."""

    __slots__ = ()
    type = "cuda"


def cuda_device(index):
    """The ``.device`` of a Stream, Event, DeviceBuffer or DeviceArray of device ``index``: a CudaDevice, or
    torch's own ``torch.device`` once accel shares torch's process and runtime (accel._torch_link), since torch
    reads a device object it does not know as its current device."""
    td = _torch_link.torch_device
    return CudaDevice(index) if td is None else td("cuda", index)


def index_of(value, what):
    """``value.__index__()`` as an int (``value``'s type has ``__index__``); TypeError naming ``value`` and
    ``what`` it is for when ``__index__`` returns something else.  An exception from ``__index__`` itself
    propagates unchanged."""
    v = type(value).__index__(value)
    if type(v) is not int:
        if not isinstance(v, int):
            raise TypeError(f"invalid {what}: {type(value).__name__}.__index__() returned {type(v).__name__} "
                            f"{v!r}, expected an int")
        v = int(v)
    return v


def device_index(value):
    """A stream-API device argument that is not an int, after parsing: its index (``__index__``), or the
    TypeError naming it (bools are not device indices)."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise bad_device(value)
    return index_of(value, "device index")


def stream_ptr_of(obj):
    """``(pointer, owner)`` for an int stream pointer or an object with ``__cuda_stream__``
    (returning ``(0, pointer)``); TypeError / ValueError naming ``obj`` otherwise."""
    proto = getattr(type(obj), "__cuda_stream__", None)
    if proto is not None:
        info = obj.__cuda_stream__() if callable(proto) else proto
        if not isinstance(info, tuple) or len(info) != 2:
            raise ValueError(f"__cuda_stream__ of {obj!r} must return a 2-tuple (version, pointer), got {info!r}")
        if info[0] != 0:
            raise ValueError(f"__cuda_stream__ of {obj!r} returned protocol version {info[0]!r}; only 0 is supported")
        ptr, owner = info[1], obj
    else:
        ptr, owner = obj, None
    if isinstance(ptr, bool) or not hasattr(type(ptr), "__index__"):
        raise TypeError(f"expected a stream pointer (int) or an object with __cuda_stream__, "
                        f"got {type(obj).__name__}: {obj!r}")
    ptr = index_of(ptr, "stream pointer")
    if ptr < 0 or ptr >= 1 << 64:
        raise ValueError(f"stream pointer must be in [0, 2**64), got {ptr:#x}")
    return ptr, owner


def event_handle_of(obj):
    """The cudaEvent_t (an int; 0: never created) of another library's event: torch's ``cuda_event``,
    cuda.core's ``handle`` (a CUevent, int() of it); None when ``obj`` exposes neither, or is a stream
    (``__cuda_stream__``: cuda.core's streams have a ``handle`` too); ValueError for a handle outside
    [0, 2**64)."""
    if hasattr(type(obj), "__cuda_stream__"):
        return None
    for name in ("cuda_event", "handle"):
        h = getattr(obj, name, None)
        if h is None or callable(h) or isinstance(h, (bool, float)):
            continue
        if hasattr(type(h), "__index__"):
            h = index_of(h, f"{name} of {type(obj).__name__}")
        elif hasattr(type(h), "__int__"):   # cuda.bindings' CUevent
            h = int(h)
        else:
            continue
        if h < 0 or h >= 1 << 64:
            raise ValueError(f"{name} of {obj!r} must be an event handle in [0, 2**64), got {h:#x}")
        return h
    return None


def bad_event(value):
    return TypeError(f"expected an accel.cuda.Event, an event that exposes its handle (torch's cuda_event, "
                     f"cuda.core's handle) or an event with .wait(stream), got {type(value).__name__}: {value!r}")


def check_priority(priority):
    """``priority`` as an int (TypeError naming it otherwise)."""
    if type(priority) is int:
        return priority
    if isinstance(priority, bool) or not hasattr(type(priority), "__index__"):
        raise TypeError(f"priority must be an int, got {type(priority).__name__}: {priority!r}")
    return index_of(priority, "priority")


def ipc_bytes(handle):
    """``handle`` as 64 bytes (torch's size check); TypeError if it is not bytes-like."""
    try:
        raw = bytes(memoryview(handle))
    except TypeError:
        raise TypeError(f"handle must be a bytes-like object, got {type(handle).__name__}: {handle!r}") from None
    if len(raw) != IPC_HANDLE_SIZE:
        raise ValueError(f"cudaIpcEventHandle_t expects byte-like object of size {IPC_HANDLE_SIZE}, "
                         f"but got {len(raw)}")
    return raw


def bad_stream(value):
    return TypeError(f"expected an accel.cuda.Stream (or an object with __cuda_stream__), "
                     f"got {type(value).__name__}: {value!r}")


def bad_device(value):
    return TypeError(f"expected a device index (int, not bool), a device string or object, or None, "
                     f"got {type(value).__name__}: {value!r}")


def out_of_range(d, n):
    return ValueError(f"Device index value {d} is out of index range [0, {n})")


HOST_FUNC_AT_EXIT = "cannot launch a host function: the interpreter is shutting down"


def wait_for_host_functions(in_flight, poll=0.001, say_after=5.0):
    """At exit: sleep (GIL released, so queued host functions can run) until ``in_flight()`` is 0.  Waits
    as long as it takes, like Python for non-daemon threads; says on stderr what it waits for after
    ``say_after`` seconds."""
    said = False
    start = time.monotonic()
    while in_flight() > 0:
        if not said and time.monotonic() - start > say_after:
            said = True
            sys.stderr.write(f"accel: waiting at exit for {in_flight()} queued host function(s) "
                             "(Stream.launch_host_func) to finish\n")
        time.sleep(poll)


DEVICE_TYPE_CUDA = 1   # c10::DeviceType::CUDA, what Stream.device_type reports


def decode_stream_id(stream_id, device_index, device_type, priority):
    """torch's StreamId decoding (c10/cuda/CUDAStream.h) for ``Stream(stream_id=, device_index=,
    device_type=)``: ``(device, kind, a, b)`` with kind ``"default"``, ``"pool"`` (a = priority level,
    b = pool slot) or ``"external"`` (a = the cudaStream_t).  TypeError / ValueError naming a bad value;
    the device index is range-checked by the caller."""
    if stream_id is None or device_index is None:
        raise TypeError("Stream(stream_id=, device_index=, device_type=) needs both stream_id and device_index, "
                        f"got stream_id={stream_id!r}, device_index={device_index!r}")
    sid = _int_arg(stream_id, "stream_id")
    d = _int_arg(device_index, "device_index")
    t = DEVICE_TYPE_CUDA if device_type is None else _int_arg(device_type, "device_type")
    if t != DEVICE_TYPE_CUDA:
        raise ValueError(f"device_type must be {DEVICE_TYPE_CUDA} (CUDA) for an accel.cuda.Stream, got {t}")
    if priority != 0:
        raise ValueError(f"priority cannot be given with stream_id (the id fixes it), got priority={priority!r}")
    if not -(1 << 63) <= sid < (1 << 63):
        raise ValueError(f"invalid StreamId {sid}: expected a signed 64-bit value")
    if sid == 0:
        return d, "default", 0, 0
    # torch: bit 0 clear is an external stream (the id is the cudaStream_t).  A pool id never has a bit
    # above bit 9, so accel also reads an odd id from 1024 up as an external handle (torch refuses it:
    # real stream pointers are aligned, but other runtimes' handles, the emulator's included, may be odd).
    if sid & 1 == 0 or not 0 < sid < 1 << 10:
        return d, "external", sid & ((1 << 64) - 1), 0
    kind = (sid >> 1) & 0xF
    if kind == 0 or kind > MAX_PRIORITIES:
        raise ValueError(f"invalid StreamId {sid}: not a default, pool or external stream id")
    return d, "pool", kind - 1, (sid >> 5) & (STREAMS_PER_POOL - 1)


def torch_pool_handle(stream_id, device):
    """The cudaStream_t of torch's pool stream ``stream_id`` of ``device`` (accel shares torch's process and
    runtime: a pool id there is torch's, accel's own pool streams carrying their handle as id)."""
    import torch.cuda       # (loaded: accel._torch_link linked to it)
    return torch.cuda.Stream(stream_id=stream_id, device_index=device, device_type=DEVICE_TYPE_CUDA).cuda_stream


def _int_arg(value, what):
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}: {value!r}")
    return index_of(value, what)
