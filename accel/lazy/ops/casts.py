"""Casts: ``to(dtype)`` as aten::_to_copy (and, with layout=Strided, the cast functionalisation records
when an in-place op's result has another dtype than its tensor)."""
from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy._optable import Kernel, classes, declare
from accel.lazy.tensors import _NULL, LazyTensor, _check_tensor, _dtype_hash, _dtype_name, _emit, _fn_counter

_hash = _impl.module("_hash")


_TO_COPY_NULLS = (_NULL, _NULL, _NULL)


_STRIDED = _hash.hash_scalar(0, "int8")        # c10::Layout::Strided


def _to(a, dtype, layout=False):
    """a.to(dtype): aten::_to_copy; ``layout``: with layout=Strided, as functionalisation casts an in-place
    op's result back to the tensor's dtype."""
    _check_tensor(a, "to() input")
    code = D.to_code(dtype, "to() dtype")
    s = a._shape
    if code == s.dtype:
        return a
    _fn_counter("_to_copy")[0] += 1
    nulls = (_STRIDED, _NULL, _NULL) if layout else _TO_COPY_NULLS
    seed = _hash.mhash_hashes((_dtype_hash(code),) + nulls + (_hash.hash_value(False), _NULL))
    return _emit("aten::_to_copy", (a._ir(),), code, s.sizes, seed, "aten::_to_copy", None,
                 f"dtype={_dtype_name(code)}, layout={'Strided' if layout else 'null'}, device=null, "
                 "pin_memory=null, non_blocking=0, memory_format=null")


def to_copy(a, dtype, layout=False):
    """``a`` cast to ``dtype`` (the tensor itself when it has it); see _to."""
    return _to(a, dtype, layout)


def _k_to_copy(k):
    k.line(f"{k.out} = _astype({k.x}, {k.dt})")


def _to_method(self, dtype):
    """to(dtype), to(other) (other's dtype) or to("float32") (a dtype name)."""
    if type(dtype) is LazyTensor:            # to(other): other's dtype
        dtype = dtype.dtype
    return _to(self, dtype)


def _type_as(self, other):
    _check_tensor(other, "type_as() other")
    return _to(self, other.dtype, layout=True)      # torch's type_as passes other's options (layout Strided)


def _cast_method(name, code):
    def f(self):
        return _to(self, D.DTYPES[code])
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"self.to({D.DTYPES[code]}) (aten::_to_copy; the tensor itself when it has that dtype)."
    return f


declare("to", {"to": _to_method, "type_as": _type_as}, {}, [Kernel("aten::_to_copy", _k_to_copy)])
declare("dtype casts", {n: _cast_method(n, c) for n, c in (
    ("half", D.FLOAT16), ("float", D.FLOAT32), ("double", D.FLOAT64), ("long", D.INT64), ("int", D.INT32),
    ("short", D.INT16), ("char", D.INT8), ("byte", D.UINT8), ("bool", D.BOOL), ("bfloat16", D.BFLOAT16))})
classes(**{"aten::_to_copy": "ToCopy"})
