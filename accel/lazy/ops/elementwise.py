"""Elementwise ops: arithmetic (add, sub, mul, div, pow and their operators, reflected forms included),
unary ops, maximum / minimum, comparisons and clamp, traced as LTC's TorchScript backend records them, with
their numpy kernels.  The hot operator methods are _lazy_trace's per-op functions (one call traces the
common case), bound here with the closures below as their slow paths."""
import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy import tensors as T
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import fallback
from accel.lazy.tensors import (
    LazyTensor, Node, _ME, _as_number, _broadcast, _check_tensor, _emit, _fn_counter, _op, _prio, _scalar_code,
    _scalar_node)

_lt = _impl.module("_lazy_trace")
_kernels = _impl.module("_kernels")

# ---------------------------------------------------------------- elementwise ops
_UNARY_FLOAT = frozenset(("exp", "log", "sqrt", "rsqrt", "cos", "tanh", "sigmoid", "reciprocal"))


def _unary_impl(name, a):
    s = a._shape
    code = s.dtype
    if name in _UNARY_FLOAT:
        if code not in D.FLOATS:
            code = D.DEFAULT_FLOAT
    elif code == D.BOOL and name == "relu":
        raise RuntimeError("Boolean inputs not supported for relu")
    elif code == D.BOOL and name == "neg":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    _fn_counter(name)[0] += 1
    return _emit("aten::" + name, (a._ir(),), code, s.sizes)


def _unary_keep(name):
    """The input dtypes unary op ``name`` keeps (its one-node case): floats for the float-only ops, else all
    but bool."""
    return frozenset(D.FLOATS) if name in _UNARY_FLOAT else frozenset(D.CODE_TO_NP) - {D.BOOL}


def _make_unary(name):
    op = _op("aten::" + name)
    cell = _fn_counter(name)
    keep = _unary_keep(name)

    def f(a):
        s = a._shape
        if s.dtype not in keep:
            return _unary_impl(name, a)
        cell[0] += 1
        x = a._node
        return T._wrap(Node(op, (x if x is not None else a._ir(),), (s,), 1, _ME), s)
    f.__name__ = f.__qualname__ = name
    return f


_UNARIES = {}


def _unary(name, a):
    f = _UNARIES.get(name)
    if f is None:
        f = _UNARIES[name] = _make_unary(name)
    return f(a)


# result dtype of (tensor dtype, Python number dtype): the tensor's unless the number's category is higher
_WRAPPED_RESULT = {(c, v): D.result_type(((c, D.DIM), (v, D.WRAPPED)))
                   for c in D.CODE_TO_NP for v in (D.INT64, D.FLOAT64, D.BOOL)}
_NUM_CODE = {float: D.FLOAT64, int: D.INT64, bool: D.BOOL}


def _make_binary(name):
    """mul / div / pow with a tensor or a Python number on the right (mul both orders via __rmul__)."""
    op = _op("aten::" + name)
    cell = _fn_counter(name)
    is_div = name == "div"
    is_pow = name == "pow"

    def f(a, b):
        tb = type(b)
        if tb is LazyTensor:
            return _binary_tt(name, a, b)
        vc = _NUM_CODE.get(tb)
        if vc is None:
            v = _as_number(b)
            if v is None:
                raise TypeError(f"{name}(): expected a lazy tensor or a Python number as 'other', got "
                                f"{tb.__name__}: {b!r}")
            b, vc = v, _NUM_CODE[type(v)]
        s = a._shape
        code = _WRAPPED_RESULT[(s.dtype, vc)]
        if is_div and code not in D.FLOATS:
            code = D.DEFAULT_FLOAT
        elif is_pow and code in D.INTS and vc != D.FLOAT64:
            _check_int_exponent(b, code)
        cell[0] += 1
        y = _scalar_node(b)                 # LTC's order: the number's device data, then the tensor's
        x = a._node
        operands = (x if x is not None else a._ir(), y)
        if code == s.dtype:
            return T._wrap(Node(op, operands, (s,), 1, _ME), s)
        return _emit(op.qualified_name, operands, code, s.sizes)
    f.__name__ = f.__qualname__ = name
    return f


def _check_int_exponent(e, code):
    """torch's checks of a Python-number exponent of an integral pow (raised at the call, as torch does)."""
    if e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    info = _np.iinfo(D.CODE_TO_NP[code])
    if e > info.max:
        raise RuntimeError(f"value cannot be converted to type {D.INT_C_NAMES[code]} without overflow")


_mul = _make_binary("mul")
_div = _make_binary("div")
_pow = _make_binary("pow")
_BINARIES = {"mul": _mul, "div": _div, "pow": _pow}


def _binary(name, a, b):
    return _BINARIES[name](a, b)


def _fast_methods():
    """The hot operator methods: _lazy_trace's per-op functions, each tracing its common case (one node of
    the input's Shape, Python numbers whose device data is cached) in one call and handing every other
    case to the closure above, which does the same as a fast path would.  Returns {name: function}."""
    F = _lt
    m = {}
    float_ok = frozenset(D.FLOATS)                           # a Python float keeps these dtypes
    int_ok = frozenset(c for c in D.CODE_TO_NP if c != D.BOOL)  # a Python int keeps these
    for c in D.CODE_TO_NP:
        assert (_WRAPPED_RESULT[(c, D.FLOAT64)] == c) == (c in float_ok)
        assert (_WRAPPED_RESULT[(c, D.INT64)] == c) == (c in int_ok)
    for name in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "cos", "tanh", "sigmoid", "relu", "reciprocal"):
        slow = _UNARIES.get(name) or _UNARIES.setdefault(name, _make_unary(name))
        f = F.unary(Node, _op("aten::" + name), _fn_counter(name), _unary_keep(name), _ME, slow)
        m[name] = f
        if name in ("neg", "abs"):
            m[f"__{name}__"] = f
    mul = F.binary_scalar(Node, _op("aten::mul"), _fn_counter("mul"), float_ok, int_ok, _ME, _mul)
    div = F.binary_scalar(Node, _op("aten::div"), _fn_counter("div"), float_ok, float_ok, _ME, _div)
    # integral pow goes to the closure, which checks the exponent (negative / out of range) as torch does
    pow_ = F.binary_scalar(Node, _op("aten::pow"), _fn_counter("pow"), float_ok, float_ok, _ME, _pow)
    add = F.add_sub(Node, _op("aten::add"), _fn_counter("add"), float_ok, int_ok, _ME, _ADD_SUB["add"])
    sub = F.add_sub(Node, _op("aten::sub"), _fn_counter("sub"), float_ok, int_ok, _ME, _ADD_SUB["sub"])
    m["__mul__"] = m["__rmul__"] = m["mul"] = mul
    m["__truediv__"] = m["div"] = div
    m["__pow__"] = m["pow"] = pow_
    m["__add__"] = m["__radd__"] = m["add"] = add
    m["__sub__"] = m["sub"] = sub
    return m


def _binary_tt(name, a, b):
    _check_tensor(a, f"{name}() input")
    _check_tensor(b, f"{name}() other")
    sa, sb = a._shape, b._shape
    sizes = _broadcast(sa.sizes, sb.sizes)
    if sa.dtype == sb.dtype:
        code = sa.dtype
    else:
        code = D.result_type(((sa.dtype, _prio(a)), (sb.dtype, _prio(b))))
    if name == "div" and code not in D.FLOATS:
        code = D.DEFAULT_FLOAT
    elif name == "pow" and code == D.BOOL:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    _fn_counter(name)[0] += 1
    y = b._node if b._node is not None else b._ir()      # right to left, as LTC's generated code
    x = a._node if a._node is not None else a._ir()
    if code == sa.dtype and sizes is sa.sizes:
        return T._wrap(Node(_op("aten::" + name), (x, y), (sa,), 1, _ME), sa)
    return _emit("aten::" + name, (x, y), code, sizes)


def _sub_check(code_a, code_b):
    """torch's sub_check on the dtype codes of a subtraction's operands (a Python number's code for a number)."""
    if code_a == D.BOOL and code_b == D.BOOL:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if code_a == D.BOOL or code_b == D.BOOL:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _add_sub_impl(name, a, b, alpha):
    """add/sub(self, other, alpha): other and alpha become operands (Python numbers through the data cache)."""
    if type(a) is not LazyTensor:                  # 2 + t reaches here as __radd__ with the tensor in a
        a, b = b, a
    av = _as_number(alpha)
    if av is None:
        raise TypeError(f"{name}(): alpha must be a Python number, got {type(alpha).__name__}: {alpha!r}")
    if type(b) is LazyTensor:
        sa, sb = a._shape, b._shape
        sizes = _broadcast(sa.sizes, sb.sizes)
        vb = sb.dtype
        code = sa.dtype if sa.dtype == vb else D.result_type(((sa.dtype, _prio(a)), (vb, _prio(b))))
    else:
        v = _as_number(b)
        if v is None:
            raise TypeError(f"{name}(): expected a lazy tensor or a Python number as 'other', got "
                            f"{type(b).__name__}: {b!r}")
        sa = a._shape
        sizes = sa.sizes
        vb = _scalar_code(v)
        code = sa.dtype if vb == sa.dtype else D.result_type(((sa.dtype, _prio(a)), (vb, D.WRAPPED)))
    if name == "sub":
        _sub_check(sa.dtype, vb)
    if type(av) is float and code not in D.FLOATS:
        raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating point number "
                           f"(got alpha={av!r})")
    # made after the checks (a refused op changes nothing), in LTC's order: the alpha scalar, then the operands
    # right to left (its generated code's GetIrValue() arguments, as GCC evaluates them)
    z = _scalar_node(av)
    if type(b) is LazyTensor:
        y = b._node if b._node is not None else b._ir()
    else:
        y = _scalar_node(v)
    _fn_counter(name)[0] += 1
    x = a._node if a._node is not None else a._ir()
    operands = (x, y, z)
    if code == sa.dtype and sizes is sa.sizes:
        return T._wrap(Node(_op("aten::" + name), operands, (sa,), 1, _ME), sa)
    return _emit("aten::" + name, operands, code, sizes)


def _make_add_sub(name):
    op = _op("aten::" + name)
    cell = _fn_counter(name)

    def f(a, b, alpha=1):
        """Fast path: a tensor plus a Python int/float with an int alpha; everything else in _add_sub_impl."""
        tb = type(b)
        if type(a) is not LazyTensor or type(alpha) is not int:
            return _add_sub_impl(name, a, b, alpha)
        s = a._shape
        if s.dtype == D.BOOL:
            return _add_sub_impl(name, a, b, alpha)
        if tb is LazyTensor:
            sb = b._shape
            if sb is not s:                 # same dtype and sizes share one Shape object
                return _add_sub_impl(name, a, b, alpha)
            z = _scalar_node(alpha)         # LTC's order: alpha, then the operands right to left
            y = b._node
            if y is None:
                y = b._ir()
        elif tb is float or tb is int:
            code = _WRAPPED_RESULT[(s.dtype, _NUM_CODE[tb])]
            if code != s.dtype or code == D.BOOL:
                return _add_sub_impl(name, a, b, alpha)
            z = _scalar_node(alpha)
            y = _scalar_node(b)
        else:
            return _add_sub_impl(name, a, b, alpha)
        cell[0] += 1
        x = a._node
        operands = (x if x is not None else a._ir(), y, z)
        return T._wrap(Node(op, operands, (s,), 1, _ME), s)
    f.__name__ = f.__qualname__ = name
    return f


_ADD_SUB = {"add": _make_add_sub("add"), "sub": _make_add_sub("sub")}


def _add_sub(name, a, b, alpha):
    return _ADD_SUB[name](a, b, alpha)


_FAST = _fast_methods()


def _compare(name, a, b, operator=False):
    """aten::eq / ne / lt / le / gt / ge of a tensor and a tensor (broadcast) or a Python number: a Bool
    tensor; both operands are compared in their promoted dtype (kept for the kernel).  An operator given
    something that is neither answers NotImplemented (``t == None`` is False, as torch's)."""
    _check_tensor(a, f"{name}() input")
    s = a._shape
    if type(b) is LazyTensor:
        sb = b._shape
        sizes = _broadcast(s.sizes, sb.sizes)
        code = s.dtype if s.dtype == sb.dtype else D.result_type(((s.dtype, _prio(a)), (sb.dtype, _prio(b))))
        y = None
    else:
        v = _as_number(b)
        if v is None:
            if operator:
                return NotImplemented
            raise TypeError(f"{name}(): expected a lazy tensor or a Python number as 'other', got "
                            f"{type(b).__name__}: {b!r}")
        sizes = s.sizes
        code = D.result_type(((s.dtype, _prio(a)), (_scalar_code(v), D.WRAPPED)))
        y = v
    _fn_counter(name)[0] += 1
    y = b._ir() if y is None else _scalar_node(y)           # the other operand first, as LTC's generated code
    x = a._ir()
    return _emit("aten::" + name, (x, y), D.BOOL, sizes, None, "aten::" + name, code)


def _rsub(a, other):
    """other - a for a Python number: sub(scalar, a, alpha) (LTC records the wrapped number first)."""
    v = _as_number(other)
    if v is None:
        raise TypeError(f"rsub(): expected a Python number, got {type(other).__name__}: {other!r}")
    s = a._shape
    vc = _scalar_code(v)
    _sub_check(vc, s.dtype)
    code = s.dtype if vc == s.dtype else D.result_type(((s.dtype, _prio(a)), (vc, D.WRAPPED)))
    _fn_counter("sub")[0] += 1
    z = _scalar_node(1)                  # LTC's order: alpha, then sub(number, a)'s operands right to left
    x = a._ir()
    return _emit("aten::sub", (_scalar_node(v), x, z), code, s.sizes)


def _rdiv(a, other):
    """other / a for a Python number: reciprocal(a) * other, as torch decomposes it."""
    v = _as_number(other)
    if v is None:
        raise TypeError(f"rdiv(): expected a Python number, got {type(other).__name__}: {other!r}")
    return _binary("mul", _unary("reciprocal", a), v)


def _rpow(a, other):
    """number ** a: torch has no lazy kernel for pow.Scalar; it runs eagerly (counter aten::pow.Scalar)."""
    v = _as_number(other)
    if v is None:
        raise TypeError(f"rpow(): expected a Python number, got {type(other).__name__}: {other!r}")
    s = a._shape
    code = D.result_type(((s.dtype, _prio(a)), (_scalar_code(v), D.WRAPPED)))
    return fallback("aten::pow.Scalar", "rpow", [a, v], code)


def _fallback_unary(name, a):
    code = a._shape.dtype
    return fallback("aten::" + name, name, [a], code if code in D.FLOATS else D.DEFAULT_FLOAT)


def _clamp(a, lo, hi):
    _check_tensor(a, "clamp() input")
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    lov = None if lo is None else _as_number(lo)
    hiv = None if hi is None else _as_number(hi)
    if (lo is not None and lov is None) or (hi is not None and hiv is None):
        raise TypeError(f"clamp(): min and max must be Python numbers or None, got min={lo!r}, max={hi!r}")
    s = a._shape
    ops = [(s.dtype, _prio(a))] + [(_scalar_code(v), D.WRAPPED) for v in (lov, hiv) if v is not None]
    code = D.result_type(ops)
    _fn_counter("clamp")[0] += 1
    lon = None if lov is None else _scalar_node(lov)    # LTC's order: min, max, then the tensor
    hin = None if hiv is None else _scalar_node(hiv)
    operands = (a._ir(), lon, hin)
    return _emit("aten::clamp", operands, code, s.sizes, None, "aten::clamp", (lov is not None, hiv is not None))


# ---------------------------------------------------------------- numpy kernels
_NARROW_INTS = frozenset((D.UINT8, D.INT8, D.INT16, D.INT32))


def _ipow(x, y, dt):
    """pow with an integral or bool result as torch computes it: a negative exponent gives 1 for base 1, +-1
    for base -1 and 0 otherwise (numpy refuses negative integer powers); bool ** bool is ``x or not y``."""
    x, y = _np.asarray(x), _np.asarray(y)
    if x.dtype != dt and x.dtype.kind != "b" and dt != _np.bool_:
        x = x.astype(dt)            # a Python int base in a narrower result dtype wraps around, as torch casts it
    if dt == _np.bool_:
        return _np.logical_or(x, _np.logical_not(y))
    neg = y < 0
    if not neg.any():
        return _np.power(x, y, dtype=dt)
    r = _np.power(x, _np.where(neg, 0, y), dtype=dt)
    alt = _np.where(x == 1, 1, _np.where(x == -1, _np.where(y % 2 == 0, 1, -1), 0))
    return _np.where(neg, alt, r).astype(dt)


def _fpow(x, y, **kw):
    """Floating pow as torch's kernel (C's pow) computes it: numpy takes ``x ** 0.5`` (a single-element
    exponent) as ``sqrt(x)``, which gives NaN for -inf and -0.0 for -0.0 where pow gives +inf and +0.0."""
    # what the fix reads of x and y is taken first: the out= buffer may be x's own (a buffer handed on by an
    # operand read for the last time here), which power() overwrites
    half = _np.size(y) == 1 and _np.asarray(y).reshape(-1)[0] == 0.5
    neginf = _np.isneginf(x) if half else None
    r = _np.power(x, y, **kw)
    if half:
        r = _np.asarray(r)
        fixed = _np.where(neginf, _np.asarray(_np.inf, r.dtype), r) + _np.asarray(0.0, r.dtype)
        if r.ndim:
            r[...] = fixed               # (r may be the out= buffer)
        else:
            r = fixed
    return r


helpers(_ipow=_ipow, _fpow=_fpow)


# the ufuncs accel._kernels runs on float arrays (the native twin in C: a strided or broadcast operand costs
# numpy an inner loop per row)
_KERNEL_UFUNCS = {"add": "_kadd", "subtract": "_ksubtract", "multiply": "_kmultiply", "true_divide": "_kdivide"}
helpers(_kadd=_kernels.add, _ksubtract=_kernels.subtract, _kmultiply=_kernels.multiply, _kdivide=_kernels.divide)


def _call(k, ufunc, x, y):
    """The call of binary ``ufunc`` on expressions x, y with k's keywords: accel._kernels' when it writes a
    float32 / float64 buffer of the program with no cast and neither operand is a number."""
    f = _KERNEL_UFUNCS.get(ufunc)
    if (f is not None and k.buf is not None and k.kw == f", out={k.buf}" and k.code in (D.FLOAT32, D.FLOAT64)
            and not any(k.is_scalar_param(m) for m in k.opnodes[:2])):
        return f"{f}({x}, {y}, {k.buf})"
    return f"_{ufunc}({x}, {y}{k.kw})"


def _k_ufunc(ufunc):
    def emit(k):
        if len(k.ins) == 2:
            k.line(f"{k.out} = {_call(k, ufunc, *k.ins)}")
        else:
            k.line(f"{k.out} = _{ufunc}({', '.join(k.ins)}{k.kw})")
    return emit


def _k_pow(k):
    if k.code == D.BFLOAT16 and k.is_scalar_param(k.opnodes[1]):
        # torch rounds a number exponent to the tensor's type (numpy, for half, does too)
        k.line(f"{k.out} = _fpow({k.ins[0]}, _round_bf16({k.ins[1]}){k.kw})")
        return
    if k.code in D.FLOATS:
        k.line(f"{k.out} = _fpow({', '.join(k.ins)}{k.kw})")
    else:
        k.line(f"{k.out} = _ipow({k.ins[0]}, {k.ins[1]}, {k.dt})")


def _k_add_sub(k):
    ins, out, kw, dt = k.ins, k.out, k.kw, k.dt
    if k.kind == "aten::add" and k.code == D.BOOL:
        # bool + bool * alpha: alpha counts as a bool (numpy refuses to cast its int product to bool)
        k.line(f"{out} = _logical_or({k.x}, _logical_and({ins[1]}, {ins[2]} != 0){kw})")
        return
    f = "_add" if k.kind == "aten::add" else "_subtract"
    y, a = ins[1], ins[2]
    if k.code in _NARROW_INTS:
        a = f"_checked_int({a}, {k.code})"        # torch's checked conversion of alpha, at run time
    if k.code == D.FLOAT16:
        k.line(f"{out} = {f}({k.x}, {y}{kw}) if {ins[2]} == 1 else _half_alpha({f}, {k.x}, {y}, {a})")
        return
    if k.code == D.BFLOAT16:
        k.line(f"{out} = _bf16_alpha({f}, {k.x}, {y}, {a})")
        return
    k.line(f"{out} = {_call(k, f[1:], k.x, y)} if {ins[2]} == 1 else "
           f"{f}({k.x}, _multiply({y}, {a}, dtype={dt}, casting='unsafe'){kw})")


def _k_relu(k):
    k.line(f"{k.out} = _maximum({k.x}, 0{k.kw})")


def _k_reciprocal(k):
    k.line(f"{k.out} = _true_divide(1, {k.x}{k.kw})")


def _k_rsqrt(k):
    if k.code in (D.FLOAT16, D.BFLOAT16):
        k.line(f"{k.out} = _rsqrt_reduced({k.x}, {k.code})")
        return
    k.line(f"{k.out} = _true_divide(1, _sqrt({k.x}, dtype={k.dt}){', out=' + k.buf if k.buf else ''})")


_VEC = 32          # torch's CPU loop: whole vectors of 32 half / bfloat16 values, then a scalar tail


def _rsqrt_reduced(x, code):
    """half / bfloat16 rsqrt as torch's CPU kernel computes it: 1 / sqrt in float, rounded once, over the
    whole vectors; the scalar tail (the last numel % 32 values) rounds sqrt to the type first, then
    1 / it.  (A tensor above torch's grain size, 32768, is split per thread, each part with its own tail:
    this follows one part.)  bfloat16 values come and go as float32 arrays."""
    x = _np.asarray(x)
    f = x.astype(_np.float32)
    if code == D.BFLOAT16:
        rnd = D.round_bf16
    else:
        def rnd(a):
            return _np.asarray(a).astype(_np.float16)
    with _np.errstate(divide="ignore", invalid="ignore"):
        out = _np.array(rnd(_np.float32(1) / _np.sqrt(f)))
        n = out.size
        tail = n % _VEC
        if tail:
            flat = out.reshape(-1)
            t = f.reshape(-1)[n - tail:]
            flat[n - tail:] = rnd(_np.float32(1) / _np.asarray(rnd(_np.sqrt(t)), _np.float32))
    return out


def _half_alpha(f, x, y, alpha):
    """half x + alpha * y (f: numpy add or subtract) as torch computes it: in float, with y and alpha as half
    values, rounded once."""
    f32, f16 = _np.float32, _np.float16
    return f(_np.asarray(x, f16).astype(f32), _np.asarray(y, f16).astype(f32) * f32(f16(alpha))).astype(f16)


def _bf16_alpha(f, x, y, alpha):
    """bfloat16 x + alpha * y (float32 arrays holding bfloat16 values) as torch computes it: in float, with a
    number y and alpha rounded to bfloat16 first (the caller rounds the result)."""
    y = D.round_bf16(y)
    if alpha == 1:
        return f(x, y, dtype=_np.float32)
    return f(x, y * D.round_bf16(alpha), dtype=_np.float32)


helpers(_rsqrt_reduced=_rsqrt_reduced, _half_alpha=_half_alpha, _bf16_alpha=_bf16_alpha)


def _k_sigmoid(k):
    out, x = k.out, k.x
    if k.code == D.FLOAT16:          # torch computes half in float, rounding once
        k.line(f"{out} = _true_divide(1, _add(1, _exp(_negative({x}, dtype=_d{D.FLOAT32})))).astype({k.dt})")
        return
    if k.shape.sizes:
        k.line(f"{out} = _negative({x}{k.kw})")
        k.line(f"_exp({out}, out={out}); _add({out}, 1, out={out}); _true_divide(1, {out}, out={out})")
    else:
        k.line(f"{out} = _true_divide(1, _add(1, _exp(_negative({x}, dtype={k.dt}))))")


def _k_clamp(k):
    has_lo, has_hi = k.attrs[1]
    i = 1
    lo = hi = "None"
    if has_lo:
        lo, i = k.ins[i], i + 1
    if has_hi:
        hi = k.ins[i]
    k.line(f"{k.out} = _clip({k.x}, {lo}, {hi}{k.kw})")


_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
            "ge": "greater_equal"}


def _k_compare(k):
    # compared in torch's promoted dtype (numpy would promote int64 with float32 to float64)
    cmp = k.attrs[1]
    ins = k.ins
    samples = [_sample(o.node, k.is_param(o.node), o.index) for o in k.node.operands]
    if cmp == D.FLOAT16:            # torch casts a number to the compared type (numpy compares its exact value)
        ins = [f"_astype({v}, _d{cmp})" for v in ins]
    elif cmp == D.BFLOAT16:
        ins = [f"_round_bf16({v})" for v in ins]
    elif _np.result_type(*samples) != D.CODE_TO_NP[cmp]:
        ins = [f"_astype({v}, _d{cmp})" for v in ins]
    elif cmp in _NARROW_INTS:
        # an integer read as a Python int wraps around to the compared dtype, as torch casts it
        # (uint8 t < -2 is t < 254)
        ins = [f"_wrap_int({v}, _d{cmp})" if k.is_scalar_param(m) and m.shapes[0].dtype in D.INTS else v
               for v, m in zip(ins, k.opnodes)]
    k.line(f"{k.out} = _{_COMPARE[k.kind[6:]]}({ins[0]}, {ins[1]}{', out=' + k.buf if k.buf else ''})")


def _sample(node, is_param, index=0):
    """What numpy sees for a value (output ``index`` of ``node``): a Python scalar for a 0-dim parameter (weakly
    typed), else its dtype."""
    s = node.shapes[index]
    if is_param and not s.sizes:
        return {D.BOOL: True, D.FLOAT64: 0.0}.get(s.dtype, 0.0 if s.dtype in D.FLOATS else 0)
    return D.CODE_TO_NP[s.dtype]


# ---------------------------------------------------------------- eager kernels (no lazy kernel in LTC)
def _eager_sin(args):
    x = _np.asarray(args[0])
    return _np.sin(x if x.dtype.kind == "f" else x.astype(_np.float32))


def _eager_rpow(args):                       # number ** tensor
    x = _np.asarray(args[0])
    if x.dtype.kind == "f":
        return _fpow(args[1], x.astype(_np.float64))
    if type(args[1]) is float:
        return _np.power(args[1], x)
    return _ipow(args[1], x, _np.result_type(x, args[1]) if x.dtype.kind != "b" else _np.int64)


# ---------------------------------------------------------------- the declarations
def _ew(kind, emit, weak=False, natural="all"):
    return Kernel(kind, emit, ewise=True, weak=weak, natural=natural)


def _fn(name, method=None):
    """A module function ``name(input, ...)``: the method of the same name, after checking ``input``."""
    def f(input, *args, **kwargs):
        if type(input) is not LazyTensor:
            raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(input).__name__}: "
                            f"{input!r}")
        return getattr(input, method or name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.{name} on a lazy tensor."
    return f


def _method(name):
    return {name: _FAST[name]}


def _pow_fn(input, exponent):
    if type(input) is not LazyTensor and type(exponent) is LazyTensor:
        return exponent.__rpow__(input)
    return _fn("pow")(input, exponent)


declare("add", {k: _FAST[k] for k in ("add", "__add__", "__radd__")}, {"add": _fn("add")},
        [_ew("aten::add", _k_add_sub, weak=True, natural="two")])
declare("sub", {"sub": _FAST["sub"], "__sub__": _FAST["sub"], "__rsub__": lambda self, other: _rsub(self, other)},
        {"sub": _fn("sub")}, [_ew("aten::sub", _k_add_sub, weak=True, natural="two")])
declare("mul", {k: _FAST[k] for k in ("mul", "__mul__", "__rmul__")}, {"mul": _fn("mul")},
        [_ew("aten::mul", _k_ufunc("multiply"), weak=True)])
declare("div", {"div": _FAST["div"], "__truediv__": _FAST["div"],
                "__rtruediv__": lambda self, other: _rdiv(self, other)},
        {"div": _fn("div")}, [_ew("aten::div", _k_ufunc("true_divide"), weak=True)])
declare("pow", {"pow": _FAST["pow"], "__pow__": _FAST["pow"], "__rpow__": lambda self, other: _rpow(self, other)},
        {"pow": _pow_fn}, [_ew("aten::pow", _k_pow, weak=True)], eager={"rpow": _eager_rpow})
declare("maximum", {"maximum": lambda self, other: _binary_tt("maximum", self, other)}, {"maximum": _fn("maximum")},
        [_ew("aten::maximum", _k_ufunc("maximum"), weak=True)])
declare("minimum", {"minimum": lambda self, other: _binary_tt("minimum", self, other)}, {"minimum": _fn("minimum")},
        [_ew("aten::minimum", _k_ufunc("minimum"), weak=True)])

_UNARY_KERNELS = {"neg": _k_ufunc("negative"), "abs": _k_ufunc("absolute"), "exp": _k_ufunc("exp"),
                  "log": _k_ufunc("log"), "sqrt": _k_ufunc("sqrt"), "cos": _k_ufunc("cos"),
                  "tanh": _k_ufunc("tanh"), "relu": _k_relu}
for _name, _emit_k in _UNARY_KERNELS.items():
    declare(_name, _method(_name) if _name not in ("neg", "abs") else
            {_name: _FAST[_name], f"__{_name}__": _FAST[_name]},
            {_name: _fn(_name)}, [_ew("aten::" + _name, _emit_k)])
for _name, _emit_k in (("rsqrt", _k_rsqrt), ("sigmoid", _k_sigmoid), ("reciprocal", _k_reciprocal)):
    declare(_name, _method(_name), {_name: _fn(_name)}, [_ew("aten::" + _name, _emit_k, natural=None)])
declare("sin", {"sin": lambda self: _fallback_unary("sin", self)}, {"sin": _fn("sin")}, eager={"sin": _eager_sin})


def _cmp_method(name, operator):
    if operator:
        def f(self, other):
            return _compare(name, self, other, True)
    else:
        def f(self, other):
            return _compare(name, self, other)
    f.__name__ = f.__qualname__ = name if not operator else f"__{name}__"
    return f


for _name in _COMPARE:
    declare(_name, {_name: _cmp_method(_name, False), f"__{_name}__": _cmp_method(_name, True)},
            {_name: _fn(_name)}, [_ew("aten::" + _name, _k_compare)])
del _name, _emit_k


def _clamp_method(self, min=None, max=None):
    return _clamp(self, min, max)


declare("clamp", {"clamp": _clamp_method}, {"clamp": _fn("clamp")}, [_ew("aten::clamp", _k_clamp, weak=True)])


def _pow_class(node, attrs):            # a Python-number exponent is a Long/Double/Bool[] device-data operand
    return "PowTensorScalar" if T.is_number_operand(node, 1) else "PowTensorTensor"


def _cmp_class(name):
    def cls(node, attrs):          # gt.Scalar / gt.Tensor: GtScalar, GtTensor (LTC's node classes)
        return name + ("Scalar" if T.is_number_operand(node, 1) else "Tensor")
    return cls


classes(**{"aten::" + _n: _cmp_class(_n.capitalize()) for _n in _COMPARE})
classes(**{"aten::add": "AddTensor", "aten::sub": "SubTensor", "aten::mul": "MulTensor", "aten::div": "DivTensor",
           "aten::maximum": "Maximum", "aten::minimum": "Minimum", "aten::rsqrt": "Rsqrt", "aten::pow": _pow_class})
