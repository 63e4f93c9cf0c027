"""CUDA_VISIBLE_DEVICES parsing and the NVML-based device count (torch's semantics, without CUDA init).

The parse mirrors torch's ``_parse_visible_devices``: strtoul-like ordinals (``"1gpu2"`` reads as 1),
``GPU-`` / ``MIG-`` UUID prefixes, a repeated entry gives the empty set, a negative or unparsable entry
ends the list.  The NVML helpers return -1 / None when NVML is missing or fails, never raise.
"""
import ctypes
import os
import warnings

from accel import _lib

_MAX_ORDINALS = 64  # torch's default when CUDA_VISIBLE_DEVICES is unset


def _strtoul(s):
    """The integer a C strtoul would read at the start of ``s`` (an optional sign then digits); -1 when
    there are no digits.  ValueError for a lone sign, like torch's int() on it."""
    if not s:
        return -1
    end = 0
    for i, c in enumerate(s):
        if c.isdigit() or (i == 0 and c in "+-"):
            end = i + 1
        else:
            break
    if end == 0:
        return -1
    try:
        return int(s[:end])
    except ValueError:
        raise ValueError(f"CUDA_VISIBLE_DEVICES entry {s!r} is not a device ordinal: expected digits, "
                         f"got {s[:end]!r}") from None


def _parse_list_with_prefix(value, prefix):
    rcs = []
    for elem in value.split(","):
        if elem in rcs:  # a repeated id gives the empty set
            return []
        if not elem.startswith(prefix):  # anything else ends the list
            break
        rcs.append(elem)
    return rcs


def _parse_visible_devices():
    """CUDA_VISIBLE_DEVICES as a list of ordinals (ints) or UUID prefixes (``GPU-...`` / ``MIG-...``
    strings); ``list(range(64))`` when unset."""
    var = os.getenv("CUDA_VISIBLE_DEVICES")
    if var is None:
        return list(range(_MAX_ORDINALS))
    if var.startswith("GPU-"):
        return _parse_list_with_prefix(var, "GPU-")
    if var.startswith("MIG-"):
        return _parse_list_with_prefix(var, "MIG-")
    rc = []
    for elem in var.split(","):
        x = _strtoul(elem.strip())
        if x in rc:  # a repeated ordinal gives the empty set
            return []
        if x < 0:  # a negative or unparsable entry ends the list
            break
        rc.append(x)
    return rc


def _nvml_open():
    """(cdll, init status) for NVML; raises LibraryNotFoundError / AttributeError when unusable."""
    cdll = _lib.nvml().cdll
    init = getattr(cdll, "nvmlInit_v2", None) or cdll.nvmlInit
    init.restype = ctypes.c_int
    return cdll, init()


def _raw_device_count_nvml():
    """The physical device count from NVML (ignores CUDA_VISIBLE_DEVICES); -1 (with a warning) on failure."""
    try:
        nvml, rc = _nvml_open()
    except (OSError, AttributeError, RuntimeError):
        return -1
    if rc != 0:
        warnings.warn("Can't initialize NVML")
        return -1
    count = ctypes.c_uint(0)
    if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        warnings.warn("Can't get nvml device count")
        return -1
    return count.value


def _raw_device_uuid_nvml():
    """The UUID strings (``GPU-...``) of every physical device from NVML; None (with a warning) on failure."""
    try:
        nvml, rc = _nvml_open()
    except (OSError, AttributeError, RuntimeError):
        return None
    if rc != 0:
        warnings.warn("Can't initialize NVML")
        return None
    count = ctypes.c_uint(0)
    if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        warnings.warn("Can't get nvml device count")
        return None
    uuids = []
    for idx in range(count.value):
        handle = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByIndex_v2(idx, ctypes.byref(handle)) != 0:
            warnings.warn("Can't get device handle")
            return None
        buf = ctypes.create_string_buffer(96)
        if nvml.nvmlDeviceGetUUID(handle, buf, 96) != 0:
            warnings.warn("Can't get device UUID")
            return None
        uuids.append(buf.raw.decode("ascii").strip("\0"))
    return uuids


def _transform_uuid_to_ordinals(candidates, uuids):
    """Map UUID prefixes to ordinals in ``uuids``: an unknown or ambiguous prefix ends the list, a
    repeated device gives the empty set."""
    rc = []
    for candidate in candidates:
        matches = [i for i, u in enumerate(uuids) if u.startswith(candidate)]
        if len(matches) != 1:  # unknown or ambiguous
            break
        if matches[0] in rc:
            return []
        rc.append(matches[0])
    return rc


def _device_count_nvml():
    """The visible device count from CUDA_VISIBLE_DEVICES and NVML (no CUDA init); -1 when NVML cannot
    tell (then callers fall back to cudaGetDeviceCount)."""
    visible = _parse_visible_devices()
    if not visible:
        return 0
    if isinstance(visible[0], str):
        if visible[0].startswith("MIG-"):  # MIG UUIDs are not resolved through NVML here
            return -1
        uuids = _raw_device_uuid_nvml()
        if uuids is None:
            return -1
        return len(_transform_uuid_to_ordinals(visible, uuids))
    raw = _raw_device_count_nvml()
    if raw <= 0:
        return raw
    for idx, val in enumerate(visible):  # the list stops at the first ordinal the machine lacks
        if val >= raw:
            return idx
    return len(visible)
