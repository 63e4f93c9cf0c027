"""nn functional ops: softmax / log_softmax (aten::_softmax / aten::_log_softmax)."""
import math

import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import fallback
from accel.lazy.tensors import LazyTensor, _check_tensor, _dtype_name, _emit, _fn_counter, _index, _norm_dim, _seed
from accel.lazy.ops.views import _numel


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
def _np_softmax(x, axis):
    if _np.size(x) == 0:                 # torch returns the empty result (numpy's max refuses a 0-size axis)
        return _np.empty_like(x)
    if x.dtype == _np.float16:
        return _half_softmax(x, axis, False)
    e = _np.exp(x - _np.max(x, axis=axis, keepdims=True))
    e /= _np.sum(e, axis=axis, keepdims=True)
    return e


def _np_log_softmax(x, axis):
    if _np.size(x) == 0:
        return _np.empty_like(x)
    if x.dtype == _np.float16:
        return _half_softmax(x, axis, True)
    s = x - _np.max(x, axis=axis, keepdims=True)
    s -= _np.log(_np.sum(_np.exp(s), axis=axis, keepdims=True))
    return s


def _half_softmax(x, axis, log):
    """float16 (log_)softmax as torch's CPU kernels compute it: in float, with the roundings to half of its
    two kernels (the last dim's keeps the sum and its log in half; the other dims' rounds exp(x - max))."""
    f32, f16 = _np.float32, _np.float16
    xf = x.astype(f32)
    s = xf - _np.max(xf, axis=axis, keepdims=True)
    e = _np.exp(s)
    total = _np.sum(e, axis=axis, keepdims=True)
    last = axis == x.ndim - 1
    if log:
        if last:
            return (s - _np.log(total.astype(f16).astype(f32)).astype(f16).astype(f32)).astype(f16)
        return (s - _np.log(total)).astype(f16)
    if not last:
        e = e.astype(f16).astype(f32)
    return (e / total).astype(f16)


helpers(_softmax=_np_softmax, _log_softmax=_np_log_softmax)


def _k_softmax(k):
    k.line(f"{k.out} = {k.kind[6:]}({k.x}, {k.attrs[1]})")


def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _softmax_m(self, dim):
    return _softmax("_softmax", self, dim)


def _log_softmax_m(self, dim):
    return _softmax("_log_softmax", self, dim)


def softmax(input, dim):
    return _input(input, "softmax").softmax(dim)


def log_softmax(input, dim):
    return _input(input, "log_softmax").log_softmax(dim)


declare("softmax", {"softmax": _softmax_m}, {"softmax": softmax}, [Kernel("aten::_softmax", _k_softmax)])
declare("log_softmax", {"log_softmax": _log_softmax_m}, {"log_softmax": log_softmax},
        [Kernel("aten::_log_softmax", _k_softmax)])
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
    if x.dtype == _np.float64:
        return _np_erf(x).astype(_np.float64)
    return _np_erf(x.astype(_np.float64)).astype(dt)


def _np_gelu(x, approximate):
    x = _np.asarray(x)
    xf = x.astype(_np.float64)
    if approximate == "tanh":
        r = 0.5 * xf * (1 + _np.tanh(math.sqrt(2 / math.pi) * (xf + 0.044715 * xf ** 3)))
    else:
        r = 0.5 * xf * (1 + _erf(xf * (1 / math.sqrt(2))))
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
