"""Device-resident data of accel.lazy's CUDA backend: lazy Data handles whose values live in a DeviceArray.

A lazy ``Data`` handle (accel._lazy_trace.Data) holds a numpy array.  Under ``set_backend("cuda")`` a tensor's
values live in device memory instead: its handle is *device-only*, holding a zero-byte placeholder array (the
right dtype and shape, every element one read-only 0: ``numpy.broadcast_to``) and, in a table here, the
DeviceArray on accel's allocator (current device, current stream) with the values.  Graph inputs and outputs
stay on the device between steps; only reads copy back (``host_array``: numpy(), eager fallbacks), once per
handle.  A handle that holds host values (a numpy-backend result, a factory's array, a 0-dim number) gets a
device copy the first time a kernel reads it (``device_array``), kept for the handle's life, so it is uploaded
once too.  Numbers (0-dim) always keep their host value: kernels take them by value, as parameters.

Tables are keyed by the handle (weakly): a handle's device array is freed (stream-ordered, accel's allocator)
when the handle is.
"""
import threading
import weakref

import numpy as _np

from accel.lazy.tensors import Data

__all__ = ["upload", "wrap_device", "host_array", "device_array", "is_device_only", "as_handle", "host_value"]

_DEV = weakref.WeakKeyDictionary()       # handle -> DeviceArray holding its values
_HOST = weakref.WeakKeyDictionary()      # device-only handle -> its values copied back (after a first read)
_ONLY = weakref.WeakSet()                # the device-only handles
_lock = threading.RLock()


def _placeholder(dtype, shape):
    return _np.broadcast_to(_np.zeros((), dtype), shape)


def wrap_device(dev):
    """A device-only Data handle of the DeviceArray ``dev`` (which it keeps alive)."""
    h = Data(_placeholder(dev.dtype, tuple(dev.shape)))
    with _lock:
        _DEV[h] = dev
        _ONLY.add(h)
    return h


def upload(a):
    """A device-only handle holding a copy of the host array ``a`` (copied in on the current stream); a 0-dim or
    empty array stays a host handle (numbers are kernel parameters; nothing to copy)."""
    import accel.cuda as cuda
    if a.ndim == 0 or a.size == 0:
        return Data(a)
    return wrap_device(cuda.to_device(_np.ascontiguousarray(a)))


def is_device_only(h):
    return h in _ONLY


def host_array(h):
    """The host values of handle ``h`` (read-only for the caller): its array, or for a device-only handle its
    DeviceArray copied back on the current stream (once; later reads get the same array)."""
    if not _ONLY or h not in _ONLY:         # (no device-only handle alive: the numpy backend's case, one test)
        return h.array
    with _lock:
        a = _HOST.get(h)
        if a is None:
            dev = _DEV[h]
            a = _np.empty(tuple(dev.shape), dev.dtype)
            dev.copy_to_host(out=a)          # (pageable: synchronous with the stream's earlier kernels)
            a.flags.writeable = False
            _HOST[h] = a
    return a


def device_array(h):
    """The DeviceArray holding handle ``h``'s values (uploaded on the current stream on a first use, kept)."""
    dev = _DEV.get(h)
    if dev is None:
        import accel.cuda as cuda
        with _lock:
            dev = _DEV.get(h)
            if dev is None:
                dev = _DEV[h] = cuda.to_device(_np.ascontiguousarray(h.array))
    return dev


def host_value(x):
    """``x`` as host values: a handle's (host_array), else ``x`` itself (an array a program returned)."""
    return host_array(x) if type(x) is Data else x


def as_handle(x):
    """A result a program returned as a handle: a handle stays itself, an array gets one."""
    return x if type(x) is Data else Data(x)


class HostView:
    """What a numpy-backend program reads of a parameter (``array``, ``value``) for a device-only handle: its
    values copied back.  The fallback path hands these to host programs."""
    __slots__ = ("array", "value")

    def __init__(self, h):
        self.array = host_array(h)
        self.value = h.value


def host_params(P):
    """The parameters ``P`` as a host program reads them: device-only handles as HostViews."""
    if not _ONLY or not any(h in _ONLY for h in P):
        return P
    return [HostView(h) if h in _ONLY else h for h in P]
