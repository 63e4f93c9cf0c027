"""Fixtures shared by the device-memory tests (loaded by path: the suite runs with --import-mode=importlib,
so test modules cannot import each other)."""
import ctypes
import gc
import os
import threading

import pytest

HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
RESERVED, USED = 5, 7     # cudaMemPoolAttrReservedMemCurrent, cudaMemPoolAttrUsedMemCurrent
NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)


def emu_lib():
    """The emulator's library with its test API typed (accelEmuSetFail, accelEmuLiveAllocations)."""
    from accel import _lib
    cdll = _lib.cudart().cdll
    cdll.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    cdll.accelEmuLiveAllocations.restype = ctypes.c_size_t
    return cdll


class Gate:
    """A host function that blocks its stream until ``open()``."""

    def __init__(self):
        self.event = threading.Event()
        self.cfunc = HOSTFN(lambda _: self.event.wait(30))

    @property
    def ptr(self):
        return ctypes.cast(self.cfunc, ctypes.c_void_p).value

    def block(self, rt, stream):
        rt.cudaLaunchHostFunc(stream.cuda_stream, self.ptr, 0)

    def open(self):
        self.event.set()


@pytest.fixture
def mem(twin):
    return twin.mod("_memory")


@pytest.fixture
def rt(twin):
    mod = twin.mod("_cudart")
    mod.load()
    return mod


@pytest.fixture
def streams(twin):
    return twin.mod("_stream")


@pytest.fixture
def emu():
    """The emulator's test API; an armed fault is cleared after the test."""
    cdll = emu_lib()
    yield cdll
    cdll.accelEmuSetFail(None)


@pytest.fixture
def sm(twin, a_device):
    """The twin's _stream module (accel.cuda's device parser), default streams current on every device, device 0
    current: before and after the test (the graph tests)."""
    from accel.cuda import _stream_api
    mod, dev = twin.mod("_stream"), twin.mod("_device")
    mod.set_index_parser(_stream_api._parse_device)
    for d in range(NDEV):
        mod.set_stream(mod.default_stream(d))
    dev.set_current_device(0)
    yield mod
    for d in range(NDEV):
        mod.set_stream(mod.default_stream(d))
    dev.set_current_device(0)


@pytest.fixture
def live(emu):
    """counts(): the emulator's live graphs, graph execs, captures and allocations, after a collection."""
    for name in ("accelEmuLiveGraphs", "accelEmuLiveGraphExecs", "accelEmuLiveCaptures"):
        getattr(emu, name).restype = ctypes.c_int

    def counts():
        gc.collect()
        return (emu.accelEmuLiveGraphs(), emu.accelEmuLiveGraphExecs(), emu.accelEmuLiveCaptures(),
                emu.accelEmuLiveAllocations())
    return counts
