"""accel.mtia's devices, streams and events (torch.Stream / torch.Event shapes) over the backend runtime.

The current stream is per thread and per device (a new thread sees each device's default stream), and
``set_stream`` makes the stream's device current, like accel.cuda.  Events are created on their first
record, on the recording stream's device.
"""
import threading

from accel import _device_init
from accel import _stream_common as _sc
from accel.mtia import _runtime

DEVICE_TYPE_MTIA = 19  # c10::DeviceType::MTIA, what Stream.device_type reports (torch.Stream's int)
_state = _runtime.state


class MtiaDevice(_sc.DeviceObject):
    """An MTIA device as Stream.device / Event.device return it (``type == "mtia"``, ``index``)."""

    __slots__ = ()
    type = "mtia"


# -- devices -----------------------------------------------------------------------------------------

def device_count():
    """Number of MTIA devices of the backend; 0 without a backend."""
    runtime = _runtime.get_backend()
    if runtime is None:
        return 0
    _state.register_fork_handler()  # like accel.cuda: counting devices is using the backend
    return runtime.device_count()


def is_available():
    """Whether a backend is registered and has a device; never raises for a missing backend."""
    return _runtime.get_backend() is not None and device_count() > 0


def current_device():
    """The calling thread's current MTIA device (initialises MTIA)."""
    _state.lazy_init()
    return _runtime.backend().current_device()


def _current_or_none():
    return current_device() if is_available() else None


class device(_device_init.GuardEntries):
    """Context manager making ``device`` current, restoring the previous device on exit; a negative index
    is a no-op.  ``__enter__`` returns the context (torch's returns None).  The same object may be
    re-entered while entered (each exit restores the device of its own entry)."""

    def __init__(self, device):
        self.idx = _get_device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self._entered(_exchange_device(-1 if self.idx is None else self.idx))
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.idx = _exchange_device(self._leaving())
        return False


_args = _device_init.DeviceArgs("mtia", _current_or_none, device)
_get_device_index = _args.get_device_index


def _checked(index):
    """``index`` initialised and range-checked (ValueError naming it and the count)."""
    _state.lazy_init()
    n = _runtime.backend().device_count()
    if not 0 <= index < n:
        raise _sc.out_of_range(index, n)
    return index


def _exchange_device(index):
    """Make ``index`` current and return the previous device; -1 for a negative index (no-op)."""
    if index < 0:
        return -1
    runtime = _runtime.backend()
    _checked(index)
    prev = runtime.current_device()
    if prev != index:
        runtime.set_device(index)
    return prev


_maybe_exchange_device = _exchange_device  # no lazy contexts to spare here: the same switch


def set_device(device):
    """Make ``device`` current for this thread; a negative index is a no-op.  ValueError / TypeError for a
    bad argument."""
    index = _get_device_index(device)
    if index >= 0:
        _runtime.backend().set_device(_checked(index))


def synchronize(device=None):
    """Wait for all work on ``device`` (default: current)."""
    _state.lazy_init()
    _runtime.backend().synchronize(_resolve(device))


def get_device_capability(device=None):
    """(major, minor) of ``device`` (default: current); NotImplementedError if the backend has no
    get_device_capability."""
    runtime = _runtime.backend()
    fn = getattr(runtime, "get_device_capability", None)
    if fn is None:
        raise NotImplementedError(f"the accel.mtia backend {runtime!r} has no get_device_capability")
    return tuple(fn(_resolve(device)))


def _resolve(device):
    index = _get_device_index(device, optional=True)
    if index is None:  # no device available
        _state.lazy_init()
    return _checked(current_device() if index is None or index == -1 else index)


# -- streams -----------------------------------------------------------------------------------------

class _ThreadState(threading.local):
    def __init__(self):
        self.cur = {}  # device index -> current Stream


_tls = _ThreadState()
_defaults = {}  # device index -> default Stream (process-wide)
_ids = iter(range(1, 1 << 62))
_lock = threading.Lock()


def _default(index):
    s = _defaults.get(index)
    if s is None:
        with _lock:
            s = _defaults.get(index)
            if s is None:
                s = _defaults[index] = Stream._wrap(index, _runtime.backend().default_stream(index), 0)
    return s


def current_stream(device=None):
    """The calling thread's current Stream on ``device`` (default: current device)."""
    index = _resolve(device)
    s = _tls.cur.get(index)
    return s if s is not None else _default(index)


def default_stream(device=None):
    """The default Stream of ``device`` (default: current device)."""
    return _default(_resolve(device))


def set_stream(stream):
    """Make ``stream`` current on its device for this thread, switching the current device to it; None
    is a no-op.  TypeError for a non-Stream."""
    if stream is None:
        return
    _check_stream(stream)
    _exchange_device(stream.device_index)
    _tls.cur[stream.device_index] = stream


def _check_stream(stream):
    """``stream`` if it is a Stream, else the TypeError naming it."""
    if not isinstance(stream, Stream):
        raise TypeError(f"expected an accel.mtia.Stream, got {type(stream).__name__}: {stream!r}")
    return stream


class Stream:
    """A stream of the backend on ``device`` (default: current); lower ``priority`` is higher."""

    __slots__ = ("device_index", "stream_id", "handle", "_ctx")
    device_type = DEVICE_TYPE_MTIA

    def __init__(self, device=None, priority=0):
        index = _resolve(device)
        priority = _sc.check_priority(priority)
        self.device_index = index
        self.handle = _runtime.backend().create_stream(index, priority)
        self.stream_id = next(_ids)
        self._ctx = None

    @classmethod
    def _wrap(cls, index, handle, stream_id):
        s = object.__new__(cls)
        s.device_index, s.handle, s.stream_id, s._ctx = index, handle, stream_id, None
        return s

    @property
    def device(self):
        return MtiaDevice(self.device_index)

    def query(self):
        """True if all work on the stream is done."""
        return bool(_runtime.backend().query_stream(self.handle))

    def synchronize(self):
        """Wait for all work on the stream."""
        _runtime.backend().synchronize_stream(self.handle)

    def wait_event(self, event):
        """``event.wait(self)``: future work on this stream waits for the event's latest record."""
        if not callable(getattr(event, "wait", None)):
            raise TypeError(f"expected an event with .wait(stream), got {type(event).__name__}: {event!r}")
        event.wait(self)

    def wait_stream(self, stream):
        """Future work on this stream waits for the work queued on ``stream`` so far."""
        self.wait_event(_check_stream(stream).record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new Event if None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        if self._ctx is not None:
            raise RuntimeError("Stream's context should not be initialized.")
        prev_dev = current_device()
        prev = current_stream(self.device_index)
        set_stream(self)
        self._ctx = (prev_dev, prev)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._ctx is None:
            return False
        prev_dev, prev = self._ctx
        self._ctx = None
        _tls.cur[self.device_index] = prev
        _exchange_device(prev_dev)
        return False

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self.device_index == other.device_index and self.handle == other.handle

    def __hash__(self):
        return hash((self.device_index, self.handle))

    def __repr__(self):
        return f"<accel.mtia.Stream device=mtia:{self.device_index} stream_id={self.stream_id}>"


class StreamContext:
    """Context manager making ``stream`` current (and its device), restoring on exit the stream and device
    current at entry and the stream's device's previous stream.  None: no-op."""

    def __init__(self, stream):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"expected an accel.mtia.Stream or None, got {type(stream).__name__}: {stream!r}")
        self.stream = stream
        self._saved = []

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        src = current_stream(None)
        dst = current_stream(s.device_index) if src.device_index != s.device_index else None
        set_stream(s)
        self._saved.append((src, dst))
        return s

    def __exit__(self, exc_type, exc_value, traceback):
        if not self._saved:
            return False
        src, dst = self._saved.pop()
        if dst is not None:
            _tls.cur[dst.device_index] = dst
        set_stream(src)
        return False


def stream(stream):
    """A StreamContext for ``stream``."""
    return StreamContext(stream)


class Event:
    """An event of the backend, created on its first record on the recording stream's device."""

    __slots__ = ("enable_timing", "handle", "device_index")

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("accel.mtia events cannot be interprocess")
        self.enable_timing = bool(enable_timing)
        self.handle = None
        self.device_index = -1

    @property
    def device(self):
        return None if self.handle is None else MtiaDevice(self.device_index)

    def record(self, stream=None):
        """Record the event on ``stream`` (default: the current stream)."""
        stream = current_stream() if stream is None else _check_stream(stream)
        runtime = _runtime.backend()
        if self.handle is None:
            self.handle = runtime.create_event(stream.device_index, self.enable_timing)
            self.device_index = stream.device_index
        elif self.device_index != stream.device_index:
            raise RuntimeError(f"Event device {self.device_index} does not match recording stream's device "
                             f"{stream.device_index}.")
        runtime.record_event(self.handle, stream.handle)

    def wait(self, stream=None):
        """Future work on ``stream`` (default: current) waits for this event; no-op if never recorded."""
        if stream is not None:
            _check_stream(stream)
        if self.handle is None:
            return
        stream = current_stream() if stream is None else stream
        _runtime.backend().wait_event(stream.handle, self.handle)

    def query(self):
        """True if the latest record is reached (or the event was never recorded)."""
        return True if self.handle is None else bool(_runtime.backend().query_event(self.handle))

    def synchronize(self):
        """Wait for the latest record (no-op if never recorded)."""
        if self.handle is not None:
            _runtime.backend().synchronize_event(self.handle)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to ``end_event``: both timing events, recorded; NotImplementedError
        if the backend has no elapsed_time."""
        if not isinstance(end_event, Event):
            raise TypeError(f"expected an accel.mtia.Event, got {type(end_event).__name__}: {end_event!r}")
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self.handle is None or end_event.handle is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        runtime = _runtime.backend()
        fn = getattr(runtime, "elapsed_time", None)
        if fn is None:
            raise NotImplementedError(f"the accel.mtia backend {runtime!r} has no elapsed_time")
        return fn(self.handle, end_event.handle)

    def __repr__(self):
        return f"<accel.mtia.Event {'uninitialized' if self.handle is None else self.handle!r}>"
