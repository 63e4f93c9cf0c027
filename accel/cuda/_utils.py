"""Device arguments: ``_get_device_index`` (torch.cuda._utils semantics plus duck-typed device objects).

Accepted: an int (returned as is, like torch), anything with ``__index__`` (numpy ints),
``"cuda"``, ``"cuda:N"``, ``"cpu"`` (with allow_cpu), None (with optional: the current device), an
``accel.cuda.device`` context, and other libraries' device objects: ``.type``/``.index`` (torch.device),
``.id`` (cupy.cuda.Device), ``.device_id`` (cuda.core Device).  A bool is rejected (TypeError) wherever it
appears: torch returns it as is here and its C bindings then reject it, except a few (get_device_properties
takes True as device 1), so accel rejects it once, here, for every device argument.
"""
import re

from accel import _impl
from accel import _stream_common as _sc
from accel.cuda import _init

_device = _impl.module("_device")
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9][0-9]*|0))?\Z")
_EXPECTED = ("an int (not a bool), 'cuda', 'cuda:N', None, or a device object with .type/.index, .id or "
             ".device_id")


def _parse_device_string(s):
    """(type, index or None) of a device string like torch.device(str); ValueError naming ``s``."""
    m = _DEVICE_STRING.match(s)
    if m is None:
        raise ValueError(f"Invalid device string: {s!r}: expected 'cuda', 'cuda:N' (N >= 0, no leading zeros) "
                         "or 'cpu'")
    return m.group(1), (int(m.group(2)) if m.group(2) is not None else None)


def _from_typed(dev_type, index, device, allow_cpu):
    if not isinstance(dev_type, str):
        dev_type = getattr(dev_type, "name", str(dev_type)).lower()  # e.g. an enum
    if allow_cpu:
        if dev_type not in ("cuda", "cpu"):
            raise ValueError(f"Expected a cuda or cpu device, but got: {device}")
    elif dev_type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    if dev_type == "cpu":
        return -1
    if index is not None and type(index) is not int:
        index = _as_int(index, device)
    return index


def _as_int(value, device):
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"Expected an integer device index, but got {type(value).__name__}: {value!r} "
                        f"(from {device!r})")
    return _sc.index_of(value, "device index")


def _get_device_index(device, optional=False, allow_cpu=False):
    """The device index of ``device`` (ints as is, unchecked; cpu gives -1 with allow_cpu); None with
    ``optional`` gives the current device.  TypeError for an unsupported type, ValueError for a bad value."""
    if type(device) is int:
        return device
    idx = _index_or_none(device, allow_cpu)
    if idx is None:
        if optional:
            return _current_device_index()
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
    return idx


def _index_or_none(device, allow_cpu=False):
    """``_get_device_index`` without the current-device fallback: None where ``device`` names no index
    (None, "cuda", a device object whose index is None)."""
    if type(device) is int:
        return device
    idx = None
    if isinstance(device, str):
        dev_type, idx = _parse_device_string(device)
        idx = _from_typed(dev_type, idx, device, allow_cpu)
    elif isinstance(device, _device.device):
        idx = device.idx
    elif isinstance(device, bool):
        raise TypeError(f"Expected a CUDA device: {_EXPECTED}; got bool: {device!r}")
    elif device is not None:
        if hasattr(type(device), "__index__"):
            return _sc.index_of(device, "device index")
        if hasattr(device, "type") and hasattr(device, "index"):
            idx = _from_typed(device.type, device.index, device, allow_cpu)
        elif hasattr(device, "device_id"):
            idx = _as_int(device.device_id, device)
        elif hasattr(device, "id"):
            idx = _as_int(device.id, device)
        else:
            raise TypeError(f"Expected a CUDA device: {_EXPECTED}; got {type(device).__name__}: {device!r}")
    return idx


def _current_device_index():
    # torch's _get_current_device_index: None when CUDA is not available, else current_device().
    if not _init.is_available():
        return None
    return _device.current_device()
