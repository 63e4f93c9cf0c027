"""Regenerates the PTX kernel corpus the engine's tests run (tests/data/ptx/*.ptx).

The corpus is test data: tests never need NVRTC or numba-cuda.  Run with the oracles installed in a venv
(``pip install nvidia-cuda-nvrtc nvidia-cuda-runtime cuda-bindings "numba-cuda[cu13]"``):

    python tools/gen_ptx_corpus.py            # writes tests/data/ptx/, prints each file and its tool
    python tools/gen_ptx_corpus.py mma triton # only the files whose names start with these

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


# Tensor-core and asynchronous-copy kernels, compiled for compute_80 (sm_80's instructions; the cuda_*.h
# headers come from the nvidia-cuda-runtime wheel).  Fragment loads spell out the ISA's layouts.
TENSOR = {
    "mma_gemm_f16": r"""
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>
// C (M x N, f32) = A (M x K, f16) * B (K x N, f16), all row-major; N and K multiples of 8.  One warp per
// 16x16 tile of C: cp.async (zero-filled past the edges) into shared memory, ldmatrix (.x4 for A, .x4.trans
// for B), two mma.sync m16n8k16 per 16-wide step of K.
extern "C" __global__ void mma_gemm_f16(const __half *A, const __half *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) __half As[16][16];
    __shared__ __align__(16) __half Bs[16][16];
    int lane = threadIdx.x, m0 = blockIdx.y * 16, n0 = blockIdx.x * 16;
    float acc[2][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
        int r = lane >> 1, c = (lane & 1) * 8;
        int av = m0 + r < M ? min(max(K - (k0 + c), 0), 8) : 0;
        __pipeline_memcpy_async(&As[r][c], av ? A + (size_t)(m0 + r) * K + k0 + c : A, 16, 16 - 2 * av);
        int bv = k0 + r < K ? min(max(N - (n0 + c), 0), 8) : 0;
        __pipeline_memcpy_async(&Bs[r][c], bv ? B + (size_t)(k0 + r) * N + n0 + c : B, 16, 16 - 2 * bv);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        __syncwarp();
        unsigned a[4], b[4];
        int j = lane >> 3, rr = lane & 7;
        unsigned pa = (unsigned)__cvta_generic_to_shared(&As[(j & 1) * 8 + rr][(j >> 1) * 8]);
        unsigned pb = (unsigned)__cvta_generic_to_shared(&Bs[(j & 1) * 8 + rr][(j >> 1) * 8]);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(pa));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(pb));
        for (int h = 0; h < 2; h++)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * h]), "r"(b[2 * h + 1]));
        __syncwarp();
    }
    int g = lane >> 2, t = lane & 3;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++) {
            int row = m0 + g + 8 * (i >> 1), col = n0 + 8 * h + 2 * t + (i & 1);
            if (row < M && col < N) C[(size_t)row * N + col] = acc[h][i];
        }
}""",
    "mma_frags": r"""
// One warp, one mma per kernel: D = A * B + C with A (m x k), B (k x n), C and D (m x n) row-major in global
// memory, each lane loading its fragment elements at the ISA's (row, col).
#define G (threadIdx.x >> 2)
#define T (threadIdx.x & 3)
extern "C" __global__ void mma_tf32_m16n8k8(const float *A, const float *B, const float *C, float *D) {
    unsigned a[4], b[2];
    float c[4];
    for (int i = 0; i < 4; i++) a[i] = __float_as_uint(A[(G + 8 * (i & 1)) * 8 + T + 4 * (i >> 1)]);
    for (int i = 0; i < 2; i++) b[i] = __float_as_uint(B[(T + 4 * i) * 8 + G]);
    for (int i = 0; i < 4; i++) c[i] = C[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    for (int i = 0; i < 4; i++) D[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)] = c[i];
}
extern "C" __global__ void mma_bf16_m16n8k16(const unsigned short *A, const unsigned short *B, const float *C, float *D) {
    unsigned a[4] = {}, b[2] = {};
    float c[4];
    for (int i = 0; i < 8; i++) a[i / 2] |= (unsigned)A[(G + 8 * ((i >> 1) & 1)) * 16 + 2 * T + (i & 1) + 8 * (i >> 2)] << (16 * (i & 1));
    for (int i = 0; i < 4; i++) b[i / 2] |= (unsigned)B[(2 * T + (i & 1) + 8 * (i >> 1)) * 8 + G] << (16 * (i & 1));
    for (int i = 0; i < 4; i++) c[i] = C[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    for (int i = 0; i < 4; i++) D[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)] = c[i];
}
extern "C" __global__ void mma_f16acc_m16n8k8(const unsigned short *A, const unsigned short *B, const unsigned short *C, unsigned short *D) {
    unsigned a[2] = {}, b = 0, c[2] = {};
    for (int i = 0; i < 4; i++) a[i / 2] |= (unsigned)A[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)] << (16 * (i & 1));
    for (int i = 0; i < 2; i++) b |= (unsigned)B[(2 * T + i) * 8 + G] << (16 * i);
    for (int i = 0; i < 4; i++) c[i / 2] |= (unsigned)C[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)] << (16 * (i & 1));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%0,%1};"
                 : "+r"(c[0]), "+r"(c[1]) : "r"(a[0]), "r"(a[1]), "r"(b));
    for (int i = 0; i < 4; i++) D[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)] = (unsigned short)(c[i / 2] >> (16 * (i & 1)));
}
extern "C" __global__ void mma_s8_m16n8k32(const signed char *A, const signed char *B, const int *C, int *D) {
    unsigned a[4] = {}, b[2] = {};
    int c[4];
    for (int i = 0; i < 16; i++)
        a[i / 4] |= (unsigned)(unsigned char)A[(G + 8 * ((i >> 2) & 1)) * 32 + 4 * T + (i & 3) + 16 * (i >> 3)] << (8 * (i & 3));
    for (int i = 0; i < 8; i++) b[i / 4] |= (unsigned)(unsigned char)B[(4 * T + (i & 3) + 16 * (i >> 2)) * 8 + G] << (8 * (i & 3));
    for (int i = 0; i < 4; i++) c[i] = C[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    for (int i = 0; i < 4; i++) D[(G + 8 * (i >> 1)) * 8 + 2 * T + (i & 1)] = c[i];
}
extern "C" __global__ void mma_f64_m8n8k4(const double *A, const double *B, const double *C, double *D) {
    double a = A[G * 4 + T], b = B[T * 8 + G], c0 = C[G * 8 + 2 * T], c1 = C[G * 8 + 2 * T + 1];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};" : "+d"(c0), "+d"(c1) : "d"(a), "d"(b));
    D[G * 8 + 2 * T] = c0;
    D[G * 8 + 2 * T + 1] = c1;
}""",
    "wmma_gemm": r"""
#include <mma.h>
using namespace nvcuda;
// C (M x N, f32) = alpha * A (M x K, f16, row-major) * B (K x N, f16, column-major) + beta * C, with the
// CUDA C++ wmma API (wmma.load / wmma.mma / wmma.store, m16n16k16); M, N, K multiples of 16, one warp per
// 16x16 tile; a second kernel keeps an f16 accumulator.
extern "C" __global__ void wmma_gemm(const half *A, const half *B, float *C, int M, int N, int K, float alpha, float beta) {
    int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tm * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)tn * K + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::load_matrix_sync(c, C + (size_t)tm * N + tn, N, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; i++) c.x[i] = alpha * acc.x[i] + beta * c.x[i];
    wmma::store_matrix_sync(C + (size_t)tm * N + tn, c, N, wmma::mem_row_major);
}
extern "C" __global__ void wmma_f16acc(const half *A, const half *B, half *C) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> c;
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::load_matrix_sync(c, C, 16, wmma::mem_col_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, 16, wmma::mem_col_major);
}""",
    "mbarrier_copy": r"""
#include <cuda_awbarrier_primitives.h>
#include <cuda_pipeline_primitives.h>
// Each thread copies 16 bytes into shared memory with cp.async, arrives on an mbarrier for its copies
// (__pipeline_arrive_on) and for itself, waits for the phase, then reads what another thread copied.
extern "C" __global__ void mbarrier_copy(const float4 *in, float4 *out, unsigned *phases) {
    __shared__ __mbarrier_t bar;
    __shared__ __align__(16) float4 buf[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t == 0) __mbarrier_init(&bar, blockDim.x);
    __syncthreads();
    for (int round = 0; round < 2; round++) {
        __pipeline_memcpy_async(&buf[t], &in[i + round * gridDim.x * blockDim.x], 16);
        __pipeline_arrive_on(&bar);
        __mbarrier_token_t tok = __mbarrier_arrive(&bar);
        while (!__mbarrier_test_wait(&bar, tok)) {}
        out[i + round * gridDim.x * blockDim.x] = buf[blockDim.x - 1 - t];
        __syncthreads();
    }
    if (t == 0) phases[blockIdx.x] = __mbarrier_token_pending_count(__mbarrier_arrive(&bar)) + 1;
}""",
}


def nvrtc_compile(name, src, include, arch="compute_90"):
    from cuda.bindings import nvrtc

    def check(res):
        err = res[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{name}: {err}")
        return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)

    prog = check(nvrtc.nvrtcCreateProgram(src.encode(), f"{name}.cu".encode(), 0, [], []))
    opts = [f"-arch={arch}".encode(), b"-std=c++17"] + ([f"-I{include}".encode()] if include else [])
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
    return buf.rstrip(b"\0").decode(), f"NVRTC {major}.{minor} -arch={arch}"


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


def triton_kernels():
    """tests/triton_kernels.py's kernels as sm_80 PTX (ldmatrix + mma.sync for tl.dot), with their launch
    facts (num_warps, dynamic shared bytes) in the first line; skipped without triton."""
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError:
        print("skip triton_*: triton is not installed", file=sys.stderr)
        return
    sys.path.insert(0, str(OUT.parent.parent))
    import triton_kernels as TK
    for name, (fn, sig, cx, *attrs) in TK.SIGNATURES.items():
        src = ASTSource(fn, sig, cx, attrs=attrs[0]) if attrs else ASTSource(fn, sig, cx)
        k = triton.compile(src, target=GPUTarget("cuda", 80, 32), options={"num_warps": 4, "num_stages": 3})
        tool = f"triton {triton.__version__} sm_80 num_warps={k.metadata.num_warps} shared={k.metadata.shared}"
        (OUT / f"{name}.ptx").write_text(f"// generated by tools/gen_ptx_corpus.py with {tool}\n" + k.asm["ptx"])
        print(f"{name}.ptx  {tool}")


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
    only = sys.argv[1:]   # names (or prefixes) to regenerate; all when none
    for name, src in TENSOR.items():
        if only and not any(name.startswith(o) for o in only):
            continue
        if "#include" in src and not include:
            print(f"skip {name}: the CUDA headers were not found (pip install nvidia-cuda-runtime)", file=sys.stderr)
            continue
        ptx, tool = nvrtc_compile(name, src, include, "compute_80")
        (OUT / f"{name}.ptx").write_text(f"// generated by tools/gen_ptx_corpus.py with {tool}\n" + ptx)
        print(f"{name}.ptx  {tool}")
    if not only or any(o.startswith("triton") for o in only):
        triton_kernels()
    if only:
        return 0
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
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    sys.exit(main())
