"""torch.accelerator's device-agnostic API over accel's backends: ``accel.cuda`` when a CUDA device is
available, else ``accel.mtia`` when a backend runtime with a device is registered.

Each function forwards to the selected module (one indirection; nothing else on the hot paths).  The
selection is made at the first call that finds an accelerator and then kept for the process (torch's
accelerator is fixed at build time); while none is found, every call looks again.
"""
__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "current_device_idx", "set_device_idx", "device_index", "current_stream", "set_stream",
           "synchronize"]

NO_ACCELERATOR = ("accel.accelerator: no accelerator is available (no CUDA device, and no accel.mtia backend "
                  "runtime with a device)")

from accel._device_init import GuardEntries

_selected = None   # accel.cuda or accel.mtia, once found


def _find():
    global _selected
    import accel.cuda
    if accel.cuda.is_available():
        _selected = accel.cuda
    else:
        import accel.mtia
        if accel.mtia.is_available():
            _selected = accel.mtia
    return _selected


def _backend():
    backend = _selected or _find()
    if backend is None:
        raise RuntimeError(NO_ACCELERATOR)
    return backend


class AcceleratorType:
    """What current_accelerator() returns: a device type (``.type``, ``.index`` None) that compares equal to
    its name, like torch.device("cuda")."""

    __slots__ = ("type",)
    index = None

    def __init__(self, type):
        self.type = type

    def __eq__(self, other):
        if isinstance(other, str):
            return other == self.type
        if isinstance(other, AcceleratorType):
            return other.type == self.type
        return NotImplemented

    def __hash__(self):
        return hash(self.type)

    def __str__(self):
        return self.type

    def __repr__(self):
        return f"device(type='{self.type}')"


def is_available():
    """Whether an accelerator (a CUDA device, or an accel.mtia backend with a device) is available."""
    return (_selected or _find()) is not None


def current_accelerator(check_available=False):
    """The accelerator's device type (``== "cuda"`` / ``"mtia"``): the available one, else (unless
    ``check_available``) the one present without a device, like torch's compiled-in accelerator (a
    loadable CUDA runtime, or a registered accel.mtia backend); None when there is none."""
    backend = _selected or _find()
    if backend is None and not check_available:
        import accel.cuda
        import accel.mtia
        backend = accel.cuda if accel.cuda._is_compiled() else accel.mtia if accel.mtia._is_compiled() else None
    if backend is None:
        return None
    return AcceleratorType(backend.__name__.rpartition(".")[2])


def device_count():
    """Number of devices of the accelerator; 0 when there is none."""
    backend = _selected or _find()
    return 0 if backend is None else backend.device_count()


def current_device_index():
    """The calling thread's current device of the accelerator; RuntimeError when there is none."""
    return _backend().current_device()


def set_device_index(device):
    """Make ``device`` (an index, "cuda:1", a device object) current; a negative index is a no-op."""
    _backend().set_device(device)


current_device_idx = current_device_index  # torch 2.6's names (deprecated there)
set_device_idx = set_device_index


class device_index(GuardEntries):
    """Context manager making device ``device`` (an int, or None: no-op) current and restoring the previous
    device on exit (without creating a context on it).  ``__enter__`` returns the context (torch's: None).
    The same object may be re-entered while entered (each exit restores the device of its own entry)."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self._entered(_backend()._exchange_device(self.idx))
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.idx is not None:
            _backend()._maybe_exchange_device(self._leaving())
        return False


def current_stream(device=None):
    """The calling thread's current stream on ``device`` (default: the current device)."""
    return _backend().current_stream(device)


def set_stream(stream):
    """Make ``stream`` current on its device (and its device current)."""
    _backend().set_stream(stream)


def synchronize(device=None):
    """Wait for all work on ``device`` (default: the current device)."""
    _backend().synchronize(device)
