"""Pure-Python twin of accel._native._hash: LTC's 128-bit hash primitives (hash.h / hash.cpp).

Hashes are Python ints in [0, 2**128); every function matches libtorch 2.15 bit for bit.
"""
import operator as _operator
import os as _os
import struct as _struct
import threading as _threading

_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1
_MUR = 0xC6A4A7935BD1E995                 # MurmurHash multiplier m
_DATA_SEED = 0xC2B2AE3D27D4EB4F
_KB = (101 << 64) | 0x27D4EB2F165667C5   # HashCombine multiplier
_GOLD = 0x9E3779B97F4A7C15
_STD_KB = 0x27D4EB2F165667C5
_CONTAINER_SEED = 0x85EBCA77C2B2AE63
_MHASH_SEED = 0x165667B19E3779F9
_BOOLVEC_SEED, _BOOL_TRUE, _BOOL_FALSE = 0xAD2ED1983BBF2E28, 0x74F6B5198DAA2B2, 0xE39F30789CAB5382

HASH_SEED = 0xA2D296E9            # kHashSeed: uint32(0x5a2d296e9)
NULL_OPT = 0x8655D738F3678DDA     # kNullOpt

_CTYPES = {"int8": (1, True), "uint8": (1, False), "int16": (2, True), "uint16": (2, False),
           "int32": (4, True), "uint32": (4, False), "int64": (8, True), "uint64": (8, False),
           "size_t": (8, False), "scalar_type": (1, True), "bool": (1, False)}


# ----------------------------------------------------------------------------- hash primitives

def _tname(v):
    return type(v).__name__


def _uint(v, what, bits, limit):
    """``v`` as a plain int in [0, 2**bits); TypeError / ValueError naming ``what`` and the value."""
    if type(v) is not int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} must be an int, got {_tname(v)}: {v!r}")
        v = int(v)
    if v < 0 or v > limit:
        raise ValueError(f"{what} must be in [0, 2**{bits}), got {v}")
    return v


def _u128(v, what):
    return _uint(v, what, 128, _M128)


def _u64(v, what):
    return _uint(v, what, 64, _M64)


def _hash_block(data, seed):
    n = len(data)
    h = seed ^ (n * _MUR)
    m = _MUR
    for i in range(0, n, 16):
        k = int.from_bytes(data[i:i + 16], "little")
        k = (k * m) & _M128
        k ^= k >> 47
        k = (k * m) & _M128
        h ^= k
        h = (h * m) & _M128
    h ^= h >> 47
    h = (h * m) & _M128
    return h ^ (h >> 47)


def _as_bytes(data, what):
    if type(data) is bytes:
        return data
    try:
        mv = memoryview(data)
    except TypeError:
        raise TypeError(f"{what} needs a bytes-like object or a C-contiguous numpy array, "
                        f"got {_tname(data)}: {data!r}") from None
    with mv:
        if not mv.c_contiguous:
            raise ValueError(f"{what} needs a C-contiguous buffer, got a non-contiguous {_tname(data)}")
        return mv.tobytes()


def data_hash(data):
    """DataHash of the raw bytes of a bytes-like object or C-contiguous numpy array (TypeError/ValueError otherwise)."""
    return _hash_block(_as_bytes(data, "data_hash"), _DATA_SEED)


def _str_bytes(s, what):
    if type(s) is not str:
        raise TypeError(f"{what} must be a str, got {_tname(s)}: {s!r}")
    return s.encode("utf-8")


def string_hash(s):
    """StringHash(const char*): DataHash of the UTF-8 bytes of ``s`` up to the first NUL (C strlen)."""
    b = _str_bytes(s, "string_hash argument")
    z = b.find(b"\0")
    return _hash_block(b if z < 0 else b[:z], _DATA_SEED)


def hash_combine(a, b):
    """HashCombine(a, b) on 128-bit ints (not symmetric)."""
    a = _u128(a, "hash_combine a")
    b = _u128(b, "hash_combine b")
    return a ^ ((b * _KB + _GOLD + (a << 6) + (a >> 2)) & _M128)


def std_hash_combine(a, b):
    """StdHashCombine(a, b) on 64-bit ints (size_t result)."""
    a = _u64(a, "std_hash_combine a")
    b = _u64(b, "std_hash_combine b")
    return a ^ ((b * _STD_KB + _GOLD + (a << 6) + (a >> 2)) & _M64)


def hash_reduce(h):
    """HashReduce: StdHashCombine(low 64 bits, high 64 bits) of a 128-bit hash."""
    h = _u128(h, "hash_reduce argument")
    a, b = h & _M64, h >> 64
    return a ^ ((b * _STD_KB + _GOLD + (a << 6) + (a >> 2)) & _M64)


def std_data_hash(data):
    """StdDataHash: HashReduce(DataHash(data))."""
    return hash_reduce(data_hash(data))


def hash_to_string(h):
    """HashToString: high word in hex without padding, then the low word as 16 hex digits."""
    h = _u128(h, "hash_to_string argument")
    return format(h >> 64, "x") + format(h & _M64, "016x")


def _size_t_hash_uncached(i):
    return _hash_block(i.to_bytes(8, "little"), _DATA_SEED)


_SIZE_T_HASH = [_size_t_hash_uncached(i) for i in range(256)]


def _size_t_hash(i):
    return _SIZE_T_HASH[i] if i < 256 else _size_t_hash_uncached(i)


# Hash(size_t i) * kb + golden (mod 2**128) by index i: the part of HashCombine(h, Hash(i)) that does not
# depend on h, so the graph-hash loop over parameter indices skips a multiply (and, past 255, a Murmur)
# per entry.  Grown on demand, under a lock (appends must stay in index order), up to _IDX_CAP entries.
_IDX_KB = [(x * _KB + _GOLD) & _M128 for x in _SIZE_T_HASH]
_IDX_CAP = 1 << 16
_idx_lock = _threading.Lock()
_os.register_at_fork(after_in_child=_idx_lock._at_fork_reinit)    # (the thread that held it is not there)


def _idx_kb(n):
    """The _IDX_KB table, holding at least min(n, _IDX_CAP) entries."""
    tab = _IDX_KB
    if len(tab) < n and len(tab) < _IDX_CAP:
        with _idx_lock:
            while len(tab) < min(n, _IDX_CAP):
                tab.append((_size_t_hash_uncached(len(tab)) * _KB + _GOLD) & _M128)
    return tab


def hash_scalar(value, ctype):
    """Hash(T) of a C arithmetic value: ctype is int8..uint64, size_t, scalar_type, bool, float or double."""
    if type(ctype) is not str:
        raise TypeError(f"hash_scalar ctype must be a str, got {_tname(ctype)}: {ctype!r}")
    if ctype == "float" or ctype == "double":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _hash_block(_struct.pack("<f" if ctype == "float" else "<d", value), _DATA_SEED)
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
    return _hash_block(v.to_bytes(size, "little", signed=signed), _DATA_SEED)


def _combine(a, b):
    return a ^ ((b * _KB + _GOLD + (a << 6) + (a >> 2)) & _M128)


def hash_value(value):
    """Hash(x) by Python type: None=kNullOpt, bool, int=int64, float=double, str, buffer=DataHash, list/tuple=container."""
    t = type(value)
    if value is None:
        return NULL_OPT
    if t is bool:
        return _hash_block(b"\x01" if value else b"\x00", _DATA_SEED)
    if t is int:
        if value < -(1 << 63) or value > _M64:
            raise ValueError(f"hash_value int {value} is out of the int64/uint64 range")
        return _hash_block((value & _M64).to_bytes(8, "little"), _DATA_SEED)
    if t is float:
        return _hash_block(_struct.pack("<d", value), _DATA_SEED)
    if t is str:
        return _hash_block(value.encode("utf-8"), _DATA_SEED)
    if t is list or t is tuple:
        if value and all(type(e) is bool for e in value):
            h = _BOOLVEC_SEED
            for e in value:
                h = _combine(h, _BOOL_TRUE if e else _BOOL_FALSE)
            return h
        h = _CONTAINER_SEED
        for e in value:
            h = _combine(h, hash_value(e))
        return h
    try:
        mv = memoryview(value)
    except TypeError:
        raise TypeError(f"hash_value cannot hash {_tname(value)}: {value!r}; expected None, bool, int, float, "
                        f"str, a buffer or a list/tuple of those") from None
    with mv:
        if not mv.c_contiguous:
            raise ValueError(f"hash_value needs a C-contiguous buffer, got a non-contiguous {_tname(value)}")
        return _hash_block(mv.tobytes(), _DATA_SEED)


def container_hash(values):
    """ContainerHash: left fold of hash_combine over hash_value of each element, from 0x85ebca77c2b2ae63."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"container_hash needs an iterable of values, got {_tname(values)}: {values!r}")
    h = _CONTAINER_SEED
    for e in values:
        h = _combine(h, hash_value(e))
    return h


def mhash(*values):
    """MHash(a1..an): right fold HashCombine(Hash(a1), HashCombine(..., 0x165667b19e3779f9)) with hash_value."""
    h = _MHASH_SEED
    for v in reversed(values):
        h = _combine(hash_value(v), h)
    return h


def mhash_hashes(hashes):
    """MHash over already-hashed 128-bit values (C++ hash_t arguments): the same right fold."""
    hs = [_u128(x, "mhash_hashes element") for x in hashes]
    h = _MHASH_SEED
    for x in reversed(hs):
        h = _combine(x, h)
    return h


def hash_bool_vector(values):
    """Hash(std::vector<bool>): fold from 0xad2ed1983bbf2e28 with fixed true/false constants."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"hash_bool_vector needs an iterable of bools, got {_tname(values)}: {values!r}")
    h = _BOOLVEC_SEED
    for e in values:
        h = _combine(h, _BOOL_TRUE if e else _BOOL_FALSE)
    return h
