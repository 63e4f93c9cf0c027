"""Graphs and buffer lifetimes (issue 31, items 1-7), on both twins: a replay after a captured buffer was
freed.  Each case also checks what else changed (other buffers' bytes, the counters, the current stream)."""
import importlib.util
import pathlib

import numpy as np
import pytest

from accel.errors import CudaError

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
mem, rt, emu = _fx.mem, _fx.rt, _fx.emu
sm, live = _fx.sm, _fx.live

pytestmark = pytest.mark.emu_only

N = 256
INVALID_VALUE = 1


def _capture(sm, g, s, body, **kw):
    """capture_begin / body / capture_end on ``s`` made current (restored after)."""
    prev = sm.current_stream(s.device_index)
    sm.set_stream(s)
    try:
        g.capture_begin(**kw)
        body()
        g.capture_end()
    finally:
        sm.set_stream(prev)


def _bytes(buf):
    """The bytes of a DeviceBuffer, read on its own stream (synchronous)."""
    return buf.copy_to_host(stream=buf.stream)


# -- 1. a replay after a buffer the graph uses was freed ------------------------------------------------------

def test_emulator_tells_a_freed_allocation_from_its_successor_at_launch(sm, mem, rt):
    # the copy is captured through the raw binding, which accel does not track: the emulator's own check
    s = sm.Stream()
    a = mem.alloc(N, stream=s)
    s.synchronize()
    g = sm.CUDAGraph()
    _capture(sm, g, s, lambda: rt.cudaMemsetAsync(a.ptr, 7, N, s.cuda_stream))
    ptr = a.ptr
    a.free()
    s.synchronize()
    b = mem.alloc(N, stream=s)
    assert b.ptr == ptr                             # the same address, another allocation
    b.memset(1, stream=s)
    s.synchronize()
    with sm.stream(s):
        with pytest.raises(CudaError) as exc:
            g.replay()
    assert exc.value.code == INVALID_VALUE
    s.synchronize()
    assert (_bytes(b) == 1).all() and rt.cudaGetLastError() == 0
    g.reset()
    b.free()
