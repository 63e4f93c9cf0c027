"""The device half of accel.cuda (torch.cuda names and semantics): init and state, device selection,
device arguments, properties, sync debug mode, NVML monitoring.

Selection (``current_device``, ``set_device``, ``exchange_device``, ``maybe_exchange_device``,
``device``) is the selected twin's own code: no Python layer on the hot path.
"""
from accel import _impl
from accel.cuda._init import (
    _is_in_bad_fork, _lazy_call, _lazy_init, device_count, init, is_available, is_initialized)
from accel.cuda._nvml import clock_rate, memory_usage, power_draw, temperature, utilization
from accel.cuda._properties import (
    _CudaDeviceProperties, can_device_access_peer, get_device_capability, get_device_name,
    get_device_properties, local_device, mem_get_info, synchronize)
from accel.cuda._utils import _get_device_index
from accel.cuda._visible import (
    _device_count_nvml, _parse_visible_devices, _raw_device_count_nvml, _raw_device_uuid_nvml,
    _transform_uuid_to_ordinals)
from accel.errors import CudaError

_device = _impl.module("_device")

__all__ = [
    "init", "is_initialized", "is_available", "device_count", "check_error",
    "current_device", "set_device", "exchange_device", "maybe_exchange_device", "has_primary_context",
    "device", "device_of", "synchronize",
    "get_device_properties", "get_device_name", "get_device_capability", "can_device_access_peer",
    "mem_get_info", "set_sync_debug_mode", "get_sync_debug_mode", "local_device",
    "utilization", "memory_usage", "temperature", "power_draw", "clock_rate",
    # private names other accel modules and torch-ported code use
    "_lazy_init", "_lazy_call", "_is_in_bad_fork", "_get_device_index", "_exchange_device",
    "_maybe_exchange_device", "_DeviceGuard", "_CudaDeviceProperties", "_parse_visible_devices",
    "_raw_device_count_nvml", "_raw_device_uuid_nvml", "_transform_uuid_to_ordinals", "_device_count_nvml",
]

current_device = _device.current_device
exchange_device = _exchange_device = _device.exchange_device
maybe_exchange_device = _maybe_exchange_device = _device.maybe_exchange_device
device = _DeviceGuard = _device.device
# device(...) parses its non-int arguments (strings, None, device objects) like torch.cuda.device, and
# set_device(...) like torch.cuda.set_device (an index is required).
_device.set_index_parser(lambda d: _get_device_index(d, optional=True), strict=_get_device_index)

# torch.cuda.set_device: make the device current for this thread (always cudaSetDevice, creating its
# context); a negative index is a no-op; ValueError / TypeError for a bad argument, CudaError naming an
# out-of-range index.  The twin's function itself, so the call costs what the twin's does.
set_device = _device.set_current_device


def has_primary_context(device):
    """Whether ``device``'s primary context exists (no context is created); RuntimeError naming an
    out-of-range index and the count."""
    return _device.has_primary_context(_get_device_index(device))


class device_of(device):
    """Context manager that makes the device of ``obj`` current: ``obj.get_device()`` when ``obj.is_cuda``
    (torch tensors), else the device of ``obj.device`` (cupy arrays...); objects on the CPU are a no-op."""

    def __init__(self, obj):
        if hasattr(obj, "is_cuda"):
            idx = obj.get_device() if obj.is_cuda else -1
        elif hasattr(obj, "device"):
            idx = _get_device_index(obj.device, allow_cpu=True)
        else:
            raise TypeError(f"device_of expects an object with .is_cuda/.get_device() or .device, "
                            f"got {type(obj).__name__}: {obj!r}")
        super().__init__(idx)


_MODES = {"default": 0, "warn": 1, "error": 2}


def set_sync_debug_mode(debug_mode):
    """Warn (1, "warn") or raise (2, "error") on synchronizing calls, or neither (0, "default").
    RuntimeError for any other value."""
    _lazy_init()
    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error` "
                               f"(got {debug_mode!r})")
        debug_mode = _MODES[debug_mode]
    _device.set_sync_debug_mode(debug_mode)


def get_sync_debug_mode():
    """The sync debug mode: 0 default, 1 warn, 2 error.  Initialises CUDA first, like torch (the same
    errors as the first CUDA use)."""
    _lazy_init()
    return _device.get_sync_debug_mode()


def check_error(res):
    """Raise CudaError (code, name and cudaGetErrorString text) unless ``res`` is 0 (cudaSuccess) or None
    (what accel's raising bindings return on success, so ``check_error(cudart().cudaProfilerStart())``
    works as with torch's code-returning module)."""
    if res is None:
        return
    code = int(res)
    if code == 0:
        return
    rt = _impl.cudart
    rt.load()
    raise CudaError(code, rt.cudaGetErrorName(code), rt.cudaGetErrorString(code))
