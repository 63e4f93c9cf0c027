"""Device profiles of the emulator (ACCEL_EMU_PROFILE, accel/_emu/emu_profiles.c) and the command line
that picks them.

For each profile, one process on the stand-ins reads the device four ways -- accel.cuda's properties
(cudaGetDeviceProperties), the runtime's and the driver's attributes (cudaDeviceGetAttribute,
cuDeviceGetAttribute), NVML and cudaMemGetInfo -- and they must agree with each other and with the board's
published values.  A mixed machine gives each device its own board, CUDA_VISIBLE_DEVICES renumbers them
and NVML still sees them all.  A malformed value is refused before anything loads.
"""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

from accel import _lib, emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
needs_standins = _fx.needs_standins

CLEAN = ("ACCEL_EMU_TRACE", "ACCEL_EMU_FAIL", "ACCEL_EMU_MEMORY", "CUDA_VISIBLE_DEVICES", "ACCEL_EMU_PROFILE",
         "ACCEL_EMU_DEVICES", "ACCEL_NVML", "LD_PRELOAD", "ACCEL_CUDART")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    env.update(extra)
    return env


def run(code, **env):
    return subprocess.run([sys.executable, "-c", code], env=_env(**env), capture_output=True, text=True,
                          timeout=120, cwd=tempfile.gettempdir())


# Published values: name, compute capability, SMs, memory (nominal GiB), L2 bytes, boost clock kHz,
# max threads per SM, max shared memory per SM, opt-in shared memory per block, memory bus width.
BOARDS = {
    "h100": ("NVIDIA H100 80GB HBM3", (9, 0), 132, 80, 50 << 20, 1980000, 2048, 228 << 10, 227 << 10, 5120),
    "a100": ("NVIDIA A100-SXM4-80GB", (8, 0), 108, 80, 40 << 20, 1410000, 2048, 164 << 10, 163 << 10, 5120),
    "a10": ("NVIDIA A10", (8, 6), 72, 24, 6 << 20, 1695000, 1536, 100 << 10, 99 << 10, 384),
    "l4": ("NVIDIA L4", (8, 9), 58, 24, 48 << 20, 2040000, 1536, 100 << 10, 99 << 10, 192),
    "t4": ("Tesla T4", (7, 5), 40, 16, 4 << 20, 1590000, 1024, 64 << 10, 64 << 10, 256),
    "b200": ("NVIDIA B200", (10, 0), 148, 180, 132644864, 1965000, 2048, 228 << 10, 227 << 10, 7680),
}

# cudaDeviceAttr codes read both ways, and the cudaDeviceProp fields accel exposes for them.
ATTRS = {75: "major", 76: "minor", 16: "multi_processor_count", 38: "L2_cache_size", 13: "clock_rate",
         39: "max_threads_per_multi_processor", 81: "shared_memory_per_multiprocessor",
         97: "shared_memory_per_block_optin", 37: "memory_bus_width", 36: "memory_clock_rate",
         40: "async_engine_count"}

PROBE = r"""
import ctypes as c, json, os
import accel.emu
accel.emu.activate()
import accel.cuda as cuda
from accel import _impl
ATTRS = {attrs!r}
cu = c.CDLL(accel.emu.driver_path())
nv = c.CDLL(accel.emu.nvml_path())
assert cu.cuInit(0) == 0 and nv.nvmlInit_v2() == 0
class Mem(c.Structure): _fields_ = [("total", c.c_ulonglong), ("free", c.c_ulonglong), ("used", c.c_ulonglong)]
out = []
for d in range(cuda.device_count()):
    p = cuda.get_device_properties(d)
    rt = {{a: _impl.cudart.cudaDeviceGetAttribute(a, d) for a in ATTRS}}
    drv = {{}}
    for a in ATTRS:
        v = c.c_int(); assert cu.cuDeviceGetAttribute(c.byref(v), a, d) == 0; drv[a] = v.value
    name = c.create_string_buffer(256); cu.cuDeviceGetName(name, 256, d)
    total = c.c_size_t(); cu.cuDeviceTotalMem_v2(c.byref(total), d)
    h = c.c_void_p(); assert nv.nvmlDeviceGetHandleByUUID(("GPU-" + str(p.uuid)).encode(), c.byref(h)) == 0
    nvname = c.create_string_buffer(96); nv.nvmlDeviceGetName(h, nvname, 96)
    mj, mn = c.c_int(), c.c_int(); nv.nvmlDeviceGetCudaComputeCapability(h, c.byref(mj), c.byref(mn))
    clock = c.c_uint(); nv.nvmlDeviceGetMaxClockInfo(h, 1, c.byref(clock))
    memclk = c.c_uint(); nv.nvmlDeviceGetMaxClockInfo(h, 2, c.byref(memclk))
    m = Mem(); nv.nvmlDeviceGetMemoryInfo(h, c.byref(m))
    cores = c.c_uint(); nv.nvmlDeviceGetNumGpuCores(h, c.byref(cores))
    out.append({{"props": {{f: getattr(p, f) for f in ATTRS.values()}}, "name": p.name, "total": p.total_memory,
                "rt": rt, "drv": drv, "drv_name": name.value.decode(), "drv_total": total.value,
                "nvml": [nvname.value.decode(), [mj.value, mn.value], clock.value, memclk.value, m.total, m.free],
                "mem": list(cuda.mem_get_info(d)), "cores": cores.value}})
print(json.dumps(out))
"""


def probe(**env):
    proc = run(PROBE.format(attrs=ATTRS), **env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_device(dev, key):
    name, cc, sms, gib, l2, clock, threads, smem, optin, bus = BOARDS[key]
    full = f"Emulated {name} (accel emu)"
    assert dev["name"] == dev["drv_name"] == dev["nvml"][0] == full
    expected = {75: cc[0], 76: cc[1], 16: sms, 38: l2, 13: clock, 39: threads, 81: smem, 97: optin, 37: bus}
    rt = {int(k): v for k, v in dev["rt"].items()}
    drv = {int(k): v for k, v in dev["drv"].items()}
    assert rt == drv, "cudaDeviceGetAttribute and cuDeviceGetAttribute disagree"
    assert {a: rt[a] for a in expected} == expected
    assert {ATTRS[a]: v for a, v in rt.items()} == dev["props"], "properties and attributes disagree"
    total = gib << 30
    assert dev["total"] == dev["drv_total"] == dev["nvml"][4] == dev["mem"][1] == total
    assert dev["nvml"][5] == dev["mem"][0] == total                  # nothing allocated: NVML free == cudaMemGetInfo
    assert dev["nvml"][1] == list(cc) and dev["nvml"][2] == clock // 1000 and dev["nvml"][3] == rt[36] // 1000
    assert dev["cores"] == sms * (64 if cc in ((7, 5), (8, 0)) else 128)


@needs_standins
@pytest.mark.parametrize("key", sorted(BOARDS))
def test_each_profile_agrees_everywhere(key):
    devs = probe(ACCEL_EMU_PROFILE=key, ACCEL_EMU_DEVICES="2")
    assert len(devs) == 2
    for dev in devs:
        check_device(dev, key)


def test_the_table_covers_every_branch_of_capability():
    assert {cc for _, cc, *_ in BOARDS.values()} >= {(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0)}
    assert {k: (v[0], v[1]) for k, v in BOARDS.items()} == emu.PROFILES


@needs_standins
def test_capability_dependent_attributes():
    devs = probe(ACCEL_EMU_PROFILE="t4,a100,h100")
    rt = [{int(k): v for k, v in d["rt"].items()} for d in devs]
    assert [r[40] for r in rt] == [3, 3, 3]
    code = ("import json, accel.cuda as c; from accel import _impl; "
            "print(json.dumps([[_impl.cudart.cudaDeviceGetAttribute(a, d) for a in (120, 111, 108, 109, 126)] "
            "for d in range(c.device_count())]))")
    proc = run(code, ACCEL_CUDART="emu", ACCEL_EMU_PROFILE="t4,a100,h100")
    assert proc.returncode == 0, proc.stderr
    # cluster launch (9.0+), reserved shared memory per block (8.0+), persisting L2 and access-policy windows
    # (8.0+), memory-sync domains (9.0+)
    assert json.loads(proc.stdout) == [[0, 0, 0, 0, 1], [0, 1024, 31457280, 134213632, 1],
                                       [1, 1024, 32505856, 134213632, 4]]


@needs_standins
def test_a_mixed_machine_under_cuda_visible_devices():
    devs = probe(ACCEL_EMU_PROFILE="h100:2,a100:1,t4", CUDA_VISIBLE_DEVICES="3,1")
    assert len(devs) == 2
    check_device(devs[0], "t4")
    check_device(devs[1], "h100")
    # NVML sees the four physical devices in their own order, whatever CUDA_VISIBLE_DEVICES says
    code = ("import ctypes as c, accel.emu as e; e.activate(); nv = c.CDLL(e.nvml_path()); nv.nvmlInit_v2(); "
            "n = c.c_uint(); nv.nvmlDeviceGetCount_v2(c.byref(n)); names = []\n"
            "for i in range(n.value):\n"
            "    h = c.c_void_p(); nv.nvmlDeviceGetHandleByIndex_v2(i, c.byref(h)); b = c.create_string_buffer(96)\n"
            "    nv.nvmlDeviceGetName(h, b, 96); names.append(b.value.decode().split()[2])\n"
            "print(names)")
    proc = run(code, ACCEL_EMU_PROFILE="h100:2,a100:1,t4", CUDA_VISIBLE_DEVICES="3,1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['H100', 'H100', 'A100-SXM4-80GB', 'T4']"


@needs_standins
def test_memory_override_and_devices_count():
    devs = probe(ACCEL_EMU_PROFILE="b200", ACCEL_EMU_MEMORY="2G")
    assert len(devs) == 4 and all(d["total"] == d["nvml"][4] == d["mem"][1] == 2 << 30 for d in devs)
    assert len(probe(ACCEL_EMU_PROFILE="a10:3", ACCEL_EMU_DEVICES="3")) == 3    # a repeated total is fine


EXPECTED = ("one of h100, a100, a10, l4, t4, b200, or a machine such as h100:2,a100:2 (name:count, ...; "
            "ACCEL_EMU_DEVICES unset or equal to its total, 127 at most)")


@needs_standins
@pytest.mark.parametrize("value, devices", [
    ("v100", None), ("H100", None), ("h100:", None), ("h100:x", None), ("h100:2,", None), (",h100", None),
    ("h100:257", None), ("h100:200,a100:100", None), ("h100:128", None), ("h100:100,a100:28", None),
    ("h100:2,a100:2", "3"), ("h100 ", None),
])
def test_a_malformed_profile_is_refused_before_anything_loads(value, devices):
    env = {"ACCEL_EMU_PROFILE": value, **({"ACCEL_EMU_DEVICES": devices} if devices else {})}
    proc = run("import accel.emu as e; e.activate()", **env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"ValueError: ACCEL_EMU_PROFILE={value!r} is malformed: the emulated runtime expects {EXPECTED}")
    # the runtime itself refuses it too: every call fails (accelEmuDeviceCount: -1), NVML does not start
    proc = run(f"import ctypes; lib = ctypes.CDLL({_lib.emu_path()!r}); print(lib.accelEmuDeviceCount(), "
               "lib.nvmlInit_v2())", **env)
    assert proc.returncode == 0 and proc.stdout.split() == ["-1", "999"], proc.stderr


def test_activate_rejects_a_profile_of_the_wrong_type():
    with pytest.raises(TypeError, match=r"profile must be a str \(one of h100, .*got int 3"):
        emu.activate(profile=3)
    with pytest.raises(TypeError, match="profile must be a str"):
        emu.environ(profile=b"h100")
    assert emu.environ(profile="t4", base={})["ACCEL_EMU_PROFILE"] == "t4"


# -- the command line ------------------------------------------------------------------------------------

def accel(*args, **env):
    return subprocess.run([sys.executable, "-m", "accel", *args], env=_env(**env), capture_output=True, text=True,
                          timeout=120, cwd=tempfile.gettempdir())


@needs_standins
def test_emu_profile_option():
    code = "import accel.cuda as c; print([c.get_device_capability(i) for i in range(c.device_count())])"
    proc = accel("emu", "--profile", "t4,b200", "--", sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[(7, 5), (10, 0)]"
    proc = accel("emu", "--devices=3", "--profile=l4", sys.executable, "-c", code)
    assert proc.returncode == 0 and proc.stdout.strip() == "[(8, 9), (8, 9), (8, 9)]", proc.stderr
    proc = accel("emu", "--profile", "v100", "--", "true")
    assert proc.returncode == 1 and "ACCEL_EMU_PROFILE='v100' is malformed" in proc.stderr
    proc = accel("emu", "--profile")
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1] == (
        "error: --profile needs a value (a GPU profile such as a100, or h100:2,a100:2)")


@needs_standins
def test_emu_help_lists_the_profiles():
    proc = accel("emu", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "usage: python -m accel emu [--devices N] [--profile P] [--] COMMAND [ARGS...]"
    for key, (board, cc) in emu.PROFILES.items():
        assert f"  {key:6} {board} (compute capability {cc[0]}.{cc[1]})" in proc.stdout
    assert "h100:2,a100:2" in proc.stdout


def test_help_names_the_emulator_and_the_variables():
    proc = accel("--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "`python -m accel emu -- COMMAND` runs any CUDA program on them" in text
    assert "ACCEL_EMU_PROFILE" in text and "ACCEL_EMU_DEVICES" in text


@pytest.mark.skipif(not os.path.exists(_lib.emu_path()), reason="no emulator in this install")
def test_report_without_a_gpu_says_how_to_try_the_emulator(tmp_path):
    """No runtime found (ACCEL_CUDART names nothing): the report ends with how to use the emulator."""
    proc = accel(ACCEL_CUDART=str(tmp_path / "libcudart.so.13"))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "no usable GPU: `ACCEL_CUDART=emu python -m accel` shows the bundled emulated runtime instead" in text
    assert "`python -m accel emu -- python your_program.py` runs any program" in text
    assert "`python -m accel emu --profile a100 -- ...` picks the kind of GPU" in text
