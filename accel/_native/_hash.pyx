# cython: binding=True
"""Cython twin of accel._python._hash: LTC's 128-bit hash primitives (hash.h / hash.cpp).

Hashes are Python ints in [0, 2**128); every function matches libtorch 2.15 bit for bit.
"""
import operator as _operator
import struct as _struct

from libc.stdint cimport uint64_t
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBuffer_IsContiguous, PyObject_CheckBuffer,
                             PyBUF_STRIDES)
from cpython.long cimport PyLong_FromUnsignedLongLong, PyLong_AsUnsignedLongLongMask

include "_h128.pxi"


HASH_SEED = 0xA2D296E9            # kHashSeed: uint32(0x5a2d296e9)
NULL_OPT = 0x8655D738F3678DDA     # kNullOpt

cdef object _M64 = (1 << 64) - 1
cdef uint64_t _CONTAINER_SEED = 0x85EBCA77C2B2AE63
cdef uint64_t _MHASH_SEED = 0x165667B19E3779F9
cdef uint64_t _BOOLVEC_SEED = 0xAD2ED1983BBF2E28
cdef uint64_t _BOOL_TRUE = 0x74F6B5198DAA2B2
cdef uint64_t _BOOL_FALSE = 0xE39F30789CAB5382
cdef uint64_t _NULL_OPT = 0x8655D738F3678DDA

_CTYPES = {"int8": (1, True), "uint8": (1, False), "int16": (2, True), "uint16": (2, False),
           "int32": (4, True), "uint32": (4, False), "int64": (8, True), "uint64": (8, False),
           "size_t": (8, False), "scalar_type": (1, True), "bool": (1, False)}




cdef uint64_t _from_u64(object v, str what) except? 0:
    if type(v) is not int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} must be an int, got {_tname(v)}: {v!r}")
        v = int(v)
    if v < 0 or v > _M64:
        raise ValueError(f"{what} must be in [0, 2**64), got {v}")
    return PyLong_AsUnsignedLongLongMask(v)


cdef acc_h128 _buffer_hash(object data, str what) except *:
    cdef Py_buffer view
    if type(data) is bytes:
        return acc_data_hash(<const char*>data, len(<bytes>data))
    if not PyObject_CheckBuffer(data):
        raise TypeError(f"{what} needs a bytes-like object or a C-contiguous numpy array, "
                        f"got {_tname(data)}: {data!r}")
    PyObject_GetBuffer(data, &view, PyBUF_STRIDES)
    try:
        if not PyBuffer_IsContiguous(&view, b'C'):
            raise ValueError(f"{what} needs a C-contiguous buffer, got a non-contiguous {_tname(data)}")
        return acc_data_hash(view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)


def data_hash(data):
    """DataHash of the raw bytes of a bytes-like object or C-contiguous numpy array (TypeError/ValueError otherwise)."""
    return _to_int(_buffer_hash(data, "data_hash"))


def string_hash(s):
    """StringHash(const char*): DataHash of the UTF-8 bytes of ``s`` up to the first NUL (C strlen)."""
    if type(s) is not str:
        raise TypeError(f"string_hash argument must be a str, got {_tname(s)}: {s!r}")
    cdef bytes b = (<str>s).encode("utf-8")
    cdef Py_ssize_t z = b.find(b"\0")
    if z >= 0:
        b = b[:z]
    return _to_int(acc_data_hash(<const char*>b, len(b)))


def hash_combine(a, b):
    """HashCombine(a, b) on 128-bit ints (not symmetric)."""
    cdef acc_h128 x = _from_int(a, "hash_combine a")
    cdef acc_h128 y = _from_int(b, "hash_combine b")
    return _to_int(acc_combine(x, y))


def std_hash_combine(a, b):
    """StdHashCombine(a, b) on 64-bit ints (size_t result)."""
    cdef uint64_t x = _from_u64(a, "std_hash_combine a")
    cdef uint64_t y = _from_u64(b, "std_hash_combine b")
    return PyLong_FromUnsignedLongLong(acc_std_combine(x, y))


def hash_reduce(h):
    """HashReduce: StdHashCombine(low 64 bits, high 64 bits) of a 128-bit hash."""
    return PyLong_FromUnsignedLongLong(acc_reduce(_from_int(h, "hash_reduce argument")))


def std_data_hash(data):
    """StdDataHash: HashReduce(DataHash(data))."""
    return PyLong_FromUnsignedLongLong(acc_reduce(_buffer_hash(data, "data_hash")))


def hash_to_string(h):
    """HashToString: high word in hex without padding, then the low word as 16 hex digits."""
    cdef acc_h128 x = _from_int(h, "hash_to_string argument")
    return format(PyLong_FromUnsignedLongLong(x.hi), "x") + format(PyLong_FromUnsignedLongLong(x.lo), "016x")


cdef acc_h128 _bytes_hash(bytes b):
    return acc_data_hash(<const char*>b, len(b))


def hash_scalar(value, ctype):
    """Hash(T) of a C arithmetic value: ctype is int8..uint64, size_t, scalar_type, bool, float or double."""
    if type(ctype) is not str:
        raise TypeError(f"hash_scalar ctype must be a str, got {_tname(ctype)}: {ctype!r}")
    if ctype == "float" or ctype == "double":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _to_int(_bytes_hash(_struct.pack("<f" if ctype == "float" else "<d", value)))
        raise TypeError(f"hash_scalar({ctype}) needs a float, got {_tname(value)}: {value!r}")
    spec = _CTYPES.get(ctype)
    if spec is None:
        raise ValueError(f"hash_scalar ctype must be one of int8, uint8, int16, uint16, int32, uint32, int64, "
                         f"uint64, size_t, scalar_type, bool, float, double; got {ctype!r}")
    size, signed = spec
    try:
        v = _operator.index(value)
    except TypeError:
        raise TypeError(f"hash_scalar({ctype}) needs an int, got {_tname(value)}: {value!r}") from None
    lo = -(1 << (8 * size - 1)) if signed else 0
    hi = (1 << (8 * size - (1 if signed else 0))) - 1
    if ctype == "bool":
        hi = 1
    if v < lo or v > hi:
        raise ValueError(f"hash_scalar({ctype}) value {v} is out of range [{lo}, {hi}]")
    return _to_int(_bytes_hash(v.to_bytes(size, "little", signed=signed)))


cdef acc_h128 _value_hash(object value) except *:
    cdef unsigned char c
    cdef acc_h128 h
    t = type(value)
    if value is None:
        return acc_mk(0, _NULL_OPT)
    if t is bool:
        c = 1 if value else 0
        return acc_data_hash(&c, 1)
    if t is int:
        if value < -(1 << 63) or value > _M64:
            raise ValueError(f"hash_value int {value} is out of the int64/uint64 range")
        return acc_u64_hash(PyLong_AsUnsignedLongLongMask(value))
    if t is float:
        return _bytes_hash(_struct.pack("<d", value))
    if t is str:
        return _bytes_hash((<str>value).encode("utf-8"))
    if t is list or t is tuple:
        if value and all(type(e) is bool for e in value):
            h = acc_mk(0, _BOOLVEC_SEED)
            for e in value:
                h = acc_combine(h, acc_mk(0, _BOOL_TRUE if e else _BOOL_FALSE))
            return h
        h = acc_mk(0, _CONTAINER_SEED)
        for e in value:
            h = acc_combine(h, _value_hash(e))
        return h
    if not PyObject_CheckBuffer(value):
        raise TypeError(f"hash_value cannot hash {_tname(value)}: {value!r}; expected None, bool, int, float, "
                        f"str, a buffer or a list/tuple of those")
    return _buffer_hash(value, "hash_value")


def hash_value(value):
    """Hash(x) by Python type: None=kNullOpt, bool, int=int64, float=double, str, buffer=DataHash, list/tuple=container."""
    return _to_int(_value_hash(value))


def container_hash(values):
    """ContainerHash: left fold of hash_combine over hash_value of each element, from 0x85ebca77c2b2ae63."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"container_hash needs an iterable of values, got {_tname(values)}: {values!r}")
    cdef acc_h128 h = acc_mk(0, _CONTAINER_SEED)
    for e in values:
        h = acc_combine(h, _value_hash(e))
    return _to_int(h)


def mhash(*values):
    """MHash(a1..an): right fold HashCombine(Hash(a1), HashCombine(..., 0x165667b19e3779f9)) with hash_value."""
    cdef acc_h128 h = acc_mk(0, _MHASH_SEED)
    cdef Py_ssize_t i
    for i in range(len(values) - 1, -1, -1):
        h = acc_combine(_value_hash(values[i]), h)
    return _to_int(h)


def mhash_hashes(hashes):
    """MHash over already-hashed 128-bit values (C++ hash_t arguments): the same right fold."""
    hs = [_to_int(_from_int(x, "mhash_hashes element")) for x in hashes]
    cdef acc_h128 h = acc_mk(0, _MHASH_SEED)
    cdef Py_ssize_t i
    for i in range(len(hs) - 1, -1, -1):
        h = acc_combine(_from_int(hs[i], "mhash_hashes element"), h)
    return _to_int(h)


def hash_bool_vector(values):
    """Hash(std::vector<bool>): fold from 0xad2ed1983bbf2e28 with fixed true/false constants."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"hash_bool_vector needs an iterable of bools, got {_tname(values)}: {values!r}")
    cdef acc_h128 h = acc_mk(0, _BOOLVEC_SEED)
    for e in values:
        h = acc_combine(h, acc_mk(0, _BOOL_TRUE if e else _BOOL_FALSE))
    return _to_int(h)
