"""Red-team pass over issue 31's lifetime and emulator-fidelity fixes (items 1-7, 13-16): each test is a
defect found by attacking them, failing before its fix (or marked xfail naming the defect)."""
import importlib.util
import pathlib

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

OK = 0

# The runtime, driver and NVML stand-ins loaded as accel.emu.activate does.
PRELUDE = f"""
import ctypes as c, json, os
rt = c.CDLL({emu.cudart_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL({emu.driver_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
nv = c.CDLL({emu.nvml_path()!r}, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
R, VP, I, U = c.byref, c.c_void_p, c.c_int, c.c_uint
"""

_run, _json = _fx.runners(PRELUDE)


@_fx.needs_standins
def test_nvml_in_a_child_forked_after_cuda_was_initialised_still_answers(subprocess_python):
    # NVML is not the CUDA driver: a forked child may use it (torch's device_count() asks NVML there so as not
    # to initialise CUDA).  The stand-in's NVML counted (unsigned)-1 = 4294967295 devices in such a child when
    # the parent had initialised NVML, and refused nvmlInit (NVML_ERROR_UNKNOWN) when it had not.
    got = _json(subprocess_python, """
first = [nv.nvmlInit_v2(), cu.cuInit(0)]
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    n, h, h9 = U(77), VP(), VP()
    got = [nv.nvmlDeviceGetCount_v2(R(n)), n.value, nv.nvmlDeviceGetHandleByIndex_v2(3, R(h)),
           nv.nvmlDeviceGetHandleByIndex_v2(9, R(h9)), nv.nvmlInit_v2(), nv.nvmlShutdown(), cu.cuInit(0)]
    os.write(w, json.dumps(got).encode()); os._exit(0)
os.close(w)
child = json.loads(os.read(r, 65536).decode())
os.waitpid(pid, 0)
print(json.dumps({"first": first, "child": child}))
""")
    assert got["first"] == [OK, OK]
    # count 4; index 3 found, 9 NVML_ERROR_INVALID_ARGUMENT (2); init / shutdown fine; the driver still refused
    assert got["child"] == [OK, 4, OK, 2, OK, OK, 3]
