"""Tensor-core, matrix-movement and asynchronous-copy kernels on the PTX engine (issue 32): NVRTC-compiled
CUDA C for compute_80 (mma.sync through inline asm as CUTLASS writes it, cp.async through
cuda_pipeline_primitives.h, mbarriers through cuda_awbarrier_primitives.h) and Triton 3.9's sm_80 PTX
(tl.dot as ldmatrix + mma.sync), all committed in tests/data/ptx by tools/gen_ptx_corpus.py, checked
against numpy at sizes with partial tiles.  Needs neither NVRTC nor Triton."""
import ctypes
import importlib.util
import pathlib
import re
from fractions import Fraction

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location("ptx_harness", pathlib.Path(__file__).with_name("ptx_harness.py"))
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)
Dev, ptx, run, run_ok = H.Dev, H.ptx, H.run, H.run_ok
_spec = importlib.util.spec_from_file_location("ptx_reference", pathlib.Path(__file__).with_name("ptx_reference.py"))
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)

pytestmark = pytest.mark.skipif(not H.HAVE_EMU, reason="no emulator in this install (-Dnative=false)")


def _f16_ints(rng, shape, lo=-3, hi=4):
    return rng.integers(lo, hi, shape).astype(np.float16)


@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (37, 24, 40), (5, 8, 8)])
def test_mma_gemm_f16_cp_async_ldmatrix(m, n, k):
    """cp.async with src-size zero-fill at the edges, ldmatrix .x4 / .x4.trans, mma m16n8k16 f32 += f16."""
    rng = np.random.default_rng(m * 100 + k)
    a, b = _f16_ints(rng, (m, k)), _f16_ints(rng, (k, n))
    dc = Dev(np.full((m, n), np.nan, np.float32))
    run_ok(ptx("mma_gemm_f16"), "mma_gemm_f16", ((n + 15) // 16, (m + 15) // 16), (32,),
           [Dev(a), Dev(b), dc, ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k)])
    np.testing.assert_array_equal(dc.get(), a.astype(np.float32) @ b.astype(np.float32))


def test_mma_gemm_f16_fractions_round_once_to_f32():
    """Non-integer f16 operands: each mma's f32 result is its exactly rounded sum (products exact, C plus
    the 16 products rounded once), so two K steps round twice."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((16, 32)) / 4).astype(np.float16)
    b = (rng.standard_normal((32, 16)) / 4).astype(np.float16)
    dc = Dev(np.zeros((16, 16), np.float32))
    run_ok(ptx("mma_gemm_f16"), "mma_gemm_f16", (1, 1), (32,), [Dev(a), Dev(b), dc, ctypes.c_int(16), ctypes.c_int(16), ctypes.c_int(32)])
    fa = [[Fraction(float(x)) for x in row] for row in a]
    fb = [[Fraction(float(x)) for x in row] for row in b]

    def f32(x):   # x rounded to nearest even binary32, from the ISA-written reference
        v = R.round_to(1 if x < 0 else 0, abs(x), "f32", R.RN)
        return Fraction(np.uint32(R.encode(v, "f32")).view(np.float32).item())
    expect = np.zeros((16, 16), np.float32)
    once = np.zeros((16, 16), np.float32)
    for i in range(16):
        for j in range(16):
            lo = sum(fa[i][q] * fb[q][j] for q in range(16))
            hi = sum(fa[i][q] * fb[q][j] for q in range(16, 32))
            expect[i, j] = float(f32(f32(lo) + hi))
            once[i, j] = float(f32(lo + hi))
    assert not np.array_equal(expect, once)   # the vectors see the rounding between the two K steps
    np.testing.assert_array_equal(dc.get(), expect)


def _frag_kernel(name, a, b, c, d):
    da, db, dc, dd = Dev(a), Dev(b), Dev(c), Dev(d)
    run_ok(ptx("mma_frags"), name, (1,), (32,), [da, db, dc, dd])
    return dd.get()


def test_mma_tf32_m16n8k8_ignores_the_low_13_bits():
    rng = np.random.default_rng(1)
    a = rng.integers(-8, 8, (16, 8)).astype(np.float32) / 8
    b = rng.integers(-8, 8, (8, 8)).astype(np.float32) / 4
    c = rng.integers(-8, 8, (16, 8)).astype(np.float32)
    junk = (a.view(np.uint32) | np.uint32(0x1fff)).view(np.float32)   # low mantissa bits a tensor core does not read
    d = _frag_kernel("mma_tf32_m16n8k8", junk, b, c, np.zeros((16, 8), np.float32))
    np.testing.assert_array_equal(d, a @ b + c)


def test_mma_bf16_m16n8k16():
    rng = np.random.default_rng(2)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (16, 8)).astype(np.float32)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    bf = lambda x: (x.view(np.uint32) >> 16).astype(np.uint16)   # noqa: E731  (exact: small integers)
    d = _frag_kernel("mma_bf16_m16n8k16", bf(a), bf(b), c, np.zeros((16, 8), np.float32))
    np.testing.assert_array_equal(d, (a.astype(np.float64) @ b + c).astype(np.float32))


def test_mma_f16_accumulator_m16n8k8():
    rng = np.random.default_rng(3)
    a = _f16_ints(rng, (16, 8))
    b = _f16_ints(rng, (8, 8))
    c = (rng.standard_normal((16, 8)) * 4).astype(np.float16)
    d = _frag_kernel("mma_f16acc_m16n8k8", a.view(np.uint16), b.view(np.uint16), c.view(np.uint16), np.zeros((16, 8), np.uint16))
    exact = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    np.testing.assert_array_equal(d.view(np.float16), exact.astype(np.float16))


def test_mma_s8_m16n8k32_satfinite():
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    b = rng.integers(-128, 128, (32, 8)).astype(np.int8)
    c = rng.integers(-1000, 1000, (16, 8)).astype(np.int32)
    c[0, :] = 2**31 - 10        # overflows upwards: clamped by .satfinite
    c[1, :] = -(2**31) + 10
    d = _frag_kernel("mma_s8_m16n8k32", a, b, c, np.zeros((16, 8), np.int32))
    exact = a.astype(np.int64) @ b.astype(np.int64) + c
    np.testing.assert_array_equal(d, np.clip(exact, -(2**31), 2**31 - 1))


def test_mma_f64_m8n8k4():
    rng = np.random.default_rng(6)
    a, b, c = rng.standard_normal((8, 4)), rng.standard_normal((4, 8)), rng.standard_normal((8, 8))
    d = _frag_kernel("mma_f64_m8n8k4", a, b, c, np.zeros((8, 8)))
    expect = c.copy()
    for q in range(4):   # a chain of fused multiply-adds in k order
        expect = np.array([[float(np.float64(np.longdouble(a[i, q]) * np.longdouble(b[q, j]) + np.longdouble(expect[i, j])))
                            for j in range(8)] for i in range(8)])
    np.testing.assert_allclose(d, expect, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(d, a @ b + c, rtol=1e-12)


@pytest.mark.parametrize("blocks,threads", [(1, 32), (3, 64), (2, 256)])
def test_mbarrier_with_cp_async_arrivals(blocks, threads):
    """cp.async + cp.async.mbarrier.arrive + mbarrier.init / arrive / test_wait across the block's warps,
    two phases; the last arrival's state reports its pending count."""
    total = blocks * threads
    x = np.arange(2 * total * 4, dtype=np.float32).reshape(2 * total, 4)
    out, phases = Dev(np.zeros_like(x)), Dev(np.zeros(blocks, np.uint32))
    run_ok(ptx("mbarrier_copy"), "mbarrier_copy", (blocks,), (threads,), [Dev(x), out, phases])
    got = out.get().reshape(2, blocks, threads, 4)
    src = x.reshape(2, blocks, threads, 4)
    np.testing.assert_array_equal(got, src[:, :, ::-1, :])
    np.testing.assert_array_equal(phases.get(), threads)   # the one arrival of a fresh phase leaves threads - 1 pending


# ----------------------------------------------------------------------------- Triton's sm_80 PTX

def _triton(name):
    text = ptx(name)
    shared = int(re.search(r"shared=(\d+)", text.splitlines()[0]).group(1))
    return text, shared


@pytest.mark.parametrize("n", [1, 255, 1000])
def test_triton_add(n):
    text, shared = _triton("triton_add")
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = Dev(np.zeros(n, np.float32))
    scratch = ctypes.c_uint64(0)   # Triton's two trailing pointers (global and profile scratch), unused here
    run_ok(text, "add_kernel", ((n + 255) // 256,), (128,), [Dev(x), Dev(y), out, ctypes.c_int32(n), scratch, scratch], smem=shared)
    np.testing.assert_array_equal(out.get(), x + y)


@pytest.mark.parametrize("rows,cols", [(1, 128), (7, 100), (3, 5)])
def test_triton_softmax(rows, cols):
    text, shared = _triton("triton_softmax")
    rng = np.random.default_rng(rows * cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32) * 3
    out = Dev(np.zeros((rows, cols), np.float32))
    z = ctypes.c_uint64(0)
    run_ok(text, "softmax_kernel", (rows,), (128,), [out, Dev(x), ctypes.c_int32(cols), ctypes.c_int32(cols), ctypes.c_int32(cols), z, z],
           smem=shared)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(out.get(), e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("m,n,k", [(32, 32, 32), (37, 45, 70), (1, 64, 8)])
def test_triton_matmul_tl_dot(m, n, k):
    """tl.dot at sm_80: ldmatrix (.trans for B) + mma.sync m16n8k16 over 4 warps, masked edges."""
    text, shared = _triton("triton_matmul")
    assert "mma.sync.aligned.m16n8k16" in text and "ldmatrix" in text
    rng = np.random.default_rng(m + n + k)
    a, b = _f16_ints(rng, (m, k)), _f16_ints(rng, (k, n))
    dc = Dev(np.full((m, n), np.nan, np.float32))
    i = ctypes.c_int32
    z = ctypes.c_uint64(0)
    run_ok(text, "matmul_kernel", ((m + 31) // 32, (n + 31) // 32), (128,),
           [Dev(a), Dev(b), dc, i(m), i(n), i(k), i(k), i(1), i(n), i(1), i(n), i(1), z, z], smem=shared)
    np.testing.assert_array_equal(dc.get(), a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("m,n,k", [(64, 64, 32), (128, 192, 96), (64, 64, 48)])
def test_triton_pipelined_matmul_cp_async(m, n, k):
    """With 16-divisible arguments Triton pipelines tl.dot's loads: cp.async.cg into shared memory over 3
    stages (commit_group / wait_group), the K edge masked by src-size 0, then ldmatrix + mma.sync."""
    text, shared = _triton("triton_matmul_pipelined")
    assert "cp.async.cg.shared.global" in text and "cp.async.wait_group" in text
    rng = np.random.default_rng(m + k)
    a, b = _f16_ints(rng, (m, k)), _f16_ints(rng, (k, n))
    dc = Dev(np.full((m, n), np.nan, np.float32))
    i, z = ctypes.c_int32, ctypes.c_uint64(0)
    run_ok(text, "matmul_pipelined_kernel", (m // 64, n // 64), (128,), [Dev(a), Dev(b), dc, i(m), i(n), i(k), z, z], smem=shared)
    np.testing.assert_array_equal(dc.get(), a.astype(np.float32) @ b.astype(np.float32))


# ----------------------------------------------------------------------------- parsing and refusals

_HDR = ".version 8.0\n.target sm_80\n.address_size 64\n"


def test_one_braced_register_without_a_vector_width_is_a_scalar():
    """Triton's inline asm writes `ld.global.b32 { %r1 }, [a]` (ptxas takes it): one element, no .vN."""
    x = np.array([7, 9], np.uint32)
    d, o = Dev(x), Dev(np.zeros(2, np.uint32))
    text = _HDR + (".visible .entry k(.param .u64 p, .param .u64 q)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<3>;\n"
                   "ld.param.u64 %rd1, [p];\nld.param.u64 %rd2, [q];\nld.global.b32 { %r1 }, [ %rd1 + 4 ];\n"
                   "st.global.b32 [ %rd2 + 0 ], { %r1 };\nret;\n}\n")
    run_ok(text, "k", (1,), (1,), [d, o])
    assert o.get().tolist() == [9, 0]


@pytest.mark.parametrize("insn,what", [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r0,%r1,%r2}, {%r0,%r1}, {%f0,%f1,%f2,%f3};", "a"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0,%f1,%f2}, {%r0,%r1,%r2,%r3}, {%r0,%r1}, {%f0,%f1,%f2,%f3};", "d"),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0,%r1}, [%r2];", "destination"),
])
def test_fragment_operands_of_the_wrong_count_are_invalid_ptx(insn, what):
    text = _HDR + (".visible .entry k()\n{\n.reg .b32 %r<4>;\n.reg .f32 %f<4>;\n" + insn + "\nret;\n}\n")
    rc, msg = H.build(text)
    assert rc == H.INVALID_PTX and f"as its {what}," in msg, (rc, msg)


@pytest.mark.parametrize("insn", [
    "mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32 {%f0,%f1,%f2,%f3}, {%r0,%r1,%r2,%r3}, {%r0,%r1}, {%f0,%f1,%f2,%f3};",
    "wgmma.fence.sync.aligned;",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r0], [%rd0], 16, [%r1];",
    "mbarrier.arrive.expect_tx.shared.b64 %rd0, [%r0], 16;",
])
def test_tensor_instructions_the_engine_lacks_are_refused_by_name(insn):
    text = _HDR + (".visible .entry k()\n{\n.reg .b32 %r<4>;\n.reg .f32 %f<4>;\n.reg .b64 %rd<2>;\n" + insn + "\nret;\n}\n")
    rc, msg = H.build(text)
    assert rc == H.NOT_SUPPORTED and insn.split()[0].split(".")[0] in msg, (rc, msg)


def test_cp_async_with_zero_source_bytes_reads_nothing():
    """Triton masks a load by src-size 0 with an address that may lie outside every allocation."""
    o = Dev(np.full(4, 0xffffffff, np.uint32))
    text = _HDR + (".visible .entry k(.param .u64 q)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<6>;\n.shared .align 16 .b8 s[16];\n"
                   "mov.u32 %r0, s;\nmov.u64 %rd1, 16;\ncp.async.cg.shared.global [ %r0 + 0 ], [ %rd1 + 0 ], 0x10, 0;\n"
                   "cp.async.commit_group;\ncp.async.wait_group 0;\nld.shared.v4.b32 {%r1,%r2,%r3,%r4}, [%r0];\n"
                   "ld.param.u64 %rd2, [q];\nst.global.v4.b32 [%rd2], {%r1,%r2,%r3,%r4};\nret;\n}\n")
    run_ok(text, "k", (1,), (1,), [o])
    assert o.get().tolist() == [0, 0, 0, 0]
    rc, msg = run(text.replace("0x10, 0;", "0x10, 16;"), "k", (1,), (1,), [o])
    assert rc == H.ILLEGAL_ADDRESS and "0x10" in msg, (rc, msg)


@pytest.mark.parametrize("guard", ["@%p1", "@!%p1"])
def test_a_predicated_mma_runs_or_skips_whole(guard):
    """A guarded-off mma leaves D as it was and execution goes on after it (its operand payloads are not
    instructions); guarded on, it runs: 1 + (row of ones . column of ones) with k = 8 halves of 1.0."""
    o = Dev(np.zeros(32, np.uint32))
    text = _HDR + (".visible .entry k(.param .u64 q)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<12>;\n.reg .b64 %rd<4>;\n"
                   "setp.eq.u32 %p1, 1, 0;\nmov.b32 %r0, 0x3c003c00;\nmov.b32 %r1, 0x3c003c00;\nmov.b32 %r2, 0x3c003c00;\n"
                   "mov.b32 %r4, 0x3f800000;\nmov.b32 %r5, 0x3f800000;\nmov.b32 %r6, 0x3f800000;\nmov.b32 %r7, 0x3f800000;\n"
                   f"{guard} mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {{%r4,%r5,%r6,%r7}}, {{%r0,%r1}}, {{%r2}}, {{%r4,%r5,%r6,%r7}};\n"
                   "add.u32 %r8, %r4, 1;\nmov.u32 %r9, %tid.x;\nmul.wide.u32 %rd1, %r9, 4;\nld.param.u64 %rd2, [q];\n"
                   "add.s64 %rd2, %rd2, %rd1;\nst.global.u32 [%rd2], %r8;\nret;\n}\n")
    run_ok(text, "k", (1,), (32,), [o])
    got = o.get()
    want = (0x3f800000 + 1) if guard == "@%p1" else (0x41100000 + 1)   # 1.0 untouched, or 1 + 8 = 9.0
    assert got.tolist() == [want] * 32


# ----------------------------------------------------------------------------- wmma (nvcuda::wmma)

@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (48, 32, 64)])
def test_wmma_gemm_with_an_elementwise_epilogue(m, n, k):
    """load_matrix_sync / mma_sync / store_matrix_sync and `c.x[i] = alpha * acc.x[i] + beta * c.x[i]`
    over the fragments' elements (whatever their layout, the same in every fragment of a kind)."""
    rng = np.random.default_rng(m + k)
    a, b = _f16_ints(rng, (m, k)), _f16_ints(rng, (k, n))
    c = rng.integers(-5, 6, (m, n)).astype(np.float32)
    dc = Dev(c)
    run_ok(ptx("wmma_gemm"), "wmma_gemm", (n // 16, m // 16), (32,),
           [Dev(a), Dev(np.ascontiguousarray(b.T)), dc, ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k),
            ctypes.c_float(0.5), ctypes.c_float(2.0)])
    np.testing.assert_array_equal(dc.get(), 0.5 * (a.astype(np.float32) @ b.astype(np.float32)) + 2 * c)


def test_wmma_f16_accumulator_column_major():
    rng = np.random.default_rng(9)
    a, b = _f16_ints(rng, (16, 16)), _f16_ints(rng, (16, 16))
    c = (rng.standard_normal((16, 16)) * 8).astype(np.float16)
    dc = Dev(np.asfortranarray(c).T.copy())   # stored column-major: C^T row-major
    run_ok(ptx("wmma_gemm"), "wmma_f16acc", (1,), (32,), [Dev(np.ascontiguousarray(a.T)), Dev(b), dc])
    exact = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    np.testing.assert_array_equal(dc.get().T, exact.astype(np.float16))


def test_mbarrier_try_wait_parity_loop_lets_the_other_warps_arrive():
    """Warp 0 spins in a try_wait.parity loop until warp 1 (which first spins on a flag warp 0 sets) has
    arrived: a failed try_wait yields to the block's other warps; two phases, parities 0 then 1."""
    o = Dev(np.zeros(64, np.uint32))
    text = _HDR + """.visible .entry k(.param .u64 q)
{
.reg .pred %p<4>;
.reg .b32 %r<12>;
.reg .b64 %rd<6>;
.shared .align 8 .b64 bar;
.shared .align 4 .b32 flag;
mov.u32 %r0, %tid.x;
mov.u32 %r1, bar;
mov.u32 %r2, flag;
setp.ne.u32 %p1, %r0, 0;
@%p1 bra INITED;
mbarrier.init.shared::cta.b64 [%r1], 64;
st.shared.u32 [%r2], 0;
INITED:
bar.sync 0;
setp.lt.u32 %p2, %r0, 32;
@%p2 bra ARRIVE;
SPIN:
ld.volatile.shared.u32 %r3, [%r2];
setp.eq.u32 %p3, %r3, 0;
@%p3 bra SPIN;
ARRIVE:
mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [%r1];
@!%p2 bra WAIT0;
st.volatile.shared.u32 [%r2], 1;
WAIT0:
mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r1], 0;
@!%p3 bra WAIT0;
mbarrier.arrive.shared.b64 %rd2, [%r1];
WAIT1:
mbarrier.try_wait.parity.shared.b64 %p3, [%r1], 1, 1000;
@!%p3 bra WAIT1;
mbarrier.test_wait.shared.b64 %p3, [%r1], %rd2;
selp.u32 %r4, 1, 0, %p3;
mbarrier.pending_count.b64 %r5, %rd1;
shl.b32 %r5, %r5, 8;
or.b32 %r4, %r4, %r5;
ld.param.u64 %rd3, [q];
mul.wide.u32 %rd4, %r0, 4;
add.s64 %rd3, %rd3, %rd4;
st.global.u32 [%rd3], %r4;
ret;
}
"""
    run_ok(text, "k", (1,), (64,), [o])
    got = o.get()
    assert (got & 0xff).tolist() == [1] * 64
    assert sorted((got >> 8).tolist()) == list(range(64))   # each first-phase arrival saw the count it left pending


def test_cp_async_ignore_src_predicate_zero_fills():
    x = np.arange(4, dtype=np.uint32) + 11
    o = Dev(np.zeros(8, np.uint32))
    text = _HDR + (".visible .entry k(.param .u64 p, .param .u64 q)\n{\n.reg .pred %p<3>;\n.reg .b64 %rd<3>;\n.reg .b32 %r<9>;\n"
                   ".shared .align 16 .b8 s[32];\nld.param.u64 %rd1, [p];\nmov.u32 %r0, s;\nsetp.eq.u32 %p1, 1, 0;\n"
                   "setp.eq.u32 %p2, 1, 1;\ncp.async.ca.shared.global [%r0], [%rd1], 16, %p1;\n"
                   "cp.async.ca.shared.global [%r0+16], [%rd1], 16, %p2;\ncp.async.wait_all;\n"
                   "ld.shared.v4.b32 {%r1,%r2,%r3,%r4}, [%r0];\nld.shared.v4.b32 {%r5,%r6,%r7,%r8}, [%r0+16];\n"
                   "ld.param.u64 %rd2, [q];\nst.global.v4.b32 [%rd2], {%r1,%r2,%r3,%r4};\nst.global.v4.b32 [%rd2+16], {%r5,%r6,%r7,%r8};\n"
                   "ret;\n}\n")
    run_ok(text, "k", (1,), (1,), [Dev(x), o])
    assert o.get().tolist() == [11, 12, 13, 14, 0, 0, 0, 0]
