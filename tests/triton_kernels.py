"""Triton kernels the emulator runs (issue 32's stretch goal): a vector add, a row softmax and an fp16
matmul with tl.dot (ldmatrix + mma.sync at sm_80).  Imported by tests/test_ptx_triton.py (which skips
without triton) and by tools/gen_ptx_corpus.py, which commits their sm_80 PTX as test data."""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < ncols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=offs < ncols)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        am = (rm[:, None] < M) & (rk[None, :] + k * BK < K)
        bm = (rk[:, None] + k * BK < K) & (rn[None, :] < N)
        acc += tl.dot(tl.load(a, mask=am, other=0.0), tl.load(b, mask=bm, other=0.0))
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_pipelined_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Row-major A (M x K), B (K x N), C (M x N) with M, N multiples of the tile and 16-byte aligned rows:
    Triton pipelines the loads through shared memory with cp.async (masked K edge: src-size 0)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * K + rk[None, :]
    b = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a, mask=rk[None, :] + k < K, other=0.0), tl.load(b, mask=rk[:, None] + k < K, other=0.0))
        a += BK
        b += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


# name -> (kernel, signature, constexprs[, attrs]): what tools/gen_ptx_corpus.py compiles for sm_80; attrs
# are the specialisations Triton's launcher makes for 16-divisible arguments (what unlocks cp.async)
SIGNATURES = {
    "triton_add": (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                   {"BLOCK": 256}),
    "triton_softmax": (softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
                                        "ncols": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128}),
    "triton_matmul": (matmul_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                                      "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32", "scn": "i32",
                                      "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}, {"BM": 32, "BN": 32, "BK": 32}),
    "triton_matmul_pipelined": (matmul_pipelined_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32",
                                                          "N": "i32", "K": "i32", "BM": "constexpr", "BN": "constexpr",
                                                          "BK": "constexpr"}, {"BM": 64, "BN": 64, "BK": 32},
                                {(i,): [["tt.divisibility", 16]] for i in range(6)}),
}
