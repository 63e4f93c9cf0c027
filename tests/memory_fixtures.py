"""Fixtures shared by the device-memory tests (loaded by path: the suite runs with --import-mode=importlib,
so test modules cannot import each other)."""
import ctypes
import threading

import pytest

HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


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
