"""Reductions: sum / mean (all dims, or over dims with keepdim), and amax (no lazy kernel in LTC: eager)."""
import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy._optable import Kernel, classes, declare
from accel.lazy.executor import fallback
from accel.lazy.tensors import (
    ALL_DIMS, LazyTensor, _check_tensor, _dim_list, _dtype_name, _emit, _fn_counter, _int_list, _norm_dim, _seed)


def _reduce(name, a, dim, keepdim):
    _check_tensor(a, f"{name}() input")
    if type(keepdim) is not bool:
        raise TypeError(f"{name}(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    s = a._shape
    code = s.dtype
    if name == "sum":
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
        return _emit("aten::" + name, (a._ir(),), code, (), _seed(None), "aten::" + name + ".all", None,
                     "dtype=null")
    if dim is None:
        dims = None
        axes = tuple(range(nd))
    else:
        dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
        dims = _int_list(dims, f"{name}() dim") if dims else []
        axes = tuple(_norm_dim(d, nd) for d in dims)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
        if not axes:
            axes = tuple(range(nd))
    sizes = tuple((1 if i in axes else n) for i, n in enumerate(s.sizes) if keepdim or i not in axes)
    tags = f"dim={'null' if dims is None else _dim_list(dims)}, keepdim={int(keepdim)}, dtype=null"
    return _emit("aten::" + name, (a._ir(),), code, sizes, _seed(dims, keepdim, None),
                 "aten::" + name + ".dim", (axes, keepdim), tags)


def _amax(a, dim, keepdim):
    _check_tensor(a, "amax() input")
    nd = a.ndim
    dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
    axes = tuple(_norm_dim(d, nd) for d in _int_list(dims, "amax() dim"))
    if type(keepdim) is not bool:
        raise TypeError(f"amax(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    sizes = a._shape.sizes
    if not axes and 0 in sizes:
        raise RuntimeError("amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    for d in axes:
        if sizes and sizes[d] == 0:
            raise IndexError(f"amax(): Expected reduction dim {d} to have non-zero size.")
    axes = axes or tuple(range(nd))
    return fallback("aten::amax", "amax", [a], a._shape.dtype, (axes, keepdim))


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


def _eager_amax(args, axes, keepdim):
    r = _np.asarray(_np.amax(args[0], axis=axes, keepdims=keepdim))
    if r.dtype.kind == "f":              # torch's max gives the positive quiet NaN, whatever NaN it met
        r = _np.where(_np.isnan(r), _np.array(_np.nan, r.dtype), r)
    return r


def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _sum(self, dim=ALL_DIMS, keepdim=False):
    return _reduce("sum", self, dim, keepdim)


def _mean(self, dim=ALL_DIMS, keepdim=False):
    return _reduce("mean", self, dim, keepdim)


def _amax_m(self, dim=(), keepdim=False):
    return _amax(self, dim, keepdim)


def sum(input, dim=ALL_DIMS, keepdim=False):
    return _input(input, "sum").sum(dim, keepdim)


def mean(input, dim=ALL_DIMS, keepdim=False):
    return _input(input, "mean").mean(dim, keepdim)


def amax(input, dim=(), keepdim=False):
    return _input(input, "amax").amax(dim, keepdim)


declare("sum", {"sum": _sum}, {"sum": sum},
        [Kernel("aten::sum.all", _k_reduce_all), Kernel("aten::sum.dim", _k_reduce_dim)])
declare("mean", {"mean": _mean}, {"mean": mean},
        [Kernel("aten::mean.all", _k_reduce_all), Kernel("aten::mean.dim", _k_reduce_dim)])
declare("amax", {"amax": _amax_m}, {"amax": amax}, eager={"amax": _eager_amax})
classes(**{"aten::sum.all": "Sum", "aten::sum.dim": "SumDimIntlist", "aten::mean.all": "Mean",
           "aten::mean.dim": "MeanDim"})
