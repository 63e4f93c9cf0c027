"""accel.lazy's CUDA backend beside its numpy backend: one cached step (trace, mark_step running the cached
program, numpy() of the result) of two graphs, on the selected twin (ACCEL_BACKEND):

- "elementwise": ((x + y) * 2.5 - x / 1.5).relu() - (-y) * x over float32[16, 64, 64] and float32[64] (one fused
  kernel on the CUDA backend);
- "attention": softmax((q @ k^T) * 0.125 + bias) @ v, then layer-normalised by hand (mean, var through sums) over
  float32[2, 32, 32] (tiled matmuls, a row softmax, block reductions and elementwise kernels).

On the emulator (the default here) a CUDA step is the PTX engine interpreting every thread of every kernel, plus
the copies in and out: these rows measure the backend's host overhead and the engine, not a GPU (on a machine
with one, bench/conftest.py's ACCEL_BENCH_CUDART selects the real runtime).  The CUDA rows are skipped without
NVRTC (the cuda-lazy extra).
"""
import numpy as np
import pytest

import accel.lazy as L

try:
    from accel import emu as _emu
    _NVRTC = _emu.real_nvrtc_path()
except Exception:           # noqa: BLE001
    _NVRTC = None

RNG = np.random.default_rng(0)
EW = RNG.standard_normal((16, 64, 64)).astype(np.float32), RNG.standard_normal(64).astype(np.float32)
ATT = tuple(RNG.standard_normal((2, 32, 32)).astype(np.float32) for _ in range(4))


def _elementwise(x, y):
    return ((x + y) * 2.5 - x / 1.5).relu() - (-y) * x


def _attention(q, k, v, bias):
    a = ((q @ k.transpose(1, 2)) * 0.125 + bias).softmax(-1) @ v
    m = a.mean(-1, keepdim=True)
    d = a - m
    return d / ((d * d).mean(-1, keepdim=True) + 1e-5).sqrt()


WORK = {"elementwise": (_elementwise, EW), "attention": (_attention, ATT)}


def _step(fn, arrays):
    r = fn(*[L.tensor(a) for a in arrays])
    L.mark_step()
    return r.numpy()


@pytest.fixture(params=["numpy", "cuda"])
def backend(request):
    if request.param == "cuda" and _NVRTC is None:
        pytest.skip("NVRTC (the cuda-lazy extra) is not installed: no CUDA backend rows")
    prev = L.set_backend(request.param)
    yield request.param
    L.set_backend(prev)


@pytest.mark.parametrize("work", sorted(WORK))
def test_lazy_backend_step(bench, backend, work):
    fn, arrays = WORK[work]
    ref = _step(fn, arrays)            # compiles (NVRTC on the CUDA backend) and caches the program
    got = _step(fn, arrays)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    bench(_step, fn, arrays, iterations=3, rounds=5)
