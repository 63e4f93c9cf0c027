"""pytest-benchmark: the PTX engine's speed (issue 32, item 6).  Each benchmark launches a kernel of the
committed corpus (tests/data/ptx) through the emulator's test entry point with one engine worker thread
(ACCEL_EMU_PTX_THREADS=1), and reports the thread-instructions executed per second of launch wall time
and per second of the launching thread's CPU time (the build excluded; the CPU figure is the one a loaded
machine does not distort) in extra_info["thread_insns_per_s"] / ["thread_insns_per_cpu_s"]: elementwise add and a shared-memory reduction over
2**20 elements, and numba-cuda's 2**20-element add (7 parameters per array, generic loads).

Run: ``pytest bench/test_bench_ptx.py --benchmark-only`` (installed package).  Target: >= 1e8
thread-instructions/s per core on the elementwise kernel."""
import ctypes
import importlib.util
import os
import pathlib

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location("ptx_harness", pathlib.Path(__file__).resolve().parent.parent / "tests" / "ptx_harness.py")
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)

pytestmark = pytest.mark.skipif(not H.HAVE_EMU, reason="no emulator in this install")
N = 1 << 20


@pytest.fixture(autouse=True)
def one_worker(monkeypatch):
    monkeypatch.setenv("ACCEL_EMU_PTX_THREADS", "1")


def _launch(text, kernel, grid, block, args):
    lib = H.lib()
    lib.accelEmuPtxRunEx.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_double),
                                     ctypes.c_char_p, ctypes.c_size_t]
    keep = [H._arg(a) for a in args]
    ptrs = (ctypes.c_void_p * len(keep))(*[ctypes.cast(ctypes.pointer(k), ctypes.c_void_p) for k in keep])
    texts = (ctypes.c_char_p * 1)(text.encode())
    cnt, secs = ctypes.c_ulonglong(), (ctypes.c_double * 2)()
    err = ctypes.create_string_buffer(512)
    rc = lib.accelEmuPtxRunEx(texts, 1, kernel.encode(), (ctypes.c_uint * 3)(grid, 1, 1), (ctypes.c_uint * 3)(block, 1, 1),
                              0, ptrs, len(keep), 0, ctypes.byref(cnt), secs, err, len(err))
    assert rc == 0, err.value.decode()
    return cnt.value, secs[0], secs[1]


def _bench(benchmark, text, kernel, grid, block, args):
    stats = []
    benchmark.pedantic(lambda: stats.append(_launch(text, kernel, grid, block, args)), rounds=3, iterations=1)
    insns = stats[-1][0]
    best = min(s[1] for s in stats)
    cpu = min(s[2] for s in stats)
    benchmark.extra_info["thread_insns"] = insns
    benchmark.extra_info["thread_insns_per_s"] = insns / best
    benchmark.extra_info["thread_insns_per_cpu_s"] = insns / cpu
    print(f"\n{kernel[:40]}: {insns} thread-instructions, best {best * 1e3:.1f} ms wall ({insns / best:.3g}/s), "
          f"{cpu * 1e3:.1f} ms CPU ({insns / cpu:.3g} thread-instructions per CPU second)")
    return insns / cpu


def test_bench_ptx_elementwise(benchmark):
    a = np.ones(N, np.float32)
    da, db, dc = H.Dev(a), H.Dev(a), H.Dev(a)
    _bench(benchmark, H.ptx("add"), "add", N // 256, 256, [da, db, dc, ctypes.c_int(N)])
    np.testing.assert_array_equal(dc.get(), a + a)


def test_bench_ptx_shared_reduction(benchmark):
    x = np.ones(N, np.float32)
    dx, do = H.Dev(x), H.Dev(np.zeros(N // 256, np.float32))
    _bench(benchmark, H.ptx("reduce_shared"), "reduce_shared", N // 256, 256, [dx, do, ctypes.c_int(N)])
    assert (do.get() == 256).all()


def test_bench_ptx_numba_add(benchmark):
    text = H.ptx("numba_add")
    a = np.arange(N, dtype=np.float32)
    da, db, dc = H.Dev(a), H.Dev(a), H.Dev(np.zeros(N, np.float32))
    args = H.numba_array_args(da, N, 4) + H.numba_array_args(db, N, 4) + H.numba_array_args(dc, N, 4)
    _bench(benchmark, text, H.kernel_name(text), N // 256, 256, args)
    np.testing.assert_array_equal(dc.get(), a + a)
