"""The backend runtime protocol of accel.mtia, the registry, and the shared init state.

accel.mtia is torch.mtia's generic accelerator module with the device work delegated to a **backend
runtime**: any object (a module, a class instance) with these methods.  Handles are opaque to accel
(any hashable value); device indices are ints in ``[0, device_count())``.

Required::

    device_count() -> int                 number of devices; 0 when none (should not raise)
    current_device() -> int               the calling thread's current device
    set_device(index) -> None             make ``index`` current for the calling thread
    synchronize(index) -> None            wait for all work on device ``index``
    default_stream(index) -> handle       the default stream of device ``index``
    create_stream(index, priority) -> handle   a new stream on ``index`` (lower priority is higher)
    query_stream(stream) -> bool          whether all work on ``stream`` is done
    synchronize_stream(stream) -> None    wait for all work on ``stream``
    create_event(index, enable_timing) -> handle   a new event on device ``index``
    record_event(event, stream) -> None   record ``event`` on ``stream``
    query_event(event) -> bool            whether ``event``'s latest record is reached
    synchronize_event(event) -> None      wait for ``event``'s latest record
    wait_event(stream, event) -> None     future work on ``stream`` waits for ``event``'s latest record

Optional::

    init() -> None                        the backend's initialisation, run once by lazy init; raises to refuse
    elapsed_time(start, end) -> float     milliseconds between two recorded timing events
    get_device_capability(index) -> (int, int)

accel calls the runtime with the GIL held, from the thread that called accel; an exception a method
raises propagates to the caller unchanged (during lazy init: ``init`` errors as is, queued calls'
errors as DeferredMtiaCallError).
"""
from accel import _device_init

__all__ = ["REQUIRED", "OPTIONAL", "register_backend", "get_backend", "NoBackendError", "DeferredMtiaCallError"]

REQUIRED = ("device_count", "current_device", "set_device", "synchronize", "default_stream", "create_stream",
            "query_stream", "synchronize_stream", "create_event", "record_event", "query_event",
            "synchronize_event", "wait_event")
OPTIONAL = ("init", "elapsed_time", "get_device_capability")


class NoBackendError(AssertionError, RuntimeError):
    """accel.mtia was used with no backend runtime registered (torch.mtia raises AssertionError when
    torch is not compiled with MTIA; this is one, and a RuntimeError too)."""


class DeferredMtiaCallError(RuntimeError):
    """A call queued with accel.mtia._lazy_call failed during lazy initialisation."""


NO_BACKEND = ("accel.mtia has no backend runtime: register one with accel.mtia.register_backend(runtime) "
              "before using MTIA (the protocol is in accel.mtia._runtime's docstring)")

_backend = None


def _start():
    runtime = _backend
    if runtime is None:
        raise NoBackendError(NO_BACKEND)
    state.register_fork_handler()
    init = getattr(runtime, "init", None)
    if init is not None:
        init()
    if runtime.device_count() <= 0:
        raise RuntimeError("No MTIA devices are available")


state = _device_init.DeviceInit("MTIA", _start, DeferredMtiaCallError)


def register_backend(runtime):
    """Make ``runtime`` (see the protocol above) accel.mtia's backend; None removes it.  TypeError naming
    the missing methods; RuntimeError once accel.mtia is initialised (a backend cannot be swapped under
    live streams)."""
    global _backend
    with state.lock:
        if state.is_initialized():
            raise RuntimeError(f"accel.mtia is already initialised with the backend {_backend!r}: a backend "
                               "can only be registered before the first MTIA use")
        if runtime is not None:
            missing = [m for m in REQUIRED if not callable(getattr(runtime, m, None))]
            if missing:
                raise TypeError(f"{runtime!r} is not an accel.mtia backend runtime: missing "
                                f"{', '.join(missing)} (see accel.mtia._runtime for the protocol)")
        _backend = runtime


def get_backend():
    """The registered backend runtime, or None."""
    return _backend


def backend():
    """The registered backend runtime; NoBackendError when there is none."""
    runtime = _backend
    if runtime is None:
        raise NoBackendError(NO_BACKEND)
    return runtime
