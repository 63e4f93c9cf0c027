"""The emulator's NVML (accel/_emu/emu_nvml.c) and its libnvidia-ml.so.1 stand-in.

Every entry point is driven through ctypes in a fresh process (NVML's init count is process state): before
nvmlInit it returns NVML_ERROR_UNINITIALIZED, after it a valid call succeeds, each NULL pointer and each
bad handle is NVML_ERROR_INVALID_ARGUMENT, a short buffer NVML_ERROR_INSUFFICIENT_SIZE, a wrong struct
version NVML_ERROR_ARGUMENT_VERSION_MISMATCH, and after the last nvmlShutdown it is uninitialised again;
no call writes its outputs unless it succeeds; a fault injected by name (ACCEL_EMU_FAIL / accelEmuSetFail)
makes each entry point return NVML_ERROR_UNKNOWN and change nothing.  Then NVML agrees with the runtime (memory, devices under
CUDA_VISIBLE_DEVICES), and the peers read it: nvidia-ml-py (pynvml), cuda.core's ``system``, torch's
paths through accel's own NVML functions.  The peer tests skip when the peer is not installed.
"""
import ctypes
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from accel import _lib, emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
needs_standins, needs_cuda_core = _fx.needs_standins, _fx.needs_cuda_core

needs_emu = pytest.mark.skipif(not os.path.exists(_lib.emu_path()), reason="no emulator in this install (-Dnative=false)")
try:
    import pynvml  # noqa: F401  (nvidia-ml-py)
    HAVE_PYNVML = True
except ImportError:
    HAVE_PYNVML = False
needs_pynvml = pytest.mark.skipif(not HAVE_PYNVML, reason="nvidia-ml-py is not installed")

CLEAN = {"ACCEL_EMU_TRACE": None, "ACCEL_EMU_FAIL": None, "ACCEL_EMU_MEMORY": None, "CUDA_VISIBLE_DEVICES": None,
         "ACCEL_EMU_PROFILE": None, "ACCEL_NVML": None, "LD_PRELOAD": None}


def _json(subprocess_python, code, **env):
    proc = subprocess_python(code, env={**CLEAN, **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- every entry point: argument checks ---------------------------------------------------------------------

# Each entry point with its arguments: "h" a device handle, "u" / "i" / "ull" an out value, ("buf", n) a
# buffer and its length, ("val", n) an unsigned by value, ("str", s) a C string, "hout" an out handle,
# ("struct", name) a versioned struct, "procs" a count pointer and an array; then the code a valid call
# returns on this machine's device 2 (a t4: no MIG, no fan).
ENTRY_POINTS = """
nvmlSystemGetDriverVersion      buf80
nvmlSystemGetNVMLVersion        buf80
nvmlSystemGetDriverBranch       branch val80
nvmlSystemGetProcessName        pid buf256
nvmlDeviceGetCount              u
nvmlDeviceGetCount_v2           u
nvmlDeviceGetHandleByIndex      val2 hout
nvmlDeviceGetHandleByIndex_v2   val2 hout
nvmlDeviceGetHandleByUUID       uuid hout
nvmlDeviceGetHandleByPciBusId   busid hout
nvmlDeviceGetHandleByPciBusId_v2 busid hout
nvmlDeviceGetIndex              h u
nvmlDeviceGetName               h buf96
nvmlDeviceGetUUID               h buf96
nvmlDeviceGetSerial             h buf30
nvmlDeviceGetMinorNumber        h u
nvmlDeviceGetBrand              h i
nvmlDeviceGetArchitecture       h u
nvmlDeviceGetCudaComputeCapability h i i
nvmlDeviceGetNumGpuCores        h u
nvmlDeviceGetMemoryInfo         h mem1
nvmlDeviceGetMemoryInfo_v2      h mem2
nvmlDeviceGetComputeRunningProcesses h procs
nvmlDeviceGetComputeRunningProcesses_v2 h procs
nvmlDeviceGetComputeRunningProcesses_v3 h procs
nvmlDeviceGetGraphicsRunningProcesses h procs
nvmlDeviceGetGraphicsRunningProcesses_v2 h procs
nvmlDeviceGetGraphicsRunningProcesses_v3 h procs
nvmlDeviceGetMPSComputeRunningProcesses_v3 h procs
nvmlDeviceGetUtilizationRates   h util
nvmlDeviceGetTemperature        h val0 u
nvmlDeviceGetTemperatureV       h temp
nvmlDeviceGetPowerUsage         h u
nvmlDeviceGetPowerManagementLimit h u
nvmlDeviceGetPowerManagementDefaultLimit h u
nvmlDeviceGetEnforcedPowerLimit h u
nvmlDeviceGetFanSpeed           h u                 3
nvmlDeviceGetNumFans            h u
nvmlDeviceGetClockInfo          h val1 u
nvmlDeviceGetMaxClockInfo       h val2 u
nvmlDeviceGetClock              h val0 val3 u
nvmlDeviceGetPerformanceState   h i
nvmlDeviceGetCurrentClocksEventReasons h ull
nvmlDeviceGetSupportedClocksEventReasons h ull
nvmlDeviceGetPciInfo_v3         h pci
nvmlDeviceGetPciInfoExt         h pciext
nvmlDeviceGetCurrPcieLinkGeneration h u
nvmlDeviceGetMaxPcieLinkGeneration h u
nvmlDeviceGetGpuMaxPcieLinkGeneration h u
nvmlDeviceGetCurrPcieLinkWidth  h u
nvmlDeviceGetMaxPcieLinkWidth   h u
nvmlDeviceGetComputeMode        h i
nvmlDeviceGetPersistenceMode    h i
nvmlDeviceGetDisplayMode        h i
nvmlDeviceGetDisplayActive      h i
nvmlDeviceIsMigDeviceHandle     h u
nvmlDeviceGetEccMode            h i i
nvmlDeviceGetMigMode            h u u               3
nvmlDeviceGetModuleId           h u
nvmlDeviceGetNumaNodeId         h u                 3
nvmlDeviceGetAutoBoostedClocksEnabled h i i         3
nvmlDeviceGetMaxCustomerBoostClock h val0 u
nvmlDeviceGetMinMaxClockOfPState h val1 val0 u u
nvmlDeviceGetPcieReplayCounter  h u
nvmlDeviceGetPcieThroughput     h val1 u
nvmlDeviceGetMarginTemperature  h margin
nvmlDeviceGetMaxMigDeviceCount  h u
nvmlDeviceGetP2PStatus          h h val0 i
nvmlDeviceGetSupportedPerformanceStates h buf64
nvmlDeviceGetDynamicPstatesInfo h dyn
nvmlDeviceGetClockOffsets       h offsets
nvmlDeviceGetTopologyCommonAncestor h h i
nvmlDeviceGetTopologyNearestGpus h val40 procs
nvmlSystemGetTopologyGpuSet     val0 procs
nvmlDeviceGetCpuAffinityWithinScope h cpuset val0
nvmlDeviceGetCpuAffinity        h cpuset
nvmlDeviceGetMemoryAffinity     h cpuset val1
nvmlDeviceSetPersistenceMode    h val0              4
nvmlDeviceGetSupportedEventTypes h ull
nvmlEventSetCreate              hout
"""

SWEEP = r"""
import ctypes as c, json, os
lib = c.CDLL(os.environ["NVML_LIB"])
lib.nvmlErrorString.restype = c.c_char_p
U, I, ULL = c.c_uint, c.c_int, c.c_ulonglong

class Mem1(c.Structure): _fields_ = [("total", ULL), ("free", ULL), ("used", ULL)]
class Mem2(c.Structure): _fields_ = [("version", U), ("total", ULL), ("reserved", ULL), ("free", ULL), ("used", ULL)]
class Util(c.Structure): _fields_ = [("gpu", U), ("memory", U)]
class Temp(c.Structure): _fields_ = [("version", U), ("sensorType", I), ("temperature", I)]
class Pci(c.Structure): _fields_ = [("busIdLegacy", c.c_char * 16), ("domain", U), ("bus", U), ("device", U),
                                    ("pciDeviceId", U), ("pciSubSystemId", U), ("busId", c.c_char * 32)]
class PciExt(c.Structure): _fields_ = [("version", U), ("domain", U), ("bus", U), ("device", U), ("pciDeviceId", U),
                                       ("pciSubSystemId", U), ("baseClass", U), ("subClass", U), ("busId", c.c_char * 32)]
class Margin(c.Structure): _fields_ = [("version", U), ("margin", I)]
class Branch(c.Structure): _fields_ = [("version", U), ("branch", c.c_char * 80)]
class Proc(c.Structure): _fields_ = [("pid", U), ("used", ULL), ("gi", U), ("ci", U)]
class Offsets(c.Structure): _fields_ = [("version", U), ("type", I), ("pstate", I), ("offset", I), ("min", I), ("max", I)]
class Dyn(c.Structure): _fields_ = [("flags", U), ("utilization", U * 32)]
VERSIONED = {"mem2": (Mem2, 0x02000028), "temp": (Temp, 0x0100000C), "pciext": (PciExt, 0x01000040),
             "branch": (Branch, 0x01000054), "margin": (Margin, 0x01000008), "offsets": (Offsets, 0x01000018)}
PLAIN = {"mem1": Mem1, "util": Util, "pci": Pci, "dyn": Dyn}

hpos = []     # where build() put the handles

def build(tokens, handle, uuid, busid):
    # [(ctypes args, pointer positions, buffer-length position or None, struct-version position or None)]
    args, ptrs, short, version = [], [], None, None
    hpos.clear()
    for t in tokens:
        if t == "h":
            hpos.append(len(args)); args.append(c.c_void_p(handle))
        elif t in ("u", "i", "ull"):
            ptrs.append(len(args)); args.append(c.byref({"u": U, "i": I, "ull": ULL}[t](0xA5A5)))
        elif t == "hout":
            ptrs.append(len(args)); args.append(c.byref(c.c_void_p(0)))
        elif t.startswith("buf"):
            n = int(t[3:]); ptrs.append(len(args)); args.append(c.create_string_buffer(n)); short = len(args)
            args.append(U(n))
        elif t.startswith("val"):
            args.append(U(int(t[3:])))
        elif t == "pid":
            args.append(U(os.getpid()))
        elif t == "uuid":
            ptrs.append(len(args)); args.append(c.c_char_p(uuid))
        elif t == "busid":
            ptrs.append(len(args)); args.append(c.c_char_p(busid))
        elif t in VERSIONED:
            cls, v = VERSIONED[t]; s = cls(); s.version = v; ptrs.append(len(args)); version = len(args)
            args.append(c.byref(s))
        elif t in PLAIN:
            ptrs.append(len(args)); args.append(c.byref(PLAIN[t]()))
        elif t == "procs":
            ptrs.append(len(args)); args.append(c.byref(U(4))); args.append((Proc * 4)())
        elif t == "cpuset":                  # a word count, then the words
            args.append(U(2)); ptrs.append(len(args)); args.append((c.c_ulong * 2)())
        else:
            raise AssertionError(t)
    return args, ptrs, short, version

specs = [ln.split() for ln in os.environ["ENTRY_POINTS"].strip().splitlines()]
FAULT_ONLY = ["nvmlDeviceClearFieldValues", "nvmlDeviceGetFieldValues", "nvmlDeviceRegisterEvents", "nvmlEventSetFree",
              "nvmlEventSetWait_v2", "nvmlSystemEventSetCreate", "nvmlSystemEventSetFree", "nvmlSystemEventSetWait",
              "nvmlSystemGetCudaDriverVersion", "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemRegisterEvents"]
out = {"uninit": {}, "ok": {}, "null": {}, "badhandle": {}, "short": {}, "version": {}, "after": {}}

def objects(args):
    # the ctypes objects an entry point may write: out values, buffers, structs, arrays
    objs = []
    for a in args:
        obj = getattr(a, "_obj", a)
        if isinstance(obj, (c.Structure, c.Array, c._SimpleCData)) and not isinstance(obj, (c.c_char_p, c.c_void_p)):
            objs.append(obj)
    return objs

wrote = []

def call(name, args, expect_failure=True):
    before = [bytes(c.string_at(c.addressof(o), c.sizeof(o))) for o in objects(args)]
    rc = getattr(lib, name)(*args)
    after = [bytes(c.string_at(c.addressof(o), c.sizeof(o))) for o in objects(args)]
    if expect_failure and rc != 0 and before != after and not name.endswith(("Processes", "Processes_v2", "Processes_v3")):
        wrote.append(name)
    return rc

for name, *tokens in specs:
    ok = int(tokens.pop()) if tokens[-1].isdigit() else 0
    args, _, _, _ = build(tokens, 0x10, b"GPU-x", b"0:0:0.0")
    out["uninit"][name] = call(name, args)
rc = [lib.nvmlInit_v2(), lib.nvmlInit(), lib.nvmlInitWithFlags(0)]
handle = c.c_void_p()
assert lib.nvmlDeviceGetHandleByIndex_v2(2, c.byref(handle)) == 0
h = handle.value
uuid = c.create_string_buffer(96); assert lib.nvmlDeviceGetUUID(handle, uuid, 96) == 0
pci = Pci(); assert lib.nvmlDeviceGetPciInfo_v3(handle, c.byref(pci)) == 0
for name, *tokens in specs:
    want = int(tokens.pop()) if tokens[-1].isdigit() else 0
    args, ptrs, short, version = build(tokens, h, uuid.value, pci.busId)
    out["ok"][name] = [call(name, args, expect_failure=False), want]
    for p in ptrs:                       # each pointer NULL
        bad = list(args); bad[p] = None
        out["null"][f"{name}#{p}"] = call(name, bad)
    for at in list(hpos):
        for junk in (None, 0x10, h + 1000, h + 1, h - 3):   # past the last device, before the first
            bad = list(args); bad[at] = c.c_void_p(junk)
            out["badhandle"][f"{name}#{at}@{junk and junk - h}"] = call(name, bad)
    if short is not None:
        bad = list(args); bad[short] = U(1)
        out["short"][name] = call(name, bad)
    if version is not None:
        args[version]._obj.version += 1
        out["version"][name] = call(name, args)
setfail = getattr(lib, "accelEmuSetFail", None)
if setfail is not None:                   # a fault injected by name on each entry point: NVML_ERROR_UNKNOWN,
    setfail.argtypes = [c.c_char_p]       # nothing written, and the next call as before
    out["fault"] = {}
    for name, *tokens in specs:
        if tokens[-1].isdigit():
            tokens.pop()
        args, _, _, _ = build(tokens, h, uuid.value, pci.busId)
        armed = setfail(f"{name}:1".encode())
        failed = call(name, args)
        setfail(None)
        out["fault"][name] = [armed, failed, call(name, args, expect_failure=False)]
    # entry points the sweep does not build arguments for (event sets, field values: their own test): the
    # hook comes before any argument is read, so NULL arguments show it; disarmed, they are refused as NULL
    for name in FAULT_ONLY:
        setfail(f"{name}:1".encode())
        failed = getattr(lib, name)(None, None, None, None)
        setfail(None)
        out["fault"][name] = [0, failed, getattr(lib, name)(None, None, None, None) != 999]
    count = U()
    for name in ("nvmlInit_v2", "nvmlInit", "nvmlInitWithFlags", "nvmlShutdown"):
        setfail(f"{name}:1".encode())
        failed = getattr(lib, name)(*([0] if name == "nvmlInitWithFlags" else []))
        setfail(None)
        out["fault"][name] = [0, failed, lib.nvmlDeviceGetCount_v2(c.byref(count))]   # still initialised once
rc += [lib.nvmlShutdown(), lib.nvmlShutdown(), lib.nvmlShutdown(), lib.nvmlShutdown()]
for name, *tokens in specs:
    if tokens[-1].isdigit():
        tokens.pop()
    args, _, _, _ = build(tokens, h, uuid.value, pci.busId)
    out["after"][name] = call(name, args)
out["rc"] = rc
out["strings"] = {str(e): lib.nvmlErrorString(e).decode() for e in (0, 1, 2, 3, 6, 7, 25, 999, 12345, -1)}
out["wrote"] = wrote
out["cudaver"] = [lib.nvmlSystemGetCudaDriverVersion(c.byref(I())), lib.nvmlSystemGetCudaDriverVersion(None)]
print(json.dumps(out))
"""


def _sweep(subprocess_python, lib):
    return _json(subprocess_python, SWEEP, NVML_LIB=lib, ENTRY_POINTS=ENTRY_POINTS, ACCEL_EMU_DEVICES=None,
                 ACCEL_EMU_PROFILE="h100,a100,t4")


@needs_emu
def test_every_entry_point_checks_its_arguments(subprocess_python):
    out = _sweep(subprocess_python, _lib.emu_path())
    names = [ln.split()[0] for ln in ENTRY_POINTS.strip().splitlines()]
    assert out["uninit"] == {n: 1 for n in names}                        # NVML_ERROR_UNINITIALIZED
    assert out["ok"] == {n: [want, want] for n, (_, want) in out["ok"].items()}
    assert out["null"] and set(out["null"].values()) == {2}              # NVML_ERROR_INVALID_ARGUMENT
    assert out["badhandle"] and set(out["badhandle"].values()) == {2}
    assert out["short"].pop("nvmlSystemGetProcessName") == 0             # a process name is truncated
    assert out["short"] and set(out["short"].values()) == {7}            # NVML_ERROR_INSUFFICIENT_SIZE
    assert sorted(out["version"]) == ["nvmlDeviceGetClockOffsets", "nvmlDeviceGetMarginTemperature",
                                      "nvmlDeviceGetMemoryInfo_v2",
                                      "nvmlDeviceGetPciInfoExt", "nvmlDeviceGetTemperatureV",
                                      "nvmlSystemGetDriverBranch"]
    assert set(out["version"].values()) == {25}                          # NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    assert out["after"] == {n: 1 for n in names}
    assert out["rc"] == [0, 0, 0, 0, 0, 0, 1]                            # three inits, three shutdowns, one too many
    assert out["strings"] == {"0": "Success", "1": "Uninitialized", "2": "Invalid Argument", "3": "Not Supported",
                              "6": "Not Found", "7": "Insufficient Size",
                              "25": "The provided version is invalid/unsupported", "999": "Unknown Error",
                              "12345": "Unknown Error", "-1": "Unknown Error"}
    assert out["cudaver"] == [0, 2]     # works without nvmlInit, as the real one
    ok = {n: rc for n, (rc, _) in out["ok"].items()}
    fault_only = [n for n in out["fault"] if n not in ok and not n.startswith(("nvmlInit", "nvmlShutdown"))]
    assert out["fault"] == {**{n: [0, 999, ok[n]] for n in names},     # NVML_ERROR_UNKNOWN, then as before
                            **{n: [0, 999, True] for n in fault_only},
                            **{n: [0, 999, 0] for n in ("nvmlInit_v2", "nvmlInit", "nvmlInitWithFlags", "nvmlShutdown")}}
    names = names + fault_only
    header = pathlib.Path(__file__).resolve().parents[1] / "accel" / "_emu" / "emu_internal.h"
    if header.exists():                 # every entry point with a fault hook is swept (from a checkout)
        import re
        text = header.read_text()
        block = text[text.index("#define EMU_NVML_SYMBOLS(X)"):]
        hooked = set(re.findall(r"X\((\w+)\)", block[:block.index("\n\n")]))
        assert hooked == set(names) | {"nvmlInit_v2", "nvmlInit", "nvmlInitWithFlags", "nvmlShutdown"}, \
            hooked ^ (set(names) | {"nvmlInit_v2", "nvmlInit", "nvmlInitWithFlags", "nvmlShutdown"})
    assert out["wrote"] == []           # a failed call leaves every output as it was


@needs_standins
def test_the_standin_library_serves_every_entry_point(subprocess_python):
    """libnvidia-ml.so.1 holds no code: dlsym through it finds the runtime stand-in's NVML."""
    out = _sweep(subprocess_python, emu.nvml_path())
    assert out["uninit"] and set(out["uninit"].values()) == {1}
    assert all(got == want for got, want in out["ok"].values())
    dyn = subprocess.run(["readelf", "-d", emu.nvml_path()], capture_output=True, text=True)
    if dyn.returncode == 0:
        assert "Library soname: [libnvidia-ml.so.1]" in dyn.stdout
        assert "Shared library: [libcudart.so.13]" in dyn.stdout


# -- what the calls report --------------------------------------------------------------------------------

VALUES = r"""
import ctypes as c, json, os
lib = c.CDLL(os.environ["NVML_LIB"])
U = c.c_uint
out = {"init": lib.nvmlInit_v2()}
n = U(); lib.nvmlDeviceGetCount_v2(c.byref(n)); out["count"] = n.value
def handle(i):
    h = c.c_void_p(); assert lib.nvmlDeviceGetHandleByIndex_v2(i, c.byref(h)) == 0; return h
def text(fn, h, size=96):
    b = c.create_string_buffer(size); assert getattr(lib, fn)(h, b, size) == 0; return b.value.decode()
out["devices"] = []
for i in range(n.value):
    h = handle(i)
    major, minor = c.c_int(), c.c_int(); lib.nvmlDeviceGetCudaComputeCapability(h, c.byref(major), c.byref(minor))
    uuid = text("nvmlDeviceGetUUID", h)
    back = c.c_void_p(); lib.nvmlDeviceGetHandleByUUID(uuid.encode(), c.byref(back))
    idx = U(); lib.nvmlDeviceGetIndex(back, c.byref(idx))
    cur, pend = U(9), U(9); mig = lib.nvmlDeviceGetMigMode(h, c.byref(cur), c.byref(pend))
    out["devices"].append({"name": text("nvmlDeviceGetName", h), "uuid": uuid, "cc": [major.value, minor.value],
                           "by_uuid": idx.value, "mig": [mig, cur.value, pend.value]})
def by_bus(s):
    h = c.c_void_p(); rc = lib.nvmlDeviceGetHandleByPciBusId_v2(s, c.byref(h))
    idx = U(99)
    if rc == 0: lib.nvmlDeviceGetIndex(h, c.byref(idx))
    return [rc, idx.value]
out["bus"] = {s: by_bus(s.encode()) for s in ("00000000:28:00.0", "0000:28:00.0", "28:00.0", "28:00", "0:28:0.0",
                                              "00000000:29:00.0", "00000001:18:00.0", "zz:00.0", "", ":",
                                              "18:00.0.1", "123456789:18:00.0")}
h = c.c_void_p(); out["uuid_missing"] = lib.nvmlDeviceGetHandleByUUID(b"GPU-00000000-0000", c.byref(h))
print(json.dumps(out))
"""


@pytest.mark.devices(3)
@needs_emu
def test_devices_handles_and_modes(subprocess_python):
    out = _json(subprocess_python, VALUES, NVML_LIB=_lib.emu_path(), ACCEL_EMU_PROFILE="t4,a100,b200",
                CUDA_VISIBLE_DEVICES="2")     # NVML ignores it: it sees the physical devices
    assert out["init"] == 0 and out["count"] == 3
    devs = out["devices"]
    assert [d["name"] for d in devs] == ["Emulated Tesla T4 (accel emu)", "Emulated NVIDIA A100-SXM4-80GB (accel emu)",
                                         "Emulated NVIDIA B200 (accel emu)"]
    assert [d["cc"] for d in devs] == [[7, 5], [8, 0], [10, 0]]
    assert [d["by_uuid"] for d in devs] == [0, 1, 2] and all(d["uuid"].startswith("GPU-") for d in devs)
    assert [d["mig"] for d in devs] == [[3, 9, 9], [0, 0, 0], [0, 0, 0]]   # T4: no MIG; the others: disabled
    bus = out["bus"]
    for ok in ("00000000:28:00.0", "0000:28:00.0", "28:00.0", "28:00", "0:28:0.0"):
        assert bus[ok] == [0, 1], ok
    assert bus["00000000:29:00.0"][0] == 6 and bus["00000001:18:00.0"][0] == 6        # NVML_ERROR_NOT_FOUND
    for bad in ("zz:00.0", "", ":", "18:00.0.1", "123456789:18:00.0"):
        assert bus[bad][0] == 2, bad                                                     # INVALID_ARGUMENT
    assert out["uuid_missing"] == 6


MEMORY = r"""
import ctypes as c, json, os
import accel.cuda as cuda
from accel import _lib
lib = _lib.nvml().cdll               # accel's NVML on the emulated runtime: the emulator's own
class Mem2(c.Structure): _fields_ = [("version", c.c_uint), ("total", c.c_ulonglong), ("reserved", c.c_ulonglong),
                                     ("free", c.c_ulonglong), ("used", c.c_ulonglong)]
class Proc(c.Structure): _fields_ = [("pid", c.c_uint), ("used", c.c_ulonglong), ("gi", c.c_uint), ("ci", c.c_uint)]
assert lib.nvmlInit_v2() == 0
def nvml(i):
    h = c.c_void_p(); lib.nvmlDeviceGetHandleByIndex_v2(i, c.byref(h))
    m = Mem2(version=0x02000028); assert lib.nvmlDeviceGetMemoryInfo_v2(h, c.byref(m)) == 0
    n = c.c_uint(0); procs = (Proc * 2)()
    rc0 = lib.nvmlDeviceGetComputeRunningProcesses_v3(h, c.byref(n), None)
    n2 = c.c_uint(2); rc = lib.nvmlDeviceGetComputeRunningProcesses_v3(h, c.byref(n2), procs)
    return {"total": m.total, "free": m.free, "used": m.used, "reserved": m.reserved, "probe": [rc0, n.value],
            "procs": [[p.pid == os.getpid(), p.used, p.gi] for p in procs[:n2.value]] if rc == 0 else rc}
out = {"lib_is_runtime": _lib.nvml().path == _lib.cudart().path, "before": [nvml(i) for i in range(3)]}
buf = cuda.alloc(3 << 20, device=1)     # visible device 1 is physical device 0 (CUDA_VISIBLE_DEVICES=2,0)
out["during"] = [nvml(i) for i in range(3)]
out["cuda"] = list(cuda.mem_get_info(1))
buf.free(); cuda.synchronize(1)
out["after"] = [nvml(i) for i in range(3)]
out["cuda_after"] = list(cuda.mem_get_info(1))
print(json.dumps(out))
"""


TOPOLOGY = r"""
import ctypes as c, json, os
lib = c.CDLL(os.environ["NVML_LIB"])
U, I = c.c_uint, c.c_int
class Offsets(c.Structure): _fields_ = [("version", U), ("type", I), ("pstate", I), ("offset", I), ("min", I), ("max", I)]
assert lib.nvmlInit_v2() == 0
h = [c.c_void_p() for _ in range(3)]
for i in range(3):
    assert lib.nvmlDeviceGetHandleByIndex_v2(i, c.byref(h[i])) == 0
def index(handle):
    v = U(); assert lib.nvmlDeviceGetIndex(handle, c.byref(v)) == 0; return v.value
def devices(fn, *args, room=4):
    n, arr = U(room), (c.c_void_p * 4)(*([0x77] * 4))
    r = fn(*args, c.byref(n), arr)
    return [r, n.value, [index(c.c_void_p(arr[k])) for k in range(n.value)] if r == 0 and room else None]
out = {}
ps = (I * 16)(); out["pstates"] = [lib.nvmlDeviceGetSupportedPerformanceStates(h[0], ps, 64), list(ps)]
lvl = I()
out["ancestor"] = [[lib.nvmlDeviceGetTopologyCommonAncestor(h[a], h[b], c.byref(lvl)), lvl.value][1]
                   for a, b in ((0, 0), (0, 1), (2, 1))]
out["nearest"] = [devices(lib.nvmlDeviceGetTopologyNearestGpus, h[1], 40),
                  devices(lib.nvmlDeviceGetTopologyNearestGpus, h[1], 50),
                  devices(lib.nvmlDeviceGetTopologyNearestGpus, h[1], 10),
                  devices(lib.nvmlDeviceGetTopologyNearestGpus, h[1], 40, room=0),
                  devices(lib.nvmlDeviceGetTopologyNearestGpus, h[1], 40, room=1),
                  devices(lib.nvmlDeviceGetTopologyNearestGpus, h[1], 45)]
out["gpu_set"] = [devices(lib.nvmlSystemGetTopologyGpuSet, U(0)),
                  devices(lib.nvmlSystemGetTopologyGpuSet, U(os.cpu_count()))]
cpus = (c.c_ulong * 3)(7, 7, 7)
out["cpus"] = [lib.nvmlDeviceGetCpuAffinityWithinScope(h[0], 3, cpus, 1), list(cpus),
               lib.nvmlDeviceGetCpuAffinityWithinScope(h[0], 3, cpus, 2)]
nodes = (c.c_ulong * 1)(7)
out["nodes"] = [lib.nvmlDeviceGetMemoryAffinity(h[2], 1, nodes, 0), list(nodes)]
def offsets(type_, pstate):
    o = Offsets(0x01000018, type_, pstate, 9, 9, 9); r = lib.nvmlDeviceGetClockOffsets(h[0], c.byref(o))
    return [r, o.offset, o.min, o.max]
out["offsets"] = [offsets(0, 0), offsets(2, 0), offsets(1, 0), offsets(0, 2), offsets(0, 16)]
mode = I()
out["persistence"] = [lib.nvmlDeviceSetPersistenceMode(h[0], 0), lib.nvmlDeviceSetPersistenceMode(h[0], 2),
                      lib.nvmlDeviceGetPersistenceMode(h[0], c.byref(mode)), mode.value]
uuid = c.create_string_buffer(96); assert lib.nvmlDeviceGetUUID(h[2], uuid, 96) == 0
found = c.c_void_p()
out["uuid"] = [lib.nvmlDeviceGetHandleByUUID(uuid.value[4:], c.byref(found)), index(found),
               lib.nvmlDeviceGetHandleByUUID(uuid.value[5:], c.byref(found)), lib.nvmlDeviceGetHandleByUUID(b"GPU-", c.byref(found))]
out["ncpu"] = os.cpu_count()
print(json.dumps(out))
"""


@pytest.mark.devices(3)
@needs_emu
def test_topology_affinity_performance_states_and_setters(subprocess_python):
    # one host, one NUMA node holding every CPU and GPU; P0 only, no clock offsets; no permission to set modes
    out = _json(subprocess_python, TOPOLOGY, NVML_LIB=_lib.emu_path(), ACCEL_EMU_PROFILE="t4,a100,b200")
    n = out["ncpu"]
    assert out["pstates"] == [0, [0] + [32] * 15]
    assert out["ancestor"] == [0, 40, 40]
    assert out["nearest"] == [[0, 2, [0, 2]], [0, 2, [0, 2]], [0, 0, []], [0, 2, None], [7, 1, None], [2, 4, None]]
    assert out["gpu_set"] == [[0, 3, [0, 1, 2]], [2, 4, None]]
    assert out["cpus"] == [0, [(1 << min(n, 64)) - 1 if n < 64 else 2 ** 64 - 1] + [0, 0], 2]
    assert out["nodes"] == [0, [1]]
    assert out["offsets"] == [[0, 0, 0, 0], [0, 0, 0, 0], [2, 9, 9, 9], [6, 9, 9, 9], [2, 9, 9, 9]]
    assert out["persistence"] == [4, 2, 0, 1]
    assert out["uuid"] == [0, 2, 6, 6]


EVENTS = r"""
import ctypes as c, json, os, time
lib = c.CDLL(os.environ["NVML_LIB"])
U, I, ULL, VP = c.c_uint, c.c_int, c.c_ulonglong, c.c_void_p
class Data(c.Structure): _fields_ = [("device", VP), ("type", ULL), ("data", ULL), ("gi", U), ("ci", U)]
class SetReq(c.Structure): _fields_ = [("version", U), ("set", VP)]
class RegReq(c.Structure): _fields_ = [("version", U), ("types", ULL), ("set", VP)]
class WaitReq(c.Structure): _fields_ = [("version", U), ("timeout", U), ("set", VP), ("data", VP), ("size", U), ("count", U)]
class Field(c.Structure): _fields_ = [("id", U), ("scope", U), ("ts", c.c_longlong), ("lat", c.c_longlong),
                                      ("vtype", I), ("ret", I), ("value", ULL)]
lib.nvmlDeviceRegisterEvents.argtypes = [VP, ULL, VP]
lib.nvmlEventSetWait_v2.argtypes = [VP, VP, U]
lib.nvmlEventSetFree.argtypes = [VP]
out = {"uninit": [lib.nvmlEventSetCreate(c.byref(VP())), lib.nvmlSystemEventSetCreate(c.byref(SetReq(0x01000010)))]}
assert lib.nvmlInit_v2() == 0
h = VP(); assert lib.nvmlDeviceGetHandleByIndex_v2(0, c.byref(h)) == 0
types = ULL(); assert lib.nvmlDeviceGetSupportedEventTypes(h, c.byref(types)) == 0
s = VP(); assert lib.nvmlEventSetCreate(c.byref(s)) == 0
d = Data()
t0 = time.monotonic()
out["device"] = [types.value, lib.nvmlDeviceRegisterEvents(h, 8, s), lib.nvmlDeviceRegisterEvents(h, 0, s),
                 lib.nvmlDeviceRegisterEvents(h, 1 << 40, s), lib.nvmlDeviceRegisterEvents(VP(0x10), 8, s),
                 lib.nvmlDeviceRegisterEvents(h, 8, VP(0x1234)), lib.nvmlEventSetWait_v2(s, c.byref(d), 200),
                 lib.nvmlEventSetWait_v2(s, None, 10), lib.nvmlEventSetWait_v2(VP(0x1234), c.byref(d), 10)]
out["waited"] = time.monotonic() - t0 >= 0.2
out["free"] = [lib.nvmlEventSetFree(s), lib.nvmlEventSetFree(s), lib.nvmlEventSetWait_v2(s, c.byref(d), 10),
               lib.nvmlEventSetCreate(None)]
s2 = VP(); assert lib.nvmlEventSetCreate(c.byref(s2)) == 0   # a live device set: the wrong kind for system calls
cr = SetReq(0x01000010)
out["system"] = [lib.nvmlSystemEventSetCreate(c.byref(SetReq(0x01000011))), lib.nvmlSystemEventSetCreate(None),
                 lib.nvmlSystemEventSetCreate(c.byref(cr)), bool(cr.set),
                 lib.nvmlSystemRegisterEvents(c.byref(RegReq(0x01000018, 1, cr.set))),
                 lib.nvmlSystemRegisterEvents(c.byref(RegReq(0x01000018, 4, cr.set))),
                 lib.nvmlSystemRegisterEvents(c.byref(RegReq(0x01000018, 1, s2))),
                 lib.nvmlEventSetWait_v2(cr.set, c.byref(d), 10)]
buf = (c.c_char * 64)()
w = WaitReq(0x01000020, 50, cr.set, c.addressof(buf), 1, 77)
out["system_wait"] = [lib.nvmlSystemEventSetWait(c.byref(w)), w.count,
                      lib.nvmlSystemEventSetWait(c.byref(WaitReq(0x01000020, 50, cr.set, None, 1, 0))),
                      lib.nvmlSystemEventSetFree(c.byref(SetReq(0x01000010, cr.set))),
                      lib.nvmlSystemEventSetFree(c.byref(SetReq(0x01000010, cr.set)))]
fv = (Field * 2)(Field(83), Field(94))
out["fields"] = [lib.nvmlDeviceGetFieldValues(h, 2, fv), [[f.id, f.ret, f.ts > 0] for f in fv],
                 lib.nvmlDeviceGetFieldValues(h, 0, None), lib.nvmlDeviceGetFieldValues(h, -1, fv),
                 lib.nvmlDeviceGetFieldValues(h, 2, None), lib.nvmlDeviceGetFieldValues(VP(0x10), 2, fv),
                 lib.nvmlDeviceClearFieldValues(h, 1, fv)]
print(json.dumps(out))
"""


@needs_emu
def test_event_sets_and_field_values(subprocess_python):
    # no event ever comes (waits time out); field values succeed with each field NOT_SUPPORTED
    out = _json(subprocess_python, EVENTS, NVML_LIB=_lib.emu_path(), ACCEL_EMU_PROFILE="h100")
    assert out["uninit"] == [1, 1]
    assert out["device"] == [0x1f, 0, 0, 3, 2, 2, 10, 2, 2] and out["waited"]
    assert out["free"] == [0, 2, 2, 2]
    assert out["system"] == [25, 2, 0, True, 0, 3, 2, 2]
    assert out["system_wait"] == [10, 77, 2, 0, 2]
    assert out["fields"] == [0, [[83, 3, True], [94, 3, True]], 0, 2, 2, 2, 0]


@needs_emu
def test_memory_and_processes_follow_the_runtime(subprocess_python):
    out = _json(subprocess_python, MEMORY, ACCEL_CUDART="emu", ACCEL_EMU_DEVICES="3", CUDA_VISIBLE_DEVICES="2,0",
                ACCEL_EMU_MEMORY="1G")
    assert out["lib_is_runtime"]
    g = 1 << 30
    assert all(d["total"] == g and d["used"] == 0 and d["free"] == g and d["reserved"] == 0 for d in out["before"])
    assert all(d["probe"] == [0, 0] and d["procs"] == [] for d in out["before"])
    used = out["during"][0]["used"]
    assert used >= 3 << 20 and out["during"][0]["free"] == g - used
    assert out["cuda"] == [g - used, g]                          # cudaMemGetInfo of visible 1 = NVML of physical 0
    assert out["during"][0]["probe"] == [7, 1]                   # NVML_ERROR_INSUFFICIENT_SIZE, one process
    assert out["during"][0]["procs"] == [[True, used, 0xFFFFFFFF]]
    assert out["during"][1]["used"] == 0 and out["during"][2]["used"] == 0
    # after the free NVML still agrees with cudaMemGetInfo (a stream-ordered pool may keep its reservation)
    assert out["after"][0]["used"] == g - out["cuda_after"][0]


@needs_emu
def test_accel_counts_devices_through_the_emulators_nvml(subprocess_python):
    """ACCEL_CUDART=emu and no ACCEL_NVML: accel's NVML-based count (torch's rules) uses the emulator's NVML."""
    code = ("import json, ctypes; from accel import _lib; from accel.cuda import _visible; "
            "u = _visible._raw_device_uuid_nvml(); import os; os.environ['CUDA_VISIBLE_DEVICES'] = u[2][:12] + ',' + u[0]; "
            "print(json.dumps([_lib.nvml().emulated, _visible._raw_device_count_nvml(), _visible._device_count_nvml()]))")
    assert _json(subprocess_python, code, ACCEL_CUDART="emu", ACCEL_EMU_DEVICES="3") == [True, 3, 2]


@needs_standins
def test_the_soname_torch_opens_is_the_standin(subprocess_python):
    """torch's _raw_device_count_nvml: ctypes.CDLL("libnvidia-ml.so.1"), nvmlInit_v2, nvmlDeviceGetCount_v2."""
    code = ("import ctypes; lib = ctypes.CDLL('libnvidia-ml.so.1'); n = ctypes.c_uint(); "
            "print(lib.nvmlInit_v2(), lib.nvmlDeviceGetCount_v2(ctypes.byref(n)), n.value, "
            "hasattr(lib, 'accelEmuDeviceCount'))")
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "5", "--", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120, cwd="/",
                          env={k: v for k, v in os.environ.items() if k not in CLEAN and k != "ACCEL_CUDART"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "0", "5", "True"]


THREADS = r"""
import ctypes as c, json, threading
import accel.cuda as cuda
from accel import _lib
lib = _lib.nvml().cdll
class Mem(c.Structure): _fields_ = [("total", c.c_ulonglong), ("free", c.c_ulonglong), ("used", c.c_ulonglong)]
assert lib.nvmlInit_v2() == 0
bad = []
def nvml_user():
    for _ in range(300):
        if lib.nvmlInit_v2() != 0: bad.append("init")
        h = c.c_void_p(); lib.nvmlDeviceGetHandleByIndex_v2(1, c.byref(h))
        m = Mem()
        if lib.nvmlDeviceGetMemoryInfo(h, c.byref(m)) != 0 or m.used + m.free != m.total: bad.append("mem")
        n = c.c_uint(4); procs = (c.c_ubyte * 96)()
        if lib.nvmlDeviceGetComputeRunningProcesses_v3(h, c.byref(n), procs) != 0: bad.append("procs")
        if lib.nvmlShutdown() != 0: bad.append("shutdown")
def allocator():
    for _ in range(300):
        cuda.alloc(1 << 16, device=1).free()
ts = [threading.Thread(target=nvml_user) for _ in range(4)] + [threading.Thread(target=allocator) for _ in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps([bad, lib.nvmlShutdown(), lib.nvmlShutdown()]))
"""


@needs_emu
def test_nvml_under_threads_and_allocations(subprocess_python):
    """Init/shutdown counting and memory reads race allocations on other threads: every call succeeds,
    used + free == total at every read, and the count ends where it started."""
    assert _json(subprocess_python, THREADS, ACCEL_CUDART="emu", ACCEL_EMU_DEVICES="2") == [[], 0, 1]


# -- peers -----------------------------------------------------------------------------------------------

PYNVML = r"""
import json, os, pynvml as n
import accel.cuda as cuda
n.nvmlInit()
count = n.nvmlDeviceGetCount()
hs = [n.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
out = {"count": count, "names": [n.nvmlDeviceGetName(h) for h in hs],
       "versions": [n.nvmlSystemGetDriverVersion(), n.nvmlSystemGetNVMLVersion(), n.nvmlSystemGetCudaDriverVersion()],
       "cc": [list(n.nvmlDeviceGetCudaComputeCapability(h)) for h in hs],
       "uuids_match": [n.nvmlDeviceGetUUID(h) == "GPU-" + str(cuda.get_device_properties(i).uuid)
                       for i, h in enumerate(hs)]}
h = hs[1]
used0 = n.nvmlDeviceGetMemoryInfo(h).used
buf = cuda.alloc(64 << 20, device=1)
m1, m2 = n.nvmlDeviceGetMemoryInfo(h), n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
procs = n.nvmlDeviceGetComputeRunningProcesses(h)
free, total = cuda.mem_get_info(1)
out["memory"] = [used0, m1.used >= 64 << 20, m1.used == m2.used == total - free, m1.total == total,
                 [(p.pid == os.getpid(), p.usedGpuMemory == m1.used) for p in procs]]
out["sensors"] = [n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU), n.nvmlDeviceGetUtilizationRates(h).gpu,
                  n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM), n.nvmlDeviceGetPowerUsage(h) > 0,
                  n.nvmlDeviceGetComputeMode(h), n.nvmlDeviceGetPciInfo(h).busId.startswith("00000000:")]
out["accel"] = [cuda.temperature(1), cuda.utilization(1), cuda.clock_rate(1), cuda.power_draw(1) > 0]
try:
    n.nvmlDeviceGetHandleByIndex(count)
except n.NVMLError as exc:
    out["error"] = [exc.value, str(exc)]
n.nvmlShutdown()
print(json.dumps(out))
"""


@needs_standins
@needs_pynvml
def test_pynvml_reports_the_emulated_devices_and_live_memory(subprocess_python):
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--profile", "h100:1,a100:1", "--",
                           sys.executable, "-c", PYNVML], capture_output=True, text=True, timeout=120,
                          cwd="/", env={k: v for k, v in os.environ.items() if k not in CLEAN and k != "ACCEL_CUDART"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["count"] == 2 and out["names"] == ["Emulated NVIDIA H100 80GB HBM3 (accel emu)",
                                                  "Emulated NVIDIA A100-SXM4-80GB (accel emu)"]
    # the CUDA driver version follows the driver's (accel emu: no older than the NVRTC / nvJitLink present)
    assert out["versions"] == ["580.65.06", "13.580.65.06", emu.driver_version()] and out["cc"] == [[9, 0], [8, 0]]
    assert out["uuids_match"] == [True, True]
    assert out["memory"] == [0, True, True, True, [[True, True]]]
    assert out["sensors"] == [34, 0, 1410, True, 0, True]
    assert out["accel"] == [34, 0, 1410, True]                   # accel.cuda's NVML functions agree
    assert out["error"] == [2, "Invalid Argument"]


@needs_emu
@needs_pynvml
def test_accel_nvml_functions_read_the_emulator_without_the_standins(subprocess_python):
    """ACCEL_CUDART=emu (no preload): accel points nvidia-ml-py at the emulator's NVML."""
    out = _json(subprocess_python, "import json, accel.cuda as c; c.device_count(); "
                "print(json.dumps([c.clock_rate(0), c.temperature(1), c.utilization(0), c.memory_usage(0)]))",
                ACCEL_CUDART="emu", ACCEL_EMU_PROFILE="l4", ACCEL_EMU_DEVICES="2")
    assert out == [2040, 34, 0, 0]


CUDA_CORE = r"""
import json, os
from cuda.core import system, Device
out = {"n": system.get_num_devices(), "driver": list(system.get_kernel_mode_driver_version()),
       "nvml": list(system.get_nvml_version()), "branch": system.get_driver_branch(),
       "name_of_self": system.get_process_name(os.getpid()).endswith("python") or "python" in system.get_process_name(os.getpid())}
devs = []
for i in range(out["n"]):
    d = system.Device(index=i)
    m = d.memory_info
    devs.append([d.name, list(d.cuda_compute_capability), d.pci_bus_id, m.total, m.used, d.arch.name,
                 system.Device(uuid=d.uuid).index, system.Device(pci_bus_id=d.pci_bus_id).index, d.mig.is_mig_device])
out["devices"] = devs
dev = Device(1); dev.set_current()
props = dev.properties
out["cuda"] = [dev.name, list(dev.compute_capability), props.multiprocessor_count, props.l2_cache_size]
print(json.dumps(out))
"""


@needs_standins
@needs_cuda_core
def test_cuda_core_system_on_the_emulator(subprocess_python):
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--profile", "t4,h100", "--",
                           sys.executable, "-c", CUDA_CORE], capture_output=True, text=True, timeout=120,
                          cwd="/", env={k: v for k, v in os.environ.items() if k not in CLEAN and k != "ACCEL_CUDART"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["n"] == 2 and out["driver"] == [580, 65, 6] and out["nvml"] == [13, 580, 65, 6]
    assert out["branch"] == "r580_00" and out["name_of_self"]
    assert out["devices"] == [
        ["Emulated Tesla T4 (accel emu)", [7, 5], "00000000:18:00.0", 16 << 30, 0, "TURING", 0, 0, False],
        ["Emulated NVIDIA H100 80GB HBM3 (accel emu)", [9, 0], "00000000:28:00.0", 80 << 30, 0, "HOPPER", 1, 1, False]]
    assert out["cuda"] == ["Emulated NVIDIA H100 80GB HBM3 (accel emu)", [9, 0], 132, 52428800]
