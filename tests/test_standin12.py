"""The libcudart.so.12 stand-in (torch cu12 builds): exports and version node against the committed list
of torch 2.8 cu12's imports, the CUDA 12 cudaDeviceProp layout and ABI, one emulator state shared with
the libcudart.so.13 stand-in and accel, a C program linked against it by soname, and `python -m accel emu`.

Each check runs in a fresh interpreter (a stand-in loaded into the test process would be found by every
later dlopen of its soname).
"""
import importlib.util
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile

import pytest

from accel import emu

REPO = pathlib.Path(__file__).resolve().parent.parent
IMPORTS = REPO / "accel" / "_emu" / "torch_cudart12_imports.txt"

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = [
    _fx.needs_standins,
    pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"),
                       reason=f"the libcudart.so.12 stand-in is built for x86_64 and aarch64, not {platform.machine()}"),
]

# Loads the stand-ins as accel.emu does: `rt13`, `rt12`, `cu` and `c` (ctypes) in scope.
PRELUDE = f"""
import ctypes, json, os, sys
rt13 = ctypes.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = ctypes.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
rt12 = ctypes.CDLL({emu.cudart12_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
c = ctypes
"""

PROPS12_SIZE = 1032     # sizeof(cudaDeviceProp) in CUDA 12 (13: 1008)


def _names():
    return [line.strip() for line in IMPORTS.read_text().splitlines() if line.strip() and not line.startswith("#")]


_run, _json = _fx.runners(PRELUDE)


def test_committed_import_list_is_well_formed():
    text = IMPORTS.read_text()
    assert "torch-2.8.0-" in text.splitlines()[1]      # the header names the wheel it came from
    names = _names()
    assert len(names) == len(set(names)) == 88 and names == sorted(names, key=lambda n: n.split("@")[0])
    assert all(n.endswith("@libcudart.so.12") and n.split("@")[0].isidentifier() for n in names)
    # the entry points whose CUDA 12 ABI the stand-in converts are among them
    for name in ("cudaGetDeviceProperties_v2", "cudaStreamGetCaptureInfo_v2", "cudaGetDriverEntryPoint",
                 "cudaRuntimeGetVersion"):
        assert f"{name}@libcudart.so.12" in names


def test_exports_every_torch_cu12_import_with_its_version(subprocess_python):
    names = [n.split("@")[0] for n in _names()]
    got = _json(subprocess_python, f"""
libc = c.CDLL(None)
libc.dlvsym.restype = c.c_void_p
libc.dlvsym.argtypes = [c.c_void_p, c.c_char_p, c.c_char_p]
v12 = lambda n: libc.dlvsym(rt12._handle, n.encode(), b"libcudart.so.12")
v13 = lambda n: libc.dlvsym(rt12._handle, n.encode(), b"libcudart.so.13")   # through its dependency
print(json.dumps([[n for n in {names!r} if not v12(n)], v13("cudaGetDriverEntryPoint"),
                  v12("cudaGetDeviceProperties_v2") != v13("cudaGetDeviceProperties_v2")]))
""")
    assert got == [[], None, True]      # no CUDA 13 name stands in for a CUDA 12 one, and vice versa


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
def test_soname_version_node_and_dependency():
    dyn = subprocess.run(["readelf", "-dW", emu.cudart12_path()], capture_output=True, text=True).stdout
    assert "Library soname: [libcudart.so.12]" in dyn
    assert "Shared library: [libcudart.so.13]" in dyn and "Library runpath: [$ORIGIN]" in dyn
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", emu.cudart12_path()], capture_output=True,
                          text=True).stdout.splitlines()
    exported = [line.split()[-1] for line in syms
                if line.split()[-1:] and " UND " not in line and " ABS " not in line
                and (" GLOBAL " in line or " WEAK " in line) and " DEFAULT " in line]
    assert exported and all(s.endswith("@@libcudart.so.12") for s in exported), \
        [s for s in exported if not s.endswith("@@libcudart.so.12")][:5]
    assert {n.replace("@", "@@") for n in _names()} <= set(exported)
    # it keeps no emulator of its own: every symbol it needs (beyond the toolchain's weak hooks) is the 13 stand-in's
    imported = [line.split()[7] for line in syms if " UND " in line and " GLOBAL " in line]
    assert imported and all(s.endswith("@libcudart.so.13") or "@GLIBC_" in s for s in imported), imported
    assert "cudaGetDeviceProperties@libcudart.so.13" in imported


def test_device_properties_fill_the_cuda12_layout(subprocess_python):
    got = _json(subprocess_python, f"""
buf = c.create_string_buffer(2048)
ok = rt12.cudaGetDeviceProperties_v2(buf, 1)
i32 = lambda off: int.from_bytes(buf.raw[off:off + 4], "little", signed=True)
def attr(a):
    v = c.c_int(); rt13.cudaDeviceGetAttribute(c.byref(v), a, 1); return v.value
print(json.dumps({{"ok": ok, "name": buf.raw[:256].split(b"\\0")[0].decode(),
                  "total": int.from_bytes(buf.raw[288:296], "little"), "warp": [i32(308), attr(10)],
                  "clock": [i32(348), attr(13)], "major": [i32(360), attr(75)], "minor": [i32(364), attr(76)],
                  "sms": [i32(388), attr(16)], "membus": [i32(612), attr(37)], "memclock": [i32(608), attr(36)],
                  "threads_per_sm": [i32(624), attr(39)], "tail": buf.raw[{PROPS12_SIZE}:].count(0)}}))
""")
    assert got["ok"] == 0 and got["name"].startswith("Emulated NVIDIA H100")
    assert got["total"] == 80 << 30
    for field in ("warp", "clock", "major", "minor", "sms", "membus", "memclock", "threads_per_sm"):
        assert got[field][0] == got[field][1], (field, got[field])
    assert [got["major"][0], got["minor"][0], got["sms"][0], got["warp"][0]] == [9, 0, 132, 32]
    assert min(got[f][0] for f in ("clock", "membus", "memclock", "threads_per_sm")) > 0
    assert got["tail"] == 2048 - PROPS12_SIZE       # nothing written past the CUDA 12 struct


def test_device_properties_errors_are_the_runtimes(subprocess_python):
    got = _json(subprocess_python, """
buf = c.create_string_buffer(2048)
out = [rt12.cudaGetDeviceProperties_v2(None, 0), rt12.cudaGetLastError(), rt12.cudaGetDeviceProperties_v2(buf, 4),
       rt13.cudaGetLastError(), buf.raw.count(0)]
print(json.dumps(out))
""")
    assert got == [1, 1, 101, 101, 2048]        # the last error is the one thread state both libraries share


def test_a_fault_inside_the_properties_conversion_fails_the_call(subprocess_python):
    # the fields CUDA 13 removed are read through cudaDeviceGetAttribute: a fault armed there fails the whole
    # call (buffer untouched, the fault the last error), not a success with a zeroed field and a stale last
    # error; the converted entry points count as the CUDA 13 ones they call
    got = _json(subprocess_python, """
rt13.accelEmuSetFail.argtypes = [c.c_char_p]
buf, fn = c.create_string_buffer(2048), c.c_void_p()
rt13.accelEmuSetFail(b"cudaDeviceGetAttribute:1")
out = [rt12.cudaGetDeviceProperties_v2(buf, 0), buf.raw.count(0), rt12.cudaGetLastError()]
out += [rt12.cudaGetDeviceProperties_v2(buf, 0), rt12.cudaGetLastError()]
rt13.accelEmuSetFail(b"cudaGetDriverEntryPointByVersion:1")
out += [rt12.cudaGetDriverEntryPoint(b"cuInit", c.byref(fn), 0, None), fn.value, rt12.cudaGetLastError(),
        rt12.cudaGetDriverEntryPoint(b"cuInit", c.byref(fn), 0, None), fn.value is not None]
print(json.dumps(out))
""")
    assert got == [999, 2048, 999, 0, 0] + [999, None, 999, 0, True]


def test_pointer_attributes_stay_in_the_cuda12_struct(subprocess_python):
    # CUDA 13's struct cudaPointerAttributes is 64 bytes longer than CUDA 12's (24): the 13 stand-in writes all
    # 88 (the reserved bytes zeroed), the 12 stand-in converts and writes CUDA 12's 24 alone
    got = _json(subprocess_python, """
buf, buf13, p = c.create_string_buffer(b"\\xab" * 128, 128), c.create_string_buffer(b"\\xab" * 128, 128), c.c_void_p()
out = [rt12.cudaSetDevice(2), rt12.cudaMalloc(c.byref(p), 64), rt12.cudaPointerGetAttributes(buf, c.c_void_p(p.value + 8))]
out += [int.from_bytes(buf.raw[0:4], "little"), int.from_bytes(buf.raw[4:8], "little"),
        int.from_bytes(buf.raw[8:16], "little") == p.value + 8, buf.raw[24:] == b"\\xab" * 104]
out += [rt13.cudaPointerGetAttributes(buf13, c.c_void_p(p.value + 8)), buf13.raw[:24] == buf.raw[:24],
        buf13.raw[24:88] == bytes(64), buf13.raw[88:] == b"\\xab" * 40]
out += [rt12.cudaPointerGetAttributes(None, p), rt12.cudaGetLastError(), rt12.cudaFree(p)]
print(json.dumps(out))
""")
    assert got == [0, 0, 0, 2, 2, True, True, 0, True, True, True, 1, 1, 0]


def test_versions(subprocess_python):
    got = _json(subprocess_python, """
v = c.c_int()
out = []
for f in (rt12.cudaRuntimeGetVersion, rt13.cudaRuntimeGetVersion, rt12.cudaDriverGetVersion, cu.cuDriverGetVersion):
    out += [f(c.byref(v)), v.value]
out += [rt12.cudaRuntimeGetVersion(None), rt12.cudaGetLastError()]
print(json.dumps(out))
""")
    assert got == [0, 12080, 0, 13000, 0, 13000, 0, 13000, 1, 1]


def test_capture_info_v2_and_driver_entry_points_in_the_cuda12_abi(subprocess_python):
    got = _json(subprocess_python, """
s = c.c_void_p(); rt12.cudaStreamCreate(c.byref(s))
st, cid, graph, deps, n = c.c_int(7), c.c_ulonglong(9), c.c_void_p(5), c.c_void_p(6), c.c_size_t(3)
cap = [rt12.cudaStreamGetCaptureInfo_v2(s, c.byref(st), c.byref(cid), c.byref(graph), c.byref(deps), c.byref(n)),
       st.value, cid.value, graph.value, deps.value, n.value,
       rt12.cudaStreamGetCaptureInfo_v2(c.c_void_p(0x5e00ffffff30), c.byref(st), None, None, None, None),
       rt12.cudaStreamGetCaptureInfo_v2(s, None, None, None, None, None)]
addr = lambda f: c.cast(f, c.c_void_p).value
fn, status = c.c_void_p(), c.c_int(-1)
drv = [rt12.cudaGetDriverEntryPoint(b"cuStreamGetCtx", c.byref(fn), 0, c.byref(status)), status.value,
       fn.value == addr(cu.cuStreamGetCtx_v2)]                  # at 12080: the 12.5 ABI of cuStreamGetCtx
drv += [rt12.cudaGetDriverEntryPoint(b"cuStreamQuery", c.byref(fn), 2, None), fn.value == addr(cu.cuStreamQuery_ptsz)]
drv += [rt12.cudaGetDriverEntryPoint(b"cuNoSuchFunction", c.byref(fn), 0, c.byref(status)), status.value, fn.value]
drv += [rt12.cudaGetDriverEntryPoint(None, c.byref(fn), 0, None)]
print(json.dumps(cap + drv))
""")
    assert got == [0, 0, 0, None, None, 0, 400, 1] + [0, 0, True, 0, True, 0, 1, None, 1]


def test_handles_made_through_one_library_work_through_the_other_and_accel(subprocess_python):
    # one emulator state: the 12 stand-in makes streams and events, the 13 stand-in and accel use them
    got = _json(subprocess_python, """
import accel.emu
accel.emu.activate()
import accel.cuda as ac
dev = c.c_int()
s12, e12 = c.c_void_p(), c.c_void_p()
rt12.cudaSetDevice(2)
rt12.cudaStreamCreate(c.byref(s12)); rt12.cudaEventCreate(c.byref(e12))
out = {"device": [ac.current_device(), rt13.cudaGetDevice(c.byref(dev)), dev.value]}
out["s12_via_13"] = [rt13.cudaEventRecord(e12, s12), rt13.cudaStreamSynchronize(s12), rt13.cudaEventQuery(e12),
                     rt13.cudaStreamGetDevice(s12, c.byref(dev)), dev.value]
ext = ac.ExternalStream(s12.value)
out["s12_via_accel"] = [ext.device_index, ext.query()]
a = ac.Stream(device=1)
ev = ac.Event(); ev.record(a)
out["accel_via_12"] = [rt12.cudaStreamWaitEvent(c.c_void_p(a.cuda_stream), c.c_void_p(ev.cuda_event), 0),
                       rt12.cudaStreamQuery(c.c_void_p(a.cuda_stream)), rt12.cudaEventSynchronize(c.c_void_p(ev.cuda_event)),
                       rt12.cudaStreamGetDevice(c.c_void_p(a.cuda_stream), c.byref(dev)), dev.value]
ac.set_device(3)
out["accel_set"] = [rt12.cudaGetDevice(c.byref(dev)), dev.value]
before = rt13.accelEmuLiveStreams()
rt12.cudaStreamDestroy(s12)
out["destroyed"] = [before - rt13.accelEmuLiveStreams(), rt13.cudaStreamQuery(s12)]
print(json.dumps(out))
""")
    assert got["device"] == [2, 0, 2]
    assert got["s12_via_13"] == [0, 0, 0, 0, 2]
    assert got["s12_via_accel"] == [2, True]
    assert got["accel_via_12"] == [0, 0, 0, 0, 1]
    assert got["accel_set"] == [0, 3]
    assert got["destroyed"] == [1, 400]


def test_the_registration_path_forwards_to_the_emulator(subprocess_python):
    # a cu12 library's fatbin registered through libcudart.so.12 reaches libcudart.so.13's registrations: its
    # SASS-only kernel is refused by name (attributes and launches alike), the last error shared
    fatbin = str(pathlib.Path(__file__).with_name("data") / "fatbin" / "add_sass.fatbin")
    proc = _run(subprocess_python, f"""
class dim3(c.Structure): _fields_ = [("x", c.c_uint), ("y", c.c_uint), ("z", c.c_uint)]
class Wrapper(c.Structure): _fields_ = [("magic", c.c_uint), ("version", c.c_uint), ("data", c.c_void_p), ("file", c.c_void_p)]
blob = open({fatbin!r}, "rb").read()
buf = c.create_string_buffer(blob, len(blob))
w = Wrapper(0x466243b1, 1, c.cast(buf, c.c_void_p), None)
rt12.__cudaRegisterFatBinary.restype = c.c_void_p
h = c.c_void_p(rt12.__cudaRegisterFatBinary(c.byref(w)))
stub = c.create_string_buffer(8)
rt12.__cudaRegisterFunction(h, stub, b"_Z3addPKfS0_Pfi", b"_Z3addPKfS0_Pfi", -1, None, None, None, None, None)
rt12.__cudaRegisterFatBinaryEnd(h)
attrs = (c.c_char * 256)()
rt12.cudaLaunchKernel.argtypes = [c.c_void_p, dim3, dim3, c.c_void_p, c.c_size_t, c.c_void_p]
out = [rt12.cudaFuncGetAttributes(attrs, stub), rt12.cudaGetLastError(),
       rt12.cudaLaunchKernel(stub, dim3(1, 1, 1), dim3(1, 1, 1), None, 0, None), rt13.cudaGetLastError()]
rt12.__cudaUnregisterFatBinary(h)
print(json.dumps(out))
""")
    assert json.loads(proc.stdout) == [209, 209, 209, 209]
    assert len(proc.stderr.splitlines()) == 1 and "_Z3addPKfS0_Pfi is SASS only" in proc.stderr


# --------------------------------------------------------------- a C program linked by soname

PROGRAM = r"""
#include <stdio.h>
#include <string.h>
typedef void *stream_t, *event_t;
int cudaRuntimeGetVersion(int *);
int cudaGetDeviceCount(int *);
int cudaSetDevice(int);
int cudaStreamCreateWithFlags(stream_t *, unsigned);
int cudaStreamDestroy(stream_t);
int cudaStreamSynchronize(stream_t);
int cudaStreamWaitEvent(stream_t, event_t, unsigned);
int cudaStreamGetDevice(stream_t, int *);
int cudaStreamGetCaptureInfo_v2(stream_t, int *, unsigned long long *, void **, const void **, size_t *);
int cudaEventCreateWithFlags(event_t *, unsigned);
int cudaEventRecord(event_t, stream_t);
int cudaEventQuery(event_t);
int cudaEventElapsedTime(float *, event_t, event_t);
int cudaEventDestroy(event_t);
int cudaGetDeviceProperties_v2(void *, int);
typedef struct { unsigned x, y, z; } dim3;
int cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, stream_t);
const char *cudaGetErrorName(int);

#define CHECK(call) do { int r_ = (call); if (r_) { printf("FAIL %s -> %d\n", #call, r_); return 1; } } while (0)

int main(void)
{
    int version = 0, n = -1, sdev = -1, capturing = -1, sms, major;
    unsigned char props[1032 + 64];
    stream_t s, t;
    event_t a, b;
    float ms = -1;
    memset(props, 0xab, sizeof props);
    CHECK(cudaRuntimeGetVersion(&version));
    CHECK(cudaGetDeviceCount(&n));
    CHECK(cudaSetDevice(1));
    CHECK(cudaStreamCreateWithFlags(&s, 1));
    CHECK(cudaStreamCreateWithFlags(&t, 0));
    CHECK(cudaStreamGetDevice(s, &sdev));
    CHECK(cudaEventCreateWithFlags(&a, 0));
    CHECK(cudaEventCreateWithFlags(&b, 0));
    CHECK(cudaEventRecord(a, s));
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaStreamWaitEvent(t, b, 0));
    CHECK(cudaStreamSynchronize(t));
    CHECK(cudaEventQuery(b));
    CHECK(cudaEventElapsedTime(&ms, a, b));
    CHECK(cudaStreamGetCaptureInfo_v2(s, &capturing, NULL, NULL, NULL, NULL));
    CHECK(cudaGetDeviceProperties_v2(props, 0));
    memcpy(&major, props + 360, sizeof major);
    memcpy(&sms, props + 388, sizeof sms);
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaStreamDestroy(t));
    printf("runtime %d devices %d stream-device %d capturing %d elapsed %d cc %d sms %d past-end %02x kernel %s\n",
           version, n, sdev, capturing, ms >= 0, major, sms, props[1032], cudaGetErrorName(cudaLaunchKernel((const void *)main, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0, NULL)));
    return 0;
}
"""

EXPECTED = ("runtime 12080 devices 3 stream-device 1 capturing 0 elapsed 1 cc 9 sms 132 past-end ab "
            "kernel cudaErrorInvalidDeviceFunction")


def _build(directory, *extra):
    src, exe = directory / "prog12.c", directory / "prog12"
    src.write_text(PROGRAM)
    build = subprocess.run(["cc", "-o", str(exe), str(src), f"-L{emu.standin_dir()}", "-l:libcudart.so.12", *extra],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    return exe


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "CUDA_VISIBLE_DEVICES", "LD_PRELOAD")}
    env.update(extra)
    return env


needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) to build the test program")


@needs_cc
def test_c_program_linked_by_soname(tmp_path):
    exe = _build(tmp_path, f"-Wl,-rpath,{emu.standin_dir()}")
    if shutil.which("readelf"):
        dyn = subprocess.run(["readelf", "-dW", "--dyn-syms", str(exe)], capture_output=True, text=True).stdout
        assert "Shared library: [libcudart.so.12]" in dyn and "libcudart.so.13" not in dyn
        assert "cudaStreamCreateWithFlags@libcudart.so.12" in dyn
    proc = subprocess.run([str(exe)], env=_clean_env(ACCEL_EMU_DEVICES="3"), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == EXPECTED


@needs_cc
def test_accel_emu_runs_a_cuda12_program(tmp_path):
    exe = _build(tmp_path)      # no rpath, as a CUDA program has: the preload supplies libcudart.so.12
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "3", "--", str(exe)],
                          env=_clean_env(), capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == EXPECTED


def test_accel_emu_preloads_it_behind_the_cuda13_runtime():
    env = emu.environ(base={})
    assert env["LD_PRELOAD"].split()[:4] == [emu.cudart_path(), emu.driver_path(), emu.cudart12_path(),
                                             emu.nvml_path()]
    code = ("import ctypes, accel.emu, accel.cuda as ac; rt = ctypes.CDLL('libcudart.so.12'); v = ctypes.c_int(); "
            "rt.cudaRuntimeGetVersion(ctypes.byref(v)); p = accel.emu.activate(); "
            "print(v.value, ac.device_count(), p == accel.emu.cudart_path())")
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "2", "--", sys.executable, "-c", code],
                          env=_clean_env(), capture_output=True, text=True, timeout=120, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["12080", "2", "True"]     # activate() counts the 12 stand-in as its own


# --------------------------------------------------------------- optional: torch's cu12 wheel

try:
    import torch
    TORCH_CU12 = (torch.version.cuda or "").startswith("12.")
    WHY = f"torch {torch.__version__} is not a CUDA 12 build (CUDA {torch.version.cuda})"
except ImportError:
    TORCH_CU12, WHY = False, "torch is not installed"


@pytest.mark.skipif(not TORCH_CU12, reason=f"needs torch's cu12 wheel ({WHY})")
def test_torch_cu12_reads_the_cuda12_properties():
    code = ("import torch; p = torch.cuda.get_device_properties(1); "
            "print(torch.cuda.device_count(), p.major, p.minor, p.multi_processor_count, p.name)")
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "3", "--", sys.executable, "-c", code],
                          env=_clean_env(), capture_output=True, text=True, timeout=300, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3 9 0 132 Emulated NVIDIA H100 80GB HBM3 (accel emu)"


# --------------------------------------------------------------- tools/cudart_imports.py

@pytest.mark.skipif(shutil.which("readelf") is None or shutil.which("nm") is None, reason="binutils is not installed")
def test_the_import_list_tool_reads_a_wheels_libraries(tmp_path):
    # a wheel-shaped zip whose torch/lib/ holds a library importing versioned runtime symbols (the 12 stand-in,
    # which imports the 13 stand-in's): the tool lists them as nm sees them, under a header naming both
    import zipfile
    wheel = tmp_path / "torch-0.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(emu.cudart12_path(), "torch/lib/libfake_cuda.so")
        zf.write(emu.cudart12_path(), "torch/bin/libnot_a_torch_lib.so")     # outside torch/lib/: not read
        zf.writestr("torch/lib/README.txt", "not a library")
    out = tmp_path / "imports.txt"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "cudart_imports.py"), str(wheel),
                           "--soname", "libcudart.so.13", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    nm = subprocess.run(["nm", "-D", "--undefined-only", emu.cudart12_path()], capture_output=True, text=True).stdout
    expected = sorted({line.split()[-1] for line in nm.splitlines() if line.endswith("@libcudart.so.13")},
                      key=lambda n: n.split("@")[0])
    lines = out.read_text().splitlines()
    assert lines[:3] == ["# Runtime symbols (version libcudart.so.13) imported by the CUDA libraries of",
                         f"# {wheel.name}: libfake_cuda.so.", f"# {len(expected)} names; produced by tools/cudart_imports.py."]
    assert lines[3:] == expected and "cudaGetDeviceProperties@libcudart.so.13" in expected
    none = subprocess.run([sys.executable, str(REPO / "tools" / "cudart_imports.py"), str(wheel)],
                          capture_output=True, text=True)       # nothing imports from libcudart.so.12
    assert none.returncode == 1 and "no library under torch/lib/ imports symbols of version libcudart.so.12" in none.stderr
