"""Fixtures shared by the stream, event and device-interface tests (loaded by path: the suite runs with
--import-mode=importlib, so test modules cannot import each other)."""
import ctypes
import os
import threading

import pytest

from accel import _lib

NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)
INVALID_HANDLE = 400


@pytest.fixture
def emu():
    lib = _lib.cudart()
    if not lib.emulated:
        pytest.skip("needs the emulated runtime")
    cdll = lib.cdll
    cdll.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    yield cdll
    cdll.accelEmuSetFail(None)


def _reset(sm, dev):
    for d in range(NDEV):
        sm.set_stream(sm.default_stream(d))
    dev.set_device(0)


@pytest.fixture
def sm(twin, a_device):
    """The twin's _stream module, with accel.cuda's device parser, on device 0 with default streams."""
    from accel.cuda import _stream_api
    mod, dev = twin.mod("_stream"), twin.mod("_device")
    mod.set_index_parser(_stream_api._parse_device)
    _reset(mod, dev)
    yield mod
    _reset(mod, dev)


@pytest.fixture
def dev(twin):
    return twin.mod("_device")


@pytest.fixture
def rt(twin):
    return twin.mod("_cudart")


class Gate:
    """A host function that blocks its stream until ``open()``."""

    def __init__(self):
        self.ev = threading.Event()

    def __call__(self):
        assert self.ev.wait(10), "gate never opened"

    def open(self):
        self.ev.set()
