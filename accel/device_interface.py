"""Device-interface registry in the shape of torch/_dynamo/device_interface.py (SPEC §2.2).

A ``DeviceInterface`` bundles one backend's device, stream and event API behind static methods so that
tracing compilers can stay device-agnostic.  Built in: ``"cuda"`` and ``"cuda:N"`` (backed by accel.cuda)
and a synchronous ``"cpu"`` interface; ``get_interface_for_device`` raises NotImplementedError naming an
unknown device.
"""
import importlib
import inspect
import sys
import time

from accel._device_init import GuardEntries

__all__ = ["DeviceInterfaceMeta", "DeviceInterface", "DeviceGuard", "CudaInterface", "MtiaInterface",
           "CpuInterface", "register_interface_for_device", "get_interface_for_device",
           "get_registered_device_interfaces", "init_device_reg", "get_cuda_stream"]


def get_cuda_stream(device_index):
    """The raw cudaStream_t (int, 0 for the default stream) current on ``device_index``: the seed's name
    for torch._C._cuda_getCurrentRawStream (accel.cuda.current_raw_stream)."""
    import accel.cuda
    return accel.cuda.current_raw_stream(device_index)


class InterfaceMemberError(AssertionError, TypeError):
    """A DeviceInterface's Event / Stream is not a class of the right kind: torch asserts (AssertionError);
    this is one, and a TypeError too."""


# What a class must provide to serve as an interface's Event / Stream (torch checks the base class
# _EventBase / _StreamBase; accel has no such base, so it checks the protocol).
_MEMBER_PROTOCOL = {
    "Event": ("record", "wait", "query", "synchronize"),
    "Stream": ("query", "synchronize", "wait_event", "wait_stream", "record_event"),
}


class DeviceInterfaceMeta(type):
    """Checks, when a DeviceInterface subclass is created, that its ``Event`` and ``Stream`` are classes
    with the methods of torch's _EventBase / _StreamBase (InterfaceMemberError otherwise)."""

    def __new__(metacls, name, bases, namespace, **kwargs):
        if any(isinstance(b, DeviceInterfaceMeta) for b in bases):  # not the root DeviceInterface
            for member, methods in _MEMBER_PROTOCOL.items():
                if member not in namespace:
                    continue
                value = namespace[member]
                missing = [m for m in methods if not callable(getattr(value, m, None))]
                if not inspect.isclass(value) or missing:
                    raise InterfaceMemberError(
                        f"DeviceInterface member {member} of {name} should be a class with "
                        f"{', '.join(methods)} (like accel.cuda.{member}), got {value!r}"
                        + (f" (missing: {', '.join(missing)})" if inspect.isclass(value) else ""))
        return super().__new__(metacls, name, bases, namespace, **kwargs)


def _abstract(name):
    def method(*args, **kwargs):
        raise NotImplementedError(f"DeviceInterface.{name} is not implemented by this device interface")
    method.__name__ = name
    return staticmethod(method)


class DeviceInterface(metaclass=DeviceInterfaceMeta):
    """Base class: every member raises NotImplementedError until a backend's subclass provides it."""

    class device:
        def __new__(cls, device):
            raise NotImplementedError("DeviceInterface.device is not implemented by this device interface")

    class Event:
        def __new__(cls, *args, **kwargs):
            raise NotImplementedError("DeviceInterface.Event is not implemented by this device interface")

    class Stream:
        def __new__(cls, *args, **kwargs):
            raise NotImplementedError("DeviceInterface.Stream is not implemented by this device interface")

    class Worker:
        """Device queries usable in compile workers (forked processes that must not touch the device)."""
        set_device = _abstract("Worker.set_device")
        current_device = _abstract("Worker.current_device")
        get_device_properties = _abstract("Worker.get_device_properties")

    current_device = _abstract("current_device")
    set_device = _abstract("set_device")
    maybe_exchange_device = _abstract("maybe_exchange_device")
    exchange_device = _abstract("exchange_device")
    device_count = _abstract("device_count")
    is_available = _abstract("is_available")
    stream = _abstract("stream")
    current_stream = _abstract("current_stream")
    set_stream = _abstract("set_stream")
    _set_stream_by_id = _abstract("_set_stream_by_id")
    get_raw_stream = _abstract("get_raw_stream")
    synchronize = _abstract("synchronize")
    get_device_properties = _abstract("get_device_properties")
    get_compute_capability = _abstract("get_compute_capability")


class DeviceGuard(GuardEntries):
    """``with DeviceGuard(interface, index)``: exchange_device(index) on entry, maybe_exchange_device back
    on exit (no context is created on exit); ``index=None`` does nothing.  The same guard may be re-entered
    while entered: each exit restores the device of its own entry (torch's keeps one prev_idx)."""

    def __init__(self, device_interface, index):
        self.device_interface = device_interface
        self.idx = index
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self._entered(self.device_interface.exchange_device(self.idx))
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.idx is not None:
            self.idx = self.device_interface.maybe_exchange_device(self._leaving())
        return False


def _forward(module, name):
    """A static method calling ``accel.<module>.<name>`` looked up at call time."""
    qualified = f"accel.{module}"

    def method(*args, **kwargs):
        mod = sys.modules.get(qualified) or importlib.import_module(qualified)
        return getattr(mod, name)(*args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"accel.{module}.{name}"
    return staticmethod(method)


def _cuda(name):
    return _forward("cuda", name)


def _cuda_index(device):
    import accel.cuda
    return accel.cuda._get_device_index(device, optional=True)


def _worker_index(device):
    # torch's Worker.get_device_properties: a device naming no index (None, "cuda", a device object with
    # index None) means the worker's current device.
    from accel.cuda import _utils
    d = _utils._index_or_none(device)
    return CudaInterface.Worker.current_device() if d is None else d


class CudaInterface(DeviceInterface):
    """The CUDA interface, backed by accel.cuda."""

    from accel.cuda import Event, Stream, device  # noqa: E402 - class attributes, as in torch

    class Worker:
        """Caches the current device and the device properties so that compile workers need no CUDA."""
        _current_device = None
        _properties = None

        @staticmethod
        def set_device(device):
            CudaInterface.Worker._current_device = _cuda_index(device)

        @staticmethod
        def current_device():
            if CudaInterface.Worker._current_device is not None:
                return CudaInterface.Worker._current_device
            return CudaInterface.current_device()

        @staticmethod
        def get_device_properties(device=None):
            """The cached properties of ``device`` (None, "cuda" or a device with no index: the worker's
            current device); the same errors as accel.cuda.get_device_properties (InvalidDeviceError naming
            the index and the count, TypeError)."""
            from accel.cuda import _properties
            d = _worker_index(device)
            props = CudaInterface.Worker._properties
            if props is None:
                import accel.cuda
                props = CudaInterface.Worker._properties = [accel.cuda.get_device_properties(i)
                                                            for i in range(accel.cuda.device_count())]
            return props[_properties._check_range(d, len(props))]

    current_device = _cuda("current_device")
    set_device = _cuda("set_device")
    maybe_exchange_device = _cuda("maybe_exchange_device")
    exchange_device = _cuda("exchange_device")
    device_count = _cuda("device_count")
    is_available = _cuda("is_available")
    stream = _cuda("stream")
    current_stream = _cuda("current_stream")
    set_stream = _cuda("set_stream")
    _set_stream_by_id = _cuda("_set_stream_by_id")
    get_raw_stream = _cuda("current_raw_stream")
    synchronize = _cuda("synchronize")
    get_device_properties = _cuda("get_device_properties")

    @staticmethod
    def get_compute_capability(device=None):
        """major * 10 + minor of ``device`` (None: the current device)."""
        import accel.cuda
        major, minor = accel.cuda.get_device_capability(device)
        return major * 10 + minor


def _mtia(name):
    return _forward("mtia", name)


class MtiaInterface(DeviceInterface):
    """The MTIA interface, backed by accel.mtia (registered when accel.mtia has a backend runtime)."""

    from accel.mtia import Event, Stream, device  # noqa: E402 - class attributes, as in torch

    class Worker:
        """Caches the current device so that compile workers need no device calls."""
        _current_device = None

        @staticmethod
        def set_device(device):
            import accel.mtia
            MtiaInterface.Worker._current_device = accel.mtia._get_device_index(device, optional=True)

        @staticmethod
        def current_device():
            if MtiaInterface.Worker._current_device is not None:
                return MtiaInterface.Worker._current_device
            return MtiaInterface.current_device()

        @staticmethod
        def get_device_properties(device=None):
            raise NotImplementedError("accel.mtia backends expose no device properties")

    current_device = _mtia("current_device")
    set_device = _mtia("set_device")
    maybe_exchange_device = _mtia("_maybe_exchange_device")
    exchange_device = _mtia("_exchange_device")
    device_count = _mtia("device_count")
    is_available = _mtia("is_available")
    stream = _mtia("stream")
    current_stream = _mtia("current_stream")
    set_stream = _mtia("set_stream")
    synchronize = _mtia("synchronize")

    @staticmethod
    def _set_stream_by_id(stream_id, device_index, device_type):
        raise NotImplementedError("accel.mtia streams have no torch stream id encoding")

    @staticmethod
    def get_compute_capability(device=None):
        """major * 10 + minor of ``device`` (NotImplementedError if the backend has no capability)."""
        import accel.mtia
        major, minor = accel.mtia.get_device_capability(device)
        return major * 10 + minor


class _CpuStream:
    """The CPU 'stream': work is synchronous, so it is always complete (one instance)."""

    device = "cpu"
    _instance = None

    def __new__(cls, *args, **kwargs):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self, event=None):
        event = event if event is not None else CpuInterface.Event()
        event.record(self)
        return event

    def __repr__(self):
        return "<accel.device_interface cpu stream>"


_CPU_STREAM = _CpuStream()


class _CpuContext:
    def __init__(self, *args):
        pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return False


class CpuInterface(DeviceInterface):
    """The synchronous CPU interface: one device, one always-complete stream, host-timed events."""

    device = _CpuContext

    class Event:
        """Records the host time (time.perf_counter); elapsed_time in milliseconds."""

        def __init__(self, enable_timing=True, blocking=False, interprocess=False):
            self.time = 0.0

        def record(self, stream=None):
            self.time = time.perf_counter()

        def query(self):
            return True

        def synchronize(self):
            pass

        def wait(self, stream=None):
            pass

        def elapsed_time(self, end_event):
            return (end_event.time - self.time) * 1000

    Stream = _CpuStream

    class Worker:
        @staticmethod
        def set_device(device):
            pass

        @staticmethod
        def current_device():
            return 0

        @staticmethod
        def get_device_properties(device=None):
            return {}

    current_device = staticmethod(lambda: 0)
    set_device = staticmethod(lambda device: None)
    maybe_exchange_device = staticmethod(lambda device: 0)
    exchange_device = staticmethod(lambda device: 0)
    device_count = staticmethod(lambda: 1)
    is_available = staticmethod(lambda: True)
    stream = staticmethod(_CpuContext)
    current_stream = staticmethod(lambda device=None: _CPU_STREAM)
    set_stream = staticmethod(lambda stream: None)
    _set_stream_by_id = staticmethod(lambda stream_id, device_index, device_type: None)
    get_raw_stream = staticmethod(lambda device=None: 0)
    synchronize = staticmethod(lambda device=None: None)
    get_device_properties = staticmethod(lambda device=None: {})
    get_compute_capability = staticmethod(lambda device=None: "")


device_interfaces = {}
_initialized = False


def _key(device):
    """The registry key of ``device``: a string as is; a device object as torch's str(torch.device)
    ("cuda", "cuda:1"), from .type/.index where it has them."""
    if isinstance(device, str):
        return device
    dev_type, index = getattr(device, "type", None), getattr(device, "index", None)
    if isinstance(dev_type, str):
        return dev_type if index is None else f"{dev_type}:{index}"
    return str(device)


def register_interface_for_device(device, device_interface):
    """Register ``device_interface`` for ``device`` ("cuda", "cuda:1", "mtia", or a device object).
    Like torch, any class is accepted (a DeviceInterface subclass or a duck-typed one); TypeError for
    something that is not a class (an instance is always a mistake: the interface is used as a class)."""
    if not isinstance(device_interface, type):
        raise TypeError(f"device_interface must be a class (a DeviceInterface subclass), got "
                        f"{type(device_interface).__name__}: {device_interface!r}")
    device_interfaces[_key(device)] = device_interface


def get_interface_for_device(device):
    """The interface registered for ``device``; NotImplementedError("No interface for device X")."""
    key = _key(device)
    if not _initialized:
        init_device_reg()
    if key in device_interfaces:
        return device_interfaces[key]
    raise NotImplementedError(f"No interface for device {key}")


def get_registered_device_interfaces():
    """The (device, interface) pairs registered so far, built-ins included."""
    if not _initialized:
        init_device_reg()
    return device_interfaces.items()


def init_device_reg():
    """Register the built-in interfaces: "cuda", "cuda:N" for each device, "cpu" (and "mtia", "mtia:N"
    when an accel.mtia backend is registered).  Called on the first lookup."""
    global _initialized
    _initialized = True
    register_interface_for_device("cuda", CudaInterface)
    try:
        import accel.cuda
        count = accel.cuda.device_count() if hasattr(accel.cuda, "device_count") else \
            accel.cuda._impl.module("_device").raw_device_count()
    except Exception:  # noqa: BLE001 - no runtime library: "cuda" alone stays registered
        count = 0
    for i in range(count):
        register_interface_for_device(f"cuda:{i}", CudaInterface)
    import accel.mtia
    if accel.mtia.get_backend() is not None:
        register_interface_for_device("mtia", MtiaInterface)
        for i in range(accel.mtia.device_count()):
            register_interface_for_device(f"mtia:{i}", MtiaInterface)
    register_interface_for_device("cpu", CpuInterface)


_init_device_reg = init_device_reg  # the name accel used before
