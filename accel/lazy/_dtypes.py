"""dtype names (torch spelling, numpy dtypes), c10 codes, and torch's type promotion for the lazy tensors."""
import numpy as _np

from accel import _impl

# c10 ScalarType codes of the dtypes lazy tensors support.
BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, FLOAT32, FLOAT64 = 11, 0, 1, 2, 3, 4, 5, 6, 7
# c10::ScalarType::Undefined as torch 2.13 numbers it (its last dtype is Float4_e2m1fn_x2, 45): the dtype of
# the Shape() outputs LTC gives native_batch_norm without running statistics, hashed as this code.  The IR
# layer follows libtorch 2.15, where 46 is BComplex32 and Undefined 47; the lazy tensors' texts (shape_text)
# print this code as torch 2.13 does.
UNDEFINED = 46
CODE_TO_NP = {BOOL: _np.dtype(_np.bool_), UINT8: _np.dtype(_np.uint8), INT8: _np.dtype(_np.int8),
              INT16: _np.dtype(_np.int16), INT32: _np.dtype(_np.int32), INT64: _np.dtype(_np.int64),
              FLOAT16: _np.dtype(_np.float16), FLOAT32: _np.dtype(_np.float32), FLOAT64: _np.dtype(_np.float64)}
NP_TO_CODE = {dt: c for c, dt in CODE_TO_NP.items()}


class BFloat16Type:
    """The dtype object of bfloat16 (numpy has none): ``accel.lazy.bfloat16``.  A bfloat16 tensor's values
    are stored as float32 arrays holding bfloat16 values exactly (every result rounded to nearest-even
    bfloat16, as torch rounds its float computation), so ``numpy()`` gives them as float32."""
    name = "bfloat16"
    itemsize = 2
    kind = "f"

    def __repr__(self):
        return "accel.lazy.bfloat16"

    def __str__(self):
        return "bfloat16"

    def __reduce__(self):
        return (_bfloat16, ())


def _bfloat16():
    return bfloat16


bfloat16 = BFloat16Type()
BFLOAT16 = 15
CODE_TO_NP[BFLOAT16] = _np.dtype(_np.float32)      # its storage (NP_TO_CODE keeps float32 -> Float)
# the dtype objects tensors report (``.dtype``): numpy's, and bfloat16's own
DTYPES = dict(CODE_TO_NP)
DTYPES[BFLOAT16] = bfloat16
FLOATS = frozenset((FLOAT16, FLOAT32, FLOAT64, BFLOAT16))


def round_bf16(x):
    """float32 values rounded to the nearest bfloat16 (ties to even; NaN stays NaN), as float32."""
    a = _np.array(x, _np.float32, copy=True)
    bits = a.view(_np.uint32)
    nan = _np.isnan(a)
    bits += _np.uint32(0x7FFF) + ((bits >> _np.uint32(16)) & _np.uint32(1))
    bits &= _np.uint32(0xFFFF0000)
    if nan.any():
        a[nan] = _np.nan
    return a
INTS = frozenset((UINT8, INT8, INT16, INT32, INT64))
DEFAULT_FLOAT = FLOAT32

# C++ names of the integral dtypes in c10's conversion errors.
INT_C_NAMES = {UINT8: "uint8_t", INT8: "int8_t", INT16: "int16_t", INT32: "int", INT64: "int64_t"}


def checked_int(v, code):
    """A Python number converted to integral dtype ``code`` as c10's checked Scalar conversion does (a fill
    value, add / sub's alpha): an int must be in the dtype's range, except that a negative one down to -max
    wraps around in an unsigned dtype (uint8: -1 is 255, as ``a - b`` is ``a + 255 * b``); a float must be
    in the range before truncation (uint8: -0.5 and 255.5 are refused; inf and NaN too)."""
    info = _np.iinfo(CODE_TO_NP[code])
    if type(v) is float:
        if info.min <= v <= info.max:
            return int(v)
    elif info.min <= v <= info.max:
        return int(v)
    elif info.min == 0 and -info.max <= v < 0:
        return int(v) + info.max + 1
    raise RuntimeError(f"value cannot be converted to type {INT_C_NAMES[code]} without overflow")


# Priorities of an operand in torch's result_type: a tensor with dims, a 0-dim tensor, a Python number.
DIM, ZERO_DIM, WRAPPED = 2, 1, 0


def category(code):
    """0 bool, 1 integral, 2 floating."""
    return 2 if code in FLOATS else (1 if code in INTS else 0)


def promote_types(a, b):
    """c10::promoteTypes for the supported codes (numpy's table agrees on these)."""
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:                       # torch: the higher category's type (Long + Float = Float)
        return a if ca > cb else b
    return NP_TO_CODE[_np.promote_types(CODE_TO_NP[a], CODE_TO_NP[b])]


def _combine_categories(higher, lower):
    # at::native::combine_categories (TensorIterator's result_type), without complex types.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher in FLOATS:
        return higher
    if higher == BOOL or lower in FLOATS:
        return promote_types(higher, lower)
    return higher


def result_type(operands):
    """torch.result_type over (code, priority) pairs: dim tensors win over 0-dim tensors over Python numbers
    unless a lower group has a higher category; a Python float counts as the default float dtype."""
    res = [None, None, None]
    for code, prio in operands:
        if prio == WRAPPED and code in FLOATS:
            code = DEFAULT_FLOAT
        cur = res[prio]
        res[prio] = code if cur is None else promote_types(cur, code)
    return _combine_categories(res[DIM], _combine_categories(res[ZERO_DIM], res[WRAPPED]))


def to_code(dtype, what="dtype"):
    """The code of a dtype given as a numpy dtype, a numpy type, accel.lazy.bfloat16 or a name like
    'float32' / 'bfloat16'."""
    if dtype is bfloat16 or (type(dtype) is str and dtype in ("bfloat16", "torch.bfloat16")):
        return BFLOAT16
    try:
        dt = _np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{what} must be a dtype (e.g. accel.lazy.float32), got {type(dtype).__name__}: "
                        f"{dtype!r}") from None
    code = NP_TO_CODE.get(dt)
    if code is None:
        raise TypeError(f"{what} {dt} is not supported by lazy tensors; expected one of "
                        f"{', '.join(str(d) for d in DTYPES.values())}")
    return code


# c10 ScalarType codes of the numpy dtypes that have one (BFloat16, quantized and float8 types do not).
_CODE_TO_NUMPY = {0: _np.uint8, 1: _np.int8, 2: _np.int16, 3: _np.int32, 4: _np.int64, 5: _np.float16,
                  6: _np.float32, 7: _np.float64, 9: _np.complex64, 10: _np.complex128, 11: _np.bool_,
                  27: _np.uint16, 28: _np.uint32, 29: _np.uint64}
_NUMPY_TO_CODE = {_np.dtype(t): c for c, t in _CODE_TO_NUMPY.items()}


def dtype_to_code(dtype):
    """The c10 ScalarType code of a numpy dtype (e.g. float32 -> 6); TypeError if it has none."""
    try:
        dt = _np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype_to_code needs a numpy dtype, got {type(dtype).__name__}: {dtype!r}") from None
    code = _NUMPY_TO_CODE.get(dt.newbyteorder("=") if dt.byteorder not in "=|" else dt)
    if code is None:
        raise TypeError(f"numpy dtype {dt} has no c10 ScalarType code")
    return code


def code_to_dtype(code):
    """The numpy dtype of a c10 ScalarType code (e.g. 6 -> float32); ValueError if numpy has none."""
    t = _CODE_TO_NUMPY.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
    if t is None:
        name = _impl.module("_ir").scalar_type_name(code) if isinstance(code, int) else "?"
        raise ValueError(f"ScalarType code {code!r} ({name}) "
                         "has no numpy dtype")
    return _np.dtype(t)


def shape_text(shape):
    """A Shape as torch 2.13's LTC prints it in the lazy tensors' IR texts: ``Float[2,3]``, and
    ``UNKNOWN_SCALAR[0]`` for UNDEFINED (the IR layer's own str() follows libtorch 2.15's names)."""
    if shape.dtype == UNDEFINED:
        return f"UNKNOWN_SCALAR[{','.join(map(str, shape.sizes))}]"
    return str(shape)
