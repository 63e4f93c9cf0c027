"""The per-op hot path of accel.lazy tracing (twin of accel._native._lazy_trace): the lazy tensor's base
class (its slots, registration among the live tensors, the Create/DestroyLtcTensor counters), ``wrap``
(a node and its shape into a new tensor) and ``scalar_node`` (a Python number whose device data is in the
data cache into a new device-data node).  accel.lazy.tensors configures it once with ``setup``."""
from itertools import count as _count
from weakref import ref as _ref


_live = {}                  # id -> weak reference, for every registered tensor not yet finalized
_cls = _create = _destroy = _cache_get = _touch = _device_data = _device = None
_shapes = {}
_icode = _ishape = None
_next_id = _count(1).__next__     # atomic under the GIL: threads never share an id
_reuse = [False]


class TensorBase:
    """The slots of a lazy tensor: ``_node`` (IR), ``_handle`` (device data after a sync), ``_src`` (source
    data), ``_shape``, ``_id`` (0 until registered), ``_base`` (accel.lazy.inplace's slot: None, an
    ``Alias``, the ``_MUTATED`` marker or a pending view)."""
    __slots__ = ("_node", "_handle", "_src", "_shape", "_id", "_base", "__weakref__")

    def __reduce_ex__(self, protocol):
        """Refused (TypeError): a copy of a lazy tensor would share its tensor id."""
        raise TypeError("lazy tensors cannot be copied or pickled (a copy would share the tensor id); use .numpy() or build a new tensor")

    def __del__(self):
        try:
            i = self._id
        except AttributeError:      # never registered (a failed construction)
            return
        try:
            _live.pop(i, None)
            _destroy[0] += 1
        except Exception:           # interpreter shutdown: the module globals may be gone
            pass


# numpy's types, imported by the first Data: `import accel` (and accel.cuda) does not import numpy.
_np_ndarray = _np_generic = _OBJECT_DTYPE = None


def _load_numpy():
    global _np_ndarray, _np_generic, _OBJECT_DTYPE
    import numpy
    _np_generic, _OBJECT_DTYPE = numpy.generic, numpy.dtype(object)
    _np_ndarray = numpy.ndarray


_set = object.__setattr__


def _data_check(array):
    if _np_ndarray is None:
        _load_numpy()
    if not ((type(array) is _np_ndarray or isinstance(array, _np_generic)) and array.dtype != _OBJECT_DTYPE):
        raise TypeError(f"lazy Data needs a numpy array (or numpy scalar) of a non-object dtype, got "
                        f"{type(array).__name__}: {array!r}")


class Data:
    """A backend data handle (LTC BackendData): a numpy array; ``value`` is its Python scalar when 0-dim.
    Parameters of a graph are deduplicated by the identity of these handles.  Read-only; it holds only a
    numpy array (not an object array) and a scalar, which cannot refer back to a graph (the native twin
    leaves it untracked by the garbage collector for that reason)."""
    __slots__ = ("array", "value", "__weakref__")

    def __init__(self, array):
        try:
            self.array
        except AttributeError:
            pass
        else:
            raise TypeError("lazy Data is read-only: it was already initialized")
        _data_check(array)
        _set(self, "value", array.item() if array.ndim == 0 else None)
        _set(self, "array", array)

    def __setattr__(self, name, value):
        raise AttributeError(f"lazy Data is read-only: cannot set {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"lazy Data is read-only: cannot delete {name!r}")

    def __reduce_ex__(self, protocol):
        """Pickles by value: ``Data(array)``."""
        return (Data, (self.array,))

    def __repr__(self):
        return f"<Data {self.array.dtype}{list(self.array.shape)}>"


def setup(cls, create_cell, destroy_cell, data_cache, device_data, device, scalar_shapes):
    """Configure the module: ``cls`` (a TensorBase subclass) is what ``wrap`` makes; the cells are one-item lists; ``data_cache`` is the device-data cache (an OrderedDict
    keyed (dtype code, value)); ``device_data(shape, handle, device)`` makes a node; ``scalar_shapes`` maps
    float, int and bool to (dtype code, Shape)."""
    global _cls, _create, _destroy, _cache_get, _touch, _device_data, _device, _icode, _ishape
    if not (isinstance(cls, type) and issubclass(cls, TensorBase)):
        raise TypeError(f"setup cls must be a subclass of TensorBase, got {cls!r}")
    fk, ik, bk = scalar_shapes[float], scalar_shapes[int], scalar_shapes[bool]   # all read before anything changes
    fcode, fshape = fk
    icode, ishape = ik
    bcode, bshape = bk
    kinds = {float: (fcode, fshape), int: (icode, ishape), bool: (bcode, bshape)}
    touch = data_cache.move_to_end
    get = data_cache.get
    _cls, _create, _destroy = cls, create_cell, destroy_cell
    _cache_get, _touch = get, touch
    _device_data, _device = device_data, device
    _shapes.clear()
    _shapes.update(kinds)
    _icode, _ishape = icode, ishape


def live_tensors():
    """The live tensors, in ascending id."""
    out = []
    live = _live.copy()     # one snapshot (a C-level copy): tensors of other threads come and go meanwhile
    for i in sorted(live):
        t = live[i]()
        if t is not None:
            out.append(t)
    return out


def live_count():
    """How many tensors are live."""
    return len(live_tensors())


def set_reuse(flag):
    """With IR reuse on, ``scalar_node`` always answers None (the caller goes through the TrieCache)."""
    _reuse[0] = bool(flag)


def wrap(node, shape):
    """A new registered tensor holding ``node`` (None: no IR yet) of ``shape``."""
    t = _cls.__new__(_cls)
    t._node = node
    t._handle = None
    t._src = None
    t._base = None
    t._shape = shape
    t._id = i = _next_id()
    _live[i] = _ref(t)
    _create[0] += 1
    return t


def scalar_node(v):
    """A new device-data node for the Python number ``v`` when its handle is in the data cache (the entry
    becomes the most recent), else None: other types, 0.0 / NaN (keyed by bytes), misses and IR reuse are
    the caller's."""
    k = _shapes.get(type(v))
    if k is None or _reuse[0] or v != v or (v == 0 and type(v) is float):
        return None
    key = (k[0], v)
    d = _cache_get(key)
    if d is None:
        return None
    try:
        _touch(key)
    except KeyError:     # another thread evicted it since the get; d stays valid
        pass
    return _device_data(k[1], d, _device)


_hook = [None]


def set_wrap_hook(hook):
    """``hook(node, shape)`` replaces ``wrap`` in the ops made here (force_fallback, IR reuse); None: off."""
    _hook[0] = hook


# The op functions below inline ``wrap`` and ``scalar_node`` (a Python call costs as much as their bodies).
def unary(node_type, op, cell, keep, seed, slow):
    """The method of a unary op: for an input dtype in ``keep`` one ``node_type(op, (x,), (shape,), 1, seed)``
    of the input's shape (``cell`` counts it); other dtypes go to ``slow(a)``."""
    def f(a):
        s = a._shape
        if s.dtype not in keep:
            return slow(a)
        cell[0] += 1
        x = a._node
        n = node_type(op, (x if x is not None else a._ir(),), (s,), 1, seed)
        if _hook[0] is not None:
            return _hook[0](n, s)
        t = _cls.__new__(_cls)
        t._node = n
        t._handle = t._src = t._base = None
        t._shape = s
        t._id = i = _next_id()
        _live[i] = _ref(t)
        _create[0] += 1
        return t
    return f


def binary_scalar(node_type, op, cell, float_ok, int_ok, seed, slow):
    """The method of mul / div / pow: a Python float (int) operand whose dtype codes of the tensor are in
    ``float_ok`` (``int_ok``: the result keeps the tensor's dtype) and whose device data is cached makes
    one node here; everything else goes to ``slow(a, b)``."""
    def f(a, b):
        tb = type(b)
        s = a._shape
        if tb is float:
            if s.dtype not in float_ok:
                return slow(a, b)
        elif tb is not int or s.dtype not in int_ok:
            return slow(a, b)
        if _reuse[0]:
            return slow(a, b)      # with IR reuse, the slow path makes the operands in LTC's order
        x = a._node
        if x is None:
            x = a._ir()
        if b != b or (b == 0 and tb is float):
            return slow(a, b)
        k = _shapes[tb]
        key = (k[0], b)
        d = _cache_get(key)
        if d is None:
            return slow(a, b)
        try:
            _touch(key)
        except KeyError:     # another thread evicted it since the get; d stays valid
            pass
        cell[0] += 1
        n = node_type(op, (x, _device_data(k[1], d, _device)), (s,), 1, seed)
        if _hook[0] is not None:
            return _hook[0](n, s)
        t = _cls.__new__(_cls)
        t._node = n
        t._handle = t._src = t._base = None
        t._shape = s
        t._id = i = _next_id()
        _live[i] = _ref(t)
        _create[0] += 1
        return t
    return f


def add_sub(node_type, op, cell, float_ok, int_ok, seed, slow):
    """The method of add / sub (``alpha`` an int): a tensor of the same Shape object, or a Python float (int)
    as in ``binary_scalar``, with cached scalar device data makes one node here; everything else goes to
    ``slow(a, b, alpha)``."""
    def f(a, b, alpha=1):
        if type(a) is not _cls or type(alpha) is not int or _reuse[0]:
            return slow(a, b, alpha)
        tb = type(b)
        s = a._shape
        if tb is _cls:
            if b._shape is not s or s.dtype not in int_ok:
                return slow(a, b, alpha)
            y = b._node
            if y is None:
                y = b._ir()
        else:
            if tb is float:
                if s.dtype not in float_ok or b != b or b == 0:
                    return slow(a, b, alpha)
            elif tb is not int or s.dtype not in int_ok:
                return slow(a, b, alpha)
            k = _shapes[tb]
            key = (k[0], b)
            d = _cache_get(key)
            if d is None:
                return slow(a, b, alpha)
            try:
                _touch(key)
            except KeyError:     # another thread evicted it since the get; d stays valid
                pass
            y = _device_data(k[1], d, _device)
        key = (_icode, alpha)
        d = _cache_get(key)
        if d is None:
            return slow(a, b, alpha)
        try:
            _touch(key)
        except KeyError:     # another thread evicted it since the get; d stays valid
            pass
        z = _device_data(_ishape, d, _device)
        cell[0] += 1
        x = a._node
        n = node_type(op, (x if x is not None else a._ir(), y, z), (s,), 1, seed)
        if _hook[0] is not None:
            return _hook[0](n, s)
        t = _cls.__new__(_cls)
        t._node = n
        t._handle = t._src = t._base = None
        t._shape = s
        t._id = i = _next_id()
        _live[i] = _ref(t)
        _create[0] += 1
        return t
    return f
