"""accel._kernels, the numpy backend's heavy kernels, on both twins: layer_norm, masked_fill and the four
arithmetic ufuncs give the python twin's (numpy's) bits exactly; softmax / log_softmax agree within the two
exponentials' rounding and are within a few ulp of the exact result; out= and error behaviour are the
same on both twins."""
import threading

import numpy as np
import pytest

F32, F64 = np.float32, np.float64
UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide}


@pytest.fixture(scope="module")
def K(both_twins):
    return tuple(t.mod("_kernels") for t in both_twins)


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- layer_norm: the same bits
@pytest.mark.parametrize("dt", [F32, F64])
def test_layer_norm_twins_bit_equal(K, dt):
    nat, py = K
    rng = np.random.default_rng(1)
    sizes = list(range(1, 140)) + [255, 256, 257, 511, 1000, 1024, 4097]
    for n in sizes:
        x = (rng.standard_normal((3, n)) * rng.choice([1e-3, 1.0, 30.0]) + rng.choice([0.0, 5.0])).astype(dt)
        w, b = rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
        for args in [(None, None), (w, None), (None, b), (w, b)]:
            got, want = nat.layer_norm(x, 1, 1e-5, *args), py.layer_norm(x, 1, 1e-5, *args)
            assert all(_same(g, e) for g, e in zip(got, want)), (dt, n)


@pytest.mark.parametrize("shape, k", [((2, 3, 4, 5), 2), ((6, 7), 2), ((4, 1, 9), 1), ((5,), 1), ((2, 0, 3), 1),
                                      ((2, 3, 0), 1), ((2, 3, 0), 2)])
def test_layer_norm_shapes_and_statistics(K, shape, k):
    nat, py = K
    x = np.random.default_rng(2).standard_normal(shape).astype(F32)
    got, want = nat.layer_norm(x, k, 1e-5), py.layer_norm(x, k, 1e-5)
    for g, e in zip(got, want):
        assert g.shape == e.shape and np.array_equal(g, e, equal_nan=True) and g.dtype == e.dtype
    assert got[1].shape == shape[:len(shape) - k] + (1,) * k
    if x.size:
        xd = x.astype(F64).reshape(shape[:len(shape) - k] + (-1,))
        ref = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
        assert np.allclose(got[0].reshape(ref.shape), ref, rtol=1e-5, atol=1e-5)


def test_layer_norm_non_contiguous_and_out(K):
    nat, py = K
    base = np.random.default_rng(3).standard_normal((6, 40)).astype(F32)
    x = base[::2, ::2]                                   # strided
    outs = [np.full(x.shape, 7.0, F32) for _ in K]
    res = [m.layer_norm(x, 1, 1e-5, None, None, o) for m, o in zip(K, outs)]
    assert _same(res[0][0], res[1][0]) and _same(outs[0], outs[1])
    assert res[0][0] is outs[0]
    assert _same(base, np.random.default_rng(3).standard_normal((6, 40)).astype(F32))      # input untouched


# ---------------------------------------------------------------- softmax: within the exponentials' rounding
def _softmax_ref(x, axis, log):
    xd = x.astype(F64)
    s = xd - xd.max(axis, keepdims=True)
    lse = np.log(np.exp(s).sum(axis, keepdims=True))
    return (s - lse) if log else np.exp(s - lse)


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_close_to_exact_and_to_the_other_twin(K, dt, log):
    nat, py = K
    rng = np.random.default_rng(4)
    eps = np.finfo(dt).eps
    for n in [1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 127, 128, 129, 1000]:
        for axis in (-1, 0):
            x = (rng.standard_normal((20, n)) * rng.choice([0.1, 5.0, 40.0])).astype(dt)
            got, want = nat.softmax(x, axis, None, log), py.softmax(x, axis, None, log)
            ref = _softmax_ref(x, axis, log)
            assert got.dtype == want.dtype == dt and got.shape == want.shape == x.shape
            # x - max is rounded to x's type: exp carries that error times |x - max|
            s = np.abs(x.astype(F64) - x.max(axis, keepdims=True))
            if log:        # log_softmax: an absolute error in the size of its terms (x - max, log sum)
                tol = 8 * eps * (s + np.abs(ref) + 1)
            else:
                tol = eps * (8 + s) * np.abs(ref) + np.finfo(dt).tiny
            assert np.all(np.abs(got - ref) <= tol), (n, axis)
            assert np.all(np.abs(got.astype(F64) - want) <= 2 * tol), (n, axis)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_special_values(K, log):
    nat, py = K
    inf, nan = np.inf, np.nan
    rows = [[0.0, -inf, 1.0, -inf], [-inf, -inf, -inf, -inf], [nan, 0.0, 1.0, 2.0], [inf, 0.0, 1.0, 2.0],
            [-1e30, 1e30, 0.0, -0.0], [1e-45, -1e-45, 0.0, -0.0], [88.0, 89.0, -104.0, -87.0]]
    for dt in (F32, F64):
        x = np.array(rows, dt)
        got, want = nat.softmax(x, -1, None, log), py.softmax(x, -1, None, log)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.allclose(got, want, rtol=4 * np.finfo(dt).eps, atol=0, equal_nan=True)
        if not log:
            assert np.array_equal(got[0] == 0, [False, True, False, True])


def test_softmax_0dim_empty_axes_and_out(K):
    nat, py = K
    for m in K:
        r = m.softmax(np.array(3.0, F32), 0)
        assert r.shape == () and r == 1.0
        assert m.softmax(np.array(3.0, F32), -1, None, True) == 0.0
        assert m.softmax(np.zeros((0, 4), F32), -1).shape == (0, 4)
    x = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(F32)
    for axis in (0, 1, 2, -1, -2, -3):
        outs = [np.empty_like(x) for _ in K]
        res = [m.softmax(x, axis, o) for m, o in zip(K, outs)]
        assert res[0] is outs[0] and res[1] is outs[1]
        assert np.allclose(outs[0], outs[1], rtol=1e-6, atol=0)
        assert np.allclose(outs[0].sum(axis), 1, rtol=1e-6)
    t = x.transpose(2, 0, 1)                          # non-contiguous input
    assert np.allclose(nat.softmax(t, -1), py.softmax(t, -1), rtol=1e-6, atol=0)


@pytest.mark.parametrize("call, exc, text", [
    (lambda m: m.softmax(np.zeros(3, np.int64), 0), TypeError, "softmax: expected a float32 or float64 ndarray"),
    (lambda m: m.softmax([1.0, 2.0], 0), TypeError, "got list"),
    (lambda m: m.softmax(np.zeros(3, F32), 0, np.zeros(3, F64)), ValueError, "out must be a float32 ndarray"),
    (lambda m: m.softmax(np.zeros(3, F32), 1), np.exceptions.AxisError, "axis 1 is out of bounds"),
    (lambda m: m.layer_norm(np.zeros((2, 3), np.float16), 1, 1e-5), TypeError, "layer_norm: expected a float32"),
    (lambda m: m.layer_norm(np.zeros((2, 3), F32), 3, 1e-5), ValueError, "k must be in [1, 2], got 3"),
    (lambda m: m.layer_norm(np.zeros((2, 3), F32), 1, 1e-5, None, None, np.zeros((3, 2), F32)), ValueError,
     "out must be a float32 ndarray of shape (2, 3)"),
])
def test_bad_input_same_errors(K, call, exc, text):
    msgs = []
    for m in K:
        with pytest.raises(exc) as info:
            call(m)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and text in msgs[0]


# ---------------------------------------------------------------- masked_fill: the same bits
@pytest.mark.parametrize("xshape, mshape", [((8, 4, 16, 16), (16, 16)), ((5, 7), (5, 7)), ((5, 7), (7,)),
                                            ((5, 7), (5, 1)), ((3, 5, 7), (1, 5, 7)), ((4,), ()), ((2, 3), (1,))])
@pytest.mark.parametrize("dt, odt", [(F32, F32), (F64, F64), (F32, F64), (np.int32, F32), (F64, F32)])
def test_masked_fill_twins_bit_equal(K, xshape, mshape, dt, odt):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(xshape) * 10).astype(dt)
    mask = rng.random(mshape) < 0.5
    res = []
    for m in K:
        out = np.full(xshape, 123, odt)
        assert m.masked_fill(x, mask, -np.inf if odt != np.int32 else 5, out) is out
        res.append(out)
    assert _same(*res)
    want = np.where(mask, odt(-np.inf), x.astype(odt))
    assert np.array_equal(res[0], want)


def test_masked_fill_in_place_and_non_contiguous(K):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((6, 8)).astype(F32)
    mask = rng.random((6, 8)) < 0.3
    res = []
    for m in K:
        x = base.copy()
        m.masked_fill(x, mask, 0.5, x)                 # out is x itself
        y = np.zeros((3, 8), F32)
        m.masked_fill(base[::2], mask[::2], 2.0, y)    # strided input and mask
        res.append((x, y))
    assert _same(res[0][0], res[1][0]) and _same(res[0][1], res[1][1])


# ---------------------------------------------------------------- add / subtract / multiply / divide
def _operand(rng, oshape, dt):
    nd = len(oshape)
    k = int(rng.integers(0, nd + 1))
    sh = [1 if rng.random() < 0.3 else s for s in oshape[nd - k:]]
    big = [s * (2 if rng.random() < 0.4 else 1) for s in sh]
    base = (rng.standard_normal(big) * 3).astype(dt)
    x = np.asarray(base[tuple(slice(None, None, 2) if b != s else slice(None) for b, s in zip(big, sh))])
    if x.ndim >= 2 and rng.random() < 0.3:           # a Fortran-ordered one
        x = np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)
    if x.ndim >= 1 and rng.random() < 0.2:           # a reversed one (negative stride)
        x = x[::-1]
    return x


@pytest.mark.parametrize("dt", [F32, F64])
def test_ufuncs_bit_equal_to_numpy_strided_and_broadcast(K, dt):
    rng = np.random.default_rng(8)
    for _ in range(300):
        oshape = tuple(int(v) for v in rng.integers(1, 5, int(rng.integers(0, 6))))
        a, b = _operand(rng, oshape, dt), _operand(rng, oshape, dt)
        if rng.random() < 0.1:
            b[...] = 0                                # division by zero, 0 / 0
        for name, uf in UFUNCS.items():
            want = np.full(oshape, 9, dt)
            with np.errstate(all="ignore"):
                uf(a, b, out=want)
                for m in K:
                    out = np.full(oshape, 9, dt)
                    assert getattr(m, name)(a, b, out) is out
                    assert _same(out, want), (name, oshape, a.shape, a.strides, b.shape, b.strides)


def test_ufuncs_aliasing_and_fallbacks(K):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 6)).astype(F32)
    for m in K:
        # out is exactly an input: in place
        a = x.copy()
        m.multiply(a, x, a)
        assert _same(a, x * x)
        # out overlaps an input shifted: numpy's buffered semantics
        a, w = x.copy(), x.copy()
        m.add(a[:, :-1], a[:, 1:], a[:, 1:])
        np.add(w[:, :-1], w[:, 1:], out=w[:, 1:])
        assert _same(a, w)
        # mixed dtypes, integers, numbers, 0-dim, empty: numpy's results
        o = np.empty((4, 6), F64)
        assert _same(m.subtract(x, x.astype(F64), o), x - x.astype(F64))
        oi = np.empty(3, np.int64)
        assert _same(m.multiply(np.arange(3), np.arange(3), oi), np.arange(3) ** 2)
        o = np.empty((4, 6), F32)
        assert _same(m.divide(x, 2.0, o), x / F32(2))
        o0 = np.empty((), F32)
        assert _same(m.add(np.array(1.5, F32), np.array(2.0, F32), o0), np.array(3.5, F32))
        assert m.add(np.zeros((0, 3), F32), np.zeros(3, F32), np.empty((0, 3), F32)).shape == (0, 3)


def test_ufunc_errors_are_numpys(K):
    x = np.ones((2, 3), F32)
    ro = np.zeros((2, 3), F32)
    ro.flags.writeable = False
    for bad in [lambda m: m.add(x, np.ones((3, 2), F32), np.empty((2, 3), F32)),
                lambda m: m.multiply(x, x, ro),
                lambda m: m.subtract(x, x, np.empty((2, 2), F32))]:
        msgs = []
        for m in K:
            with pytest.raises(ValueError) as info:
                bad(m)
            msgs.append(str(info.value))
        with pytest.raises(ValueError) as info:
            bad(type("numpy", (), {"add": lambda a, b, o: np.add(a, b, out=o),
                                   "multiply": lambda a, b, o: np.multiply(a, b, out=o),
                                   "subtract": lambda a, b, o: np.subtract(a, b, out=o)}))
        assert msgs == [str(info.value)] * 2


def test_kernels_release_the_gil_and_race_safely(K):
    nat = K[0]
    rng = np.random.default_rng(10)
    x = rng.standard_normal((64, 256)).astype(F32)
    want_sm = nat.softmax(x, -1)
    want_ln = nat.layer_norm(x, 1, 1e-5)[0]
    want_mul = x * x
    errors = []

    def work():
        try:
            for _ in range(50):
                assert _same(nat.softmax(x, -1), want_sm)
                assert _same(nat.layer_norm(x, 1, 1e-5)[0], want_ln)
                assert _same(nat.multiply(x, x, np.empty_like(x)), want_mul)
        except Exception as exc:          # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---------------------------------------------------------------- masked_softmax: the three kernels in one
@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("scale", [None, 0.125, 3, -1e-3])
@pytest.mark.parametrize("mshape", [None, (16, 16), (4, 16, 16), (2, 4, 16, 16), (16,), (1, 16), (4, 1, 16)])
def test_masked_softmax_is_the_three_kernels_in_a_row(K, dt, scale, mshape):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((2, 4, 16, 16)) * 4).astype(dt)
    mask = None if mshape is None else rng.random(mshape) < 0.4
    if mask is not None and mask.ndim >= 1:
        mask[..., 0] = False                  # (no row masked throughout: those rows are NaN, as torch's)
    for m in K:
        t = np.empty_like(x)
        if scale is None:
            t[...] = x
        else:
            np.multiply(x, scale, out=t)
        if mask is not None:
            m.masked_fill(t, mask, -np.inf, t)
        want = m.softmax(t, -1)
        out = np.full_like(x, 5)
        got = m.masked_softmax(x, scale, mask, -np.inf, out)
        assert got is out and _same(got, want), (m.__name__, scale, mshape)
        assert _same(m.masked_softmax(x, scale, mask, -np.inf), want)
    nat = K[0].masked_softmax(x, scale, mask, -np.inf)
    py = K[1].masked_softmax(x, scale, mask, -np.inf)
    assert np.allclose(nat, py, rtol=8 * np.finfo(dt).eps, atol=np.finfo(dt).tiny)


def test_masked_softmax_edges(K):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 5)).astype(F32)
    full = np.ones((3, 5), bool)
    for m in K:
        assert np.isnan(m.masked_softmax(x, None, full, -np.inf)).all()       # every value masked: NaN rows
        r = m.masked_softmax(x, 2.0, full, 1.0)                               # masked with a finite value
        assert np.allclose(r, 0.2)
        assert m.masked_softmax(np.zeros((0, 5), F32), 1.0, None, 0).shape == (0, 5)
        assert m.masked_softmax(np.array(2.0, F32), 0.5, None, 0) == 1.0
        xt = np.ascontiguousarray(x.T).T                                      # non-contiguous: the slow path
        assert np.allclose(m.masked_softmax(xt, 0.5, x > 0, -1e9), m.masked_softmax(x, 0.5, x > 0, -1e9))
        with pytest.raises(TypeError, match="masked_softmax: expected a float32 or float64 ndarray"):
            m.masked_softmax(np.zeros(3, np.int32), None, None, 0)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_masked_softmax_checks_before_writing_and_aliasing(K):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((4, 6)).astype(F32)
    mask = rng.random((4, 6)) < 0.3
    res = []
    for m in K:
        out = np.full((4, 6), 7.0, F32)
        for bad, exc in [(np.zeros((4, 6), np.int8), TypeError), (np.zeros((3, 6), bool), ValueError)]:
            with pytest.raises(exc, match="masked_fill: mask"):
                m.masked_softmax(x, 2.0, bad, 0.0, out)
            assert (out == 7).all()                            # a failed call wrote nothing
        with pytest.raises(ValueError, match="masked_fill: value of shape"):
            m.masked_softmax(x, 2.0, mask, np.zeros(4), out)
        assert (out == 7).all()
        ro = np.zeros((4, 6), F32)
        ro.flags.writeable = False
        with pytest.raises(ValueError, match="masked_softmax: out is read-only"):
            m.masked_softmax(x, None, None, 0, ro)
        with pytest.raises(TypeError, match="got matrix"):
            m.masked_softmax(np.matrix(x), None, None, 0)
        want = m.masked_softmax(x, 0.5, mask, -np.inf)
        # the mask a view of out, x itself as out, a strided out: the values as given
        buf = np.zeros((8, 6), F32)
        mv = buf[4:].view(bool)[:, :6]
        mv[...] = mask
        o = buf[4:]
        got = m.masked_softmax(x, 0.5, mv, -np.inf, o)
        assert _same(got, want)
        xs = x.copy()
        assert _same(m.masked_softmax(xs, 0.5, mask, -np.inf, xs), want)
        wide = np.zeros((4, 12), F32)
        assert _same(m.masked_softmax(x, 0.5, mask, -np.inf, wide[:, ::2]), want)
        res.append(want)
    assert np.allclose(res[0], res[1], rtol=1e-6, atol=0)
