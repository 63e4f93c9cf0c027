"""Lazy indexing and the views of issue 19 beyond the goldens (which check text, hash and values against
torch 2.13 LTC): torch's errors for bad indices and arguments, the unsupported cases refused without
tracing or changing anything, views of updated tensors, and counters.  Each check runs once per twin in its
own interpreter (ACCEL_BACKEND)."""
import re

import pytest

CHECKS = r'''
import json, traceback
import numpy as np
import accel, accel.lazy as L
from accel.lazy import metrics as M

def arr(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)

def check_index_errors():
    x = L.tensor(arr(2, 3, 4))
    raises(IndexError, lambda: x[2], "index 2 is out of bounds for dimension 0 with size 2")
    raises(IndexError, lambda: x[0, -4], "index -4 is out of bounds for dimension 0 with size 3")
    raises(IndexError, lambda: x[0, 0, 0, 0], "too many indices for tensor of dimension 3")
    raises(IndexError, lambda: x[..., 0, ...], "single ellipsis")
    raises(ValueError, lambda: x[::-1], "step must be greater than zero")
    raises(ValueError, lambda: x[:, ::0], "step must be greater than zero")
    raises(IndexError, lambda: L.tensor(np.float32(1))[0], "invalid index of a 0-dim tensor")
    raises(IndexError, lambda: x["a"], "valid indices (got str)")
    raises(IndexError, lambda: x[0, 1.5], "valid indices (got float)")
    raises(IndexError, lambda: x.select(1, 3), "select(): index 3 out of range for tensor of size [2, 3, 4]")
    raises(IndexError, lambda: x.select(3, 0), "Dimension out of range")
    raises(RuntimeError, lambda: x.narrow(2, 3, 2), "start (3) + length (2) exceeds dimension size (4).")
    raises(RuntimeError, lambda: x.narrow(0, 0, -1), "length must be non-negative")
    raises(RuntimeError, lambda: x.flatten(2, 1), "start_dim cannot come after end_dim")
    raises(RuntimeError, lambda: x.unflatten(1, (2, 2)), "is invalid for input of size 3")
    raises(RuntimeError, lambda: x.repeat(2, 2), "can not be smaller than number of dimensions")
    raises(RuntimeError, lambda: x.flip(0, 0), "appears multiple times")
    raises(RuntimeError, lambda: x.movedim((0, 1), 2), "movedim: Invalid source or destination dims")
    raises(RuntimeError, lambda: L.stack([]), "stack expects a non-empty TensorList")
    raises(RuntimeError, lambda: L.stack([x, x[0]]), "stack expects each tensor to be equal size")
    raises(IndexError, lambda: L.stack([x, x], 4), "Dimension out of range")
    raises(TypeError, lambda: L.stack(x), "list or tuple")
    raises(RuntimeError, lambda: x.roll((1, 2), 0), "shifts and dimensions must align")

def check_unsupported_refused_without_tracing():
    x = L.tensor(arr(2, 3))
    L.mark_step()
    before = L.get_tensors_text([x])
    # LTC gives stack the first tensor's dtype where eager torch promotes to another: refused
    raises(NotImplementedError, lambda: L.stack([x, x.to(L.float64)]), "promoted dtype")
    raises(TypeError, lambda: x.__setitem__(0, "a"), "value must be a lazy tensor or a Python number")
    assert L.get_tensors_text([x]) == before
    assert np.array_equal(x.numpy(), arr(2, 3))
    a = x[...]                       # an in-place update through an alias view reaches the base
    a.add_(1)
    assert np.array_equal(x.numpy(), arr(2, 3) + 1) and np.array_equal(a.numpy(), arr(2, 3) + 1)

def check_views_of_updated_base():
    x = L.tensor(arr(2, 3))
    v = x[1]
    s = x[:, ::2]
    x.add_(10)                       # the views are regenerated from the updated base when used
    assert np.array_equal((v * 1).numpy(), arr(2, 3)[1] + 10)
    assert np.array_equal((s + 0).numpy(), arr(2, 3)[:, ::2] + 10)
    L.mark_step()
    assert np.array_equal(v.numpy(), arr(2, 3)[1] + 10)

def check_setitem_and_inplace_on_views():
    x = L.tensor(arr(2, 3))
    v = x[0]
    v.add_(1)
    w = x[:, 1:]
    w.mul_(2)
    x[1, ::2] = -1
    x[..., None][0] = L.tensor(np.array([[5.0], [6.0], [7.0]], np.float32))
    want = arr(2, 3)
    want[0] += 1
    want[:, 1:] *= 2
    want[1, ::2] = -1
    want[0] = [5, 6, 7]
    assert np.array_equal(x.numpy(), want)
    L.mark_step()
    assert np.array_equal(x.numpy(), want) and np.array_equal(v.numpy(), want[0])

def check_counters_and_clone():
    x = L.tensor(arr(2, 3, 4))
    L.mark_step()
    M.reset()
    a = x[:, 1:3]; b = x[0]; c = x[:, :]; d = L.stack([x, x]); e = x.flip(0); f = x.repeat(1, 1, 2)
    g = x.clone()
    assert L.get_tensors_text([g]) == L.get_tensors_text([x])
    assert g is not x and x.contiguous() is x and x.flatten(1, 1) is x
    got = {n: M.counter_value(n) for n in ("lazy::slice_copy_symint", "lazy::select_copy", "lazy::alias_copy",
                                           "lazy::stack", "lazy::flip", "lazy::repeat")}
    assert got == dict.fromkeys(got, 1), got
    r = x.roll(1, 2)
    assert M.counter_value("aten::roll") == 1
    L.mark_step()
    want = arr(2, 3, 4)
    for t, w in ((a, want[:, 1:3]), (b, want[0]), (c, want), (d, np.stack([want, want])), (e, want[::-1]),
                 (f, np.tile(want, (1, 1, 2))), (g, want), (r, np.roll(want, 1, 2))):
        assert np.array_equal(t.numpy(), w)

def check_int_dtypes_and_numpy_ints():
    x = L.tensor(arr(3, 4, dtype=np.int32))
    y = x[np.int64(1), np.int32(-1)]
    assert y.dtype == np.int32 and y.shape == ()
    assert y.item() == 7
    b = L.tensor(arr(3, 4) > 4)
    assert np.array_equal(b[1:].numpy(), (arr(3, 4) > 4)[1:])

def check_factory_errors_and_values():
    raises(RuntimeError, lambda: L.zeros(2, -1), "zeros: Dimension size must be non-negative.")  # LTC zeros check
    raises(ValueError, lambda: L.ones(2, device="cuda"), "device must be None or 'lazy'")
    raises(RuntimeError, lambda: L.arange(0, 5, 0), "step must be nonzero")
    raises(RuntimeError, lambda: L.arange(5, 0, 1), "upper bound and larger bound inconsistent with step sign")
    raises(TypeError, lambda: L.full((2,), "x"), "fill_value")
    raises(RuntimeError, lambda: L.tensor(arr(3)).triu(), "at least 2 dimensions")
    assert L.full((2,), 7).dtype == np.int64 and L.full((2,), True).dtype == np.bool_
    assert L.full((2,), 1.5).dtype == np.float32 and L.zeros(3, dtype=L.float64).dtype == np.float64
    assert L.arange(5).dtype == np.int64 and L.arange(0.5, 2).dtype == np.float32
    z = L.zeros(2, 3); o = L.ones(2, 3); e = L.empty(4); a = L.arange(1, 10, 3)
    L.mark_step()
    assert np.array_equal(z.numpy(), np.zeros((2, 3))) and np.array_equal(o.numpy(), np.ones((2, 3)))
    assert e.shape == (4,) and np.array_equal(a.numpy(), [1, 4, 7])
    assert np.array_equal(L.eye(2, 3).numpy(), np.eye(2, 3, dtype=np.float32))
    assert np.allclose(L.linspace(0, 1, 3).numpy(), [0, 0.5, 1])

'''

NAMES = re.findall(r"^def (check_\w+)\(", CHECKS, re.M)


@pytest.fixture(scope="module", params=["native", "python"])
def results(request, lazy_checks):
    return lazy_checks(CHECKS, request.param)


@pytest.mark.parametrize("name", NAMES)
def test_lazy_views(results, name):
    assert results[name] == "ok", results[name]
