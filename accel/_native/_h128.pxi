# Included (textually) by _hash.pyx and _ir.pyx: the 128-bit hash type of _hash128.h and its
# conversions to and from Python ints, written once for both modules.
from libc.stdint cimport uint64_t
from cpython.long cimport PyLong_FromUnsignedLongLong, PyLong_AsUnsignedLongLongMask

cdef extern from "_hash128.h":
    ctypedef struct acc_h128:
        uint64_t lo
        uint64_t hi
    acc_h128 acc_mk(uint64_t hi, uint64_t lo)
    acc_h128 acc_combine(acc_h128 a, acc_h128 b)
    uint64_t acc_std_combine(uint64_t a, uint64_t b)
    uint64_t acc_reduce(acc_h128 h)
    acc_h128 acc_data_hash(const void *data, size_t n)
    acc_h128 acc_u64_hash(uint64_t v)

cdef object _M128 = (1 << 128) - 1
cdef object _TWO64 = 1 << 64


cdef inline str _tname(v):
    return type(v).__name__


cdef object _to_int(acc_h128 h):
    if h.hi == 0:
        return PyLong_FromUnsignedLongLong(h.lo)
    return (PyLong_FromUnsignedLongLong(h.hi) << 64) | PyLong_FromUnsignedLongLong(h.lo)


cdef acc_h128 _from_int(object v, str what) except *:
    if type(v) is not int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} must be an int, got {_tname(v)}: {v!r}")
        v = int(v)
    if v < 0 or v > _M128:
        raise ValueError(f"{what} must be in [0, 2**128), got {v}")
    if v < _TWO64:
        return acc_mk(0, PyLong_AsUnsignedLongLongMask(v))
    return acc_mk(PyLong_AsUnsignedLongLongMask(v >> 64), PyLong_AsUnsignedLongLongMask(v))
