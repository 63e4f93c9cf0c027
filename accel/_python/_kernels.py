"""Pure-Python twin of accel._native._kernels: accel.lazy's numpy backend's heavy kernels (softmax /
log_softmax, layer_norm, masked_fill, and the four arithmetic ufuncs on float arrays) in numpy.

The native twin runs the same operations in C, one row at a time, in the same order (numpy's pairwise sums,
each product and quotient rounded on its own): layer_norm, masked_fill and add / subtract / multiply / divide
give the same bits on both twins; softmax and log_softmax differ only where the two exponentials (numpy's
and accel's, each about 1 ulp) differ.
"""
import numpy as _np

_FLOATS = (_np.dtype(_np.float32), _np.dtype(_np.float64))


def _check_float(x, name):
    if not isinstance(x, _np.ndarray) or x.dtype not in _FLOATS:
        raise TypeError(f"{name}: expected a float32 or float64 ndarray, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")


def _check_out(out, shape, dtype, name):
    if out is not None and (not isinstance(out, _np.ndarray) or out.shape != shape or out.dtype != dtype):
        raise ValueError(f"{name}: out must be a {dtype} ndarray of shape {shape}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")


def softmax(x, axis, out=None, log=False):
    """softmax (``log``: log_softmax) of the float32 / float64 ndarray ``x`` over ``axis`` as numpy computes
    exp(x - max) / sum(...) and (x - max) - log(sum(exp(x - max))) in x's dtype; the result is written into
    ``out`` (x's shape and dtype, not x) when given.  Returns the result (an empty x gives an empty one)."""
    _check_float(x, "softmax")
    _check_out(out, x.shape, x.dtype, "softmax")
    if x.size == 0:
        return _np.empty_like(x) if out is None else out
    with _np.errstate(all="ignore"):     # (inf - inf, as the native twin, silently)
        e = _np.asarray(_np.subtract(x, _np.max(x, axis=axis, keepdims=True), out=out))   # (0-dim: else a scalar)
        if log:
            e -= _np.log(_np.sum(_np.exp(e), axis=axis, keepdims=True))
            return e
        _np.exp(e, out=e)                # in place: one temporary of x's size, not two
        e /= _np.sum(e, axis=axis, keepdims=True)
    return e


def masked_softmax(x, scale, mask, value, out=None):
    """softmax over the last axis of masked_fill(x * scale, mask, value) for the float32 / float64 ndarray
    ``x`` (x's dtype throughout; ``scale``: a Python number or None, no scaling; ``mask``: a bool ndarray
    broadcastable to x, or None, no mask; ``value``: a number cast to x's dtype), as multiply, masked_fill
    and softmax give it one after another; the result is written into ``out`` (x's shape and dtype, not x)
    when given.  Returns the result."""
    _check_float(x, "masked_softmax")
    _check_out(out, x.shape, x.dtype, "masked_softmax")
    t = _np.empty(x.shape, x.dtype) if out is None else out
    if scale is not None:
        _np.multiply(x, scale, out=t)
    else:
        _np.copyto(t, x)
    if mask is not None:
        masked_fill(t, mask, value, t)
    if t.size == 0:
        return t
    with _np.errstate(all="ignore"):
        _np.subtract(t, _np.max(t, axis=-1, keepdims=True), out=t)
        _np.exp(t, out=t)
        t /= _np.sum(t, axis=-1, keepdims=True)
    return t


def layer_norm(x, k, eps, weight=None, bias=None, out=None):
    """native_layer_norm's (result, mean, rstd) of the float32 / float64 ndarray ``x`` over its last ``k``
    dims, in x's dtype: mean = sum / count, d = x - mean, var = sum(d * d) / count, rstd = 1 / sqrt(var + eps),
    result = d * rstd (* weight) (+ bias); ``weight`` / ``bias`` (x's dtype, the last k dims' shape) or None;
    the result is written into ``out`` (x's shape and dtype, not x) when given.  mean and rstd have x's shape
    with its last k dims 1."""
    _check_float(x, "layer_norm")
    _check_out(out, x.shape, x.dtype, "layer_norm")
    if not 1 <= k <= x.ndim:
        raise ValueError(f"layer_norm: k must be in [1, {x.ndim}], got {k}")
    dt = x.dtype
    lead, inner = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    n = 1
    for s in inner:
        n *= s
    rows = x.size // n if n else 0
    stat_shape = lead + (1,) * k
    if x.size == 0:
        mean = _np.full(stat_shape, _np.nan, dt)
        return (_np.empty_like(x) if out is None else out), mean, mean.copy()
    xr = x.reshape(rows, n)
    with _np.errstate(all="ignore"):     # (inf / nan inputs, as the native twin, silently)
        mean = xr.mean(axis=1, keepdims=True)
        d = _np.subtract(xr, mean, out=None if out is None else out.reshape(rows, n))
        var = _np.square(d).mean(axis=1, keepdims=True)
        rstd = 1 / _np.sqrt(var + dt.type(eps))
        d *= rstd
        if weight is not None:
            d *= _np.asarray(weight, dt).reshape(n)
        if bias is not None:
            d += _np.asarray(bias, dt).reshape(n)
    return d.reshape(x.shape), mean.reshape(stat_shape), rstd.reshape(stat_shape)


def masked_fill(x, mask, value, out):
    """``out`` (an ndarray of x's shape) = x (cast to out's dtype) where the bool ndarray ``mask``
    (broadcastable to x) is False, ``value`` (cast to out's dtype) where it is True; returns out."""
    _np.copyto(out, x, casting="unsafe")
    _np.copyto(out, _np.asarray(value).astype(out.dtype), where=mask)
    return out


def add(a, b, out):
    """out = a + b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.add(a, b,
    out=out); returns out."""
    return _np.add(a, b, out=out)


def subtract(a, b, out):
    """out = a - b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.subtract(a, b,
    out=out); returns out."""
    return _np.subtract(a, b, out=out)


def multiply(a, b, out):
    """out = a * b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.multiply(a, b,
    out=out); returns out."""
    return _np.multiply(a, b, out=out)


def divide(a, b, out):
    """out = a / b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.true_divide(a,
    b, out=out); returns out."""
    return _np.true_divide(a, b, out=out)
