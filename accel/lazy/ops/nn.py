"""nn functional ops: softmax / log_softmax (aten::_softmax / aten::_log_softmax)."""
import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy._optable import Kernel, classes, declare, helpers
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
