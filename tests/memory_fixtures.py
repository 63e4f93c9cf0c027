"""Fixtures shared by the device-memory tests (loaded by path: the suite runs with --import-mode=importlib,
so test modules cannot import each other)."""
import ctypes
import threading

import pytest

HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
RESERVED, USED = 5, 7     # cudaMemPoolAttrReservedMemCurrent, cudaMemPoolAttrUsedMemCurrent


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
