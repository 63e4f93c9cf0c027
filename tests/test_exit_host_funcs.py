"""Host functions still queued when the interpreter exits (both twins, in subprocesses).

A host function runs on a CUDA thread (the emulator's workers here, the driver's threads on a GPU).  If
one starts after Py_Finalize, taking the GIL dereferences a freed interpreter: the process segfaults
at exit.  accel's exit hook refuses new host functions, waits for the queued ones, and the native
trampoline stays out of Python from then on.

The crash was a race: before the fix ~5% of runs of each program below crashed on the native twin
and 2-60% on the python twin, when 8 ran at once on 2 cores (one at a time it hardly ever showed).
RUNS (scaled by ACCEL_STRESS) runs per program and twin make a miss before the fix unlikely (~1%).
"""
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

SCALE = max(1, int(os.environ.get("ACCEL_STRESS", "1")))
RUNS, CONCURRENT = 32 * SCALE, 8

# The program of the report: 64 pool streams, 20 plain Python host functions each, then exit.
HOST_FUNCS_AT_EXIT = """
import accel.cuda as cuda
def f():
    pass
streams = [cuda.Stream(device=i % 4, priority=-(i // 4 % 4)) for i in range(64)]
for s in streams:
    for _ in range(20):
        s.launch_host_func(f)
"""

# The same behind a 4 MiB copy on each stream: workers are busy without the GIL while the interpreter
# finalises, then reach the host functions (the emulator's own entry point, through ctypes).
HOST_FUNCS_AFTER_COPIES = """
import ctypes
import accel.cuda as cuda
from accel import _lib
rt = ctypes.CDLL(_lib.cudart().path)
rt.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
n = 4 << 20
src, dst = ctypes.create_string_buffer(n), ctypes.create_string_buffer(n)
def f():
    pass
streams = [cuda.Stream(device=i % 4, priority=-(i // 4 % 4)) for i in range(64)]
for s in streams:
    with cuda.device(s.device_index):
        assert rt.cudaMemcpyAsync(dst, src, n, 0, s.cuda_stream) == 0
    for _ in range(20):
        s.launch_host_func(f)
"""


@pytest.fixture(autouse=True)
def _emulated():
    from accel import _lib
    if os.environ.get("ACCEL_CUDART") != "emu" or not os.path.exists(_lib.emu_path()):
        pytest.skip("needs the emulated runtime")


def _env(twin):
    return dict(os.environ, ACCEL_BACKEND=twin.name, PYTHONFAULTHANDLER="1")


def _start(code, twin):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=_env(twin),
                            cwd=tempfile.gettempdir(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(code, twin, timeout=60):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=_env(twin), cwd=tempfile.gettempdir(),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.devices(4)
@pytest.mark.parametrize("program", [HOST_FUNCS_AT_EXIT, HOST_FUNCS_AFTER_COPIES], ids=["plain", "after_copies"])
def test_exit_with_queued_host_functions_never_crashes(twin, program):
    failures = []
    for start in range(0, RUNS, CONCURRENT):
        procs = [_start(program, twin) for _ in range(min(CONCURRENT, RUNS - start))]
        for p in procs:
            out, err = p.communicate(timeout=120)
            if p.returncode != 0:
                failures.append(f"exit status {p.returncode}: {err[-800:]}")
    assert not failures, f"{len(failures)} of {RUNS} runs failed; first: {failures[0]}"


@pytest.mark.devices(4)
def test_queued_host_functions_run_before_exit(twin):
    """The exit hook drains: every host function queued before exit ran (checked by an atexit handler
    registered before accel's, so it runs after it)."""
    proc = _run("""
        import atexit, time
        ran = []
        atexit.register(lambda: print("ran", len(ran)))
        import accel.cuda as cuda
        streams = [cuda.Stream(device=d) for d in range(4)]
        for s in streams:
            s.launch_host_func(lambda: time.sleep(0.2))   # still busy when the main thread exits
            for i in range(50):
                s.launch_host_func(lambda: ran.append(1))
    """, twin)
    assert proc.stdout.split() == ["ran", "200"]


def test_launch_during_exit_is_refused(twin):
    proc = _run("""
        import atexit
        def late():
            try:
                s.launch_host_func(print)
            except RuntimeError as exc:
                print("refused:", exc)
        atexit.register(late)     # runs after accel's exit hook
        import accel.cuda as cuda
        s = cuda.Stream()
    """, twin)
    assert proc.stdout.strip() == "refused: cannot launch a host function: the interpreter is shutting down"


def test_self_relaunching_host_function_does_not_hang_exit(twin):
    """A host function that queues itself again is told to stop at exit (through sys.unraisablehook)."""
    proc = _run("""
        import accel.cuda as cuda
        s = cuda.Stream()
        def again():
            s.launch_host_func(again)
        s.launch_host_func(again)
    """, twin)
    assert "RuntimeError: cannot launch a host function: the interpreter is shutting down" in proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_does_not_wait_for_the_parents_host_functions(twin):
    """A fork child inherits the count of the parent's queued host functions, but they never run there:
    its exit must not wait for them."""
    proc = _run("""
        import os, sys, threading, time, warnings
        import accel.cuda as cuda
        warnings.simplefilter("ignore", DeprecationWarning)   # fork with threads
        s, gate = cuda.Stream(), threading.Event()
        s.launch_host_func(lambda: gate.wait(60))
        pid = os.fork()
        if pid == 0:
            sys.exit(0)               # runs the atexit hooks in the child
        for _ in range(3000):         # up to 30 s, then the child is reported as hung
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.01)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            status = "hung"
        gate.set()
        s.synchronize()
        print("child", status)
    """, twin)
    assert proc.stdout.split() == ["child", "0"]


def test_exit_wait_says_what_it_waits_for(capsys):
    """A host function that never returns would make exit wait forever: after a while the wait says why."""
    from accel import _stream_common as sc
    left = iter([3, 2, 1, 0])
    counts = []

    def in_flight():
        counts.append(next(left))
        return counts[-1]

    sc.wait_for_host_functions(in_flight, poll=0, say_after=-1)
    assert counts[-1] == 0
    assert capsys.readouterr().err.startswith("accel: waiting at exit for 2 queued host function(s)")
