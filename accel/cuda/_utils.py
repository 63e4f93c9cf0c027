"""Device arguments: ``_get_device_index`` (torch.cuda._utils semantics plus duck-typed device objects).

Accepted: an int (returned as is, like torch), anything with ``__index__`` (numpy ints),
``"cuda"``, ``"cuda:N"``, ``"cpu"`` (with allow_cpu), None (with optional: the current device), an
``accel.cuda.device`` context, and other libraries' device objects: ``.type``/``.index`` (torch.device),
``.id`` (cupy.cuda.Device), ``.device_id`` (cuda.core Device).  A bool is rejected (TypeError) wherever it
appears: torch returns it as is here and its C bindings then reject it, except a few (get_device_properties
takes True as device 1), so accel rejects it once, here, for every device argument.  The parser is the
shared one of accel/_device_init.py (accel.mtia uses it too).
"""
from accel import _device_init, _impl
from accel.cuda import _init

_device = _impl.module("_device")


def _current_device_index():
    # torch's _get_current_device_index: None when CUDA is not available, else current_device().
    if not _init.is_available():
        return None
    return _device.current_device()


_args = _device_init.DeviceArgs("cuda", _current_device_index, _device.device)
_parse_device_string = _args.parse_string
_index_or_none = _args.index_or_none
_get_device_index = _args.get_device_index
