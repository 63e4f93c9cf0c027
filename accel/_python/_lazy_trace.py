"""The per-op hot path of accel.lazy tracing (twin of accel._native._lazy_trace): the lazy tensor's base
class (its slots, registration among the live tensors, the Create/DestroyLtcTensor counters), ``wrap``
(a node and its shape into a new tensor) and ``scalar_node`` (a Python number whose device data is in the
data cache into a new device-data node).  accel.lazy.tensors configures it once with ``setup``."""
from weakref import ref as _ref

_cls = _live = _create = _destroy = _cache_get = _touch = _device_data = _device = None
_shapes = {}
_next = [0]
_reuse = [False]


class TensorBase:
    """The slots of a lazy tensor: ``_node`` (IR), ``_handle`` (device data after a sync), ``_src`` (source
    data), ``_shape``, ``_id`` (0 until registered), ``_base`` (the tensor a view was taken of)."""
    __slots__ = ("_node", "_handle", "_src", "_shape", "_id", "_base", "__weakref__")

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


def setup(cls, live, create_cell, destroy_cell, data_cache, device_data, device, scalar_shapes):
    """Configure the module: ``cls`` (a TensorBase subclass) is what ``wrap`` makes; ``live`` maps ids to
    weak references; the cells are one-item lists; ``data_cache`` is the device-data cache (an OrderedDict
    keyed (dtype code, value)); ``device_data(shape, handle, device)`` makes a node; ``scalar_shapes`` maps
    float, int and bool to (dtype code, Shape)."""
    global _cls, _live, _create, _destroy, _cache_get, _touch, _device_data, _device
    if not (isinstance(cls, type) and issubclass(cls, TensorBase)):
        raise TypeError(f"setup cls must be a subclass of TensorBase, got {cls!r}")
    _cls, _live, _create, _destroy = cls, live, create_cell, destroy_cell
    _cache_get, _touch = data_cache.get, data_cache.move_to_end
    _device_data, _device = device_data, device
    _shapes.clear()
    _shapes.update(scalar_shapes)


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
    _next[0] = i = _next[0] + 1
    t._id = i
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
    _touch(key)
    return _device_data(k[1], d, _device)
