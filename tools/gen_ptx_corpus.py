"""Regenerates the PTX kernel corpus the engine's tests run (tests/data/ptx/*.ptx).

The corpus is test data: tests never need NVRTC or numba-cuda.  Run with the oracles installed in a venv
(``pip install nvidia-cuda-nvrtc nvidia-cuda-runtime cuda-bindings "numba-cuda[cu13]"``):

    python tools/gen_ptx_corpus.py            # writes tests/data/ptx/, prints each file and its tool

NVRTC sources are compiled with ``-arch=compute_90`` (NVRTC 13.x); numba kernels with
``numba.cuda.compile_ptx(fn, sig, cc=(9, 0))``, which needs no GPU.  Each file's first line records the
tool and its version.
"""
import os
import pathlib
import sys

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "ptx"

# name -> CUDA C source (extern "C" so the kernels keep readable names)
NVRTC = {
    "add": r"""
extern "C" __global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}""",
    "saxpy": r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}""",
    "grid_stride": r"""
extern "C" __global__ void grid_stride(const double *x, double *y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        y[i] = 2.0 * x[i] + 1.0;
}""",
    "reduce_shared": r"""
extern "C" __global__ void reduce_shared(const float *in, float *out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
    s[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}""",
    "atomics": r"""
extern "C" __global__ void atomics(const float *x, const int *v, int n, float *fsum, unsigned *hist,
                                   int *imax, int *cas_count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(fsum, x[i]);
    atomicAdd(&hist[v[i] & 15], 1u);
    atomicMax(imax, v[i]);
    int old = *cas_count, assumed;
    do { assumed = old; old = atomicCAS(cas_count, assumed, assumed + 1); } while (old != assumed);
}""",
    "warp_shuffle": r"""
extern "C" __global__ void warp_shuffle(const int *x, int n, int *sums, int *ballots, int *bcast, int *xors, int *scan) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = i < n ? x[i] : 0;
    unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
    int s = v;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    int b = __shfl_sync(0xffffffffu, v, 3);
    int xr = v;
    for (int o = 1; o < 32; o <<= 1) xr += __shfl_xor_sync(0xffffffffu, xr, o);
    int sc = v;
    for (int o = 1; o < 32; o <<= 1) { int t = __shfl_up_sync(0xffffffffu, sc, o); if (lane >= o) sc += t; }
    if (i < n) { bcast[i] = b; xors[i] = xr; scan[i] = sc; }
    if (lane == 0) { sums[i / 32] = s; ballots[i / 32] = (int)ballot; }
}""",
    "matmul_tiled": r"""
#define T 16
extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[T][T], Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}""",
    "transcendental": r"""
extern "C" __global__ void transcendental(const float *x, float *e, float *s, float *t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { e[i] = expf(x[i]); s[i] = sqrtf(fabsf(x[i])); t[i] = tanhf(x[i]); }
}""",
    "dyn_shared": r"""
extern "C" __global__ void dyn_shared(const int *in, int *out, int n) {
    extern __shared__ int buf[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    buf[t] = i < n ? in[i] : 0;
    __syncthreads();
    if (i < n) out[i] = buf[blockDim.x - 1 - t];
}""",
    "device_calls": r"""
__device__ __noinline__ int fib(int k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }
__device__ __noinline__ float scale(float v, float f, int *count) { atomicAdd(count, 1); return v * f; }
extern "C" __global__ void device_calls(const int *k, int *out, float *y, int *count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = fib(k[i]); y[i] = scale(y[i], 3.0f, count); }
}""",
    "divergence": r"""
extern "C" __global__ void divergence(const int *x, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = x[i], steps = 0;
    while (v != 1 && steps < 1000) { v = (v & 1) ? 3 * v + 1 : v / 2; steps++; }
    if (i % 3 == 0) steps = -steps;
    else if (i % 3 == 1) steps *= 2;
    out[i] = steps;
}""",
    "spinlock": r"""
extern "C" __global__ void spinlock(int *lock, int *counter, int *order, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool done = false;
    while (!done) {
        if (atomicCAS(lock, 0, 1) == 0) {
            int c = *(volatile int *)counter;
            order[c] = i;
            *(volatile int *)counter = c + 1;
            __threadfence();
            atomicExch(lock, 0);
            done = true;
        }
    }
}""",
    "half_axpy": r"""
#include <cuda_fp16.h>
extern "C" __global__ void half_axpy(__half a, const __half *x, __half *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hfma(a, x[i], y[i]);
}""",
}


def nvrtc_compile(name, src, include):
    from cuda.bindings import nvrtc

    def check(res):
        err = res[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{name}: {err}")
        return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)

    prog = check(nvrtc.nvrtcCreateProgram(src.encode(), f"{name}.cu".encode(), 0, [], []))
    opts = [b"-arch=compute_90", b"-std=c++17"] + ([f"-I{include}".encode()] if include else [])
    res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if res[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        n = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(f"{name}: {log.decode(errors='replace')}")
    n = check(nvrtc.nvrtcGetPTXSize(prog))
    buf = b" " * n
    check(nvrtc.nvrtcGetPTX(prog, buf))
    major, minor = check(nvrtc.nvrtcVersion())
    return buf.rstrip(b"\0").decode(), f"NVRTC {major}.{minor} -arch=compute_90"


def numba_kernels():
    from numba import cuda, float32, int32, float64

    def add(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = a[i] + b[i]

    def reduce_block(x, out):
        s = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        s[t] = x[i] if i < x.size else float32(0)
        cuda.syncthreads()
        k = 128
        while k > 0:
            if t < k:
                s[t] += s[t + k]
            cuda.syncthreads()
            k //= 2
        if t == 0:
            out[cuda.blockIdx.x] = s[0]

    def atomic_hist(v, hist):
        i = cuda.grid(1)
        if i < v.size:
            cuda.atomic.add(hist, v[i] % 16, 1)

    def math_fns(x, y):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = math.exp(x[i]) + math.sin(x[i]) * math.sqrt(abs(x[i]))

    from numba import uint32, int64, uint64

    def libdevice_f32(x, y):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            y[i, 0] = math.sin(v)
            y[i, 1] = math.cos(v)
            y[i, 2] = math.exp(v)
            y[i, 3] = math.log(abs(v) + float32(1))
            y[i, 4] = math.pow(abs(v), float32(1.5))
            y[i, 5] = math.tanh(v)
            y[i, 6] = math.atan2(v, float32(0.5))
            y[i, 7] = math.erf(v)

    def libdevice_f64(x, y):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            y[i, 0] = math.sin(v)
            y[i, 1] = math.cos(v)
            y[i, 2] = math.exp(v)
            y[i, 3] = math.log(abs(v) + 1.0)
            y[i, 4] = math.pow(abs(v), 1.5)
            y[i, 5] = math.tanh(v)
            y[i, 6] = math.atan2(v, 0.5)
            y[i, 7] = math.sqrt(abs(v)) / (v * v + 1.0)

    def warp_ops(x, out):
        i = cuda.grid(1)
        lane = cuda.laneid
        v = x[i] if i < x.size else 0
        s = v
        for o in (16, 8, 4, 2, 1):
            s += cuda.shfl_down_sync(0xffffffff, s, o)
        b = cuda.ballot_sync(0xffffffff, v > 0)
        a = cuda.all_sync(0xffffffff, v > -100)
        m = cuda.match_any_sync(0xffffffff, v & 3)
        x2 = cuda.shfl_xor_sync(0xffffffff, v, 1)
        if i < x.size:
            out[i, 0] = s
            out[i, 1] = b
            out[i, 2] = a
            out[i, 3] = m
            out[i, 4] = x2
            out[i, 5] = lane

    def sync_counts(x, out):
        t = cuda.threadIdx.x
        v = x[cuda.grid(1)]
        c = cuda.syncthreads_count(int32(v > 0))
        a = cuda.syncthreads_and(int32(v > 0))
        o = cuda.syncthreads_or(int32(v > 5))
        if t == 0:
            out[cuda.blockIdx.x, 0] = c
            out[cuda.blockIdx.x, 1] = a
            out[cuda.blockIdx.x, 2] = o

    def local_sort(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            buf = cuda.local.array(8, int32)
            for k in range(8):
                buf[k] = x[i, k]
            for a_ in range(8):
                for b_ in range(7 - a_):
                    if buf[b_] > buf[b_ + 1]:
                        t = buf[b_]
                        buf[b_] = buf[b_ + 1]
                        buf[b_ + 1] = t
            for k in range(8):
                out[i, k] = buf[k]

    def atomics_more(v, r_i32, r_u64, r_f64):
        i = cuda.grid(1)
        if i < v.size:
            x = v[i]
            cuda.atomic.max(r_i32, 0, x)
            cuda.atomic.min(r_i32, 1, x)
            cuda.atomic.inc(r_u64, 0, uint64(1000))
            cuda.atomic.add(r_f64, 0, float64(x))
            cuda.atomic.max(r_f64, 1, float64(x))
            cuda.atomic.compare_and_swap(r_i32[2:], 0, x)
            cuda.atomic.exch(r_i32, 3, 7)

    def int_ops(x, out):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            out[i, 0] = cuda.popc(v)
            out[i, 1] = cuda.clz(v)
            out[i, 2] = cuda.brev(v)
            out[i, 3] = cuda.ffs(v)
            out[i, 4] = v // 7
            out[i, 5] = v % 7
            out[i, 6] = (v >> 3) ^ (v << 2)
            out[i, 7] = min(v, 100) * max(v, -100)

    import math  # noqa: F401  (used inside math_fns through the closure's globals)
    for f in (math_fns, libdevice_f32, libdevice_f64):
        f.__globals__["math"] = math
    return [
        ("numba_libdevice_f32", libdevice_f32, (float32[:], float32[:, :])),
        ("numba_libdevice_f64", libdevice_f64, (float64[:], float64[:, :])),
        ("numba_warp_ops", warp_ops, (int32[:], int32[:, :])),
        ("numba_sync_counts", sync_counts, (int32[:], int32[:, :])),
        ("numba_local_sort", local_sort, (int32[:, :], int32[:, :])),
        ("numba_atomics_more", atomics_more, (int32[:], int32[:], uint64[:], float64[:])),
        ("numba_int_ops", int_ops, (int32[:], int32[:, :])),
        ("numba_add", add, (float32[:], float32[:], float32[:])),
        ("numba_reduce", reduce_block, (float32[:], float32[:])),
        ("numba_atomic_hist", atomic_hist, (int32[:], int32[:])),
        ("numba_math", math_fns, (float64[:], float64[:])),
    ]


def numba_fp16_link(compile_with_nvrtc):
    """numba's fp16 path: the kernel calls an .extern .func that numba links in from a C++ shim compiled by
    NVRTC (-rdc=true): two texts, numba_hfma.ptx and numba_hfma_shim.ptx, linked by the engine."""
    import numba.cuda
    from numba import cuda
    from numba.core import types
    from numba.cuda._internal import cuda_fp16

    def hfma(a, b, c):
        i = cuda.grid(1)
        if i < c.size:
            c[i] = cuda.fp16.hfma(a[i], b[i], c[i])
    ptx, _ = cuda.compile_ptx(hfma, (types.float16[:], types.float16[:], types.float16[:]), cc=(9, 0))
    tool = f"numba-cuda (numba {numba.__version__}) compile_ptx cc=(9, 0)"
    (OUT / "numba_hfma.ptx").write_text(f"// generated by tools/gen_ptx_corpus.py with {tool}\n" + ptx)
    print(f"numba_hfma.ptx  {tool}")
    inc = pathlib.Path(numba.cuda.__file__).parent / "include" / "13"
    from cuda.bindings import nvrtc
    src = cuda_fp16.shim_stream.getvalue()
    prog = nvrtc.nvrtcCreateProgram(src.encode(), b"shim.cu", 0, [], [])[1]
    opts = [b"-arch=compute_90", b"-rdc=true", f"-I{inc}".encode()]
    if nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError("numba's fp16 shim did not compile")
    n = nvrtc.nvrtcGetPTXSize(prog)[1]
    buf = b" " * n
    nvrtc.nvrtcGetPTX(prog, buf)
    major, minor = nvrtc.nvrtcVersion()[1:]
    (OUT / "numba_hfma_shim.ptx").write_text(f"// generated by tools/gen_ptx_corpus.py: numba's cuda_fp16 shim with NVRTC {major}.{minor} -rdc=true\n"
                                             + buf.rstrip(b"\0").decode())
    print("numba_hfma_shim.ptx")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    include = None
    try:
        import nvidia.cu13  # noqa: F401
        base = pathlib.Path(list(nvidia.cu13.__path__)[0]) / "include"
        if (base / "cuda_fp16.h").exists():
            include = str(base)
    except ImportError:
        pass
    for name, src in NVRTC.items():
        if "cuda_fp16.h" in src and not include:
            print(f"skip {name}: cuda_fp16.h not found (pip install nvidia-cuda-runtime)", file=sys.stderr)
            continue
        ptx, tool = nvrtc_compile(name, src, include)
        (OUT / f"{name}.ptx").write_text(f"// generated by tools/gen_ptx_corpus.py with {tool}\n" + ptx)
        print(f"{name}.ptx  {tool}")
    import numba
    from numba import cuda
    numba_fp16_link(nvrtc_compile)
    for name, fn, sig in numba_kernels():
        ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
        tool = f"numba-cuda {cuda.__version__ if hasattr(cuda, '__version__') else ''} (numba {numba.__version__}) compile_ptx cc=(9, 0)"
        (OUT / f"{name}.ptx").write_text(f"// generated by tools/gen_ptx_corpus.py with {tool}\n" + ptx)
        print(f"{name}.ptx  {tool}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_CUDA_DEFAULT_PTX_CC", "9.0")
    sys.exit(main())
