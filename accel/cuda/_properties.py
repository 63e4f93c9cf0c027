"""Device properties and queries: get_device_properties & co, mem_get_info, synchronize, local_device.

Properties are read once per device (the stable head of cudaDeviceProp for name / uuid / total memory,
cudaDeviceGetAttribute for the rest) and cached: they cannot change while the process runs.
"""
import os
import threading
import uuid as _uuid

from accel import _impl
from accel.cuda import _init
from accel.cuda._utils import _get_device_index

_device = _impl.module("_device")

# cudaDeviceAttr values (driver_types.h) for the fields torch's _CudaDeviceProperties exposes.
_ATTRS = (
    ("major", 75), ("minor", 76), ("multi_processor_count", 16), ("is_integrated", 18),
    ("is_multi_gpu_board", 84), ("max_threads_per_block", 1), ("max_threads_per_multi_processor", 39),
    ("warp_size", 10), ("regs_per_block", 12), ("regs_per_multiprocessor", 82),
    ("shared_memory_per_block", 8), ("shared_memory_per_block_optin", 97),
    ("shared_memory_per_multiprocessor", 81), ("L2_cache_size", 38), ("clock_rate", 13),
    ("memory_clock_rate", 36), ("memory_bus_width", 37), ("pci_bus_id", 33), ("pci_device_id", 34),
    ("pci_domain_id", 50), ("async_engine_count", 40), ("concurrent_kernels", 31), ("ecc_enabled", 32),
    ("managed_memory", 83), ("cooperative_launch", 95),
)
_BOOL_FIELDS = frozenset(("is_integrated", "is_multi_gpu_board", "concurrent_kernels", "ecc_enabled",
                          "managed_memory", "cooperative_launch"))
_props_cache = {}
_props_lock = threading.Lock()


class _CudaDeviceProperties:
    """Read-only properties of one CUDA device (torch.cuda's _CudaDeviceProperties fields)."""

    __slots__ = ("name", "uuid", "total_memory") + tuple(name for name, _ in _ATTRS)

    def __init__(self, values):
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name, value):
        raise AttributeError(f"_CudaDeviceProperties is read-only: cannot set {name!r}")

    def __eq__(self, other):
        if not isinstance(other, _CudaDeviceProperties):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
                f"pci_domain_id={self.pci_domain_id}, L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


class InvalidDeviceError(AssertionError, ValueError):
    """An out-of-range device id: torch raises AssertionError("Invalid device id"); this is one, and a
    ValueError too, so that ``except ValueError`` keeps working."""


def _valid_index(device, what="device", optional=True):
    """The index of ``device`` checked against the count; ValueError naming it and the count."""
    _init._lazy_init()
    return _check_range(_get_device_index(device, optional=optional), _init.device_count(), what)


def _check_range(d, n, what="device"):
    """``d`` if ``0 <= d < n`` (n: the device count), else the ValueError naming both."""
    if not 0 <= d < n:
        raise InvalidDeviceError(f"Invalid {what} id {d!r}: expected 0 <= {what} < device_count() = {n}")
    return d


def _read_properties(d):
    rt = _impl.cudart
    name, raw_uuid, total = rt.cudaGetDeviceProperties(d)
    values = {"name": name, "uuid": _uuid.UUID(bytes=bytes(raw_uuid)), "total_memory": total}
    for field, attr in _ATTRS:
        v = rt.cudaDeviceGetAttribute(attr, d)
        values[field] = bool(v) if field in _BOOL_FIELDS else v
    return _CudaDeviceProperties(values)


def get_device_properties(device=None):
    """Properties of ``device`` (default: current): name, uuid, total_memory, major, minor,
    multi_processor_count, L2_cache_size, warp_size, ...; InvalidDeviceError (an AssertionError and a
    ValueError) naming an out-of-range device."""
    d = _valid_index(device)
    props = _props_cache.get(d)
    if props is None:
        with _props_lock:
            props = _props_cache.get(d)
            if props is None:
                props = _props_cache[d] = _read_properties(d)
    return props


def get_device_name(device=None):
    """The name of ``device`` (default: current)."""
    return get_device_properties(device).name


def get_device_capability(device=None):
    """(major, minor) compute capability of ``device`` (default: current)."""
    props = get_device_properties(device)
    return props.major, props.minor


def can_device_access_peer(device, peer_device):
    """Whether ``device`` can access ``peer_device``'s memory directly; InvalidDeviceError ("Invalid device
    id ..." / "Invalid peer device id ...") for out-of-range ids."""
    d = _valid_index(device)
    p = _valid_index(peer_device, "peer device", optional=False)
    return _impl.cudart.cudaDeviceCanAccessPeer(d, p)


def mem_get_info(device=None):
    """(free, total) bytes of ``device`` (default: current), via cudaMemGetInfo on that device."""
    d = _valid_index(device)
    with _device.device(d):
        return _impl.cudart.cudaMemGetInfo()


def synchronize(device=None):
    """Wait for all work on ``device`` (default: current) to finish."""
    _init._lazy_init()
    with _device.device(_get_device_index(device, optional=True)):
        _impl.cudart.cudaDeviceSynchronize()


_RANK_VARS = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")


def local_device():
    """This process's device: the first of LOCAL_RANK / SLURM_LOCALID / OMPI_COMM_WORLD_LOCAL_RANK that is
    set, modulo device_count() (0 when none is set); ValueError for a non-integer value, RuntimeError
    when no device is available."""
    for var in _RANK_VARS:
        value = os.environ.get(var)
        if value is None or not value.strip():
            continue
        try:
            rank = int(value)
        except ValueError:
            raise ValueError(f"{var}={value!r} is not a local rank: expected a non-negative integer") from None
        if rank < 0:
            raise ValueError(f"{var}={value!r} is not a local rank: expected a non-negative integer")
        break
    else:
        rank = 0
    n = _init.device_count()
    if n <= 0:
        raise RuntimeError("local_device(): no CUDA device is available")
    return rank % n
