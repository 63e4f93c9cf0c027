"""The peers' own graph APIs on the emulated runtime: cuda.core's ``GraphBuilder`` (stream capture through
the libcuda.so.1 stand-in's driver entry points, host callbacks kept alive by user objects) with a copy and a
host callback, replayed with fresh input bytes; and the driver API's explicit graph construction through
cuda.bindings.  Each runs in a fresh interpreter that calls
accel.emu.activate() before importing the peer; skipped with the reason where the peer is not importable."""
import importlib.util
import json
import pathlib

import pytest

try:
    import cuda.bindings  # noqa: F401
    HAVE_BINDINGS = True
except ImportError:
    HAVE_BINDINGS = False

_spec = importlib.util.spec_from_file_location("standin_fixtures",
                                               pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

GRAPH_BUILDER = """
import accel.emu
accel.emu.activate(devices=2)
import ctypes, gc, json
import numpy as np
from cuda.core import Device, LegacyPinnedMemoryResource

dev = Device(1)
dev.set_current()
s = dev.create_stream()
pin = LegacyPinnedMemoryResource()
N = 4096
src, dst = pin.allocate(N), pin.allocate(N)
mid = dev.memory_resource.allocate(N, stream=s)
s.sync()
host = lambda b: np.ctypeslib.as_array((ctypes.c_ubyte * N).from_address(int(b.handle)))
hsrc, hdst = host(src), host(dst)
rt = ctypes.CDLL(accel.emu.cudart_path())
live = lambda: [rt.accelEmuLiveUserObjects(), rt.accelEmuLiveGraphs(), rt.accelEmuLiveGraphExecs()]
before = live()
seen = []
gb = dev.create_graph_builder().begin_building()
mid.copy_from(src, stream=gb)                       # host -> device -> host, then a callback that reads dst
dst.copy_from(mid, stream=gb)
gb.callback(lambda: seen.append(bytes(hdst)))
gb.end_building()
g = gb.complete()
ok = []
for i in range(5):                                  # fresh input bytes every launch
    hsrc[:] = (np.arange(N) * (i + 3)) % 251
    hdst[:] = 0
    g.launch(s)
    s.sync()
    ok.append(bytes(hdst) == bytes(hsrc) and seen[-1] == bytes(hsrc))
held = live()
g.close(); gb.close(); del g, gb; gc.collect()
print(json.dumps([ok, len(seen), held[0] > before[0], live() == before]))
"""


@_fx.needs_standins
@_fx.needs_cuda_core
def test_cuda_core_graph_builder_with_a_copy_and_a_host_callback(subprocess_python):
    """cuda.core's GraphBuilder on the stand-ins: begin_building, two copies and a callback captured,
    end_building / complete, five launches each checked byte for byte (the callback sees the copied bytes:
    it runs after the copies); the user objects that keep the callback alive go with the graph."""
    proc = subprocess_python(GRAPH_BUILDER, env={"ACCEL_EMU_TRACE": None, "ACCEL_EMU_FAIL": None})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [[True] * 5, 5, True, True]


DRIVER_EXPLICIT = """
import accel.emu
accel.emu.activate(devices=2)
import ctypes, json
import numpy as np
from cuda.bindings import driver as d

def ok(res):
    res = res if isinstance(res, tuple) else (res,)
    assert int(res[0]) == 0, res
    return res[1] if len(res) == 2 else res[1:]

ok(d.cuInit(0))
ok(d.cuCtxSetCurrent(ok(d.cuDevicePrimaryCtxRetain(ok(d.cuDeviceGet(0))))))
s = ok(d.cuStreamCreate(1))
dev = ok(d.cuMemAlloc(64))
host = np.zeros(64, np.uint8)
g = ok(d.cuGraphCreate(0))
ms = d.CUDA_MEMSET_NODE_PARAMS()
ms.dst, ms.value, ms.elementSize, ms.width, ms.height, ms.pitch = dev, 7, 1, 64, 1, 0
ctx = ok(d.cuCtxGetCurrent())
cp = d.CUDA_MEMCPY3D()
cp.srcMemoryType, cp.srcDevice = d.CUmemorytype.CU_MEMORYTYPE_DEVICE, dev
cp.dstMemoryType, cp.dstHost = d.CUmemorytype.CU_MEMORYTYPE_HOST, host.ctypes.data
cp.WidthInBytes, cp.Height, cp.Depth = 64, 1, 1
ncp = ok(d.cuGraphAddMemcpyNode(g, None, 0, cp, ctx))      # added first, ordered after the memset below
nms = ok(d.cuGraphAddMemsetNode(g, None, 0, ms, ctx))
ok(d.cuGraphAddDependencies(g, [nms], [ncp], None, 1))
deps = ok(d.cuGraphNodeGetDependencies(ncp, 1))
c = ok(d.cuGraphClone(g))
found = ok(d.cuGraphNodeFindInClone(ncp, c))
x = ok(d.cuGraphInstantiate(g, 0))
out = [int(deps[0][0]) == int(nms) if isinstance(deps, tuple) else str(deps)]
ok(d.cuGraphLaunch(x, s)); ok(d.cuStreamSynchronize(s))
out.append(int(host.sum()))
ms.value = 9
g2 = ok(d.cuGraphCreate(0))
n2c = ok(d.cuGraphAddMemcpyNode(g2, None, 0, cp, ctx)); n2m = ok(d.cuGraphAddMemsetNode(g2, None, 0, ms, ctx))
ok(d.cuGraphAddDependencies(g2, [n2m], [n2c], None, 1))
info = ok(d.cuGraphExecUpdate(x, g2))
ok(d.cuGraphLaunch(x, s)); ok(d.cuStreamSynchronize(s))
out += [int(info.result), int(host.sum())]
for h in (x,): ok(d.cuGraphExecDestroy(h))
for h in (g, g2, c): ok(d.cuGraphDestroy(h))
print(json.dumps(out))
"""


@_fx.needs_standins
@pytest.mark.skipif(not HAVE_BINDINGS, reason="cuda-bindings is not installed")
def test_driver_api_explicit_graph_through_cuda_bindings(subprocess_python):
    """The driver's explicit construction through cuda.bindings: a memset node and a CUDA_MEMCPY3D
    device-to-host node added in the wrong order and ordered by cuGraphAddDependencies, the dependency read
    back, cuGraphClone / cuGraphNodeFindInClone, a launch, cuGraphExecUpdate to a graph with another memset
    value, and a launch with it."""
    proc = subprocess_python(DRIVER_EXPLICIT, env={"ACCEL_EMU_TRACE": None, "ACCEL_EMU_FAIL": None})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [True, 7 * 64, 0, 9 * 64]


DRIVER_FAULTS = """
import ctypes as c, json, os
from accel import emu
rt = c.CDLL(emu.cudart_path(), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL(emu.driver_path(), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
rt.accelEmuSetFail.argtypes = [c.c_char_p]
P, S, U = c.c_void_p, c.c_size_t, c.c_uint
ctx = P()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(c.byref(ctx), 0) == 0 and cu.cuCtxSetCurrent(ctx) == 0
HOSTFN = c.CFUNCTYPE(None, P)
gone = []
destroy = HOSTFN(lambda p: gone.append(p))
g, n0, n1, ev, buf, o = P(), P(), P(), P(), P(), P()
assert cu.cuGraphCreate(c.byref(g), 0) == 0
assert cu.cuGraphAddEmptyNode(c.byref(n0), g, None, S(0)) == 0
assert cu.cuGraphAddEmptyNode(c.byref(n1), g, None, S(0)) == 0
assert cu.cuEventCreate(c.byref(ev), 0) == 0 and cu.cuMemAlloc_v2(c.byref(buf), S(64)) == 0
assert cu.cuUserObjectCreate(c.byref(o), P(5), destroy, U(1), U(1)) == 0
ms = (c.c_size_t * 6)(buf.value, 0, 0, 64, 1, 0)                 # dst, pitch, value|elementSize, width, height
c.memmove(c.addressof(ms) + 16, (c.c_uint * 2)(3, 1), 8)
hp = (P * 2)(c.cast(destroy, P).value, None)
cp = (c.c_size_t * 25)()                                          # CUDA_MEMCPY3D: device -> device
cp[4], cp[6], cp[15], cp[17], cp[22], cp[23], cp[24] = 2, buf.value, 2, buf.value, 64, 1, 1
info, node, out, cnt = (c.c_byte * 24)(), P(), P(), S()
clone, x = P(), P()
ap = (c.c_int * 30)(1, 0, 1, 0)                                   # CUDA_MEM_ALLOC_NODE_PARAMS: pinned, device 0
c.memmove(c.addressof(ap) + 104, (c.c_size_t * 1)(256), 8)         # bytesize
fp = (c.c_int * 30)(1, 0, 1, 0)
c.memmove(c.addressof(fp) + 104, (c.c_size_t * 1)(256), 8)
gf, fnode = P(), P()
assert cu.cuGraphCreate(c.byref(gf), 0) == 0 and cu.cuGraphAddMemAllocNode(c.byref(fnode), gf, None, S(0), fp) == 0
fptr = c.c_uint64.from_address(c.addressof(fp) + 112).value
assert cu.cuGraphClone(c.byref(clone), g) == 0
assert cu.cuGraphInstantiateWithFlags(c.byref(x), g, c.c_ulonglong(0)) == 0
calls = {
    "cuGraphAddMemAllocNode": lambda: cu.cuGraphAddMemAllocNode(c.byref(node), gf, None, S(0), ap),
    "cuGraphAddMemFreeNode": lambda: cu.cuGraphAddMemFreeNode(c.byref(node), gf, None, S(0), c.c_uint64(fptr)),
    "cuGraphAddMemcpyNode": lambda: cu.cuGraphAddMemcpyNode(c.byref(node), g, None, S(0), cp, ctx),
    "cuGraphAddMemsetNode": lambda: cu.cuGraphAddMemsetNode(c.byref(node), g, None, S(0), ms, ctx),
    "cuGraphAddHostNode": lambda: cu.cuGraphAddHostNode(c.byref(node), g, None, S(0), hp),
    "cuGraphAddEventRecordNode": lambda: cu.cuGraphAddEventRecordNode(c.byref(node), g, None, S(0), ev),
    "cuGraphAddEventWaitNode": lambda: cu.cuGraphAddEventWaitNode(c.byref(node), g, None, S(0), ev),
    "cuGraphAddDependencies": lambda: cu.cuGraphAddDependencies(g, c.byref(n0), c.byref(n1), S(1)),
    "cuGraphNodeGetDependencies": lambda: cu.cuGraphNodeGetDependencies(n1, None, c.byref(cnt)),
    "cuGraphClone": lambda: cu.cuGraphClone(c.byref(out), g),
    "cuGraphNodeFindInClone": lambda: cu.cuGraphNodeFindInClone(c.byref(out), n0, clone),
    "cuGraphExecUpdate_v2": lambda: cu.cuGraphExecUpdate_v2(x, clone, info),
    "cuUserObjectRetain": lambda: cu.cuUserObjectRetain(o, U(1)),
    "cuGraphRetainUserObject": lambda: cu.cuGraphRetainUserObject(g, o, U(1), U(0)),
    "cuGraphReleaseUserObject": lambda: cu.cuGraphReleaseUserObject(g, o, U(1)),
    "cuUserObjectRelease": lambda: cu.cuUserObjectRelease(o, U(1)),
    "cuUserObjectCreate": lambda: cu.cuUserObjectCreate(c.byref(out), P(6), destroy, U(1), U(1)),
}
res = {}
for name, call in calls.items():
    nodes = S()
    cu.cuGraphGetNodes(g, None, c.byref(nodes))
    state = (nodes.value, rt.accelEmuLiveGraphs(), rt.accelEmuLiveUserObjects(), len(gone))
    assert rt.accelEmuSetFail(f"{name}:1".encode()) == 0
    err = call()
    rt.accelEmuSetFail(None)
    cu.cuGraphGetNodes(g, None, c.byref(nodes))
    same = state == (nodes.value, rt.accelEmuLiveGraphs(), rt.accelEmuLiveUserObjects(), len(gone))
    res[name] = [err, same, call(), rt.cudaGetLastError()]
assert cu.cuUserObjectRelease(out, U(1)) == 0 and cu.cuUserObjectRelease(o, U(1)) == 0   # the last calls'
assert cu.cuGraphExecDestroy(x) == 0 and cu.cuGraphDestroy(clone) == 0 and cu.cuGraphDestroy(g) == 0
assert cu.cuGraphDestroy(gf) == 0
aptr = c.c_uint64.from_address(c.addressof(ap) + 112).value       # the alloc node no free node freed: the user's
assert cu.cuMemFree_v2(c.c_uint64(aptr)) == 0 and rt.accelEmuLiveAllocations() == 1   # buf is left
print(json.dumps([res, sorted(gone), rt.accelEmuLiveUserObjects()]))
"""

DRIVER_FAULT_CODES = {"cuGraphAddMemAllocNode": 2, "cuGraphAddMemFreeNode": 2, "cuGraphAddMemcpyNode": 2, "cuGraphAddMemsetNode": 2, "cuGraphAddHostNode": 2,
                      "cuGraphAddEventRecordNode": 2, "cuGraphAddEventWaitNode": 2, "cuGraphAddDependencies": 2,
                      "cuGraphNodeGetDependencies": 999, "cuGraphClone": 2, "cuGraphNodeFindInClone": 999,
                      "cuGraphExecUpdate_v2": 999, "cuUserObjectRetain": 999, "cuGraphRetainUserObject": 2,
                      "cuGraphReleaseUserObject": 999, "cuUserObjectRelease": 999, "cuUserObjectCreate": 2}


@_fx.needs_standins
def test_fault_injection_on_the_driver_graph_entry_points(subprocess_python):
    """Each new driver entry point armed by its name: its fault code (out of memory where it creates,
    unknown elsewhere), no node / graph / user object made or dropped, the call works once disarmed, and the
    runtime's last error stays clean; the user objects' destructors run once, when the last reference goes."""
    proc = subprocess_python(DRIVER_FAULTS, env={"ACCEL_EMU_TRACE": None, "ACCEL_EMU_FAIL": None,
                                                 "ACCEL_EMU_DEVICES": "2"})
    assert proc.returncode == 0, proc.stderr
    res, gone, left = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res == {name: [code, True, 0, 0] for name, code in DRIVER_FAULT_CODES.items()}
    assert gone == [5, 6] and left == 0
