"""Sorting and selection by value: topk, sort, argsort, and max / min over a dim (values and indices), as torch
2.13 LTC records them.  topk, sort (argsort: its indices) and max.dim are multi-output nodes (two outputs,
``num_outputs=2`` in the text, an operand ``%n.1`` for the indices); the returned pair is a
``torch.return_types``-like named tuple.  min over a dim and the ``stable=True`` sorts have no lazy kernel in
LTC: they run eagerly (counters ``aten::min.dim``, ``aten::sort.stable``), each output copied back.

Values equal torch's; where torch leaves the order of equal elements unspecified (topk, non-stable sort) the
indices here are the stable order's (NaN sorts as the largest value, as in torch)."""
import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy import metrics as _metrics
from accel.lazy import tensors as T
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import tensor_value
from accel.lazy.tensors import LazyTensor, _check_tensor, _emit_multi, _fn_counter, _index, _norm_dim, _seed


class _ReturnType(tuple):
    """A two-field named tuple as torch.return_types (``values, indices``): unpacks, indexes and names."""
    __slots__ = ()
    _name = "return_types"

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])

    def __repr__(self):
        return f"accel.lazy.return_types.{self._name}(values={self[0]!r}, indices={self[1]!r})"


def _return_type(name):
    return type(name, (_ReturnType,), {"__slots__": (), "_name": name})


topk_t, sort_t, max_t, min_t = (_return_type(n) for n in ("topk", "sort", "max", "min"))


def _sizes_without(sizes, axis, keepdim):
    if not sizes:
        return ()
    return sizes[:axis] + ((1,) if keepdim else ()) + sizes[axis + 1:]


def _bool_arg(v, what):
    if type(v) is bool or isinstance(v, _np.bool_):
        return bool(v)
    raise TypeError(f"{what} must be a bool, got {type(v).__name__}: {v!r}")


def _fallback_multi(counter, inputs, results):
    """An op LTC runs eagerly whose outputs are several tensors: counted as ``counter``, its tensor inputs copied
    to the CPU (computed as by ``numpy()``), each output copied back (``lazy::_to_copy`` each)."""
    _metrics.Counter(counter).add(1)
    T._c_to_copy[0] += len(inputs)
    vals = [tensor_value(t) for t in inputs]
    return [T.tensor(_np.asarray(r).astype(D.CODE_TO_NP[c], copy=False)) for r, c in zip(results(*vals), _codes(inputs))]


def _codes(inputs):
    return (inputs[0]._shape.dtype, D.INT64)


# ---------------------------------------------------------------- topk / sort / argsort
def topk(input, k, dim=-1, largest=True, sorted=True):
    """torch.topk: the ``k`` largest (``largest=False``: smallest) elements along ``dim`` and their indices."""
    _check_tensor(input, "topk() input")
    s = input._shape
    k = _index(k, "topk(): k")
    d = _index(dim, "topk(): dim")
    largest, sorted = _bool_arg(largest, "topk(): largest"), _bool_arg(sorted, "topk(): sorted")
    axis = _norm_dim(d, len(s.sizes))
    n = s.sizes[axis] if s.sizes else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if s.dtype == D.BOOL:
        raise RuntimeError("\"topk_cpu\" not implemented for 'Bool'")
    sizes = s.sizes[:axis] + (k,) + s.sizes[axis + 1:] if s.sizes else ()
    if "aten::topk" in T._forced:
        # force_fallback reaches topk (LTC's generated lowering checks it; sort, max.dim and the norms' /
        # losses' multi-output nodes are traced whatever it says, as here): eager, counter aten::topk
        v, i = _fallback_multi("aten::topk", [input], lambda x: _np_topk(x, axis if x.ndim else None, k, largest))
        return topk_t(v, i)
    _fn_counter("topk")[0] += 1
    v, i = _emit_multi("aten::topk", (input._ir(),), ((s.dtype, sizes), (D.INT64, sizes)), _seed(k, d, largest, sorted),
                       "aten::topk", (axis, k, largest), f"k={k}, dim={d}, largest={int(largest)}, sorted={int(sorted)}")
    return topk_t(v, i)


def _sort_args(input, dim, descending, stable, what):
    _check_tensor(input, f"{what}() input")
    d = _index(dim, f"{what}(): dim")
    descending = _bool_arg(descending, f"{what}(): descending")
    axis = _norm_dim(d, len(input._shape.sizes))
    if stable is not None:
        stable = _bool_arg(stable, f"{what}(): stable")
    return d, axis, descending, stable


def _sort(input, dim, descending, stable, what):
    d, axis, descending, stable = _sort_args(input, dim, descending, stable, what)
    s = input._shape
    if stable is not None:        # sort(stable=...): aten::sort.stable, no lazy kernel (eager)
        v, i = _fallback_multi("aten::sort.stable", [input],
                               lambda x: _np_sort(x, axis if x.ndim else None, descending))
        return sort_t(v, i)
    _fn_counter("sort")[0] += 1
    v, i = _emit_multi("aten::sort", (input._ir(),), ((s.dtype, s.sizes), (D.INT64, s.sizes)), _seed(d, descending),
                       "aten::sort", (axis, descending), f"dim={d}, descending={int(descending)}")
    return sort_t(v, i)


def sort(input, dim=-1, descending=False, stable=None):
    """torch.sort: (values, indices) sorted along ``dim``."""
    return _sort(input, dim, descending, stable, "sort")


def argsort(input, dim=-1, descending=False, stable=False):
    """torch.argsort: the indices of sort (``stable=True``: of aten::sort.stable, eager)."""
    return _sort(input, dim, descending, True if _bool_arg(stable, "argsort(): stable") else None, "argsort")[1]


# ---------------------------------------------------------------- max / min over a dim
def max_dim(input, dim, keepdim=False):
    """max(dim, keepdim): (values, indices), traced as LTC's two-output aten::max node."""
    _check_tensor(input, "max() input")
    s = input._shape
    d = _index(dim, "max(): dim")
    keepdim = _bool_arg(keepdim, "max(): keepdim")
    axis = _norm_dim(d, len(s.sizes))
    if s.sizes and not s.sizes[axis]:
        raise IndexError(f"max(): Expected reduction dim {axis} to have non-zero size.")
    sizes = _sizes_without(s.sizes, axis, keepdim)
    _fn_counter("max")[0] += 1
    v, i = _emit_multi("aten::max", (input._ir(),), ((s.dtype, sizes), (D.INT64, sizes)), _seed(d, keepdim),
                       "aten::max.dim", (axis if s.sizes else None, keepdim), f"dim={d}, keepdim={int(keepdim)}")
    return max_t(v, i)


def min_dim(input, dim, keepdim=False):
    """min(dim, keepdim): (values, indices); no lazy kernel in LTC (eager, counter aten::min.dim)."""
    _check_tensor(input, "min() input")
    s = input._shape
    d = _index(dim, "min(): dim")
    keepdim = _bool_arg(keepdim, "min(): keepdim")
    axis = _norm_dim(d, len(s.sizes))
    if s.sizes and not s.sizes[axis]:
        raise IndexError(f"min(): Expected reduction dim {axis} to have non-zero size.")
    v, i = _fallback_multi("aten::min.dim", [input],
                           lambda x: _np_min_max(x, axis if x.ndim else None, keepdim, False))
    return min_t(v, i)


# ---------------------------------------------------------------- kernels
def _order(x, axis, descending):
    """Stable sorting indices of ``x`` along ``axis`` (NaN the largest, as torch)."""
    if x.dtype.kind == "f":
        nan = _np.isnan(x)
        if descending:
            key = _np.where(nan, 0, -x.astype(_np.float64))
            return _np.lexsort((key, ~nan), axis=axis)
        return _np.argsort(x, axis=axis, kind="stable")      # numpy puts NaN last, as torch
    if descending:
        return _np.argsort(-x.astype(_np.int64) if x.dtype != _np.uint64 else ~x, axis=axis, kind="stable")
    return _np.argsort(x, axis=axis, kind="stable")


def _np_sort(x, axis, descending):
    if axis is None:                 # a 0-dim tensor: itself, index 0
        return x.copy(), _np.zeros((), _np.int64)
    if not x.size:
        return x.copy(), _np.zeros(x.shape, _np.int64)
    idx = _order(x, axis, descending)
    return _np.take_along_axis(x, idx, axis), idx.astype(_np.int64)


def _np_topk(x, axis, k, largest):
    if x.ndim == 0:
        return (x.copy(), _np.zeros((), _np.int64)) if k else (x.reshape(()), _np.zeros((), _np.int64))
    idx = _order(x, axis, largest)
    idx = _np.take(idx, _np.arange(k), axis=axis)
    return _np.take_along_axis(x, idx, axis), idx.astype(_np.int64)


def _np_min_max(x, axis, keepdim, is_max):
    if axis is None:
        return x.copy(), _np.zeros((), _np.int64)
    f, g = (_np.max, _np.argmax) if is_max else (_np.min, _np.argmin)
    v = f(x, axis=axis, keepdims=keepdim)        # NaN propagates, argmax / argmin find the first NaN: torch's
    i = g(x, axis=axis, keepdims=keepdim)
    return _np.asarray(v), _np.asarray(i, _np.int64)


helpers(_sort_k=_np_sort, _topk_k=_np_topk, _min_max_k=_np_min_max)


def _k_topk(k):
    axis, kk, largest = k.attrs[1]
    k.line(f"{k.out} = _topk_k({k.x}, {axis if k.opnodes[0].shapes[0].sizes else None}, {kk}, {largest})")


def _k_sort(k):
    axis, descending = k.attrs[1]
    k.line(f"{k.out} = _sort_k({k.x}, {axis if k.opnodes[0].shapes[0].sizes else None}, {descending})")


def _k_max_dim(k):
    axis, keepdim = k.attrs[1]
    k.line(f"{k.out} = _min_max_k({k.x}, {axis}, {keepdim}, True)")


# ---------------------------------------------------------------- names
def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _topk_m(self, k, dim=-1, largest=True, sorted=True):
    return topk(self, k, dim, largest, sorted)


def _topk_f(input, k, dim=-1, largest=True, sorted=True):
    return topk(_input(input, "topk"), k, dim, largest, sorted)


def _sort_m(self, dim=-1, descending=False, stable=None):
    return _sort(self, dim, descending, stable, "sort")


def _sort_f(input, dim=-1, descending=False, stable=None):
    return _sort(_input(input, "sort"), dim, descending, stable, "sort")


def _argsort_m(self, dim=-1, descending=False, stable=False):
    return argsort(self, dim, descending, stable)


def _argsort_f(input, dim=-1, descending=False, stable=False):
    return argsort(_input(input, "argsort"), dim, descending, stable)


declare("topk", {"topk": _topk_m}, {"topk": _topk_f}, [Kernel("aten::topk", _k_topk)])
declare("sort", {"sort": _sort_m}, {"sort": _sort_f}, [Kernel("aten::sort", _k_sort)])
declare("argsort", {"argsort": _argsort_m}, {"argsort": _argsort_f})
declare("max.dim", {}, {}, [Kernel("aten::max.dim", _k_max_dim)])
classes(**{"aten::topk": "Topk", "aten::sort": "Sort", "aten::max.dim": "MaxDim"})
