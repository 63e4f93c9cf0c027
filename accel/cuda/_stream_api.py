"""Streams, events and stream contexts: torch.cuda's names over the selected twin (accel._impl).

The classes and the hot functions are the twin's own objects (no wrapper layer); this module only
teaches the twin to parse the device arguments ints are not ("cuda:1", torch.device-likes, ...).
"""
from accel import _impl
from accel.cuda._device_api import _get_device_index

_stream = _impl.module("_stream")

__all__ = ["Stream", "ExternalStream", "Event", "StreamContext", "current_stream", "current_raw_stream",
           "default_stream", "set_stream", "stream", "get_stream_from_external", "_set_stream_by_id"]

Stream = _stream.Stream
ExternalStream = _stream.ExternalStream
Event = _stream.Event
StreamContext = _stream.StreamContext
current_stream = _stream.current_stream
current_raw_stream = _stream.current_raw_stream
default_stream = _stream.default_stream
set_stream = _stream.set_stream
stream = _stream.stream
_set_stream_by_id = _stream._set_stream_by_id


def get_stream_from_external(data_ptr, device=None):
    """A Stream for a stream made elsewhere (an int cudaStream_t or an object with ``__cuda_stream__``):
    ExternalStream(data_ptr, device); torch.cuda.get_stream_from_external."""
    return ExternalStream(data_ptr, device)


def _parse_device(device):
    """Non-int device arguments of the stream API: torch.cuda's _get_device_index (None: current)."""
    return _get_device_index(device, optional=True)


_stream.set_index_parser(_parse_device)
