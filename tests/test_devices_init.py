"""Lazy init, queued calls, fork poisoning, driver-less and library-less runtimes, device_count caching.

These mutate process-global state, so each runs in a fresh interpreter, on both backends
(ACCEL_BACKEND=native / python) where the twin matters.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)


def run(subprocess_python, backend, code, **env):
    env = {"ACCEL_BACKEND": backend, **env}
    proc = subprocess_python(textwrap.dedent(code), env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def last_json(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def backend(twin):
    """ACCEL_BACKEND for the subprocess: the twin's name (native / python)."""
    return twin.name


@pytest.mark.devices(1)
def test_lazy_init_runs_once_on_first_use(subprocess_python, backend):
    proc = run(subprocess_python, backend, """
        import json, accel, accel.cuda as cuda
        from accel.cuda import _init
        calls = []
        orig = _init._count_or_raise
        _init._count_or_raise = lambda f: calls.append(f) or orig(f)
        out = [accel.backend, cuda.is_initialized()]
        out.append(cuda.is_available())        # the count does not initialise
        out.append(cuda.is_initialized())
        out.append(cuda.current_device())      # first CUDA use: runs _lazy_init
        out.append(cuda.is_initialized())
        cuda.current_device(); cuda.init(); cuda.set_device(LAST)
        out.append(calls)
        print(json.dumps(out))
    """.replace("LAST", str(min(1, NDEV - 1))))   # device 1, or 0 on a machine with one
    # is_available counts once (fail_if_no_driver=False); init counts once more (True)
    assert last_json(proc) == [backend, False, True, False, 0, True, [False, True]]


@pytest.mark.parametrize("entry", [
    pytest.param(e, marks=pytest.mark.devices(2 if "(1)" in e else 1))
    for e in ["cuda.current_device()", "cuda.set_device(0)", "cuda.exchange_device(1)", "cuda.maybe_exchange_device(1)",
              "cuda.device(1).__enter__()", "cuda.get_device_properties(0)", "cuda.synchronize()"]])
def test_every_entry_point_initialises(subprocess_python, backend, entry):
    proc = run(subprocess_python, backend, f"""
        import accel.cuda as cuda
        assert not cuda.is_initialized()
        {entry}
        print(cuda.is_initialized())
    """)
    assert proc.stdout.split()[-1] == "True"


@pytest.mark.devices(1)
def test_queued_calls_run_at_init_in_order(subprocess_python, backend):
    proc = run(subprocess_python, backend, """
        import json, accel.cuda as cuda
        seen = []
        cuda._lazy_call(lambda: seen.append(("a", cuda.is_initialized())))
        # a queued call may use CUDA itself (re-entrant init) and queue another call
        cuda._lazy_call(lambda: seen.append(("b", cuda.current_device())))
        cuda._lazy_call(lambda: cuda._lazy_call(lambda: seen.append("nested")))
        before = list(seen)
        cuda.init()
        cuda._lazy_call(lambda: seen.append("now"))   # after init: runs immediately
        print(json.dumps([before, seen, cuda.is_initialized()]))
    """)
    assert last_json(proc) == [[], [["a", False], ["b", 0], "nested", "now"], True]


@pytest.mark.devices(1)
def test_failed_queued_call_raises_deferred_error_with_call_site(subprocess_python, backend):
    proc = run(subprocess_python, backend, """
        import accel.cuda as cuda
        from accel.errors import DeferredCudaCallError
        def queue_the_bad_call():
            cuda._lazy_call(lambda: 1 / 0)
        queue_the_bad_call()
        try:
            cuda.current_device()
        except DeferredCudaCallError as e:
            msg = str(e)
            assert msg.startswith("CUDA call failed lazily at initialization with error: division by zero"), msg
            assert "CUDA call was originally invoked at:" in msg and "queue_the_bad_call" in msg, msg
            assert isinstance(e.__cause__, ZeroDivisionError)
        else:
            raise SystemExit("no DeferredCudaCallError")
        print(cuda.is_initialized())
        try:
            cuda.current_device()   # still not initialised: the queued call is retried and fails again
        except DeferredCudaCallError:
            print("again")
    """)
    assert proc.stdout.split()[-2:] == ["False", "again"]


@pytest.mark.devices(1)
def test_racing_threads_initialise_once(subprocess_python, backend):
    proc = run(subprocess_python, backend, """
        import threading, time, accel.cuda as cuda
        from accel.cuda import _init
        calls = []
        orig = _init._count_or_raise
        def slow(f):
            calls.append(f)
            time.sleep(0.05)
            return orig(f)
        _init._count_or_raise = slow
        seen = []
        cuda._lazy_call(lambda: seen.append(threading.get_ident()))
        barrier = threading.Barrier(16)
        results = []
        def worker():
            barrier.wait()
            results.append(cuda.current_device())
        ts = [threading.Thread(target=worker) for _ in range(16)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print(len(calls), len(seen), sorted(set(results)), len(results))
    """)
    assert proc.stdout.split() == ["1", "1", "[0]", "16"]


FORK_MSG = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
            "the 'spawn' start method")

FORK_CHILD = """
import os, sys, accel.cuda as cuda
def child_probe():
    try:
        cuda.current_device()
        return "ok"
    except RuntimeError as e:
        return str(e)
{parent}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    msg = child_probe() + "|" + str(cuda.is_initialized())
    os.write(w, msg.encode()); os._exit(0)
os.close(w)
data = os.read(r, 4096).decode()
os.waitpid(pid, 0)
print(repr(data))
print("parent", cuda.current_device(), cuda.is_initialized())
"""


@pytest.mark.devices(2)
def test_fork_child_of_initialised_parent_gets_torch_error(subprocess_python, backend):
    proc = run(subprocess_python, backend, FORK_CHILD.format(parent="cuda.set_device(1)"))
    lines = proc.stdout.splitlines()
    assert eval(lines[0]) == f"{FORK_MSG}|False"
    assert lines[1] == "parent 1 True"


@pytest.mark.devices(1)
def test_fork_child_of_parent_that_counted_devices_is_poisoned(subprocess_python, backend):
    # torch registers its fork handler in the device count: is_available() poisons a later fork
    proc = run(subprocess_python, backend, FORK_CHILD.format(parent="assert cuda.is_available()"))
    assert eval(proc.stdout.splitlines()[0]) == f"{FORK_MSG}|False"


@pytest.mark.devices(1)
def test_fork_child_of_untouched_parent_works(subprocess_python, backend):
    proc = run(subprocess_python, backend, FORK_CHILD.format(parent=""))
    assert eval(proc.stdout.splitlines()[0]) == "ok|True"


@pytest.mark.devices(1)
def test_fork_child_of_a_parent_that_initialised_cuda_elsewhere_gets_the_drivers_refusal(subprocess_python, backend):
    # Another library initialised CUDA in the parent, accel did not (so it has no fork poisoning of its own): in
    # the child the driver refuses, as a real one does a forked child (cudaErrorInitializationError), and accel
    # says so with torch's message for it; the emulator used to keep working there (issue 31).
    proc = run(subprocess_python, backend, FORK_CHILD.format(parent="""
import ctypes
from accel import _lib
assert _lib.cudart().cdll.cudaGetDeviceCount(ctypes.byref(ctypes.c_int())) == 0
assert not cuda.is_initialized()
"""))
    child, initialised = eval(proc.stdout.splitlines()[0]).rsplit("|", 1)
    assert (child, initialised) == ("CUDA driver initialization failed, you might not have a CUDA gpu.", "False")
    assert proc.stdout.splitlines()[1] == "parent 0 True"


@pytest.mark.emu_only("its ACCEL_EMU_* settings")
@pytest.mark.parametrize("name, value", [("ACCEL_EMU_DEVICES", "lots"), ("ACCEL_EMU_DEVICES", "128"),
                                         ("ACCEL_EMU_PROFILE", "h200"), ("ACCEL_EMU_MEMORY", "12Q")])
def test_a_malformed_emulator_setting_is_named(subprocess_python, backend, name, value):
    # Under ACCEL_CUDART=emu the runtime refuses a malformed setting (cudaErrorInitializationError): accel adds
    # which one and what it expects to torch's message, as `accel emu` says it (issue 31: only torch's text).
    proc = run(subprocess_python, backend, """
        import json, warnings, accel.cuda as cuda
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            avail = cuda.is_available()
        try:
            cuda.init()
            msg = None
        except RuntimeError as exc:
            msg = str(exc)
        print(json.dumps([avail, [str(x.message) for x in w], msg]))
    """, ACCEL_CUDART="emu", **{name: value})
    avail, warned, msg = last_json(proc)
    assert avail is False and msg is not None
    assert msg.startswith("CUDA driver initialization failed, you might not have a CUDA gpu. "), msg
    assert f"{name}={value!r} is malformed: the emulated runtime expects " in msg, msg
    assert warned == [f"CUDA initialization: {msg}"]


@pytest.mark.devices(1)
def test_nvml_based_check_does_not_poison_fork(subprocess_python, backend):
    code = FORK_CHILD.format(parent="""
from accel.cuda import _visible
_visible._raw_device_count_nvml = lambda: 4
assert cuda.is_available() and cuda.device_count() == 4
""")
    proc = run(subprocess_python, backend, code, ACCEL_NVML_BASED_CUDA_CHECK="1")
    assert eval(proc.stdout.splitlines()[0]) == "ok|True"


@pytest.mark.devices(4)
def test_spawn_works_after_parent_initialised(backend, tmp_path):
    script = tmp_path / "spawn_main.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp, accel.cuda as cuda
        def work(d):
            cuda.set_device(d)
            return cuda.current_device(), cuda.is_initialized()
        if __name__ == "__main__":
            cuda.set_device(2)
            with mp.get_context("spawn").Pool(2) as pool:
                print(pool.map(work, [1, 3]), cuda.current_device())
    """))
    proc = subprocess.run([sys.executable, str(script)], env={**os.environ, "ACCEL_BACKEND": backend},
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[(1, True), (3, True)] 2"


# -- no driver, no library, no device ---------------------------------------------------------------

PROBE = """
import json, warnings, accel.cuda as cuda
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    out = [cuda.is_available(), cuda.device_count(), cuda.is_available(), cuda.device_count()]
out.append([str(x.message) for x in w])
for fn in (cuda.current_device, cuda.init, lambda: cuda.get_device_properties(0)):
    try:
        fn()
        out.append("no error")
    except Exception as e:
        out.append([type(e).__name__, str(e)])
out.append(cuda.is_initialized())
print(json.dumps(out))
"""


def test_driverless_system_libcudart(subprocess_python, backend):
    # The machine's real libcudart with no driver: cudaGetDeviceCount gives 35 and the driver version 0.
    proc = subprocess_python("from accel import _lib; print(_lib.cudart().emulated)", env={"ACCEL_CUDART": None})
    if proc.returncode != 0 or proc.stdout.strip() != "False":
        pytest.skip("no system libcudart")
    probe = subprocess_python("import accel._python._cudart as c\ntry:\n    print(c.cudaGetDeviceCount())\n"
                              "except Exception as e:\n    print(e.code)", env={"ACCEL_CUDART": None})
    if probe.stdout.strip() != "35":
        pytest.skip(f"the system libcudart is not driver-less here ({probe.stdout.strip()})")
    out = last_json(run(subprocess_python, backend, PROBE, ACCEL_CUDART=None))
    assert out[:4] == [False, 0, False, 0]
    assert out[4] == []  # torch: no driver at all is silent (fail_if_no_driver=false)
    for entry in out[5:8]:
        assert entry[0] == "RuntimeError"
        assert entry[1].startswith("Found no NVIDIA driver on your system."), entry
    assert out[8] is False


def test_missing_library(subprocess_python, backend):
    out = last_json(run(subprocess_python, backend, PROBE, ACCEL_CUDART="/nonexistent/libcudart.so.13"))
    assert out[:5] == [False, 0, False, 0, []]
    for entry in out[5:8]:
        assert entry[0] == "LibraryNotFoundError"
        assert "/nonexistent/libcudart.so.13" in entry[1]
    assert out[8] is False


@pytest.mark.emu_only("ACCEL_EMU_DEVICES=0")
def test_no_device(subprocess_python, backend):
    out = last_json(run(subprocess_python, backend, PROBE, ACCEL_EMU_DEVICES="0"))
    assert out[:5] == [False, 0, False, 0, []]
    assert out[5] == out[6] == ["RuntimeError", "No CUDA GPUs are available"]


@pytest.mark.emu_only("ACCEL_EMU_FAIL")
def test_broken_runtime_warns_once_and_counts_zero(subprocess_python, backend):
    # a malformed fault spec makes every emulated call fail with cudaErrorInitializationError (named: issue 31)
    out = last_json(run(subprocess_python, backend, PROBE, ACCEL_EMU_FAIL="garbage"))
    msg = ("CUDA driver initialization failed, you might not have a CUDA gpu. ACCEL_EMU_FAIL='garbage' is malformed: "
           "the emulated runtime expects symbol:n[,symbol:n...] with n >= 1 and a symbol the emulator can fail, "
           "64 points at most")
    assert out[:4] == [False, 0, False, 0]
    assert out[4] == [f"CUDA initialization: {msg}"]
    assert out[5] == ["RuntimeError", msg]


@pytest.mark.devices(3)   # CUDA_VISIBLE_DEVICES=2 at init
def test_count_is_cached_once_initialised(subprocess_python, backend):
    proc = run(subprocess_python, backend, """
        import os, json, accel.cuda as cuda
        from accel.cuda import _visible
        _visible._raw_device_count_nvml = lambda: 4
        out = []
        os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
        out.append(cuda.device_count())
        os.environ["CUDA_VISIBLE_DEVICES"] = "2"
        out.append(cuda.device_count())          # not cached before init: re-read
        cuda.init()
        out.append(cuda.device_count())
        os.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2"
        out.append(cuda.device_count())          # cached after init
        print(json.dumps(out))
    """, PYTORCH_NVML_BASED_CUDA_CHECK="1")
    assert last_json(proc) == [2, 1, 1, 1]


@pytest.mark.parametrize("var", ["ACCEL_NVML_BASED_CUDA_CHECK", "PYTORCH_NVML_BASED_CUDA_CHECK"])
def test_nvml_based_count_and_fallback(subprocess_python, backend, var):
    proc = run(subprocess_python, backend, """
        import json, accel.cuda as cuda
        from accel.cuda import _visible, _init
        out = []
        _visible._raw_device_count_nvml = lambda: 2     # NVML says 2 (CUDA_VISIBLE_DEVICES unset)
        out.append([cuda.device_count(), cuda.is_available(), _init._raw_count])
        _visible._raw_device_count_nvml = lambda: -1    # NVML unusable: cudart's count (4 emulated)
        out.append([cuda.device_count(), cuda.is_available()])
        print(json.dumps(out))
    """, **{var: "1"})
    assert last_json(proc) == [[2, True, None], [NDEV, NDEV > 0]]


@pytest.mark.devices(1)
def test_local_device_from_rank_variables(subprocess_python, backend):
    proc = run(subprocess_python, backend, """
        import os, json, accel.cuda as cuda
        out = [cuda.local_device()]
        for var, val in [("OMPI_COMM_WORLD_LOCAL_RANK", "3"), ("SLURM_LOCALID", "6"), ("LOCAL_RANK", "5")]:
            os.environ[var] = val
            out.append(cuda.local_device())
        os.environ["LOCAL_RANK"] = "x1"
        try:
            cuda.local_device()
        except ValueError as e:
            out.append(str(e))
        print(json.dumps(out))
    """)
    assert last_json(proc) == [0, 3 % NDEV, 6 % NDEV, 5 % NDEV,
                               "LOCAL_RANK='x1' is not a local rank: expected a non-negative integer"]
