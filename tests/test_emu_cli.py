"""`python -m accel emu` and accel.emu.activate(): other programs (and cuda.core, when installed) on
the emulated runtime's stand-ins, sharing one state with accel."""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

from accel import emu

_spec = importlib.util.spec_from_file_location("standin_fixtures", pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

pytestmark = _fx.needs_standins
needs_cuda_core = _fx.needs_cuda_core


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "ACCEL_EMU_DEVICES", "LD_PRELOAD")}
    env.update(extra)
    return env


def accel_emu(*args, env=None):
    return subprocess.run([sys.executable, "-m", "accel", "emu", *args], env=env or _env(), capture_output=True,
                          text=True, timeout=120, cwd=tempfile.gettempdir())


def test_runs_a_command_on_the_standins():
    code = ("import os, accel.cuda as c; from accel import _lib; lib = _lib.cudart(); "
            "print(c.device_count(), lib.path == os.environ['ACCEL_CUDART'], lib.emulated, _lib.driver() is lib, "
            "os.environ['LD_PRELOAD'].split()[:2])")
    proc = accel_emu("--devices", "3", "--", sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 4)[:4] == ["3", "True", "True", "True"]
    assert proc.stdout.strip().endswith(str([emu.cudart_path(), emu.driver_path()]))


def test_the_child_loads_the_standin_for_the_libcudart_soname():
    # what torch's NEEDED libcudart.so.13 gets: the preloaded stand-in, whatever else is on the system
    code = ("import ctypes; rt = ctypes.CDLL('libcudart.so.13'); n = ctypes.c_int(); "
            "print(rt.cudaGetDeviceCount(ctypes.byref(n)), n.value, hasattr(rt, 'accelEmuDeviceCount'), "
            "hasattr(ctypes.CDLL('libcuda.so.1'), 'cuGetProcAddress_v2'))")
    proc = accel_emu("--devices=2", sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "2", "True", "True"]


def test_exit_status_and_default_device_count():
    proc = accel_emu(sys.executable, "-c", "import accel.cuda as c, sys; sys.exit(40 + c.device_count())")
    assert proc.returncode == 44, proc.stderr


@pytest.mark.parametrize("args, message", [
    ([], "no COMMAND given"),
    (["--devices"], "--devices needs a value (the number of emulated devices, 0..127)"),
    (["--devices", "x", "true"], "--devices expects an integer from 0 to 127, got 'x'"),
    (["--devices=128", "true"], "--devices expects an integer from 0 to 127, got '128'"),
    (["--devices=\u00b2", "true"], "--devices expects an integer from 0 to 127, got '\u00b2'"),
    (["--frobnicate", "true"], "unknown option '--frobnicate'"),
    (["--"], "no COMMAND given"),
])
def test_usage_errors(args, message):
    proc = accel_emu(*args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["usage: python -m accel emu [--devices N] [--profile P] [--] COMMAND [ARGS...]",
                                        f"error: {message}"]


def test_missing_command():
    proc = accel_emu("--", "accel-no-such-command-xyz")
    assert proc.returncode == 127
    assert "cannot run 'accel-no-such-command-xyz'" in proc.stderr


def test_missing_standins_are_an_error_message_not_a_traceback(monkeypatch, tmp_path, capsys):
    from accel import __main__ as cli

    monkeypatch.setattr(emu, "standin_dir", lambda: str(tmp_path / "absent"))
    assert cli.emu_main(["true"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m accel emu: could not load the stand-in CUDA libraries of accel; searched:\n")
    assert "no such file (this accel was built with -Dnative=false)" in err


def test_help():
    proc = accel_emu("--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m accel emu")
    # it names the stand-ins this install preloads, and the default the child really gets
    names = [os.path.basename(p) for p in emu.environ(base={})["LD_PRELOAD"].split()]
    text = " ".join(proc.stdout.split())
    assert f"standing in for {', '.join(names)} (LD_PRELOAD)" in text
    assert "(default: ACCEL_EMU_DEVICES if set, else 4)" in text


def test_environ_keeps_other_preloads_and_sets_devices():
    env = emu.environ(5, base={"LD_PRELOAD": "/x/libfoo.so:/y/libbar.so", "PATH": "/bin"})
    ours = [emu.cudart_path(), emu.driver_path()] + ([emu.cudart12_path()] if os.path.exists(emu.cudart12_path()) else [])
    ours += [emu.nvml_path(), emu.nvjitlink_path()]
    if emu.real_nvrtc_path() is not None:     # the NVRTC shim only where it has a real NVRTC to forward to
        ours.append(emu.nvrtc_shim_path())
    assert env["LD_PRELOAD"].split() == ours + ["/x/libfoo.so", "/y/libbar.so"]
    assert env["ACCEL_CUDART"] == emu.cudart_path() and env["ACCEL_EMU_DEVICES"] == "5" and env["PATH"] == "/bin"
    assert "ACCEL_EMU_DEVICES" not in emu.environ(base={})


@pytest.mark.parametrize("devices, exc, message", [
    ("2", TypeError, "devices must be an int (0..127) or None, got str '2'"),
    (True, TypeError, "devices must be an int (0..127) or None, got bool True"),
    (-1, ValueError, "devices must be between 0 and 127, got -1"),
    (128, ValueError, "devices must be between 0 and 127, got 128"),
])
def test_bad_device_counts(devices, exc, message):
    with pytest.raises(exc) as info:
        emu.environ(devices)
    assert str(info.value) == message
    with pytest.raises(exc) as info:
        emu.activate(devices)
    assert str(info.value) == message


def run_python(code, **env):
    proc = subprocess.run([sys.executable, "-c", code], env=_env(**env), capture_output=True, text=True,
                          timeout=120, cwd=tempfile.gettempdir())
    return proc


def test_activate_in_process():
    code = ("import ctypes, accel, accel.cuda as c; from accel import _lib; p = accel.emu.activate(devices=2); "
            "same = accel.emu.activate(2) == p; "
            "rt = ctypes.CDLL('libcudart.so.13'); n = ctypes.c_int(); rt.cudaGetDeviceCount(ctypes.byref(n)); "
            "print(c.device_count(), n.value, _lib.cudart().path == p, same)")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "2", "True", "True"]


def test_activate_refuses_a_second_configuration():
    proc = run_python("import accel.emu as e; e.activate(2); e.activate(3)")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "RuntimeError: accel.emu is already active with 2 devices; the emulated runtime reads its configuration "
        "once, so it cannot switch to 3")


def test_activate_refuses_when_accel_already_uses_another_runtime():
    proc = run_python("import accel.cuda as c, accel.emu as e; c.device_count(); e.activate()", ACCEL_CUDART="emu")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: accel already uses the CUDA runtime ") and "libaccel_cudart_emu.so" in last
    assert last.endswith("call accel.emu.activate() before the first CUDA call")


def test_activate_refuses_when_a_real_runtime_is_loaded(tmp_path):
    # any other file mapped as libcudart.so.* counts as the real runtime (a copy stands in for it here)
    other = tmp_path / "libcudart.so.13"
    shutil.copy(emu.cudart_path(), other)
    proc = run_python(f"import ctypes, accel.emu as e; ctypes.CDLL({str(other)!r}); e.activate()")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"RuntimeError: a CUDA library is already loaded in this process ({other}); call accel.emu.activate() "
        "before importing the library that loads it (or run the program with `python -m accel emu -- ...`)")


FAIL_EXPECTS = "symbol:n[,symbol:n...] with n >= 1 and a symbol the emulator can fail, 64 points at most"
PROFILE_EXPECTS = (f"one of {', '.join(emu.PROFILES)}, or a machine such as h100:2,a100:2 (name:count, ...; "
                   "ACCEL_EMU_DEVICES unset or equal to its total, 127 at most)")


def test_the_emulator_limits_are_the_ones_accel_names():
    # 127 devices and 64 fault points are accepted, one more of either is refused (issue 31: 128-256 devices used
    # to be accepted, then refused by index; 65 fault points made every device disappear without a reason)
    check = ("import ctypes, accel.emu as e; from accel import _lib\n"
             "f = ctypes.CDLL(_lib.emu_path()).accelEmuCheckConfig\n"
             "f.argtypes = [ctypes.c_char_p] * 5\n"
             "print([f(d, None, None, x, p) for d, x, p in [(b'127', None, None), (b'128', None, None), "
             "(None, b','.join([b'cudaMalloc:1'] * 64), None), (None, b','.join([b'cudaMalloc:1'] * 65), None), "
             "(None, None, b'h100:100,a100:27'), (None, None, b'h100:100,a100:28')]])")
    proc = run_python(check)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "[0, 1, 0, 4, 0, 5]"
    assert emu.MAX_DEVICES == 127


@pytest.mark.parametrize("name, value, expected", [
    ("ACCEL_EMU_MEMORY", "lots", "a byte count, optionally with a K, M, G or T suffix (e.g. 16G)"),
    ("ACCEL_EMU_DEVICES", "two", "an integer from 0 to 127 (torch's device index is 8 bits: more devices overflow it)"),
    ("ACCEL_EMU_DEVICES", "128", "an integer from 0 to 127 (torch's device index is 8 bits: more devices overflow it)"),
    ("ACCEL_EMU_FAIL", "cudaNoSuchCall:1", FAIL_EXPECTS),
    ("ACCEL_EMU_FAIL", ",".join(["cudaMalloc:1"] * 65), FAIL_EXPECTS),
    ("ACCEL_EMU_PROFILE", "h100:100,a100:28", PROFILE_EXPECTS),
])
def test_activate_reports_a_malformed_configuration(name, value, expected):
    proc = run_python("import accel.emu as e; e.activate()", **{name: value})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"ValueError: {name}={value!r} is malformed: the emulated runtime expects {expected}")


def test_a_failed_activate_changes_nothing_and_a_retry_after_the_fix_works():
    """Issue 17 C: the failed call had loaded the stand-ins and set ACCEL_CUDART, and the emulator had
    latched the bad value, so the retry called the valid value malformed."""
    code = ("import os, accel.emu as e, accel.cuda as c; from accel import _lib\n"
            "before = dict(os.environ)\n"
            "try:\n    e.activate()\nexcept ValueError as exc:\n    print('refused', exc)\n"
            "print(dict(os.environ) == before, e._active, e._handles, _lib._loaded_in_process('libcudart.so'),\n"
            "      _lib._loaded_in_process('libcuda.so'))\n"
            "os.environ['ACCEL_EMU_DEVICES'] = '3'\n"
            "print(e.activate() == e.cudart_path(), c.device_count(), e._active)\n")
    proc = run_python(code, ACCEL_EMU_DEVICES="3x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "refused ACCEL_EMU_DEVICES='3x' is malformed: the emulated runtime expects an integer from 0 to 127 (torch's device index is 8 bits: more devices overflow it)",
        "True None [] [] []", "True 3 3"]
    # activate(devices=N) checks the value it would set, and leaves the variable as it was when refused
    proc = run_python("import os, accel.emu as e; e._check_config = None\n"
                      "try:\n    e.activate(2)\nexcept TypeError:\n    pass\n"
                      "print(os.environ.get('ACCEL_EMU_DEVICES'), os.environ.get('ACCEL_CUDART'))",
                      ACCEL_EMU_DEVICES="5")
    assert proc.stdout.split() == ["5", "None"], proc.stderr


CUDA_CORE_SHARED = """
import accel.cuda as ac
from cuda.core import Device, EventOptions, Stream
assert Device.__module__ and len([Device(i) for i in range(ac.device_count())]) == 3
ac.set_device(1)
out = [Device().device_id]                                  # cuda.core sees accel's current device
s = ac.Stream()
cs = Stream.from_handle(s.cuda_stream)                      # one stream, two libraries
out += [cs.device.device_id, int(cs.handle) == s.cuda_stream]
e = cs.record(options=EventOptions(timing_enabled=True)); e.sync()
out.append(e.is_done)
Device(2).set_current()                                     # and accel sees cuda.core's
out.append(ac.current_device())
ev = ac.Event(); ev.record(s); cs.sync()
out.append(ev.query())
d = Device()
out += [d.compute_capability.major, d.compute_capability.minor, d.name.startswith("Emulated NVIDIA H100")]
ns = d.create_stream(); ns.wait(e); ns.sync()
out.append(ns.device.device_id)
print(out)
"""


@needs_cuda_core
def test_cuda_core_and_accel_share_the_emulated_runtime():
    proc = accel_emu("--devices", "3", sys.executable, "-c", CUDA_CORE_SHARED)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1, 1, True, True, 2, True, 9, 0, True, 2]"


@needs_cuda_core
def test_cuda_core_after_activate():
    code = ("import accel.emu; accel.emu.activate(devices=2)\n"
            "from cuda.core import Device\n"
            "d = Device(1); d.set_current(); s = d.create_stream(); ev = s.record(); ev.sync()\n"
            "import accel.cuda as ac\n"
            "print(ac.current_device(), ev.is_done, Device().device_id)")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "True", "1"]
