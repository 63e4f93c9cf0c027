"""accel._kernels attacked as a hostile caller would (red team of 4f6817c): odd layouts (transposed, strided,
reversed, unaligned, non-contiguous out), odd argument types (axis, eps, value, subclasses, read-only or
non-array out), failed calls that must leave out as it was, signalling NaNs, and the lazy backend end to end
on both twins (torch 2.13 eager as an optional oracle).  Each test names the defect it pins; tests/test_kernels.py
has the kernels' ordinary behaviour."""
import json
import threading

import numpy as np
import pytest

F32, F64 = np.float32, np.float64


@pytest.fixture(scope="module")
def K(both_twins):
    return tuple(t.mod("_kernels") for t in both_twins)


@pytest.fixture(params=["native", "python"])
def mod(request, both_twins):
    return dict(native=both_twins[0], python=both_twins[1])[request.param].mod("_kernels")


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _ulps(a, b):
    ia = np.asarray(a, F32).view(np.int32).astype(np.int64)
    ib = np.asarray(b, F32).view(np.int32).astype(np.int64)
    return int(np.max(np.abs(ia - ib))) if ia.size else 0


def _outcome(call):
    """("ok", result bytes) or ("err", exception type, text) of ``call()``."""
    try:
        r = call()
    except Exception as exc:
        return ("err", type(exc).__name__, str(exc))
    r = r[0] if isinstance(r, tuple) else r
    return ("ok", type(r).__name__, np.asarray(r).dtype.str, np.asarray(r).shape, np.asarray(r).tobytes())


def _same_outcome(K, call):
    got = [_outcome(lambda: call(m)) for m in K]
    assert got[0] == got[1], got
    return got[0]


# ---------------------------------------------------------------- layer_norm
def test_layer_norm_non_contiguous_out_is_written(mod):
    # defect: the python twin reshaped a non-contiguous out (a copy), wrote the copy, returned a new array and
    # left out as it was
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(F32)
    for view in (lambda a: a[:, ::2], lambda a: a[::-1, ::2], lambda a: a[:, ::2].T.T):
        big = np.zeros((4, 16), F32)
        out = view(big)
        r = mod.layer_norm(x, 1, 1e-5, None, None, out)
        assert r[0] is out
        assert _same(np.ascontiguousarray(out), mod.layer_norm(x, 1, 1e-5)[0])
        assert not big[:, 1::2].any()                       # nothing written outside out


@pytest.mark.parametrize("dt", [F32, F64])
def test_layer_norm_bits_do_not_depend_on_the_layout(K, dt):
    # defect: for a transposed (F-ordered) or column-strided x numpy summed each row one value at a time; the
    # C twin sums pairwise: different bits (lazy: layer_norm of a permuted tensor)
    rng = np.random.default_rng(2)
    for n in (8, 9, 100, 1000):
        c = (rng.standard_normal((5, n)) * 3 + 1).astype(dt)
        w, b = rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
        layouts = [np.asfortranarray(c), np.repeat(c, 2, axis=1)[:, ::2], np.ascontiguousarray(c[::-1])[::-1],
                   np.asfortranarray(np.ascontiguousarray(c[:, ::-1]))[:, ::-1]]
        want = K[1].layer_norm(c, 1, 1e-5, w, b)
        for x in layouts:
            assert np.array_equal(x, c)
            for m in K:
                assert all(_same(g, e) for g, e in zip(m.layer_norm(x, 1, 1e-5, w, b), want)), (m.__name__, n)


def test_layer_norm_out_aliasing_x(K):
    # out is x, or the same reversed / column-reversed view of x's buffer as x: the result of a copy of x
    x0 = np.random.default_rng(3).standard_normal((6, 33)).astype(F32)
    for view in (lambda y: y, lambda y: y[::-1], lambda y: y[:, ::-1], lambda y: y[::2, ::-3]):
        want = K[1].layer_norm(view(x0).copy(), 1, 1e-5)
        for m in K:
            buf = x0.copy()
            r = m.layer_norm(view(buf), 1, 1e-5, None, None, view(buf))
            assert _same(r[0], want[0]) and _same(r[1], want[1]) and _same(r[2], want[2]), m.__name__
            assert _same(view(buf), want[0])


@pytest.mark.parametrize("eps", [None, "1e-5", [1e-5], np.array([1e-5]), 1j, b"1", {"eps": 1}])
def test_layer_norm_eps_must_be_a_real_number(K, eps):
    # defect: the python twin took None (NaN results, silently), strings, lists and 1-element arrays, which the
    # native twin refused; a complex eps gave different texts
    x = np.ones((2, 3), F32)
    r = _same_outcome(K, lambda m: m.layer_norm(x, 1, eps))
    assert r[:2] == ("err", "TypeError") and "layer_norm: eps must be a real number" in r[2]


@pytest.mark.parametrize("eps", [1e-5, 0, 1, True, np.float16(1e-3), np.float32(1e-6), np.array(1e-5),
                                 np.int64(2), 1e-300, 1e300, -1.0, float("nan"), float("inf")])
def test_layer_norm_eps_real_types_same_bits(K, eps):
    x = np.random.default_rng(4).standard_normal((3, 17)).astype(F32)
    for dt in (F32, F64):
        got = [m.layer_norm(x.astype(dt), 1, eps) for m in K]
        assert all(_same(g, e) for g, e in zip(*got)), eps


def test_layer_norm_failed_call_leaves_out_alone(mod):
    # defect: the python twin wrote x - mean into out, then raised on a weight / bias of the wrong size
    x = np.random.default_rng(5).standard_normal((4, 8)).astype(F32)
    for kw in (dict(weight=np.ones(3, F32)), dict(bias=np.ones((2, 2), F32)), dict(weight=["a"] * 8)):
        out = np.full((4, 8), 7.0, F32)
        with pytest.raises(ValueError):
            mod.layer_norm(x, 1, 1e-5, out=out, **kw)
        assert (out == 7).all()
    out = np.full((4, 8), 7.0, F32)
    with pytest.raises(TypeError):
        mod.layer_norm(x, 1, None, out=out)
    assert (out == 7).all()


def test_layer_norm_weight_and_bias_views_of_out(mod):
    # defect: a weight / bias that is a view of out was read after rows of the result had been written over
    # it (both twins, and not alike: the C twin row by row, numpy after all rows)
    x = np.random.default_rng(16).standard_normal((4, 8)).astype(F32)
    w0, b0 = np.arange(1, 9, dtype=F32), np.linspace(-1, 1, 8).astype(F32)
    want = mod.layer_norm(x, 1, 1e-5, w0, b0)[0]
    for rows in ((0, 1), (1, 0), (3, 3)):
        out = np.zeros((4, 8), F32)
        out[rows[0]], out[rows[1]] = w0, b0 if rows[0] != rows[1] else w0
        b = out[rows[1]] if rows[0] != rows[1] else None
        r = mod.layer_norm(x, 1, 1e-5, out[rows[0]], b, out)[0]
        assert r is out
        assert _same(out, want if b is not None else mod.layer_norm(x, 1, 1e-5, w0)[0]), rows


# ---------------------------------------------------------------- softmax
@pytest.mark.parametrize("log", [False, True])
def test_softmax_long_non_last_axis_agrees(K, log):
    # defect: the python twin summed a non-last (or strided) axis one value at a time: 684 ulp from the C
    # twin's pairwise sum on 30000 x 3 over axis 0 (and ~20x further from the exact result)
    x = (np.random.default_rng(6).standard_normal((30000, 3)) * 5).astype(F32)
    nat, py = (m.softmax(x, 0, None, log) for m in K)
    assert _ulps(nat, py) <= 8
    assert _ulps(K[0].softmax(np.asfortranarray(x.T), -1, None, log), K[1].softmax(np.asfortranarray(x.T), -1,
                                                                                     None, log)) <= 8
    xd = x.astype(F64)
    s = xd - xd.max(0)
    ref = s - np.log(np.exp(s).sum(0)) if log else np.exp(s) / np.exp(s).sum(0)
    err = np.abs(py - ref) / np.spacing(np.abs(ref).astype(F32))
    assert np.max(err) < 100


@pytest.mark.parametrize("axis, exc", [(None, TypeError), ((0, 1), TypeError), (1.0, TypeError), ("1", TypeError),
                                       (2 ** 70, np.exceptions.AxisError), (-3, np.exceptions.AxisError),
                                       (np.float64(0), TypeError)])
def test_softmax_axis_must_be_an_integer(K, axis, exc):
    # defect: axis None / a tuple softmaxed the whole array on the python twin and raised "'<' not supported" on
    # the native; 1.0 ran on the native twin only; 2**70 raised OverflowError on one, AxisError on the other
    x = np.ones((3, 4), F32)
    r = _same_outcome(K, lambda m: m.softmax(x, axis))
    assert r[:2] == ("err", exc.__name__)


@pytest.mark.parametrize("axis", [np.int64(1), np.int32(-1), True, 1])
def test_softmax_integer_like_axes(K, axis):
    x = np.random.default_rng(7).standard_normal((3, 4)).astype(F32)
    got = [m.softmax(x, axis) for m in K]
    assert _ulps(*got) <= 2 and _ulps(got[0], K[0].softmax(x, 1)) == 0


def test_softmax_out_aliasing_x(K):
    x0 = np.random.default_rng(8).standard_normal((5, 7)).astype(F32)
    for log in (False, True):
        for ax in (0, 1, -1):
            want = K[0].softmax(x0, ax, None, log)
            for m in K:
                for xin_of, out_of in ((lambda y: y, lambda y: y), (lambda y: y[::-1], lambda y: y),
                                       (lambda y: y.T, lambda y: y.T), (lambda y: y[:, ::-1], lambda y: y[:, ::-1])):
                    buf = x0.copy()
                    xin = xin_of(buf)
                    ref = K[0].softmax(xin.copy(), ax, None, log)
                    out = out_of(buf)
                    assert m.softmax(xin, ax, out, log) is out
                    assert _ulps(out, ref) <= 4, (m.__name__, ax, log)
            assert want.shape == x0.shape


@pytest.mark.parametrize("fn", ["softmax", "layer_norm"])
def test_read_only_out_same_error(K, fn):
    # defect: numpy's "output array is read-only" on the python twin, "assignment destination is read-only" on
    # the native
    x = np.ones((2, 3), F32)
    ro = np.zeros((2, 3), F32)
    ro.flags.writeable = False
    call = ((lambda m: m.softmax(x, -1, ro)) if fn == "softmax" else
            (lambda m: m.layer_norm(x, 1, 1e-5, None, None, ro)))
    assert _same_outcome(K, call) == ("err", "ValueError", f"{fn}: out is read-only")


@pytest.mark.parametrize("make", [np.matrix, lambda a: np.ma.masked_array(a, mask=a > 0.5),
                                  lambda a: a.view(type("Sub", (np.ndarray,), {}))])
@pytest.mark.parametrize("fn", ["softmax", "layer_norm"])
def test_ndarray_subclasses_refused(K, make, fn):
    # defect: np.matrix ran on the native twin and raised "unexpected keyword argument 'keepdims'" on the python
    # one; a masked array's mask was honoured by the python twin (other values, a float64 mean) and ignored by
    # the native one
    x = make(np.random.default_rng(9).standard_normal((3, 4)).astype(F32))
    call = (lambda m: m.softmax(x, -1)) if fn == "softmax" else (lambda m: m.layer_norm(x, 1, 1e-5))
    r = _same_outcome(K, call)
    assert r[:2] == ("err", "TypeError") and f"got {type(x).__name__}" in r[2]


def test_empty_x_still_checks_axis_and_eps(K):
    # defect: an empty x returned an empty result whatever the axis (5 of a 2-dim array, None) or eps (None)
    e = np.zeros((0, 3), F32)
    for call, exc in [(lambda m: m.softmax(e, 5), np.exceptions.AxisError), (lambda m: m.softmax(e, None), TypeError),
                      (lambda m: m.softmax(e, -3, None, True), np.exceptions.AxisError),
                      (lambda m: m.layer_norm(e, 1, None), TypeError), (lambda m: m.layer_norm(e, 2, "x"), TypeError)]:
        assert _same_outcome(K, call)[:2] == ("err", exc.__name__)


def test_softmax_layer_norm_huge_ndim_size_one_and_empty(K):
    x = np.random.default_rng(10).standard_normal((1,) * 62 + (2, 3)).astype(F32)
    for ax in (0, 40, 62, -1):
        assert _ulps(*(m.softmax(x, ax) for m in K)) <= 2
    for k in (1, 2, 64):
        got = [m.layer_norm(x, k, 1e-5) for m in K]
        assert all(_same(g, e) for g, e in zip(*got))
    e = np.zeros((1,) * 30 + (0, 5), F32)
    for m in K:
        assert m.softmax(e, 3).shape == e.shape
        r = m.layer_norm(e, 2, 1e-5)
        assert r[0].shape == e.shape and r[1].shape == (1,) * 30 + (1, 1)


def test_unaligned_arrays(K):
    n = 4099
    rng = np.random.default_rng(11)
    for dt in (F32, F64):
        isz = np.dtype(dt).itemsize
        x = np.zeros(n * isz + 1, np.uint8)[1:].view(dt)
        x[...] = rng.standard_normal(n)
        o = [np.zeros(n * isz + 1, np.uint8)[1:].view(dt) for _ in K]
        assert not x.flags.aligned
        for name in ("add", "subtract", "multiply", "divide"):
            for m, oo in zip(K, o):
                getattr(m, name)(x, x[::-1].copy(), oo)
            assert _same(*o)
        got = [m.layer_norm(x.reshape(1, -1), 1, 1e-5) for m in K]
        assert all(_same(g, e) for g, e in zip(*got))
        mask = rng.random(n) < 0.5
        assert _same(*(m.masked_fill(x, mask, 1.5, oo) for m, oo in zip(K, o)))
        assert _ulps(*(m.softmax(x[None], -1) for m in K)) <= 4 if dt == F32 else True


# ---------------------------------------------------------------- masked_fill
@pytest.mark.parametrize("value", [np.array([1.0, 2.0, 3.0]), np.array([1.0]), np.array([[4.0], [5.0]]),
                                   [1, 2, 3]])
def test_masked_fill_array_value_broadcasts_on_both(K, value):
    # defect: the native twin raised "only 0-dimensional arrays can be converted" where the python twin
    # broadcast the value as numpy's copyto does
    x = np.arange(6, dtype=F32).reshape(2, 3)
    mask = np.array([True, False, True])
    r = _same_outcome(K, lambda m: m.masked_fill(x, mask, value, np.zeros((2, 3), F32)))
    assert r[0] == "ok"
    out = K[0].masked_fill(x, mask, value, np.zeros((2, 3), F32))
    assert np.array_equal(out, np.where(mask, np.broadcast_to(np.asarray(value, F32), (2, 3)), x))


@pytest.mark.parametrize("dt, bits", [(F32, 0x7F800001), (F32, 0xFF800123), (F64, 0x7FF0000000000001)])
def test_masked_fill_signalling_nan_value_bits(K, dt, bits):
    # defect: the native twin passed a float32 value through a Python float (double): a signalling NaN came
    # back quiet (0x7fc00001, where numpy's copyto keeps 0x7f800001)
    v = np.array(bits, np.uint32 if dt == F32 else np.uint64).view(dt)
    x = np.zeros((3, 4), dt)
    mask = np.array([True, False, True, True])
    outs = [m.masked_fill(x, mask, v, np.zeros((3, 4), dt)) for m in K]
    assert _same(*outs)
    assert outs[0].view(v.dtype.str.replace("f", "u"))[0, 0] == bits


def test_masked_fill_bad_out_and_failed_calls(K):
    # defects: an out that is not an ndarray gave AttributeError on the native twin (TypeError on the python);
    # a bad value or mask raised after x had been copied into out
    x = np.arange(6, dtype=F32).reshape(2, 3)
    mask = np.array([True, False, True])
    r = _same_outcome(K, lambda m: m.masked_fill(x, mask, 1.0, [[0.0] * 3] * 2))
    assert r[:2] == ("err", "TypeError") and "masked_fill: out must be an ndarray, got list" in r[2]
    for value, m_, exc in [("abc", mask, ValueError), (1.0, np.array([1, 0, 1]), TypeError),
                           (1.0, np.ones(4, bool), ValueError), (np.ones(4), mask, ValueError),
                           (object(), mask, TypeError)]:
        outs = []
        for m in K:
            out = np.full((2, 3), 7.0, F32)
            with pytest.raises(exc) as info:
                m.masked_fill(x, m_, value, out)
            assert (out == 7).all(), (m.__name__, value)
            outs.append(str(info.value))
        assert outs[0] == outs[1]


def test_masked_fill_odd_values_and_shapes(K):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((0, 3)).astype(F32)
    assert _same_outcome(K, lambda m: m.masked_fill(x, np.ones(3, bool), 1.0, np.zeros((0, 3), F32)))[0] == "ok"
    x = rng.standard_normal((4, 5)).astype(F32)
    mask = rng.random((4, 5)) < 0.5
    for value in (np.nan, -0.0, np.inf, 1e39, 1e-46, np.float64(1.1), np.array(2.5, F64), 2 ** 62, True,
                  np.float16(3.3), 10 ** 30):
        for dt in (F32, F64):
            r = _same_outcome(K, lambda m: m.masked_fill(x.astype(dt), mask, value, np.zeros((4, 5), dt)))
            assert r[0] == "ok", value
    # defect: a mask sharing out's memory was read after x had been copied over it (both twins): the mask as
    # given, here with x a reversed view of out too (out's floats 1.0 or the next one up: the low byte of
    # each, a bool, is 0 or 1, and the reversed rows differ)
    bits = 0x3F800000 | (rng.random((4, 5)) < 0.5).astype(np.uint32)
    got = []
    for m in K:
        out = bits.copy().view(F32)
        mm = out.view(np.uint8)[:, ::4].view(bool)
        want = np.where(mm, F32(9), out[::-1])
        assert not np.array_equal(mm, mm[::-1])
        m.masked_fill(out[::-1], mm, 9.0, out)
        assert _same(out, want), m.__name__
        got.append(out)
    assert _same(*got)


# ---------------------------------------------------------------- ufuncs
def test_ufuncs_same_buffer_other_strides(K):
    rng = np.random.default_rng(13)
    base = rng.standard_normal(64).astype(F32)
    for name, uf in (("add", np.add), ("multiply", np.multiply), ("subtract", np.subtract),
                     ("divide", np.true_divide)):
        for a_of, b_of, o_of in [
                (lambda v: v.reshape(8, 8), lambda v: v.reshape(8, 8).T, lambda v: v.reshape(8, 8)),
                (lambda v: v[::-1], lambda v: v, lambda v: v),
                (lambda v: v[:32], lambda v: v[32:], lambda v: v[16:48]),
                (lambda v: v.reshape(8, 8)[:, :1], lambda v: v[:8], lambda v: v.reshape(8, 8)),
                (lambda v: v[::2], lambda v: v[1::2], lambda v: v[::2]),
                (lambda v: v.reshape(8, 8), lambda v: v.reshape(8, 8)[::-1], lambda v: v.reshape(8, 8)[::-1])]:
            want = base.copy()
            with np.errstate(all="ignore"):
                uf(a_of(want), b_of(want), out=o_of(want))
                for m in K:
                    got = base.copy()
                    getattr(m, name)(a_of(got), b_of(got), o_of(got))
                    assert _same(got, want), (m.__name__, name)


def test_ufuncs_out_overlapping_itself(K):
    # defect: out an input exactly but with a zero stride (several elements one memory location): the C loop
    # computed in place, each row reading what the row before wrote ([32, 68, ...] for numpy's [9, 11, ...])
    from numpy.lib.stride_tricks import as_strided
    b = np.arange(12, dtype=F32).reshape(3, 4)
    for shape, strides in (((3, 4), (0, 4)), ((3, 4), (4, 0)), ((4, 3), (4, 4)), ((3, 4), (-4, 4))):
        for name, uf in (("add", np.add), ("multiply", np.multiply), ("subtract", np.subtract),
                         ("divide", np.true_divide)):
            def view(buf):
                return as_strided(buf[8:], shape, strides, writeable=True)
            for m in K:
                for a_of in (view, lambda buf: b.reshape(shape)):
                    got = np.arange(1, 33, dtype=F32)
                    ref = np.arange(1, 33, dtype=F32)
                    uf(a_of(ref), b.reshape(shape), out=view(ref))
                    getattr(m, name)(a_of(got), b.reshape(shape), view(got))
                    assert _same(got, ref), (m.__name__, name, strides)


def test_ufuncs_floating_point_warnings_alike(K):
    # defect: numpy's "divide by zero" / "invalid value" RuntimeWarnings (or FloatingPointError under
    # np.errstate(all="raise")) on the python twin, nothing on the native twin's C loops
    import warnings
    x = np.array([1.0, 0.0, np.inf, -1.0], F32)
    y = np.array([0.0, 0.0, np.inf, 0.0], F32)
    for m in K:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="raise"):
                for name in ("add", "subtract", "multiply", "divide"):
                    getattr(m, name)(x, y, np.empty(4, F32))
                    getattr(m, name)(x.astype(F64), y, np.empty(4, F64))          # numpy's loop: mixed types
                    getattr(m, name)(np.arange(3), np.zeros(3, np.int64), np.empty(3, F64))


def test_ufuncs_odd_operands_are_numpys(K):
    x = np.arange(1, 7, dtype=F32).reshape(2, 3)
    cases = [(x.astype(">f4"), x, np.empty((2, 3), F32)), (x, x, np.empty((2, 3), ">f4")),
             (np.matrix(x), x, np.empty((2, 3), F32)), (x, np.ma.masked_array(x, x > 3), np.empty((2, 3), F32)),
             (x.tolist(), 2, np.empty((2, 3), F32)), (F32(2), x, np.empty((2, 3), F32)),
             (x.astype(np.float16), x.astype(np.float16), np.empty((2, 3), np.float16)),
             (x.astype(np.complex64), x, np.empty((2, 3), np.complex64)), (x > 2, x > 3, np.empty((2, 3), bool)),
             (x, x, np.empty((2, 3), np.int32)), (x, x, [[0.0] * 3] * 2), (x, x, None),
             (np.ones((1,) * 63 + (3,), F32), x[0], np.empty((1,) * 63 + (3,), F32)),
             (np.ones((1,) * 64, F32), np.ones((1,) * 64, F32), np.empty((1,) * 64, F32))]
    for a, b, o in cases:
        for name, uf in (("add", np.add), ("multiply", np.multiply), ("subtract", np.subtract),
                         ("divide", np.true_divide)):
            with np.errstate(all="ignore"):
                try:
                    want = ("ok", np.asarray(uf(a, b, out=o.copy() if isinstance(o, np.ndarray) else o)).tobytes())
                except Exception as exc:
                    want = ("err", type(exc).__name__, str(exc))
                for m in K:
                    oo = o.copy() if isinstance(o, np.ndarray) else o
                    try:
                        got = ("ok", np.asarray(getattr(m, name)(a, b, oo)).tobytes())
                    except Exception as exc:
                        got = ("err", type(exc).__name__, str(exc))
                    assert got == want, (m.__name__, name, type(a), getattr(o, "dtype", o))


def test_ufuncs_nan_payloads(K):
    a = np.array([0x7FC00001, 0xFFC00003, 0x7F800005, 0] * 16, np.uint32).view(F32)
    b = np.array([0x7FC00002, 0, 0xFFC00004, 0x7FA00000] * 16, np.uint32).view(F32)
    for name, uf in (("add", np.add), ("multiply", np.multiply), ("subtract", np.subtract),
                     ("divide", np.true_divide)):
        for x, y in ((a, b), (b, a), (a, b[:1]), (a[:1], b), (a[::2], b[1::2])):
            with np.errstate(all="ignore"):
                want = uf(x, y)
                for m in K:
                    assert _same(getattr(m, name)(x, y, np.empty_like(want)), want), (m.__name__, name)


def test_threads_racing_one_out(K):
    """Threads sharing the inputs, each writing its own out, get the single-thread bits; threads racing on one
    out (a data race in the caller, as for numpy's ufuncs) neither crash nor raise."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((64, 300)).astype(F32)
    mask = rng.random(300) < 0.5
    for m in K:
        want = {"sm": m.softmax(x, -1), "ln": m.layer_norm(x, 1, 1e-5)[0], "mf": m.masked_fill(x, mask, 0.0,
                                                                                                 np.empty_like(x)),
                "mul": x * x}
        shared = {k: np.empty_like(x) for k in want}
        errors = []

        def work(outs):
            try:
                for _ in range(20):
                    m.softmax(x, -1, outs["sm"])
                    m.layer_norm(x, 1, 1e-5, None, None, outs["ln"])
                    m.masked_fill(x, mask, 0.0, outs["mf"])
                    m.multiply(x, x, outs["mul"])
            except Exception as exc:   # pragma: no cover - reported below
                errors.append(exc)

        own = [{k: np.empty_like(x) for k in want} for _ in range(4)]
        threads = [threading.Thread(target=work, args=(o,)) for o in own]
        threads += [threading.Thread(target=work, args=(shared,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for outs in own:
            for k in outs:
                assert _same(outs[k], want[k]), (m.__name__, k)


def test_no_leak_over_many_calls(K):
    import tracemalloc
    x = np.random.default_rng(15).standard_normal((8, 64)).astype(F32)
    o = np.empty_like(x)
    ro = x.copy()
    ro.flags.writeable = False
    mask = np.ones(64, bool)

    def calls(m):
        m.softmax(x, -1)
        m.softmax(x, 0, o, True)
        m.layer_norm(x, 1, 1e-5, x[0], x[0], o)
        m.masked_fill(x, mask, 1.0, o)
        m.add(x, x, o)
        m.divide(x, x[0], o)
        for bad in (lambda: m.add(x, x, ro), lambda: m.layer_norm(x, 1, None), lambda: m.softmax(x, 5),
                    lambda: m.masked_fill(x, mask, "a", o), lambda: m.softmax(x, -1, ro)):
            try:
                bad()
            except Exception:
                pass

    for m in K:
        for _ in range(200):
            calls(m)
        tracemalloc.start()
        try:
            s0 = tracemalloc.take_snapshot()
            for _ in range(2000):
                calls(m)
            s1 = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        grown = sum(d.size_diff for d in s1.compare_to(s0, "filename") if d.size_diff > 0)
        assert grown < 64 * 1024, (m.__name__, grown)


# ---------------------------------------------------------------- the lazy backend end to end
LAZY = r'''
import numpy as np
import accel, accel.lazy as L
import accel.lazy.nn.functional as F

def _run(make):
    t = make()
    L.mark_step()
    return t.numpy()

def check_values():
    rng = np.random.default_rng(0)
    A = (rng.standard_normal((6, 40)) * 3).astype(np.float32)
    B = rng.standard_normal((40, 6)).astype(np.float32)
    C = (rng.standard_normal((3000, 4)) * 4).astype(np.float32)
    D = rng.standard_normal((2, 3, 5, 7))
    M = rng.random((6, 40)) < 0.3
    W, Bb = (rng.standard_normal(40) + 1).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    got = {
        "ln": _run(lambda: F.layer_norm(L.tensor(A), (40,))),
        "ln_permuted": _run(lambda: F.layer_norm(L.tensor(B).permute(1, 0), (40,))),
        "ln_permuted_wb": _run(lambda: F.layer_norm(L.tensor(B).t(), (40,), L.tensor(W), L.tensor(Bb))),
        "ln_f64_4d": _run(lambda: F.layer_norm(L.tensor(D).permute(0, 3, 1, 2), (3, 5))),
        "sm_t": _run(lambda: L.tensor(B).t().softmax(1)),
        "sm_long_dim0": _run(lambda: L.tensor(C).softmax(0)),
        "lsm_long_dim0": _run(lambda: L.tensor(C).log_softmax(0)),
        "sm_f64_dim1": _run(lambda: L.tensor(D).softmax(1)),
        "mf": _run(lambda: L.tensor(A).masked_fill(L.tensor(M), -1e9)),
        "mf_t": _run(lambda: L.tensor(B).t().masked_fill(L.tensor(M), float("-inf"))),
        "mf_bcast": _run(lambda: L.tensor(A).masked_fill(L.tensor(M[0]), 2.5)),
        "arith": _run(lambda: (L.tensor(A) * L.tensor(B).t() + L.tensor(A)) / L.tensor(B).t() - L.tensor(A[0])),
        "arith_f64": _run(lambda: L.tensor(D) * L.tensor(D).permute(0, 1, 2, 3) - L.tensor(D[0]) / 3),
        "attn": _run(lambda: (L.tensor(A) @ L.tensor(B)).masked_fill(L.tensor(np.eye(6, dtype=bool)),
                                                                     float("-inf")).softmax(-1)),
    }
    np.savez(OUT + "/" + accel.backend + ".npz", **got)
'''

ULP_OK = {"sm_t": 8, "sm_long_dim0": 8, "lsm_long_dim0": 8, "sm_f64_dim1": 8, "attn": 8}


def test_lazy_backend_twins_agree_end_to_end(lazy_checks, tmp_path):
    # defect (before the fixes): layer_norm of a permuted lazy tensor gave other bits on the two backends (180
    # of 240 values), softmax over dim 0 of a 3000 x 4 tensor differed by ~20 ulp
    code = f"OUT = {str(tmp_path)!r}\n" + LAZY
    for backend in ("native", "python"):
        assert lazy_checks(code, backend) == {"check_values": "ok"}
    nat, py = np.load(tmp_path / "native.npz"), np.load(tmp_path / "python.npz")
    assert sorted(nat.files) == sorted(py.files)
    for k in nat.files:
        a, b = nat[k], py[k]
        assert a.dtype == b.dtype and a.shape == b.shape, k
        if k in ULP_OK:
            f = a.dtype == F64
            ia = a.view(np.int64 if f else np.int32).astype(np.int64)
            ib = b.view(np.int64 if f else np.int32).astype(np.int64)
            assert np.array_equal(np.isnan(a), np.isnan(b)) and int(np.max(np.abs(ia - ib))) <= ULP_OK[k], k
        else:
            assert _same(a, b), k
    # torch 2.13 eager, where importable: an oracle only (close, not bit-equal)
    try:
        import torch
    except Exception:
        return
    rng = np.random.default_rng(0)
    A = (rng.standard_normal((6, 40)) * 3).astype(F32)
    B = rng.standard_normal((40, 6)).astype(F32)
    C = (rng.standard_normal((3000, 4)) * 4).astype(F32)
    T = torch.from_numpy
    ref = {"ln_permuted": torch.nn.functional.layer_norm(T(B).t(), (40,)),
           "sm_long_dim0": T(C).softmax(0), "lsm_long_dim0": T(C).log_softmax(0),
           "arith": (T(A) * T(B).t() + T(A)) / T(B).t() - T(A[0])}
    for k, r in ref.items():
        assert np.allclose(nat[k], r.numpy(), rtol=2e-5, atol=2e-5), k
