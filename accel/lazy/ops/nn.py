"""nn functional ops: softmax / log_softmax (aten::_softmax / aten::_log_softmax)."""
import math

import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import fallback
from accel.lazy.tensors import (
    LazyTensor, _as_number, _check_tensor, _dtype_name, _emit, _fn_counter, _index, _norm_dim, _scalar_node, _seed)
from accel.lazy.ops.casts import to_copy as _to_copy
from accel.lazy.ops.views import _numel, _view

_kernels = _impl.module("_kernels")


def _softmax(opname, a, dim):
    _check_tensor(a, f"{opname[1:]}() input")
    s = a._shape
    if s.dtype not in D.FLOATS and _numel(s.sizes):
        # LTC traces it and the run fails at mark_step; an empty one runs (an empty result of the input's dtype)
        raise RuntimeError(f"{opname[1:]}(): expected a floating point input, got {_dtype_name(s.dtype)}")
    d = _index(dim, f"{opname[1:]}(): dim")
    axis = _norm_dim(d, len(s.sizes))
    _fn_counter(opname)[0] += 1
    return _emit("aten::" + opname, (a._ir(),), s.dtype, s.sizes, _seed(d, False), "aten::" + opname, axis,
                 f"dim={d}, half_to_float=0")


# ---------------------------------------------------------------- kernels
def _np_softmax(x, axis, out=None):
    """``out``: the program's buffer for the result (float32 / float64, x's shape), or None (a new array)."""
    if _np.size(x) == 0:                 # torch returns the empty result (numpy's max refuses a 0-size axis)
        return _np.empty_like(x)
    if x.dtype == _np.float16:
        return _half_softmax(x, axis, False)
    return _kernels.softmax(_np.asarray(x), axis, out)


def _np_log_softmax(x, axis, out=None):
    if _np.size(x) == 0:
        return _np.empty_like(x)
    if x.dtype == _np.float16:
        return _half_softmax(x, axis, True)
    return _kernels.softmax(_np.asarray(x), axis, out, True)


def _half_softmax(x, axis, log, bf16=False):
    """float16 / bfloat16 (log_)softmax as torch's CPU kernels compute it: in float, with the roundings to
    the reduced type of its two kernels (the last dim's log_softmax keeps the sum and its log in it; the other
    dims' half softmax rounds exp(x - max)).  bfloat16 values come (and go) as float32 arrays."""
    f32 = _np.float32
    if bf16:
        def rnd(a):
            return D.round_bf16(a)
    else:
        def rnd(a):
            return a.astype(_np.float16)
    xf = x.astype(f32)
    s = xf - _np.max(xf, axis=axis, keepdims=True)
    e = _np.exp(s)
    total = _np.sum(e, axis=axis, keepdims=True)
    last = axis == x.ndim - 1
    if log:
        if last:
            return rnd(s - rnd(_np.log(rnd(total).astype(f32))).astype(f32))
        return rnd(s - _np.log(total))
    if not last and not bf16:       # (torch's bfloat16 softmax rounds only its result)
        e = rnd(e).astype(f32)
    return rnd(e / total)


def _np_softmax_bf16(x, axis):
    return _np.empty_like(x) if _np.size(x) == 0 else _half_softmax(x, axis, False, True)


def _np_log_softmax_bf16(x, axis):
    return _np.empty_like(x) if _np.size(x) == 0 else _half_softmax(x, axis, True, True)


helpers(_masked_softmax=_kernels.masked_softmax, _softmax=_np_softmax, _log_softmax=_np_log_softmax, _softmax_bf16=_np_softmax_bf16,
        _log_softmax_bf16=_np_log_softmax_bf16)


def _k_softmax(k):
    f = k.kind[6:] + ("_bf16" if k.code == D.BFLOAT16 else "")
    out = f", {k.buf}" if k.buf else ""
    k.line(f"{k.out} = {f}({k.x}, {k.attrs[1]}{out})")


def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _with_dtype(a, dtype):
    """softmax's ``dtype=``: the input cast first (as torch's softmax does: _to_copy with layout Strided)."""
    return a if dtype is None else _to_copy(a, dtype, layout=True)


def _softmax_m(self, dim, dtype=None):
    return _softmax("_softmax", _with_dtype(self, dtype), dim)


def _log_softmax_m(self, dim, dtype=None):
    return _softmax("_log_softmax", _with_dtype(self, dtype), dim)


def softmax(input, dim, dtype=None):
    return _input(input, "softmax").softmax(dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    return _input(input, "log_softmax").log_softmax(dim, dtype=dtype)


declare("softmax", {"softmax": _softmax_m}, {"softmax": softmax}, [Kernel("aten::_softmax", _k_softmax, out=True)])
declare("log_softmax", {"log_softmax": _log_softmax_m}, {"log_softmax": log_softmax},
        [Kernel("aten::_log_softmax", _k_softmax, out=True)])
classes(**{"aten::_softmax": "Softmax", "aten::_log_softmax": "LogSoftmax"})


# ---------------------------------------------------------------- activations
def _float_input(a, name):
    _check_tensor(a, f"{name}() input")
    if a._shape.dtype not in D.FLOATS:
        raise RuntimeError(f"\"{name}\" not implemented for '{_dtype_name(a._shape.dtype)}'")
    return a._shape


def gelu(input, approximate="none"):
    """torch.nn.functional.gelu: aten::gelu with approximate 'none' (erf) or 'tanh'."""
    s = _float_input(input, "GeluKernelImpl")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    _fn_counter("gelu")[0] += 1
    return _emit("aten::gelu", (input._ir(),), s.dtype, s.sizes, _seed(approximate), "aten::gelu", approximate,
                 f"approximate={approximate}")


def silu(input, inplace=False):
    """torch.nn.functional.silu: aten::silu (x * sigmoid(x))."""
    if inplace:
        raise NotImplementedError("silu(inplace=True) is not supported by accel.lazy")
    s = _float_input(input, "silu")
    _fn_counter("silu")[0] += 1
    return _emit("aten::silu", (input._ir(),), s.dtype, s.sizes, None, "aten::silu")


def _erf_input(a):
    _check_tensor(a, "erf() input")
    code = a._shape.dtype
    return code if code in D.FLOATS else D.DEFAULT_FLOAT


def erf(input):
    """torch.erf: no lazy kernel in LTC (eager, counter aten::erf)."""
    return fallback("aten::erf", "erf", [input], _erf_input(input))


_np_erf = _np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    """erf of a float array, value by value with the C library's erf (numpy has none)."""
    x = _np.asarray(x)
    dt = x.dtype if x.dtype.kind == "f" else _np.dtype(_np.float32)
    # frompyfunc gives an object array, or a bare Python float for a 0-dim input
    return _np.asarray(_np_erf(x.astype(_np.float64)), _np.float64).astype(dt, copy=False)


def _np_gelu(x, approximate):
    x = _np.asarray(x)
    xf = x.astype(_np.float64)
    if approximate == "tanh":
        r = 0.5 * xf * (1 + _np.tanh(math.sqrt(2 / math.pi) * (xf + 0.044715 * xf ** 3)))
        return r.astype(x.dtype)
    # torch's order in its accumulation type (float32 for float16 / float32): x * (1 + erf(x / sqrt 2)), then
    # halved, so 2 * x overflows to inf where torch's does
    acc = _np.float64 if x.dtype == _np.float64 else _np.float32
    xa = x.astype(acc)
    with _np.errstate(over="ignore"):
        r = (xa * (1 + _erf(xf * (1 / math.sqrt(2))).astype(acc))) * acc(0.5)
    return r.astype(x.dtype)


def _np_silu(x):
    x = _np.asarray(x)
    xf = x.astype(_np.float64) if x.dtype == _np.float16 else x
    return (xf / (1 + _np.exp(-xf))).astype(x.dtype)


helpers(_gelu=_np_gelu, _silu=_np_silu)


def _k_gelu(k):
    k.line(f"{k.out} = _gelu({k.x}, {k.attrs[1]!r})")


def _k_silu(k):
    k.line(f"{k.out} = _silu({k.x})")


def _eager_erf(args):
    return _erf(args[0])


def _gelu_m(self, approximate="none"):
    return gelu(self, approximate)


def _erf_m(self):
    return erf(self)


def _relu_f(input, inplace=False):
    if inplace:
        return _input(input, "relu").relu_()
    return _input(input, "relu").relu()


declare("gelu", {}, {}, [Kernel("aten::gelu", _k_gelu)], nn={"gelu": gelu})
declare("silu", {}, {}, [Kernel("aten::silu", _k_silu)], nn={"silu": silu})
declare("erf", {"erf": _erf_m}, {"erf": erf}, eager={"erf": _eager_erf})
declare("nn relu", {}, {}, nn={"relu": _relu_f})
classes(**{"aten::gelu": "Gelu", "aten::silu": "Silu"})


# ---------------------------------------------------------------- more nn.functional (issue 19)
def _num(v, what):
    n = _as_number(v)
    if n is None:
        raise TypeError(f"{what} must be a Python number, got {type(v).__name__}: {v!r}")
    return n


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """torch.nn.functional.leaky_relu: aten::leaky_relu(x, negative_slope)."""
    if inplace:
        raise NotImplementedError("leaky_relu(inplace=True) is not supported by accel.lazy")
    s = _float_input(input, "leaky_relu")
    slope = _num(negative_slope, "leaky_relu(): negative_slope")
    _fn_counter("leaky_relu")[0] += 1
    return _emit("aten::leaky_relu", (input._ir(), _scalar_node(slope)), s.dtype, s.sizes, None, "aten::leaky_relu")


def softplus(input, beta=1, threshold=20):
    """torch.nn.functional.softplus: aten::softplus(x, beta, threshold)."""
    s = _float_input(input, "softplus")
    b, t = _num(beta, "softplus(): beta"), _num(threshold, "softplus(): threshold")
    _fn_counter("softplus")[0] += 1
    return _emit("aten::softplus", (input._ir(), _scalar_node(b), _scalar_node(t)), s.dtype, s.sizes, None,
                 "aten::softplus")


def elu(input, alpha=1.0, inplace=False):
    """torch.nn.functional.elu: aten::elu(x, alpha, scale=1, input_scale=1)."""
    if inplace:
        raise NotImplementedError("elu(inplace=True) is not supported by accel.lazy")
    s = _float_input(input, "elu")
    a = _num(alpha, "elu(): alpha")
    _fn_counter("elu")[0] += 1
    return _emit("aten::elu", (input._ir(), _scalar_node(a), _scalar_node(1), _scalar_node(1)), s.dtype, s.sizes,
                 None, "aten::elu")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """torch.nn.functional.hardtanh: no lazy kernel in LTC (eager, counter aten::hardtanh)."""
    if inplace:
        raise NotImplementedError("hardtanh(inplace=True) is not supported by accel.lazy")
    _check_tensor(input, "hardtanh() input")
    s = input._shape
    lo, hi = _num(min_val, "hardtanh(): min_val"), _num(max_val, "hardtanh(): max_val")
    if s.dtype == D.BOOL:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if s.dtype in D.INTS:                # an integer tensor is clamped by the limits truncated to integers
        lo, hi = int(lo), int(hi)
    if s.dtype == D.UINT8 and lo < 0 and 0 not in s.sizes:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return fallback("aten::hardtanh", "hardtanh", [input], s.dtype, (lo, hi))


_REDUCTIONS = ("none", "mean", "sum")


def mse_loss(input, target, reduction="mean"):
    """torch.nn.functional.mse_loss: no lazy kernel in LTC (eager, counter aten::mse_loss)."""
    s = _float_input(input, "mse_loss")
    _check_tensor(target, "mse_loss() target")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if target._shape.sizes != s.sizes:
        raise NotImplementedError("mse_loss with broadcasting input and target is not supported by accel.lazy "
                                  "(torch warns about it too)")
    code = D.result_type([(s.dtype, D.DIM), (target._shape.dtype, D.DIM)])      # torch promotes the two
    return fallback("aten::mse_loss", "mse_loss", [input, target], code, (reduction,))


def linear(input, weight, bias=None):
    """torch.nn.functional.linear for a 2-D input (mm with weight.t(), or addmm with the bias, as torch records
    it) or an N-D input without bias (matmul with weight.t())."""
    _check_tensor(input, "linear() input")
    _check_tensor(weight, "linear() weight")
    from_ = input._shape.sizes
    wt = weight.t()
    if bias is None:
        return input.matmul(wt)
    _check_tensor(bias, "linear() bias")
    if len(from_) != 2 and from_:
        # torch's _flatten_nd_linear: the input viewed as a matrix, addmm, the result viewed back
        k = from_[-1]
        if k != weight._shape.sizes[-1]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_numel(from_[:-1])}x{k} and "
                               f"{wt._shape.sizes[0]}x{wt._shape.sizes[1]})")
        flat = _view(input, (_numel(from_) // k if k else 0, k), "view_copy_symint")
        r = _addmm_linear(flat, wt, bias)
        return _view(r, from_[:-1] + (r._shape.sizes[1],), "view_copy_symint")
    if len(from_) != 2:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are 0D and "
                           f"{len(weight._shape.sizes)}D")
    return _addmm_linear(input, wt, bias)


def _addmm_linear(input, wt, bias):
    from_ = input._shape.sizes
    weight = wt
    ws = wt._shape.sizes
    if from_[1] != ws[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({from_[0]}x{from_[1]} and {ws[0]}x{ws[1]})")
    code = input._shape.dtype
    if weight._shape.dtype != code or bias._shape.dtype != code:
        raise RuntimeError("expected mat1 and mat2 to have the same dtype")
    out = (from_[0], ws[1])
    _broadcast_to_check(bias._shape.sizes, out)
    _fn_counter("addmm")[0] += 1
    return _emit("aten::addmm", (bias._ir(), input._ir(), wt._ir(), _scalar_node(1), _scalar_node(1)), code, out,
                 None, "aten::addmm")


def _broadcast_to_check(sizes, out):
    if len(sizes) > len(out) or any(a not in (1, b) for a, b in zip(reversed(sizes), reversed(out))):
        raise RuntimeError(f"The expanded size of the tensor ({out[-1]}) must match the existing size "
                           f"({sizes[-1] if sizes else 1}) at non-singleton dimension 1")


def _np_leaky_relu(x, slope, dt):
    x = _np.asarray(x)
    if x.dtype == _np.float16:       # torch computes half in float, the slope as a float
        return _np.where(x > 0, x, x.astype(_np.float32) * _np.float32(_np.asarray(slope))).astype(dt)
    return _np.where(x > 0, x, x * _np.asarray(slope).astype(dt)).astype(dt)


def _np_softplus(x, beta, threshold, dt):
    x = _np.asarray(x)
    b, t = float(_np.asarray(beta)), float(_np.asarray(threshold))
    xf = x.astype(_np.float64)
    with _np.errstate(over="ignore"):
        r = _np.where(xf * b > t, xf, _np.log1p(_np.exp(xf * b)) / b)
    return r.astype(dt)


def _np_elu(x, alpha, scale, input_scale, dt):
    x = _np.asarray(x)
    a, sc, isc = (float(_np.asarray(v)) for v in (alpha, scale, input_scale))
    xf = x.astype(_np.float64)
    return _np.where(xf > 0, xf * sc, _np.expm1(xf * isc) * a * sc).astype(dt)


def _np_addmm(bias, a, b, beta, alpha, dt, out=None):
    beta, alpha = _np.asarray(beta).item(), _np.asarray(alpha).item()
    r = _np.matmul(a, b, out=out)
    if alpha != 1:
        r *= alpha
    r += bias if beta == 1 else bias * beta        # r is a new array: added in place
    return r.astype(dt, copy=False)


helpers(_leaky_relu=_np_leaky_relu, _softplus=_np_softplus, _elu=_np_elu, _addmm=_np_addmm)


def _k_args(name):
    def emit(k):
        out = f", out={k.buf}" if k.buf else ""          # (kinds declared out=True)
        k.line(f"{k.out} = _{name}({', '.join(k.ins)}, {k.dt}{out})")
    return emit


def _eager_hardtanh(args, lo, hi):
    x = _np.asarray(args[0])
    if x.dtype.kind in "iu":             # clamp: the upper limit wins where they cross, as torch's min(max())
        return _np.minimum(_np.maximum(x.astype(_np.int64), lo), hi)
    return _np.minimum(_np.maximum(x, lo), hi)


def _eager_mse(args, reduction):
    d = (_np.asarray(args[0]) - _np.asarray(args[1])) ** 2
    return d if reduction == "none" else (d.mean() if reduction == "mean" else d.sum())


declare("leaky_relu", {}, {}, [Kernel("aten::leaky_relu", _k_args("leaky_relu"))], nn={"leaky_relu": leaky_relu})
declare("softplus", {}, {}, [Kernel("aten::softplus", _k_args("softplus"))], nn={"softplus": softplus})
declare("elu", {}, {}, [Kernel("aten::elu", _k_args("elu"))], nn={"elu": elu})
declare("hardtanh", {}, {}, eager={"hardtanh": _eager_hardtanh}, nn={"hardtanh": hardtanh})
declare("mse_loss", {}, {}, eager={"mse_loss": _eager_mse}, nn={"mse_loss": mse_loss})
declare("linear", {}, {}, [Kernel("aten::addmm", _k_args("addmm"), out=True)], nn={"linear": linear})
classes(**{"aten::leaky_relu": "LeakyRelu", "aten::softplus": "Softplus", "aten::elu": "Elu", "aten::addmm": "Addmm"})
