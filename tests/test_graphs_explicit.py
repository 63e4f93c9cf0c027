"""The emulator's graph API beyond stream capture: user objects (cudaUserObject*, cudaGraphRetain/Release-
UserObject), explicit construction (cudaGraphAdd*Node, dependencies), cudaGraphClone and
cudaGraphExecUpdate; bytes checked, argument errors, fault injection (each armed entry point fails with its
code, records it as the last error, changes nothing, and works once disarmed)."""
import ctypes
import importlib.util
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

pytestmark = pytest.mark.emu_only

INVALID_VALUE, OOM, BAD_HANDLE, UNKNOWN = 1, 2, 400, 999


@pytest.fixture
def L(emu):
    """The emulator's library through a CDLL object of its own: other tests type the shared one's functions
    (argtypes), these calls pass plain ctypes values."""
    lib = ctypes.CDLL(emu._name)
    lib.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    lib.accelEmuLiveAllocations.restype = ctypes.c_size_t
    for name in ("accelEmuLiveGraphs", "accelEmuLiveGraphExecs", "accelEmuLiveUserObjects"):
        getattr(lib, name).restype = ctypes.c_int
    lib.cudaSetDevice(0)
    yield lib
    lib.accelEmuSetFail(None)
    lib.cudaGetLastError()


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


def test_user_objects_of_a_capture_dropped_with_its_stream(L):
    """A user object moved to the graph of a capture under way (as cuda.core's GraphBuilder does for its
    callbacks): the capture is dropped with its origin stream, and the destructor runs then."""
    d, before = Destructor(), live(L)
    s, g = P(), P()
    assert L.cudaStreamCreate(ctypes.byref(s)) == 0
    assert L.cudaStreamBeginCapture(s, 0) == 0
    st, cid = ctypes.c_int(), ctypes.c_ulonglong()
    assert L.cudaStreamGetCaptureInfo(s, ctypes.byref(st), ctypes.byref(cid), ctypes.byref(g), None, None,
                                      None) == 0
    o = _uobj(L, d)
    assert L.cudaGraphRetainUserObject(g, o, U(1), U(1)) == 0 and d.calls == []
    assert L.cudaStreamDestroy(s) == 0 and d.calls == [7]
    assert live(L) == before


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


# -- explicit construction -------------------------------------------------------------------------------------

S = ctypes.c_size_t


class Pos(ctypes.Structure):
    _fields_ = [("x", S), ("y", S), ("z", S)]


class Pitched(ctypes.Structure):
    _fields_ = [("ptr", P), ("pitch", S), ("xsize", S), ("ysize", S)]


class Extent(ctypes.Structure):
    _fields_ = [("width", S), ("height", S), ("depth", S)]


class Memcpy3D(ctypes.Structure):
    _fields_ = [("srcArray", P), ("srcPos", Pos), ("srcPtr", Pitched), ("dstArray", P), ("dstPos", Pos),
                ("dstPtr", Pitched), ("extent", Extent), ("kind", ctypes.c_int)]


class MemsetParams(ctypes.Structure):
    _fields_ = [("dst", P), ("pitch", S), ("value", U), ("elementSize", U), ("width", S), ("height", S)]


class HostParams(ctypes.Structure):
    _fields_ = [("fn", HOSTFN), ("userData", P)]


class UpdateInfo(ctypes.Structure):
    _fields_ = [("result", ctypes.c_int), ("errorNode", P), ("errorFromNode", P)]


def _nodes(L, g):
    n = S()
    assert L.cudaGraphGetNodes(g, None, ctypes.byref(n)) == 0
    return n.value


def _deps(*nodes):
    return (P * len(nodes))(*[n.value for n in nodes]) if nodes else None


class Graph:
    """cudaGraphCreate'd graph and device buffers, freed at exit."""

    def __init__(self, L, nbufs=2, size=256):
        self.L, self.g, self.bufs = L, P(), []
        assert L.cudaGraphCreate(ctypes.byref(self.g), 0) == 0
        for _ in range(nbufs):
            b = P()
            assert L.cudaMalloc(ctypes.byref(b), size) == 0
            self.bufs.append(b)

    def add(self, fn, *args, deps=()):
        node = P()
        err = fn(ctypes.byref(node), self.g, _deps(*deps), len(deps), *args)
        return err, node

    def close(self):
        for b in self.bufs:
            assert self.L.cudaFree(b) == 0
        assert self.L.cudaGraphDestroy(self.g) == 0


def test_explicit_copy_memset_host_and_event_nodes_replay_with_fresh_bytes(L, stream):
    before = live(L)
    G = Graph(L)
    a, b = G.bufs
    src, out, out2d = np.zeros(64, np.uint8), np.zeros(64, np.uint8), np.zeros((4, 16), np.uint8)
    seen = []
    host = HOSTFN(lambda _: seen.append((bytes(out), out2d.copy())))
    e, e2 = P(), P()
    assert L.cudaEventCreate(ctypes.byref(e)) == 0 and L.cudaEventCreate(ctypes.byref(e2)) == 0
    err, n1 = G.add(L.cudaGraphAddMemcpyNode1D, P(a.value), src.ctypes.data_as(P), S(64), 1)       # H2D
    assert err == 0
    err, n2 = G.add(L.cudaGraphAddMemcpyNode1D, out.ctypes.data_as(P), P(a.value), S(64), 2, deps=(n1,))
    assert err == 0
    ms = MemsetParams(P(b.value), 32, 0x01020304, 4, 2, 4)              # 4 rows of 2 u32, 32 bytes apart
    err, n3 = G.add(L.cudaGraphAddMemsetNode, ctypes.byref(ms))
    assert err == 0
    p3 = Memcpy3D()                                                     # 2-D: rows 1..4 of b, 8 bytes at x=0
    p3.srcPtr, p3.srcPos = Pitched(P(b.value), 32, 32, 8), Pos(0, 0, 0)
    p3.dstPtr, p3.dstPos = Pitched(out2d.ctypes.data_as(P), 16, 16, 4), Pos(4, 0, 0)
    p3.extent, p3.kind = Extent(8, 4, 1), 4
    err, n4 = G.add(L.cudaGraphAddMemcpyNode, ctypes.byref(p3), deps=(n3,))
    assert err == 0
    hp = HostParams(host, None)
    err, n5 = G.add(L.cudaGraphAddHostNode, ctypes.byref(hp), deps=(n2, n4))
    assert err == 0
    err, n6 = G.add(L.cudaGraphAddEventRecordNode, P(e.value), deps=(n5,))
    assert err == 0
    err, n7 = G.add(L.cudaGraphAddEventWaitNode, P(e2.value))
    assert err == 0
    types = []
    for n in (n1, n3, n5, n6, n7):
        t = ctypes.c_int()
        assert L.cudaGraphNodeGetType(n, ctypes.byref(t)) == 0
        types.append(t.value)
    assert types == [1, 2, 3, 7, 6] and _nodes(L, G.g) == 7
    x = P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), G.g, ctypes.c_ulonglong(0)) == 0
    row = np.frombuffer(np.array([0x01020304, 0x01020304], np.uint32).tobytes(), np.uint8)
    for i in range(3):
        src[:] = (np.arange(64) * (i + 1)) % 256
        out[:] = 0
        out2d[:] = 0
        assert L.cudaGraphLaunch(x, stream) == 0
        assert L.cudaEventSynchronize(e) == 0 and L.cudaStreamSynchronize(stream) == 0
        assert bytes(out) == bytes(src) and seen[-1][0] == bytes(src)
        assert (out2d[:, 4:12] == row).all() and not out2d[:, :4].any() and not out2d[:, 12:].any()
    assert len(seen) == 3
    assert L.cudaGraphExecDestroy(x) == 0
    G.close()
    assert L.cudaEventDestroy(e) == 0 and L.cudaEventDestroy(e2) == 0
    assert live(L) == before


def test_explicit_node_argument_errors_add_nothing(L):
    G = Graph(L)
    a, b = G.bufs
    other = Graph(L, nbufs=0)
    host = np.zeros(16, np.uint8)
    ok, n0 = G.add(L.cudaGraphAddEmptyNode)
    assert ok == 0
    err, o0 = other.add(L.cudaGraphAddEmptyNode)
    assert err == 0
    bad_event = P(0x5e0000000000 + (1 << 40) + 0x50)
    fn = HOSTFN(lambda _: None)
    cases = [
        (L.cudaGraphAddMemcpyNode1D, (P(a.value), P(b.value), S(64), 5), (), 21),            # kind
        (L.cudaGraphAddMemcpyNode1D, (P(a.value + 200), P(b.value), S(64), 3), (), 1),       # straddles the end
        (L.cudaGraphAddMemcpyNode1D, (P(a.value), host.ctypes.data_as(P), S(16), 3), (), 1),  # D2D from host
        (L.cudaGraphAddMemcpyNode1D, (P(a.value), P(b.value), S(0), 3), (), 1),              # nothing to copy
        (L.cudaGraphAddMemcpyNode1D, (P(a.value), P(b.value), S(8), 3), (n0, n0), 1),        # a dependency twice
        (L.cudaGraphAddMemcpyNode1D, (P(a.value), P(b.value), S(8), 3), (o0,), 1),           # another graph's
        (L.cudaGraphAddMemsetNode, (ctypes.byref(MemsetParams(P(a.value), 0, 1, 3, 4, 1)),), (), 1),   # elem 3
        (L.cudaGraphAddMemsetNode, (ctypes.byref(MemsetParams(P(a.value), 8, 1, 1, 16, 2)),), (), 1),  # pitch
        (L.cudaGraphAddMemsetNode, (ctypes.byref(MemsetParams(P(a.value + 1), 0, 1, 4, 4, 1)),), (), 1),  # align
        (L.cudaGraphAddMemsetNode, (None,), (), 1),
        (L.cudaGraphAddHostNode, (ctypes.byref(HostParams(HOSTFN(), None)),), (), 1),     # no function
        (L.cudaGraphAddHostNode, (None,), (), 1),
        (L.cudaGraphAddEventRecordNode, (bad_event,), (), 400),
        (L.cudaGraphAddEventWaitNode, (P(0),), (), 400),
    ]
    p3 = Memcpy3D()
    p3.srcPtr, p3.dstPtr, p3.extent, p3.kind = Pitched(P(a.value), 64, 64, 1), Pitched(P(b.value), 64, 64, 1), \
        Extent(64, 1, 2), 3
    cases.append((L.cudaGraphAddMemcpyNode, (ctypes.byref(p3),), (), 1))                    # depth 2
    p4 = Memcpy3D()
    p4.srcArray, p4.srcPtr, p4.dstPtr, p4.extent, p4.kind = P(1), Pitched(P(a.value), 64, 64, 1), \
        Pitched(P(b.value), 64, 64, 1), Extent(64, 1, 1), 3
    cases.append((L.cudaGraphAddMemcpyNode, (ctypes.byref(p4),), (), 1))                    # a CUDA array
    for fn_, args, deps, want in cases:
        L.cudaGetLastError()
        err, node = G.add(fn_, *args, deps=deps)
        assert err == want, (fn_.__name__, args, err)
        assert L.cudaGetLastError() == want and not node.value
    node = P()
    assert L.cudaGraphAddHostNode(ctypes.byref(node), P(0x5e0000000070), None, 0,
                                  ctypes.byref(HostParams(fn, None))) == 400                # not a graph
    assert L.cudaGraphAddHostNode(None, G.g, None, 0, ctypes.byref(HostParams(fn, None))) == 1
    assert L.cudaGraphAddHostNode(ctypes.byref(node), G.g, None, 1, ctypes.byref(HostParams(fn, None))) == 1
    assert _nodes(L, G.g) == 1
    other.close()
    G.close()


def test_dependencies_added_later_order_the_launch_and_cycles_fail_instantiation(L, stream):
    G = Graph(L, nbufs=0)
    order = []
    fns = [HOSTFN(lambda _, k=k: order.append(k)) for k in "ABC"]
    params = [HostParams(f, None) for f in fns]
    nodes = [G.add(L.cudaGraphAddHostNode, ctypes.byref(p))[1] for p in params]
    A, B, C = nodes
    # A after C after B: both edges point from a later node to an earlier one
    assert L.cudaGraphAddDependencies(G.g, _deps(B, C), _deps(C, A), None, 2) == 0
    n = S()
    assert L.cudaGraphNodeGetDependencies(A, None, None, ctypes.byref(n)) == 0 and n.value == 1
    got, n = (P * 3)(), S(3)
    assert L.cudaGraphNodeGetDependencies(A, got, None, ctypes.byref(n)) == 0
    assert n.value == 1 and got[0] == C.value and got[1] is None
    for frm, to in ((A, A), (B, C), (B, B)):                   # self edges, an edge already there
        assert L.cudaGraphAddDependencies(G.g, _deps(frm), _deps(to), None, 1) == INVALID_VALUE
    assert L.cudaGraphAddDependencies(G.g, _deps(B, B), _deps(A, A), None, 2) == INVALID_VALUE  # twice in one call
    edge = (ctypes.c_ubyte * 8)(0, 0, 1)                       # programmatic edges: not supported
    assert L.cudaGraphAddDependencies(G.g, _deps(B), _deps(A), edge, 1) == INVALID_VALUE
    assert L.cudaGraphNodeGetDependencies(A, None, None, ctypes.byref(n)) == 0 and n.value == 1   # unchanged
    x = P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), G.g, ctypes.c_ulonglong(0)) == 0
    for _ in range(3):
        assert L.cudaGraphLaunch(x, stream) == 0
    assert L.cudaStreamSynchronize(stream) == 0
    assert "".join(order) == "BCA" * 3
    assert L.cudaGraphAddDependencies(G.g, _deps(A), _deps(B), None, 1) == 0      # a cycle B -> C -> A -> B
    y = P()
    assert L.cudaGraphInstantiate(ctypes.byref(y), G.g, ctypes.c_ulonglong(0)) == INVALID_VALUE and not y.value
    assert L.cudaGraphExecDestroy(x) == 0
    G.close()


def _memset_graph(L, buf, value, extra=False, host=False):
    G = Graph(L, nbufs=0)
    ms = MemsetParams(buf, 0, value, 1, 64, 1)
    err, n1 = G.add(L.cudaGraphAddMemsetNode, ctypes.byref(ms))
    assert err == 0
    if host:
        G.keep = HOSTFN(lambda _: None)
        assert G.add(L.cudaGraphAddHostNode, ctypes.byref(HostParams(G.keep, None)), deps=(n1,))[0] == 0
    else:
        assert G.add(L.cudaGraphAddEmptyNode, deps=(n1,))[0] == 0
    if extra:
        assert G.add(L.cudaGraphAddEmptyNode)[0] == 0
    return G


def test_clone_find_in_clone_and_exec_update(L, stream):
    before = live(L)
    buf = P()
    assert L.cudaMalloc(ctypes.byref(buf), 64) == 0
    out = np.zeros(64, np.uint8)

    def launch_and_read(x):
        assert L.cudaGraphLaunch(x, stream) == 0
        assert L.cudaMemcpyAsync(out.ctypes.data_as(P), buf, S(64), 2, stream) == 0
        assert L.cudaStreamSynchronize(stream) == 0
        return set(out.tolist())

    g1 = _memset_graph(L, buf, 3)
    c = P()
    assert L.cudaGraphClone(ctypes.byref(c), g1.g) == 0 and _nodes(L, c) == 2
    orig = (P * 2)()
    n = S(2)
    assert L.cudaGraphGetNodes(g1.g, orig, ctypes.byref(n)) == 0
    found, cloned = P(), (P * 2)()
    assert L.cudaGraphGetNodes(c, cloned, ctypes.byref(n)) == 0
    assert L.cudaGraphNodeFindInClone(ctypes.byref(found), P(orig[1]), c) == 0 and found.value == cloned[1]
    assert L.cudaGraphNodeFindInClone(ctypes.byref(found), P(orig[1]), g1.g) == INVALID_VALUE   # not a clone
    deps, n = (P * 1)(), S(1)
    assert L.cudaGraphNodeGetDependencies(P(cloned[1]), deps, None, ctypes.byref(n)) == 0 and deps[0] == cloned[0]
    x = P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), c, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphDestroy(c) == 0
    assert launch_and_read(x) == {3}
    info = UpdateInfo()
    g2 = _memset_graph(L, buf, 9)
    assert L.cudaGraphExecUpdate(x, g2.g, ctypes.byref(info)) == 0 and info.result == 0 and not info.errorNode
    assert launch_and_read(x) == {9}
    g3 = _memset_graph(L, buf, 5, extra=True)                  # one node more
    assert L.cudaGraphExecUpdate(x, g3.g, ctypes.byref(info)) == 910 and info.result == 2
    g4 = _memset_graph(L, buf, 5, host=True)                   # an empty node became a host node
    assert L.cudaGraphExecUpdate(x, g4.g, ctypes.byref(info)) == 910 and info.result == 3
    nodes4 = (P * 2)()
    n = S(2)
    assert L.cudaGraphGetNodes(g4.g, nodes4, ctypes.byref(n)) == 0 and info.errorNode == nodes4[1]
    g5 = Graph(L, nbufs=0)                                     # same kinds, different edges
    ms = MemsetParams(buf, 0, 5, 1, 64, 1)
    assert g5.add(L.cudaGraphAddMemsetNode, ctypes.byref(ms))[0] == 0 and g5.add(L.cudaGraphAddEmptyNode)[0] == 0
    assert L.cudaGraphExecUpdate(x, g5.g, ctypes.byref(info)) == 910 and info.result == 2
    assert L.cudaGraphExecUpdate(x, g5.g, None) == INVALID_VALUE
    assert L.cudaGraphExecUpdate(P(0), g5.g, ctypes.byref(info)) == BAD_HANDLE
    assert launch_and_read(x) == {9}                           # failed updates changed nothing
    assert L.cudaGraphExecDestroy(x) == 0
    for G in (g1, g2, g3, g4, g5):
        G.close()
    assert L.cudaFree(buf) == 0
    assert live(L) == before


def test_clone_keeps_user_objects_and_refuses_graph_memory(L, stream):
    d, before = Destructor(), live(L)
    o = _uobj(L, d)
    g, c = P(), P()
    assert L.cudaGraphCreate(ctypes.byref(g), 0) == 0
    assert L.cudaGraphRetainUserObject(g, o, U(1), U(1)) == 0
    assert L.cudaGraphClone(ctypes.byref(c), g) == 0
    assert L.cudaGraphDestroy(g) == 0 and d.calls == []        # the clone holds its own reference
    assert L.cudaGraphDestroy(c) == 0 and d.calls == [7]
    buf, gm = P(), P()                                         # a graph with an alloc node
    assert L.cudaStreamBeginCapture(stream, 0) == 0
    assert L.cudaMallocAsync(ctypes.byref(buf), S(64), stream) == 0
    assert L.cudaFreeAsync(buf, stream) == 0
    assert L.cudaStreamEndCapture(stream, ctypes.byref(gm)) == 0
    assert L.cudaGraphClone(ctypes.byref(c), gm) == 801
    assert L.cudaGraphDestroy(gm) == 0
    assert live(L) == before


class MemAllocParams(ctypes.Structure):
    _fields_ = [("allocType", ctypes.c_int), ("handleTypes", ctypes.c_int), ("locType", ctypes.c_int),
                ("locId", ctypes.c_int), ("win32", P), ("maxSize", S), ("usage", ctypes.c_ushort),
                ("reserved", ctypes.c_ubyte * 54), ("accessDescs", P), ("accessDescCount", S), ("bytesize", S),
                ("dptr", P)]


def _alloc_params(size, dev=0):
    return MemAllocParams(allocType=1, locType=1, locId=dev, bytesize=size)


def test_alloc_and_free_nodes(L, stream):
    """An alloc node's address is fixed when it is added and stays valid across launches; a memset and a copy
    through it replay with fresh bytes; the free node orders only; the memory goes back once the graph and
    its executable graph are gone.  Argument errors: bad pool properties, a device out of range, a free of
    memory not the graph's, or freed twice; a failed add leaks nothing."""
    before = live(L)
    G = Graph(L, nbufs=0)
    p = _alloc_params(4096)
    err, na = G.add(L.cudaGraphAddMemAllocNode, ctypes.byref(p))
    assert err == 0 and p.dptr and live(L)[3] == before[3] + 1
    host = np.zeros(4096, np.uint8)
    src = np.zeros(4096, np.uint8)
    err, n1 = G.add(L.cudaGraphAddMemcpyNode1D, P(p.dptr), src.ctypes.data_as(P), S(4096), 1, deps=(na,))
    assert err == 0
    err, n2 = G.add(L.cudaGraphAddMemcpyNode1D, host.ctypes.data_as(P), P(p.dptr), S(4096), 2, deps=(n1,))
    assert err == 0
    err, nf = G.add(L.cudaGraphAddMemFreeNode, P(p.dptr), deps=(n2,))
    assert err == 0
    t = ctypes.c_int()
    assert L.cudaGraphNodeGetType(na, ctypes.byref(t)) == 0 and t.value == 10
    assert L.cudaGraphNodeGetType(nf, ctypes.byref(t)) == 0 and t.value == 11
    assert G.add(L.cudaGraphAddMemFreeNode, P(p.dptr))[0] == INVALID_VALUE               # freed already
    outside = P()
    assert L.cudaMalloc(ctypes.byref(outside), 64) == 0
    assert G.add(L.cudaGraphAddMemFreeNode, outside)[0] == INVALID_VALUE                 # not the graph's
    assert G.add(L.cudaGraphAddMemFreeNode, P(p.dptr + 8))[0] == INVALID_VALUE           # not its base
    mid = live(L)
    for bad, want in ((MemAllocParams(allocType=1, locType=1, locId=0, bytesize=0), 1),
                      (MemAllocParams(allocType=2, locType=1, locId=0, bytesize=64), 1),
                      (MemAllocParams(allocType=1, locType=2, locId=0, bytesize=64), 1),
                      (MemAllocParams(allocType=1, locType=1, locId=99, bytesize=64), 101),
                      (MemAllocParams(allocType=1, locType=1, locId=0, bytesize=1 << 62), OOM)):
        assert G.add(L.cudaGraphAddMemAllocNode, ctypes.byref(bad))[0] == want
    assert G.add(L.cudaGraphAddMemAllocNode, ctypes.byref(_alloc_params(64)), deps=(na, na))[0] == INVALID_VALUE
    assert live(L) == mid and _nodes(L, G.g) == 4
    x = P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), G.g, ctypes.c_ulonglong(0)) == 0
    for i in range(3):
        src[:] = (np.arange(4096) + 7 * i) % 256
        host[:] = 0
        assert L.cudaGraphLaunch(x, stream) == 0 and L.cudaStreamSynchronize(stream) == 0
        assert (host == src).all()
    assert L.cudaGraphDestroy(G.g) == 0 and live(L)[3] == before[3] + 2     # the exec keeps it
    assert L.cudaGraphExecDestroy(x) == 0
    assert L.cudaFree(outside) == 0
    assert live(L) == before


def test_graph_memory_rules_for_relaunch_and_a_second_executable_graph(L, stream):
    """CUDA's rules for a graph with memory nodes (issue 31): "If any allocations created by graphExec remain
    unfreed (from a previous launch) and graphExec was not instantiated with
    cudaGraphInstantiateFlagAutoFreeOnLaunch, the launch will fail with cudaErrorInvalidValue" (cudaGraphLaunch),
    and "If graph contains any allocation or free nodes, there can be at most one executable graph in existence
    for that graph at a time" (cudaGraphInstantiate, whose one documented error is cudaErrorInvalidValue).  Both
    used to succeed."""
    before = live(L)
    G = Graph(L, nbufs=0)
    p = _alloc_params(256)
    err, na = G.add(L.cudaGraphAddMemAllocNode, ctypes.byref(p))
    assert err == 0
    err, ns = G.add(L.cudaGraphAddMemsetNode, ctypes.byref(MemsetParams(P(p.dptr), 0, 0x5A, 1, 256, 1)), deps=(na,))
    assert err == 0
    x, x2 = P(), P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), G.g, ctypes.c_ulonglong(0)) == 0
    for flags in (0, 1):
        assert L.cudaGraphInstantiateWithFlags(ctypes.byref(x2), G.g, ctypes.c_ulonglong(flags)) == INVALID_VALUE
        assert not x2.value and L.cudaGetLastError() == INVALID_VALUE
    assert L.accelEmuLiveGraphExecs() == before[1] + 1
    assert L.cudaGraphLaunch(x, stream) == 0 and L.cudaStreamSynchronize(stream) == 0
    assert ctypes.string_at(p.dptr, 4) == b"\x5a" * 4
    assert L.cudaGraphLaunch(x, stream) == INVALID_VALUE          # the first launch's allocation is still live
    assert L.cudaGetLastError() == INVALID_VALUE
    assert L.cudaFreeAsync(P(p.dptr), stream) == 0                # the user frees it: the graph may launch again,
    ctypes.memset(p.dptr, 0, 4)
    assert L.cudaGraphLaunch(x, stream) == 0 and L.cudaStreamSynchronize(stream) == 0
    assert ctypes.string_at(p.dptr, 4) == b"\x5a" * 4                # making it again at the same address
    assert L.cudaGraphLaunch(x, stream) == INVALID_VALUE          # which is the user's again
    assert L.cudaFree(P(p.dptr)) == 0
    assert L.cudaGraphExecDestroy(x) == 0                           # gone: another executable graph may be made
    assert L.cudaGraphInstantiateWithFlags(ctypes.byref(x2), G.g, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphExecDestroy(x2) == 0
    G.close()
    # auto free on launch: relaunches while the allocation is live; a graph that frees what it allocates, too
    for flags, free_node in ((1, False), (0, True)):
        G = Graph(L, nbufs=0)
        p = _alloc_params(256)
        err, na = G.add(L.cudaGraphAddMemAllocNode, ctypes.byref(p))
        assert err == 0
        if free_node:
            assert G.add(L.cudaGraphAddMemFreeNode, P(p.dptr), deps=(na,))[0] == 0
        assert L.cudaGraphInstantiateWithFlags(ctypes.byref(x), G.g, ctypes.c_ulonglong(flags)) == 0
        assert L.cudaGraphInstantiateWithFlags(ctypes.byref(x2), G.g, ctypes.c_ulonglong(flags)) == INVALID_VALUE
        for _ in range(3):
            assert L.cudaGraphLaunch(x, stream) == 0
        assert L.cudaStreamSynchronize(stream) == 0 and L.cudaGraphExecDestroy(x) == 0
        G.close()
        if not free_node:
            assert L.cudaFree(P(p.dptr)) == 0                      # the last launch's allocation is the user's
    # a graph without memory nodes may have many executable graphs
    G = Graph(L, nbufs=1)
    assert G.add(L.cudaGraphAddMemsetNode, ctypes.byref(MemsetParams(G.bufs[0], 0, 1, 1, 16, 1)))[0] == 0
    assert L.cudaGraphInstantiate(ctypes.byref(x), G.g, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphInstantiate(ctypes.byref(x2), G.g, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphExecDestroy(x) == 0 and L.cudaGraphExecDestroy(x2) == 0
    G.close()
    assert live(L) == before


NODE_ENTRY_POINTS = ["cudaGraphAddMemAllocNode", "cudaGraphAddMemFreeNode", "cudaGraphAddMemcpyNode", "cudaGraphAddMemcpyNode1D", "cudaGraphAddMemsetNode",
                     "cudaGraphAddHostNode", "cudaGraphAddEventRecordNode", "cudaGraphAddEventWaitNode",
                     "cudaGraphAddDependencies", "cudaGraphNodeGetDependencies", "cudaGraphClone",
                     "cudaGraphNodeFindInClone", "cudaGraphExecUpdate"]


@pytest.mark.parametrize("sym", NODE_ENTRY_POINTS)
def test_fault_injection_on_the_explicit_construction_entry_points(L, sym):
    before = live(L)
    G = Graph(L)
    a, b = G.bufs
    e = P()
    assert L.cudaEventCreate(ctypes.byref(e)) == 0
    err, n0 = G.add(L.cudaGraphAddEmptyNode)
    err2, n1 = G.add(L.cudaGraphAddEmptyNode)
    assert err == err2 == 0
    c, x, found, cnt, info = P(), P(), P(), S(), UpdateInfo()
    assert L.cudaGraphClone(ctypes.byref(c), G.g) == 0 if sym == "cudaGraphNodeFindInClone" else True
    if sym == "cudaGraphExecUpdate":
        assert L.cudaGraphInstantiate(ctypes.byref(x), G.g, ctypes.c_ulonglong(0)) == 0
    p3 = Memcpy3D()
    p3.srcPtr, p3.dstPtr, p3.extent, p3.kind = Pitched(b, 64, 64, 1), Pitched(a, 64, 64, 1), Extent(64, 1, 1), 3
    ms, fn = MemsetParams(a, 0, 1, 1, 64, 1), HOSTFN(lambda _: None)
    hp = HostParams(fn, None)
    ap = _alloc_params(64)
    if sym == "cudaGraphAddMemFreeNode":
        assert G.add(L.cudaGraphAddMemAllocNode, ctypes.byref(ap))[0] == 0
    calls = {
        "cudaGraphAddMemAllocNode": lambda: G.add(L.cudaGraphAddMemAllocNode, ctypes.byref(ap))[0],
        "cudaGraphAddMemFreeNode": lambda: G.add(L.cudaGraphAddMemFreeNode, P(ap.dptr))[0],
        "cudaGraphAddMemcpyNode": lambda: G.add(L.cudaGraphAddMemcpyNode, ctypes.byref(p3))[0],
        "cudaGraphAddMemcpyNode1D": lambda: G.add(L.cudaGraphAddMemcpyNode1D, a, b, S(64), 3)[0],
        "cudaGraphAddMemsetNode": lambda: G.add(L.cudaGraphAddMemsetNode, ctypes.byref(ms))[0],
        "cudaGraphAddHostNode": lambda: G.add(L.cudaGraphAddHostNode, ctypes.byref(hp))[0],
        "cudaGraphAddEventRecordNode": lambda: G.add(L.cudaGraphAddEventRecordNode, e)[0],
        "cudaGraphAddEventWaitNode": lambda: G.add(L.cudaGraphAddEventWaitNode, e)[0],
        "cudaGraphAddDependencies": lambda: L.cudaGraphAddDependencies(G.g, _deps(n0), _deps(n1), None, 1),
        "cudaGraphNodeGetDependencies": lambda: L.cudaGraphNodeGetDependencies(n1, None, None, ctypes.byref(cnt)),
        "cudaGraphClone": lambda: L.cudaGraphClone(ctypes.byref(c), G.g),
        "cudaGraphNodeFindInClone": lambda: L.cudaGraphNodeFindInClone(ctypes.byref(found), n0, c),
        "cudaGraphExecUpdate": lambda: L.cudaGraphExecUpdate(x, G.g, ctypes.byref(info)),
    }
    state = (_nodes(L, G.g), live(L))
    L.cudaGetLastError()
    assert L.accelEmuSetFail(f"{sym}:1".encode()) == 0
    err = calls[sym]()
    L.accelEmuSetFail(None)
    want = UNKNOWN if sym in ("cudaGraphNodeGetDependencies", "cudaGraphNodeFindInClone",
                              "cudaGraphExecUpdate") else OOM
    assert err == want and L.cudaGetLastError() == err
    assert (_nodes(L, G.g), live(L)) == state
    assert L.cudaGraphNodeGetDependencies(n1, None, None, ctypes.byref(cnt)) == 0 and cnt.value == 0
    assert calls[sym]() == 0                                   # works once disarmed
    if c.value:
        assert L.cudaGraphDestroy(c) == 0
    if x.value:
        assert L.cudaGraphExecDestroy(x) == 0
    G.close()
    if sym == "cudaGraphAddMemAllocNode":       # no free node: the allocation is the user's to free, as in CUDA
        assert L.cudaFree(P(ap.dptr)) == 0
    assert L.cudaEventDestroy(e) == 0
    assert live(L) == before


def test_many_graph_allocations_freed_in_any_order_inside_one_capture(L, stream):
    """Free nodes find their allocation by address (a table, not a scan): 2000 allocations freed in a shuffled
    order, a free of memory the capture did not allocate refused (cudaErrorInvalidValue), the graph's
    memory back once it is destroyed."""
    before = live(L)
    rng = np.random.default_rng(5)
    ptrs = [P() for _ in range(2000)]
    g, outside = P(), P()
    assert L.cudaMalloc(ctypes.byref(outside), 64) == 0
    assert L.cudaStreamBeginCapture(stream, 2) == 0
    for p in ptrs:
        assert L.cudaMallocAsync(ctypes.byref(p), S(64), stream) == 0
    for i in rng.permutation(len(ptrs)):
        assert L.cudaFreeAsync(ptrs[i], stream) == 0
    assert L.cudaStreamEndCapture(stream, ctypes.byref(g)) == 0 and _nodes(L, g) == 4000
    x = P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), g, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphLaunch(x, stream) == 0 and L.cudaStreamSynchronize(stream) == 0
    assert L.cudaGraphExecDestroy(x) == 0 and L.cudaGraphDestroy(g) == 0
    assert L.cudaStreamBeginCapture(stream, 2) == 0
    assert L.cudaFreeAsync(outside, stream) == INVALID_VALUE
    assert L.cudaStreamEndCapture(stream, ctypes.byref(g)) == 0       # relaxed: refused, not invalidated
    assert L.cudaGraphDestroy(g) == 0
    assert L.cudaFree(outside) == 0
    assert live(L) == before
