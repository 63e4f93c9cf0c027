"""Graph queries and node removal (issue 33): cuGraphNodeGetDependentNodes(_v2), cuGraphGetEdges(_v2),
cuGraphDestroyNode, cuGraphMemAllocNodeGetParams / cuGraphMemFreeNodeGetParams and their runtime forms
(cudaGraphNodeGetDependentNodes, cudaGraphGetEdges, cudaGraphDestroyNode, cudaGraphMem*NodeGetParams):
what each returns, the driver's documented error returns, that a refused call changes nothing, and that a
graph still instantiates, launches in dependency order, clones and finds its clone's nodes after a removal.

The stand-ins run in fresh interpreters (see test_standin.py for why).
"""
import importlib.util
import pathlib

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

OK, INVALID_VALUE, INVALID_HANDLE, NOT_SUPPORTED, UNKNOWN = 0, 1, 400, 801, 999

PRELUDE = f"""
import ctypes as c, json, os
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
rt.accelEmuSetFail.argtypes = [c.c_char_p]
P, S, R = c.c_void_p, c.c_size_t, c.byref
PP = c.POINTER(P)
for name, args in dict(
        cuGraphNodeGetDependentNodes=[P, PP, c.POINTER(S)], cuGraphNodeGetDependentNodes_v2=[P, PP, P, c.POINTER(S)],
        cuGraphGetEdges=[P, PP, PP, c.POINTER(S)], cuGraphGetEdges_v2=[P, PP, PP, P, c.POINTER(S)],
        cuGraphDestroyNode=[P], cuGraphMemAllocNodeGetParams=[P, P], cuGraphMemFreeNodeGetParams=[P, P],
        cudaGraphNodeGetDependentNodes=[P, PP, P, c.POINTER(S)], cudaGraphGetEdges=[P, PP, PP, P, c.POINTER(S)],
        cudaGraphDestroyNode=[P], cudaGraphMemAllocNodeGetParams=[P, P], cudaGraphMemFreeNodeGetParams=[P, P],
        cuGraphAddEmptyNode=[PP, P, PP, S], cuGraphAddHostNode=[PP, P, PP, S, P], cuGraphNodeGetType=[P, c.POINTER(c.c_int)],
        cuGraphAddMemAllocNode=[PP, P, PP, S, P], cuGraphAddMemFreeNode=[PP, P, PP, S, c.c_uint64],
        cuGraphNodeGetDependencies=[P, PP, c.POINTER(S)], cuGraphNodeFindInClone=[PP, P, P],
        cuGraphGetNodes=[P, PP, c.POINTER(S)]).items():
    getattr(rt if name.startswith("cuda") else cu, name).argtypes = args
ctx = P()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(R(ctx), 0) == 0 and cu.cuCtxSetCurrent(ctx) == 0
HOSTFN = c.CFUNCTYPE(None, P)
ran = []
host = HOSTFN(lambda p: ran.append(p))
def graph():
    g = P(); assert cu.cuGraphCreate(R(g), 0) == 0; return g
def node(g, *deps, tag=None):
    n, arr = P(), (P * max(len(deps), 1))(*deps)
    if tag is None:
        assert cu.cuGraphAddEmptyNode(R(n), g, arr, len(deps)) == 0
    else:
        hp = (P * 2)(c.cast(host, P).value, tag)
        assert cu.cuGraphAddHostNode(R(n), g, arr, len(deps), hp) == 0
    return n.value
def edges(g, room=None, v2=False):
    n = S()
    assert cu.cuGraphGetEdges(g, None, None, R(n)) == 0
    k = n.value if room is None else room
    f, t, n = (P * max(k, 1))(), (P * max(k, 1))(), S(k)
    r = cu.cuGraphGetEdges(g, f, t, R(n))
    assert r == 0, r
    return [[f[i], t[i]] for i in range(k)], n.value
def dependents(x):
    n = S(); assert cu.cuGraphNodeGetDependentNodes(x, None, R(n)) == 0
    out = (P * max(n.value, 1))()
    assert cu.cuGraphNodeGetDependentNodes(x, out, R(n)) == 0
    return list(out[:n.value])
def deps(x):
    n = S(); assert cu.cuGraphNodeGetDependencies(x, None, R(n)) == 0
    out = (P * max(n.value, 1))()
    assert cu.cuGraphNodeGetDependencies(x, out, R(n)) == 0
    return list(out[:n.value])
def out(x):
    print(json.dumps(x))
"""

_run, _json = _fx.runners(PRELUDE)


def test_edges_and_dependents(subprocess_python):
    got = _json(subprocess_python, """
g = graph()
a = node(g); b = node(g, a); cc = node(g, a); d = node(g, b, cc)
name = {a: "a", b: "b", cc: "c", d: "d", None: None}
nm = lambda l: [name[x] for x in l]
r = {}
all_, n = edges(g)
r["edges"] = [nm(e) for e in all_], n
more, n = edges(g, room=6)
r["room"] = [nm(e) for e in more], n
less, n = edges(g, room=2)
r["less"] = [nm(e) for e in less], n
r["dependents"] = [nm(dependents(x)) for x in (a, b, cc, d)]
# _v2: edge data comes back zeroed (default edges); a short array gets the first ones
ed = (c.c_ubyte * 16)(*([7] * 16)); f, t, k = (P * 2)(), (P * 2)(), S(2)
r["v2"] = [cu.cuGraphNodeGetDependentNodes_v2(a, f, ed, R(k)), nm(f[:2]), k.value, list(ed)]
ed = (c.c_ubyte * 40)(*([7] * 40)); f, t, k = (P * 5)(), (P * 5)(), S(5)
r["edges_v2"] = [cu.cuGraphGetEdges_v2(g, f, t, ed, R(k)), k.value, list(ed)[:32] == [0] * 32, nm(f[:5])]
# the documented refusals: NULL count, edge data without the arrays, one array of the two; bad handles
k = S(3)
r["bad"] = [cu.cuGraphGetEdges(g, None, None, None), cu.cuGraphGetEdges(g, f, None, R(k)),
            cu.cuGraphGetEdges(g, None, t, R(k)), cu.cuGraphGetEdges_v2(g, None, None, ed, R(k)),
            cu.cuGraphGetEdges(P(0x1234), None, None, R(k)), cu.cuGraphNodeGetDependentNodes(a, None, None),
            cu.cuGraphNodeGetDependentNodes_v2(a, None, ed, R(k)), cu.cuGraphNodeGetDependentNodes(g, None, R(k)),
            k.value]
# the runtime's forms answer alike and set the last error on a refusal
k = S()
r["rt"] = [rt.cudaGraphGetEdges(g, None, None, None, R(k)), k.value, rt.cudaGetLastError(),
           rt.cudaGraphNodeGetDependentNodes(d, None, None, R(k)), k.value,
           rt.cudaGraphGetEdges(g, f, None, None, R(k)), rt.cudaGetLastError(), rt.cudaGetLastError()]
# cuGetProcAddress: the CUDA 12.0 ABI without edge data, from 12.3 the _v2 one
fn, st = P(), c.c_int()
ab = []
for name_, ver in (("cuGraphGetEdges", 12000), ("cuGraphGetEdges", 12030), ("cuGraphNodeGetDependentNodes", 13000)):
    assert cu.cuGetProcAddress_v2(name_.encode(), R(fn), ver, 0, R(st)) == 0 and st.value == 0
    ab.append(fn.value)
r["procs"] = [ab[0] == c.cast(cu.cuGraphGetEdges, P).value, ab[1] == c.cast(cu.cuGraphGetEdges_v2, P).value,
              ab[2] == c.cast(cu.cuGraphNodeGetDependentNodes_v2, P).value]
assert cu.cuGraphDestroy(g) == 0
out(r)
""")
    assert got["edges"] == [[["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]], 4]
    assert got["room"] == [[["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"], [None, None], [None, None]], 4]
    assert got["less"] == [[["a", "b"], ["a", "c"]], 2]
    assert got["dependents"] == [["b", "c"], ["d"], ["d"], []]
    assert got["v2"] == [OK, ["b", "c"], 2, [0] * 16]
    assert got["edges_v2"] == [OK, 4, True, ["a", "a", "b", "c", None]]
    assert got["bad"] == [INVALID_VALUE] * 4 + [INVALID_HANDLE, INVALID_VALUE, INVALID_VALUE, INVALID_HANDLE, 3]
    assert got["rt"] == [OK, 4, OK, OK, 0, INVALID_VALUE, INVALID_VALUE, OK]
    assert got["procs"] == [True, True, True]


def test_destroy_node(subprocess_python):
    got = _json(subprocess_python, """
g = graph()
a = node(g, tag=1); b = node(g, a, tag=2); cc = node(g, a, tag=3); d = node(g, b, cc, tag=4)
name = {a: "a", b: "b", cc: "c", d: "d", None: None}
nm = lambda l: [name[x] for x in l]
clone = P(); assert cu.cuGraphClone(R(clone), g) == 0
dc = P(); assert cu.cuGraphNodeFindInClone(R(dc), d, clone) == 0
r = {"destroy": cu.cuGraphDestroyNode(b)}
k = S(); cu.cuGraphGetNodes(g, None, R(k))
r["after"] = [k.value, [nm(e) for e in edges(g)[0]], nm(dependents(a)), nm(deps(d))]
t = c.c_int()
r["gone"] = [cu.cuGraphNodeGetType(b, R(t)), cu.cuGraphDestroyNode(b), cu.cuGraphDestroyNode(None),
             cu.cuGraphDestroyNode(g)]
# the graph still runs its nodes in dependency order, and destroying the first node frees its dependents
x, s = P(), P()
assert cu.cuGraphInstantiateWithFlags(R(x), g, c.c_ulonglong(0)) == 0 and cu.cuStreamCreate(R(s), 0) == 0
assert cu.cuGraphLaunch(x, s) == 0 and cu.cuStreamSynchronize(s) == 0
r["ran"] = list(ran)
assert cu.cuGraphDestroyNode(a) == 0
r["roots"] = [nm(deps(cc)), [nm(e) for e in edges(g)[0]]]
# the clone keeps its own nodes; finding in it goes by node, not by position
f = P()
r["clone"] = [cu.cuGraphNodeFindInClone(R(f), d, clone), f.value == dc.value]
assert cu.cuGraphDestroyNode(dc) == 0
r["clone_gone"] = cu.cuGraphNodeFindInClone(R(f), d, clone)
# armed fault: nothing removed
assert rt.accelEmuSetFail(b"cuGraphDestroyNode:1") == 0
r["fault"] = [cu.cuGraphDestroyNode(cc), rt.cudaGetLastError()]
rt.accelEmuSetFail(None)
cu.cuGraphGetNodes(g, None, R(k)); r["fault"].append(k.value)
# the runtime's form
r["rt"] = [rt.cudaGraphDestroyNode(cc), rt.cudaGraphDestroyNode(cc), rt.cudaGetLastError()]
assert cu.cuGraphExecDestroy(x) == 0 and cu.cuGraphDestroy(g) == 0 and cu.cuGraphDestroy(clone) == 0
out(r)
""")
    assert got["destroy"] == OK
    assert got["after"] == [3, [["a", "c"], ["c", "d"]], ["c"], ["c"]]
    assert got["gone"] == [INVALID_HANDLE, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE]
    assert got["ran"] == [1, 3, 4]
    assert got["roots"] == [[], [["c", "d"]]]
    assert got["clone"] == [OK, True] and got["clone_gone"] == INVALID_VALUE
    assert got["fault"] == [UNKNOWN, OK, 2]
    assert got["rt"] == [OK, INVALID_VALUE, INVALID_VALUE]


def test_memory_nodes(subprocess_python):
    got = _json(subprocess_python, """
g = graph()
ap = (c.c_int * 30)(1, 0, 1, 1)                                   # CUDA_MEM_ALLOC_NODE_PARAMS: pinned, device 1
c.memmove(c.addressof(ap) + 104, (c.c_size_t * 1)(1000), 8)        # bytesize
al, fr = P(), P()
assert cu.cuGraphAddMemAllocNode(R(al), g, None, 0, ap) == 0
dptr = c.c_uint64.from_address(c.addressof(ap) + 112).value
e = node(g)
assert cu.cuGraphAddMemFreeNode(R(fr), g, (P * 1)(al.value), 1, c.c_uint64(dptr)) == 0
back = (c.c_int * 30)(*([-1] * 30))
r = {"alloc": cu.cuGraphMemAllocNodeGetParams(al, back)}
r["params"] = [list(back[:4]), c.c_size_t.from_address(c.addressof(back) + 104).value,
               c.c_uint64.from_address(c.addressof(back) + 112).value == dptr,
               c.c_size_t.from_address(c.addressof(back) + 96).value]
got = c.c_uint64(7)
r["free"] = [cu.cuGraphMemFreeNodeGetParams(fr, R(got)), got.value == dptr]
r["bad"] = [cu.cuGraphMemAllocNodeGetParams(fr, back), cu.cuGraphMemAllocNodeGetParams(al, None),
            cu.cuGraphMemFreeNodeGetParams(al, R(got)), cu.cuGraphMemFreeNodeGetParams(fr, None),
            cu.cuGraphMemAllocNodeGetParams(None, back)]
# nodes of a graph with memory nodes cannot be removed (CUDA's rule), not even its empty node
k = S()
r["destroy"] = [cu.cuGraphDestroyNode(e), cu.cuGraphDestroyNode(al)]
cu.cuGraphGetNodes(g, None, R(k)); r["destroy"].append(k.value)
rb = (c.c_int * 30)()
r["rt"] = [rt.cudaGraphMemAllocNodeGetParams(al, rb), rb[3], rt.cudaGraphMemFreeNodeGetParams(e, R(got)),
           rt.cudaGetLastError()]
assert cu.cuGraphDestroy(g) == 0
out(r)
""")
    assert got["alloc"] == OK
    assert got["params"] == [[1, 0, 1, 1], 1000, True, 0]
    assert got["free"] == [OK, True]
    assert got["bad"] == [INVALID_VALUE] * 5
    assert got["destroy"] == [NOT_SUPPORTED, NOT_SUPPORTED, 3]
    assert got["rt"] == [OK, 1, INVALID_VALUE, INVALID_VALUE]


def test_no_removal_while_capturing(subprocess_python):
    got = _json(subprocess_python, """
s, g = P(), P()
assert cu.cuStreamCreate(R(s), 1) == 0 and cu.cuStreamBeginCapture_v2(s, 0) == 0
assert cu.cuLaunchHostFunc(s, host, None) == 0
st, cid, cg, dp, k = c.c_int(), c.c_ulonglong(), P(), P(), S()
assert cu.cuStreamGetCaptureInfo_v2(s, R(st), R(cid), R(cg), R(dp), R(k)) == 0 and k.value == 1
n = c.cast(dp, PP)[0]
r = [cu.cuGraphDestroyNode(n)]
assert cu.cuStreamEndCapture(s, R(g)) == 0
r.append(cu.cuGraphDestroyNode(n))
assert cu.cuGraphDestroy(g) == 0
out(r)
""")
    assert got == [INVALID_VALUE, OK]


def test_fault_hooks(subprocess_python):
    """Each new entry point armed by its name fails with CUDA_ERROR_UNKNOWN / cudaErrorUnknown before it
    changes or writes anything, and works once disarmed; the driver's leave the runtime's last error alone."""
    got = _json(subprocess_python, """
g = graph()
a = node(g); b = node(g, a)
gm = graph()
ap = (c.c_int * 30)(1, 0, 1, 0)
c.memmove(c.addressof(ap) + 104, (c.c_size_t * 1)(64), 8)
al, fr = P(), P()
assert cu.cuGraphAddMemAllocNode(R(al), gm, None, 0, ap) == 0
dptr = c.c_uint64.from_address(c.addressof(ap) + 112).value
assert cu.cuGraphAddMemFreeNode(R(fr), gm, (P * 1)(al.value), 1, c.c_uint64(dptr)) == 0
f, t, k, buf, dp = (P * 4)(), (P * 4)(), S(4), (c.c_int * 30)(), c.c_uint64(0)
cu.cuGraphGetRootNodes.argtypes = rt.cudaGraphGetRootNodes.argtypes = [P, PP, c.POINTER(S)]
cu.cuGraphRemoveDependencies_v2.argtypes = [P, PP, PP, P, S]
calls = {
    "cuGraphNodeGetDependentNodes": lambda: cu.cuGraphNodeGetDependentNodes(a, f, R(k)),
    "cuGraphNodeGetDependentNodes_v2": lambda: cu.cuGraphNodeGetDependentNodes_v2(a, f, None, R(k)),
    "cuGraphGetEdges": lambda: cu.cuGraphGetEdges(g, f, t, R(k)),
    "cuGraphGetEdges_v2": lambda: cu.cuGraphGetEdges_v2(g, f, t, None, R(k)),
    "cuGraphMemAllocNodeGetParams": lambda: cu.cuGraphMemAllocNodeGetParams(al, buf),
    "cuGraphMemFreeNodeGetParams": lambda: cu.cuGraphMemFreeNodeGetParams(fr, R(dp)),
    "cudaGraphNodeGetDependentNodes": lambda: rt.cudaGraphNodeGetDependentNodes(a, f, None, R(k)),
    "cudaGraphGetEdges": lambda: rt.cudaGraphGetEdges(g, f, t, None, R(k)),
    "cudaGraphMemAllocNodeGetParams": lambda: rt.cudaGraphMemAllocNodeGetParams(al, buf),
    "cudaGraphMemFreeNodeGetParams": lambda: rt.cudaGraphMemFreeNodeGetParams(fr, R(dp)),
    "cuGraphGetRootNodes": lambda: cu.cuGraphGetRootNodes(g, f, R(k)),
    "cudaGraphGetRootNodes": lambda: rt.cudaGraphGetRootNodes(g, f, R(k)),
    "cuGraphRemoveDependencies_v2": lambda: cu.cuGraphRemoveDependencies_v2(g, (P * 1)(a), (P * 1)(b), None, 1),
    "cuGraphDestroyNode": lambda: cu.cuGraphDestroyNode(b),
    "cudaGraphDestroyNode": lambda: rt.cudaGraphDestroyNode(a),
}
res = {}
for name, call in calls.items():
    f[0] = t[0] = None; k.value = 4; buf[0] = -1; dp.value = 0
    n = S(); cu.cuGraphGetNodes(g, None, R(n)); before = n.value
    e = S(); cu.cuGraphGetEdges(g, None, None, R(e)); edges_before = e.value
    assert rt.accelEmuSetFail(f"{name}:1".encode()) == 0
    err = call()
    untouched = f[0] is None and t[0] is None and k.value == 4 and buf[0] == -1 and dp.value == 0
    rt.accelEmuSetFail(None)
    last = rt.cudaGetLastError()
    cu.cuGraphGetNodes(g, None, R(n)); cu.cuGraphGetEdges(g, None, None, R(e))
    same = n.value == before and e.value == edges_before
    res[name] = [err, untouched and same, last, call(), rt.cudaGetLastError()]
out(res)
""")
    for name, (err, unchanged, last, again, last_after) in got.items():
        runtime = name.startswith("cuda")
        assert (err, unchanged, again, last_after) == (UNKNOWN, True, OK, OK), name
        assert last == (UNKNOWN if runtime else OK), name


def test_graph_memory_attributes(subprocess_python):
    """CU_GRAPH_MEM_ATTR_*: the bytes of graph allocations in use on a device (alloc nodes of live graphs and
    executable graphs, captured ones too), their high watermark, reset only to 0; trim succeeds."""
    got = _json(subprocess_python, """
for name, args in dict(cuDeviceGetGraphMemAttribute=[c.c_int, c.c_int, P], cuDeviceSetGraphMemAttribute=[c.c_int, c.c_int, P],
                       cuDeviceGraphMemTrim=[c.c_int], cudaDeviceGetGraphMemAttribute=[c.c_int, c.c_int, P],
                       cudaDeviceSetGraphMemAttribute=[c.c_int, c.c_int, P], cudaDeviceGraphMemTrim=[c.c_int]).items():
    getattr(rt if name.startswith("cuda") else cu, name).argtypes = args
def attrs(dev=0):
    res = []
    for a in range(4):
        v = c.c_uint64(12345); assert cu.cuDeviceGetGraphMemAttribute(dev, a, R(v)) == 0; res.append(v.value)
    return res
def alloc_node(g, n, dev=0):
    ap = (c.c_int * 30)(1, 0, 1, dev)
    c.memmove(c.addressof(ap) + 104, (c.c_size_t * 1)(n), 8)
    nd = P(); assert cu.cuGraphAddMemAllocNode(R(nd), g, None, 0, ap) == 0
    return nd, c.c_uint64.from_address(c.addressof(ap) + 112).value
r = {"start": attrs()}
g1 = graph(); a1, p1 = alloc_node(g1, 1 << 20)
g2 = graph(); a2, p2 = alloc_node(g2, 3 << 20)
r["two"] = attrs()
r["other_device"] = attrs(1)
x = P(); assert cu.cuGraphInstantiateWithFlags(R(x), g2, c.c_ulonglong(0)) == 0
assert cu.cuGraphDestroy(g2) == 0
r["exec_keeps"] = attrs()
assert cu.cuGraphExecDestroy(x) == 0
r["after_exec"] = attrs()               # g2's allocation is the user's now (no free node freed it)
assert cu.cuMemFree_v2(c.c_uint64(p2)) == 0
zero = c.c_uint64(0); one = c.c_uint64(1)
r["set"] = [cu.cuDeviceSetGraphMemAttribute(0, 1, R(zero)), cu.cuDeviceSetGraphMemAttribute(0, 3, R(zero))]
r["reset"] = attrs()
r["bad"] = [cu.cuDeviceSetGraphMemAttribute(0, 1, R(one)), cu.cuDeviceSetGraphMemAttribute(0, 0, R(zero)),
            cu.cuDeviceSetGraphMemAttribute(0, 2, R(zero)), cu.cuDeviceGetGraphMemAttribute(0, 4, R(zero)),
            cu.cuDeviceGetGraphMemAttribute(0, 0, None), cu.cuDeviceGetGraphMemAttribute(9, 0, R(zero)),
            cu.cuDeviceSetGraphMemAttribute(-1, 1, R(zero)), cu.cuDeviceGraphMemTrim(4), cu.cuDeviceGraphMemTrim(0)]
v = c.c_uint64()
r["rt"] = [rt.cudaDeviceGetGraphMemAttribute(0, 0, R(v)), v.value, rt.cudaDeviceGraphMemTrim(4), rt.cudaGetLastError(),
           rt.cudaDeviceGetGraphMemAttribute(4, 0, R(v)), rt.cudaGetLastError()]
# captured allocations count too
s = P(); assert cu.cuStreamCreate(R(s), 1) == 0 and cu.cuStreamBeginCapture_v2(s, 0) == 0
d = c.c_uint64(); assert cu.cuMemAllocAsync(R(d), c.c_size_t(1 << 16), s) == 0
gc = P(); assert cu.cuStreamEndCapture(s, R(gc)) == 0
r["captured"] = attrs()
assert cu.cuGraphDestroy(gc) == 0 and cu.cuGraphDestroy(g1) == 0
r["end"] = attrs()
out(r)
""")
    mb = 1 << 20
    assert got["start"] == [0, 0, 0, 0]
    assert got["two"] == [4 * mb, 4 * mb, 4 * mb, 4 * mb] and got["other_device"] == [0, 0, 0, 0]
    assert got["exec_keeps"] == [4 * mb, 4 * mb, 4 * mb, 4 * mb]
    assert got["after_exec"] == [mb, 4 * mb, mb, 4 * mb]             # the user's, no longer graph memory
    assert got["set"] == [OK, OK] and got["reset"] == [mb, mb, mb, mb]
    assert got["bad"] == [INVALID_VALUE] * 5 + [101, 101, 101, OK]
    assert got["rt"] == [OK, mb, INVALID_VALUE, INVALID_VALUE, 101, 101]
    assert got["captured"] == [mb + (1 << 16), mb + (1 << 16), mb + (1 << 16), mb + (1 << 16)]
    assert got["end"] == [0, mb + (1 << 16), 0, mb + (1 << 16)]


def test_add_node_from_generic_params(subprocess_python):
    """cuGraphAddNode / cuGraphAddNode_v2 / cudaGraphAddNode (CUgraphNodeParams) for every node kind the emulator
    has: the nodes made are those of the explicit calls (types, the alloc node's address written back) and a
    launch runs them in order; kinds it does not have are CUDA_ERROR_NOT_SUPPORTED, malformed parameters
    CUDA_ERROR_INVALID_VALUE (a child graph or conditional node without its graph / handle among them: those
    kinds are test_emu_graph_cond.py's), and a refused call adds no node."""
    got = _json(subprocess_python, """
cu.cuGraphAddNode.argtypes = [PP, P, PP, S, P]
cu.cuGraphAddNode_v2.argtypes = [PP, P, PP, P, S, P]
rt.cudaGraphAddNode.argtypes = [PP, P, PP, P, S, P]
def params(kind, *words, at=16):
    b = (c.c_ubyte * 256)()
    c.c_int.from_buffer(b, 0).value = kind
    for i, w in enumerate(words):
        c.c_uint64.from_buffer(b, at + 8 * i).value = w
    return b
g = graph()
buf = c.c_uint64(); assert cu.cuMemAlloc_v2(R(buf), S(64)) == 0
host_out = (c.c_ubyte * 64)()
ev = P(); assert cu.cuEventCreate(R(ev), 0) == 0
made, prev = [], None
def add(b, v2=True):
    global prev
    n = P(); deps = (P * 1)(prev) if prev else None
    r = cu.cuGraphAddNode_v2(R(n), g, deps, None, 1 if prev else 0, b) if v2 else cu.cuGraphAddNode(R(n), g, deps, 1 if prev else 0, b)
    assert r == 0, r
    prev = n.value; made.append(n.value)
    return b
add(params(5))                                                    # empty
add(params(2, buf.value, 0, 0x1_0000_00AB, 64, 1))                # memset: value 0xAB, element size 1, 64 x 1
cp = [0] * 25
cp[4], cp[6], cp[15], cp[16], cp[22], cp[23], cp[24] = 2, buf.value, 1, c.addressof(host_out), 64, 1, 1
add(params(1, *cp, at=32), v2=False)                              # memcpy device -> host (CUDA_MEMCPY3D)
add(params(3, c.cast(host, P).value, 42))                         # host
add(params(7, ev.value))                                          # event record
add(params(6, ev.value))                                          # event wait
al = params(10, 1 | 0 << 32, 1 | 0 << 32)                         # alloc: pinned, device 0 (CUmemPoolProps head)
c.c_size_t.from_buffer(al, 16 + 104).value = 4096
add(al)
dptr = c.c_uint64.from_buffer(al, 16 + 112).value
add(params(11, dptr))                                             # free
types = []
for n in made:
    t = c.c_int(); assert cu.cuGraphNodeGetType(n, R(t)) == 0; types.append(t.value)
x, s = P(), P()
assert cu.cuGraphInstantiateWithFlags(R(x), g, c.c_ulonglong(0)) == 0 and cu.cuStreamCreate(R(s), 0) == 0
assert cu.cuGraphLaunch(x, s) == 0 and cu.cuStreamSynchronize(s) == 0
r = {"types": types, "copied": bytes(host_out) == b"\\xab" * 64, "ran": list(ran), "dptr": dptr != 0}
k = S(); cu.cuGraphGetNodes(g, None, R(k)); before = k.value
n = P()
bad_res = params(5); c.c_int.from_buffer(bad_res, 4).value = 1
bad_tail = params(5); c.c_uint64.from_buffer(bad_tail, 248).value = 1
bad_flags = params(1, *cp, at=32); c.c_int.from_buffer(bad_flags, 16).value = 1
edge = (c.c_ubyte * 8)(0, 0, 1)
r["refused"] = [cu.cuGraphAddNode_v2(R(n), g, None, None, 0, params(k_)) for k_ in (0, 8, 9, 12, 4, 13)]
r["invalid"] = [cu.cuGraphAddNode_v2(R(n), g, None, None, 0, params(14)), cu.cuGraphAddNode_v2(R(n), g, None, None, 0, bad_res),
                cu.cuGraphAddNode_v2(R(n), g, None, None, 0, bad_tail), cu.cuGraphAddNode_v2(R(n), g, None, None, 0, bad_flags),
                cu.cuGraphAddNode_v2(R(n), g, None, None, 0, None), cu.cuGraphAddNode_v2(None, g, None, None, 0, params(5)),
                cu.cuGraphAddNode_v2(R(n), g, (P * 1)(made[0]), edge, 1, params(5)),
                cu.cuGraphAddNode_v2(R(n), P(0x4242), None, None, 0, params(5)), rt.cudaGetLastError()]
cu.cuGraphGetNodes(g, None, R(k)); r["unchanged"] = k.value == before
# the runtime's form: a cudaMemcpy3DParms (kind cudaMemcpyDefault) and the last error on refusal
g2 = graph()
rp = params(1)
for off, w in ((32, buf.value), (40, 64), (48, 64), (56, 1),                     # srcPtr: ptr, pitch, xsize, ysize
               (96, c.addressof(host_out)), (104, 64), (112, 64), (120, 1),       # dstPtr
               (128, 64), (136, 1), (144, 1), (152, 4)):                          # extent, kind (default)
    c.c_uint64.from_buffer(rp, 32 + off).value = w
r["rt"] = [rt.cudaGraphAddNode(R(n), g2, None, None, 0, rp), rt.cudaGraphAddNode(R(n), g2, None, None, 0, params(13)),
           rt.cudaGetLastError()]
assert cu.cuGraphExecDestroy(x) == 0 and cu.cuGraphDestroy(g) == 0 and cu.cuGraphDestroy(g2) == 0
out(r)
""")
    assert got["types"] == [5, 2, 1, 3, 7, 6, 10, 11]
    assert got["copied"] and got["ran"] == [42] and got["dptr"]
    assert got["refused"] == [NOT_SUPPORTED] * 4 + [INVALID_VALUE] * 2
    assert got["invalid"] == [INVALID_VALUE] * 7 + [INVALID_HANDLE, OK] and got["unchanged"]
    assert got["rt"] == [OK, INVALID_VALUE, INVALID_VALUE]


def test_roots_ids_node_params_and_edge_removal(subprocess_python):
    """cuGraphGetRootNodes, cuGraphNodeGetContainingGraph, cuGraphGetId, the event / host / memset nodes'
    getters and the event / host setters (a launch uses what was set), cuGraphRemoveDependencies(_v2); their
    refusals change nothing."""
    got = _json(subprocess_python, """
for name, args in dict(cuGraphGetRootNodes=[P, PP, c.POINTER(S)], cuGraphNodeGetContainingGraph=[P, PP],
                       cuGraphGetId=[P, c.POINTER(c.c_uint)], cuGraphEventRecordNodeGetEvent=[P, PP],
                       cuGraphEventRecordNodeSetEvent=[P, P], cuGraphEventWaitNodeGetEvent=[P, PP],
                       cuGraphEventWaitNodeSetEvent=[P, P], cuGraphHostNodeGetParams=[P, P], cuGraphHostNodeSetParams=[P, P],
                       cuGraphMemsetNodeGetParams=[P, P], cuGraphRemoveDependencies=[P, PP, PP, S],
                       cuGraphRemoveDependencies_v2=[P, PP, PP, P, S]).items():
    getattr(cu, name).argtypes = args
g = graph()
a = node(g, tag=1); b = node(g, tag=2); cc = node(g, a, b, tag=3)
name = {a: "a", b: "b", cc: "c", None: None}
r = {}
k = S(); assert cu.cuGraphGetRootNodes(g, None, R(k)) == 0
roots = (P * 3)(); k3 = S(3)
r["roots"] = [k.value, cu.cuGraphGetRootNodes(g, roots, R(k3)), k3.value, [name[x] for x in roots]]
gg, gid, gid2 = P(), c.c_uint(), c.c_uint()
g2 = graph()
r["graph"] = [cu.cuGraphNodeGetContainingGraph(cc, R(gg)), gg.value == g.value, cu.cuGraphGetId(g, R(gid)),
              cu.cuGraphGetId(g2, R(gid2)), gid.value != gid2.value, cu.cuGraphGetId(g, None),
              cu.cuGraphGetId(P(0x77), R(gid)), cu.cuGraphNodeGetContainingGraph(P(0x77), R(gg))]
# events
e1, e2, got_e = P(), P(), P()
assert cu.cuEventCreate(R(e1), 0) == 0 and cu.cuEventCreate(R(e2), 0) == 0
rec, wait = P(), P()
assert cu.cuGraphAddEventRecordNode(R(rec), g2, None, 0, e1) == 0
assert cu.cuGraphAddEventWaitNode(R(wait), g2, (P * 1)(rec.value), 1, e1) == 0
ev = [cu.cuGraphEventRecordNodeGetEvent(rec, R(got_e)), got_e.value == e1.value,
      cu.cuGraphEventRecordNodeSetEvent(rec, e2), cu.cuGraphEventRecordNodeGetEvent(rec, R(got_e)), got_e.value == e2.value,
      cu.cuGraphEventWaitNodeSetEvent(wait, e2), cu.cuGraphEventWaitNodeGetEvent(wait, R(got_e)), got_e.value == e2.value,
      cu.cuGraphEventRecordNodeGetEvent(wait, R(got_e)), cu.cuGraphEventWaitNodeSetEvent(wait, P(0x99)),
      cu.cuGraphEventRecordNodeGetEvent(rec, None)]
x, s = P(), P()
assert cu.cuStreamCreate(R(s), 0) == 0 and cu.cuGraphInstantiateWithFlags(R(x), g2, c.c_ulonglong(0)) == 0
assert cu.cuGraphLaunch(x, s) == 0 and cu.cuStreamSynchronize(s) == 0
ms_ = c.c_float()
ev += [cu.cuEventElapsedTime_v2(R(ms_), e2, e2), cu.cuEventElapsedTime_v2(R(ms_), e1, e1)]   # e2 recorded, e1 never
r["events"] = ev
# host node: get, set (the next launch of a new instantiation runs the new one), refusals
hp = (P * 2)()
h = [cu.cuGraphHostNodeGetParams(a, hp), hp[0] == c.cast(host, P).value, hp[1]]
other = (P * 2)(c.cast(host, P).value, 11)
h += [cu.cuGraphHostNodeSetParams(a, other), cu.cuGraphHostNodeSetParams(a, (P * 2)(None, 5)),
      cu.cuGraphHostNodeSetParams(rec, other), cu.cuGraphHostNodeGetParams(a, None)]
x2 = P(); assert cu.cuGraphInstantiateWithFlags(R(x2), g, c.c_ulonglong(0)) == 0
assert cu.cuGraphLaunch(x2, s) == 0 and cu.cuStreamSynchronize(s) == 0
h.append(sorted(ran))
r["host"] = h
# memset getter
buf = c.c_uint64(); assert cu.cuMemAlloc_v2(R(buf), S(4096)) == 0
ms = (c.c_size_t * 6)(buf.value, 256, 0, 16, 4, 0)
c.memmove(c.addressof(ms) + 16, (c.c_uint * 2)(0x1234, 2), 8)
mn = P(); assert cu.cuGraphAddMemsetNode(R(mn), g2, None, 0, ms, None) == 0
back = (c.c_size_t * 6)()
r["memset"] = [cu.cuGraphMemsetNodeGetParams(mn, back), back[0] == buf.value, back[1],
               list((c.c_uint * 2).from_buffer(back, 16)), back[3], back[4], cu.cuGraphMemsetNodeGetParams(a, back)]
# removing edges: all named must exist, each once, else none goes
rm = [cu.cuGraphRemoveDependencies(g, (P * 2)(a, a), (P * 2)(cc, cc), 2),
      cu.cuGraphRemoveDependencies(g, (P * 2)(a, cc), (P * 2)(cc, a), 2),
      cu.cuGraphRemoveDependencies_v2(g, (P * 1)(a), (P * 1)(cc), (c.c_ubyte * 8)(0, 0, 1), 1)]
rm.append([name[x] for x in deps(cc)])
rm.append(cu.cuGraphRemoveDependencies(g, (P * 1)(a), (P * 1)(cc), 1))
rm.append([name[x] for x in deps(cc)])
rm.append(cu.cuGraphRemoveDependencies_v2(g, (P * 1)(b), (P * 1)(cc), (c.c_ubyte * 8)(), 1))
k = S(); cu.cuGraphGetRootNodes(g, None, R(k)); rm.append(k.value)
r["remove"] = rm
assert cu.cuGraphExecDestroy(x) == 0 and cu.cuGraphExecDestroy(x2) == 0
assert cu.cuGraphDestroy(g) == 0 and cu.cuGraphDestroy(g2) == 0
out(r)
""")
    assert got["roots"] == [2, OK, 2, ["a", "b", None]]
    assert got["graph"] == [OK, True, OK, OK, True, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE]
    assert got["events"] == [OK, True, OK, OK, True, OK, OK, True, INVALID_VALUE, INVALID_HANDLE, INVALID_VALUE,
                             OK, INVALID_HANDLE]
    assert got["host"] == [OK, True, 1, OK, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, [2, 3, 11]]
    assert got["memset"] == [OK, True, 256, [0x1234, 2], 16, 4, INVALID_VALUE]
    assert got["remove"] == [INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, ["a", "b"], OK, ["b"], OK, 3]


def test_node_params_round_trip(subprocess_python):
    """cuGraphNodeGetParams / cudaGraphNodeGetParams: each kind's parameters as the node keeps them; what the driver
    returns makes an equal node again through cuGraphAddNode_v2 (a launch of the copy copies the same bytes)."""
    got = _json(subprocess_python, """
cu.cuGraphAddNode_v2.argtypes = [PP, P, PP, P, S, P]
cu.cuGraphNodeGetParams.argtypes = rt.cudaGraphNodeGetParams.argtypes = [P, P]
cu.cuGraphAddMemsetNode.argtypes = [PP, P, PP, S, P, P]
g = graph()
buf, dbuf = c.c_uint64(), c.c_uint64()
assert cu.cuMemAlloc_v2(R(buf), S(4096)) == 0 and cu.cuMemAlloc_v2(R(dbuf), S(4096)) == 0
host_in = (c.c_ubyte * 256)(*range(256)); host_out = (c.c_ubyte * 256)()
ms = (c.c_size_t * 6)(buf.value, 512, 0, 16, 3, 0)
c.memmove(c.addressof(ms) + 16, (c.c_uint * 2)(0xABCD, 2), 8)
m = P(); assert cu.cuGraphAddMemsetNode(R(m), g, None, 0, ms, None) == 0
def get(n, drv=True):
    b = (c.c_ubyte * 256)(*([0x5a] * 256))
    r = (cu.cuGraphNodeGetParams if drv else rt.cudaGraphNodeGetParams)(n, b)
    return r, b
def words(b, at, k):
    return [c.c_uint64.from_buffer(b, at + 8 * i).value for i in range(k)]
r = {}
rc, b = get(m)
r["memset"] = [rc, c.c_int.from_buffer(b).value, words(b, 16, 2)[0] == buf.value, words(b, 16, 2)[1],
               list((c.c_uint * 2).from_buffer(b, 32)), words(b, 40, 3), bytes(b[248:]) == bytes(8)]
h = node(g, tag=7)
rc, b = get(h)
r["host"] = [rc, c.c_int.from_buffer(b).value, words(b, 16, 2)[0] == c.cast(host, P).value, words(b, 24, 1)]
e = P(); assert cu.cuEventCreate(R(e), 0) == 0
en = P(); assert cu.cuGraphAddEventRecordNode(R(en), g, None, 0, e) == 0
rc, b = get(en)
r["event"] = [rc, c.c_int.from_buffer(b).value, words(b, 16, 1)[0] == e.value]
# a 2-D copy host -> device, 4 rows of 32 bytes, pitches 64 / 128, made by the driver's generic call
cp = [0] * 25
cp[4], cp[5], cp[9], cp[15], cp[17], cp[20], cp[22], cp[23], cp[24] = 1, c.addressof(host_in), 64, 2, dbuf.value, 128, 32, 4, 1
pb = (c.c_ubyte * 256)(); c.c_int.from_buffer(pb).value = 1
for i, w in enumerate(cp): c.c_uint64.from_buffer(pb, 32 + 8 * i).value = w
cn = P(); assert cu.cuGraphAddNode_v2(R(cn), g, None, None, 0, pb) == 0
rc, b = get(cn)
r["copy"] = [rc, words(b, 32, 25) == cp]
rc, rb = get(cn, drv=False)
r["copy_rt"] = [rc, words(rb, 32 + 32, 4) == [c.addressof(host_in), 64, 32, 4],
                words(rb, 32 + 96, 4) == [dbuf.value, 128, 32, 4], words(rb, 32 + 128, 4)]
# round trip: the returned parameters make the same copy in a new graph
g2 = graph(); again = P()
r["again"] = cu.cuGraphAddNode_v2(R(again), g2, None, None, 0, b)
x, s = P(), P()
assert cu.cuStreamCreate(R(s), 0) == 0 and cu.cuGraphInstantiateWithFlags(R(x), g2, c.c_ulonglong(0)) == 0
assert cu.cuGraphLaunch(x, s) == 0 and cu.cuStreamSynchronize(s) == 0
back = (c.c_ubyte * 512)()
assert cu.cuMemcpyDtoH_v2(back, dbuf, S(512)) == 0
r["copied"] = all(bytes(back[128 * i:128 * i + 32]) == bytes(host_in[64 * i:64 * i + 32]) for i in range(4))
# memory nodes, empty, refusals
gm = graph()
ap = (c.c_int * 30)(1, 0, 1, 0); c.memmove(c.addressof(ap) + 104, (c.c_size_t * 1)(777), 8)
al = P(); assert cu.cuGraphAddMemAllocNode(R(al), gm, None, 0, ap) == 0
rc, b = get(al)
r["alloc"] = [rc, c.c_int.from_buffer(b).value, list((c.c_int * 4).from_buffer(b, 16)), words(b, 16 + 104, 1),
              words(b, 16 + 112, 1)[0] == c.c_uint64.from_address(c.addressof(ap) + 112).value]
em = node(g)
rc, b = get(em)
r["empty"] = [rc, c.c_int.from_buffer(b).value, bytes(b[4:]) == bytes(252)]
bad = (c.c_ubyte * 256)(*([9] * 256))
r["bad"] = [cu.cuGraphNodeGetParams(None, bad), cu.cuGraphNodeGetParams(em, None), bytes(bad) == bytes([9] * 256),
            rt.cudaGraphNodeGetParams(P(0x55), bad), rt.cudaGetLastError()]
assert cu.cuGraphExecDestroy(x) == 0
for gr in (g, g2, gm): assert cu.cuGraphDestroy(gr) == 0
out(r)
""")
    assert got["memset"] == [OK, 2, True, 512, [0xABCD, 2], [16, 3, 0], True]
    assert got["host"] == [OK, 3, True, [7]]
    assert got["event"] == [OK, 7, True]
    assert got["copy"] == [OK, True]
    assert got["copy_rt"] == [OK, True, True, [32, 4, 1, 4]]
    assert got["again"] == OK and got["copied"]
    assert got["alloc"] == [OK, 10, [1, 0, 1, 0], [777], True]
    assert got["empty"] == [OK, 5, True]
    assert got["bad"] == [INVALID_VALUE, INVALID_VALUE, True, INVALID_VALUE, INVALID_VALUE]
