# cython: binding=True
"""Cython twin of accel._python._kernels: accel.lazy's numpy backend's heavy kernels (softmax /
log_softmax, layer_norm, masked_fill, and the four arithmetic ufuncs on float arrays) in C (_kernels.h),
vectorised, without the GIL.

The C code runs the python twin's operations one row at a time in the same order (numpy's pairwise sums,
each product and quotient rounded on its own): layer_norm, masked_fill and add / subtract / multiply / divide
give the same bits on both twins; softmax and log_softmax differ only where the two exponentials (numpy's
and accel's, each about 1 ulp) differ.  Both sum C-contiguous rows (a transposed or strided x, a softmax axis
other than the last, copied first), so that the bits do not depend on x's memory layout; weight / bias / mask
are read as given even where they are views of out.
"""
import numpy as _np

from accel._kernels_common import (FLOATS as _FLOATS, axis_index as _axis, check_float as _check_float,
                                    check_out as _check_out, fill_args as _fill_args,
                                    layer_norm_shape as _layer_norm_shape)

from libc.stdint cimport uint8_t
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_RECORDS, PyBUF_RECORDS_RO

cdef extern from "_kernels.h" nogil:
    ctypedef Py_ssize_t ak_int
    void ak_softmax_f32(const float *x, float *out, ak_int rows, ak_int n, int log_)
    void ak_softmax_f64(const double *x, double *out, ak_int rows, ak_int n, int log_)
    int ak_layer_norm_f32(const float *x, const float *w, const float *b, float eps, float *out, ak_int rows,
                          ak_int n, float *mean, float *rstd)
    int ak_layer_norm_f64(const double *x, const double *w, const double *b, double eps, double *out,
                          ak_int rows, ak_int n, double *mean, double *rstd)
    void ak_masked_fill_f32(const float *x, const uint8_t *mask, float v, float *out, ak_int outer, ak_int inner)
    void ak_masked_fill_f64(const double *x, const uint8_t *mask, double v, double *out, ak_int outer,
                            ak_int inner)
    void ak_masked_softmax_f32(const float *x, float *out, ak_int rows, ak_int n, int has_s, float s,
                               const uint8_t *mask, ak_int mask_rows, float v)
    void ak_masked_softmax_f64(const double *x, double *out, ak_int rows, ak_int n, int has_s, double s,
                               const uint8_t *mask, ak_int mask_rows, double v)
    ctypedef void (*ak_binary_fn)(int nd, const ak_int *n, const ak_int *sa, const ak_int *sb, const ak_int *so,
                                  const char *a, const char *b, char *o)
    ak_binary_fn ak_binary[4][2]
    enum: AK_MAXDIMS

_F32 = _np.dtype(_np.float32)
_F64 = _np.dtype(_np.float64)
_BOOL = _np.dtype(_np.bool_)


def _dest(out, shape, dtype, x, w=None, b=None):
    """A C-contiguous array to write into: ``out`` when it is one and shares no memory with x (nor with the
    weight / bias the rows read as they are written), else a new one."""
    if (out is not None and out.flags.c_contiguous and out.flags.writeable and not _np.may_share_memory(out, x)
            and (w is None or not _np.may_share_memory(out, w)) and (b is None or not _np.may_share_memory(out, b))):
        return out
    return _np.empty(shape, dtype)


cdef void _softmax_rows(x, r, Py_ssize_t rows, Py_ssize_t n, int log_):
    cdef const float[::1] xf
    cdef float[::1] rf
    cdef const double[::1] xd
    cdef double[::1] rd
    if x.dtype == _F32:
        xf = x.reshape(-1)
        rf = r.reshape(-1)
        with nogil:
            ak_softmax_f32(&xf[0], &rf[0], rows, n, log_)
    else:
        xd = x.reshape(-1)
        rd = r.reshape(-1)
        with nogil:
            ak_softmax_f64(&xd[0], &rd[0], rows, n, log_)


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
    if nd == 0:
        r = _np.empty((1,), x.dtype)
        _softmax_rows(x.reshape(1), r, 1, 1, log)
        if out is None:
            return r.reshape(())
        out[()] = r[0]
        return out
    if ax == nd - 1:
        xc = _np.ascontiguousarray(x)
        r = _dest(out, x.shape, x.dtype, x)
        _softmax_rows(xc, r, x.size // x.shape[nd - 1], x.shape[nd - 1], log)
    else:                                # the axis moved last, computed, moved back
        xc = _np.ascontiguousarray(_np.moveaxis(x, ax, -1))
        t = _np.empty(xc.shape, x.dtype)
        _softmax_rows(xc, t, xc.size // xc.shape[nd - 1], xc.shape[nd - 1], log)
        r = _np.moveaxis(t, -1, ax)
    if out is not None and r is not out:
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
    cdef Py_ssize_t n, rows, mrows = 1
    cdef const float[::1] xf
    cdef float[::1] rf
    cdef const double[::1] xd
    cdef double[::1] rd
    cdef const uint8_t[::1] mb
    cdef const uint8_t *mp = NULL
    cdef float sf = 0, vf = 0
    cdef double sd = 0, vd = 0
    cdef int has_s = scale is not None
    dt = x.dtype
    m = v = None
    if mask is not None:             # (checked against out, or x for its shape and dtype; nothing written yet)
        m, v = _fill_args(x, mask, value, x if out is None else out)
    fast = (x.ndim >= 1 and x.size and x.flags.c_contiguous
            and (scale is None or type(scale) is float or type(scale) is int))     # (a Python number, weak)
    if fast and m is not None:
        fast = (v.ndim == 0 and 1 <= m.ndim <= x.ndim and m.flags.c_contiguous
                and m.shape == x.shape[x.ndim - m.ndim:] and (out is None or not _np.may_share_memory(m, out)))
    if not fast:                         # multiply, masked_fill and softmax one after another
        t = _np.empty(x.shape, dt)
        with _np.errstate(all="ignore"):
            if has_s:
                _np.multiply(x, scale, out=t)
            else:
                _np.copyto(t, x)
        if m is not None:
            _np.copyto(t, v, where=m)
        r = softmax(t, -1)
        if out is not None:
            out[...] = r
            return out
        return r
    n = x.shape[x.ndim - 1]
    rows = x.size // n
    r = _dest(out, x.shape, dt, x)
    if m is not None:
        mrows = m.size // n
        mb = m.reshape(-1).view(_np.uint8)
        mp = &mb[0]
        vf = vd = v
    if dt == _F32:
        xf, rf = x.reshape(-1), r.reshape(-1)
        if has_s:
            with _np.errstate(all="ignore"):
                sf = _np.float32(scale)          # a Python number is rounded to float32 first, as numpy does
        with nogil:
            ak_masked_softmax_f32(&xf[0], &rf[0], rows, n, has_s, sf, mp, mrows, vf)
    else:
        xd, rd = x.reshape(-1), r.reshape(-1)
        if has_s:
            sd = scale
        with nogil:
            ak_masked_softmax_f64(&xd[0], &rd[0], rows, n, has_s, sd, mp, mrows, vd)
    if out is not None and r is not out:
        out[...] = r
        return out
    return r


def layer_norm(x, k, eps, weight=None, bias=None, out=None):
    """native_layer_norm's (result, mean, rstd) of the float32 / float64 ndarray ``x`` over its last ``k``
    dims, in x's dtype: mean = sum / count, d = x - mean, var = sum(d * d) / count, rstd = 1 / sqrt(var + eps),
    result = d * rstd (* weight) (+ bias); ``weight`` / ``bias`` (x's dtype, the last k dims' shape) or None;
    the result is written into ``out`` (x's shape and dtype, not x) when given.  mean and rstd have x's shape
    with its last k dims 1."""
    _check_float(x, "layer_norm")
    _check_out(out, x.shape, x.dtype, "layer_norm")
    dt = x.dtype
    cdef Py_ssize_t n, rows
    cdef double epsd
    n, rows, stat_shape, epsd, empty = _layer_norm_shape(x, k, eps, out)
    if empty is not None:
        return empty
    xc = _np.ascontiguousarray(x)
    w = None if weight is None else _np.ascontiguousarray(_np.asarray(weight, dt).reshape(n))
    b = None if bias is None else _np.ascontiguousarray(_np.asarray(bias, dt).reshape(n))
    r = _dest(out, x.shape, dt, x, w, b)
    mean = _np.empty(stat_shape, dt)
    rstd = _np.empty(stat_shape, dt)
    cdef const float[::1] xf, wf, bf
    cdef float[::1] rf, mf, sf
    cdef const double[::1] xd, wd, bd
    cdef double[::1] rd, md, sd
    cdef const float *wfp = NULL
    cdef const float *bfp = NULL
    cdef const double *wdp = NULL
    cdef const double *bdp = NULL
    cdef int rc
    cdef float epsf = epsd
    if dt == _F32:
        xf, rf, mf, sf = xc.reshape(-1), r.reshape(-1), mean.reshape(-1), rstd.reshape(-1)
        if w is not None:
            wf = w
            wfp = &wf[0]
        if b is not None:
            bf = b
            bfp = &bf[0]
        with nogil:
            rc = ak_layer_norm_f32(&xf[0], wfp, bfp, epsf, &rf[0], rows, n, &mf[0], &sf[0])
    else:
        xd, rd, md, sd = xc.reshape(-1), r.reshape(-1), mean.reshape(-1), rstd.reshape(-1)
        if w is not None:
            wd = w
            wdp = &wd[0]
        if b is not None:
            bd = b
            bdp = &bd[0]
        with nogil:
            rc = ak_layer_norm_f64(&xd[0], wdp, bdp, epsd, &rd[0], rows, n, &md[0], &sd[0])
    if rc:
        raise MemoryError(f"layer_norm: no memory for a row of {n} values")
    if out is not None and r is not out:
        out[...] = r
        r = out
    return r, mean, rstd


def masked_fill(x, mask, value, out):
    """``out`` (an ndarray of x's shape) = x (cast to out's dtype) where the bool ndarray ``mask``
    (broadcastable to x) is False, ``value`` (cast to out's dtype) where it is True; returns out."""
    cdef Py_ssize_t inner, outer
    cdef const float[::1] xf
    cdef float[::1] of
    cdef const double[::1] xd
    cdef double[::1] od
    cdef const uint8_t[::1] mb
    cdef const float[::1] vbf
    cdef const double[::1] vbd
    m = mask
    if (type(out) is _np.ndarray and type(x) is _np.ndarray and type(m) is _np.ndarray and out.dtype in _FLOATS
            and x.dtype == out.dtype and m.dtype == _BOOL and x.shape == out.shape and m.ndim <= x.ndim
            and x.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable and m.flags.c_contiguous
            and m.shape == x.shape[x.ndim - m.ndim:] and m.size and x.size and not _np.may_share_memory(out, m)
            and (x is out or not _np.may_share_memory(out, x))):
        dt = out.dtype
        v = _np.asarray(value).astype(dt)                     # (before anything is written)
        if v.ndim == 0:
            inner = m.size
            outer = x.size // inner
            mb = m.reshape(-1).view(_np.uint8)
            if dt == _F32:               # (the value read from memory: a signalling NaN's bits kept)
                xf, of, vbf = x.reshape(-1), out.reshape(-1), v.reshape(1)
                with nogil:
                    ak_masked_fill_f32(&xf[0], &mb[0], vbf[0], &of[0], outer, inner)
            else:
                xd, od, vbd = x.reshape(-1), out.reshape(-1), v.reshape(1)
                with nogil:
                    ak_masked_fill_f64(&xd[0], &mb[0], vbd[0], &od[0], outer, inner)
            return out
    m, v = _fill_args(x, mask, value, out)
    _np.copyto(out, x, casting="unsafe")
    _np.copyto(out, v, where=m)
    return out


_UFUNCS = (_np.add, _np.subtract, _np.multiply, _np.true_divide)


def _ufunc(op, a, b, out):
    with _np.errstate(all="ignore"):    # (division by zero, inf - inf: silently, as the C loops)
        return _UFUNCS[op](a, b, out=out)


cdef bint _extent(Py_buffer *v, size_t *lo, size_t *hi):
    """The first and one-past-last byte ``v`` touches; False when it has no element."""
    cdef size_t start = <size_t>v.buf, end = <size_t>v.buf
    cdef int d
    for d in range(v.ndim):
        if v.shape[d] == 0:
            return False
        if v.strides[d] < 0:
            start += v.strides[d] * (v.shape[d] - 1)
        else:
            end += v.strides[d] * (v.shape[d] - 1)
    lo[0] = start
    hi[0] = end + v.itemsize
    return True


cdef bint _self_overlaps(Py_buffer *v):
    """True when two elements of ``v`` may share bytes (a zero stride, strides that interleave): its dims of
    size > 1 by |stride|, each must step past all that the smaller ones span (a sufficient test)."""
    cdef ak_int st[AK_MAXDIMS]
    cdef ak_int sz[AK_MAXDIMS]
    cdef ak_int span = v.itemsize, s, z
    cdef int k = 0, d, i
    for d in range(v.ndim):
        if v.shape[d] > 1:
            s = v.strides[d] if v.strides[d] >= 0 else -v.strides[d]
            i = k
            while i > 0 and st[i - 1] > s:           # insertion sort by |stride|
                st[i] = st[i - 1]
                sz[i] = sz[i - 1]
                i -= 1
            st[i] = s
            sz[i] = v.shape[d]
            k += 1
    for i in range(k):
        if st[i] < span:
            return True
        span += st[i] * (sz[i] - 1)
    return False


cdef bint _plan(Py_buffer *va, Py_buffer *vb, Py_buffer *vo, int *nd_out, ak_int *n, ak_int *sa, ak_int *sb,
                ak_int *so):
    """The dims to loop over (size-1 dims dropped, dims that step as one merged, broadcast dims stride 0); False
    when a or b does not broadcast to out, out overlaps an input other than exactly, or out overlaps itself
    (numpy's ufunc then buffers what it must)."""
    cdef int k = vo.ndim, ia = k - va.ndim, ib = k - vb.ndim, nd = 0, d, i, j
    cdef ak_int x, xa, xb
    cdef size_t lo, hi, lo2, hi2
    cdef Py_buffer *v
    cdef Py_buffer *ins[2]
    if ia < 0 or ib < 0 or (vo.len and _self_overlaps(vo)):
        return False
    ins[0] = va
    ins[1] = vb
    if _extent(vo, &lo, &hi):
        for j in range(2):
            v = ins[j]
            if _extent(v, &lo2, &hi2) and lo2 < hi and lo < hi2:
                if v.buf != vo.buf or v.ndim != k:
                    return False
                for i in range(k):
                    if v.shape[i] != vo.shape[i] or v.strides[i] != vo.strides[i]:
                        return False
    for d in range(k):
        x = vo.shape[d]
        xa = va.shape[d - ia] if d >= ia else 1
        xb = vb.shape[d - ib] if d >= ib else 1
        if (xa != x and xa != 1) or (xb != x and xb != 1):
            return False
        if x == 1:
            continue
        n[nd] = x
        so[nd] = vo.strides[d]
        sa[nd] = va.strides[d - ia] if xa != 1 else 0
        sb[nd] = vb.strides[d - ib] if xb != 1 else 0
        if nd and so[nd - 1] == so[nd] * x and sa[nd - 1] == sa[nd] * x and sb[nd - 1] == sb[nd] * x:
            n[nd - 1] *= x          # the dim before steps through this one as one: merged
            so[nd - 1] = so[nd]
            sa[nd - 1] = sa[nd]
            sb[nd - 1] = sb[nd]
        else:
            nd += 1
    if nd == 0:
        n[0] = 1
        so[0] = sa[0] = sb[0] = 0
        nd = 1
    nd_out[0] = nd
    return True


cdef inline int _ftype(Py_buffer *v):
    """0 for a float32 buffer, 1 for float64, -1 otherwise (byte order native)."""
    cdef const char *f = v.format
    if f[0] == b'=' or f[0] == b'@':
        f += 1
    if f[0] == 0 or f[1] != 0:
        return -1
    return 0 if f[0] == b'f' else 1 if f[0] == b'd' else -1


cdef _binary(int op, a, b, out):
    """out = a OP b in C when a, b and out are float32 (or all float64) ndarrays that broadcast to out's shape
    and out overlaps neither input (or is exactly one of them); numpy's ufunc otherwise."""
    cdef ak_int n[AK_MAXDIMS]
    cdef ak_int sa[AK_MAXDIMS]
    cdef ak_int sb[AK_MAXDIMS]
    cdef ak_int so[AK_MAXDIMS]
    cdef int nd = 0, t
    cdef Py_buffer va, vb, vo
    cdef bint ok = False
    cdef ak_binary_fn fn
    if not (type(a) is _np.ndarray and type(b) is _np.ndarray and type(out) is _np.ndarray) or out.ndim > AK_MAXDIMS:
        return _ufunc(op, a, b, out)
    try:
        PyObject_GetBuffer(out, &vo, PyBUF_RECORDS)
    except (ValueError, BufferError):                         # read-only: numpy says so
        return _ufunc(op, a, b, out)
    PyObject_GetBuffer(a, &va, PyBUF_RECORDS_RO)
    try:
        PyObject_GetBuffer(b, &vb, PyBUF_RECORDS_RO)
        try:
            t = _ftype(&vo)
            if t >= 0 and _ftype(&va) == t and _ftype(&vb) == t and _plan(&va, &vb, &vo, &nd, n, sa, sb, so):
                ok = True
                if vo.len:
                    fn = ak_binary[op][t]
                    with nogil:
                        fn(nd, n, sa, sb, so, <const char *>va.buf, <const char *>vb.buf, <char *>vo.buf)
        finally:
            PyBuffer_Release(&vb)
    finally:
        PyBuffer_Release(&va)
        PyBuffer_Release(&vo)
    return out if ok else _ufunc(op, a, b, out)


def add(a, b, out):
    """out = a + b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.add(a, b,
    out=out) (floating-point warnings not given); returns out."""
    return _binary(0, a, b, out)


def subtract(a, b, out):
    """out = a - b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.subtract(a, b,
    out=out) (floating-point warnings not given); returns out."""
    return _binary(1, a, b, out)


def multiply(a, b, out):
    """out = a * b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.multiply(a, b,
    out=out) (floating-point warnings not given); returns out."""
    return _binary(2, a, b, out)


def divide(a, b, out):
    """out = a / b for ndarrays that broadcast to the ndarray ``out``'s shape, exactly as numpy.true_divide(a,
    b, out=out) (floating-point warnings not given); returns out."""
    return _binary(3, a, b, out)
