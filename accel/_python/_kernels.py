"""Pure-Python twin of accel._native._kernels: accel.lazy's numpy backend's heavy kernels (softmax /
log_softmax, layer_norm, masked_fill, and the four arithmetic ufuncs on float arrays) in numpy.

The native twin runs the same operations in C, one row at a time, in the same order (numpy's pairwise sums,
each product and quotient rounded on its own): layer_norm, masked_fill and add / subtract / multiply / divide
give the same bits on both twins; softmax and log_softmax differ only where the two exponentials (numpy's
and accel's, each about 1 ulp) differ.  Both sum C-contiguous rows (a transposed or strided x, a softmax axis
other than the last, copied first), so that the bits do not depend on x's memory layout; weight / bias / mask
are read as given even where they are views of out.
"""
import numpy as _np

from accel._kernels_common import (axis_index as _axis, check_float as _check_float, check_out as _check_out,
                                    fill_args as _fill_args, layer_norm_shape as _layer_norm_shape)


def softmax(x, axis, out=None, log=False):
    """softmax (``log``: log_softmax) of the float32 / float64 ndarray ``x`` over ``axis`` as numpy computes
    exp(x - max) / sum(...) and (x - max) - log(sum(exp(x - max))) in x's dtype; the result is written into
    ``out`` (x's shape and dtype, not x) when given.  Returns the result (an empty x gives an empty one)."""
    _check_float(x, "softmax")
    _check_out(out, x.shape, x.dtype, "softmax")
    nd = x.ndim
    ax = _axis(axis, nd)                 # (checked for an empty x too)
    if x.size == 0:
        return _np.empty_like(x) if out is None else out
    # the rows' sums over a C-contiguous last axis (numpy's pairwise sum, as the C twin): numpy reducing a
    # strided or non-last axis adds the values one by one, whose result depends on x's memory layout
    xm = x.reshape(1) if nd == 0 else _np.moveaxis(x, ax, -1)
    if out is not None and ax == nd - 1 and out.flags.c_contiguous:
        e = out                          # (x may overlap it: numpy's subtract copies what it must)
    else:
        e = _np.empty(xm.shape, x.dtype)
    with _np.errstate(all="ignore"):     # (inf - inf, as the native twin, silently)
        _np.subtract(xm, _np.max(xm, axis=-1, keepdims=True), out=e)
        if log:
            e -= _np.log(_np.sum(_np.exp(e), axis=-1, keepdims=True))
        else:
            _np.exp(e, out=e)            # in place: one temporary of x's size, not two
            e /= _np.sum(e, axis=-1, keepdims=True)
    if e is out:
        return out
    r = e.reshape(()) if nd == 0 else _np.moveaxis(e, -1, ax)
    if out is not None:
        out[...] = r
        return out
    return r


def masked_softmax(x, scale, mask, value, out=None):
    """softmax over the last axis of masked_fill(x * scale, mask, value) for the float32 / float64 ndarray
    ``x`` (x's dtype throughout; ``scale``: a Python number or None, no scaling; ``mask``: a bool ndarray
    broadcastable to x, or None, no mask; ``value``: a number cast to x's dtype), as multiply, masked_fill
    and softmax give it one after another; the result is written into ``out`` (x's shape and dtype, not x)
    when given.  Mask and value are checked before anything is written.  Returns the result."""
    _check_float(x, "masked_softmax")
    _check_out(out, x.shape, x.dtype, "masked_softmax")
    # into out itself when it is C-contiguous (numpy's multiply / copyto handle an x that overlaps it; a mask
    # that does is copied first by _fill_args)
    t = out if out is not None and out.flags.c_contiguous else _np.empty(x.shape, x.dtype)
    m = v = None
    if mask is not None:
        m, v = _fill_args(x, mask, value, t)
    with _np.errstate(all="ignore"):
        if scale is not None:
            _np.multiply(x, scale, out=t)
        else:
            _np.copyto(t, x)
        if m is not None:
            _np.copyto(t, v, where=m)
        if t.size:                       # (rows summed C-contiguous, as softmax's)
            tm = t.reshape(1) if t.ndim == 0 else t
            _np.subtract(tm, _np.max(tm, axis=-1, keepdims=True), out=tm)
            _np.exp(tm, out=tm)
            tm /= _np.sum(tm, axis=-1, keepdims=True)
    if out is not None and t is not out:
        out[...] = t
        return out
    return t


def layer_norm(x, k, eps, weight=None, bias=None, out=None):
    """native_layer_norm's (result, mean, rstd) of the float32 / float64 ndarray ``x`` over its last ``k``
    dims, in x's dtype: mean = sum / count, d = x - mean, var = sum(d * d) / count, rstd = 1 / sqrt(var + eps),
    result = d * rstd (* weight) (+ bias); ``weight`` / ``bias`` (x's dtype, the last k dims' shape) or None;
    the result is written into ``out`` (x's shape and dtype, not x) when given.  mean and rstd have x's shape
    with its last k dims 1."""
    _check_float(x, "layer_norm")
    _check_out(out, x.shape, x.dtype, "layer_norm")
    dt = x.dtype
    n, rows, stat_shape, eps, empty = _layer_norm_shape(x, k, eps, out)
    if empty is not None:
        return empty
    with _np.errstate(over="ignore"):   # (an eps beyond float32's range: inf, as the native twin's cast, silently)
        eps = dt.type(eps)
    w = None if weight is None else _np.asarray(weight, dt).reshape(n)    # (checked before out is written)
    b = None if bias is None else _np.asarray(bias, dt).reshape(n)
    # C-contiguous rows: numpy's pairwise sums, as the C twin (a strided row would be summed one by one)
    xr = _np.ascontiguousarray(x).reshape(rows, n)
    dest = out if out is not None and out.flags.c_contiguous else None
    if dest is not None:                 # weight / bias as given, not as the result written into out makes them
        w = w if w is None or not _np.may_share_memory(w, dest) else w.copy()
        b = b if b is None or not _np.may_share_memory(b, dest) else b.copy()
    with _np.errstate(all="ignore"):     # (inf / nan inputs, as the native twin, silently)
        mean = xr.mean(axis=1, keepdims=True)
        d = _np.subtract(xr, mean, out=None if dest is None else dest.reshape(rows, n))
        var = _np.square(d).mean(axis=1, keepdims=True)
        rstd = 1 / _np.sqrt(var + eps)
        d *= rstd
        if w is not None:
            d *= w
        if b is not None:
            d += b
    r = d.reshape(x.shape)
    if out is not None and dest is None:
        out[...] = r
    return (r if out is None else out), mean.reshape(stat_shape), rstd.reshape(stat_shape)


def masked_fill(x, mask, value, out):
    """``out`` (an ndarray of x's shape) = x (cast to out's dtype) where the bool ndarray ``mask``
    (broadcastable to x) is False, ``value`` (cast to out's dtype) where it is True; returns out."""
    m, v = _fill_args(x, mask, value, out)
    _np.copyto(out, x, casting="unsafe")
    _np.copyto(out, v, where=m)
    return out


def add(a, b, out):
    """out = a + b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.add(a, b,
    out=out) (floating-point warnings not given); returns out."""
    with _np.errstate(all="ignore"):    # (division by zero, inf - inf: silently, as the C twin)
        return _np.add(a, b, out=out)


def subtract(a, b, out):
    """out = a - b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.subtract(a, b,
    out=out) (floating-point warnings not given); returns out."""
    with _np.errstate(all="ignore"):    # (division by zero, inf - inf: silently, as the C twin)
        return _np.subtract(a, b, out=out)


def multiply(a, b, out):
    """out = a * b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.multiply(a, b,
    out=out) (floating-point warnings not given); returns out."""
    with _np.errstate(all="ignore"):    # (division by zero, inf - inf: silently, as the C twin)
        return _np.multiply(a, b, out=out)


def divide(a, b, out):
    """out = a / b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.true_divide(a,
    b, out=out) (floating-point warnings not given); returns out."""
    with _np.errstate(all="ignore"):    # (division by zero, inf - inf: silently, as the C twin)
        return _np.true_divide(a, b, out=out)
