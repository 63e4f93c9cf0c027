"""The emulator's graph API beyond stream capture: user objects (cudaUserObject*, cudaGraphRetain/Release-
UserObject), explicit construction (cudaGraphAdd*Node, dependencies), cudaGraphClone and
cudaGraphExecUpdate; bytes checked, argument errors, fault injection (each armed entry point fails with its
code, records it as the last error, changes nothing, and works once disarmed)."""
import ctypes
import importlib.util
import os
import pathlib
import threading

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
emu = _fx.emu
HOSTFN = _fx.HOSTFN
P = ctypes.c_void_p
U = ctypes.c_uint

pytestmark = pytest.mark.skipif(os.environ.get("ACCEL_CUDART") != "emu", reason="needs the emulated runtime")

INVALID_VALUE, OOM, BAD_HANDLE, UNKNOWN = 1, 2, 400, 999


@pytest.fixture
def L(emu):
    for name in ("accelEmuLiveGraphs", "accelEmuLiveGraphExecs", "accelEmuLiveUserObjects"):
        getattr(emu, name).restype = ctypes.c_int
    emu.cudaSetDevice(0)
    yield emu
    emu.cudaGetLastError()


def live(L):
    return (L.accelEmuLiveGraphs(), L.accelEmuLiveGraphExecs(), L.accelEmuLiveUserObjects(),
            L.accelEmuLiveAllocations())


@pytest.fixture
def stream(L):
    s = P()
    assert L.cudaStreamCreate(ctypes.byref(s)) == 0
    yield s
    L.cudaStreamSynchronize(s)
    assert L.cudaStreamDestroy(s) == 0


class Destructor:
    """A user object's destructor that counts its calls (per ptr)."""

    def __init__(self):
        self.calls = []
        self.cfunc = HOSTFN(lambda p: self.calls.append(p))


def _uobj(L, d, ptr=7, refs=1):
    o = P()
    assert L.cudaUserObjectCreate(ctypes.byref(o), P(ptr), d.cfunc, U(refs), U(1)) == 0
    return o


# -- user objects ----------------------------------------------------------------------------------------------

def test_user_object_refcount_and_destructor(L):
    d, before = Destructor(), live(L)
    o = P()
    for args in ((P(1), d.cfunc, U(0), U(1)), (P(1), d.cfunc, U(1), U(0)), (P(1), None, U(1), U(1))):
        assert L.cudaUserObjectCreate(ctypes.byref(o), *args) == INVALID_VALUE
    assert L.cudaUserObjectCreate(None, P(1), d.cfunc, U(1), U(1)) == INVALID_VALUE
    assert live(L) == before
    o = _uobj(L, d, ptr=11, refs=2)
    assert L.cudaUserObjectRetain(o, U(0)) == INVALID_VALUE
    assert L.cudaUserObjectRetain(o, U(3)) == 0                       # 5 references
    assert L.cudaUserObjectRelease(o, U(6)) == INVALID_VALUE          # more than held: nothing changes
    assert L.cudaUserObjectRelease(o, U(4)) == 0 and d.calls == []
    assert L.cudaUserObjectRelease(o, U(1)) == 0 and d.calls == [11]  # the last one: destroyed once
    assert L.cudaUserObjectRelease(o, U(1)) == BAD_HANDLE and L.cudaUserObjectRetain(o, U(1)) == BAD_HANDLE
    assert live(L) == before and d.calls == [11]


def test_graphs_and_executable_graphs_own_references(L, stream):
    d, before = Destructor(), live(L)
    o = _uobj(L, d)
    g, g2, x = P(), P(), P()
    assert L.cudaGraphCreate(ctypes.byref(g), 0) == 0 and L.cudaGraphCreate(ctypes.byref(g2), 0) == 0
    assert L.cudaGraphRetainUserObject(g, o, U(2), U(0)) == 0         # two new references
    assert L.cudaGraphRetainUserObject(g2, o, U(2), U(1)) == INVALID_VALUE   # moves more than the caller's
    assert L.cudaGraphRetainUserObject(g2, o, U(1), U(1)) == 0         # the caller's one moved
    assert L.cudaUserObjectRelease(o, U(1)) == INVALID_VALUE          # the caller holds none now
    assert L.cudaGraphRetainUserObject(g, o, U(1), U(2)) == INVALID_VALUE   # unknown flag
    assert L.cudaGraphReleaseUserObject(g, o, U(3)) == INVALID_VALUE  # more than the graph holds
    assert L.cudaGraphReleaseUserObject(g2, o, U(1)) == 0 and d.calls == []  # g still holds two
    assert L.cudaGraphInstantiate(ctypes.byref(x), g, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphDestroy(g) == 0 and L.cudaGraphDestroy(g2) == 0 and d.calls == []   # x's copy
    assert L.cudaGraphLaunch(x, stream) == 0 and L.cudaStreamSynchronize(stream) == 0
    assert L.cudaGraphExecDestroy(x) == 0 and d.calls == [7]
    assert live(L) == before


def test_a_queued_launch_keeps_the_user_objects_of_a_destroyed_exec(L, stream):
    d, gate, before = Destructor(), _fx.Gate(), live(L)
    o = _uobj(L, d)
    g, x = P(), P()
    assert L.cudaGraphCreate(ctypes.byref(g), 0) == 0
    assert L.cudaGraphRetainUserObject(g, o, U(1), U(1)) == 0
    assert L.cudaGraphInstantiate(ctypes.byref(x), g, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphDestroy(g) == 0
    assert L.cudaLaunchHostFunc(stream, HOSTFN(gate.ptr), None) == 0
    assert L.cudaGraphLaunch(x, stream) == 0
    assert L.cudaGraphExecDestroy(x) == 0 and d.calls == []          # the queued launch holds them
    gate.open()
    assert L.cudaStreamSynchronize(stream) == 0
    for _ in range(100):                                              # the worker drops it after the launch
        if d.calls:
            break
        threading.Event().wait(0.01)
    assert d.calls == [7] and live(L) == before


UOBJ_ENTRY_POINTS = {"cudaUserObjectCreate": OOM, "cudaUserObjectRetain": UNKNOWN, "cudaUserObjectRelease": UNKNOWN,
                     "cudaGraphRetainUserObject": OOM, "cudaGraphReleaseUserObject": UNKNOWN}


@pytest.mark.parametrize("sym", list(UOBJ_ENTRY_POINTS))
def test_fault_injection_on_the_user_object_entry_points(L, sym):
    d, before = Destructor(), live(L)
    o, g, new = _uobj(L, d), P(), P()
    assert L.cudaGraphCreate(ctypes.byref(g), 0) == 0
    assert L.cudaGraphRetainUserObject(g, o, U(1), U(0)) == 0
    calls = {"cudaUserObjectCreate": lambda: L.cudaUserObjectCreate(ctypes.byref(new), P(9), d.cfunc, U(1), U(1)),
             "cudaUserObjectRetain": lambda: L.cudaUserObjectRetain(o, U(1)),
             "cudaUserObjectRelease": lambda: L.cudaUserObjectRelease(o, U(1)),
             "cudaGraphRetainUserObject": lambda: L.cudaGraphRetainUserObject(g, o, U(1), U(0)),
             "cudaGraphReleaseUserObject": lambda: L.cudaGraphReleaseUserObject(g, o, U(1))}
    mid = live(L)
    L.cudaGetLastError()
    assert L.accelEmuSetFail(f"{sym}:1".encode()) == 0
    err = calls[sym]()
    L.accelEmuSetFail(None)
    assert err == UOBJ_ENTRY_POINTS[sym] and L.cudaGetLastError() == err
    assert live(L) == mid and d.calls == []
    assert calls[sym]() == 0                                          # works once disarmed
    if sym == "cudaUserObjectCreate":
        assert L.cudaUserObjectRelease(new, U(1)) == 0
    elif sym == "cudaUserObjectRetain":
        assert L.cudaUserObjectRelease(o, U(1)) == 0
    elif sym == "cudaGraphRetainUserObject":
        assert L.cudaGraphReleaseUserObject(g, o, U(1)) == 0
    if sym != "cudaUserObjectRelease":
        assert L.cudaUserObjectRelease(o, U(1)) == 0
    assert L.cudaGraphDestroy(g) == 0
    assert live(L) == before
