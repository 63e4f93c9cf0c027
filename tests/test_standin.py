"""The stand-in libraries (libcudart.so.13 and libcuda.so.1 built from the emulator): exports and
version nodes against the committed list of torch's imports, the runtime/driver calls torch and
cuda.core make, and the unsupported rest.

Each check runs in a fresh interpreter: a library with the soname libcudart.so.13 loaded into the test
process would be found by every later dlopen of that soname.
"""
import importlib.util
import json
import pathlib
import shutil
import subprocess

import pytest

from accel import emu

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO / "accel" / "_emu"

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

# Loads both stand-ins the way accel.emu.activate does, without accel: `rt`, `cu` and `c` (ctypes) in scope.
PRELUDE = f"""
import ctypes, json, os, sys
rt = ctypes.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = ctypes.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
c = ctypes
"""


def _names(filename):
    return [line.strip() for line in (DATA / filename).read_text().splitlines() if line.strip()]


_run, _json = _fx.runners(PRELUDE)


def test_committed_import_lists_are_well_formed():
    cudart = _names("torch_cudart13_imports.txt")
    assert len(cudart) == len(set(cudart)) == 106
    assert all(n.endswith("@libcudart.so.13") and n.split("@")[0].isidentifier() for n in cudart)
    driver = _names("torch_libcuda_imports.txt")
    assert len(driver) == len(set(driver)) == 23 and all(n.startswith("cu") for n in driver)


def test_cudart_standin_exports_every_torch_import_with_its_version(subprocess_python):
    names = [n.split("@")[0] for n in _names("torch_cudart13_imports.txt")]
    missing = _json(subprocess_python, f"""
libc = c.CDLL(None)
libc.dlvsym.restype = c.c_void_p
libc.dlvsym.argtypes = [c.c_void_p, c.c_char_p, c.c_char_p]
print(json.dumps([n for n in {names!r} if not libc.dlvsym(rt._handle, n.encode(), b"libcudart.so.13")]))
""")
    assert missing == []


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
def test_standin_sonames_and_version_nodes():
    dyn = subprocess.run(["readelf", "-dW", emu.cudart_path()], capture_output=True, text=True).stdout
    assert "Library soname: [libcudart.so.13]" in dyn
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", emu.cudart_path()], capture_output=True, text=True).stdout
    exported = [line.split()[-1] for line in syms.splitlines()
                if line.split()[-1:] and " UND " not in line and " ABS " not in line
                and (" GLOBAL " in line or " WEAK " in line) and " DEFAULT " in line]
    assert exported and all(s.endswith("@@libcudart.so.13") for s in exported), \
        [s for s in exported if not s.endswith("@@libcudart.so.13")][:5]
    for name in _names("torch_cudart13_imports.txt"):
        assert name.replace("@", "@@") in exported
    drv = subprocess.run(["readelf", "-dW", emu.driver_path()], capture_output=True, text=True).stdout
    assert "Library soname: [libcuda.so.1]" in drv and "Shared library: [libcudart.so.13]" in drv
    assert "Library runpath: [$ORIGIN]" in drv


def test_libcuda_standin_resolves_every_driver_function_torch_dlsyms(subprocess_python):
    names = _names("torch_libcuda_imports.txt")
    # dlsym on the libcuda.so.1 handle, as torch's libcaffe2_nvrtc does
    missing = _json(subprocess_python, f"print(json.dumps([n for n in {names!r} if not hasattr(cu, n)]))")
    assert missing == []


FATBIN = REPO / "tests" / "data" / "fatbin"

# A fatbin wrapper as nvcc emits it (__fatDeviceText: magic, version, the fatbin), registered with one kernel
# whose host stub is `stub`: what a -cudart shared program's constructors do.
REGISTER = f"""
class dim3(c.Structure): _fields_ = [("x", c.c_uint), ("y", c.c_uint), ("z", c.c_uint)]
class Wrapper(c.Structure): _fields_ = [("magic", c.c_uint), ("version", c.c_uint), ("data", c.c_void_p), ("file", c.c_void_p)]
def register(name):
    blob = open({str(FATBIN)!r} + "/" + name, "rb").read()
    buf = c.create_string_buffer(blob, len(blob))
    w = Wrapper(0x466243b1, 1, c.cast(buf, c.c_void_p), None)
    rt.__cudaRegisterFatBinary.restype = c.c_void_p
    h = c.c_void_p(rt.__cudaRegisterFatBinary(c.byref(w)))
    stub, var = c.create_string_buffer(8), c.create_string_buffer(4)
    rt.__cudaRegisterFunction(h, stub, b"_Z3addPKfS0_Pfi", b"_Z3addPKfS0_Pfi", -1, None, None, None, None, None)
    rt.__cudaRegisterVar(h, var, b"gscale", b"gscale", 0, c.c_size_t(4), 0, 0)
    rt.__cudaRegisterFatBinaryEnd(h)
    return h, stub, var, (buf, w)
rt.cudaLaunchKernel.argtypes = [c.c_void_p, dim3, dim3, c.c_void_p, c.c_size_t, c.c_void_p]
"""


def test_a_sass_only_kernel_is_refused_and_named_once(subprocess_python):
    # torch's kernels: the fatbin has SASS only.  Its launch is cudaErrorNoKernelImageForDevice (the last error
    # too), and one line on stderr, without any variable set, names the kernel and says why
    proc = _run(subprocess_python, REGISTER + """
h, stub, var, keep = register("add_sass.fatbin")
one = dim3(1, 1, 1)
out = [rt.cudaLaunchKernel(stub, one, one, None, 0, None), rt.cudaGetLastError(), rt.cudaGetLastError(),
       rt.cudaLaunchKernel(stub, one, one, None, 0, None)]
sym = c.c_void_p()
out.append(rt.cudaGetSymbolAddress(c.byref(sym), var))
out.append(rt.cudaLaunchKernel(c.create_string_buffer(8), one, one, None, 0, None))     # not registered
cu.cuLaunchKernel.argtypes = [c.c_void_p] + [c.c_uint] * 7 + [c.c_void_p] * 3
out.append(cu.cuLaunchKernel(c.c_void_p(0x1234), 1, 1, 1, 1, 1, 1, 0, None, None, None))  # not a function
rt.__cudaUnregisterFatBinary(h)
out.append(rt.cudaLaunchKernel(stub, one, one, None, 0, None))     # unregistered with its fatbin
print(json.dumps(out))
""")
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [209, 209, 0, 209, 209, 98, 400, 98]
    assert proc.stderr.splitlines() == [
        "accel emu: kernel _Z3addPKfS0_Pfi is SASS only (a cubin for a real GPU, no PTX): accel's emulator executes "
        "PTX only (CUDA_ERROR_NO_BINARY_FOR_GPU)"]


def test_a_refused_kernel_launch_records_nothing_in_a_capture(subprocess_python):
    """A launch refused at the call (here an unregistered host stub, cudaErrorInvalidDeviceFunction) leaves the
    capture going with the nodes it had: the graph holds the two memsets only."""
    got = _json(subprocess_python, REGISTER + """
P = c.c_void_p
s, g, x, buf = P(), P(), P(), P()
assert rt.cudaSetDevice(0) == 0 and rt.cudaStreamCreate(c.byref(s)) == 0 and rt.cudaMalloc(c.byref(buf), 64) == 0
bogus = c.create_string_buffer(8)
assert rt.cudaStreamBeginCapture(s, 0) == 0
out = [rt.cudaMemsetAsync(buf, 7, 64, s), rt.cudaLaunchKernel(bogus, dim3(1, 1, 1), dim3(32, 1, 1), None, 0, s),
       rt.cudaGetLastError(), rt.cudaMemsetAsync(buf, 9, 64, s)]
out.append(rt.cudaStreamEndCapture(s, c.byref(g)))
n = c.c_size_t(0)
out.append(rt.cudaGraphGetNodes(g, None, c.byref(n)))
nodes = (P * n.value)()
rt.cudaGraphGetNodes(g, nodes, c.byref(n))
types = []
for nd in nodes:
    t = c.c_int(-1); rt.cudaGraphNodeGetType(P(nd), c.byref(t)); types.append(t.value)
out.append(types)
out += [rt.cudaGraphInstantiate(c.byref(x), g, 0), rt.cudaGraphLaunch(x, s), rt.cudaStreamSynchronize(s)]
host = (c.c_ubyte * 64)()
assert rt.cudaMemcpy(host, buf, 64, 2) == 0
out.append(bytes(host) == bytes([9]) * 64)
out += [rt.cudaGraphExecDestroy(x), rt.cudaGraphDestroy(g), rt.cudaFree(buf), rt.cudaStreamDestroy(s)]
print(json.dumps(out))
""")
    assert got == [0, 98, 98, 0, 0, 0, [2, 2], 0, 0, 0, True, 0, 0, 0, 0]


def test_unsupported_calls_are_quiet_without_the_trace(subprocess_python):
    proc = _run(subprocess_python,
                "print(cu.cuLaunch(), cu.cuModuleGetTexRef(), cu.cuTensorMapEncodeTiled())")
    assert proc.stdout.split() == ["801", "801", "801"] and proc.stderr == ""


def test_device_properties_fill_the_cuda13_layout(subprocess_python):
    got = _json(subprocess_python, """
buf = c.create_string_buffer(2048)
assert rt.cudaGetDeviceProperties(buf, 1) == 0
i32 = lambda off: int.from_bytes(buf.raw[off:off + 4], "little", signed=True)
attr = lambda a: (lambda v: (rt.cudaDeviceGetAttribute(c.byref(v), a, 1), v.value)[1])(c.c_int())
print(json.dumps({"name": buf.raw[:256].split(b"\\0")[0].decode(), "total": int.from_bytes(buf.raw[288:296], "little"),
                  "major": [i32(360), attr(75)], "minor": [i32(364), attr(76)], "sms": [i32(384), attr(16)],
                  "warp": [i32(308), attr(10)], "tail": buf.raw[1008:].count(0)}))
""")
    assert got["name"].startswith("Emulated NVIDIA H100")
    assert got["total"] == 80 << 30
    assert got["major"] == [9, 9] and got["minor"] == [0, 0] and got["sms"] == [132, 132] and got["warp"] == [32, 32]
    assert got["tail"] == 2048 - 1008  # the struct is 1008 bytes in CUDA 13: nothing written past it


def test_stream_capture_info_says_not_capturing(subprocess_python):
    got = _json(subprocess_python, """
s = c.c_void_p(); rt.cudaStreamCreate(c.byref(s))
st, cid, graph, n = c.c_int(7), c.c_ulonglong(9), c.c_void_p(5), c.c_size_t(3)
ok = rt.cudaStreamGetCaptureInfo(s, c.byref(st), c.byref(cid), c.byref(graph), None, None, c.byref(n))
bad = rt.cudaStreamGetCaptureInfo(c.c_void_p(0x5e00ffffff30), c.byref(st), None, None, None, None, None)
null = rt.cudaStreamGetCaptureInfo(s, None, None, None, None, None, None)
print(json.dumps([ok, st.value, cid.value, graph.value, n.value, bad, null]))
""")
    assert got == [0, 0, 0, None, 0, 400, 1]


def test_driver_entry_points_resolve_in_the_driver_layer(subprocess_python):
    got = _json(subprocess_python, """
fn, st = c.c_void_p(), c.c_int(-1)
r1 = rt.cudaGetDriverEntryPointByVersion(b"cuDeviceGetCount", c.byref(fn), 13000, 0, c.byref(st))
count = c.c_int()
call = c.CFUNCTYPE(c.c_int, c.POINTER(c.c_int))(fn.value)(c.byref(count))
r2 = rt.cudaGetDriverEntryPointByVersion(b"cuNoSuchFunction", c.byref(fn), 13000, 0, c.byref(st))
pfn, qs = c.c_void_p(), c.c_int(-1)
r3 = cu.cuGetProcAddress_v2(b"cuStreamQuery", c.byref(pfn), 13000, 0, c.byref(qs))
same = pfn.value == c.cast(cu.cuStreamQuery, c.c_void_p).value
r4 = cu.cuGetProcAddress_v2(b"cuEventDestroy_v2", c.byref(pfn), 13000, 0, None)
same4 = pfn.value == c.cast(cu.cuEventDestroy_v2, c.c_void_p).value
r5 = cu.cuGetProcAddress_v2(b"cuStreamSynchronize_ptsz", c.byref(pfn), 13000, 0, None)
r6 = cu.cuGetProcAddress_v2(b"cuNoSuchFunction", c.byref(pfn), 13000, 0, c.byref(qs))
print(json.dumps([r1, call, count.value, r2, st.value, fn.value, r3, same, r4, same4, r5, r6, qs.value, pfn.value]))
""")
    assert got == [0, 0, 4, 0, 1, None, 0, True, 0, True, 0, 0, 1, None]   # not found: success, NULL, status 1


def test_driver_contexts_follow_the_runtime_device_per_thread(subprocess_python):
    got = _json(subprocess_python, """
import threading
assert cu.cuInit(0) == 0
ctx, cur, dev = c.c_void_p(), c.c_void_p(), c.c_int()
def rdev():
    d = c.c_int(); rt.cudaGetDevice(c.byref(d)); return d.value
out = {}
out["fresh"] = [cu.cuCtxGetCurrent(c.byref(cur)), cur.value, cu.cuCtxGetDevice(c.byref(dev))]
cu.cuDevicePrimaryCtxRetain(c.byref(ctx), 2)
flags, active = c.c_uint(), c.c_int()
cu.cuDevicePrimaryCtxGetState(2, c.byref(flags), c.byref(active))
out["set"] = [active.value, cu.cuCtxSetCurrent(ctx), rdev(), cu.cuCtxGetDevice(c.byref(dev)), dev.value]
c3 = c.c_void_p(); cu.cuDevicePrimaryCtxRetain(c.byref(c3), 3)
out["push"] = [cu.cuCtxPushCurrent_v2(c3), rdev()]
popped = c.c_void_p()
out["pop"] = [cu.cuCtxPopCurrent_v2(c.byref(popped)), popped.value == c3.value, rdev()]
out["bad"] = [cu.cuCtxSetCurrent(c.c_void_p(12345)), cu.cuDevicePrimaryCtxRetain(c.byref(ctx), 4)]
rt.cudaSetDevice(1)                           # replaces the top of the stack, as in CUDA
c1 = c.c_void_p(); cu.cuDevicePrimaryCtxRetain(c.byref(c1), 1)
cu.cuCtxGetCurrent(c.byref(cur))
out["runtime_set"] = [cur.value == c1.value, cu.cuCtxGetDevice(c.byref(dev)), dev.value]
seen = []
def other():
    p = c.c_void_p(); seen.append([cu.cuCtxGetCurrent(c.byref(p)), p.value is not None, rdev()])
t = threading.Thread(target=other); t.start(); t.join()
out["thread"] = seen[0]
print(json.dumps(out))
""")
    assert got["fresh"] == [0, None, 201]
    assert got["set"] == [1, 0, 2, 0, 2]
    assert got["push"] == [0, 3]
    assert got["pop"] == [0, True, 2]
    assert got["bad"] == [201, 101]
    assert got["runtime_set"] == [True, 0, 1]
    assert got["thread"] == [0, False, 0]  # a new thread has no context until the runtime makes one current


def test_driver_layer_rejects_bad_input_and_keeps_the_runtime_last_error(subprocess_python):
    got = _json(subprocess_python, """
assert cu.cuInit(0) == 0
d, ctx, s, e, name = c.c_int(), c.c_void_p(), c.c_void_p(), c.c_void_p(), c.c_char_p()
buf = c.create_string_buffer(64)
out = {"no_ctx_event": cu.cuEventCreate(c.byref(e), 0), "no_ctx_stream": cu.cuStreamCreate(c.byref(s), 0),
       "pop_empty": cu.cuCtxPopCurrent_v2(c.byref(ctx))}
out["bad"] = [cu.cuDeviceGet(None, 0), cu.cuDeviceGet(c.byref(d), 4), cu.cuDeviceGet(c.byref(d), -1),
              cu.cuDeviceGetName(buf, 0, 0), cu.cuDeviceGetName(buf, 64, 4), cu.cuCtxPushCurrent_v2(c.c_void_p(99)),
              cu.cuCtxSetCurrent(c.c_void_p(0x5c0000000490)),
              cu.cuGetProcAddress_v2(None, c.byref(ctx), 13000, 0, None),
              cu.cuStreamQuery(c.c_void_p(0x5e00ffffff30)), cu.cuDevicePrimaryCtxRetain(None, 0)]
out["last_error"] = rt.cudaGetLastError()          # none of the driver failures above touched it
cu.cuDeviceGetName(buf, 64, 3)
out["name"] = buf.value.decode()
cu.cuGetErrorName(801, c.byref(name))
out["err"] = name.value.decode()
print(json.dumps(out))
""")
    assert got["no_ctx_event"] == got["no_ctx_stream"] == got["pop_empty"] == 201
    assert got["bad"] == [1, 101, 101, 1, 101, 201, 201, 1, 400, 1]
    assert got["last_error"] == 0
    assert got["name"].startswith("Emulated NVIDIA H100") and got["err"] == "CUDA_ERROR_NOT_SUPPORTED"


def test_a_malformed_configuration_reads_as_not_initialised(subprocess_python):
    got = _json(subprocess_python, """
n, fn, st = c.c_int(), c.c_void_p(), c.c_int()
print(json.dumps([cu.cuDeviceGetCount(c.byref(n)), cu.cuInit(0), rt.cudaGetDeviceCount(c.byref(n)),
                  rt.cudaGetDriverEntryPointByVersion(b"cuInit", c.byref(fn), 13000, 0, c.byref(st))]))
""", env={"ACCEL_EMU_DEVICES": "lots"})
    assert got == [3, 3, 3, 3]


def test_stream_and_event_handles_are_aligned_like_real_pointers(subprocess_python):
    # torch tells an external stream (ExternalStream, a foreign cudaStream_t) from its own stream ids by
    # bit 0 being clear, as it is for the real runtime's (struct pointer) handles
    got = _json(subprocess_python, """
hs = []
for _ in range(3):
    s, e = c.c_void_p(), c.c_void_p()
    rt.cudaStreamCreate(c.byref(s)); rt.cudaEventCreate(c.byref(e))
    hs += [s.value, e.value]
print(json.dumps([h % 16 for h in hs] + [rt.cudaStreamQuery(c.c_void_p(hs[1])), rt.cudaEventQuery(c.c_void_p(hs[0]))]))
""")
    assert got == [0] * 6 + [400, 400]   # and an event is still refused as a stream (and vice versa)


def test_proc_addresses_follow_the_requested_abi_version(subprocess_python):
    # cuda.bindings asks for the same base name at several versions when the ABI changed (a 2-argument
    # cuStreamGetCtx at 9020, the 3-argument _v2 at 12050; cuGetProcAddress without the status at 11030)
    got = _json(subprocess_python, """
def proc(name, version):
    p = c.c_void_p(); r = cu.cuGetProcAddress_v2(name.encode(), c.byref(p), version, 0, None); return r, p.value
addr = lambda f: c.cast(f, c.c_void_p).value
out = [proc("cuStreamGetCtx", 9020)[1] == addr(cu.cuStreamGetCtx),
       proc("cuStreamGetCtx", 12050)[1] == addr(cu.cuStreamGetCtx_v2),
       proc("cuStreamGetCtx", 13000)[1] == addr(cu.cuStreamGetCtx_v2),
       proc("cuGetProcAddress", 11030)[1] == addr(cu.cuGetProcAddress),
       proc("cuGetProcAddress", 12000)[1] == addr(cu.cuGetProcAddress_v2),
       proc("cuStreamGetCtx_v2", 9020)[1] == addr(cu.cuStreamGetCtx_v2)]
s, ctx, green = c.c_void_p(), c.c_void_p(), c.c_void_p(77)
rt.cudaSetDevice(2); rt.cudaStreamCreate(c.byref(s))
out += [cu.cuStreamGetCtx_v2(s, c.byref(ctx), c.byref(green)), green.value,
        cu.cuCtxGetId(ctx, c.byref(c.c_ulonglong()))]
p = c.c_void_p()
out += [cu.cuGetProcAddress(b"cuInit", c.byref(p), 11030, 0), p.value == addr(cu.cuInit),
        cu.cuGetProcAddress(b"cuNoSuchFunction", c.byref(p), 11030, 0)]   # v1: not found is an error
print(json.dumps(out))
""")
    assert got == [True] * 6 + [0, None, 0, 0, True, 500]


def test_peer_access_and_stream_callbacks(subprocess_python):
    got = _json(subprocess_python, """
peer = [rt.cudaDeviceEnablePeerAccess(1, 0), rt.cudaDeviceEnablePeerAccess(1, 0), rt.cudaGetLastError(),
        rt.cudaDeviceEnablePeerAccess(0, 0), rt.cudaDeviceEnablePeerAccess(4, 0), rt.cudaDeviceEnablePeerAccess(2, 1)]
rt.cudaSetDevice(1)
peer.append(rt.cudaDeviceEnablePeerAccess(0, 0))         # per (device, peer): 1 -> 0 is a new pair
seen = []
CB = c.CFUNCTYPE(None, c.c_void_p, c.c_int, c.c_void_p)
cb = CB(lambda s, status, arg: seen.append([s, status, arg]))
s = c.c_void_p(); rt.cudaStreamCreate(c.byref(s))
calls = [rt.cudaStreamAddCallback(s, cb, c.c_void_p(42), 0), rt.cudaStreamAddCallback(s, cb, None, 1),
         rt.cudaStreamAddCallback(s, None, None, 0)]
rt.cudaStreamSynchronize(s)
print(json.dumps({"peer": peer, "calls": calls, "seen": seen, "s": s.value}))
""")
    assert got["peer"] == [0, 704, 704, 101, 101, 1, 0]
    assert got["calls"] == [0, 1, 1]
    assert got["seen"] == [[got["s"], 0, 42]]


def test_stream_callbacks_are_not_captured(subprocess_python):
    """cudaStreamAddCallback is not capturable (CUDA captures cudaLaunchHostFunc): refused on a capturing
    stream, which goes on capturing."""
    got = _json(subprocess_python, """
CB = c.CFUNCTYPE(None, c.c_void_p, c.c_int, c.c_void_p)
cb = CB(lambda s, status, arg: None)
s = c.c_void_p(); rt.cudaStreamCreate(c.byref(s))
out = [rt.cudaStreamBeginCapture(s, 0), rt.cudaStreamAddCallback(s, cb, None, 0), rt.cudaGetLastError()]
st = c.c_int(); rt.cudaStreamIsCapturing(s, c.byref(st)); out.append(st.value)
g = c.c_void_p(); out += [rt.cudaStreamEndCapture(s, c.byref(g)), rt.cudaGraphDestroy(g)]
print(json.dumps(out))
""")
    assert got == [0, 900, 900, 1, 0, 0]


def test_the_real_entry_points_have_fault_hooks(subprocess_python):
    # the stand-in's own real entry points are armed by name like the runtime's: the armed call fails with
    # cudaErrorUnknown before it changes anything (out-parameters, peer access, queued callbacks) and
    # records it as the last error; the next call succeeds
    got = _json(subprocess_python, """
rt.accelEmuSetFail.argtypes = [c.c_char_p]
fn, st, cid = c.c_void_p(), c.c_int(), c.c_ulonglong()
seen = []
CB = c.CFUNCTYPE(None, c.c_void_p, c.c_int, c.c_void_p)
cb = CB(lambda s, status, arg: seen.append(arg))
s = c.c_void_p(); rt.cudaStreamCreate(c.byref(s))
calls = {
    "cudaGetDriverEntryPointByVersion":
        lambda: rt.cudaGetDriverEntryPointByVersion(b"cuInit", c.byref(fn), 13000, 0, c.byref(st)),
    "cudaStreamGetCaptureInfo": lambda: rt.cudaStreamGetCaptureInfo(s, c.byref(st), c.byref(cid), None, None, None, None),
    "cudaDeviceEnablePeerAccess": lambda: rt.cudaDeviceEnablePeerAccess(1, 0),     # again: 704 had the fault enabled it
    "cudaStreamAddCallback": lambda: rt.cudaStreamAddCallback(s, cb, c.c_void_p(42), 0),
}
def state():
    rt.cudaStreamSynchronize(s)
    return [fn.value, st.value, cid.value, len(seen)]
out = {}
for name, call in calls.items():
    fn.value, st.value, cid.value = 7, 7, 7
    armed = rt.accelEmuSetFail(f"{name}:1".encode())
    fault = call()
    after = state() + [rt.cudaGetLastError()]
    again = call()
    out[name] = [armed, fault, after, again, state()[3]]
    rt.accelEmuSetFail(None)
print(json.dumps(out))
""")
    for name in ("cudaGetDriverEntryPointByVersion", "cudaStreamGetCaptureInfo", "cudaDeviceEnablePeerAccess"):
        assert got[name] == [0, 999, [7, 7, 7, 0, 999], 0, 0], name
    assert got["cudaStreamAddCallback"] == [0, 999, [7, 7, 7, 0, 999], 0, 1]


def test_per_thread_default_stream_variants(subprocess_python):
    got = _json(subprocess_python, """
addr = lambda f: c.cast(f, c.c_void_p).value
def proc(name, flags):
    p = c.c_void_p(); cu.cuGetProcAddress_v2(name.encode(), c.byref(p), 13000, flags, None); return p.value
found = [proc("cuStreamQuery", 2) == addr(cu.cuStreamQuery_ptsz),
         proc("cuStreamQuery_ptsz", 0) == addr(cu.cuStreamQuery_ptsz),
         proc("cuEventRecord_ptds", 0) == addr(cu.cuEventRecord_ptsz),
         proc("cuStreamQuery", 0) == addr(cu.cuStreamQuery),
         proc("cuInit", 2) == addr(cu.cuInit), proc("cuStreamGetCtx", 2) == addr(cu.cuStreamGetCtx_v2_ptsz)]
assert cu.cuInit(0) == 0
ctx = c.c_void_p(); cu.cuDevicePrimaryCtxRetain(c.byref(ctx), 0); cu.cuCtxSetCurrent(ctx)
legacy, pt, pt_handle = c.c_ulonglong(), c.c_ulonglong(), c.c_ulonglong()
cu.cuStreamGetId(None, c.byref(legacy)); cu.cuStreamGetId_ptsz(None, c.byref(pt))
cu.cuStreamGetId(c.c_void_p(2), c.byref(pt_handle))
print(json.dumps(found + [pt.value == pt_handle.value, pt.value != legacy.value]))
""")
    assert got == [True] * 8
