"""Reductions: sum / mean (all dims, or over dims with keepdim), and amax (no lazy kernel in LTC: eager)."""
import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy._optable import Kernel, classes, declare
from accel.lazy.executor import fallback
from accel.lazy.ops.sorting import max_dim as _max_dim, min_dim as _min_dim
from accel import _impl
from accel.lazy._optable import helpers
from accel.lazy.tensors import (
    ALL_DIMS, _NULL, LazyTensor, _as_number, _check_tensor, _dim_list, _dtype_hash, _dtype_name, _emit, _fn_counter,
    _index, _int_list, _norm_dim, _scalar_node, _seed)

_hash = _impl.module("_hash")


def _reduce(name, a, dim, keepdim, dtype=None):
    _check_tensor(a, f"{name}() input")
    if type(keepdim) is not bool:
        raise TypeError(f"{name}(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    s = a._shape
    code = s.dtype
    if dtype is not None:                # dtype=: the input is cast to it first (recorded as the node's dtype)
        code = D.to_code(dtype, f"{name}() dtype")
        if name == "mean" and code not in D.FLOATS:
            raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {_dtype_name(code)}")
        dh, dname = _dtype_hash(code), _dtype_name(code)
    else:
        dh, dname = _NULL, "null"
    if dtype is not None:
        pass                             # as given
    elif name == "sum":
        if code not in D.FLOATS:
            code = D.INT64
    elif code not in D.FLOATS:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {_dtype_name(code)}")
    if dim is ALL_DIMS and keepdim:
        raise TypeError(f"{name}(): keepdim=True needs dim (torch's {name}() without dim takes no keepdim)")
    _fn_counter(name)[0] += 1
    nd = len(s.sizes)
    if dim is ALL_DIMS:
        return _emit("aten::" + name, (a._ir(),), code, (), _hash.mhash_hashes((dh,)), "aten::" + name + ".all",
                     None, "dtype=" + dname)
    if dim is None:
        dims = None
        axes = tuple(range(nd))
    else:
        dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
        dims = _int_list(dims, f"{name}() dim") if dims else []
        axes = tuple(_norm_dim(d, nd) for d in dims)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
        if not nd:                       # a 0-dim tensor's dim 0 / -1 reduces nothing
            axes = ()
        elif not axes:
            axes = tuple(range(nd))
    sizes = tuple((1 if i in axes else n) for i, n in enumerate(s.sizes) if keepdim or i not in axes)
    tags = f"dim={'null' if dims is None else _dim_list(dims)}, keepdim={int(keepdim)}, dtype={dname}"
    seed = _hash.mhash_hashes((_hash.hash_value(dims) if dims is not None else _NULL, _hash.hash_value(keepdim), dh))
    return _emit("aten::" + name, (a._ir(),), code, sizes, seed, "aten::" + name + ".dim", (axes, keepdim), tags)


def _amax(a, dim, keepdim, name="amax"):
    """amax / amin: no lazy kernel in LTC (eager, counter aten::amax / aten::amin)."""
    _check_tensor(a, f"{name}() input")
    nd = a.ndim
    dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
    axes = tuple(_norm_dim(d, nd) for d in _int_list(dims, f"{name}() dim"))
    if type(keepdim) is not bool:
        raise TypeError(f"{name}(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    sizes = a._shape.sizes
    if not axes and 0 in sizes:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    for d in axes:
        if sizes and sizes[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    axes = axes or tuple(range(nd))
    return fallback("aten::" + name, name, [a], a._shape.dtype, (axes if nd else (), keepdim))


# ---------------------------------------------------------------- kernels
def _k_reduce_all(k):
    f = "_sum" if k.kind == "aten::sum.all" else "_mean"
    if k.code == D.FLOAT16:         # torch accumulates float16 in float32
        k.line(f"{k.out} = {f}({k.x}, dtype=_d{D.FLOAT32}).astype({k.dt})")
    else:
        k.line(f"{k.out} = {f}({k.x}, dtype={k.dt})")


def _k_reduce_dim(k):
    f = "_sum" if k.kind == "aten::sum.dim" else "_mean"
    axes, keep = k.attrs[1]
    if k.code == D.FLOAT16:
        k.line(f"{k.out} = {f}({k.x}, axis={axes!r}, keepdims={keep}, dtype=_d{D.FLOAT32}).astype({k.dt})")
    else:
        k.line(f"{k.out} = {f}({k.x}, axis={axes!r}, keepdims={keep}, dtype={k.dt})")


def _eager_amax(args, axes, keepdim, f=_np.amax):
    r = _np.asarray(f(args[0], axis=axes, keepdims=keepdim))
    if r.dtype.kind == "f":              # torch's max gives the positive quiet NaN, whatever NaN it met
        r = _np.where(_np.isnan(r), _np.array(_np.nan, r.dtype), r)
    return r


def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _sum(self, dim=ALL_DIMS, keepdim=False, dtype=None):
    return _reduce("sum", self, dim, keepdim, dtype)


def _mean(self, dim=ALL_DIMS, keepdim=False, dtype=None):
    return _reduce("mean", self, dim, keepdim, dtype)


def _amax_m(self, dim=(), keepdim=False):
    return _amax(self, dim, keepdim)


def _amin_m(self, dim=(), keepdim=False):
    return _amax(self, dim, keepdim, "amin")


def sum(input, dim=ALL_DIMS, keepdim=False, dtype=None):
    return _input(input, "sum").sum(dim, keepdim, dtype=dtype)


def mean(input, dim=ALL_DIMS, keepdim=False, dtype=None):
    return _input(input, "mean").mean(dim, keepdim, dtype=dtype)


def amax(input, dim=(), keepdim=False):
    return _input(input, "amax").amax(dim, keepdim)


def amin(input, dim=(), keepdim=False):
    return _input(input, "amin").amin(dim, keepdim)


declare("sum", {"sum": _sum}, {"sum": sum},
        [Kernel("aten::sum.all", _k_reduce_all), Kernel("aten::sum.dim", _k_reduce_dim)])
declare("mean", {"mean": _mean}, {"mean": mean},
        [Kernel("aten::mean.all", _k_reduce_all), Kernel("aten::mean.dim", _k_reduce_dim)])
declare("amax", {"amax": _amax_m}, {"amax": amax}, eager={"amax": _eager_amax})
declare("amin", {"amin": _amin_m}, {"amin": amin},
        eager={"amin": lambda args, axes, keepdim: _eager_amax(args, axes, keepdim, _np.amin)})
classes(**{"aten::sum.all": "Sum", "aten::sum.dim": "SumDimIntlist", "aten::mean.all": "Mean",
           "aten::mean.dim": "MeanDim"})


# ---------------------------------------------------------------- more reductions (issue 19)
def _dims_of(dim, nd, what):
    """(dims as given, normalised axes) of a reduction's ``dim`` (an int or a sequence)."""
    dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
    dims = _int_list(dims, f"{what}() dim") if dims else []
    axes = tuple(_norm_dim(d, nd) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
    return dims, (axes if nd else ())           # a 0-dim tensor's dim 0 / -1 reduces nothing


def _reduced_sizes(sizes, axes, keepdim):
    return tuple((1 if i in axes else n) for i, n in enumerate(sizes) if keepdim or i not in axes)


def _float_only(a, what):
    code = a._shape.dtype
    if code not in D.FLOATS:
        raise RuntimeError(f"{what}(): input dtype should be either floating point or complex dtypes. Got "
                           f"{_dtype_name(code)} instead.")
    return code


def _std(a, dim=None, unbiased=None, keepdim=False, correction=None):
    """torch's std: std.dim (dim given, unbiased) records ``dim, unbiased, keepdim``; std.correction (no dim,
    or correction= given) records ``dim, keepdim`` with the correction as a scalar operand when given."""
    _check_tensor(a, "std() input")
    code = _float_only(a, "std")
    if type(keepdim) is not bool:
        raise TypeError(f"std(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    if unbiased is not None and correction is not None:
        raise RuntimeError("std(): cannot specify both unbiased and correction")
    nd = len(a._shape.sizes)
    if dim is None:
        dims, axes = None, tuple(range(nd))
    else:
        dims, axes = _dims_of(dim, nd, "std")
        axes = axes or tuple(range(nd))
    sizes = _reduced_sizes(a._shape.sizes, axes, keepdim)
    dtag = "null" if dims is None else _dim_list(dims)
    _fn_counter("std")[0] += 1
    if correction is None and dims is not None:
        ub = True if unbiased is None else bool(unbiased)
        return _emit("aten::std", (a._ir(),), code, sizes, _seed(dims, ub, keepdim), "aten::std",
                     (axes, 1 if ub else 0, keepdim), f"dim={dtag}, unbiased={int(ub)}, keepdim={int(keepdim)}")
    if correction is None and unbiased is not None:       # std(unbiased): its own overload
        ub = bool(unbiased)
        return _emit("aten::std", (a._ir(),), code, sizes, _seed(ub), "aten::std", (axes, 1 if ub else 0, keepdim),
                     f"unbiased={int(ub)}")
    if correction is None:
        operands, corr = (a._ir(), None), 1          # the absent optional operand still counts in the hash
    else:
        c = _as_number(correction)
        if c is None:
            raise TypeError(f"std(): correction must be a Python number, got {correction!r}")
        operands, corr = (a._ir(), _scalar_node(c)), c
    return _emit("aten::std", operands, code, sizes, _seed(dims, keepdim), "aten::std", (axes, corr, keepdim),
                 f"dim={dtag}, keepdim={int(keepdim)}")


def _var(a, dim=None, unbiased=None, keepdim=False, correction=None):
    """torch's var: no lazy kernel in LTC (eager, counter aten::var.correction)."""
    _check_tensor(a, "var() input")
    code = _float_only(a, "var")
    nd = len(a._shape.sizes)
    axes = tuple(range(nd)) if dim is None else (_dims_of(dim, nd, "var")[1] or tuple(range(nd)))
    if unbiased is not None and correction is not None:
        raise RuntimeError("var(): cannot specify both unbiased and correction")
    corr = correction if correction is not None else (0 if unbiased is False else 1)
    return fallback("aten::var.correction", "var", [a], code, (axes, corr, bool(keepdim)))


def _norm(a, p="fro", dim=None, keepdim=False):
    """torch's Tensor.norm: aten::norm(self, p) with ``dim`` (the Frobenius default without dim: ``dim=``
    empty; a number p without dim: every dim) and ``keepdim``; p is a scalar operand (2.0 for 'fro')."""
    _check_tensor(a, "norm() input")
    code = _float_only(a, "linalg.vector_norm")
    nd = len(a._shape.sizes)
    if p == "fro" or p is None:
        pv = 2.0
        fro = True
    else:
        pv = _as_number(p)
        if pv is None:
            raise TypeError(f"norm(): p must be a number or 'fro', got {p!r}")
        fro = False
    if dim is None:
        dims = [] if fro else list(range(nd))
        axes = tuple(range(nd))
    else:
        dims, axes = _dims_of(dim, nd, "norm")
    sizes = _reduced_sizes(a._shape.sizes, axes, keepdim)
    _fn_counter("norm")[0] += 1
    return _emit("aten::norm", (a._ir(), _scalar_node(pv)), code, sizes, _seed(dims, keepdim), "aten::norm",
                 (axes, keepdim), f"dim={_dim_list(dims)}, keepdim={int(keepdim)}")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: no lazy kernel in LTC (eager, counter aten::linalg_vector_norm)."""
    _check_tensor(x, "linalg.vector_norm() input")
    code = _float_only(x, "linalg.vector_norm")
    if dtype is not None:
        code = D.to_code(dtype, "linalg.vector_norm() dtype")
        if code not in D.FLOATS:
            raise RuntimeError(f"linalg.vector_norm(): dtype should be floating point or complex. Got "
                               f"{_dtype_name(code)} instead.")
    p = _as_number(ord)
    if p is None or type(p) is bool:
        raise TypeError(f"linalg.vector_norm(): ord must be a number, got {type(ord).__name__}: {ord!r}")
    nd = len(x._shape.sizes)
    axes = tuple(range(nd)) if dim is None else (_dims_of(dim, nd, "linalg.vector_norm")[1] or tuple(range(nd)))
    if p < 0 or p == float("inf"):
        for ax in axes:
            if x._shape.sizes[ax] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                                   "the operation does not have an identity")
    return fallback("aten::linalg_vector_norm", "linalg_vector_norm", [x], code, (float(p), axes, bool(keepdim)))


def _eager_vector_norm(args, p, axes, keepdim):
    x = _np.asarray(args[0])
    acc = _np.float64 if x.dtype == _np.float64 else _np.float32    # torch's accumulation type (the last bits
    return _np_norm(_np.abs(x.astype(acc)), p, axes, keepdim, acc)   # show in 0-dim data, deduplicated by bytes)


def _all_any(name, a, dim=None, keepdim=False):
    _check_tensor(a, f"{name}() input")
    code = D.UINT8 if a._shape.dtype == D.UINT8 else D.BOOL
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}(): keepdim=True needs dim")
        _fn_counter(name)[0] += 1
        return _emit("aten::" + name, (a._ir(),), code, (), None, "aten::" + name)
    nd = len(a._shape.sizes)
    d = _index(dim, f"{name}(): dim")
    axis = _norm_dim(d, nd)
    return fallback(f"aten::{name}.dim", name, [a], code, ((axis,) if nd else (), bool(keepdim)))


def _min_max(name, a, dim=None, keepdim=False):
    _check_tensor(a, f"{name}() input")
    if dim is not None:                 # (values, indices): accel.lazy.ops.sorting
        return (_max_dim if name == "max" else _min_dim)(a, dim, keepdim)
    if not _numel(a._shape.sizes):
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                           "the reduction dim with the 'dim' argument.")
    _fn_counter(name)[0] += 1
    return _emit("aten::" + name, (a._ir(),), a._shape.dtype, (), None, "aten::" + name)


def _numel(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def _arg(name, a, dim=None, keepdim=False):
    _check_tensor(a, f"{name}() input")
    if a._shape.dtype == D.BOOL:
        raise RuntimeError(f"{name}(): does not support bool input")
    nd = len(a._shape.sizes)
    if dim is None:
        if not _numel(a._shape.sizes):
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        axis = None
    else:
        axis = _norm_dim(_index(dim, f"{name}(): dim"), nd)
        if nd and a._shape.sizes[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
    return fallback("aten::" + name, name, [a], D.INT64, (axis, bool(keepdim)))


def _prod(a, dim=None, keepdim=False):
    _check_tensor(a, "prod() input")
    code = a._shape.dtype if a._shape.dtype in D.FLOATS else D.INT64
    if dim is None:
        return fallback("aten::prod", "prod", [a], code, (None, False, code))
    axis = _norm_dim(_index(dim, "prod(): dim"), len(a._shape.sizes))
    return fallback("aten::prod.dim_int", "prod", [a], code, (axis, bool(keepdim), code))


def _cumsum(a, dim, dtype=None):
    _check_tensor(a, "cumsum() input")
    d = _index(dim, "cumsum(): dim")
    axis = _norm_dim(d, len(a._shape.sizes))
    if dtype is None:
        code = a._shape.dtype if a._shape.dtype in D.FLOATS else D.INT64
        dh, dname = _NULL, "null"
    else:
        code = D.to_code(dtype, "cumsum() dtype")
        dh, dname = _dtype_hash(code), _dtype_name(code)
    _fn_counter("cumsum")[0] += 1
    seed = _hash.mhash_hashes((_hash.hash_value(d), dh))
    return _emit("aten::cumsum", (a._ir(),), code, a._shape.sizes, seed, "aten::cumsum", axis,
                 f"dim={d}, dtype={dname}")


# ---- kernels
def _np_std(x, axes, corr, keepdim, dt):
    x = _np.asarray(x)
    xf = x.astype(_np.float64) if x.dtype == _np.float16 else x
    n = 1
    for ax in axes:
        n *= x.shape[ax]
    m = _np.mean(xf, axis=axes, keepdims=True)
    ss = _np.sum((xf - m) ** 2, axis=axes, keepdims=keepdim)
    with _np.errstate(all="ignore"):
        return _empty_nan(_np.sqrt(ss / max(n - corr, 0)).astype(dt), n)


def _np_norm(x, p, axes, keepdim, dt):
    x = _np.abs(_np.asarray(x))
    p = float(_np.asarray(p))
    if p == float("inf"):
        r = _np.max(x, axis=axes, keepdims=keepdim)
    elif p == float("-inf"):
        r = _np.min(x, axis=axes, keepdims=keepdim)
    elif p == 0:
        r = _np.sum(x != 0, axis=axes, keepdims=keepdim)
    elif p == 1:
        r = _np.sum(x, axis=axes, keepdims=keepdim)
    elif p == 2:
        r = _np.sqrt(_np.sum(x * x, axis=axes, keepdims=keepdim))
    else:
        r = _np.sum(x ** p, axis=axes, keepdims=keepdim) ** (1 / p)
    return _np.asarray(r).astype(dt)


def _np_cumsum(x, axis, dtype):
    x = _np.asarray(x)
    return _np.cumsum(x, axis=axis, dtype=dtype) if x.ndim else x.astype(dtype)


helpers(_std=_np_std, _norm=_np_norm, _all=_np.all, _any=_np.any, _min=_np.min, _max=_np.max,
        _cumsum=_np_cumsum)


def _k_std(k):
    axes, corr, keep = k.attrs[1]
    k.line(f"{k.out} = _std({k.x}, {axes!r}, {corr!r}, {keep}, {k.dt})")


def _k_norm(k):
    axes, keep = k.attrs[1]
    k.line(f"{k.out} = _norm({k.x}, {k.ins[1]}, {axes!r}, {keep}, {k.dt})")


def _k_all_any(k):
    k.line(f"{k.out} = _asarray(_{k.kind[6:]}({k.x}), {k.dt})")


def _k_min_max(k):
    k.line(f"{k.out} = _{k.kind[6:]}({k.x})")


def _k_cumsum(k):
    if k.code == D.FLOAT16:          # torch accumulates half in float, rounding each output
        k.line(f"{k.out} = _cumsum({k.x}, {k.attrs[1]}, dtype=_d{D.FLOAT32}).astype({k.dt})")
        return
    k.line(f"{k.out} = _cumsum({k.x}, {k.attrs[1]}, dtype={k.dt})")


def _eager_var(args, axes, corr, keepdim):
    x = _np.asarray(args[0])
    n = 1
    for ax in axes:
        n *= x.shape[ax]
    # torch's accumulation type: float32 for float16 / float32 (a mean that overflows is inf, as torch's)
    xf = x.astype(_np.float64 if x.dtype == _np.float64 else _np.float32)
    with _np.errstate(all="ignore"):
        m = xf.mean(axis=axes, keepdims=True)
        r = _np.sum((xf - m) ** 2, axis=axes, keepdims=keepdim) / xf.dtype.type(max(n - corr, 0))
    return _empty_nan(r, n)


def _empty_nan(r, n):
    """torch's var / std over no elements: its quiet NaN constant (+NaN; numpy's 0 / 0 gives the x86 default -NaN,
    and 0-dim data is deduplicated by its bytes)."""
    if n == 0:
        r = _np.asarray(r)
        r = _np.full(r.shape, _np.nan, r.dtype)
    return r


def _eager_all_any(name):
    f = _np.all if name == "all" else _np.any
    return lambda args, axes, keepdim: f(args[0], axis=axes, keepdims=keepdim)


def _eager_arg(name):
    f = _np.argmax if name == "argmax" else _np.argmin

    def g(args, axis, keepdim):
        x = _np.asarray(args[0])
        if axis is None:
            r = f(x)
            return _np.reshape(r, (1,) * x.ndim) if keepdim else _np.asarray(r)
        if x.ndim == 0:
            return _np.asarray(0)
        return f(x, axis=axis, keepdims=keepdim)
    return g


def _eager_prod(args, axis, keepdim, code=None):
    x = _np.asarray(args[0])
    if code in (D.FLOAT16, D.BFLOAT16) and x.size:
        return _reduced_prod(x, axis if x.ndim else None, keepdim, code)
    return _np.asarray(_np.prod(x, axis=axis if x.ndim else None, keepdims=keepdim,
                                dtype=x.dtype if x.dtype.kind == "f" else _np.int64))


def _reduced_prod(x, axis, keepdim, code):
    """half / bfloat16 prod as torch's CPU kernel: the running product rounded to the type at every step, in
    order along the dim (the flattened tensor for a full reduction; torch's vectorised reduction of a long
    row rounds in another order: equal to the type's rounding)."""
    rnd = D.round_bf16 if code == D.BFLOAT16 else (lambda a: _np.asarray(a).astype(_np.float16))
    xs = _np.moveaxis(x.reshape(-1) if axis is None else x, 0 if axis is None else axis, 0).astype(_np.float32)
    acc = _np.ones(xs.shape[1:], _np.float32)
    for row in xs:
        acc = _np.asarray(rnd(acc * row), _np.float32)
    if axis is None:
        return acc.reshape((1,) * x.ndim) if keepdim else acc
    return _np.expand_dims(acc, axis) if keepdim else acc


def _method(f, name):
    f.__name__ = f.__qualname__ = name
    return f


def _fn(name):
    def f(input, *args, **kwargs):
        return getattr(_input(input, name), name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    return f


declare("std", {"std": _method(lambda self, dim=None, unbiased=None, keepdim=False, correction=None:
                               _std(self, dim, unbiased, keepdim, correction), "std")},
        {"std": _fn("std")}, [Kernel("aten::std", _k_std)])
declare("var", {"var": _method(lambda self, dim=None, unbiased=None, keepdim=False, correction=None:
                               _var(self, dim, unbiased, keepdim, correction), "var")},
        {"var": _fn("var")}, eager={"var": _eager_var})
declare("norm", {"norm": _method(lambda self, p="fro", dim=None, keepdim=False: _norm(self, p, dim, keepdim),
                                 "norm")}, {"norm": _fn("norm")}, [Kernel("aten::norm", _k_norm)])
declare("linalg_vector_norm", linalg={"vector_norm": vector_norm}, eager={"linalg_vector_norm": _eager_vector_norm})
for _n in ("all", "any"):
    declare(_n, {_n: _method((lambda n: lambda self, dim=None, keepdim=False: _all_any(n, self, dim, keepdim))(_n),
                             _n)}, {_n: _fn(_n)}, [Kernel("aten::" + _n, _k_all_any)], eager={_n: _eager_all_any(_n)})
for _n in ("min", "max"):
    declare(_n, {_n: _method((lambda n: lambda self, dim=None, keepdim=False: _min_max(n, self, dim, keepdim))(_n),
                             _n)}, {_n: _fn(_n)}, [Kernel("aten::" + _n, _k_min_max)])
for _n in ("argmax", "argmin"):
    declare(_n, {_n: _method((lambda n: lambda self, dim=None, keepdim=False: _arg(n, self, dim, keepdim))(_n),
                             _n)}, {_n: _fn(_n)}, eager={_n: _eager_arg(_n)})
del _n
declare("prod", {"prod": _method(lambda self, dim=None, keepdim=False: _prod(self, dim, keepdim), "prod")},
        {"prod": _fn("prod")}, eager={"prod": _eager_prod})
declare("cumsum", {"cumsum": _method(lambda self, dim, dtype=None: _cumsum(self, dim, dtype), "cumsum")},
        {"cumsum": _fn("cumsum")}, [Kernel("aten::cumsum", _k_cumsum)])
def _std_class(node, attrs):       # std.dim / std / std.correction (LTC's StdDim, Std, StdCorrection)
    tags = attrs[2] if attrs is not None else ""
    return "StdDim" if tags.startswith("dim=") and "unbiased=" in tags else \
        "Std" if tags.startswith("unbiased=") else "StdCorrection"


classes(**{"aten::std": _std_class, "aten::norm": "NormScalaroptDim", "aten::all": "All", "aten::any": "Any",
           "aten::min": "Min", "aten::max": "Max", "aten::cumsum": "Cumsum"})
