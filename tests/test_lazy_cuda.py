"""accel.lazy's CUDA backend (set_backend("cuda")) on the emulator, both twins: each graph is traced as on the numpy
backend (IR text, graph hash, LTC counters identical), compiled by NVRTC into one fused kernel per elementwise
chain, and launched through accel's bindings; results bit-exact with the numpy backend where the code generation
computes the same operations (float32 arithmetic without FMA contraction, integers, bools, casts, comparisons).
Graphs it does not cover run on the numpy backend (counter CudaFallback).  Skipped without NVRTC."""
import re

import pytest

try:
    from accel import emu as _emu
    _NVRTC = _emu.real_nvrtc_path()
except Exception:           # noqa: BLE001 (an install without the emulator's module)
    _NVRTC = None

pytestmark = pytest.mark.skipif(_NVRTC is None, reason="NVRTC (nvidia-cuda-nvrtc, the cuda-lazy extra) is not installed")

CHECKS = r'''
import numpy as np
import accel.lazy as L
from accel.lazy import metrics as M
from accel.lazy import tensors as T

rng = np.random.default_rng(7)

# LTC's own counters: what tracing and the executor count, the same on both backends
LTC_COUNTERS = ("CreateLtcTensor", "DestroyLtcTensor", "UncachedCompile", "CachedCompile", "MarkStep",
                "SyncedTensorsWithIR", "DeviceDataCacheMiss")


def floats(*shape):
    a = rng.standard_normal(shape).astype(np.float32)
    a.flat[:3] = [0.0, -0.0, 1e-39] if a.size >= 3 else a.flat[:3]
    return a


def run_on(backend, fn, inputs, steps=1):
    """Run ``fn`` on fresh lazy tensors of ``inputs`` on ``backend``; (results, texts, hashes, counters) per step."""
    L.set_backend(backend)
    M.reset()
    T._data_cache.clear()          # (the scalars' device-data cache: both backends start from an empty one)
    out = []
    for s in range(steps):
        ts = [L.tensor(a if s == 0 else a + s) if isinstance(a, np.ndarray) else a for a in inputs]
        r = fn(*ts)
        r = r if isinstance(r, tuple) else (r,)
        text = L.get_tensors_text(list(r))
        h = L.get_graph_hash(list(r))
        L.mark_step()
        out.append(([t.numpy().copy() for t in r], text, h))
    counters = {n: cv(n) for n in LTC_COUNTERS}
    return out, counters


def same(fn, inputs, steps=1, bitexact=True):
    """fn on the cuda backend equals fn on the numpy backend: texts, hashes, LTC counters; values bit-exact
    (or within 4 ulp of float32 where ``bitexact`` is False)."""
    ref, ref_c = run_on("numpy", fn, inputs, steps)
    got, got_c = run_on("cuda", fn, inputs, steps)
    assert got_c == ref_c, (got_c, ref_c)
    for (gv, gt, gh), (rv, rt, rh) in zip(got, ref):
        assert gt == rt and gh == rh
        for g, r in zip(gv, rv):
            assert g.dtype == r.dtype and g.shape == r.shape, (g.dtype, r.dtype, g.shape, r.shape)
            if bitexact:
                assert g.tobytes() == r.tobytes(), (g, r)
            elif bitexact is None:
                if g.dtype.kind == "f":
                    np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)
                    if g.dtype == np.float16:            # (elementwise half: the same values, zeros' signs aside)
                        assert np.array_equal(g, r, equal_nan=True), (g, r)
                else:
                    assert g.tobytes() == r.tobytes(), (g, r)
            else:
                np.testing.assert_array_max_ulp(g, r, maxulp=4)
    return got


def check_float32_chain_bitexact():
    a, b = floats(4, 33), floats(33)
    same(lambda x, y: ((x + y) * 2.5 - x / 1.5).relu() - (-y) * x, [a, b])
    assert cv("CudaKernelLaunch") > 0 and cv("NvrtcCompile") == 1 and cv("CudaFallback") == 0
    from accel.lazy import cuda_backend as cb
    ptx = [k.image for k in cb._KERNELS.values() if k.source in L.get_latest_computation_graph()]
    assert len(ptx) == 1 and b".version 9." in ptx[0] and b"mul.rn.f32" in ptx[0] and b"fma." not in ptx[0]


def check_alpha_and_scalars_reuse_program():
    a, b = floats(3, 5), floats(3, 5)
    L.set_backend("cuda")
    M.reset()
    # (alpha 1 would share the outer sub's alpha handle: another parameter wiring, so another program, as on numpy)
    for s, (alpha, c) in enumerate(((2, 0.5), (3, -1.25), (-4, 7.0))):
        ref_t = None
        x, y = L.tensor(a + s), L.tensor(b)
        z = L.add(x, y * c, alpha=alpha) - L.sub(y, x, alpha=alpha)
        L.mark_step()
        got = z.numpy().copy()
        L.set_backend("numpy")
        x, y = L.tensor(a + s), L.tensor(b)
        ref = (L.add(x, y * c, alpha=alpha) - L.sub(y, x, alpha=alpha)).numpy()
        L.set_backend("cuda")      # (clears the computation cache: the code cache keeps the kernel)
        assert got.tobytes() == ref.tobytes()
    assert cv("NvrtcCompile") == 1, cv("NvrtcCompile")
    assert cv("CudaKernelLaunch") == 3


def check_cached_step_reuses_program():
    a = floats(8, 8)
    got = same(lambda x: (x * 3.0 + 1.0) * x, [a], steps=3)
    assert cv("NvrtcCompile") == 1 and cv("CachedCompile") == 2 and cv("CudaKernelLaunch") == 3


def check_integers_bitexact():
    i32 = rng.integers(-2**31, 2**31 - 1, (5, 7), dtype=np.int64).astype(np.int32)
    i64 = rng.integers(-2**62, 2**62, (7,), dtype=np.int64)
    same(lambda x, y: (x * 3 + y) - (-x) * 1000003, [i32, i64])
    same(lambda x: (x * 7 - 5).relu() + x, [i32])
    same(lambda x: x * 123456789 + 2**40, [i64])


def check_casts_and_compares_bitexact():
    f = floats(6, 4) * 1000
    i = rng.integers(-100, 100, (6, 4), dtype=np.int64).astype(np.int32)
    b = rng.integers(0, 2, (4,)).astype(bool)
    same(lambda x: (x.to(L.int32), x.to(L.int64), x.to(L.bool), x.to(L.float64)), [f])
    same(lambda x, y: (x > y, x <= 3, y == 2.5, x != y.to(L.float32), x.to(L.float32) < y), [i, f])
    same(lambda x, y: (x.to(L.float32) * y, (x + x) > y, (x + x) > 0), [b, f[0]])
    assert cv("CudaFallback") == 0


def check_transcendentals_within_ulp():
    a = np.abs(floats(64)) + 0.5
    same(lambda x: (x.exp(), x.log(), x.sqrt(), x.tanh()), [a], bitexact=False)
    same(lambda x: x.sqrt() * 2.0, [a])             # sqrt is correctly rounded on both


def check_fallback_graph_correct():
    a = floats(4, 6)
    got = same(lambda x: x.cumsum(0) * 2.0 + 1.0, [a])
    assert cv("CudaFallback") == 1 and cv("NvrtcCompile") == 0
    assert L.get_latest_computation_graph().startswith("# CUDA backend: on the host")


def close(fn, inputs, steps=1, rtol=1e-4, atol=1e-5, kernels=None):
    """fn on the cuda backend next to the numpy backend: texts, hashes, LTC counters identical; values within
    rtol / atol (reductions, softmax and matmul add in another order); no fallback."""
    got = same(fn, inputs, steps, bitexact=None)
    assert cv("CudaFallback") == 0 and cv("CudaKernelLaunch") > 0, L.get_latest_computation_graph()[:300]
    if kernels is not None:
        assert L.get_latest_computation_graph().startswith(f"// CUDA backend: {kernels} kernel(s)"), \
            L.get_latest_computation_graph()[:80]
    return got


def check_reductions_within_tolerance():
    a = floats(5, 37, 3)
    close(lambda x: (x.sum(), x.mean(), x.sum(1), x.mean((0, 2), keepdim=True), (x * 2.0).sum(-1) + 1.0), [a])
    i = rng.integers(-2**31, 2**31 - 1, (3, 300), dtype=np.int64)
    same(lambda x: (x.sum(), x.sum(0), (x * 3).sum(1, keepdim=True)), [i])       # integers: bit-exact
    b = rng.integers(0, 2, (7, 9)).astype(bool)
    same(lambda x: (x.sum(), x.sum(1)), [b])
    assert cv("CudaFallback") == 0


def check_more_reductions():
    a = floats(6, 45)
    a.flat[7] = np.nan
    b = floats(3, 70)
    close(lambda x: (x.max(), x.min(), (x * 2.0).std(), x.std(1), x.std(0, keepdim=True), x.std(1, correction=0)), [b])
    close(lambda x: (x.max(), x.min()), [a])                                   # NaN propagates
    i = rng.integers(-100, 100, (4, 33), dtype=np.int64)
    same(lambda x: (x.max(), x.min(), (x > 0).all(), (x > -99).all(), (x > 98).any(), (x > 1000).any()), [i])
    assert cv("CudaFallback") == 0


def check_softmax_within_tolerance():
    a = floats(3, 5, 70) * 4
    close(lambda x: (x.softmax(-1), x.log_softmax(1), (x * 0.5).softmax(0) + 1.0), [a])


def check_matmul_tiled():
    a, b, c = floats(19, 33), floats(33, 17), floats(2, 5, 33)
    close(lambda x, y: (x @ y, x.mm(y) * 2.0 + 1.0), [a, b])
    close(lambda x, y: x.matmul(y.t().t()), [a, b])
    close(lambda z, y: z @ y, [c, b])
    close(lambda z, w: z.bmm(w), [c, floats(2, 33, 4)])
    close(lambda x, v: x @ v, [a, floats(33)])
    import accel.lazy.nn.functional as F
    close(lambda x, w, bias: (F.linear(x, w, bias), F.linear(x, w)), [a, floats(6, 33), floats(6)])
    i = rng.integers(-1000, 1000, (9, 21), dtype=np.int64)
    same(lambda x, y: x @ y, [i, i.T.copy()])                                      # integers: bit-exact


def check_more_elementwise_bitexact():
    a, b = floats(6, 7), floats(7)
    a.flat[5] = np.nan
    m = rng.integers(0, 2, (6, 1)).astype(bool)
    same(lambda x, y: (x.abs(), x.reciprocal(), (x.abs() + 0.5).rsqrt(), L.maximum(x, y), L.minimum(y, x),
                       x.clamp(-0.5, 0.25), x.clamp(min=0.1), x.masked_fill(L.tensor(m), -2.5)), [a, b])
    same(lambda x, y: (L.cat([x * 2.0, y.unsqueeze(0), x[:2]], 0), L.cat([x, x.abs()], 1)), [a, b])
    i8 = rng.integers(-128, 128, (5, 9)).astype(np.int8)
    u8 = rng.integers(0, 256, (9,)).astype(np.uint8)
    i16 = rng.integers(-2**15, 2**15, (5, 9)).astype(np.int16)
    same(lambda x, y, z: (x * 3 + 100, y * 7 - 1, z * z + z, x.abs(), L.maximum(z, x.to(L.int16)), (x > 5),
                          (z * 2.5).to(L.int8), y.to(L.float32) * 0.5), [i8, u8, i16])
    assert cv("CudaFallback") == 0


def check_more_unary_within_ulp():
    a = floats(64)
    same(lambda x: (x.sigmoid(), x.cos(), x.abs().pow(1.5), x.abs().pow(2)), [a], bitexact=False)
    assert cv("CudaFallback") == 0


def check_new_shape_reuses_kernel():
    """Sizes, strides and offsets are kernel parameters: a graph of the same structure on other shapes (other
    broadcasts, other matmul / reduction / softmax sizes, other slices) is a new program (another graph hash)
    but compiles nothing (issue 36 item 2)."""
    from accel.lazy import cuda_backend as cb

    def f(x, w, b):
        y = (x[1:, ::2] * 2.0 + b).relu()
        return (y @ w).softmax(-1) + y.sum(1, keepdim=True).mean(), y.t().reshape(-1) * 0.5

    L.set_backend("cuda")
    cb._KERNELS.clear()
    M.reset()
    hashes = set()
    for n, k, m, bshape in ((9, 7, 5, (4,)), (33, 12, 17, (1,)), (5, 3, 1, (2,)), (40, 40, 40, (20,))):
        ref = None
        arrays = floats(n, k), floats((k + 1) // 2, m), floats(*bshape)
        for backend in ("numpy", "cuda"):
            L.set_backend(backend)
            x, w, b = (L.tensor(a) for a in arrays)
            r = f(x, w, b)
            hashes.add(L.get_graph_hash(list(r)))
            L.mark_step()
            vals = [t.numpy() for t in r]
            if ref is None:
                ref = vals
            else:
                for g, e in zip(vals, ref):
                    np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    assert len(hashes) == 4 and cv("CudaFallback") == 0
    assert cv("NvrtcCompile") == 1 and cv("UncachedCompile") == 8, (cv("NvrtcCompile"), cv("UncachedCompile"))


def check_index_ops_bitexact_and_errors():
    """index_select / embedding / gather read their indices on the device; an index out of range flags the
    kernel, and the step runs on the host, raising the numpy backend's (torch's) error."""
    import accel.lazy.nn.functional as F
    x = floats(7, 5)
    ii = np.array([3, 0, 6, 6, 1], np.int64)
    g = rng.integers(0, 5, (4, 5))
    same(lambda a, i, gi: (a.index_select(0, i) * 2.0, a.index_select(1, i[:2] + 1), F.embedding(i.reshape(5, 1), a),
                           a.gather(0, gi), a.gather(1, gi[:, :3]) + 1.0, a.t().index_select(0, i[4:] + 3)), [x, ii, g])
    assert cv("CudaFallback") == 0
    L.set_backend("cuda")
    raises(IndexError, lambda: (L.tensor(x).index_select(0, L.tensor(np.array([1, 7]))) * 2.0).numpy(),
           "index out of range in self")
    raises(IndexError, lambda: F.embedding(L.tensor(np.array([[-1]])), L.tensor(x)).numpy(), "index out of range")


def check_flip_repeat_tri_silu():
    a, b = floats(5, 6), floats(3, 1, 4)
    same(lambda x, y: (x.flip(0) * 2.0, x.flip((0, 1)) + 1.0, y.repeat(2, 1, 3, 2) - 1.0, x.tril() * 3.0, x.triu(2),
                       x.tril(-1) + x.triu(1), y.flip(1) * y.repeat(1, 5, 1)), [a, b])
    import accel.lazy.nn.functional as F
    same(lambda x: F.silu(x), [a], bitexact=False)
    i = rng.integers(-9, 9, (4, 4), dtype=np.int64)
    same(lambda x: (x.triu(), x.flip(1).tril(1) * 3, x.repeat(2, 1)), [i])
    assert cv("CudaFallback") == 0


def check_float16_elementwise():
    """float16 data stored as half, each result rounded to half (as torch / numpy compute half ops in float): the
    same values, but for the signs of zeros and NaNs (numpy's half relu(-0.0) is -0.0, 0 / 0 a NaN of another
    sign)."""
    h, g = (floats(6, 5) * 3).astype(np.float16), (floats(5) * 3).astype(np.float16)
    got = same(lambda x, y: (x + y, x * y - 1.5, (x * 2.5).relu(), x / y, x > y, x.to(L.float32) * 3.0,
                             (x * 1.0e5).abs(), L.maximum(x, y), x.t().flip(0) + 0.25), [h, g], bitexact=None)
    assert got[0][0][0].dtype == np.float16 and np.isinf(got[0][0][6]).any()
    same(lambda x: (x.exp(), x.tanh(), x.sigmoid()), [h], bitexact=False)
    assert cv("CudaFallback") == 0


def check_views_without_copies():
    a = floats(4, 6, 5)
    got = same(lambda x: (x.permute(2, 0, 1) * 2.0, x.reshape(24, 5) + 1.0, x[1:3, ::2] - 1.0, x[:, 2] * x[:, 3],
                          x.transpose(0, 1).reshape(6, 20).t() + 0.5, x.unsqueeze(0).expand(3, 4, 6, 5) * 1.5), [a])
    assert cv("CudaFallback") == 0
    src = L.get_latest_computation_graph()
    assert src.startswith("// CUDA backend: ") and src.count("__global__") <= 6


def check_mixed_stages():
    """elementwise -> reduction -> elementwise -> matmul -> softmax in one graph: several kernels, one compile"""
    a, w = floats(8, 16), floats(16, 16)
    close(lambda x, w: (((x - x.mean(1, keepdim=True)) * 2.0) @ w).softmax(-1), [a, w])
    assert cv("NvrtcCompile") == 1


def check_generated_source_is_the_program_text():
    L.set_backend("cuda")
    x = L.tensor(floats(3))
    y = x * 2.0 + 1.0
    L.mark_step()
    text = L.get_latest_computation_graph()
    assert 'extern "C" __global__ void k0(' in text and "float s" not in text.split("(")[0]


def check_compile_error_shows_source_lines():
    from accel.lazy import cuda_backend as cb
    bad = 'extern "C" __global__ void k(float* o)\n{\n    o[0] = undefined_name;\n}\n'
    try:
        cb._nvrtc.compile_program(bad, "x.cu", ["-arch=compute_90"], False)
    except cb._nvrtc.NvrtcError as exc:
        msg = str(exc) + "\n" + cb._lines_cited(bad, exc.log)
        assert "undefined_name" in exc.log and ">    3 |     o[0] = undefined_name;" in msg, msg
    else:
        raise AssertionError("compiled")


def check_kernel_cache_bounded():
    from accel.lazy import cuda_backend as cb
    L.set_backend("cuda")
    cb._KERNELS.clear()
    prev, cb.KERNELS_MAX = cb.KERNELS_MAX, 2
    try:
        M.reset()
        a = floats(5)
        for step in range(2):
            for k in range(3):            # three graphs (another constant op each): the first is evicted by the third
                x = L.tensor(a)
                y = x
                for _ in range(k + 1):
                    y = y.exp()
                L.mark_step()
                assert y.numpy().dtype == np.float32
            L.set_backend("cuda")        # (a fresh computation cache: only the kernel cache can skip NVRTC)
        assert len(cb._KERNELS) == 2 and cv("NvrtcCompile") == 6, (len(cb._KERNELS), cv("NvrtcCompile"))
    finally:
        cb.KERNELS_MAX = prev


def check_data_device_resident():
    """tensor() copies in on the current stream; results stay on the device between steps (no host copy until a
    read, one copy per read handle); numpy() copies back; tensors of the numpy backend stay host arrays."""
    import accel.cuda as cuda
    from accel.lazy import _cuda_data as cd
    L.set_backend("cuda")
    a, b = floats(6, 5), floats(5)
    s = cuda.Stream()
    with cuda.stream(s):
        x, y = L.tensor(a), L.tensor(b)
    assert cd.is_device_only(x._src) and cd._DEV[x._src].stream == s and str(cd._DEV[x._src].device) == f"cuda:{cuda.current_device()}"
    assert x._src.array.strides == (0, 0) and x._src.array.nbytes == a.nbytes    # (a zero-byte placeholder)
    z = x * 2.0 + y
    L.mark_step()
    h1 = z._handle
    assert cd.is_device_only(h1) and h1 not in cd._HOST
    w = (z - x) * y                  # the next step reads z and x on the device
    L.mark_step()
    assert cd.is_device_only(w._handle) and h1 not in cd._HOST and (x._src or x._handle) not in cd._HOST
    ref = ((a * np.float32(2.0) + b) - a) * b
    assert w.numpy().tobytes() == ref.tobytes() and w._handle in cd._HOST
    assert z.numpy().tobytes() == (a * np.float32(2.0) + b).tobytes()
    n = L.tensor(np.float32(3.0))   # numbers stay host values (kernel parameters)
    assert not cd.is_device_only(n._src)
    L.set_backend("numpy")
    assert not cd.is_device_only(L.tensor(a)._src)
    # a device-only tensor read by a numpy-backend program after a backend switch: copied back
    assert (w * 1.0).numpy().tobytes() == ref.tobytes()


def check_run_cached_graph_on_device():
    L.set_backend("cuda")
    a = floats(4, 3)
    x = L.tensor(a)
    y = x * 3.0 - 1.0
    h = L.get_graph_hash([y])
    L.sync_multi([y])
    prog = L.computation_cache().get(h)
    assert [tuple(p.sizes) for p in prog.param_shapes] == [(), (), (), (4, 3)], prog.param_shapes
    (r,) = L.run_cached_graph(h, [1, 1.0, 3.0, L.tensor(a + 1)])        # (post order: alpha, 1.0, 3.0, x)
    assert r.numpy().tobytes() == ((a + 1) * np.float32(3.0) - np.float32(1.0)).tobytes()


def check_unknown_backend_name():
    raises(ValueError, lambda: L.set_backend("tpu"), "'tpu'", "'numpy' or 'cuda'")
    L.set_backend("numpy")
'''

NAMES = re.findall(r"^def (check_\w+)\(", CHECKS, re.M)


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", NAMES)
def test_lazy_cuda(results, name):
    assert results[name] == "ok", results[name]


def test_no_nvrtc_import_error(subprocess_python):
    """Without NVRTC, set_backend("cuda") raises ImportError naming what to install, and the backend is unchanged."""
    code = ("import accel.lazy as L\nfrom accel import emu\nemu.real_nvrtc_path = lambda env=None: None\n"
            "try:\n    L.set_backend('cuda')\nexcept ImportError as e:\n    print('IE', e)\n"
            "print(type(L.set_backend('numpy')).__name__)\n")
    r = subprocess_python(code)
    assert r.returncode == 0, r.stderr
    assert 'IE accel.lazy\'s CUDA backend needs NVRTC' in r.stdout and 'pip install nvidia-cuda-nvrtc' in r.stdout, r.stdout
    assert r.stdout.strip().endswith("NumpyBackend"), r.stdout


def test_disk_kernel_cache(subprocess_python, tmp_path):
    """ACCEL_LAZY_KERNEL_CACHE: a second process compiles nothing (the images come from the directory) and gets the
    same values; the files are keyed by source, NVRTC version, architecture and options."""
    code = ("import numpy as np, accel.lazy as L\nfrom accel.lazy import metrics as M\nL.set_backend('cuda')\n"
            "x = L.tensor(np.arange(40, dtype=np.float32).reshape(5, 8))\n"
            "y = (x.softmax(-1) * 3.0 + x.sum(0)) @ x.t()\nL.mark_step()\n"
            "print(M.counter_value('NvrtcCompile'), M.counter_value('CudaKernelDiskHit'), y.numpy().tobytes().hex())\n")
    env = {"ACCEL_LAZY_KERNEL_CACHE": str(tmp_path / "kc")}
    first = subprocess_python(code, env=env)
    assert first.returncode == 0, first.stderr
    second = subprocess_python(code, env=env)
    assert second.returncode == 0, second.stderr
    c1, d1, v1 = first.stdout.split()
    c2, d2, v2 = second.stdout.split()
    assert (c1, d1) == ("1", "None") and (c2, d2) == ("None", "1") and v1 == v2, (first.stdout, second.stdout)
    files = list((tmp_path / "kc").iterdir())
    assert len(files) == 1 and files[0].suffix == ".ptx" and b".entry k0" in files[0].read_bytes()


def test_kernel_fault_names_graph(subprocess_python):
    """A kernel that faults surfaces at the mark_step that ran it, as CudaKernelFault naming the graph hash; that
    graph's tensors keep their IR, the earlier step's tensor keeps its data."""
    code = r'''
import numpy as np, accel.lazy as L
from accel.lazy import _cuda_gen as cg, cuda_backend as cb
L.set_backend("cuda")
x = L.tensor(np.ones((4, 4), np.float32))
y = x * 2.0
L.mark_step()
h1 = y._handle
before = y.numpy().copy()
finish = cg.Graph._finish
def bad(self, st, body, prologue=""):
    finish(self, st, body + ["if (i == 0) o0[(1LL << 40)] = 0;"], prologue)
cg.Graph._finish = bad
z = y + 1.0
want = L.get_graph_hash([z]).hex()
try:
    L.mark_step()
except cb.CudaKernelFault as e:
    print("FAULT", want in str(e), "illegal" in str(e).lower())
print(z._node is not None and z._handle is None, y._handle is h1, (y.numpy() == before).all())
'''
    r = subprocess_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["FAULT", "True", "True", "True", "True", "True"], r.stdout + r.stderr
