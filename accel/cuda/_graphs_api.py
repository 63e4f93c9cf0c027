"""CUDA graphs: torch.cuda.graphs' names over the selected twin (accel._impl): CUDAGraph (the twin's own
class: replay() is a hot path), the ``graph`` context manager and graph_pool_handle().

Memory: accel allocates on CUDA's stream-ordered pools, so an ``alloc()`` on a capturing stream is a
stream-ordered allocation inside the capture: a graph memory node whose address is fixed for every replay.
Graph memory comes from CUDA's own per-device graph memory, not from a pool accel chooses, so ``pool=`` is
accepted and returned by ``CUDAGraph.pool()`` (torch's id tuples, for code that passes them between
captures) but does not change where memory comes from.  The memory stays valid while its DeviceBuffer
lives and is released once the buffer is freed and the graph reset.  See docs/graphs.md.
"""
import gc

from accel import _graph_common as _gc
from accel import _impl
from accel.cuda._device_api import synchronize
from accel.cuda._stream_api import Stream, stream as _stream_ctx

__all__ = ["CUDAGraph", "graph", "graph_pool_handle"]

CUDAGraph = _impl.module("_stream").CUDAGraph


def graph_pool_handle():
    """An opaque memory pool id (torch's ``(0, n)`` tuple) that several captures may pass as ``pool=``."""
    return _gc.new_pool(True)


class graph:
    """Context manager that captures the work queued in its body into ``cuda_graph`` (a CUDAGraph), as
    torch.cuda.graph: on entry synchronise the device, collect garbage, make ``stream`` (default: one side
    stream shared by all graph contexts) current and capture_begin(pool, capture_error_mode); on exit
    capture_end() and restore the previous current stream and device, even when the body raised."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"cuda_graph must be an accel.cuda.CUDAGraph, got {type(cuda_graph).__name__}: "
                            f"{cuda_graph!r}")
        _gc.capture_mode(capture_error_mode)
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream must be an accel.cuda.Stream or None, got {type(stream).__name__}: {stream!r}")
        if self.__class__.default_capture_stream is None and stream is None:
            self.__class__.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        self.stream_ctx = _stream_ctx(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        synchronize()
        gc.collect()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, *args):
        try:
            if args[0] is not None:
                # The body failed: end the capture without instantiating, so no capture stays open.
                self.cuda_graph.reset()
            else:
                self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(*args)
