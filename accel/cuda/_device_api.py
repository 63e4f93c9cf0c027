"""Devices: lazy init, visible devices, device selection, properties, NVML (issue 3; in progress)."""
from accel import _impl

_device = _impl.module("_device")

__all__ = ["current_device", "set_device", "exchange_device", "maybe_exchange_device", "device",
           "has_primary_context"]

current_device = _device.current_device
exchange_device = _device.exchange_device
maybe_exchange_device = _device.maybe_exchange_device
has_primary_context = _device.has_primary_context
set_device = _device.set_device
device = _device.device
