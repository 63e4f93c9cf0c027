"""Child-graph and conditional graph nodes (issue 33): cuGraphAddChildGraphNode / cuGraphChildGraphNodeGetGraph,
cuGraphConditionalHandleCreate and IF / WHILE / SWITCH nodes through cuGraphAddNode(_v2), their runtime forms
(cudaGraphAddChildGraphNode, cudaGraphChildGraphNodeGetGraph, cudaGraphConditionalHandleCreate, cudaGraphAddNode):
what each runs and returns, the driver's documented error returns, the rules on bodies and updates, a handle set
from the host (accelEmuGraphSetConditional in a host node) and from device code (cudaGraphSetConditional, PTX's
`call cudaGraphSetConditional`; tests/data/ptx_graph/graph_set_conditional.ptx is NVRTC's output for SOURCE).

The stand-ins run in fresh interpreters (see test_standin.py for why).
"""
import importlib.util
import pathlib

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

OK, INVALID_VALUE, INVALID_CONTEXT, INVALID_HANDLE, NOT_SUPPORTED = 0, 1, 201, 400, 801
EXEC_UPDATE_FAILURE = 910

PTX = pathlib.Path(__file__).with_name("data") / "ptx_graph" / "graph_set_conditional.ptx"
SOURCE = r"""
#include <cuda_device_runtime_api.h>
extern "C" __global__ void count_down(cudaGraphConditionalHandle h, int *ctr) { int v = --*ctr; cudaGraphSetConditional(h, v > 0); }
extern "C" __global__ void set_cond(cudaGraphConditionalHandle h, unsigned int v) { cudaGraphSetConditional(h, v); }
"""

PRELUDE = f"""
import ctypes as c, json, os
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
P, S, R, U64 = c.c_void_p, c.c_size_t, c.byref, c.c_uint64
PP = c.POINTER(P)
for name, args in dict(
        cuGraphAddChildGraphNode=[PP, P, PP, S, P], cuGraphChildGraphNodeGetGraph=[P, PP],
        cuGraphConditionalHandleCreate=[c.POINTER(U64), P, P, c.c_uint, c.c_uint],
        cudaGraphAddChildGraphNode=[PP, P, PP, S, P], cudaGraphChildGraphNodeGetGraph=[P, PP],
        cudaGraphConditionalHandleCreate=[c.POINTER(U64), P, c.c_uint, c.c_uint],
        cuGraphAddNode=[PP, P, PP, S, P], cuGraphAddNode_v2=[PP, P, PP, P, S, P], cudaGraphAddNode=[PP, P, PP, P, S, P],
        cuGraphAddMemsetNode=[PP, P, PP, S, P, P], cuGraphAddHostNode=[PP, P, PP, S, P], cuGraphNodeGetType=[P, c.POINTER(c.c_int)],
        cuGraphAddMemAllocNode=[PP, P, PP, S, P], cuGraphDestroy=[P], cuGraphDestroyNode=[P], cuGraphClone=[PP, P],
        cuGraphInstantiateWithFlags=[PP, P, c.c_ulonglong], cuGraphLaunch=[P, P], cuGraphExecDestroy=[P],
        cuGraphExecUpdate_v2=[P, P, P], cuGraphNodeGetParams=[P, P], cuGraphGetNodes=[P, PP, c.POINTER(S)],
        cuGraphAddKernelNode_v2=[PP, P, PP, S, P], cuMemcpyDtoH_v2=[P, U64, S], cuMemcpyHtoD_v2=[U64, P, S],
        accelEmuGraphSetConditional=[c.c_ulonglong, c.c_uint]).items():
    getattr(rt if name.startswith(("cuda", "accel")) else cu, name).argtypes = args
ctx = P()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(R(ctx), 0) == 0 and cu.cuCtxSetCurrent(ctx) == 0
stream = P(); assert cu.cuStreamCreate(R(stream), 0) == 0
buf = U64(); assert cu.cuMemAlloc_v2(R(buf), S(256)) == 0
def graph():
    g = P(); assert cu.cuGraphCreate(R(g), 0) == 0; return g
def deps_of(deps):
    return (P * max(len(deps), 1))(*deps) if deps else None
def mark(g, off, value, *deps):
    # a memset node writing one byte `value` at buf + off (CUDA_MEMSET_NODE_PARAMS)
    p = (U64 * 5)(buf.value + off, 0, value | 1 << 32, 1, 1)
    n = P(); r = cu.cuGraphAddMemsetNode(R(n), g, deps_of(deps), len(deps), p, ctx)
    assert r == 0, r
    return n.value
def params(kind, *words, at=16):
    b = (c.c_ubyte * 256)()
    c.c_int.from_buffer(b, 0).value = kind
    for i, w in enumerate(words):
        c.c_uint64.from_buffer(b, at + 8 * i).value = w
    return b
def cond_params(handle, ctype, size):
    b = params(13, handle)
    c.c_int.from_buffer(b, 24).value = ctype
    c.c_uint.from_buffer(b, 28).value = size
    return b
def bodies(b, size):
    arr = c.cast(c.c_void_p.from_buffer(b, 32).value, PP)
    return [arr[i] for i in range(size)]
def add(g, b, *deps):
    n = P(); r = cu.cuGraphAddNode_v2(R(n), g, deps_of(deps), None, len(deps), b)
    return r, n.value
def handle(g, default=0, flags=0):
    h = U64(); r = cu.cuGraphConditionalHandleCreate(R(h), g, ctx, default, flags)
    assert r == 0, r
    return h.value
def clear():
    z = (c.c_ubyte * 256)(); assert cu.cuMemcpyHtoD_v2(buf, z, 256) == 0
def launch(g, times=1):
    x = P(); r = cu.cuGraphInstantiateWithFlags(R(x), g, 0)
    if r: return r
    for _ in range(times):
        assert cu.cuGraphLaunch(x, stream) == 0
    assert cu.cuStreamSynchronize(stream) == 0 and cu.cuGraphExecDestroy(x) == 0
    return 0
def read(n=8):
    out = (c.c_ubyte * n)(); assert cu.cuMemcpyDtoH_v2(out, buf, n) == 0; return list(out)
def out(v):
    print(json.dumps(v))
"""
_run, _json = _fx.runners(PRELUDE)


def test_child_graph_nodes(subprocess_python):
    """A child-graph node runs a copy of its graph, inline in dependency order; the copy is the node's (edits to it
    show at instantiation, it cannot be destroyed, take memory nodes or instantiate alone); CUDA 12.9's MOVE
    ownership; clone, node removal, exec update; the documented refusals."""
    got = _json(subprocess_python, """
r = {}
child = graph()
a = mark(child, 1, 11)
mark(child, 2, 12, a)
g = graph()
first = mark(g, 0, 1)
n = P()
r["add"] = cu.cuGraphAddChildGraphNode(R(n), g, deps_of([first]), 1, child)
t = c.c_int(); cu.cuGraphNodeGetType(n, R(t)); r["type"] = t.value
inner = P(); r["get"] = [cu.cuGraphChildGraphNodeGetGraph(n, R(inner)), inner.value not in (None, child.value)]
mark(g, 3, 13, n.value)
mark(child, 4, 99)                                   # the original changed afterwards: not the node's copy
mark(inner, 5, 15)                                   # the embedded graph changed: shows in the node
clear(); r["launch"] = [launch(g), read()]
gp = (c.c_ubyte * 256)(); r["params"] = [cu.cuGraphNodeGetParams(n, gp), c.c_uint64.from_buffer(gp, 16).value == inner.value,
                                         c.c_int.from_buffer(gp, 0).value]
# the embedded graph is the node's
al = params(10, 1, 1); c.c_size_t.from_buffer(al, 16 + 104).value = 4096
m = P(); x = P()
r["owned"] = [cu.cuGraphDestroy(inner), cu.cuGraphAddMemAllocNode(R(m), inner, None, 0, c.cast(c.byref(al, 16), P)),
              cu.cuGraphInstantiateWithFlags(R(x), inner, 0)]
# a copy of the graph: its own child graph
cl = P(); r["clone"] = cu.cuGraphClone(R(cl), g)
clear(); r["clone_launch"] = [launch(cl), read()]
# refusals: bad handles, a graph with memory nodes, NULL output or dependencies; nothing added
k0 = S(); cu.cuGraphGetNodes(g, None, R(k0))
withmem = graph(); assert cu.cuGraphAddMemAllocNode(R(m), withmem, None, 0, c.cast(c.byref(al, 16), P)) == 0
r["refused"] = [cu.cuGraphAddChildGraphNode(R(n), g, None, 0, P(0x4242)), cu.cuGraphAddChildGraphNode(R(n), P(0x4242), None, 0, child),
                cu.cuGraphAddChildGraphNode(R(n), g, None, 0, withmem),
                cu.cuGraphAddChildGraphNode(None, g, None, 0, child), cu.cuGraphAddChildGraphNode(R(n), g, None, 1, child),
                cu.cuGraphChildGraphNodeGetGraph(P(first), R(inner)), cu.cuGraphChildGraphNodeGetGraph(n, None),
                rt.cudaGetLastError()]
k1 = S(); cu.cuGraphGetNodes(g, None, R(k1)); r["unchanged"] = k0.value == k1.value
# CUgraphNodeParams: CLONE (0) copies, MOVE (1) takes the graph itself; other ownership values refused
mv = graph(); mark(mv, 6, 16)
r["move"] = [add(g, params(4, mv.value, 1))[0], add(g, params(4, child.value, 2))[0], add(g, params(4, g.value, 1))[0]]
nodes = (P * 16)(); k = S(16); cu.cuGraphGetNodes(g, nodes, R(k)); moved = nodes[k.value - 1]
mg = P(); cu.cuGraphChildGraphNodeGetGraph(moved, R(mg))
r["moved"] = [mg.value == mv.value, cu.cuGraphDestroy(mv)]
clear(); r["after_move"] = [launch(g), read(8)]
# exec update: a child graph of the same shape with new values updates; a changed child topology is refused
def kid_of(*values):
    kid = graph(); prev = []
    for i, v in enumerate(values):
        prev = [mark(kid, 32 + i, v, *prev)]
    return kid
def with_child(*values):
    kid = kid_of(*values)
    pg = graph(); kn = P(); assert cu.cuGraphAddChildGraphNode(R(kn), pg, None, 0, kid) == 0
    assert cu.cuGraphDestroy(kid) == 0
    return pg, kn
(ga, kna), (gb, _), (gc, _) = with_child(1, 2), with_child(3, 4), with_child(5, 6, 7)
x = P(); assert cu.cuGraphInstantiateWithFlags(R(x), ga, 0) == 0
info = (c.c_ubyte * 32)()
r["update"] = cu.cuGraphExecUpdate_v2(x, gb, info)
clear(); assert cu.cuGraphLaunch(x, stream) == 0 and cu.cuStreamSynchronize(stream) == 0; r["updated"] = read(36)[32:]
r["update_topology"] = [cu.cuGraphExecUpdate_v2(x, gc, info), c.c_int.from_buffer(info, 0).value]
# cuGraphExecChildGraphNodeSetParams: a graph of the same shape; another shape, another kind of node, a graph with
# memory nodes refused
cu.cuGraphExecChildGraphNodeSetParams.argtypes = [P, P, P]
rt.cudaGraphExecChildGraphNodeSetParams.argtypes = [P, P, P]
k89, k3 = kid_of(8, 9), kid_of(1, 2, 3)
plain = graph(); pn = mark(plain, 0, 0)
r["child_set"] = [cu.cuGraphExecChildGraphNodeSetParams(x, kna, k89), cu.cuGraphExecChildGraphNodeSetParams(x, kna, k3),
                  cu.cuGraphExecChildGraphNodeSetParams(x, P(pn), k89), cu.cuGraphExecChildGraphNodeSetParams(x, kna, withmem),
                  cu.cuGraphExecChildGraphNodeSetParams(P(0x4242), kna, k89),
                  rt.cudaGraphExecChildGraphNodeSetParams(x, kna, k3), rt.cudaGetLastError()]
clear(); assert cu.cuGraphLaunch(x, stream) == 0 and cu.cuStreamSynchronize(stream) == 0; r["child_set_ran"] = read(36)[32:]
assert cu.cuGraphExecDestroy(x) == 0
for h_ in (k89, k3, plain):
    assert cu.cuGraphDestroy(h_) == 0
for h_ in (ga, gb, gc):
    assert cu.cuGraphDestroy(h_) == 0
# removing the node frees its graph
r["destroy_node"] = [cu.cuGraphDestroyNode(n), cu.cuGraphChildGraphNodeGetGraph(n, R(inner)), cu.cuGraphDestroy(inner)]
# the runtime's forms
rn, rg = P(), P()
r["rt"] = [rt.cudaGraphAddChildGraphNode(R(rn), g, None, 0, child), rt.cudaGraphChildGraphNodeGetGraph(rn, R(rg)),
           rg.value not in (None, child.value), rt.cudaGraphAddChildGraphNode(R(rn), g, None, 0, withmem),
           rt.cudaGetLastError()]
for h in (g, cl, child, withmem):
    assert cu.cuGraphDestroy(h) == 0
r["live"] = [rt.accelEmuLiveGraphs(), rt.accelEmuLiveGraphExecs()]
out(r)
""")
    assert got["add"] == OK and got["type"] == 4 and got["get"] == [OK, True]
    assert got["launch"] == [OK, [1, 11, 12, 13, 0, 15, 0, 0]]
    assert got["params"] == [OK, True, 4]
    assert got["owned"] == [INVALID_VALUE, INVALID_VALUE, INVALID_VALUE]
    assert got["clone"] == OK and got["clone_launch"] == [OK, [1, 11, 12, 13, 0, 15, 0, 0]]
    assert got["refused"] == [INVALID_VALUE] * 7 + [OK] and got["unchanged"]
    assert got["move"] == [OK, INVALID_VALUE, INVALID_VALUE]
    assert got["moved"] == [True, INVALID_VALUE]
    assert got["after_move"] == [OK, [1, 11, 12, 13, 0, 15, 16, 0]]
    assert got["update"] == OK and got["updated"] == [3, 4, 0, 0]
    assert got["update_topology"] == [EXEC_UPDATE_FAILURE, 2]
    assert got["child_set"] == [OK] + [INVALID_VALUE] * 6 and got["child_set_ran"] == [8, 9, 0, 0]
    assert got["destroy_node"] == [OK, INVALID_VALUE, INVALID_HANDLE]
    assert got["rt"] == [OK, OK, True, INVALID_VALUE, INVALID_VALUE]
    assert got["live"] == [0, 0]


def test_conditional_nodes_from_the_host(subprocess_python):
    """cuGraphConditionalHandleCreate and IF / WHILE / SWITCH nodes: bodies made by the node (phGraph_out), run as
    the handle's value says when the stream reaches the node; the value set by a host node before it
    (accelEmuGraphSetConditional), reset per launch with CU_GRAPH_COND_ASSIGN_DEFAULT and kept without; nesting;
    the documented refusals and the rules on bodies."""
    got = _json(subprocess_python, """
HOSTFN = c.CFUNCTYPE(None, P)
r = {}
def setter(h, v):
    fn = HOSTFN(lambda _: rt.accelEmuGraphSetConditional(h, v))
    setter.keep.append(fn)
    return (P * 2)(c.cast(fn, P).value, None)
setter.keep = []
def host_node(g, hp, *deps):
    n = P(); assert cu.cuGraphAddHostNode(R(n), g, deps_of(deps), len(deps), hp) == 0; return n.value
# IF with an else body, the value from a host node before it
def if_graph(value):
    g = graph(); h = handle(g)
    s = host_node(g, setter(h, value))
    b = cond_params(h, 0, 2)
    rr, n = add(g, b, s)
    then, other = bodies(b, 2)
    mark(P(then), 0, 1); mark(P(other), 1, 2)
    mark(g, 2, 3, n)
    return g, n, b
res = []
for v in (1, 0, 7):
    g, n, b = if_graph(v); clear(); res.append([launch(g), read(3)]); cu.cuGraphDestroy(g)
r["if"] = res
# SWITCH: body n for value n, none past the last
res = []
for v in (0, 2, 3):
    g = graph(); h = handle(g)
    s = host_node(g, setter(h, v))
    b = cond_params(h, 2, 3); rr, n = add(g, b, s)
    for i, body in enumerate(bodies(b, 3)):
        mark(P(body), i, 10 + i)
    clear(); res.append([rr, launch(g), read(3)]); cu.cuGraphDestroy(g)
r["switch"] = res
# WHILE with value 0: the body never runs; ASSIGN_DEFAULT: default each launch; without: the value kept
g = graph(); h = handle(g, 0)
b = cond_params(h, 1, 1); rr, n = add(g, b); mark(P(bodies(b, 1)[0]), 0, 5)
clear(); r["while0"] = [rr, launch(g), read(1)]; cu.cuGraphDestroy(g)
res = []
for flags in (1, 0):
    g = graph(); h = handle(g, 1, flags)
    b = cond_params(h, 0, 1); rr, n = add(g, b)
    body = P(bodies(b, 1)[0]); mark(body, 0, 9)
    off = host_node(g, setter(h, 0), n)              # after the IF: the next launch sees 0 unless reset
    x = P(); assert cu.cuGraphInstantiateWithFlags(R(x), g, 0) == 0
    seen = []
    for _ in range(2):
        clear(); assert cu.cuGraphLaunch(x, stream) == 0 and cu.cuStreamSynchronize(stream) == 0; seen.append(read(1)[0])
    res.append(seen); cu.cuGraphExecDestroy(x); cu.cuGraphDestroy(g)
r["defaults"] = res
# nesting: a SWITCH in an IF's body, a child graph in the SWITCH's body
g = graph(); h = handle(g, 1, 1)
b = cond_params(h, 0, 1); rr, n = add(g, b)
body = P(bodies(b, 1)[0]); hb = handle(body, 1, 1)
b2 = cond_params(hb, 2, 2); rr2, n2 = add(body, b2)
inner = P(bodies(b2, 2)[1]); mark(inner, 0, 21)
kid = graph(); mark(kid, 1, 22); kn = P()
r["nest_child"] = cu.cuGraphAddChildGraphNode(R(kn), P(bodies(b2, 2)[1]), None, 0, kid)
clear(); r["nested"] = [rr, rr2, launch(g), read(2)]
# what a body may hold: a host node in one is refused at instantiation
host_node(inner, setter(h, 0))
x = P(); r["host_in_body"] = cu.cuGraphInstantiateWithFlags(R(x), g, 0)
r["body_owned"] = [cu.cuGraphDestroy(body), cu.cuGraphInstantiateWithFlags(R(x), body, 0)]
cl = P(); r["clone"] = cu.cuGraphClone(R(cl), g)
cu.cuGraphDestroy(g); cu.cuGraphDestroy(kid)
# cuGraphNodeGetParams: handle, type, size, the node's body array
g = graph(); h = handle(g)
b = cond_params(h, 2, 4); rr, n = add(g, b)
gp = (c.c_ubyte * 256)(); cu.cuGraphNodeGetParams(P(n), gp)
r["params"] = [c.c_int.from_buffer(gp, 0).value, c.c_uint64.from_buffer(gp, 16).value == h,
               c.c_int.from_buffer(gp, 24).value, c.c_uint.from_buffer(gp, 28).value,
               c.c_uint64.from_buffer(gp, 32).value == c.c_uint64.from_buffer(b, 32).value]
# refusals: handles (flags, output, graph, context), node parameters (sizes, types, a foreign handle)
other = graph(); ho = handle(other)
hv = U64(); bad_ctx = P(0x5c00000000a0 + 0x100000)
r["handle_refused"] = [cu.cuGraphConditionalHandleCreate(R(hv), g, ctx, 0, 2), cu.cuGraphConditionalHandleCreate(None, g, ctx, 0, 0),
                       cu.cuGraphConditionalHandleCreate(R(hv), P(0x4242), ctx, 0, 0),
                       cu.cuGraphConditionalHandleCreate(R(hv), g, bad_ctx, 0, 0)]
k0 = S(); cu.cuGraphGetNodes(g, None, R(k0))
r["node_refused"] = [add(g, cond_params(h, 1, 2))[0], add(g, cond_params(h, 0, 3))[0], add(g, cond_params(h, 2, 0))[0],
                     add(g, cond_params(h, 3, 1))[0], add(g, cond_params(ho, 0, 1))[0], add(g, cond_params(0, 0, 1))[0]]
k1 = S(); cu.cuGraphGetNodes(g, None, R(k1)); r["unchanged"] = k0.value == k1.value
r["host_setter"] = [rt.accelEmuGraphSetConditional(h, 1), rt.accelEmuGraphSetConditional(0x4242, 1)]
# the runtime's forms
rh = U64(); rn = P(); rb = cond_params(0, 1, 1)
r["rt"] = [rt.cudaGraphConditionalHandleCreate(R(rh), g, 0, 0), rt.cudaGraphConditionalHandleCreate(R(rh), g, 0, 4),
           rt.cudaGetLastError()]
c.c_uint64.from_buffer(rb, 16).value = rh.value
r["rt_node"] = [rt.cudaGraphAddNode(R(rn), g, None, None, 0, rb), rt.cudaGraphAddNode(R(rn), g, None, None, 0, cond_params(rh.value, 1, 3)),
                rt.cudaGetLastError()]
for x_ in (g, other):
    assert cu.cuGraphDestroy(x_) == 0
r["live"] = [rt.accelEmuLiveGraphs(), rt.accelEmuLiveGraphExecs(), rt.accelEmuLiveConditionalHandles()]
out(r)
""")
    assert got["if"] == [[OK, [1, 0, 3]], [OK, [0, 2, 3]], [OK, [1, 0, 3]]]
    assert got["switch"] == [[OK, OK, [10, 0, 0]], [OK, OK, [0, 0, 12]], [OK, OK, [0, 0, 0]]]
    assert got["while0"] == [OK, OK, [0]]
    assert got["defaults"] == [[9, 9], [9, 0]]
    assert got["nest_child"] == OK and got["nested"] == [OK, OK, OK, [21, 22]]
    assert got["host_in_body"] == NOT_SUPPORTED
    assert got["body_owned"] == [INVALID_VALUE, INVALID_VALUE]
    assert got["clone"] == NOT_SUPPORTED
    assert got["params"] == [13, True, 2, 4, True]
    assert got["handle_refused"] == [INVALID_VALUE, INVALID_VALUE, INVALID_VALUE, INVALID_CONTEXT]
    assert got["node_refused"] == [INVALID_VALUE] * 6 and got["unchanged"]
    assert got["host_setter"] == [0, 1]
    assert got["rt"] == [OK, INVALID_VALUE, INVALID_VALUE]
    assert got["rt_node"] == [OK, INVALID_VALUE, INVALID_VALUE]
    assert got["live"] == [0, 0, 0]


def test_conditional_set_from_device_code(subprocess_python):
    """cudaGraphSetConditional in a kernel (NVRTC's PTX: `call cudaGraphSetConditional` into libcudadevrt, which
    the engine answers): a WHILE node whose body kernel counts down runs until the count reaches 0, once per launch
    step; a kernel before a SWITCH node chooses its body."""
    got = _json(subprocess_python, f"""
ptx = open({str(PTX)!r}, "rb").read()
mod, down, setc = P(), P(), P()
assert cu.cuModuleLoadData(R(mod), c.c_char_p(ptx)) == 0
assert cu.cuModuleGetFunction(R(down), mod, b"count_down") == 0 and cu.cuModuleGetFunction(R(setc), mod, b"set_cond") == 0
class KP(c.Structure):
    _fields_ = [("func", P), ("g", c.c_uint * 3), ("b", c.c_uint * 3), ("smem", c.c_uint), ("params", PP),
                ("extra", P), ("kern", P), ("ctx", P)]
keep = []
def kernel(g, fn, args, *deps):
    vals = [a for a in args]; keep.append(vals)
    arr = (P * len(vals))(*[c.cast(R(v), P) for v in vals]); keep.append(arr)
    kp = KP(fn, (1, 1, 1), (1, 1, 1), 0, arr, None, None, None); keep.append(kp)
    n = P(); assert cu.cuGraphAddKernelNode_v2(R(n), g, deps_of(deps), len(deps), R(kp)) == 0
    return n.value
r = {{}}
ctr = U64(); assert cu.cuMemAlloc_v2(R(ctr), S(8)) == 0
g = graph(); h = handle(g, 1, 1)
b = cond_params(h, 1, 1); rr, n = add(g, b)
body = P(bodies(b, 1)[0])
kernel(body, down, [U64(h), U64(ctr.value)])
x = P(); assert cu.cuGraphInstantiateWithFlags(R(x), g, 0) == 0
res = []
for start in (5, 1):
    v = c.c_int(start); assert cu.cuMemcpyHtoD_v2(ctr, R(v), 4) == 0
    assert cu.cuGraphLaunch(x, stream) == 0 and cu.cuStreamSynchronize(stream) == 0
    assert cu.cuMemcpyDtoH_v2(R(v), ctr, 4) == 0; res.append(v.value)
r["while"] = [rr, res]
cu.cuGraphExecDestroy(x); cu.cuGraphDestroy(g)
res = []
for choice in (1, 2, 9):
    g = graph(); h = handle(g)
    k = kernel(g, setc, [U64(h), c.c_uint(choice)])
    b = cond_params(h, 2, 3); rr, n = add(g, b, k)
    for i, bd in enumerate(bodies(b, 3)):
        mark(P(bd), i, 30 + i)
    clear(); res.append([rr, launch(g), read(3)]); cu.cuGraphDestroy(g)
r["switch"] = res
r["live"] = [rt.accelEmuLiveGraphs(), rt.accelEmuLiveGraphExecs(), rt.accelEmuLiveConditionalHandles()]
out(r)
""")
    assert got["while"] == [OK, [0, 0]] and got["live"] == [0, 0, 0]
    assert got["switch"] == [[OK, OK, [0, 31, 0]], [OK, OK, [0, 0, 32]], [OK, OK, [0, 0, 0]]]


def test_conditional_nodes_made_during_capture(subprocess_python):
    """cuda.core's GraphBuilder way: cuStreamGetCaptureInfo's graph (its dependencies with default edge data) takes
    a conditional node, cuStreamUpdateCaptureDependencies puts the stream after it, cuStreamBeginCaptureToGraph
    captures its body on another stream and cuStreamEndCapture hands that body back; the refusals of both."""
    got = _json(subprocess_python, """
cu.cuStreamGetCaptureInfo_v3.argtypes = [P, c.POINTER(c.c_int), c.POINTER(c.c_ulonglong), PP, c.POINTER(PP), c.POINTER(P), c.POINTER(S)]
cu.cuStreamUpdateCaptureDependencies_v2.argtypes = [P, PP, P, S, c.c_uint]
cu.cuStreamBeginCaptureToGraph.argtypes = [P, P, PP, P, S, c.c_int]
cu.cuStreamBeginCapture_v2.argtypes = [P, c.c_int]
cu.cuStreamEndCapture.argtypes = [P, PP]
cu.cuMemsetD8Async.argtypes = [U64, c.c_ubyte, S, P]
r = {}
s2 = P(); assert cu.cuStreamCreate(R(s2), 0) == 0
clear()
assert cu.cuStreamBeginCapture_v2(stream, 2) == 0
assert cu.cuMemsetD8Async(buf.value, 1, 1, stream) == 0
st, cid, g, deps, edges, n = c.c_int(), c.c_ulonglong(), P(), PP(), P(), S()
r["info"] = cu.cuStreamGetCaptureInfo_v3(stream, R(st), R(cid), R(g), R(deps), R(edges), R(n))
r["edges"] = [n.value, edges.value is not None and bytes((c.c_ubyte * 8).from_address(edges.value)) == bytes(8)]
h = handle(g, 1, 1)
b = cond_params(h, 0, 1)
node = P(); r["add"] = cu.cuGraphAddNode_v2(R(node), g, (P * 1)(deps[0]), None, 1, b)
body = P(bodies(b, 1)[0])
r["update"] = cu.cuStreamUpdateCaptureDependencies_v2(stream, (P * 1)(node), None, 1, 1)
assert cu.cuMemsetD8Async(buf.value + 2, 3, 1, stream) == 0
r["to_graph"] = cu.cuStreamBeginCaptureToGraph(s2, body, None, None, 0, 2)
assert cu.cuMemsetD8Async(buf.value + 1, 2, 1, s2) == 0
got_body = P(); r["end_body"] = [cu.cuStreamEndCapture(s2, R(got_body)), got_body.value == body.value]
# refusals: flags, a node of another graph, a stream not capturing, capture into a graph under capture
other = graph(); on = mark(other, 0, 0)
r["refused"] = [cu.cuStreamUpdateCaptureDependencies_v2(stream, (P * 1)(node), None, 1, 2),
                cu.cuStreamUpdateCaptureDependencies_v2(stream, (P * 1)(on), None, 1, 0),
                cu.cuStreamUpdateCaptureDependencies_v2(s2, (P * 1)(node), None, 1, 0),
                cu.cuStreamBeginCaptureToGraph(s2, g, None, None, 0, 2),
                cu.cuStreamBeginCaptureToGraph(s2, body, None, None, 0, 7),
                cu.cuStreamBeginCaptureToGraph(s2, P(0x4242), None, None, 0, 2)]
whole = P(); r["end"] = [cu.cuStreamEndCapture(stream, R(whole)), whole.value == g.value]
r["launch"] = [launch(whole), read(3)]
assert cu.cuGraphDestroy(whole) == 0 and cu.cuGraphDestroy(other) == 0
out(r)
""")
    assert got["info"] == OK and got["edges"] == [1, True]
    assert got["add"] == OK and got["update"] == OK and got["to_graph"] == OK and got["end_body"] == [OK, True]
    assert got["refused"] == [INVALID_VALUE, INVALID_VALUE, 401, INVALID_VALUE, INVALID_VALUE, INVALID_VALUE]
    assert got["end"] == [OK, True] and got["launch"] == [OK, [1, 2, 3]]


def test_fault_hooks_of_the_new_entry_points(subprocess_python):
    """Each new entry point fails by its name (ACCEL_EMU_FAIL / accelEmuSetFail) before it changes anything: the
    ones that create something with CUDA_ERROR_OUT_OF_MEMORY, the others with CUDA_ERROR_UNKNOWN."""
    got = _json(subprocess_python, """
rt.accelEmuSetFail.argtypes = [c.c_char_p]
cu.cuStreamBeginCaptureToGraph.argtypes = [P, P, PP, P, S, c.c_int]
cu.cuStreamUpdateCaptureDependencies.argtypes = [P, PP, S, c.c_uint]
g, kid = graph(), graph()
h, n, kg = U64(), P(), P()
def arm(name):
    assert rt.accelEmuSetFail((name + ":1").encode()) == 0
r = []
for name, call in [
        ("cuGraphConditionalHandleCreate", lambda: cu.cuGraphConditionalHandleCreate(R(h), g, ctx, 0, 0)),
        ("cudaGraphConditionalHandleCreate", lambda: rt.cudaGraphConditionalHandleCreate(R(h), g, 0, 0)),
        ("cuGraphAddChildGraphNode", lambda: cu.cuGraphAddChildGraphNode(R(n), g, None, 0, kid)),
        ("cudaGraphAddChildGraphNode", lambda: rt.cudaGraphAddChildGraphNode(R(n), g, None, 0, kid)),
        ("cuStreamBeginCaptureToGraph", lambda: cu.cuStreamBeginCaptureToGraph(stream, g, None, None, 0, 2)),
        ("cuStreamUpdateCaptureDependencies", lambda: cu.cuStreamUpdateCaptureDependencies(stream, None, 0, 1))]:
    arm(name); r.append(call())
k = S(); cu.cuGraphGetNodes(g, None, R(k))
st = c.c_int(); cu.cuStreamIsCapturing(stream, R(st))
rt.accelEmuSetFail(b"")
r += [k.value, st.value, cu.cuGraphAddChildGraphNode(R(n), g, None, 0, kid)]
cu.cuGraphChildGraphNodeGetGraph.argtypes = [P, PP]
arm("cuGraphChildGraphNodeGetGraph"); r.append(cu.cuGraphChildGraphNodeGetGraph(n, R(kg)))
rt.accelEmuSetFail(b"")
out(r)
""")
    assert got == [2, 2, 2, 2, 999, 999, 0, 0, OK, 999]


def test_executable_graph_setters(subprocess_python):
    """cuGraphExecGetFlags, cuGraphNodeSetEnabled / GetEnabled (a disabled memset does nothing until enabled again),
    cuGraphExecHostNodeSetParams, cuGraphExecEventRecordNodeSetEvent / WaitNodeSetEvent, cuGraphMemsetNodeSetParams
    and cuGraphExecMemsetNodeSetParams (the graph keeps its own), their runtime forms, and the refusals: a node of
    another graph or kind, bad parameters."""
    got = _json(subprocess_python, """
for name, args in dict(cuGraphExecGetFlags=[P, c.POINTER(c.c_ulonglong)], cuGraphNodeSetEnabled=[P, P, c.c_uint],
                       cuGraphNodeGetEnabled=[P, P, c.POINTER(c.c_uint)], cuGraphExecHostNodeSetParams=[P, P, P],
                       cuGraphExecEventRecordNodeSetEvent=[P, P, P], cuGraphExecEventWaitNodeSetEvent=[P, P, P],
                       cuGraphMemsetNodeSetParams=[P, P], cuGraphExecMemsetNodeSetParams=[P, P, P, P],
                       cuGraphAddEventRecordNode=[PP, P, PP, S, P]).items():
    getattr(cu, name).argtypes = args
rt.cudaGraphNodeSetEnabled.argtypes = [P, P, c.c_uint]
rt.cudaGraphExecGetFlags.argtypes = [P, c.POINTER(c.c_ulonglong)]
HOSTFN = c.CFUNCTYPE(None, P)
ran = []
f1, f2 = HOSTFN(lambda p: ran.append(1)), HOSTFN(lambda p: ran.append(2))
r = {}
g = graph()
m = mark(g, 0, 7)
hn = P(); assert cu.cuGraphAddHostNode(R(hn), g, (P * 1)(m), 1, (P * 2)(c.cast(f1, P).value, None)) == 0
ev, ev2 = P(), P(); assert cu.cuEventCreate(R(ev), 0) == 0 and cu.cuEventCreate(R(ev2), 0) == 0
en = P(); assert cu.cuGraphAddEventRecordNode(R(en), g, None, 0, ev) == 0
x = P(); assert cu.cuGraphInstantiateWithFlags(R(x), g, 1) == 0
fl = c.c_ulonglong(); r["flags"] = [cu.cuGraphExecGetFlags(x, R(fl)), fl.value]
def run():
    clear(); assert cu.cuGraphLaunch(x, stream) == 0 and cu.cuStreamSynchronize(stream) == 0; return read(2)
on = c.c_uint()
r["disable"] = [cu.cuGraphNodeSetEnabled(x, P(m), 0), cu.cuGraphNodeGetEnabled(x, P(m), R(on)), on.value, run()]
r["enable"] = [cu.cuGraphNodeSetEnabled(x, P(m), 1), cu.cuGraphNodeGetEnabled(x, P(m), R(on)), on.value, run()]
r["host"] = [cu.cuGraphExecHostNodeSetParams(x, hn, (P * 2)(c.cast(f2, P).value, None)), run(), ran[-2:]]
r["event"] = [cu.cuGraphExecEventRecordNodeSetEvent(x, en, ev2), cu.cuGraphExecEventWaitNodeSetEvent(x, en, ev2)]
ms = (U64 * 5)(buf.value + 1, 0, 9 | 1 << 32, 1, 1)
r["memset_exec"] = [cu.cuGraphExecMemsetNodeSetParams(x, P(m), ms, ctx), run()]
x2 = P(); assert cu.cuGraphInstantiateWithFlags(R(x2), g, 0) == 0
clear(); assert cu.cuGraphLaunch(x2, stream) == 0 and cu.cuStreamSynchronize(stream) == 0
r["graph_kept"] = read(2)
r["memset_graph"] = cu.cuGraphMemsetNodeSetParams(P(m), ms)
x3 = P(); assert cu.cuGraphInstantiateWithFlags(R(x3), g, 0) == 0
clear(); assert cu.cuGraphLaunch(x3, stream) == 0 and cu.cuStreamSynchronize(stream) == 0
r["graph_changed"] = read(2)
other = graph(); om = mark(other, 0, 1)
bad_ms = (U64 * 5)(buf.value, 0, 1 | 3 << 32, 1, 1)
r["refused"] = [cu.cuGraphNodeSetEnabled(x, hn, 0), cu.cuGraphNodeSetEnabled(x, P(om), 0), cu.cuGraphNodeGetEnabled(x, P(m), None),
                cu.cuGraphExecGetFlags(P(0x4242), R(fl)), cu.cuGraphExecGetFlags(x, None),
                cu.cuGraphExecHostNodeSetParams(x, P(m), (P * 2)(c.cast(f2, P).value, None)),
                cu.cuGraphExecHostNodeSetParams(x, hn, (P * 2)(None, None)),
                cu.cuGraphExecEventRecordNodeSetEvent(x, en, P(0x4242)), cu.cuGraphExecMemsetNodeSetParams(x, P(m), bad_ms, ctx),
                cu.cuGraphMemsetNodeSetParams(hn, ms), cu.cuGraphExecMemsetNodeSetParams(None, P(m), ms, ctx),
                rt.cudaGraphNodeSetEnabled(x, hn, 0), rt.cudaGetLastError()]
r["rt"] = [rt.cudaGraphExecGetFlags(x, R(fl)), fl.value]
# the generic forms (CUgraphNodeParams)
cu.cuGraphNodeSetParams.argtypes = [P, P]
cu.cuGraphExecNodeSetParams.argtypes = [P, P, P]
cu.cuGraphAddEmptyNode.argtypes = [PP, P, PP, S]
empty = P(); assert cu.cuGraphAddEmptyNode(R(empty), g, None, 0) == 0
r["generic"] = [cu.cuGraphExecNodeSetParams(x, hn, params(3, c.cast(f1, P).value, 0)), run(), ran[-1],
                cu.cuGraphNodeSetParams(P(m), params(2, buf.value, 0, 5 | 1 << 32, 1, 1)),
                cu.cuGraphExecNodeSetParams(x, en, params(7, ev.value)),
                cu.cuGraphNodeSetParams(P(m), params(3, c.cast(f1, P).value, 0)), cu.cuGraphNodeSetParams(empty, params(5)),
                cu.cuGraphNodeSetParams(P(m), None), cu.cuGraphExecNodeSetParams(None, hn, params(3, c.cast(f1, P).value, 0))]
for h_ in (x, x2, x3):
    assert cu.cuGraphExecDestroy(h_) == 0
assert cu.cuGraphDestroy(g) == 0 and cu.cuGraphDestroy(other) == 0
out(r)
""")
    assert got["flags"] == [OK, 1]
    assert got["disable"] == [OK, OK, 0, [0, 0]] and got["enable"] == [OK, OK, 1, [7, 0]]
    assert got["host"] == [OK, [7, 0], [1, 2]]
    assert got["event"] == [OK, INVALID_VALUE]
    assert got["memset_exec"] == [OK, [0, 9]] and got["graph_kept"] == [7, 0]
    assert got["memset_graph"] == OK and got["graph_changed"] == [0, 9]
    assert got["refused"] == [INVALID_VALUE] * 7 + [INVALID_HANDLE] + [INVALID_VALUE] * 3 + [INVALID_VALUE, INVALID_VALUE]
    assert got["rt"] == [OK, 1]
    assert got["generic"] == [OK, [0, 9], 1, OK, OK, INVALID_VALUE, NOT_SUPPORTED, INVALID_VALUE, INVALID_VALUE]


def test_memcpy_node_parameters(subprocess_python):
    """cuGraphMemcpyNodeGetParams / SetParams, cuGraphExecMemcpyNodeSetParams and the generic setters' memcpy form
    (CUDA_MEMCPY_NODE_PARAMS), their runtime forms: the copy a launch makes follows; the refusals."""
    got = _json(subprocess_python, """
class M3(c.Structure):
    _fields_ = [("srcX", S), ("srcY", S), ("srcZ", S), ("srcLOD", S), ("srcType", c.c_int), ("srcHost", P), ("srcDevice", U64),
                ("srcArray", P), ("r0", P), ("srcPitch", S), ("srcHeight", S),
                ("dstX", S), ("dstY", S), ("dstZ", S), ("dstLOD", S), ("dstType", c.c_int), ("dstHost", P), ("dstDevice", U64),
                ("dstArray", P), ("r1", P), ("dstPitch", S), ("dstHeight", S), ("width", S), ("height", S), ("depth", S)]
for name, args in dict(cuGraphAddMemcpyNode=[PP, P, PP, S, c.POINTER(M3), P], cuGraphMemcpyNodeGetParams=[P, c.POINTER(M3)],
                       cuGraphMemcpyNodeSetParams=[P, c.POINTER(M3)], cuGraphExecMemcpyNodeSetParams=[P, P, c.POINTER(M3), P],
                       cuGraphNodeSetParams=[P, P], cuGraphExecNodeSetParams=[P, P, P]).items():
    getattr(cu, name).argtypes = args
rt.cudaGraphMemcpyNodeGetParams.argtypes = [P, P]
host = (c.c_ubyte * 16)()
src = (c.c_ubyte * 16)(*range(100, 116)); assert cu.cuMemcpyHtoD_v2(buf, src, 16) == 0
def cp(off, n):
    return M3(srcType=2, srcDevice=buf.value + off, dstType=1, dstHost=c.cast(host, P), width=n, height=1, depth=1)
g = graph(); n = P(); r = {"add": cu.cuGraphAddMemcpyNode(R(n), g, None, 0, R(cp(0, 4)), ctx)}
got = M3(); r["get"] = [cu.cuGraphMemcpyNodeGetParams(n, R(got)), got.srcType, got.srcDevice == buf.value, got.width, got.height]
rp = (S * 20)(); r["rt_get"] = [rt.cudaGraphMemcpyNodeGetParams(n, rp), rp[16], rp[19]]
def run(x):
    c.memset(host, 0, 16); assert cu.cuGraphLaunch(x, stream) == 0 and cu.cuStreamSynchronize(stream) == 0; return list(host[:6])
x = P(); assert cu.cuGraphInstantiateWithFlags(R(x), g, 0) == 0
r["first"] = run(x)
r["exec_set"] = [cu.cuGraphExecMemcpyNodeSetParams(x, n, R(cp(4, 2)), ctx), run(x)]
r["graph_set"] = cu.cuGraphMemcpyNodeSetParams(n, R(cp(8, 3)))
x2 = P(); assert cu.cuGraphInstantiateWithFlags(R(x2), g, 0) == 0
r["graph_run"] = [run(x2), run(x)]
one = cp(12, 1)
gp = params(1); c.memmove(c.addressof(gp) + 32, c.addressof(one), c.sizeof(M3))
r["generic"] = [cu.cuGraphExecNodeSetParams(x, n, gp), run(x)]
bad = cp(0, 4); bad.srcType = 3
big = cp(0, 1 << 20)
r["refused"] = [cu.cuGraphMemcpyNodeSetParams(n, R(bad)), cu.cuGraphMemcpyNodeSetParams(n, None),
                cu.cuGraphMemcpyNodeSetParams(n, R(big)), cu.cuGraphMemcpyNodeGetParams(n, None),
                cu.cuGraphExecMemcpyNodeSetParams(x, P(mark(g, 0, 1)), R(cp(0, 1)), ctx),
                cu.cuGraphExecMemcpyNodeSetParams(None, n, R(cp(0, 1)), ctx)]
r["unchanged"] = run(x2)
for h_ in (x, x2):
    assert cu.cuGraphExecDestroy(h_) == 0
assert cu.cuGraphDestroy(g) == 0
out(r)
""")
    assert got["add"] == OK and got["get"] == [OK, 2, True, 4, 1] and got["rt_get"] == [OK, 4, 4]
    assert got["first"] == [100, 101, 102, 103, 0, 0]
    assert got["exec_set"] == [OK, [104, 105, 0, 0, 0, 0]]
    assert got["graph_set"] == OK and got["graph_run"] == [[108, 109, 110, 0, 0, 0], [104, 105, 0, 0, 0, 0]]
    assert got["generic"] == [OK, [112, 0, 0, 0, 0, 0]]
    assert got["refused"] == [INVALID_VALUE] * 6 and got["unchanged"] == [108, 109, 110, 0, 0, 0]
