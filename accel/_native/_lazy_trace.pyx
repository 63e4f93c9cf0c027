"""The per-op hot path of accel.lazy tracing (twin of accel._python._lazy_trace): the lazy tensor's base
class (its slots, registration among the live tensors, the Create/DestroyLtcTensor counters), ``wrap``
(a node and its shape into a new tensor) and ``scalar_node`` (a Python number whose device data is in the
data cache into a new device-data node).  accel.lazy.tensors configures it once with ``setup``."""
cimport cython
from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject


cdef object _cls = None
cdef list _create = None
cdef list _destroy = None
cdef object _cache = None      # an OrderedDict (a dict subclass: PyDict_GetItem reads it)
cdef object _touch = None
cdef object _device_data = None
cdef object _device = None
cdef object _fcode = None, _fshape = None, _icode = None, _ishape = None, _bcode = None, _bshape = None
cdef Py_ssize_t _next = 0
cdef bint _reuse = False
# The live tensors: a list linked through the tensors themselves (borrowed pointers), in ascending id.
# A tensor leaves it in its finalizer, which runs before its weak references are cleared and before a
# collected cycle is broken, so a tensor reachable from the list is never being destroyed.
cdef PyObject *_first = NULL
cdef PyObject *_last = NULL


cdef class TensorBase:
    """TensorBase()
--

    The slots of a lazy tensor: ``_node`` (IR), ``_handle`` (device data after a sync), ``_src`` (source
    data), ``_shape``, ``_id`` (0 until registered), ``_base`` (accel.lazy.inplace's slot: None, an
    ``Alias``, the ``_MUTATED`` marker or a pending view)."""
    cdef public object _node
    cdef public object _handle
    cdef public object _src
    cdef public object _shape
    cdef public object _base
    cdef public Py_ssize_t _id
    cdef PyObject *_lprev
    cdef PyObject *_lnext
    cdef bint _linked
    cdef object __weakref__

    def __del__(self):
        _unlink(self)

    def __reduce_ex__(self, protocol):
        """Refused (TypeError): a copy of a lazy tensor would share its tensor id."""
        raise TypeError("lazy tensors cannot be copied or pickled (a copy would share the tensor id); use .numpy() or build a new tensor")

    def __dealloc__(self):
        _unlink(self)


cdef inline void _link(TensorBase t) noexcept:
    global _first, _last
    t._lprev = _last
    t._lnext = NULL
    if _last is NULL:
        _first = <PyObject*>t
    else:
        (<TensorBase>_last)._lnext = <PyObject*>t
    _last = <PyObject*>t
    t._linked = True


cdef int _unlink(TensorBase t) except -1:
    global _first, _last
    if not t._linked:
        return 0
    t._linked = False
    if t._lprev is NULL:
        _first = t._lnext
    else:
        (<TensorBase>t._lprev)._lnext = t._lnext
    if t._lnext is NULL:
        _last = t._lprev
    else:
        (<TensorBase>t._lnext)._lprev = t._lprev
    t._lprev = t._lnext = NULL
    if _destroy is not None:
        _destroy[0] = _destroy[0] + 1
    return 0


# numpy's types, imported by the first Data: `import accel` (and accel.cuda) does not import numpy.
cdef object _np_ndarray = None, _np_generic = None, _OBJECT_DTYPE = None


def _load_numpy():
    global _np_ndarray, _np_generic, _OBJECT_DTYPE
    import numpy
    _np_generic, _OBJECT_DTYPE = numpy.generic, numpy.dtype(object)
    _np_ndarray = numpy.ndarray


def _data_check(array):
    if _np_ndarray is None:
        _load_numpy()
    if not ((type(array) is _np_ndarray or isinstance(array, _np_generic)) and array.dtype != _OBJECT_DTYPE):
        raise TypeError(f"lazy Data needs a numpy array (or numpy scalar) of a non-object dtype, got "
                        f"{type(array).__name__}: {array!r}")


@cython.no_gc
@cython.final
cdef class Data:
    """Data(array)
--

    A backend data handle (LTC BackendData): a numpy array; ``value`` is its Python scalar when 0-dim.
    Parameters of a graph are deduplicated by the identity of these handles.  Read-only, and never
    GC-tracked: it holds only a numpy array (not an object array) and a scalar, which cannot refer back
    to a graph, so the device-data nodes that hold it (and the nodes built on them) stay untracked."""
    cdef readonly object array
    cdef readonly object value
    cdef object __weakref__

    def __init__(self, array):
        if self.array is not None:
            raise TypeError("lazy Data is read-only: it was already initialized")
        _data_check(array)
        self.value = array.item() if array.ndim == 0 else None
        self.array = array

    def __setattr__(self, name, value):
        raise AttributeError(f"lazy Data is read-only: cannot set {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"lazy Data is read-only: cannot delete {name!r}")

    def __reduce_ex__(self, protocol):
        """Pickles by value: ``Data(array)``."""
        return (Data, (self.array,))

    def __repr__(self):
        return f"<Data {self.array.dtype}{list(self.array.shape)}>"


def live_tensors():
    """The live tensors, in ascending id."""
    cdef list out = []
    cdef PyObject *p = _first
    while p is not NULL:
        out.append(<object>p)
        p = (<TensorBase>p)._lnext
    return out


def live_count():
    """How many tensors are live."""
    cdef Py_ssize_t n = 0
    cdef PyObject *p = _first
    while p is not NULL:
        n += 1
        p = (<TensorBase>p)._lnext
    return n


def setup(cls, create_cell, destroy_cell, data_cache, device_data, device, scalar_shapes):
    """Configure the module: ``cls`` (a TensorBase subclass) is what ``wrap`` makes; the cells are one-item lists; ``data_cache`` is the device-data cache (an OrderedDict
    keyed (dtype code, value)); ``device_data(shape, handle, device)`` makes a node; ``scalar_shapes`` maps
    float, int and bool to (dtype code, Shape)."""
    global _cls, _create, _destroy, _cache, _touch, _device_data, _device
    global _fcode, _fshape, _icode, _ishape, _bcode, _bshape
    if not (isinstance(cls, type) and issubclass(cls, TensorBase)):
        raise TypeError(f"setup cls must be a subclass of TensorBase, got {cls!r}")
    fk, ik, bk = scalar_shapes[float], scalar_shapes[int], scalar_shapes[bool]   # all read before anything changes
    fcode, fshape = fk
    icode, ishape = ik
    bcode, bshape = bk
    touch = data_cache.move_to_end
    _cls, _create, _destroy = cls, create_cell, destroy_cell
    _cache, _touch = data_cache, touch
    _device_data, _device = device_data, device
    _fcode, _fshape, _icode, _ishape, _bcode, _bshape = fcode, fshape, icode, ishape, bcode, bshape


def set_reuse(flag):
    """With IR reuse on, ``scalar_node`` always answers None (the caller goes through the TrieCache)."""
    global _reuse
    _reuse = bool(flag)


cdef inline object _new(node, shape):
    # a new registered tensor of ``_cls`` (wrap, and _wrap without a hook)
    global _next
    cdef TensorBase t = TensorBase.__new__(_cls)
    t._node = node
    t._shape = shape
    _next += 1
    t._id = _next
    _link(t)
    _create[0] = _create[0] + 1
    return t


def wrap(node, shape):
    """A new registered tensor holding ``node`` (None: no IR yet) of ``shape``."""
    return _new(node, shape)


def scalar_node(v):
    """A new device-data node for the Python number ``v`` when its handle is in the data cache (the entry
    becomes the most recent), else None: other types, 0.0 / NaN (keyed by bytes), misses and IR reuse are
    the caller's."""
    return _scalar_node(v)


cdef object _scalar_node(v):
    cdef object code, shape, key
    cdef PyObject *d
    cdef double f
    if _reuse:
        return None
    t = type(v)
    if t is float:
        f = v
        if f == 0 or f != f:
            return None
        code, shape = _fcode, _fshape
    elif t is int:
        code, shape = _icode, _ishape
    elif t is bool:
        code, shape = _bcode, _bshape
    else:
        return None
    key = (code, v)
    d = PyDict_GetItem(_cache, key)
    if d is NULL:
        return None
    h = <object>d           # a strong reference before the touch (the cache may drop its own)
    _touch(key)
    return _device_data(shape, h, _device)


cdef object _hook = None


def set_wrap_hook(hook):
    """``hook(node, shape)`` replaces ``wrap`` in the ops made here (force_fallback, IR reuse); None: off."""
    global _hook
    _hook = hook


cdef inline object _wrap(node, shape):
    if _hook is not None:
        return _hook(node, shape)
    return _new(node, shape)


cdef inline object _ir_of(TensorBase a):
    x = a._node
    if x is None:
        x = a._ir()
    return x


cdef class _Codes:
    """dtype codes an op's fast path takes, and the last Shape object found to have one (a Shape's dtype
    never changes, and only accepted shapes are stored: a race at worst re-checks)."""
    cdef frozenset codes
    cdef object last

    def __cinit__(self, codes):
        self.codes = frozenset(codes)


cdef inline bint _takes(_Codes c, s) except -1:
    if s is c.last:
        return True
    if s.dtype in c.codes:
        c.last = s
        return True
    return False


def unary(node_type, op, cell, keep, seed, slow):
    """The method of a unary op: for an input dtype in ``keep`` one ``node_type(op, (x,), (shape,), 1, seed)``
    of the input's shape (``cell`` counts it); other dtypes go to ``slow(a)``."""
    cdef list c = cell
    cdef _Codes k = _Codes(keep)

    def f(a):
        if type(a) is not _cls:
            return slow(a)
        cdef TensorBase t = <TensorBase>a
        s = t._shape
        if not _takes(k, s):
            return slow(a)
        c[0] = c[0] + 1
        return _wrap(node_type(op, (_ir_of(t),), (s,), 1, seed), s)
    return f


def binary_scalar(node_type, op, cell, float_ok, int_ok, seed, slow):
    """The method of mul / div / pow: a Python float (int) operand whose dtype codes of the tensor are in
    ``float_ok`` (``int_ok``: the result keeps the tensor's dtype) and whose device data is cached makes
    one node here; everything else goes to ``slow(a, b)``."""
    cdef list c = cell
    cdef _Codes fok = _Codes(float_ok), iok = _Codes(int_ok)

    def f(a, b):
        if type(a) is not _cls:
            return slow(a, b)
        cdef TensorBase t = <TensorBase>a
        tb = type(b)
        s = t._shape
        if _reuse or not ((tb is float and _takes(fok, s)) or (tb is int and _takes(iok, s))):
            return slow(a, b)      # with IR reuse, the slow path makes the operands in LTC's order
        x = _ir_of(t)
        y = _scalar_node(b)
        if y is None:
            return slow(a, b)
        c[0] = c[0] + 1
        return _wrap(node_type(op, (x, y), (s,), 1, seed), s)
    return f


def add_sub(node_type, op, cell, float_ok, int_ok, seed, slow):
    """The method of add / sub (``alpha`` an int): a tensor of the same Shape object, or a Python float (int)
    as in ``binary_scalar``, with cached scalar device data makes one node here; everything else goes to
    ``slow(a, b, alpha)``."""
    cdef list c = cell
    cdef _Codes fok = _Codes(float_ok), iok = _Codes(int_ok)

    def f(a, b, alpha=1):
        if type(a) is not _cls or type(alpha) is not int or _reuse:
            return slow(a, b, alpha)  # with IR reuse, the slow path makes the operands in LTC's order
        cdef TensorBase t = <TensorBase>a
        tb = type(b)
        s = t._shape
        if tb is _cls:
            if (<TensorBase>b)._shape is not s or not _takes(iok, s):
                return slow(a, b, alpha)
            y = _ir_of(<TensorBase>b)
        elif (tb is float and _takes(fok, s)) or (tb is int and _takes(iok, s)):
            y = _scalar_node(b)
            if y is None:
                return slow(a, b, alpha)
        else:
            return slow(a, b, alpha)
        z = _scalar_node(alpha)
        if z is None:
            return slow(a, b, alpha)
        c[0] = c[0] + 1
        return _wrap(node_type(op, (_ir_of(t), y, z), (s,), 1, seed), s)
    return f
