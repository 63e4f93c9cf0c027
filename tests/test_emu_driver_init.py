"""The driver API's initialisation in the libcuda.so.1 stand-in (issue 31, item 14): calls before cuInit,
the runtime's implicit initialisation, the current context after cuDevicePrimaryCtxRetain, a process forked
after initialisation, and the names and texts of every CUresult.

What the real driver does, and where it is said:
- before cuInit every driver call but cuInit, cuDriverGetVersion, cuGetProcAddress and the error-string
  queries is CUDA_ERROR_NOT_INITIALIZED (cuInit's documentation: "If cuInit() has not been called, any
  function from the driver API will return CUDA_ERROR_NOT_INITIALIZED"); the runtime initialises the
  driver itself on its first call, so a runtime-first program may then call the driver;
- a thread has no current context until one is pushed or set, or the runtime makes its device's primary
  context current there: retaining a primary context does not bind it (cuDevicePrimaryCtxRetain's
  documentation: the context is retained, "Unlike cuCtxCreate() the newly created context is not
  pushed onto the stack");
- in a process forked after CUDA was initialised, the driver refuses every call with
  CUDA_ERROR_NOT_INITIALIZED, cuInit included, and the runtime with cudaErrorInitializationError (3):
  triton-lang/triton#10443 ("A process that was fork()ed after its parent already initialized CUDA gets
  CUDA_ERROR_NOT_INITIALIZED (rc=3) from cuInit ... cuDeviceGetCount would itself return rc=3"),
  pytorch/pytorch#17357 (torch.cuda.set_device in a forked child: "cuda runtime error (3) : initialization
  error"), tensorflow/tensorflow#57877 ("Failed setting context: CUDA_ERROR_NOT_INITIALIZED" in a fork);
  a child of a process that never initialised CUDA works.

The stand-ins run in fresh interpreters (see test_standin.py for why).
"""
import importlib.util
import pathlib

import pytest

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

OK, INVALID_VALUE, NOT_INITIALIZED = 0, 1, 3

# Both stand-ins loaded as accel.emu.activate does; nothing called yet.
PRELUDE = f"""
import ctypes as c, json, os
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
R, VP, I = c.byref, c.c_void_p, c.c_int
def count():
    n = I(-1); r = cu.cuDeviceGetCount(R(n)); return [r, n.value]
def current():
    p = VP(); r = cu.cuCtxGetCurrent(R(p)); return [r, p.value]
"""

_run, _json = _fx.runners(PRELUDE)

# Every CUresult of CUDA 13.0 (cuda.h 13.0, as cuda-bindings 13.5.0 names them; the codes it adds after 13.0,
# 227 and 917-919, are unknown to a 13.0 driver), with the driver's texts for a few of them.
CURESULT_13_0 = {
    0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY", 3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED", 5: "CUDA_ERROR_PROFILER_DISABLED", 6: "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
    7: "CUDA_ERROR_PROFILER_ALREADY_STARTED", 8: "CUDA_ERROR_PROFILER_ALREADY_STOPPED", 34: "CUDA_ERROR_STUB_LIBRARY",
    36: "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", 46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    47: "CUDA_ERROR_MULTICAST_RESOURCE_FULL", 100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
    102: "CUDA_ERROR_DEVICE_NOT_LICENSED", 200: "CUDA_ERROR_INVALID_IMAGE", 201: "CUDA_ERROR_INVALID_CONTEXT",
    202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", 205: "CUDA_ERROR_MAP_FAILED", 206: "CUDA_ERROR_UNMAP_FAILED",
    207: "CUDA_ERROR_ARRAY_IS_MAPPED", 208: "CUDA_ERROR_ALREADY_MAPPED", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    210: "CUDA_ERROR_ALREADY_ACQUIRED", 211: "CUDA_ERROR_NOT_MAPPED", 212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
    213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER", 214: "CUDA_ERROR_ECC_UNCORRECTABLE", 215: "CUDA_ERROR_UNSUPPORTED_LIMIT",
    216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", 217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", 218: "CUDA_ERROR_INVALID_PTX",
    219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", 220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
    221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    223: "CUDA_ERROR_JIT_COMPILATION_DISABLED", 224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
    225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", 226: "CUDA_ERROR_CONTAINED", 300: "CUDA_ERROR_INVALID_SOURCE",
    301: "CUDA_ERROR_FILE_NOT_FOUND", 302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
    303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", 304: "CUDA_ERROR_OPERATING_SYSTEM", 400: "CUDA_ERROR_INVALID_HANDLE",
    401: "CUDA_ERROR_ILLEGAL_STATE", 402: "CUDA_ERROR_LOSSY_QUERY", 500: "CUDA_ERROR_NOT_FOUND",
    600: "CUDA_ERROR_NOT_READY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT", 703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
    704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", 705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
    708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", 709: "CUDA_ERROR_CONTEXT_IS_DESTROYED", 710: "CUDA_ERROR_ASSERT",
    711: "CUDA_ERROR_TOO_MANY_PEERS", 712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
    713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", 714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION", 716: "CUDA_ERROR_MISALIGNED_ADDRESS", 717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    718: "CUDA_ERROR_INVALID_PC", 719: "CUDA_ERROR_LAUNCH_FAILED", 720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
    721: "CUDA_ERROR_TENSOR_MEMORY_LEAK", 800: "CUDA_ERROR_NOT_PERMITTED", 801: "CUDA_ERROR_NOT_SUPPORTED",
    802: "CUDA_ERROR_SYSTEM_NOT_READY", 803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", 805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
    806: "CUDA_ERROR_MPS_RPC_FAILURE", 807: "CUDA_ERROR_MPS_SERVER_NOT_READY", 808: "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
    809: "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", 810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
    811: "CUDA_ERROR_CDP_NOT_SUPPORTED", 812: "CUDA_ERROR_CDP_VERSION_MISMATCH",
    900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", 901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    902: "CUDA_ERROR_STREAM_CAPTURE_MERGE", 903: "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
    904: "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", 905: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
    906: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", 907: "CUDA_ERROR_CAPTURED_EVENT",
    908: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", 909: "CUDA_ERROR_TIMEOUT", 910: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
    911: "CUDA_ERROR_EXTERNAL_DEVICE", 912: "CUDA_ERROR_INVALID_CLUSTER_SIZE", 913: "CUDA_ERROR_FUNCTION_NOT_LOADED",
    914: "CUDA_ERROR_INVALID_RESOURCE_TYPE", 915: "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
    916: "CUDA_ERROR_KEY_ROTATION", 999: "CUDA_ERROR_UNKNOWN",
}
# Texts the runtime of CUDA 13.0 gives the same codes (libcudart's cudaGetErrorString), which the driver shares.
SOME_TEXTS = {3: "initialization error", 201: "invalid device context", 209: "no kernel image is available for "
              "execution on the device", 719: "unspecified launch failure", 906: "operation would make the legacy "
              "stream depend on a capturing blocking stream", 999: "unknown error"}


def test_driver_calls_before_cuinit_are_not_initialized(subprocess_python):
    got = _json(subprocess_python, """
p, v, name = VP(), I(), c.c_char_p()
r = {"before": [count(), cu.cuDevicePrimaryCtxRetain(R(p), 0), current(), cu.cuDeviceGet(R(I()), 0),
                cu.cuMemGetInfo_v2(R(c.c_size_t()), R(c.c_size_t())), cu.cuStreamCreate(R(p), 0)]}
# what works before cuInit: the version, the error names and texts, resolving entry points
r["free"] = [cu.cuDriverGetVersion(R(v)), v.value, cu.cuGetErrorName(201, R(name)), name.value.decode(),
             cu.cuGetProcAddress_v2(b"cuInit", R(p), 13000, 0, None), p.value is not None]
r["bad_flags"] = [cu.cuInit(1), count()]
r["init"] = [cu.cuInit(0), count(), current(), cu.cuInit(0)]
out = r
print(json.dumps(out))
""")
    assert got == {"before": [[NOT_INITIALIZED, -1], NOT_INITIALIZED, [NOT_INITIALIZED, None], NOT_INITIALIZED,
                              NOT_INITIALIZED, NOT_INITIALIZED],
                   "free": [OK, 13000, OK, "CUDA_ERROR_INVALID_CONTEXT", OK, True],
                   "bad_flags": [INVALID_VALUE, [NOT_INITIALIZED, -1]],
                   "init": [OK, [OK, 4], [OK, None], OK]}


def test_the_runtime_initialises_the_driver(subprocess_python):
    # the runtime's first call initialises the driver, as the real libcudart does (cuInit inside); its version
    # queries load nothing and initialise nothing
    got = _json(subprocess_python, """
v = I()
r = [rt.cudaRuntimeGetVersion(R(v)), rt.cudaDriverGetVersion(R(v)), count()]
n = I()
r += [rt.cudaGetDeviceCount(R(n)), count()]
print(json.dumps(r))
""")
    assert got == [OK, OK, [NOT_INITIALIZED, -1], OK, [OK, 4]]


def test_a_retained_primary_context_is_not_current_until_pushed_or_used(subprocess_python):
    got = _json(subprocess_python, """
import threading
assert cu.cuInit(0) == 0
ctx, flags, active = VP(), c.c_uint(), I()
r = {"retained": [cu.cuDevicePrimaryCtxRetain(R(ctx), 0), current(), cu.cuCtxGetDevice(R(I())),
                  cu.cuDevicePrimaryCtxGetState(0, R(flags), R(active)), active.value]}
assert cu.cuCtxPushCurrent_v2(ctx) == 0
r["pushed"] = current() == [0, ctx.value]
assert cu.cuCtxPopCurrent_v2(None) == 0
r["popped"] = current()
seen = []
def runtime_thread():                         # a thread that uses the runtime binds its device's context
    p = VP(); assert rt.cudaFree(None) == 0
    seen.append([cu.cuCtxGetCurrent(R(p)), p.value == ctx.value])
t = threading.Thread(target=runtime_thread); t.start(); t.join()
r["runtime"] = seen[0]
print(json.dumps(r))
""")
    assert got == {"retained": [OK, [OK, None], 201, OK, 1], "pushed": True, "popped": [OK, None],
                   "runtime": [OK, True]}


FORK = """
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    v, n, name = I(), I(-1), c.c_char_p()
    got = [cu.cuInit(0), count(), rt.cudaGetDeviceCount(R(n)), rt.cudaSetDevice(0), current(),
           cu.cuDriverGetVersion(R(v)), v.value, cu.cuGetErrorName(3, R(name)), name.value.decode()]
    os.write(w, json.dumps(got).encode()); os._exit(0)
os.close(w)
child = json.loads(os.read(r, 65536).decode())
os.waitpid(pid, 0)
print(json.dumps({"child": child, "parent": [count(), current()[0]]}))
"""


@pytest.mark.parametrize("parent", ["cu.cuInit(0)", "rt.cudaGetDeviceCount(R(I()))"])
def test_a_process_forked_after_initialisation_is_refused(subprocess_python, parent):
    got = _json(subprocess_python, parent + "\n" + FORK)
    assert got["child"] == [NOT_INITIALIZED, [NOT_INITIALIZED, -1], 3, 3, [NOT_INITIALIZED, None],
                            OK, 13000, OK, "CUDA_ERROR_NOT_INITIALIZED"]
    assert got["parent"] == [[OK, 4], OK]


def test_a_process_forked_before_initialisation_works(subprocess_python):
    # loaded, and the emulator's state read (a version query, accelEmuDeviceCount), but CUDA not initialised
    got = _json(subprocess_python, "v = I(); rt.cudaRuntimeGetVersion(R(v)); rt.accelEmuDeviceCount(); count()\n"
                + FORK)
    assert got["child"] == [OK, [OK, 4], OK, OK, [OK, 0x5c0000000090], OK, 13000, OK, "CUDA_ERROR_NOT_INITIALIZED"]
    assert got["parent"] == [[NOT_INITIALIZED, -1], NOT_INITIALIZED]      # still not initialised


def test_every_curesult_has_its_name_and_text(subprocess_python):
    got = _json(subprocess_python, f"""
name, text = c.c_char_p(), c.c_char_p()
out = {{}}
for code in {sorted(CURESULT_13_0)!r} + [917, 12345, -1]:
    name.value = text.value = None
    rn, rs = cu.cuGetErrorName(code, R(name)), cu.cuGetErrorString(code, R(text))
    out[code] = [rn, rs, name.value and name.value.decode(), text.value and text.value.decode()]
print(json.dumps(out))
""")
    for code, expected in CURESULT_13_0.items():
        rn, rs, name, text = got[str(code)]
        assert (rn, rs, name) == (OK, OK, expected), code
        assert text and text == SOME_TEXTS.get(code, text), code
    for code in (917, 12345, -1):                       # unknown to a CUDA 13.0 driver
        assert got[str(code)] == [INVALID_VALUE, INVALID_VALUE, None, None]


def test_cuda_bindings_knows_every_code_on_the_emulator(subprocess_python):
    """The oracle itself: cuda.bindings' test_all_CUresult_codes logic through its own driver bindings, on the
    stand-ins (every code its enum has that a CUDA 13.0 driver knows has a name and a text)."""
    pytest.importorskip("cuda.bindings.driver")
    got = _json(subprocess_python, """
from cuda.bindings import driver
assert driver.cuInit(0)[0] == driver.CUresult.CUDA_SUCCESS
good, unknown = 0, []
for code in range(int(max(driver.CUresult)) + 2):
    try:
        error = driver.CUresult(code)
    except ValueError:
        continue
    err, name = driver.cuGetErrorName(error)
    if err == driver.CUresult.CUDA_SUCCESS:
        err_desc, desc = driver.cuGetErrorString(error)
        assert name and err_desc == driver.CUresult.CUDA_SUCCESS and desc, code
        good += 1
    else:
        unknown.append(code)
print(json.dumps([good, unknown]))
""")
    good, unknown = got
    assert set(unknown) <= {227, 917, 918, 919}, unknown
    assert good >= len(CURESULT_13_0)
