"""Factories, as torch 2.13 LTC records them: ``empty`` (a new tensor holding data), ``zeros`` (empty then
``zero_``), ``ones`` / ``full`` (empty then ``fill_``: an ``aten::expand`` of a cached scalar), the ``*_like``
forms, ``arange`` (aten::arange of start / end / step scalars and an empty ``out``), ``eye`` / ``linspace``
(no lazy kernel: eager, as in LTC), and ``triu`` / ``tril``."""
import math

import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy import tensors as T
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import fallback
from accel.lazy.inplace import _MUTATED, sync
from accel.lazy.ops.inplace import fill_, zero_
from accel.lazy.tensors import (
    _as_number, _check_tensor, _device, _emit, _fn_counter, _index, _int_list, _scalar_node, _seed, _shape)


def _sizes(size, what):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    sizes = tuple(_int_list(tuple(size), f"{what}() size"))
    for n in sizes:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(sizes)}")
    return sizes


def _code(dtype, default=D.DEFAULT_FLOAT, what="dtype"):
    return default if dtype is None else D.to_code(dtype, what)


def _empty(sizes, code):
    """A new tensor of ``sizes`` holding (zero-filled) data, as LTC's empty on the lazy device: a tensor made
    from CPU data (0-dim ones go through the device-data cache when read)."""
    a = _np.zeros(sizes, D.CODE_TO_NP[code])
    a.flags.writeable = False
    t = T._wrap(None, _shape(code, sizes))
    t._src = T.Data(a)
    if not sizes:
        T._UNINIT.add(t._src)
    return t


def empty(*size, dtype=None, device=None):
    _device(device)
    return _empty(_sizes(size, "empty"), _code(dtype))


def zeros(*size, dtype=None, device=None):
    _device(device)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    if any(type(n) is int and n < 0 for n in size):
        raise RuntimeError("zeros: Dimension size must be non-negative.")       # LTC's own zeros check
    return zero_(_empty(_sizes(size, "zeros"), _code(dtype)))


def ones(*size, dtype=None, device=None):
    _device(device)
    return fill_(_empty(_sizes(size, "ones"), _code(dtype)), 1)


def _fill_code(v, dtype):
    if dtype is not None:
        return D.to_code(dtype)
    t = type(v)
    return D.BOOL if t is bool else (D.INT64 if t is int else D.DEFAULT_FLOAT)


def full(size, fill_value, dtype=None, device=None):
    _device(device)
    v = _as_number(fill_value)
    if v is None:
        raise TypeError(f"full(): fill_value must be a Python number, got {type(fill_value).__name__}: "
                        f"{fill_value!r}")
    sizes = _sizes((size,) if not isinstance(size, (tuple, list)) else tuple(size), "full")
    return fill_(_empty(sizes, _fill_code(v, dtype)), v)


def _fresh(t):
    """A ``*_like`` result: torch fills it below functionalisation, so its storage counts as never updated
    (views of it are not regenerated; zeros / ones / full fill above it, and theirs are)."""
    t._base = None
    return t


def _mutated(t):
    """An ``out=`` factory's result (linspace, eye): its storage was written, as arange's."""
    t._base = _MUTATED
    return t


def _like(x, what):
    _check_tensor(x, f"{what}() input")
    sync(x)                              # torch's functionalisation syncs every tensor input, a stale alias too
    return x._shape.sizes


def empty_like(input, dtype=None, device=None):
    _device(device)
    return _empty(_like(input, "empty_like"), _code(dtype, input._shape.dtype))


def zeros_like(input, dtype=None, device=None):
    _device(device)
    sizes = _like(input, "zeros_like")
    _fn_counter("_copy_from")[0] += 1           # LTC's zeros_like copies the empty result (lazy::_copy_from)
    return _fresh(zero_(_empty(sizes, _code(dtype, input._shape.dtype))))


def ones_like(input, dtype=None, device=None):
    _device(device)
    return _fresh(fill_(_empty(_like(input, "ones_like"), _code(dtype, input._shape.dtype)), 1))


def full_like(input, fill_value, dtype=None, device=None):
    _device(device)
    sizes = _like(input, "full_like")
    return _fresh(fill_(_empty(sizes, _code(dtype, input._shape.dtype)), fill_value))


def arange(start, end=None, step=1, dtype=None, device=None):
    _device(device)
    """torch.arange on the lazy device: aten::arange(start, end, step, out) with the numbers as cached scalar
    device data and ``out`` an empty tensor of the result dtype (Long for integers, else the default float)."""
    if end is None:
        start, end = 0, start
    vals = []
    for name, v in (("start", start), ("end", end), ("step", step)):
        n = _as_number(v)
        if n is None or type(n) is bool:
            raise TypeError(f"arange(): {name} must be a Python number, got {type(v).__name__}: {v!r}")
        vals.append(n)
    s0, e0, st = vals
    if dtype is None:
        code = D.INT64 if all(type(v) is int for v in vals) else D.DEFAULT_FLOAT
    else:
        code = D.to_code(dtype, "arange() dtype")
    if not all(math.isfinite(v) for v in vals):
        raise RuntimeError(f"unsupported range: {s0} -> {e0}")
    if st == 0:
        raise RuntimeError("step must be nonzero")
    if (st > 0 and e0 < s0) or (st < 0 and e0 > s0):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if code in D.INTS and all(type(v) is int for v in vals):
        n = -((s0 - e0) // st) if st > 0 else -((e0 - s0) // -st)
    else:
        n = math.ceil((e0 - s0) / st)
    _fn_counter("arange_out")[0] += 1
    out = T._dd(_shape(code, (0,)), T.Data(_np.empty(0, D.CODE_TO_NP[code])))
    operands = (_scalar_node(s0), _scalar_node(e0), _scalar_node(st), out)
    t = _emit("aten::arange", operands, code, (int(n),), None, "aten::arange", int(n))
    t._base = _MUTATED        # arange.out wrote its result into the empty tensor: an updated storage (views of it
    return t                  # are born stale and regenerated when used, as torch's functionalisation does)


def eye(n, m=None, dtype=None, device=None):
    _device(device)
    n = _index(n, "eye(): n")
    m = n if m is None else _index(m, "eye(): m")
    if n < 0 or m < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {min(n, m)}")
    _fn_counter("_copy_from_and_resize")[0] += 1
    return _mutated(fallback("aten::eye.m_out", "eye", [], _code(dtype), (n, m)))


def linspace(start, end, steps, dtype=None, device=None):
    _device(device)
    a, b = _as_number(start), _as_number(end)
    if a is None or b is None:
        raise TypeError(f"linspace(): start and end must be Python numbers, got {start!r}, {end!r}")
    steps = _index(steps, "linspace(): steps")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    _fn_counter("_copy_from_and_resize")[0] += 1
    return _mutated(fallback("aten::linspace.out", "linspace", [], _code(dtype), (a, b, steps)))


def _tri(name, a, diagonal):
    _check_tensor(a, f"{name}() input")
    s = a._shape
    if len(s.sizes) < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    d = _index(diagonal, f"{name}(): diagonal")
    _fn_counter(name)[0] += 1
    return _emit("aten::" + name, (a._ir(),), s.dtype, s.sizes, _seed(d), "aten::" + name, d, f"diagonal={d}")


# ---------------------------------------------------------------- kernels
def _np_arange(start, step, n, dt):
    start, step = start.item(), step.item()
    if _np.dtype(dt).kind in "iub" and type(start) is int and type(step) is int:
        return (_np.arange(n, dtype=_np.int64) * step + start).astype(dt)
    return (start + _np.arange(n, dtype=_np.float64) * step).astype(dt)


helpers(_arange=_np_arange, _triu=_np.triu, _tril=_np.tril)


def _k_arange(k):
    k.line(f"{k.out} = _arange({k.ins[0]}, {k.ins[2]}, {k.attrs[1]}, {k.dt})")


def _k_tri(k):
    k.line(f"{k.out} = _{k.kind[6:]}({k.x}, {k.attrs[1]})")


def _eager_eye(args, n, m):
    return _np.eye(n, m)


def _eager_linspace(args, a, b, steps):
    return _np.linspace(a, b, steps)


def _triu_m(self, diagonal=0):
    return _tri("triu", self, diagonal)


def _tril_m(self, diagonal=0):
    return _tri("tril", self, diagonal)


def triu(input, diagonal=0):
    _check_tensor(input, "triu() input")
    return _tri("triu", input, diagonal)


def tril(input, diagonal=0):
    _check_tensor(input, "tril() input")
    return _tri("tril", input, diagonal)


for _f in (empty, zeros, ones, full, empty_like, zeros_like, ones_like, full_like):
    declare(_f.__name__, {}, {_f.__name__: _f})
del _f
declare("arange", {}, {"arange": arange}, [Kernel("aten::arange", _k_arange)])
declare("eye", {}, {"eye": eye}, eager={"eye": _eager_eye})
declare("linspace", {}, {"linspace": linspace}, eager={"linspace": _eager_linspace})
declare("triu", {"triu": _triu_m}, {"triu": triu}, [Kernel("aten::triu", _k_tri)])
declare("tril", {"tril": _tril_m}, {"tril": tril}, [Kernel("aten::tril", _k_tri)])
classes(**{"aten::arange": "ArangeOut", "aten::triu": "Triu", "aten::tril": "Tril"})


