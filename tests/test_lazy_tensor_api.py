"""Lazy tensors: sync / mark_step and the computation cache, live-tensor tracking, metrics, IR reuse,
force_fallback, errors, and a 1e5-op chain.  Each check runs once per twin in its own interpreter
(ACCEL_BACKEND), so that the tensor layer sits on that twin's IR."""
import re

import pytest

CHECKS = r'''
import gc, json, sys, traceback
import numpy as np
import accel, accel.lazy as L
from accel.lazy import metrics as M

def arr(*shape, seed=0, dtype=np.float32):
    return (np.random.default_rng(seed).integers(-8, 9, shape) / 4).astype(dtype)

def check_cache_hits_and_misses():
    L.mark_step()
    M.reset()
    w = L.tensor(arr(4, 4, seed=1))
    def step(x):
        return ((x @ w) * 0.5 + 1).relu().sum(0)
    x1, x2 = L.tensor(arr(4, 4, seed=2)), L.tensor(arr(4, 4, seed=3))
    L.mark_step()                        # tensors without IR are uploaded, not compiled
    assert cv("UncachedCompile") == 0 and cv("SyncTensorsToData") == 3
    y1 = step(x1); L.mark_step()
    y2 = step(x2); L.mark_step()
    y3 = step(x1); L.mark_step()
    assert cv("UncachedCompile") == 1, M.metrics_report()
    assert cv("CachedCompile") == 2
    assert cv("MarkStep") == 4
    assert cv("SyncedTensorsWithIR") == 3
    ref = lambda a: np.maximum((a @ arr(4, 4, seed=1)) * np.float32(0.5) + 1, 0).sum(0)
    assert np.allclose(y1.numpy(), ref(arr(4, 4, seed=2)), rtol=1e-6)
    assert np.allclose(y2.numpy(), ref(arr(4, 4, seed=3)), rtol=1e-6)
    assert np.array_equal(y1.numpy(), y3.numpy())
    x3 = L.tensor(arr(5, 4, seed=4))
    y4 = step(x3); L.mark_step()         # new shape: a new graph hash (x3 is a root here), compiled again
    assert cv("UncachedCompile") == 2
    assert L.computation_cache().maxsize == 1024
    assert M.metric_data("TensorsGraphSize")[0] == 4

def check_views_keep_their_base_alive():
    # as torch's functionalised views: a view keeps the tensor it was taken of alive, so mark_step syncs it
    L.mark_step()
    a = L.tensor(arr(3, 3)); L.mark_step()
    cases = ((lambda: a * 2, 1), (lambda: (a * 2).reshape(9), 2), (lambda: (a * 2).reshape(9).reshape(3, 3).t(), 4),
             (lambda: a.t(), 1), (lambda: (a * 2).transpose(0, 1) + 1, 1), (lambda: (a * 2).sum(0).expand(2, 3), 2),
             # matmul's result is a view (squeeze_ / _unsafe_view) of its mm / bmm output, which is kept (torch 2.13)
             (lambda: L.tensor(arr(3)) @ a, 2), (lambda: L.tensor(arr(2, 3, 3)) @ a, 2),
             (lambda: L.tensor(arr(2, 3, 3)) @ L.tensor(arr(2, 3, 3)), 2))
    for make, n in cases:
        M.reset()
        y = make()
        gc.collect()
        L.mark_step()
        assert cv("SyncedTensorsWithIR") == n, (n, cv("SyncedTensorsWithIR"))

def check_results_survive_buffer_reuse():
    # the cached program reuses its intermediate buffers; results handed to tensors must not change
    x1, x2 = L.tensor(arr(8, 8, seed=5)), L.tensor(arr(8, 8, seed=6))
    L.mark_step()
    def step(x):
        h = (x * 2 + 1).exp().tanh()
        return h * h - h, h.t().reshape(64)
    a, av = step(x1); L.mark_step()
    first = a.numpy(), av.numpy()
    b, bv = step(x2); L.mark_step()
    assert np.array_equal(a.numpy(), first[0]) and np.array_equal(av.numpy(), first[1])
    h = np.tanh(np.exp(arr(8, 8, seed=6) * 2 + 1))
    assert np.allclose(b.numpy(), h * h - h, rtol=1e-6)
    assert np.allclose(bv.numpy(), h.T.reshape(64), rtol=1e-6)

def _block(F, x, w, b, g, mask):
    # the attention pieces whose kernels write into the program's buffers: layer_norm, linear (addmm), a
    # reshape of a transpose (a copy in numpy), bmm, masked_fill, softmax, cat; a small root
    h = F.layer_norm(x, (64,), g, None)
    q = F.linear(h, w, b)                                    # [4, 32, 64]
    k = q.reshape(4, 32, 4, 16).transpose(1, 2).reshape(16, 32, 16)
    att = (k @ k.transpose(1, 2)).masked_fill(mask, float("-inf")).softmax(-1)
    y = L.cat([att @ k, k], -1)
    return y.sum(-1)

def _block_np(x, w, b, g, mask):
    m = x.mean(-1, keepdims=True)
    h = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + np.float32(1e-5)) * g
    q = h @ w.T + b
    k = q.reshape(4, 32, 4, 16).transpose(0, 2, 1, 3).reshape(16, 32, 16)
    att = np.where(mask, np.float32(-np.inf), k @ k.transpose(0, 2, 1))
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    return np.concatenate([att @ k, k], -1).sum(-1)

def check_cached_step_reuses_its_buffers():
    # a cached step writes matmul / addmm / softmax / masked_fill / layer_norm / cat results and reshape
    # copies into buffers the program owns: it allocates no large array afresh (numpy reports its data to
    # tracemalloc), and the values stay right from step to step while the buffers are reused
    import tracemalloc
    F = L.nn.functional
    xs = [arr(4, 32, 64, seed=s) for s in (11, 12, 13)]
    w, b, g = arr(64, 64, seed=14) / 8, arr(64, seed=15), arr(64, seed=16)
    mask = np.triu(np.ones((32, 32), bool), 1)
    P = [L.tensor(v) for v in (w, b, g)] + [L.tensor(mask)]
    X = [L.tensor(v) for v in xs]
    L.mark_step()
    ys = []
    for x in X[:2]:
        ys.append(_block(F, x, *P)); L.mark_step()           # compiles, then runs the cached program
    tracemalloc.start()
    y = _block(F, X[2], *P)
    tracemalloc.reset_peak()
    L.mark_step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    big = 4 * 32 * 64 * 4                                   # one [4, 32, 64] float32 intermediate
    assert peak < 2 * big, peak                            # (every intermediate fresh: over 10 of them)
    for got, x in zip(ys + [y], xs):
        assert np.allclose(got.numpy(), _block_np(x, w, b, g, mask), rtol=1e-4, atol=1e-4)

def check_dropped_tensor_not_synced():
    L.mark_step()
    M.reset()
    a = L.tensor(arr(2, 3))
    b = a * 2
    c = a + 1
    del c
    gc.collect()
    L.mark_step()
    assert cv("SyncedTensorsWithIR") == 2           # a (device-data IR) and b; not the dropped c
    text = L.get_latest_computation_graph()
    assert "_multiply" in text and "_add(" not in text, text
    assert cv("DestroyLtcTensor") >= 1
    assert np.array_equal(b.numpy(), arr(2, 3) * 2)

def check_tensor_ids():
    ts = [L.tensor(np.zeros(2, np.float32)) for _ in range(5)]
    ids = [L.get_tensor_id(t) for t in ts]
    assert ids == sorted(ids) and len(set(ids)) == 5 and ids[0] >= 1
    y = ts[0] + ts[1]
    assert L.get_tensor_id(y) > ids[-1]
    raises(TypeError, lambda: L.get_tensor_id(np.zeros(2)), "lazy tensor", "ndarray")
    before = cv("CreateLtcTensor")
    z = y * 3
    assert cv("CreateLtcTensor") == before + 1

def check_sync_multi_only_given():
    a = L.tensor(arr(2, 2))
    b, c = a.exp(), a.cos()
    L.sync_multi([b])
    assert b._node is None and c._node is not None
    assert "aten::cos" in L.get_tensors_text([c])
    assert "device_data" in L.get_tensors_text([b]) and "aten::exp" not in L.get_tensors_text([b])
    assert np.allclose(b.numpy(), np.exp(arr(2, 2)), rtol=1e-6)
    L.sync_multi([c, np.zeros(1)])                   # non-lazy entries are ignored, as torch does
    assert c._node is None
    assert L.wait_device_ops() is None

def check_numpy_is_a_copy():
    a = L.tensor(np.arange(6, dtype=np.float32))
    v = a.numpy()
    v[0] = 100
    assert a.numpy()[0] == 0
    src = np.arange(3.0)
    t = L.tensor(src)
    src[0] = 9
    assert t.numpy()[0] == 0 and t.dtype == np.float64 and t.shape == (3,) and t.ndim == 1

def check_scalars_through_data_cache():
    L.mark_step()
    M.reset()
    a = L.tensor(arr(2, 2))
    y = a * 123.25 + 123.25                       # one miss for 123.25, one for alpha 1 (unless cached)
    misses = cv("DeviceDataCacheMiss")
    z = a * 123.25
    assert cv("DeviceDataCacheMiss") == misses    # a hit: the same handle
    text = L.get_tensors_text([y])
    assert text.count("[Double[]] lazy_tensors::device_data") == 2
    n1 = y._node.operands[1].node
    n0 = y._node.operands[0].node.operands[1].node
    assert n0 is not n1 and n0.handle is n1.handle

def check_force_fallback():
    L.mark_step()
    M.reset()
    a = L.tensor(arr(2, 3))
    assert L.force_fallback("aten::mul") == ["aten::mul"]
    try:
        y = a * 2
        assert L.get_force_fallback() == "aten::mul"
        assert L.get_tensors_text([y]) == ("IR {\n  %0 = [Float[2,3]] lazy_tensors::device_data(), device=CPU0, "
                                           "ROOT=0\n}\n")
        assert cv("aten::mul") == 1
        assert np.array_equal(y.numpy(), arr(2, 3) * 2)
        z = a + 1                                 # not forced: traced
        assert "aten::add" in L.get_tensors_text([z])
    finally:
        L.force_fallback(None)
    assert L.get_force_fallback() == ""
    raises(ValueError, lambda: L.force_fallback("mul"), "'mul'")

def check_metrics_names_and_report():
    L.mark_step()
    M.reset()
    a = L.tensor(arr(2, 3))
    y = (a + 1).relu().sum(0).reshape(3, 1).t()
    L.mark_step()
    names = M.counter_names()
    for n in ("CreateLtcTensor", "MarkStep", "UncachedCompile", "SyncedTensorsWithIR",
              "lazy::add", "lazy::relu", "lazy::sum", "lazy::view_copy_symint", "lazy::t_copy"):
        assert n in names, (n, names)
    rep = M.metrics_report()
    assert "Metric: TensorsGraphSize\n  TotalSamples: 1\n  Accumulator: 8.00\n" in rep, rep
    assert "Counter: lazy::add\n  Value: 1\n" in rep
    assert rep.index("Metric: ") < rep.index("Counter: ")

def check_reuse_ir():
    L.mark_step()
    M.reset()
    x = L.tensor(arr(3, 3))
    L.mark_step()
    def step():
        return (x * 2 + 1).relu()
    L.set_reuse_ir(True)
    try:
        assert L.get_reuse_ir() is True
        out = []
        for _ in range(3):          # as in LTC: step 2 forks the trie at its root, step 3 reuses step 2's nodes
            y = step()
            out.append((y, L.get_tensors_text([y]), L.get_graph_hash([y])))
            L.mark_step()
    finally:
        L.set_reuse_ir(False)
    assert out[0][1:] == out[1][1:] == out[2][1:]
    assert cv("TrieForked") == 1
    for cls in ("MulTensor", "AddTensor", "Relu", "DeviceData"):
        assert cv("IrNodeReused_torch::lazy::" + cls) >= 1, (cls, M.counter_names())
    assert all(np.array_equal(t.numpy(), np.maximum(arr(3, 3) * 2 + 1, 0)) for t, _, _ in out)
    raises(TypeError, lambda: L.set_reuse_ir(1), "bool")

def check_run_cached_graph():
    x, w = L.tensor(arr(2, 3, seed=7)), L.tensor(arr(3, 2, seed=8))
    y = (x @ w).relu() * 3
    h = L.get_graph_hash([y])
    L.sync_multi([y])                       # compiles and caches the graph under h
    x2 = arr(2, 3, seed=9)
    (r,) = L.run_cached_graph(h, [3, arr(3, 2, seed=8), x2])   # parameters in post order: 3, w, x
    assert np.allclose(r.numpy(), np.maximum(x2 @ arr(3, 2, seed=8), 0) * 3, rtol=1e-6)
    raises(RuntimeError, lambda: L.run_cached_graph(b"x" * 16, []), "Failed to get computation by hash")
    raises(RuntimeError, lambda: L.run_cached_graph(h[:8], []), "sizeof(hash_t)")
    raises(RuntimeError, lambda: L.run_cached_graph(h, [1]), "takes 3 inputs, got 1")

def check_latest_graph_text():
    a = L.tensor(arr(2, 2))
    (a.sigmoid() @ a).numpy()
    text = L.get_latest_computation_graph()
    assert text.startswith("def run(P):") and "_matmul" in text

def check_bool_subtraction_is_refused():
    # torch's sub_check, for every spelling of a subtraction (rsub included): two bools, or one bool operand
    L.mark_step()
    b = L.tensor(np.array([True, False]))
    i = L.tensor(np.array([1, 2]))
    two = "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."
    one = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
           "use the `~` or `logical_not()` operator instead.")
    n0, m0 = cv("lazy::sub"), cv("DeviceDataCacheMiss")
    for fn, text in ((lambda: b - b, two), (lambda: b - True, two), (lambda: True - b, two),
                     (lambda: b - i, one), (lambda: i - b, one), (lambda: b - 1, one), (lambda: 1 - b, one),
                     (lambda: b - 0.5, one), (lambda: 2.5 - b, one), (lambda: i - True, one),
                     (lambda: False - i, one), (lambda: L.sub(i, b, alpha=2), one)):
        assert str(raises(RuntimeError, fn)) == text
    assert (cv("lazy::sub"), cv("DeviceDataCacheMiss")) == (n0, m0)     # nothing traced, no scalar data made
    assert (b + True).numpy().tolist() == [True, True] and (i - 1).numpy().tolist() == [0, 1]
    L.mark_step()


def check_narrow_int_scalars_wrap_around():
    # a Python int (or 0-dim integer tensor) operand outside a narrower integer result dtype is cast to it
    # with wrap-around, as torch's add / sub / mul do; the step runs instead of failing in the backend
    L.mark_step()
    u8 = np.array([0, 1, 200], np.uint8)
    i8 = np.array([-100, 1, 100], np.int8)
    u, i = L.tensor(u8), L.tensor(i8)
    cases = [(u + -1, u8 + np.uint8(255)), (-1 + u, u8 + np.uint8(255)), (u - -1, u8 + np.uint8(1)),
             (u * -1, u8 * np.uint8(255)), (-1 * u, u8 * np.uint8(255)), (i * 200, i8 * np.int8(-56)),
             (i - 300, i8 - np.int8(44)), (u.add(-1, alpha=2), u8 + np.uint8(254)),
             (i + L.tensor(np.array(1000, np.int16)), i8 + np.int8(-24)),
             (L.tensor(np.array(7, np.uint8)) + -1, np.array(6, np.uint8))]
    with np.errstate(over="ignore"):
        for got, want in cases:
            assert got.dtype == want.dtype, (got.dtype, want.dtype)
            assert got.numpy().tolist() == want.tolist(), (got.numpy(), want)
    L.mark_step()


def check_errors_name_values():
    a, b = L.tensor(np.zeros((2, 3), np.float32)), L.tensor(np.zeros((4, 3), np.float32))
    raises(RuntimeError, lambda: a + b, "The size of tensor a (2) must match the size of tensor b (4) at "
           "non-singleton dimension 0")
    raises(RuntimeError, lambda: a @ a, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)")
    raises(RuntimeError, lambda: a.view(4, 2), "shape '[4, 2]' is invalid for input of size 6")
    raises(RuntimeError, lambda: a.mm(L.tensor(np.zeros((3, 2), np.float64))), "Float != Double")
    raises(RuntimeError, lambda: L.tensor(np.zeros(3, np.int64)).mean(), "Got: Long")
    raises(RuntimeError, lambda: L.tensor(np.zeros(3, np.int64)).add(1, alpha=0.5), "alpha=0.5")
    raises(IndexError, lambda: a.sum(2), "[-2, 1]", "got 2")
    raises(IndexError, lambda: a.transpose(0, 5), "got 5")
    raises(TypeError, lambda: a + "x", "'x'")
    raises(TypeError, lambda: a.mul([1, 2]), "list")
    raises(TypeError, lambda: L.tensor(np.zeros(2, np.complex64)), "complex64")
    raises(TypeError, lambda: a.to("nope"), "nope")
    raises(RuntimeError, lambda: a.expand(5, 3), "(5)", "(2)")
    raises(RuntimeError, lambda: a.t().t().reshape(-1, -1), "only one dimension can be inferred")
    raises(RuntimeError, lambda: L.cat([a, L.tensor(np.zeros((2, 2), np.float32))], 0),
           "Expected size 3 but got size 2 for tensor number 1")
    raises(RuntimeError, lambda: L.tensor(np.zeros((2, 3, 4), np.float32)).t(), "self is 3D")
    raises(RuntimeError, lambda: a.clamp(), "At least one of 'min' or 'max'")
    raises(TypeError, lambda: L.exp(np.zeros(2)), "ndarray")
    raises(RuntimeError, lambda: bool(a), "ambiguous")
    raises(TypeError, lambda: L.LazyTensor(), "accel.lazy.tensor")

def check_dtypes_and_module_names():
    assert L.float32 == np.float32 and L.float64 == np.float64 and L.int64 == np.int64 and L.bool == np.bool_
    for name in ("cat", "exp", "matmul", "maximum", "minimum", "sigmoid", "softmax", "log_softmax", "clamp"):
        assert callable(getattr(L, name)), name
    t = L.tensor(3)
    assert t.dtype == np.int64 and t.shape == ()
    assert L.tensor(1.5).dtype == np.float32
    assert L.tensor([1, 2], dtype=L.float64).dtype == np.float64

def check_long_chain_no_recursion():
    sys.setrecursionlimit(200)
    x = L.tensor(np.zeros(2, np.float32))
    y = x
    for i in range(100000):
        y = y + 1.0 if i % 2 else y.relu()
    h = L.get_graph_hash([y])
    assert len(h) == 16
    assert np.array_equal(y.numpy(), np.full(2, 50000, np.float32))
    del y
    gc.collect()
    sys.setrecursionlimit(1000)

def check_nan_and_inf_without_warnings():
    import warnings
    a = L.tensor(np.array([-1.0, 0.0, 4.0], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = a.log()
        z = L.tensor(np.array([1, 0], np.int64)) / 0
        L.mark_step()
        v = y.numpy()
    assert np.isnan(v[0]) and v[1] == -np.inf and v[2] == np.float32(np.log(4.0))
    assert z.numpy().tolist() == [np.inf, np.nan] or (np.isinf(z.numpy()[0]) and np.isnan(z.numpy()[1]))

def check_dynamic_shapes_share_hash_not_program():
    hashes, vals = [], []
    with L.dynamic_shapes():
        for shape in ((2, 3), (5, 7)):
            x = L.tensor(arr(*shape))
            y = (x * 2 + 1).relu().sum(-1)
            hashes.append(L.get_graph_hash([y]))
            L.mark_step()
            vals.append((y.numpy(), np.maximum(arr(*shape) * 2 + 1, 0).sum(-1)))
    assert hashes[0] == hashes[1]               # LTC's dynamic-shape dag hash leaves sizes out
    for got, want in vals:
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6)

def check_fallback_keeps_input_ir():
    a = L.tensor(arr(2, 3))
    y = a * 2
    z = y.sin()
    assert "aten::mul" in L.get_tensors_text([y])   # the input keeps its IR
    assert np.allclose(z.numpy(), np.sin(arr(2, 3) * 2), rtol=1e-6)
    assert (M.counter_value("aten::sin") or 0) >= 1

'''

NAMES = re.findall(r"^def (check_\w+)\(", CHECKS, re.M)


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", NAMES)
def test_lazy_tensor(results, name):
    assert results[name] == "ok", results[name]
