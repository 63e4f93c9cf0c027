"""Masks and selection: masked_fill, where, logical_and / or / not / xor, isnan / isinf, gather,
index_select and embedding, as torch 2.13 LTC records them (where, the logical ops and isnan / isinf have
no lazy kernel in LTC: they run eagerly, counted as LTC counts them)."""
import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy._optable import FUNCTIONS, Kernel, classes, declare, helpers
from accel.lazy.executor import fallback
from accel.lazy.ops.casts import to_copy as _to_copy
from accel.lazy.ops.factories import full, zeros_like
from accel.lazy.tensors import (
    LazyTensor, _as_number, _broadcast, _check_tensor, _dtype_name, _emit, _fn_counter, _index, _norm_dim, _prio,
    _scalar_code, _irs, _scalar_node, _seed, is_number_operand)

_kernels = _impl.module("_kernels")


def _masked_fill(a, mask, value):
    _check_tensor(a, "masked_fill() input")
    _check_tensor(mask, "masked_fill() mask")
    if mask._shape.dtype != D.BOOL:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.CODE_TO_NP[mask._shape.dtype]}")
    s = a._shape
    if _broadcast(s.sizes, mask._shape.sizes) != s.sizes:
        raise RuntimeError(f"The expanded size of the mask must match the existing size of the tensor at "
                           f"non-singleton dimensions ({list(mask._shape.sizes)} against {list(s.sizes)})")
    v = _as_number(value)
    if v is None:
        if type(value) is LazyTensor:
            raise NotImplementedError("masked_fill with a tensor value is not supported by accel.lazy yet "
                                      "(pass a Python number)")
        raise TypeError(f"masked_fill(): value must be a Python number, got {type(value).__name__}: {value!r}")
    if s.dtype in D.INTS and type(v) is float:
        v_ok = v == v and abs(v) != float("inf")
        if not v_ok:
            raise RuntimeError(f"value cannot be converted to type {D.INT_C_NAMES[s.dtype]} without overflow")
    _fn_counter("masked_fill")[0] += 1
    z = _scalar_node(v)                  # LTC's order: the value, then the tensors right to left
    return _emit("aten::masked_fill", _irs(a, mask) + (z,), s.dtype, s.sizes, None,
                 "aten::masked_fill")


def _scalar_tensor(v):
    """A Python number as torch wraps it for a tensor argument on the lazy device: a 0-dim tensor filled
    with it (empty then fill_), of the number's dtype (Double for a float: a wrapped number)."""
    t = type(v)
    return full((), v, dtype=D.CODE_TO_NP[D.FLOAT64 if t is float else (D.INT64 if t is int else D.BOOL)])


def where(condition, input=None, other=None):
    """torch.where(condition, input, other): no lazy kernel in LTC (eager, counter aten::where.self);
    Python numbers are wrapped as 0-dim tensors first, as torch does.  torch.where(condition) alone is
    nonzero(condition, as_tuple=True) (torch's nonzero_numpy)."""
    if input is None and other is None:
        return FUNCTIONS["nonzero"](condition, as_tuple=True)     # (indexing's: it imports this module)
    if input is None or other is None:
        raise TypeError("where() takes (condition) or (condition, input, other): "
                        f"missing {'input' if input is None else 'other'}")
    _check_tensor(condition, "where() condition")
    if condition._shape.dtype != D.BOOL:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtype_name(condition._shape.dtype)}")
    ops = []
    for name, x in (("input", input), ("other", other)):
        if type(x) is LazyTensor:
            ops.append((x._shape.dtype, _prio(x)))
        else:
            v = _as_number(x)
            if v is None:
                raise TypeError(f"where(): {name} must be a lazy tensor or a Python number, got "
                                f"{type(x).__name__}: {x!r}")
            ops.append((_scalar_code(v), D.WRAPPED))
    sizes = condition._shape.sizes
    for x in (input, other):
        if type(x) is LazyTensor:
            sizes = _broadcast(sizes, x._shape.sizes)
    code = D.result_type(ops)
    args = [condition] + [x if type(x) is LazyTensor else _scalar_tensor(_as_number(x)) for x in (input, other)]
    if (type(input) is LazyTensor) != (type(other) is LazyTensor):
        # where(cond, tensor, number) / where(cond, number, tensor): torch's scalar overloads cast the tensor
        # (not the wrapped number) to the result dtype first, so the fallback runs (and syncs) the cast;
        # tensor / tensor: the tensors
        args = [args[0]] + [x if x._shape.dtype == code or type(given) is not LazyTensor
                            else _to_copy(x, D.CODE_TO_NP[code]) for x, given in zip(args[1:], (input, other))]
    return fallback("aten::where.self", "where", args, code)


def _logical(name, a, b=None):
    _check_tensor(a, f"{name}() input")
    if b is not None:
        _check_tensor(b, f"{name}() other")
        _broadcast(a._shape.sizes, b._shape.sizes)
    _fn_counter("_copy_from_and_resize")[0] += 1
    return fallback(f"aten::{name}.out", name, [a] if b is None else [a, b], D.BOOL)


def _nan_to_num(a, nan=0.0, posinf=None, neginf=None):
    """torch.nan_to_num: no lazy kernel in LTC (eager through its out= form, counter aten::nan_to_num.out)."""
    _check_tensor(a, "nan_to_num() input")
    vals = []
    for what, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None:
            x = _as_number(v)
            if x is None or type(x) is bool:
                raise TypeError(f"nan_to_num(): argument '{what}' must be a float or None, got "
                                f"{type(v).__name__}: {v!r}")
            v = float(x)
        vals.append(v)
    _fn_counter("_copy_from_and_resize")[0] += 1
    return fallback("aten::nan_to_num.out", "nan_to_num", [a], a._shape.dtype, tuple(vals))


def _eager_nan_to_num(args, nan, posinf, neginf):
    x = _np.asarray(args[0])
    if x.dtype.kind != "f":
        return x.copy()
    return _np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _isnan_isinf(name, a):
    _check_tensor(a, f"{name}() input")
    if name == "isinf" and a._shape.dtype in D.FLOATS:
        return a.abs() == float("inf")          # torch's isinf: abs(x) == inf, traced
    if name == "isinf":
        return zeros_like(a, dtype=D.CODE_TO_NP[D.BOOL])
    return fallback("aten::" + name, name, [a], D.BOOL)


def _gather(a, dim, index, sparse_grad=False):
    _check_tensor(a, "gather() input")
    _check_tensor(index, "gather() index")
    if index._shape.dtype not in (D.INT64, D.INT32) and 0 not in index._shape.sizes:   # (checked when non-empty)
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    s = a._shape
    d = _index(dim, "gather(): dim")
    nd = len(s.sizes)
    axis = _norm_dim(d, nd)
    isz = index._shape.sizes
    empty = 0 in isz                    # torch checks the shapes of a non-empty index only
    if len(isz) != max(nd, 1) and not (nd == 0 and len(isz) <= 1) and not empty:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i, (n, m) in enumerate(zip(isz, s.sizes)):
        if i != axis and n > m and not empty:
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(isz)} to be no larger "
                               f"than self {list(s.sizes)} apart from dimension {axis}")
    _fn_counter("gather")[0] += 1
    return _emit("aten::gather", _irs(a, index), s.dtype, isz, _seed(d, bool(sparse_grad)),
                 "aten::gather", axis, f"dim={d}, sparse_grad={int(bool(sparse_grad))}")


def _index_select(a, dim, index):
    _check_tensor(a, "index_select() input")
    _check_tensor(index, "index_select() index")
    if index._shape.dtype not in (D.INT64, D.INT32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if len(index._shape.sizes) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    s = a._shape
    d = _index(dim, "index_select(): dim")
    axis = _norm_dim(d, len(s.sizes))
    n = index._shape.sizes[0] if index._shape.sizes else 1
    sizes = s.sizes[:axis] + (n,) + s.sizes[axis + 1:] if s.sizes else ()
    _fn_counter("index_select")[0] += 1
    return _emit("aten::index_select", _irs(a, index), s.dtype, sizes, _seed(d), "aten::index_select",
                 axis, f"dim={d}")


# torch's legacy tensor type names (toString of a CPU tensor's type), which its argument checks print
# (the types without a legacy name print as their CPU type)
_LEGACY = {D.FLOAT32: "torch.FloatTensor", D.FLOAT64: "torch.DoubleTensor", D.FLOAT16: "torch.HalfTensor",
           D.BFLOAT16: "CPUBFloat16Type", D.INT64: "torch.LongTensor", D.INT32: "torch.IntTensor",
           D.INT16: "torch.ShortTensor", D.INT8: "torch.CharTensor", D.UINT8: "torch.ByteTensor", D.BOOL: "CPUBoolType"}


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """torch.nn.functional.embedding: rows of ``weight`` (2-D) picked by the integer tensor ``input``."""
    _check_tensor(input, "embedding() input")
    _check_tensor(weight, "embedding() weight")
    if max_norm is not None:
        raise NotImplementedError("embedding(max_norm=...) renormalises the weight in place: not supported by "
                                  "accel.lazy")
    ws = weight._shape.sizes
    if padding_idx is None:
        pidx = -1
    else:
        # torch.nn.functional.embedding checks padding_idx (in Python, reading weight.size(0)) before the kernel
        pidx = _index(padding_idx, "embedding(): padding_idx")
        if pidx and not ws:         # (0 reads no size)
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if not -ws[0] <= pidx < ws[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if pidx < 0:
            pidx += ws[0]
    if input._shape.dtype not in (D.INT64, D.INT32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_LEGACY[input._shape.dtype]} instead (while checking "
                           "arguments for embedding)")
    if len(ws) != 2:
        raise RuntimeError("'weight' must be 2-D")
    _fn_counter("embedding")[0] += 1
    sc, sp = bool(scale_grad_by_freq), bool(sparse)
    return _emit("aten::embedding", _irs(weight, input), weight._shape.dtype,
                 input._shape.sizes + (ws[1],), _seed(pidx, sc, sp), "aten::embedding", None,
                 f"padding_idx={pidx}, scale_grad_by_freq={int(sc)}, sparse={int(sp)}")


# ---------------------------------------------------------------- kernels
def _np_masked_fill(x, mask, v, dt, out=None):
    """``out``: the program's buffer for the result (of x's shape and ``dt``), or None (a new array)."""
    x = _np.asarray(x)
    return _kernels.masked_fill(x, _np.asarray(mask), v, _np.empty(x.shape, dt) if out is None else out)


def _first_bad(idx, n):
    """The first index (in C order) outside [0, n), or None: torch reads no index from the end."""
    bad = (idx < 0) | (idx >= n)
    return int(idx[bad].reshape(-1)[0]) if bad.any() else None


def _check_bounds(idx, n, axis):
    """torch's scatter / gather check of each index against the size ``n`` of dim ``axis``."""
    v = _first_bad(idx, n)
    if v is not None:
        raise RuntimeError(f"index {v} is out of bounds for dimension {axis} with size {n}")


def _gather_order(ishape, xshape, axis):
    """The order in which torch's CPU gather kernel reads the indices, as a permutation of the index's dims (the
    first bad index it meets is the one it reports).  Along the last dim: C order.  Otherwise its TensorIterator
    runs over the index's shape with ``axis`` squashed, the dims it can coalesce (the result's, the index's and
    the input's strides, all contiguous) merged; for each position of the outer dims it reads the whole of
    ``axis`` for each element of the innermost (coalesced) dim."""
    nd = len(ishape)
    if axis >= nd - 1:
        return tuple(range(nd))
    sizes = [1 if d == axis else n for d, n in enumerate(ishape)]

    def contiguous(shape):
        st, acc = [0] * len(shape), 1
        for d in range(len(shape) - 1, -1, -1):
            st[d], acc = acc, acc * shape[d]
        return st
    ops = [contiguous(ishape), contiguous(ishape), contiguous(xshape)]      # result, index, input
    ops[2] = [0 if d == axis else s for d, s in enumerate(ops[2])]
    # TensorIterator.coalesce_dimensions, innermost dim first: the original dims merged into the innermost
    inner, shape, strides = [nd - 1], sizes[nd - 1], [op[nd - 1] for op in ops]
    for d in range(nd - 2, -1, -1):
        if shape == 1 or sizes[d] == 1 or all(shape * st == op[d] for st, op in zip(strides, ops)):
            if shape == 1:
                strides = [op[d] for op in ops]
            shape *= sizes[d]
            inner.append(d)
        else:
            break
    inner = sorted(d for d in inner if d != axis)
    outer = [d for d in range(nd) if d != axis and d not in inner]
    return tuple(outer) + (axis,) + tuple(inner)


def _np_gather(x, idx, axis):
    """torch.gather: out[i][j] = x[idx[i][j]][j] (axis 0); idx may be smaller than x on the other dims."""
    x = _np.asarray(x)
    idx = _np.asarray(idx)
    if idx.size == 0:
        return _np.empty(idx.shape, x.dtype)
    _check_bounds(_np.transpose(idx, _gather_order(idx.shape, x.shape, axis)), x.shape[axis] if x.ndim else 1, axis)
    if x.ndim == 0:
        return _np.broadcast_to(x, idx.shape).copy()
    x = x[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.shape))]
    return _np.take_along_axis(x, idx, axis)


def _np_index_select(x, idx, axis):
    """torch.index_select (and embedding, its dim 0) with torch's CPU kernel's checks of the indices, in its
    words: a tensor of more than one dim and its dim 1 (or with no elements) through check_indexarray_range (a
    RuntimeError), otherwise "index out of range in self" (an IndexError)."""
    x = _np.asarray(x)
    idx = _np.asarray(idx)
    flat = idx.reshape(-1)
    if x.ndim > 1:
        if not flat.size:
            return _np.take(x, flat, axis)
        n = x.shape[axis]
        if x.size == 0 and n == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        v = _first_bad(flat, n)
        if v is not None:
            if axis == 1 or x.size == 0:
                raise RuntimeError(f"INDICES element is out of DATA bounds, id={v} axis_dim={n}")
            raise IndexError("index out of range in self")
        return _np.take(x, flat, axis)
    if _first_bad(flat, x.size) is not None:           # (a 0-dim tensor has one element to pick)
        raise IndexError("index out of range in self")
    if x.ndim == 0:                                      # (one index: checked when traced)
        return x.reshape(1)[flat].reshape(())
    return _np.take(x, flat, 0)                          # (a 0-dim index picks [1], as torch)


helpers(_masked_fill=_np_masked_fill, _gather=_np_gather, _index_select=_np_index_select)


def _k_masked_fill(k):
    out = f", {k.buf}" if k.buf else ""
    k.line(f"{k.out} = _masked_fill({k.ins[0]}, {k.ins[1]}, {k.ins[2]}, {k.dt}{out})")


def _k_gather(k):
    k.line(f"{k.out} = _gather({k.ins[0]}, {k.ins[1]}, {k.attrs[1]})")


def _k_index_select(k):
    k.line(f"{k.out} = _index_select({k.ins[0]}, {k.ins[1]}, {k.attrs[1]})")


def _k_embedding(k):        # torch's embedding: weight.index_select(0, indices.reshape(-1)), viewed back
    k.line(f"{k.out} = _index_select({k.ins[0]}, {k.ins[1]}, 0).reshape({tuple(k.shape.sizes)!r})")


def _eager_where(args):
    return _np.where(args[0], args[1], args[2])


_LOGICAL = {"logical_and": _np.logical_and, "logical_or": _np.logical_or, "logical_xor": _np.logical_xor,
            "logical_not": _np.logical_not}


def _eager_logical(name):
    f = _LOGICAL[name]
    return lambda args: f(*args)


def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _masked_fill_m(self, mask, value):
    return _masked_fill(self, mask, value)


def masked_fill(input, mask, value):
    return _masked_fill(_input(input, "masked_fill"), mask, value)


def _where_m(self, condition, other):
    return where(condition, self, other)


def _gather_m(self, dim, index, sparse_grad=False):
    return _gather(self, dim, index, sparse_grad)


def gather(input, dim, index, sparse_grad=False):
    return _gather(_input(input, "gather"), dim, index, sparse_grad)


def _index_select_m(self, dim, index):
    return _index_select(self, dim, index)


def index_select(input, dim, index):
    return _index_select(_input(input, "index_select"), dim, index)


def _logical_fns(name, unary):
    if unary:
        def m(self):
            return _logical(name, self)

        def f(input):
            return _logical(name, _input(input, name))
    else:
        def m(self, other):
            return _logical(name, self, other)

        def f(input, other):
            return _logical(name, _input(input, name), other)
    m.__name__ = m.__qualname__ = f.__name__ = f.__qualname__ = name
    return m, f


declare("masked_fill", {"masked_fill": _masked_fill_m}, {"masked_fill": masked_fill},
        [Kernel("aten::masked_fill", _k_masked_fill, out=True)])
declare("where", {"where": _where_m}, {"where": where}, eager={"where": _eager_where})
for _n in _LOGICAL:
    _m, _f = _logical_fns(_n, _n == "logical_not")
    declare(_n, {_n: _m}, {_n: _f}, eager={_n: _eager_logical(_n)})
for _n, _np_f in (("isnan", _np.isnan), ("isinf", _np.isinf)):
    def _mk(n, g):
        def m(self):
            return _isnan_isinf(n, self)

        def f(input):
            return _isnan_isinf(n, _input(input, n))
        m.__name__ = m.__qualname__ = f.__name__ = f.__qualname__ = n
        return m, f, (lambda args: g(args[0]))
    _m, _f, _e = _mk(_n, _np_f)
    declare(_n, {_n: _m}, {_n: _f}, eager={_n: _e})
del _n, _m, _f, _e, _np_f, _mk


def _nan_to_num_m(self, nan=0.0, posinf=None, neginf=None):
    return _nan_to_num(self, nan, posinf, neginf)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return _nan_to_num(_input(input, "nan_to_num"), nan, posinf, neginf)


declare("nan_to_num", {"nan_to_num": _nan_to_num_m}, {"nan_to_num": nan_to_num},
        eager={"nan_to_num": _eager_nan_to_num})
declare("gather", {"gather": _gather_m}, {"gather": gather}, [Kernel("aten::gather", _k_gather)])
declare("index_select", {"index_select": _index_select_m}, {"index_select": index_select},
        [Kernel("aten::index_select", _k_index_select)])
declare("embedding", {}, {}, [Kernel("aten::embedding", _k_embedding)], nn={"embedding": embedding})
def _masked_fill_class(node, attrs):   # masked_fill.Scalar / .Tensor
    return "MaskedFillScalar" if is_number_operand(node, 2) else "MaskedFillTensor"


classes(**{"aten::masked_fill": _masked_fill_class, "aten::gather": "Gather", "aten::index_select": "IndexSelect",
           "aten::embedding": "Embedding"})
