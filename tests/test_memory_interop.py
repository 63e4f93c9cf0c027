"""Interop of device buffers on both twins (emulator): the CUDA Array Interface v3, DLPack 1.x capsules
(structure, ownership, the consumer-stream rule), from_dlpack / as_buffer over a producer's memory."""
import importlib.util
import pathlib

import numpy as np
import pytest

import accel.cuda as cuda
from accel import _memory_interop as _mi

pytestmark = pytest.mark.emu_only

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
Gate, mem, rt, streams = _fx.Gate, _fx.mem, _fx.rt, _fx.streams


class _CAI:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


@pytest.mark.devices(2)
def test_cuda_array_interface_round_trip(mem, rt, streams):
    s = streams.Stream(device=1)
    buf = mem.alloc(64, device=1, stream=s)
    buf.copy_from_host(np.arange(16, dtype=np.float32))
    cai = buf.__cuda_array_interface__
    assert cai == {"shape": (64,), "typestr": "|u1", "data": (buf.ptr, False), "strides": None, "version": 3,
                   "stream": s.cuda_stream}
    default = mem.alloc(8, device=0)
    assert default.__cuda_array_interface__["stream"] == 1        # the legacy default stream is spelled 1
    alias = _mi.as_buffer(rt, mem, streams, buf)
    assert alias.ptr == buf.ptr and alias.nbytes == 64 and alias.device.index == 1
    before = mem.memory_allocated(1)
    assert np.array_equal(alias.copy_to_host().view(np.float32), np.arange(16, dtype=np.float32))
    alias.free()
    assert not buf.closed and mem.memory_allocated(1) == before      # the alias frees nothing
    strided = _CAI({"shape": (4, 4), "typestr": "<f4", "data": (buf.ptr, False), "strides": (32, 4),
                    "version": 3})
    with pytest.raises(BufferError, match="not C-contiguous"):
        _mi.as_buffer(rt, mem, streams, strided)
    buf.free()
    default.free()



@pytest.mark.devices(2)
@pytest.mark.parametrize("bad, exc, match", [
    ({"typestr": "zzz"}, ValueError, r"typestr must be .*got 'zzz'"),
    ({"typestr": "<f0"}, ValueError, r"typestr must be .*got '<f0'"),
    ({"typestr": 4}, TypeError, r"typestr must be .*got int: 4"),
    ({"stream": "s"}, TypeError, r"stream must be an int .*got str: 's'"),
    ({"stream": True}, TypeError, r"stream must be an int .*got bool: True"),
])
def test_as_buffer_refuses_a_malformed_cuda_array_interface(mem, rt, streams, bad, exc, match):
    """A bad typestr / stream names the value (was int()'s "invalid literal", a str-int comparison error,
    or a 0-byte buffer for an item size of 0)."""
    buf = mem.alloc(64, device=1)
    obj = _CAI(dict(buf.__cuda_array_interface__, **bad))
    with pytest.raises(exc, match=match):
        _mi.as_buffer(rt, mem, streams, obj)
    buf.free()

def _capsule_tensor(cap, versioned):
    name = b"dltensor_versioned" if versioned else b"dltensor"
    assert _mi._api.PyCapsule_IsValid(cap, name)
    addr = _mi._api.PyCapsule_GetPointer(cap, name)
    return (_mi._DLManagedVersioned if versioned else _mi._DLManaged).from_address(addr)


@pytest.mark.devices(3)
def test_dlpack_capsule_structure(mem):
    buf = mem.alloc(96, device=2)
    assert buf.__dlpack_device__() == (2, 2)
    for versioned, max_version in ((True, (1, 0)), (True, (1, 5)), (False, None), (False, (0, 8))):
        cap = buf.__dlpack__(max_version=max_version)
        m = _capsule_tensor(cap, versioned)
        if versioned:
            assert (m.version.major, m.version.minor) == (1, 0) and m.flags == 0
        t = m.dl_tensor
        assert t.data == buf.ptr and (t.device.device_type, t.device.device_id) == (2, 2)
        assert t.ndim == 1 and t.shape[0] == 96 and not t.strides and t.byte_offset == 0
        assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (1, 8, 1)
        assert m.deleter
        del cap, m, t                         # an unconsumed capsule calls the deleter when it dies
    assert not _mi._exports
    for bad in (dict(dl_device=(2, 0)), dict(dl_device=(1, 0)), dict(copy=True), dict(stream=0),
                dict(stream="s")):
        with pytest.raises(BufferError):
            buf.__dlpack__(**bad)
    buf.free()


def test_from_dlpack_keeps_the_producer_alive(mem, streams):
    before = mem.memory_allocated(0)
    buf = mem.alloc(40, device=0)
    buf.copy_from_host(np.arange(10, dtype=np.int32))
    ptr = buf.ptr
    alias = _mi.from_dlpack(mem, streams, buf)
    assert alias.ptr == ptr and alias.nbytes == 40
    assert len(_mi._exports) == 1
    del buf                                       # the export holds the producer
    assert mem.memory_allocated(0) == before + 40
    assert np.array_equal(alias.copy_to_host().view(np.int32), np.arange(10, dtype=np.int32))
    alias.free()                                  # the deleter runs: the producer is released and freed
    assert not _mi._exports
    assert mem.memory_allocated(0) == before
    with pytest.raises(TypeError, match="__dlpack__"):
        _mi.from_dlpack(mem, streams, object())
    with pytest.raises(BufferError, match=r"needs CUDA memory \(kDLCUDA = 2\), got device type 1"):
        _mi.from_dlpack(mem, streams, np.zeros(3))          # numpy: a CPU producer


def test_dlpack_consumer_stream_waits_for_the_producer(mem, rt, streams):
    a, b = streams.Stream(device=0), streams.Stream(device=0)
    buf = mem.alloc(4096, device=0, stream=a)
    buf.memset(0)
    a.synchronize()
    gate = Gate()
    gate.block(rt, a)
    buf.memset(9)                                 # queued behind the gate on the producer's stream
    cap = buf.__dlpack__(stream=b.cuda_stream, max_version=(1, 0))
    out = cuda.pinned_empty(4096, np.uint8)
    out[:] = 1
    rt.cudaMemcpyAsync(out.ctypes.data, buf.ptr, 4096, 2, b.cuda_stream)   # the consumer's work
    assert (out == 1).all(), "the consumer's stream did not wait for the producer's"
    gate.open()
    b.synchronize()
    assert (out == 9).all()
    del cap
    buf.free()
