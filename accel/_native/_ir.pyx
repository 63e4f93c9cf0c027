# cython: binding=True
"""Cython twin of accel._python._ir: LTC IR nodes, post-order, parameter sequence and graph hash.

Same public names, signatures, results and error texts as the pure-Python module (tests enforce it).
Hashes are computed once, at construction, in C (``_hash128.h``); traversal reads only the compact
node arena (``_ir_arena.h``): per-node stamps, operand ids and interned data-handle ids.
"""
import operator as _operator
import os as _os

cimport cython
from libc.stdint cimport uint64_t, uint32_t, int32_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_AsTuple
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_SIZE, PyTuple_GET_ITEM
from cpython.long cimport PyLong_FromUnsignedLongLong, PyLong_AsUnsignedLongLongMask
from cpython.object cimport PyTypeObject, newfunc, destructor

include "_h128.pxi"


cdef extern from "_ir_arena.h":
    ctypedef struct acc_rec:
        uint32_t mark
        uint32_t info
    ctypedef struct acc_ivec:
        int32_t *d
        Py_ssize_t n
        Py_ssize_t cap
    acc_rec *acc_recs
    PyObject **acc_self
    uint64_t *acc_serial
    int32_t acc_top
    uint32_t *acc_hstamp
    int32_t *acc_hidx
    uint32_t ACC_DATA_BIT
    int32_t *acc_ops(acc_rec *r)
    int32_t acc_get_hid(int32_t id)
    void acc_prefetch_obj(PyObject *o)
    void acc_set_hid(int32_t id, int32_t h)
    int32_t acc_alloc(PyObject *self, Py_ssize_t nops)
    void acc_release(int32_t id)
    int acc_ivec_reserve(acc_ivec *v, Py_ssize_t need)
    ctypedef struct acc_out:
        PyObject *obj
        int32_t node
    acc_out *acc_outs
    int32_t acc_otop
    int32_t acc_oalloc(PyObject *o, int32_t node)
    void acc_orelease(int32_t s)
    unsigned char *acc_mark_users(const int32_t *seeds, Py_ssize_t nseeds)
    void acc_fill_list(list l, const int32_t *ids, Py_ssize_t n)
    int acc_walk_post(const int32_t *roots, Py_ssize_t nroots, uint32_t base, int strict, acc_ivec *st,
                      acc_ivec *out, acc_ivec *visited, int32_t *loop)
    int acc_walk_count(const int32_t *roots, Py_ssize_t nroots, uint32_t base, acc_ivec *st,
                       Py_ssize_t *count, int32_t *loop)
    int acc_walk_params(const int32_t *roots, Py_ssize_t nroots, uint32_t base, acc_ivec *st,
                        acc_ivec *out, uint32_t hbase, int32_t *nparams, int32_t *loop)

HASH_SEED = 0xA2D296E9
DEVICE_DATA_SEED = 101
DEVICE_DATA_OP = "lazy_tensors::device_data"
NOT_SUPPORTED_OP = "lazy_tensors::not_supported"
EMITTING = 1
EMITTED = 2

cdef object _DEFAULT_SEED = HASH_SEED
cdef object _DD_SEED = DEVICE_DATA_SEED
cdef object _NO_SEED = object()          # an OpKind's _last_given before any Node of it had a seed
cdef uint64_t _NULL_OPT = 0x8655D738F3678DDA
cdef uint64_t _CONTAINER_SEED = 0x85EBCA77C2B2AE63
cdef uint64_t _MHASH_SEED = 0x165667B19E3779F9
cdef acc_h128 _SIZE_T_HASH[256]
cdef int _i
for _i in range(256):
    _SIZE_T_HASH[_i] = acc_u64_hash(_i)
cdef unsigned char _one = 1
cdef acc_h128 _MHASH_TRUE = acc_combine(acc_data_hash(&_one, 1), acc_mk(0, _MHASH_SEED))

_DTYPE_NAMES = (
    "Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "ComplexHalf", "ComplexFloat",
    "ComplexDouble", "Bool", "QInt8", "QUInt8", "QInt32", "BFloat16", "QUInt4x2", "QUInt2x4", "Bits1x8",
    "Bits2x4", "Bits4x2", "Bits8", "Bits16", "Float8_e5m2", "Float8_e4m3fn", "Float8_e5m2fnuz",
    "Float8_e4m3fnuz", "UInt16", "UInt32", "UInt64", "UInt1", "UInt2", "UInt3", "UInt4", "UInt5", "UInt6",
    "UInt7", "Int1", "Int2", "Int3", "Int4", "Int5", "Int6", "Int7", "Float8_e8m0fnu", "Float4_e2m1fn_x2",
    "BComplex32")


cdef inline acc_h128 _size_t_hash(Py_ssize_t i):
    return _SIZE_T_HASH[i] if i < 256 else acc_u64_hash(<uint64_t>i)


# ----------------------------------------------------------------------------- dtype, OpKind, Shape

def scalar_type_name(code):
    """The c10 name of a ScalarType code as Shape::to_string prints it (UNKNOWN_SCALAR if unknown)."""
    cdef int c = _dtype_code(code)
    return _DTYPE_NAMES[c] if c < len(_DTYPE_NAMES) else "UNKNOWN_SCALAR"


cdef int _dtype_code(dtype) except -1:
    if type(dtype) is not int:
        if isinstance(dtype, bool) or not hasattr(dtype, "__index__"):
            raise TypeError(f"dtype must be an int ScalarType code, got {_tname(dtype)}: {dtype!r}")
        dtype = _operator.index(dtype)
    if dtype < 0 or dtype > 127:
        raise ValueError(f"dtype must be a ScalarType code in [0, 127], got {dtype}")
    return <int>dtype


cdef dict _OPKINDS = {}
cdef newfunc _opkind_base_new


@cython.no_gc
cdef class OpKind:
    """OpKind(qualified_name)
--

    An interned qualified op name (``ns::name``); ``.hash`` is StringHash(name)."""
    cdef readonly str qualified_name
    cdef acc_h128 _hash
    cdef acc_h128 _seeded
    # The last plain-int seed object a Node of this op was given, its seeded hash and the one read-only
    # _Extra that every Node built with that seed shares (see _seed_extra in _ir_node.pxi).
    cdef object _last_given
    cdef object _last_extra
    cdef acc_h128 _last_h
    cdef object __weakref__

    @property
    def hash(self):
        return _to_int(self._hash)

    def __str__(self):
        return self.qualified_name

    def __repr__(self):
        return f"OpKind({self.qualified_name!r})"

    def __reduce__(self):
        """Pickles by name: ``OpKind(qualified_name)``."""
        return (OpKind, (self.qualified_name,))


cdef object _opkind_new(type t, PyObject *args, PyObject *kwds):
    # Interning: OpKind(name) returns the one instance for ``name`` (c10::Symbol semantics).
    a = <tuple>args
    if kwds != NULL and len(<dict>kwds):
        kw = <dict>kwds
        if len(a) == 0 and len(kw) == 1 and "qualified_name" in kw:
            a = (kw["qualified_name"],)
        else:
            raise TypeError(f"OpKind() got unexpected keyword arguments: {sorted(kw)}")
    if len(a) != 1:
        raise TypeError(f"OpKind() takes exactly one argument (qualified_name), got {len(a)}")
    return _opkind_make(a[0])


cdef OpKind _opkind_make(object name):
    cdef OpKind k
    if type(name) is str:
        o = _OPKINDS.get(name)
        if o is not None:
            return <OpKind>o
    if type(name) is not str:
        raise TypeError(f"OpKind expects a qualified name str, got {_tname(name)}: {name!r}")
    ns, sep, rest = (<str>name).partition("::")
    if not sep or not ns or not rest:
        raise ValueError(f"OpKind expects a qualified name like 'aten::add', got {name!r}")
    k = <OpKind>_opkind_base_new(OpKind, <PyObject*>(), NULL)
    k.qualified_name = name
    b = (<str>name).encode("utf-8")
    z = b.find(b"\0")
    if z >= 0:
        b = b[:z]
    k._hash = acc_data_hash(<const char*>b, len(b))
    k._seeded = acc_combine(k._hash, acc_mk(0, 0xA2D296E9))
    k._last_given = _NO_SEED
    _OPKINDS[name] = k
    return k


cdef extern from *:
    """
    static void acc_set_new(PyTypeObject *t, newfunc f) {
        t->tp_new = f;
    #if PY_VERSION_HEX >= 0x03080000
        t->tp_vectorcall = NULL;   /* a vectorcall constructor would bypass tp_new */
    #endif
        PyType_Modified(t);
    }
    """
    void acc_set_new(PyTypeObject *t, newfunc f)

_opkind_base_new = (<PyTypeObject*>OpKind).tp_new
acc_set_new(<PyTypeObject*>OpKind, <newfunc>_opkind_new)


@cython.no_gc
cdef class Shape:
    """Shape(dtype, sizes)
--

    A c10 ScalarType code and int64 sizes; ``hash(bake_in_sizes)`` is Shape::hash, str() is to_string()."""
    cdef int _dtype
    cdef tuple _sizes
    cdef acc_h128 _hb
    cdef acc_h128 _hn

    def __init__(self, dtype, sizes):
        cdef long long buf[16]
        cdef long long *p = buf
        cdef Py_ssize_t i, n
        cdef unsigned char code
        self._dtype = _dtype_code(dtype)
        if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
            raise TypeError(f"Shape sizes must be a sequence of ints, got {_tname(sizes)}: {sizes!r}")
        out = []
        for i, v in enumerate(sizes):
            if type(v) is not int:
                try:
                    v = _operator.index(v)
                except TypeError:
                    raise TypeError(f"Shape sizes[{i}] must be an int, got {_tname(v)}: {v!r}") from None
            if v < -(1 << 63) or v >= (1 << 63):
                raise ValueError(f"Shape sizes[{i}] = {v} is out of the int64 range")
            out.append(v)
        self._sizes = tuple(out)
        n = len(out)
        if n > 16:
            p = <long long*>malloc(n * sizeof(long long))
            if p == NULL:
                raise MemoryError()
        try:
            for i in range(n):
                p[i] = out[i]
            _le64(p, n)
            code = <unsigned char>self._dtype
            db = acc_data_hash(&code, 1)
            self._hb = acc_combine(db, acc_data_hash(p, n * 8))
            self._hn = acc_combine(db, _size_t_hash(n))
        finally:
            if p != buf:
                free(p)

    @property
    def dtype(self):
        return self._dtype

    @property
    def sizes(self):
        return self._sizes

    def hash(self, bake_in_sizes=True):
        """Shape::hash(bakeInSizes): dtype and raw int64 sizes, or dtype and rank."""
        return _to_int(self._hb if bake_in_sizes else self._hn)

    def __eq__(self, other):
        if not isinstance(other, Shape):
            return NotImplemented
        return self._dtype == (<Shape>other)._dtype and self._sizes == (<Shape>other)._sizes

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash((self._dtype, self._sizes))

    def __str__(self):
        return f"{scalar_type_name(self._dtype)}[{','.join(map(str, self._sizes))}]"

    def __repr__(self):
        return f"Shape({self._dtype}, {list(self._sizes)})"

    def __reduce__(self):
        """Pickles by value: ``Shape(dtype, sizes)``."""
        return (Shape, (self._dtype, self._sizes))


cdef void _le64(long long *p, Py_ssize_t n):
    # Shape bytes are little-endian int64 (LTC runs on little-endian hosts); swap on big-endian ones.
    cdef uint64_t one = 1
    cdef Py_ssize_t i
    cdef uint64_t v, r
    cdef int j
    if (<unsigned char*>&one)[0] == 1:
        return
    for i in range(n):
        v = <uint64_t>p[i]
        r = 0
        for j in range(8):
            r = (r << 8) | ((v >> (8 * j)) & 0xff)
        p[i] = <long long>r


# ----------------------------------------------------------------------------- dynamic shapes

cdef bint _dyn_env = _os.environ.get("LTC_ENABLE_DYNAMIC_SHAPES") is not None
cdef bint _dyn_flag = False


def set_dynamic_shapes(enabled):
    """Set the dynamic-shape flag (nodes built while on hash without sizes); returns the previous flag."""
    global _dyn_flag
    prev = _dyn_flag
    _dyn_flag = bool(enabled)
    return prev


def dynamic_shapes_enabled():
    """True when LTC_ENABLE_DYNAMIC_SHAPES was set at import or the flag is on."""
    return _dyn_env or _dyn_flag


include "_ir_handles.pxi"
include "_ir_node.pxi"
include "_ir_walk.pxi"
