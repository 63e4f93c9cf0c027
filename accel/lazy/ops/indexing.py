"""Advanced indexing and scatter / gather by index, as torch 2.13 LTC records them.

- ``t[index]`` with integer or boolean index tensors (Python lists too, with ints, slices, None, ``...`` and
  Python bools around them): torch's indexing applies the basic parts as views first (select / slice /
  unsqueeze), then ``aten::index.Tensor`` with the index tensors, which LTC has no lazy kernel for: it runs
  eagerly (the result is data; boolean masks give data-dependent shapes).  A 0-dim integer index tensor is
  read (``.item()``, counter ``aten::_local_scalar_dense``) and selects.
- ``t[index] = value`` with index tensors, ``index_put`` / ``index_put_``: ``aten::_index_put_impl_``, eager,
  on the basic-indexed view (written back into ``t`` as in-place updates of views are); the view is computed as
  a graph even when it holds data (torch clones it first), the result is copied back
  (``lazy::_copy_from_and_resize``); a Python number value is a 0-dim ``fill_`` of ``t``'s dtype.
- ``masked_select``, ``nonzero`` (data-dependent shapes), ``scatter`` (``.src`` / ``.value``), ``index_add``:
  eager.  ``scatter_add`` is traced.  ``one_hot``: zeros, unsqueeze, then an eager ``scatter_``.
- ``split`` / ``chunk`` / ``unbind``: eager in LTC (``aten::split_copy.Tensor``, ``aten::split_with_sizes_copy``,
  ``aten::unbind_copy.int``).  torch 2.13 LTC's results of these TensorList fallbacks crash the process when
  read as IR (tensor id, text, hash, any op: a segfault), only ``.cpu()`` works; here they are data tensors
  (the input's copy to the CPU counted, the outputs' copies back not, as LTC counts them).
"""
import warnings

import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy import metrics as _metrics
from accel.lazy import tensors as T
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import compute_nodes, fallback, tensor_value
from accel.lazy.inplace import commit, sync
from accel.lazy.ops.factories import _empty, zeros
from accel.lazy.ops.inplace import fill_
from accel.lazy.ops.selection import _check_bounds
from accel.lazy.ops.views import (
    _alias, _getitem, _select, _setitem_m, _slice, _slice_bounds, _unsqueeze, _view)
from accel.lazy.tensors import LazyTensor, _check_tensor, _emit, _fn_counter, _index, _norm_dim, _seed

_INDEX_CODES = (D.INT64, D.INT32, D.UINT8, D.BOOL)
_c_copy_resize = T._cell("lazy::_copy_from_and_resize")
_c_synced = T._cell("SyncedTensorsWithIR")
_c_local_scalar = T._cell("aten::_local_scalar_dense")


def _item(t):
    """``t.item()`` as torch runs it on the lazy device: aten::_local_scalar_dense (a copy to the CPU)."""
    _c_local_scalar[0] += 1
    T._c_to_copy[0] += 1
    return tensor_value(t).reshape(-1)[0].item()


def _data_tensor(a):
    """A tensor holding ``a`` written into a lazy tensor by an eager kernel (not counted as a _to_copy)."""
    t = T.tensor(a)
    T._c_to_copy[0] -= 1
    return t


# ---------------------------------------------------------------- parsing an index
def _is_advanced(index):
    items = index if type(index) is tuple else (index,)
    for i in items:
        if type(i) is LazyTensor or isinstance(i, (list, _np.ndarray, bool, _np.bool_)):
            return True
    return False


def _as_index_tensor(v):
    """A Python list / numpy array index as torch makes it: a Long (or Bool) tensor on the lazy device."""
    try:
        a = _np.asarray(v)
    except ValueError:
        a = None
    if a is None or a.dtype.kind not in "biu" and a.size:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if a.dtype.kind != "b":
        a = a.astype(_np.int64)
    return T.tensor(a)


def _items(index):
    if type(index) is tuple:
        return index
    if type(index) is list and any(type(i) is LazyTensor or i is None or i is Ellipsis or type(i) is slice
                                   or isinstance(i, (list, tuple)) for i in index):
        return tuple(index)          # torch treats such a sequence as a tuple of indices
    return (index,)


def _is_mask(t):
    return t._shape.dtype in (D.BOOL, D.UINT8)


def _apply_slicing(a, index):
    """torch's applySlicing: (the view after the ints / slices / None / ... / Python bools, the index tensors by
    the dim of that view they index).  Validates what does not depend on values."""
    items = []
    for i in _items(index):
        if isinstance(i, (list, _np.ndarray)):
            i = _as_index_tensor(i)
        elif type(i) is LazyTensor and i._shape.dtype not in _INDEX_CODES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        items.append(i)
    nd = len(a._shape.sizes)
    specified = 0
    for i in items:
        if i is None or i is Ellipsis or isinstance(i, (bool, _np.bool_)):
            continue
        if type(i) is LazyTensor and _is_mask(i):
            specified += len(i._shape.sizes)
        elif type(i) is slice or type(i) is LazyTensor or hasattr(i, "__index__"):
            specified += 1
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(i).__name__})")
    if specified > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    r = a
    dim = 0
    found = []                      # (dim, index tensor)
    for i in items:
        if i is None:
            r = _unsqueeze(r, dim)
            dim += 1
        elif i is Ellipsis:
            dim += nd - specified
        elif type(i) is slice:
            start, stop, step = _slice_bounds(i)
            if not (start == 0 and r._shape.sizes[dim] <= stop and step == 1):
                r = _slice(r, dim, start, stop, step)
            dim += 1
        elif isinstance(i, (bool, _np.bool_)):
            r = _unsqueeze(r, dim)
            found.append((dim, _bool_index(bool(i))))
            dim += 1
        elif type(i) is LazyTensor:
            if not i._shape.sizes:            # a 0-dim index tensor is read now
                if _is_mask(i):
                    r = _unsqueeze(r, dim)
                    found.append((dim, _bool_index(bool(_item(i)))))
                    dim += 1
                else:
                    r = _select(r, dim, _item(i), True, "getitem")
                continue
            if _is_mask(i):
                ms, rs = i._shape.sizes, r._shape.sizes
                for j, n in enumerate(ms):
                    if n != rs[dim + j]:
                        raise IndexError(f"The shape of the mask {list(ms)} at index {j} does not match the shape "
                                         f"of the indexed tensor {list(rs)} at index {dim + j}")
                found.append((dim, i))
                dim += len(ms)
            else:
                found.append((dim, i))
                dim += 1
        else:
            r = _select(r, dim, _index(i, "index"), True, "getitem")
    ints = [t._shape.sizes for _, t in found if not _is_mask(t)]
    if len(ints) > 1:
        try:
            _np.broadcast_shapes(*ints)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(str(list(s)) for s in ints)) from None
    return r, found


def _bool_index(flag):
    """boolToIndexingTensor: zeros({1}) for True, an empty Long tensor for False."""
    return zeros(1, dtype=D.CODE_TO_NP[D.INT64]) if flag else _empty((0,), D.INT64)


def _np_key(x_ndim, dims, idx):
    key = [slice(None)] * (max(dims) + 1 if dims else 0)
    for d, t in zip(dims, idx):
        key[d] = t.astype(bool) if t.dtype == _np.uint8 else t
    return tuple(key)


def _torch_index_error(exc):
    """numpy's IndexError of an out-of-range index in torch's words."""
    return IndexError(str(exc).replace(" axis ", " dimension "))


def _eager_index(args, dims):
    x, idx = args[0], args[1:]
    try:
        return _np.asarray(x[_np_key(x.ndim, dims, idx)])
    except IndexError as e:
        # torch checks each index as it copies an element: an empty result checks none
        shape = _empty_result_shape(x, dims, idx)
        if shape is not None:
            return _np.empty(shape, x.dtype)
        raise _torch_index_error(e) from None


def _empty_result_shape(x, dims, idx):
    """The result's shape when it has no elements (found on a stand-in with every integer index 0), else None."""
    x = _np.asarray(x)
    dummy = _np.empty(tuple(max(n, 1) if d in dims else n for d, n in enumerate(x.shape)), _np.uint8)
    try:
        shape = dummy[_np_key(x.ndim, dims, [_np.zeros_like(i) if _np.asarray(i).dtype.kind == "i" else i
                                             for i in idx])].shape
    except IndexError:
        return None
    return shape if 0 in shape else None


def getitem(self, index):
    """Tensor.__getitem__: basic indexing traced (accel.lazy.ops.views), index tensors through aten::index.Tensor."""
    if not _is_advanced(index):
        return _getitem(self, index)
    r, found = _apply_slicing(self, index)
    if not found:
        return _alias(r) if r is self else r
    dims = tuple(d for d, _ in found)
    return fallback("aten::index.Tensor", "index", [r] + [t for _, t in found], r._shape.dtype, (dims,))


# ---------------------------------------------------------------- index_put
def _value_sizes(value):
    """slicePrefix1sSize: the value's sizes without leading 1s (torch views the value so before index_put_)."""
    s = value._shape.sizes
    k = 0
    while k < len(s) and s[k] == 1:
        k += 1
    return s[k:]


def _index_put(target, dims, idx, value, accumulate):
    """aten::_index_put_impl_ (eager): the new value of ``target`` (a data tensor)."""
    ts = target._shape.sizes
    for d, t in zip(dims, idx):          # torch's AdvancedIndex checks this before the dtypes
        if d < len(ts) and ts[d] == 0 and t._shape.dtype not in (D.BOOL, D.UINT8) and 0 not in t._shape.sizes:
            raise IndexError("index is out of bounds for dimension with size 0")
    if value._shape.dtype != target._shape.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_tname(target._shape.dtype)} for the destination and {_tname(value._shape.dtype)} for "
                           f"the source.")
    _metrics.Counter("aten::_index_put_impl_").add(1)
    T._c_to_copy[0] += 2 + len(idx)
    # torch clones the target first: its IR (a device-data node when it holds data) is computed as a graph
    _c_synced[0] += 1
    x = compute_nodes([target._ir()])[0]
    ivals = [tensor_value(t) for t in idx]
    v = tensor_value(value)
    out = _np.array(x, copy=True)
    key = _np_key(out.ndim, dims, ivals)
    try:
        if accumulate:
            _np.add.at(out, key, v)
        else:
            out[key] = v
    except IndexError as e:
        if _empty_result_shape(x, dims, ivals) is None:
            raise _torch_index_error(e) from None
        # no element selected: torch checks each index as it writes an element, so none is checked
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(x[key].shape)}") from None
    _c_copy_resize[0] += 1
    return _data_tensor(out)


def _tname(code):
    return {D.FLOAT32: "Float", D.FLOAT64: "Double", D.FLOAT16: "Half", D.INT64: "Long", D.INT32: "Int",
            D.INT16: "Short", D.INT8: "Char", D.UINT8: "Byte", D.BOOL: "Bool"}.get(code, str(code))


def _value_tensor(self, value):
    if type(value) is LazyTensor:
        vs = _value_sizes(value)
        if vs != value._shape.sizes:
            value = _view(value, vs, "view_copy_symint", False)
        return value
    v = T._as_number(value)
    if v is None:
        raise TypeError(f"t[...] = value: value must be a lazy tensor or a Python number, got "
                        f"{type(value).__name__}: {value!r}")
    return fill_(_empty((), self._shape.dtype), v)     # at::scalar_tensor on the lazy device


def setitem(self, index, value):
    """Tensor.__setitem__: basic indexing through views and copy_ (accel.lazy.ops.views), index tensors through
    an in-place index_put_ of the indexed view."""
    if not _is_advanced(index):
        return _setitem_m(self, index, value)
    _check_tensor(self, "__setitem__ self")
    sync(self)
    value = _value_tensor(self, value)
    r, found = _apply_slicing(self, index)
    if not found:
        r.copy_(value)
        return
    dims = tuple(d for d, _ in found)
    commit(r, _index_put(r, dims, [t for _, t in found], value, False))


def _put_indices(self, indices, what):
    if type(indices) not in (tuple, list):
        raise TypeError(f"{what}(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    cover = 0
    for k, t in enumerate(indices):
        if type(t) is not LazyTensor:
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type(t).__name__}")
        if t._shape.dtype not in _INDEX_CODES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        cover += len(t._shape.sizes) if _is_mask(t) else 1
    nd = len(self._shape.sizes)
    if cover > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    dims, d = [], 0
    for t in indices:
        dims.append(d)
        d += len(t._shape.sizes) if _is_mask(t) else 1
    return tuple(dims), list(indices)


def index_put_(self, indices, values, accumulate=False):
    _check_tensor(self, "index_put_() self")
    _check_tensor(values, "index_put_() values")
    sync(self)
    dims, idx = _put_indices(self, indices, "index_put_")
    return commit(self, _index_put(self, dims, idx, values, bool(accumulate)))


def index_put(self, indices, values, accumulate=False):
    _check_tensor(self, "index_put() self")
    _check_tensor(values, "index_put() values")
    dims, idx = _put_indices(self, indices, "index_put")
    return _index_put(self, dims, idx, values, bool(accumulate))


# ---------------------------------------------------------------- masked_select / nonzero
def masked_select(input, mask):
    _check_tensor(input, "masked_select() input")
    _check_tensor(mask, "masked_select() mask")
    if mask._shape.dtype != D.BOOL:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask")
    T._broadcast(input._shape.sizes, mask._shape.sizes)
    return fallback("aten::masked_select", "masked_select", [input, mask], input._shape.dtype)


def _eager_masked_select(args):
    x, m = _np.broadcast_arrays(args[0], args[1])
    return x[m]


def nonzero(input, as_tuple=False):
    _check_tensor(input, "nonzero() input")
    if as_tuple:            # torch's nonzero_numpy: nonzero().unbind(1), a 0-dim input unsqueezed first
        return _unbind(nonzero(input if input._shape.sizes else _unsqueeze(input, 0)), 1)
    return fallback("aten::nonzero", "nonzero", [input], D.INT64)


def _eager_nonzero(args):
    x = args[0]
    if x.ndim == 0:
        return _np.zeros((1 if x.item() else 0, 0), _np.int64)
    return _np.argwhere(x).astype(_np.int64)


# ---------------------------------------------------------------- scatter / scatter_add / index_add
def _scatter_checks(self, dim, index, src, what):
    _check_tensor(self, f"{what}() self")
    _check_tensor(index, f"{what}() index")
    if index._shape.dtype not in (D.INT64, D.INT32):      # (torch's scatter_gather_dtype_check names "scatter")
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    d = _index(dim, f"{what}(): dim")
    s = self._shape.sizes
    axis = _norm_dim(d, len(s))
    isz = index._shape.sizes
    if len(isz) != len(s) and not (len(s) == 0 and len(isz) <= 1) and index._shape.sizes != ():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None:
        if src._shape.dtype != self._shape.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        if len(src._shape.sizes) != len(isz) and src._shape.sizes:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for i, n in enumerate(isz):
        if i < len(s) and i != axis and n > s[i]:
            raise RuntimeError(f"Expected index {list(isz)} to be no larger than self {list(s)} apart from "
                               f"dimension {axis}")
        if src is not None and src._shape.sizes and n > src._shape.sizes[i]:
            raise RuntimeError(f"Expected index {list(isz)} to be no larger than src {list(src._shape.sizes)}")
    return d, axis


_warned_reduce = []


def scatter(self, dim, index, src=None, value=None, reduce=None):
    """Tensor.scatter(dim, index, src) / scatter(dim, index, value): eager (aten::scatter.src / .value); with
    reduce='add' / 'multiply', eager aten::scatter.reduce / .value_reduce (torch warns once that the reduce
    argument with a tensor src is deprecated)."""
    if src is None and value is None:
        raise TypeError("scatter() missing 1 required positional argument: 'src' or 'value'")
    if src is not None and type(src) is not LazyTensor:
        value, src = src, None
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if src is not None:
        _, axis = _scatter_checks(self, dim, index, src, "scatter")
        if reduce is None:
            return fallback("aten::scatter.src", "scatter", [self, index, src], self._shape.dtype, (axis,))
        if not _warned_reduce:
            _warned_reduce.append(True)
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
                          "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                          "options.", UserWarning, stacklevel=2)
        return fallback("aten::scatter.reduce", "scatter_reduce", [self, index, src], self._shape.dtype,
                        (axis, _LEGACY_REDUCE[reduce], True))
    v = T._as_number(value)
    if v is None:
        raise TypeError(f"scatter(): value must be a lazy tensor or a Python number, got {type(value).__name__}: "
                        f"{value!r}")
    _, axis = _scatter_checks(self, dim, index, None, "scatter")
    if reduce is None:
        return fallback("aten::scatter.value", "scatter_value", [self, index], self._shape.dtype, (axis, v))
    return fallback("aten::scatter.value_reduce", "scatter_reduce", [self, index, v], self._shape.dtype,
                    (axis, _LEGACY_REDUCE[reduce], True))


_LEGACY_REDUCE = {"add": "sum", "multiply": "prod"}
_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """Tensor.scatter_reduce(dim, index, src, reduce, include_self=True): eager (aten::scatter_reduce.two)."""
    _check_tensor(src, "scatter_reduce() src")
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if type(include_self) is not bool:
        raise TypeError(f"scatter_reduce(): argument 'include_self' must be bool, not {type(include_self).__name__}")
    _, axis = _scatter_checks(self, dim, index, src, "scatter_reduce")
    return fallback("aten::scatter_reduce.two", "scatter_reduce", [self, index, src], self._shape.dtype,
                    (axis, reduce, include_self))


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    _check_tensor(self, "scatter_reduce_() self")
    sync(self)
    return commit(self, scatter_reduce(self, dim, index, src, reduce, include_self=include_self))


def scatter_(self, dim, index, src=None, value=None, reduce=None):
    _check_tensor(self, "scatter_() self")
    sync(self)
    return commit(self, scatter(self, dim, index, src, value, reduce))


def scatter_add(self, dim, index, src):
    """Tensor.scatter_add: traced (aten::scatter_add(self, index, src), dim)."""
    _check_tensor(src, "scatter_add() src")
    d, axis = _scatter_checks(self, dim, index, src, "scatter_add")
    s = self._shape
    _fn_counter("scatter_add")[0] += 1
    return _emit("aten::scatter_add", (self._ir(), index._ir(), src._ir()), s.dtype, s.sizes, _seed(d),
                 "aten::scatter_add", axis, f"dim={d}")


def scatter_add_(self, dim, index, src):
    _check_tensor(self, "scatter_add_() self")
    sync(self)
    return commit(self, scatter_add(self, dim, index, src))


def _grid(idx, axis):
    """The full coordinates scatter writes to: ``idx`` along ``axis``, the element's own position elsewhere."""
    g = list(_np.indices(idx.shape, sparse=True))
    g[axis] = idx
    return tuple(g)


_UFUNC_AT = {"sum": _np.add, "mean": _np.add, "prod": _np.multiply, "amax": _np.maximum, "amin": _np.minimum}


def _np_scatter(x, idx, src, axis, reduce=None, include_self=True):
    """scatter / scatter_add / scatter(reduce=) / scatter_reduce on numpy: a copy of ``x`` with the ``src`` values
    (a scalar broadcasts) written to the indexed elements (``reduce`` None), or reduced into them with ``reduce``
    ("sum", "prod", "mean", "amax", "amin"; ``include_self=False``: those elements start from the reduction's
    identity, so x takes no part; ``mean`` divides by the count, x counted when included, flooring integers)."""
    out = _np.array(x, copy=True)
    if out.ndim == 0:
        r = _np_scatter(out.reshape(1), _np.asarray(idx).reshape(-1),
                        _np.asarray(src).reshape(-1) if _np.ndim(src) else src, 0, reduce, include_self)
        return r.reshape(())
    if not idx.size:
        return out
    _check_bounds(idx, out.shape[axis], axis)
    if _np.ndim(src):
        src = _np.asarray(src)[tuple(slice(0, n) for n in idx.shape)]
    else:
        src = _np.broadcast_to(_np.asarray(src).astype(out.dtype), idx.shape)     # (an int wraps, as torch casts)
    g = _grid(idx, axis)
    if reduce is None:
        out[g] = src
        return out
    if not include_self:
        if reduce in ("sum", "mean"):
            out[g] = 0
        elif reduce == "prod":
            out[g] = 1
        elif out.dtype.kind == "f":
            out[g] = -_np.inf if reduce == "amax" else _np.inf
        elif out.dtype == bool:
            out[g] = reduce == "amin"
        else:
            info = _np.iinfo(out.dtype)
            out[g] = info.min if reduce == "amax" else info.max
    _UFUNC_AT[reduce].at(out, g, src.astype(out.dtype, copy=False))
    if reduce == "mean":
        count = _np.zeros(out.shape, _np.int64)
        if include_self:
            count += 1
        _np.add.at(count, g, 1)
        count = _np.maximum(count, 1)
        out = (_np.floor_divide(out, count) if out.dtype.kind in "iu" else out / count).astype(out.dtype)
    return out


def _eager_scatter(args, axis):
    return _np_scatter(args[0], args[1], args[2], axis)


def _eager_scatter_reduce(args, axis, reduce, include_self):
    return _np_scatter(_np.asarray(args[0]), _np.asarray(args[1]), args[2], axis, reduce, include_self)


def _eager_scatter_value(args, axis, v):
    return _np_scatter(args[0], args[1], v, axis)


def _k_scatter_add(k):
    k.line(f"{k.out} = _scatter_k({k.ins[0]}, {k.ins[1]}, {k.ins[2]}, {k.attrs[1]}, 'sum')")


helpers(_scatter_k=_np_scatter)


def index_add(self, dim, index, source, alpha=1):
    """Tensor.index_add: eager (aten::index_add)."""
    _check_tensor(self, "index_add() self")
    _check_tensor(index, "index_add() index")
    _check_tensor(source, "index_add() source")
    if index._shape.dtype not in (D.INT64, D.INT32):
        raise RuntimeError("index_add_(): Expected dtype int32/int64 for index")
    if len(index._shape.sizes) > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    if source._shape.dtype != self._shape.dtype:
        raise RuntimeError(f"index_add_(): self ({_tname(self._shape.dtype)}) and source "
                           f"({_tname(source._shape.dtype)}) must have the same scalar type")
    s = self._shape.sizes
    axis = _norm_dim(_index(dim, "index_add(): dim"), len(s))
    n = index._shape.sizes[0] if index._shape.sizes else 1
    ss = source._shape.sizes
    if (ss[axis] if ss else 1) != n:
        raise IndexError("index_add_(): Number of indices should be equal to source.size(dim)")
    if len(ss) != len(s) or any(a != b for i, (a, b) in enumerate(zip(ss, s)) if i != axis):
        raise RuntimeError(f"index_add_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {list(s[:axis] + s[axis + 1:])} and source slice shape: "
                           f"{list(ss[:axis] + ss[axis + 1:])}")
    a = T._as_number(alpha)
    if a is None:
        raise TypeError(f"index_add(): alpha must be a Python number, got {type(alpha).__name__}: {alpha!r}")
    return fallback("aten::index_add", "index_add", [self, index, source], self._shape.dtype, (axis, a))


def _eager_index_add(args, axis, alpha):
    x, idx, src = args
    out = _np.array(x, copy=True)
    if out.ndim == 0:
        return out + src * alpha
    if out.ndim > 1 and (idx.size == 0 or out.size == 0):
        return out                       # torch returns before it checks any index
    if out.ndim == 1 and ((idx < 0) | (idx >= out.shape[0])).any():
        raise IndexError("index out of range in self")      # torch's 1-d index_add checks in its own words
    _check_bounds(idx.reshape(-1), out.shape[axis], axis)
    key = (slice(None),) * axis + (idx.reshape(-1),)
    _np.add.at(out, key, (src * alpha).astype(out.dtype) if alpha != 1 else src)
    return out


def index_add_(self, dim, index, source, alpha=1):
    _check_tensor(self, "index_add_() self")
    sync(self)
    return commit(self, index_add(self, dim, index, source, alpha))


# ---------------------------------------------------------------- one_hot
def one_hot(tensor, num_classes=-1):
    """torch.nn.functional.one_hot as torch runs it on the lazy device: zeros, unsqueeze(-1), scatter_ (eager);
    ``num_classes=-1`` reads ``tensor.max()`` first."""
    _check_tensor(tensor, "one_hot() tensor")
    if tensor._shape.dtype != D.INT64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    n = _index(num_classes, "one_hot(): num_classes")
    shape = tensor._shape.sizes
    if not tensor.numel():
        if n <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _empty(shape + (n,), D.INT64)
    if n == -1:
        n = _item(tensor.max()) + 1
    elif n < 1:             # (torch's check off the CPU: the class values themselves are left to scatter_)
        raise RuntimeError("num_classes should be positive")
    ret = zeros(*(shape + (n,)), dtype=D.CODE_TO_NP[D.INT64])
    return scatter_(ret, -1, _unsqueeze(tensor, -1), 1)


# ---------------------------------------------------------------- split / chunk / unbind
def _list_fallback(counter, name, a, params):
    """A TensorList op LTC runs eagerly: the input's copy to the CPU is counted, the outputs' copies back are not
    (torch 2.13 LTC's outputs of these fallbacks are not usable as IR: see the module docstring)."""
    _metrics.Counter(counter).add(1)
    T._c_to_copy[0] += 1
    x = tensor_value(a)
    parts = _EAGER_LISTS[name](x, *params)
    out = []
    for p in parts:
        t = _data_tensor(_np.ascontiguousarray(p))
        t._handle, t._src = t._src, None      # device data already: not one of the tensors mark_step uploads
        out.append(t)
    return tuple(out)


def _split(a, split_size_or_sections, dim=0):
    _check_tensor(a, "split() input")
    s = a._shape.sizes
    if not s:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _index(dim, "split(): dim")
    axis = _norm_dim(d, len(s))
    n = s[axis]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [_index(v, "split(): split_sizes") for v in split_size_or_sections]
        if any(v < 0 for v in sizes) or sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {axis}), but got split_sizes={sizes}")
        return _list_fallback("aten::split_with_sizes_copy", "split", a, (axis, sizes))
    k = _index(split_size_or_sections, "split(): split_size")
    if k < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={k}")
    if k == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    sizes = [k] * (n // k) + ([n % k] if n % k else []) if k else [0]
    return _list_fallback("aten::split_copy.Tensor", "split", a, (axis, sizes))


def _chunk(a, chunks, dim=0):
    _check_tensor(a, "chunk() input")
    c = _index(chunks, "chunk(): chunks")
    if c <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {c}")
    s = a._shape.sizes
    if not s:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    axis = _norm_dim(_index(dim, "chunk(): dim"), len(s))
    n = s[axis]
    k = -(-n // c)
    return _split(a, k if n else 0, axis) if n or c == 1 else _split(a, [0] * c, axis)


def _unbind(a, dim=0):
    _check_tensor(a, "unbind() input")
    s = a._shape.sizes
    if not s:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    axis = _norm_dim(_index(dim, "unbind(): dim"), len(s))
    return _list_fallback("aten::unbind_copy.int", "unbind", a, (axis,))


def _np_split(x, axis, sizes):
    cuts = _np.cumsum(sizes)[:-1]
    return _np.split(x, cuts, axis=axis)


def _np_unbind(x, axis):
    return [_np.take(x, i, axis=axis) for i in range(x.shape[axis])]


_EAGER_LISTS = {"split": _np_split, "unbind": _np_unbind}


# ---------------------------------------------------------------- names
def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _masked_select_m(self, mask):
    return masked_select(self, mask)


def _masked_select_f(input, mask):
    return masked_select(_input(input, "masked_select"), mask)


def _nonzero_f(input, as_tuple=False):
    return nonzero(_input(input, "nonzero"), as_tuple)


def _scatter_f(input, dim, index, src=None, value=None, reduce=None):
    return scatter(_input(input, "scatter"), dim, index, src, value, reduce)


def _scatter_reduce_f(input, dim, index, src, reduce, *, include_self=True):
    return scatter_reduce(_input(input, "scatter_reduce"), dim, index, src, reduce, include_self=include_self)


def _scatter_add_f(input, dim, index, src):
    return scatter_add(_input(input, "scatter_add"), dim, index, src)


def _index_add_f(input, dim, index, source, alpha=1):
    return index_add(_input(input, "index_add"), dim, index, source, alpha)


def _split_f(tensor, split_size_or_sections, dim=0):
    return _split(_input(tensor, "split"), split_size_or_sections, dim)


def _chunk_f(input, chunks, dim=0):
    return _chunk(_input(input, "chunk"), chunks, dim)


def _unbind_f(input, dim=0):
    return _unbind(_input(input, "unbind"), dim)


declare("getitem", {"__getitem__": getitem, "__setitem__": setitem}, eager={"index": _eager_index})
declare("index_put", {"index_put": index_put, "index_put_": index_put_}, {"index_put": index_put})
declare("masked_select", {"masked_select": _masked_select_m}, {"masked_select": _masked_select_f},
        eager={"masked_select": _eager_masked_select})
declare("nonzero", {"nonzero": nonzero}, {"nonzero": _nonzero_f}, eager={"nonzero": _eager_nonzero})
declare("scatter", {"scatter": scatter, "scatter_": scatter_}, {"scatter": _scatter_f},
        eager={"scatter": _eager_scatter, "scatter_value": _eager_scatter_value,
               "scatter_reduce": _eager_scatter_reduce})
declare("scatter_reduce", {"scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_},
        {"scatter_reduce": _scatter_reduce_f})
declare("scatter_add", {"scatter_add": scatter_add, "scatter_add_": scatter_add_}, {"scatter_add": _scatter_add_f},
        [Kernel("aten::scatter_add", _k_scatter_add)])
declare("index_add", {"index_add": index_add, "index_add_": index_add_}, {"index_add": _index_add_f},
        eager={"index_add": _eager_index_add})
declare("one_hot", {}, {}, nn={"one_hot": one_hot})
declare("split", {"split": _split}, {"split": _split_f})
declare("chunk", {"chunk": _chunk}, {"chunk": _chunk_f})
declare("unbind", {"unbind": _unbind}, {"unbind": _unbind_f})
classes(**{"aten::scatter_add": "ScatterAdd"})
