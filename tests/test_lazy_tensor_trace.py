"""The per-op tracing hot path (accel._native._lazy_trace / accel._python._lazy_trace) under the tensors:
registration and counting of tensors, the scalar device-data fast path and its fallbacks.  Each check
runs in its own interpreter per twin (ACCEL_BACKEND), so that the tensor layer sits on that twin."""
import json

import pytest

CHECKS = r'''
import gc, json, math
import numpy as np
import accel, accel.lazy as L
from accel import _impl
from accel.lazy import metrics as M, tensors as T

lt = _impl.module("_lazy_trace")
out = {"backend": accel.backend}
cv = lambda n: M.counter_value(n) or 0

# a failed direct construction registers and counts nothing
c0, d0 = cv("CreateLtcTensor"), cv("DestroyLtcTensor")
try:
    L.LazyTensor()
except TypeError as e:
    out["direct"] = str(e)
gc.collect()
out["direct_counts"] = [cv("CreateLtcTensor") - c0, cv("DestroyLtcTensor") - d0]

# created / destroyed / live bookkeeping through wrap and dealloc
x = L.tensor(np.ones((2, 2), np.float32))
c0, d0, n0 = cv("CreateLtcTensor"), cv("DestroyLtcTensor"), lt.live_count()
ys = [x * 3.0 for _ in range(5)]
ids = [L.get_tensor_id(y) for y in ys]
out["ids_unique_increasing"] = ids == sorted(set(ids))
out["base_of_non_view"] = repr(ys[0]._base)
del ys
gc.collect()
out["counts"] = [cv("CreateLtcTensor") - c0, cv("DestroyLtcTensor") - d0, lt.live_count() - n0]

# scalar device data: the fast path answers only cache hits of nonzero, non-NaN numbers
M.reset(); T.clear_data_cache()
out["miss_first"] = lt.scalar_node(2.5) is None
x * 2.5
out["hit_after"] = type(lt.scalar_node(2.5)).__name__
out["zero_float"] = lt.scalar_node(0.0) is None and lt.scalar_node(math.nan) is None
out["other_types"] = [lt.scalar_node(v) is None for v in ("2.5", np.float64(2.5), None)]
x * 0.0; x * -0.0; x * 0.0; x * 2.5; x * 2; x * True; x * 2; x * 1
out["misses"] = cv("DeviceDataCacheMiss")
n = lt.scalar_node(2)
out["int_node"] = [n.shapes[0].dtype, n.handle.value, type(n.handle.value).__name__]
L.set_reuse_ir(True)
out["reuse_off_fast_path"] = lt.scalar_node(2) is None
L.set_reuse_ir(False)
try:
    lt.setup(object, [0], [0], {}, None, None, {})
except TypeError as e:
    out["setup_error"] = str(e)
# a setup missing a scalar kind fails on both twins and leaves the configuration as it was
try:
    lt.setup(T.LazyTensor, T._c_create, T._c_destroy, T._data_cache, T._device_data, T.DEVICE,
             {int: T._SCALAR_KIND[int]})
    out["setup_partial"] = "no error"
except KeyError as e:
    out["setup_partial"] = repr(e)
# a malformed scalar kind or a cache without move_to_end: the same error on both twins, nothing changed
bad_kinds = {float: (T._SCALAR_KIND[float][0],), int: T._SCALAR_KIND[int], bool: T._SCALAR_KIND[bool]}
out["setup_bad"] = []
for cache, kinds in ((T._data_cache, bad_kinds), (None, T._SCALAR_KIND)):
    try:
        lt.setup(T.LazyTensor, T._c_create, T._c_destroy, cache, T._device_data, T.DEVICE, kinds)
        out["setup_bad"].append("no error")
    except (ValueError, AttributeError) as e:
        out["setup_bad"].append(type(e).__name__ + (": " + str(e) if cache is None else ""))
x * 2.5
out["setup_kept"] = type(lt.scalar_node(2.5)).__name__

# the live list: ascending ids after deletions in the middle, tensors in collected cycles leave it, and a
# weak-reference callback of a dying tensor (run during its destruction) neither sees it nor breaks
L.mark_step()
ts = [x * float(k + 7) for k in range(6)]
del ts[1], ts[3]
live = L.tensors.live_tensors()
out["live_order"] = [L.get_tensor_id(t) for t in live] == sorted(L.get_tensor_id(t) for t in live)
out["live_has"] = [any(t is u for u in live) for t in ts]
del live
n0, d0 = lt.live_count(), cv("DestroyLtcTensor")
gc.disable()
c = x * 11.0
cyc = [c]
c._base = cyc                    # a reference cycle through the tensor
del c, cyc
out["cycle_kept"] = lt.live_count() - n0
gc.collect()
gc.enable()
out["cycle_freed"] = [lt.live_count() - n0, cv("DestroyLtcTensor") - d0]
import weakref
seen = []
def cb(ref):
    seen.append([ref() is None, len(L.tensors.live_tensors()) == lt.live_count()])
    L.mark_step()                # syncs the live tensors while one is being destroyed
d = x * 13.0
w = weakref.ref(d, cb)
n1 = lt.live_count()
del d
out["callback"] = seen + [lt.live_count() - n1]

# copying would duplicate the tensor id (the copy's death unregistered the original before): refused
import copy, pickle
for fn in (copy.copy, copy.deepcopy, pickle.dumps):
    try:
        fn(x)
        out.setdefault("copy", []).append("no error")
    except TypeError as e:
        out.setdefault("copy", []).append(str(e))

# the op methods: misuse raises as the closures do; force_fallback reaches the fast paths; the fast and
# the slow path (cache miss) trace the same text and dtypes
for fn in (lambda: L.LazyTensor.relu(3), lambda: L.LazyTensor.__mul__(3, 2.0), lambda: L.LazyTensor.add(3, 1.0)):
    try:
        fn()
    except AttributeError as e:
        out.setdefault("misuse", []).append(str(e))
L.force_fallback("aten::relu")
r = (x * 1.5).relu()
out["forced"] = [r._node is None, cv("aten::relu")]
L.force_fallback(None)
out["unforced"] = (x * 1.5).relu()._node is not None
def prog(x):
    return ((x * 1.25 + 0.75) / 3.5 - 2) ** 2
texts = []
for _ in range(2):
    T.clear_data_cache()
    a, b = prog(x), prog(x)          # a: every scalar misses first, b: every scalar hits
    texts += [L.get_tensors_text([a]), L.get_tensors_text([b])]
out["same_text"] = len(set(texts)) == 1
i = L.tensor(np.arange(4).reshape(2, 2))
bl = L.tensor(np.array([True, False]))
h = L.tensor(np.ones(2, np.float16))
out["dtypes"] = [str(v.dtype) for v in (i / 2, i * 2, i + 2, i - i, i * 2.0, bl * 2, bl + True, h + 1.5, h ** 2,
                                        i.neg(), i.exp(), bl.abs())]
print(json.dumps(out))
'''


@pytest.fixture(scope="module", params=["native", "python"])
def out(request, subprocess_python):
    from accel import _build_config
    if request.param == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false: no compiled twin")
    r = subprocess_python(CHECKS, env={"ACCEL_BACKEND": request.param})
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["backend"] == request.param
    return res


def test_direct_construction_is_refused_and_not_counted(out):
    assert "cannot be built directly" in out["direct"]
    assert out["direct_counts"] == [0, 0]


def test_tensors_are_registered_counted_and_released(out):
    assert out["ids_unique_increasing"]
    assert out["base_of_non_view"] == "None"
    assert out["counts"] == [5, 5, 0]


def test_scalar_fast_path_hits_only_cached_numbers(out):
    assert out["miss_first"] and out["hit_after"] == "Node"
    assert out["zero_float"]
    assert out["other_types"] == [True, True, True]
    # 2.5, 0.0, -0.0 (different bytes), 2 (Long), True (Bool), 1 (the alpha of nothing: mul has none)
    assert out["misses"] == 6
    assert out["int_node"] == [4, 2, "int"]
    assert out["reuse_off_fast_path"]


def test_setup_checks_the_tensor_class(out):
    assert "subclass of TensorBase" in out["setup_error"]


def test_setup_missing_a_scalar_kind_fails_and_changes_nothing(out):
    assert out["setup_partial"] == "KeyError(<class 'float'>)"
    assert out["setup_bad"] == ["ValueError", "AttributeError: 'NoneType' object has no attribute 'move_to_end'"]
    assert out["setup_kept"] == "Node"


def test_op_methods_misuse_fallback_and_paths(out):
    assert out["misuse"] == ["'int' object has no attribute '_shape'"] * 2 + ["'float' object has no attribute '_shape'"]
    assert out["forced"] == [True, 1]
    assert out["unforced"]
    assert out["same_text"]
    assert out["dtypes"] == ["float32", "int64", "int64", "int64", "float32", "int64", "bool", "float16",
                             "float16", "int64", "float32", "bool"]


def test_seeded_node_hashes_repeat_exactly(twin):
    # the python twin remembers an op's last seed and its seeded hash: repeats, alternations and bad
    # seeds after good ones behave as the first time
    ir = twin.mod("_ir")
    op, s = ir.OpKind("aten::trace_seed_test"), ir.Shape(6, (2,))
    first = {seed: ir.Node(op, (), (s,), 1, seed).hash for seed in (7, 2**100 + 3, 7)}
    for _ in range(3):
        for seed in (7, 2**100 + 3):
            assert ir.Node(op, (), (s,), 1, seed).hash == first[seed]
    assert first[7] != first[2**100 + 3]
    for bad, exc in ((None, TypeError), (True, TypeError), (-1, ValueError), (2**128, ValueError)):
        with pytest.raises(exc, match="hash_seed"):
            ir.Node(op, (), (s,), 1, bad)
    assert ir.Node(op, (), (s,), 1, 7).hash == first[7]


def test_live_list_order_cycles_and_callbacks(out):
    assert out["live_order"]
    assert out["live_has"] == [True] * 4
    assert out["cycle_kept"] == 1
    assert out["cycle_freed"] == [0, 1]
    assert out["callback"] == [[True, True], -1]


def test_tensors_cannot_be_copied(out):
    assert out["copy"] == ["lazy tensors cannot be copied or pickled (a copy would share the tensor id); use "
                           ".numpy() or build a new tensor"] * 3
