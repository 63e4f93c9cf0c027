"""Pieces shared by the kernel twins (accel._native._kernels / accel._python._kernels), off the hot loops.

Both twins import this module so that their argument checks, error messages and layer_norm's shapes are the
very same: the checks run before anything is written, so that a failed call leaves ``out`` as it was.
"""
import operator

import numpy as np

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def check_float(x, name):
    # exactly an ndarray: a subclass's own reductions (np.matrix, masked arrays) are not what the C twin runs
    if type(x) is not np.ndarray or x.dtype not in FLOATS:
        raise TypeError(f"{name}: expected a float32 or float64 ndarray, got "
                        f"{x.dtype if type(x) is np.ndarray else type(x).__name__}")


def check_out(out, shape, dtype, name):
    if out is not None and (not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != dtype):
        raise ValueError(f"{name}: out must be a {dtype} ndarray of shape {shape}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    if out is not None and not out.flags.writeable:
        raise ValueError(f"{name}: out is read-only")


def axis_index(axis, nd):
    """``axis`` (an integer) of an nd-dim array (a 0-dim one has axis 0 / -1, as numpy's reductions take it),
    made non-negative."""
    a = operator.index(axis)
    if not -max(nd, 1) <= a < max(nd, 1):
        raise np.exceptions.AxisError(a, nd)
    return a % max(nd, 1)


def real_eps(eps):
    """``eps`` as a Python float: a real number (or a 0-dim real array), not a string, None or a sequence."""
    e = np.asarray(eps)
    if e.ndim or e.dtype.kind not in "biuf":
        raise TypeError(f"layer_norm: eps must be a real number, got {eps!r:.60}")
    return float(e)


def layer_norm_shape(x, k, eps, out):
    """layer_norm's checks and shapes: (n values per row, rows, the statistics' shape, eps as a float, the
    result of an empty x or None)."""
    if not 1 <= k <= x.ndim:
        raise ValueError(f"layer_norm: k must be in [1, {x.ndim}], got {k}")
    lead, inner = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    n = 1
    for s in inner:
        n *= s
    rows = x.size // n if n else 0
    stat_shape = lead + (1,) * k
    eps = real_eps(eps)                  # (checked for an empty x too)
    empty = None
    if x.size == 0:
        mean = np.full(stat_shape, np.nan, x.dtype)
        empty = (np.empty_like(x) if out is None else out), mean, mean.copy()
    return n, rows, stat_shape, eps, empty


def fits(shape, to):
    """Whether an array of ``shape`` broadcasts to ``to`` (numpy's broadcast_to, without making the view)."""
    if len(shape) > len(to):
        return False
    for i in range(1, len(shape) + 1):
        if shape[-i] != 1 and shape[-i] != to[-i]:
            return False
    return True


def fill_args(x, mask, value, out):
    """masked_fill's mask (a bool array broadcastable to out) and value (cast to out's dtype), checked before
    anything is written, so that a bad one leaves out as it was."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"masked_fill: out must be an ndarray, got {type(out).__name__}")
    m = mask if type(mask) is np.ndarray else np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"masked_fill: mask must be a bool array, got {m.dtype}")
    v = np.asarray(value).astype(out.dtype)
    if m.shape != out.shape and not fits(m.shape, out.shape):
        raise ValueError(f"masked_fill: mask of shape {m.shape} does not broadcast to out's {out.shape}")
    if v.ndim and not fits(v.shape, out.shape):
        raise ValueError(f"masked_fill: value of shape {v.shape} does not broadcast to out's {out.shape}")
    if np.may_share_memory(m, out):      # (the mask as given, not as x's copy into out overwrites it)
        m = m.copy()
    return m, v
