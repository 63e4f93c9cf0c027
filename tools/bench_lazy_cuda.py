"""Time accel.lazy's CUDA backend against the numpy backend on one elementwise step (issue 34's first slice).

    ACCEL_CUDART=emu .venv/bin/python tools/bench_lazy_cuda.py

One graph, ((x + y) * 2.5 - x / 1.5).relu() - (-y) * x over float32[8, 128, 256] and float32[256]: the first step
(trace, compile: NVRTC on the cuda backend, run) and the median of 5 cached steps with new input values, then
the counters and NVRTC's compile time (metric NvrtcCompileTime).  On the emulator a cached step is the PTX
engine executing 262,144 threads plus the host copies in and out.
"""
import time, sys
import numpy as np
import accel.lazy as L
from accel.lazy import metrics as M
shape = (8, 128, 256)
rng = np.random.default_rng(0)
a = rng.standard_normal(shape).astype(np.float32); b = rng.standard_normal(shape[-1:]).astype(np.float32)
def step(s):
    x, y = L.tensor(a + s), L.tensor(b)
    z = ((x + y) * 2.5 - x / 1.5).relu() - (-y) * x
    L.mark_step()
    return z.numpy()
for backend in ("numpy", "cuda"):
    L.set_backend(backend); M.reset()
    t0 = time.perf_counter(); step(0); first = time.perf_counter() - t0
    ts = []
    for s in range(1, 6):
        t0 = time.perf_counter(); step(s); ts.append(time.perf_counter() - t0)
    print(f"{backend}: first step {first*1e3:.1f} ms, cached step median {np.median(ts)*1e3:.1f} ms (min {min(ts)*1e3:.1f})",
          f"NvrtcCompile={M.counter_value('NvrtcCompile')} CudaKernelLaunch={M.counter_value('CudaKernelLaunch')}",
          "compile ns:", M.metric_data("NvrtcCompileTime")[1] if M.metric_data("NvrtcCompileTime") else None)
