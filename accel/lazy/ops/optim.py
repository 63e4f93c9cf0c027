"""The fused pointwise ops optimizers are written with (issue 19): ``addcmul`` / ``addcdiv`` (LTC nodes
``aten::addcmul`` / ``aten::addcdiv`` with the value as a scalar operand) and their in-place forms, and
``lerp`` (no lazy kernel in LTC: eager, counters ``aten::lerp.Scalar`` / ``aten::lerp.Tensor``), so that
``torch.optim``-style updates (``exp_avg.lerp_(grad, 1 - beta1)``, ``exp_avg_sq.mul_(beta2).addcmul_(grad, grad,
value=1 - beta2)``, ``param.addcdiv_(exp_avg, denom, value=-step_size)``) trace as torch 2.13 LTC records them."""
import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy import tensors as T
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import fallback
from accel.lazy.inplace import commit, sync
from accel.lazy.tensors import _as_number, _broadcast, _check_tensor, _emit, _fn_counter, _prio, _scalar_node


def _number(v, what):
    n = _as_number(v)
    if n is None:                            # a bool is a number here, as torch's Scalar
        raise TypeError(f"{what} must be a Python number, got {type(v).__name__}: {v!r}")
    return n


def _pointwise(name, input, tensor1, tensor2, value):
    """aten::addcmul / aten::addcdiv(input, tensor1, tensor2, value): input + value * t1 (* or /) t2."""
    for what, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        _check_tensor(t, f"{name}() {what}")
    v = _number(value, f"{name}(): value")
    code = D.result_type([(t._shape.dtype, _prio(t)) for t in (input, tensor1, tensor2)])
    if name == "addcdiv" and code not in D.FLOATS:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2.")
    if code not in D.FLOATS and type(v) is float:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    sizes = _broadcast(_broadcast(input._shape.sizes, tensor1._shape.sizes), tensor2._shape.sizes)
    _fn_counter(name)[0] += 1
    z = _scalar_node(v)                  # LTC's order: the value, then the tensors right to left
    return _emit("aten::" + name, T._irs(input, tensor1, tensor2) + (z,), code, sizes, None, "aten::" + name)


def addcmul(input, tensor1, tensor2, value=1):
    """torch.addcmul: input + value * tensor1 * tensor2 (aten::addcmul)."""
    return _pointwise("addcmul", input, tensor1, tensor2, value)


def addcdiv(input, tensor1, tensor2, value=1):
    """torch.addcdiv: input + value * tensor1 / tensor2 (aten::addcdiv)."""
    return _pointwise("addcdiv", input, tensor1, tensor2, value)


def _in_place(name, t, tensor1, tensor2, value):
    _check_tensor(t, f"{name}_() self")
    sync(t)
    r = _pointwise(name, t, tensor1, tensor2, value)
    if r._shape.sizes != t._shape.sizes:
        raise RuntimeError(f"output with shape {list(t._shape.sizes)} doesn't match the broadcast shape "
                           f"{list(r._shape.sizes)}")
    if D.category(r._shape.dtype) > D.category(t._shape.dtype):
        raise RuntimeError(f"result type {D.DTYPES[r._shape.dtype]} can't be cast to the desired output type "
                           f"{D.DTYPES[t._shape.dtype]}")
    return commit(t, r)


def lerp(input, end, weight):
    """torch.lerp(input, end, weight) (weight a number or a tensor): no lazy kernel in LTC (eager, counters
    aten::lerp.Scalar / aten::lerp.Tensor), torch's formula (from the nearer end)."""
    _check_tensor(input, "lerp() input")
    _check_tensor(end, "lerp() end")
    code = input._shape.dtype
    if code not in D.FLOATS or end._shape.dtype != code:
        raise RuntimeError(f"expected dtype {D.DTYPES[code]} for `end` but got dtype {D.DTYPES[end._shape.dtype]}"
                           if code in D.FLOATS else "lerp_kernel_scalar not implemented for integer inputs")
    sizes = _broadcast(input._shape.sizes, end._shape.sizes)
    if type(weight) is T.LazyTensor:
        _broadcast(sizes, weight._shape.sizes)          # checked now, as torch does
        return fallback("aten::lerp.Tensor", "lerp", [input, end, weight], code, (code,))
    w = _number(weight, "lerp(): weight")
    return fallback("aten::lerp.Scalar", "lerp", [input, end, float(w)], code, (code,))


def _lerp_(self, end, weight):
    _check_tensor(self, "lerp_() self")
    sync(self)
    r = lerp(self, end, weight)
    if r._shape.sizes != self._shape.sizes:
        raise RuntimeError(f"output with shape {list(self._shape.sizes)} doesn't match the broadcast shape "
                           f"{list(r._shape.sizes)}")
    return commit(self, r)


# ---------------------------------------------------------------- kernels
def _np_addc(x, t1, t2, value, dt, div):
    dt = _np.dtype(dt)
    calc = _np.float32 if dt in (_np.float16,) else dt
    x, t1, t2 = (_np.asarray(a).astype(calc) for a in (x, t1, t2))
    v = _np.asarray(value).astype(calc)[()]
    r = x + (v * t1) / t2 if div else x + (v * t1) * t2
    return _np.asarray(r).astype(dt)


def _k_addc(k):
    k.line(f"{k.out} = _addc({', '.join(k.ins)}, {k.dt}, {k.kind == 'aten::addcdiv'})")


def _eager_lerp(args, code):
    """torch's lerp: self + w * (end - self) where |w| < 0.5, else end - (end - self) * (1 - w), in the
    tensors' float type (half / bfloat16 in float)."""
    x, e, w = args
    dt = _np.asarray(x).dtype
    calc = _np.dtype(_np.float32 if dt == _np.float16 or code == D.BFLOAT16 else dt).type
    x, e = _np.asarray(x).astype(calc), _np.asarray(e).astype(calc)
    w = _np.asarray(w).astype(calc)
    d = e - x
    r = _np.where(_np.abs(w) < 0.5, x + w * d, e - d * (calc(1) - w))
    r = r.astype(dt)
    return D.round_bf16(r) if code == D.BFLOAT16 else r


helpers(_addc=_np_addc)


def _addcmul_m(self, tensor1, tensor2, value=1):
    return addcmul(self, tensor1, tensor2, value=value)


def _addcdiv_m(self, tensor1, tensor2, value=1):
    return addcdiv(self, tensor1, tensor2, value=value)


def _addcmul__m(self, tensor1, tensor2, value=1):
    return _in_place("addcmul", self, tensor1, tensor2, value)


def _addcdiv__m(self, tensor1, tensor2, value=1):
    return _in_place("addcdiv", self, tensor1, tensor2, value)


declare("addcmul", {"addcmul": _addcmul_m, "addcmul_": _addcmul__m}, {"addcmul": addcmul},
        [Kernel("aten::addcmul", _k_addc)])
declare("addcdiv", {"addcdiv": _addcdiv_m, "addcdiv_": _addcdiv__m}, {"addcdiv": addcdiv},
        [Kernel("aten::addcdiv", _k_addc)])
declare("lerp", {"lerp": lerp, "lerp_": _lerp_}, {"lerp": lerp}, eager={"lerp": _eager_lerp})
classes(**{"aten::addcmul": "Addcmul", "aten::addcdiv": "Addcdiv"})
