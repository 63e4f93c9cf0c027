"""torch.mtia's generic accelerator module, torch-free, over a pluggable backend runtime.

``accel.mtia.register_backend(runtime)`` plugs in the device work (the protocol: accel.mtia._runtime's
docstring); everything else is torch.mtia's: lazy init with queued calls (``_lazy_call``) and
DeferredMtiaCallError, fork poisoning, ``is_available``, ``device_count``, ``current_device``,
``set_device``, ``device``, ``synchronize``, ``current_stream`` / ``default_stream`` / ``set_stream``,
``stream`` / ``StreamContext``, ``Stream`` / ``Event``, ``_is_compiled``, ``is_initialized``, ``init``.
The lazy-init / queued-call / fork / device-argument machinery is accel.cuda's (accel/_device_init.py).

With no backend registered accel.mtia behaves as torch.mtia without MTIA: ``is_available()`` and
``_is_compiled()`` are False, ``device_count()`` is 0, and ``init()`` / any device use raises
NoBackendError (an AssertionError, like torch's, and a RuntimeError).
"""
from accel.mtia._runtime import DeferredMtiaCallError, NoBackendError, get_backend, register_backend, state
from accel.mtia._streams import (
    Event, MtiaDevice, Stream, StreamContext, _exchange_device, _get_device_index, _maybe_exchange_device,
    current_device, current_stream, default_stream, device, device_count, get_device_capability,
    is_available, set_device, set_stream, stream, synchronize)

__all__ = ["init", "is_initialized", "is_available", "device_count", "current_device", "set_device", "device",
           "synchronize", "current_stream", "default_stream", "set_stream", "stream", "StreamContext",
           "Stream", "Event", "get_device_capability", "register_backend", "get_backend",
           "DeferredMtiaCallError", "NoBackendError", "MtiaDevice",
           "_is_compiled", "_is_in_bad_fork", "_lazy_init", "_lazy_call", "_get_device_index",
           "_exchange_device", "_maybe_exchange_device"]

is_initialized = state.is_initialized
_lazy_init = state.lazy_init
_lazy_call = state.lazy_call


def init():
    """Initialise MTIA now (normally lazy): NoBackendError without a backend, RuntimeError in a forked
    child of a process that used MTIA or without a device, DeferredMtiaCallError for a failed queued call."""
    state.lazy_init()


def _is_compiled():
    """Whether MTIA support is present: here, whether a backend runtime is registered."""
    return get_backend() is not None


def _is_in_bad_fork():
    """True in a forked child of a process that had used MTIA."""
    return state.in_bad_fork
