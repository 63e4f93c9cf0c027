"""Fault injection in the driver layer of the libcuda.so.1 stand-in: every driver entry point that can
fail has a hook armed by its name (ACCEL_EMU_FAIL / accelEmuSetFail, as the runtime's), and a fault
returns an error without changing anything (no stream or event made or destroyed, no record, no
context change, out-parameters untouched, the runtime's last error kept); the next call succeeds.

The stand-ins run in fresh interpreters (a library with the soname libcudart.so.13 loaded into the
test process would be found by every later dlopen of that soname).
"""
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap

import pytest

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins

REPO = pathlib.Path(__file__).resolve().parent.parent
OOM, UNKNOWN = 2, 999   # CUDA_ERROR_OUT_OF_MEMORY (what creating calls fail with), CUDA_ERROR_UNKNOWN

# name: (call, setup before it, undo after the successful second call, the fault's code, the next call's code)
# `ob`/`ob2`: out-parameter buffers (their bytes are part of the state); ctx0/ctx1: primary contexts of
# devices 0/1 (ctx0 is current); s0: an idle stream and ev_done/t0/t1 events recorded on it; busy: a
# device-3 stream held by a host function, evb an event recorded behind it; sw: a device-3 stream.
CASES = {
    "cuDeviceGetCount": ("cu.cuDeviceGetCount(ob)",),
    "cuDeviceGet": ("cu.cuDeviceGet(ob, 1)",),
    "cuDeviceGetAttribute": ("cu.cuDeviceGetAttribute(ob, 75, 0)",),
    "cuDeviceGetName": ("cu.cuDeviceGetName(ob, 64, 0)",),
    "cuDeviceGetUuid": ("cu.cuDeviceGetUuid(ob, 0)",),
    "cuDeviceGetUuid_v2": ("cu.cuDeviceGetUuid_v2(ob, 0)",),
    "cuDeviceTotalMem_v2": ("cu.cuDeviceTotalMem_v2(ob, 0)",),
    "cuDeviceGetPCIBusId": ("cu.cuDeviceGetPCIBusId(ob, 64, 0)",),
    "cuDeviceComputeCapability": ("cu.cuDeviceComputeCapability(ob, ob2, 0)",),
    "cuDevicePrimaryCtxRetain": ("cu.cuDevicePrimaryCtxRetain(ob, 2)",),   # device 2's context becomes active
    "cuDevicePrimaryCtxRelease_v2": ("cu.cuDevicePrimaryCtxRelease_v2(0)",),
    "cuDevicePrimaryCtxSetFlags_v2": ("cu.cuDevicePrimaryCtxSetFlags_v2(0, 0)",),
    "cuCtxGetCurrent": ("cu.cuCtxGetCurrent(ob)",),
    "cuCtxSetCurrent": ("cu.cuCtxSetCurrent(ctx1)", "", "cu.cuCtxSetCurrent(ctx0)"),
    "cuCtxPushCurrent_v2": ("cu.cuCtxPushCurrent_v2(ctx1)", "", "cu.cuCtxPopCurrent_v2(None)"),
    "cuCtxPopCurrent_v2": ("cu.cuCtxPopCurrent_v2(ob)", "cu.cuCtxPushCurrent_v2(ctx1)"),    # ctx0 becomes current
    "cuCtxGetDevice": ("cu.cuCtxGetDevice(ob)",),
    "cuCtxSynchronize": ("cu.cuCtxSynchronize()",),
    "cuCtxGetApiVersion": ("cu.cuCtxGetApiVersion(None, ob)",),
    "cuCtxGetFlags": ("cu.cuCtxGetFlags(ob)",),
    "cuCtxGetId": ("cu.cuCtxGetId(None, ob)",),
    "cuCtxGetStreamPriorityRange": ("cu.cuCtxGetStreamPriorityRange(ob, ob2)",),
    "cuMemGetInfo_v2": ("cu.cuMemGetInfo_v2(ob, ob2)",),
    "cuStreamCreate": ("cu.cuStreamCreate(ob, 0)", "", "rt.cudaStreamDestroy(out_ptr())", OOM),
    "cuStreamCreateWithPriority": ("cu.cuStreamCreateWithPriority(ob, 1, -1)", "", "rt.cudaStreamDestroy(out_ptr())",
                                   OOM),
    "cuStreamDestroy_v2": ("cu.cuStreamDestroy_v2(sd)", "sd = new_stream()"),
    "cuStreamQuery": ("cu.cuStreamQuery(s0)",),
    "cuStreamSynchronize": ("cu.cuStreamSynchronize(s0)",),
    "cuStreamWaitEvent": ("cu.cuStreamWaitEvent(sw, evb, 0)",),      # sw then waits for busy
    "cuStreamGetPriority": ("cu.cuStreamGetPriority(s0, ob)",),
    "cuStreamGetFlags": ("cu.cuStreamGetFlags(s0, ob)",),
    "cuStreamGetId": ("cu.cuStreamGetId(s0, ob)",),
    "cuStreamGetDevice": ("cu.cuStreamGetDevice(s0, ob)",),
    "cuStreamGetCtx": ("cu.cuStreamGetCtx(s0, ob)",),
    "cuStreamGetCtx_v2": ("cu.cuStreamGetCtx_v2(s0, ob, ob2)",),
    "cuStreamIsCapturing": ("cu.cuStreamIsCapturing(s0, ob)",),
    "cuLaunchHostFunc": ("cu.cuLaunchHostFunc(s0, count, None)",),
    "cuLaunchHostFunc_v2": ("cu.cuLaunchHostFunc_v2(s0, count, None, 0)",),
    "cuEventCreate": ("cu.cuEventCreate(ob, 2)", "", "rt.cudaEventDestroy(out_ptr())", OOM),
    "cuEventDestroy_v2": ("cu.cuEventDestroy_v2(ed)", "ed = new_event()"),
    "cuEventRecord": ("cu.cuEventRecord(er, busy)", "er = new_event_on(3)"),     # er then waits for busy
    "cuEventRecordWithFlags": ("cu.cuEventRecordWithFlags(er, busy, 0)", "er = new_event_on(3)"),
    "cuEventQuery": ("cu.cuEventQuery(ev_done)",),
    "cuEventSynchronize": ("cu.cuEventSynchronize(ev_done)",),
    "cuEventElapsedTime_v2": ("cu.cuEventElapsedTime_v2(ob, t0, t1)",),
    "cuGetProcAddress": ("cu.cuGetProcAddress(b'cuInit', ob, 13000, c.c_ulonglong(0))",),
    "cuGetProcAddress_v2": ("cu.cuGetProcAddress_v2(b'cuInit', ob, 13000, c.c_ulonglong(0), ob2)",),
}

SCRIPT = """
import ctypes as c, json, os, threading
rt = c.CDLL({cudart!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({driver!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
rt.accelEmuSetFail.argtypes = [c.c_char_p]
cases = {cases!r}

ob, ob2 = c.create_string_buffer(64), c.create_string_buffer(64)
out_ptr = lambda: c.c_void_p.from_buffer(ob).value
def new_stream():
    p = c.c_void_p(); assert rt.cudaStreamCreate(c.byref(p)) == 0; return p
def new_event(flags=0):
    p = c.c_void_p(); assert rt.cudaEventCreateWithFlags(c.byref(p), flags) == 0; return p
def new_event_on(dev):
    assert rt.cudaSetDevice(dev) == 0
    e = new_event()
    assert rt.cudaSetDevice(0) == 0
    return e
ctx0, ctx1 = c.c_void_p(), c.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(c.byref(ctx1), 1) == 0
assert cu.cuDevicePrimaryCtxRetain(c.byref(ctx0), 0) == 0 and cu.cuCtxSetCurrent(ctx0) == 0
HOSTFN = c.CFUNCTYPE(None, c.c_void_p)
gate, ran = threading.Event(), []
hold, count = HOSTFN(lambda _: gate.wait()), HOSTFN(lambda _: ran.append(1))
assert rt.cudaSetDevice(3) == 0
busy, sw = new_stream(), new_stream()
assert rt.cudaLaunchHostFunc(busy, hold, None) == 0
evb = new_event(2)
assert rt.cudaEventRecord(evb, busy) == 0 and rt.cudaSetDevice(0) == 0
s0 = new_stream()
ev_done, t0, t1 = new_event(2), new_event(), new_event()
assert rt.cudaEventRecord(t0, s0) == rt.cudaEventRecord(t1, s0) == rt.cudaEventRecord(ev_done, s0) == 0

def state():
    dev, cur, flags, act = c.c_int(), c.c_void_p(), c.c_uint(), c.c_int()
    assert rt.cudaStreamSynchronize(s0) == 0               # host functions queued on s0 have run
    active = [cu.cuDevicePrimaryCtxGetState(d, c.byref(flags), c.byref(act)) or act.value for d in range(4)]
    rt.cudaGetDevice(c.byref(dev))
    cu.cuCtxGetCurrent(c.byref(cur))
    return [rt.accelEmuLiveStreams(), rt.accelEmuLiveEvents(), dev.value, cur.value, active,
            rt.cudaStreamQuery(sw), [rt.cudaEventQuery(e) for e in events], len(ran),
            rt.cudaPeekAtLastError(), ob.raw.hex(), ob2.raw.hex()]

got = {{}}
for name, (call, setup, undo) in cases.items():
    events = []
    exec(setup)
    if "er" in globals(): events = [er]
    c.memset(ob, 0xAB, 64); c.memset(ob2, 0xCD, 64)
    before = state()
    armed = rt.accelEmuSetFail(f"{{name}}:1".encode())
    fault = eval(call)
    after = state()
    again = eval(call)
    done = state()
    rt.accelEmuSetFail(None)
    exec(undo)
    globals().pop("er", None)
    got[name] = [armed, fault, before == after, again, after != done, before, after]
gate.set()
assert rt.cudaDeviceSynchronize() == 0
print(json.dumps(got))
"""


@pytest.fixture(scope="module")
def outcomes():
    cases = {name: (case[0], case[1] if len(case) > 1 else "", case[2] if len(case) > 2 else "")
             for name, case in CASES.items()}
    code = SCRIPT.format(cudart=emu.cudart_path(), driver=emu.driver_path(), cases=cases)
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE", "CUDA_VISIBLE_DEVICES")}
    env["ACCEL_EMU_DEVICES"] = "4"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Calls whose success the state above cannot see (every other call's success changes it, which shows
# that the state would see the call had the fault let it through).
NO_VISIBLE_EFFECT = {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxSetFlags_v2", "cuCtxSynchronize", "cuStreamQuery",
                     "cuStreamSynchronize", "cuEventQuery", "cuEventSynchronize"}


@pytest.mark.parametrize("name", list(CASES))
def test_a_driver_fault_fails_the_call_and_changes_nothing(outcomes, name):
    armed, fault, unchanged, again, seen, before, after = outcomes[name]
    expected = CASES[name][3] if len(CASES[name]) > 3 else UNKNOWN
    assert armed == 0, f"{name} cannot be armed"
    assert fault == expected, f"{name} returned {fault} with its fault armed"
    assert unchanged, f"{name}'s fault changed the state: {before} -> {after}"
    assert again == 0, f"{name} failed after its one fault: {again}"
    assert seen == (name not in NO_VISIBLE_EFFECT), f"{name}: the state {'missed' if not seen else 'saw'} its success"


def test_the_cases_cover_every_armable_driver_entry_point():
    text = (REPO / "accel" / "_emu" / "emu_internal.h").read_text()
    block = text[text.index("#define EMU_DRIVER_SYMBOLS(X)"):]
    assert sorted(re.findall(r"X\((\w+)\)", block[:block.index("\n\n")])) == sorted(CASES)


def _run(code, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE", "LD_PRELOAD")}
    full.update(env)
    prelude = textwrap.dedent(f"""
        import ctypes as c, json, os
        rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        rt.accelEmuSetFail.argtypes = [c.c_char_p]
        """)
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], env=full, capture_output=True,
                          text=True, timeout=120, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_driver_faults_from_the_environment_and_through_variants():
    # ACCEL_EMU_FAIL arms driver names like runtime ones; the per-thread-default-stream variants and
    # the pointers cuGetProcAddress hands out count as the entry point they are a variant of
    got = _run("""
        ctx, s, fn = c.c_void_p(), c.c_void_p(), c.c_void_p()
        cu.cuDevicePrimaryCtxRetain(c.byref(ctx), 0); cu.cuCtxSetCurrent(ctx)
        out = [cu.cuStreamCreate(c.byref(s), 0), rt.accelEmuLiveStreams(), cu.cuStreamCreate(c.byref(s), 0),
               rt.accelEmuLiveStreams()]
        out.append(cu.cuStreamQuery_ptsz(None))                                     # 1st cuStreamQuery
        cu.cuGetProcAddress_v2(b"cuStreamQuery", c.byref(fn), 13000, 2, None)
        out.append(c.CFUNCTYPE(c.c_int, c.c_void_p)(fn.value)(None))                # 2nd
        out.append(cu.cuStreamQuery(None))                                          # 3rd: not armed
        out.append(rt.cudaStreamQuery(None))     # the runtime's cudaStreamQuery is a name of its own
        print(json.dumps(out))
        """, ACCEL_EMU_DEVICES="2", ACCEL_EMU_FAIL="cuStreamCreate:1,cuStreamQuery:1,cuStreamQuery:2")
    assert got == [OOM, 0, 0, 1, UNKNOWN, UNKNOWN, 0, 0]


def test_only_entry_points_that_can_fail_are_armable():
    # the unsupported driver stubs always fail; names outside the lists are a malformed spec
    got = _run("""
        print(json.dumps([rt.accelEmuSetFail(n) for n in (b"cuLaunchKernel:1", b"cuStreamQuery_ptsz:1",
                                                            b"cuCtxGetCurrent:1", b"cuEventRecord:2")]))
        """)
    assert got[0] != 0 and got[1] != 0 and got[2:] == [0, 0]



def test_a_context_change_the_runtime_refuses_leaves_the_context_stack_as_it_was():
    # the driver makes the runtime follow the stack's top (cudaSetDevice); when that call fails, the
    # push, pop or set fails with its error and the stack, the popped-out parameter and the runtime's
    # device are as they were
    got = _run("""
        ctx0, ctx1, out = c.c_void_p(), c.c_void_p(), c.c_void_p(0xAB)
        assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(c.byref(ctx0), 0) == 0
        assert cu.cuDevicePrimaryCtxRetain(c.byref(ctx1), 1) == 0
        def device():
            d = c.c_int(); assert rt.cudaGetDevice(c.byref(d)) == 0; return d.value
        def depth():       # pops the whole stack, counting
            n = 0
            while cu.cuCtxPopCurrent_v2(None) == 0: n += 1
            return n
        def refused(call):
            assert rt.accelEmuSetFail(b"cudaSetDevice:1") == 0
            r = call()
            rt.accelEmuSetFail(None)
            return r
        got = [refused(lambda: cu.cuCtxSetCurrent(ctx1)), device(), depth()]        # empty stack
        assert cu.cuCtxPushCurrent_v2(ctx0) == 0
        got += [refused(lambda: cu.cuCtxPushCurrent_v2(ctx1)), device(), depth()]   # [ctx0]
        assert cu.cuCtxPushCurrent_v2(ctx0) == 0 and cu.cuCtxPushCurrent_v2(ctx1) == 0
        got += [refused(lambda: cu.cuCtxPopCurrent_v2(c.byref(out))), out.value, device()]
        got += [refused(lambda: cu.cuCtxSetCurrent(None)), device(), depth()]      # [ctx0, ctx1]
        print(json.dumps(got))
        """, ACCEL_EMU_DEVICES="2")
    assert got == [UNKNOWN, 0, 0, UNKNOWN, 0, 1, UNKNOWN, 0xAB, 1, UNKNOWN, 1, 2]

@_fx.needs_cuda_core
def test_cuda_core_sees_a_driver_fault_as_a_cuda_error():
    code = f"""
import json, ctypes as c
import accel.emu; accel.emu.activate(devices=2)
from cuda.core import Device
rt = c.CDLL({emu.cudart_path()!r})                  # the stand-in activate() loaded
rt.accelEmuSetFail.argtypes = [c.c_char_p]
live = lambda: (rt.accelEmuLiveStreams(), rt.accelEmuLiveEvents())
d = Device(1); d.set_current()
out = []
for name, make in (("cuStreamCreateWithPriority", d.create_stream), ("cuEventCreate", d.create_event)):
    # the driver entry points cuda.core creates streams and events with
    before = live()
    assert rt.accelEmuSetFail(f"{{name}}:1".encode()) == 0
    try:
        make()
        out.append(["no error"])
    except Exception as e:
        out.append([type(e).__name__, str(e).split(":")[0], live() == before])
    obj = make()                                    # the next call succeeds
    out[-1].append(live() != before)
    rt.accelEmuSetFail(None)
    obj.close()
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE", "LD_PRELOAD",
                                                            "ACCEL_CUDART", "ACCEL_EMU_DEVICES")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    stream, event = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stream == ["CUDAError", "CUDA_ERROR_OUT_OF_MEMORY", True, True]
    # cuda.core 1.2 turns a failed cuEventCreate into RuntimeError("Failed to create CUDA event")
    assert event[0] != "no error" and event[2:] == [True, True]
