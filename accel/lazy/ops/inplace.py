"""In-place ops on lazy tensors (add_, mul_, ..., the unary ``*_`` forms, clamp_, zero_, fill_, copy_ and the
augmented assignments), functionalised as torch 2.13 records them for LTC: the out-of-place result is
committed to the tensor and its aliases (accel.lazy.inplace)."""
import math

import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy import tensors as T
from accel.lazy._optable import Kernel, declare
from accel.lazy.executor import fallback
from accel.lazy.inplace import commit, sync
from accel.lazy.ops.elementwise import _UNARY_FLOAT


def _tname(code):
    return "torch." + str(D.CODE_TO_NP[code])


def _check_sizes(t, sizes):
    if tuple(sizes) != tuple(t._shape.sizes):
        out = tuple(sizes)
        raise RuntimeError(f"output with shape torch.Size({list(t._shape.sizes)}) doesn't match the broadcast "
                           f"shape {out!r}")


def _other_info(t, other, what):
    """(broadcast sizes, result dtype code) of ``t op other`` (a tensor or a Python number)."""
    s = t._shape
    if type(other) is T.LazyTensor:
        sizes = T._broadcast(s.sizes, other._shape.sizes)
        code = D.result_type(((s.dtype, T._prio(t)), (other._shape.dtype, T._prio(other))))
        return sizes, code, other._shape.dtype
    v = T._as_number(other)
    if v is None:
        raise TypeError(f"{what}(): expected a lazy tensor or a Python number as 'other', got "
                        f"{type(other).__name__}: {other!r}")
    vc = T._scalar_code(v)
    return s.sizes, D.result_type(((s.dtype, T._prio(t)), (vc, D.WRAPPED))), vc


def _unsafe_cast(t, code):
    tc = t._shape.dtype
    if D.category(code) > D.category(tc):
        raise RuntimeError(f"Attempting to cast from {_tname(code)} to out tensor with dtype {_tname(tc)}, but "
                           "this can't be cast because it is not safe!")


def _begin(t, what):
    """An in-place op's first step: torch checks it (on meta tensors) before it syncs ``t``, so a refused op
    leaves a stale ``t`` stale; each op calls ``sync(t)`` once its checks passed."""
    T._check_tensor(t, f"{what}() self")


def add_(t, other, alpha=1, name="add"):
    _begin(t, name + "_")
    sizes, code, _ = _other_info(t, other, name + "_")
    _check_sizes(t, sizes)
    tc = t._shape.dtype
    if tc == D.BOOL and code != D.BOOL:
        raise RuntimeError("Promotion of bool.add/sub_(others) in in-place ops are not possible due to element "
                           "size change.")
    if tc in D.INTS and code in D.FLOATS:
        raise RuntimeError("Promotion of int.add/sub_(float) in in-place ops are not possible due to element "
                           "size change.")
    sync(t)
    r = t.add(other, alpha=alpha) if name == "add" else t.sub(other, alpha=alpha)
    return commit(t, r)


def sub_(t, other, alpha=1):
    return add_(t, other, alpha, "sub")


def mul_(t, other):
    _begin(t, "mul_")
    sizes, _, _ = _other_info(t, other, "mul_")
    _check_sizes(t, sizes)
    sync(t)
    return commit(t, t.mul(other))


def div_(t, other):
    _begin(t, "div_")
    sizes, code, _ = _other_info(t, other, "div_")
    _check_sizes(t, sizes)
    tc = t._shape.dtype
    if tc not in D.FLOATS:
        code = code if code in D.FLOATS else D.DEFAULT_FLOAT
        raise RuntimeError(f"result type {_tname(code)} can't be cast to the desired output type {_tname(tc)}")
    sync(t)
    return commit(t, t.div(other))


def pow_(t, other):
    _begin(t, "pow_")
    sizes, code, _ = _other_info(t, other, "pow_")
    _check_sizes(t, sizes)
    _unsafe_cast(t, code)
    sync(t)
    return commit(t, t.pow(other))


def clamp_(t, min=None, max=None):
    _begin(t, "clamp_")
    ops = [(t._shape.dtype, T._prio(t))]     # clamp's result dtype, known before t is synced
    for b in (min, max):
        if type(b) is T.LazyTensor:
            ops.append((b._shape.dtype, T._prio(b)))
        elif b is not None and T._as_number(b) is not None:
            ops.append((T._scalar_code(T._as_number(b)), D.WRAPPED))
    _unsafe_cast(t, D.result_type(ops))
    sync(t)
    r = t.clamp(min, max)
    _unsafe_cast(t, r._shape.dtype)          # a refused clamp_ leaves t as it was (r is dropped)
    return commit(t, r)


def unary_(t, name):
    _begin(t, name + "_")
    code = t._shape.dtype
    if name == "relu" and code == D.BOOL:
        raise RuntimeError("Boolean inputs not supported for relu")
    if name in _UNARY_FLOAT or name == "sin":
        if code not in D.FLOATS:
            _unsafe_cast(t, D.DEFAULT_FLOAT)
    sync(t)
    return commit(t, getattr(t, name)())


def zero_(t):
    _begin(t, "zero_")
    sync(t)
    T._fn_counter("zero")[0] += 1
    s = t._shape
    return commit(t, T._emit("aten::zero", (t._ir(),), s.dtype, s.sizes))


_FLOAT_NAMES = {D.FLOAT16: "c10::Half", D.FLOAT32: "float", D.FLOAT64: "double"}


def _fill_value(v, code):
    """``v`` converted to dtype ``code`` as torch converts a fill value (errors as torch's)."""
    if type(v) is int and not -(1 << 63) <= v < (1 << 64):       # torch's Python-int-to-Scalar conversion
        raise OverflowError("int too big to convert" if v > 0 else "can't convert negative int to unsigned")
    if code == D.BOOL:
        return bool(v)
    if code in D.INTS:
        return D.checked_int(v, code)
    f = float(v)
    with _np.errstate(over="ignore"):
        c = float(_np.array(f, D.CODE_TO_NP[code]))
    if math.isfinite(f) and not math.isfinite(c):
        raise RuntimeError(f"value cannot be converted to type {_FLOAT_NAMES[code]} without overflow")
    return c


def fill_(t, value):
    _begin(t, "fill_")
    v = T._as_number(value)
    if v is None:
        raise TypeError(f"fill_(): value must be a Python number, got {type(value).__name__}: {value!r}")
    s = t._shape
    code = s.dtype
    v = _fill_value(v, code)
    sync(t)
    T._fn_counter("fill_")[0] += 1
    key = T._scalar_key(code, v)
    d = T._cached_data(key, lambda: _np.array(v, D.CODE_TO_NP[code]))
    x = T._dd(T._shape(code, ()), d)
    if not s.sizes:                  # GetIrValueForExpandedScalar: a 0-dim tensor takes the scalar itself
        return commit(t, T._wrap(x, s))
    sizes = list(s.sizes)
    # LTC's hand-written Expand node: a TsNode hashed before its shape is computed (the shape is not hashed)
    n = T.Node(T._op("aten::expand"), (x,), (), 1, T._seed(sizes, True))
    n.add_computed_shape(s)
    T.set_attrs(n, "fill", None, f"size={T._dim_list(sizes)}, is_scalar_expand=1")
    return commit(t, T._wrap(n, s))


def copy_(t, src):
    """copy_(src): torch's functionalisation turns it into aten::copy, which LTC runs eagerly (CPU fallback)."""
    _begin(t, "copy_")
    T._check_tensor(src, "copy_() src")
    sizes = T._broadcast(t._shape.sizes, src._shape.sizes)
    if tuple(sizes) != tuple(t._shape.sizes):
        raise RuntimeError(f"output with shape {T._fmt_size(t._shape.sizes)} doesn't match the broadcast shape "
                           f"{T._fmt_size(sizes)}")
    sync(t)
    return commit(t, fallback("aten::copy", "copy", [t, src], t._shape.dtype))


# ---------------------------------------------------------------- kernels
def _k_zero(k):
    k.line(f"{k.out} = _zeros({tuple(k.shape.sizes)!r}, {k.dt})")


def _k_fill(k):
    k.line(f"{k.out} = _full({tuple(k.shape.sizes)!r}, {k.x}, {k.dt})")


def _eager_copy(args):                       # dst.copy_(src): src broadcast to dst's shape (cast by the caller)
    return _np.broadcast_to(args[1], _np.shape(args[0]))


# ---------------------------------------------------------------- the declarations
def _unary_method(name):
    def f(self):
        return unary_(self, name)
    f.__name__ = f.__qualname__ = name + "_"
    f.__doc__ = f"In-place {name} (functionalised: {name}, cast back to the tensor's dtype if needed)."
    return f


def _add_m(self, other, alpha=1):
    return add_(self, other, alpha)


def _sub_m(self, other, alpha=1):
    return sub_(self, other, alpha)


def _clamp_m(self, min=None, max=None):
    return clamp_(self, min, max)


declare("add_", {"add_": _add_m, "__iadd__": lambda self, other: add_(self, other)})
declare("sub_", {"sub_": _sub_m, "__isub__": lambda self, other: sub_(self, other)})
declare("mul_", {"mul_": mul_, "__imul__": mul_})
declare("div_", {"div_": div_, "__itruediv__": div_})
declare("pow_", {"pow_": pow_, "__ipow__": pow_})
declare("clamp_", {"clamp_": _clamp_m})
for _n in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "reciprocal"):
    declare(_n + "_", {_n + "_": _unary_method(_n)})
del _n
declare("zero_", {"zero_": zero_}, {}, [Kernel("aten::zero", _k_zero)])
declare("fill_", {"fill_": fill_}, {}, [Kernel("fill", _k_fill)])
declare("copy_", {"copy_": copy_}, {}, eager={"copy": _eager_copy})
