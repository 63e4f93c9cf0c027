"""The lazy tensor core: LazyTensor (its IR value, data and properties), the live-tensor registry, the
device-data cache, node attributes, and the helpers the ops trace with.  It knows no op: the ops are
declared in accel.lazy.ops (one family module each) and bound to LazyTensor by accel.lazy.functions.

A LazyTensor holds either IR (a Node), device data (a ``Data`` handle after a sync), or source data (a
numpy array given to ``tensor()``, turned into a device-data node on first use), as an LTC LazyTensor.
Python scalars become ``Long[]``/``Double[]`` device data through the device-data cache, as LTC's
GetIrValueForScalar does.  Execution is in accel.lazy.executor, which installs what this core needs of
it (``install_runtime``).
"""
import collections
import operator
import os
import struct
import threading
import weakref

import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy import _optable
from accel.lazy import metrics as _metrics
from accel.lazy import trie as _trie
from accel.lazy.trie import TrieCache, release_all as _trie_release_all

_ir = _impl.module("_ir")
_hash = _impl.module("_hash")
_lt = _impl.module("_lazy_trace")
Node = _ir.Node
Output = _ir.Output
Shape = _ir.Shape
_device_data = _ir.device_data
_OpKind = _ir.OpKind

DEVICE = "CPU0"                 # how LTC's TS backend prints the lazy device on device-data nodes
DATA_CACHE_SIZE = 128           # FLAGS_torch_lazy_device_data_cache_size


# A backend data handle (LTC BackendData): read-only, and in the native twin never GC-tracked, so that
# graphs on device data stay out of the cyclic collector's way (see accel._native._lazy_trace.Data).
Data = _lt.Data


# ---- counters (cells of accel.lazy.metrics, bumped without the lock on the hot path) ----
def _cell(name):
    return _metrics.Counter(name)._cell


_c_create = _cell("CreateLtcTensor")
_c_destroy = _cell("DestroyLtcTensor")
_c_ddmiss = _cell("DeviceDataCacheMiss")
_fn_cells = {}
_c_to_copy = _cell("lazy::_to_copy")


def _fn_counter(name):
    """The cell of counter ``lazy::<name>`` (TORCH_LAZY_FN_COUNTER)."""
    c = _fn_cells.get(name)
    if c is None:
        c = _fn_cells[name] = _cell("lazy::" + name)
    return c


# ---- the device-data cache (DataCacheArena): equal scalars / 0-dim arrays share one handle ----
# Threads: hits read and touch it without a lock (a touch of an entry another thread just evicted is
# skipped: the handle read stays valid); inserts and evictions take _data_lock.
_data_cache = collections.OrderedDict()
_data_lock = threading.Lock()
_pack_d = struct.Struct("<d").pack


def _touch_data(key, _touch=_data_cache.move_to_end):
    try:
        _touch(key)
    except KeyError:            # evicted by another thread since it was read
        pass


def _cached_data(key, make):
    d = _data_cache.get(key)
    if d is not None:
        _touch_data(key)
        return d
    with _data_lock:
        d = _data_cache.get(key)
        if d is None:
            _c_ddmiss[0] += 1
            d = _data_cache[key] = Data(make())
            while len(_data_cache) > DATA_CACHE_SIZE:
                _data_cache.popitem(last=False)
        else:
            _data_cache.move_to_end(key)
    return d


# The source data of 0-dim empty() tensors: torch's is uninitialised memory, whose bytes key the data cache, so it
# shares a handle with no real value; accel's (zero-filled) gets a key of its own.
_UNINIT = weakref.WeakSet()


def clear_data_cache():
    """Drop every cached scalar handle (nodes that hold one keep it)."""
    with _data_lock:
        _data_cache.clear()


# ---- shapes ----
_shapes = {}


SHAPE_CACHE_SIZE = 4096         # FLAGS_torch_lazy_shape_cache_size


def _shape(code, sizes):
    """The one Shape object per (dtype, sizes) in use (ops compare shapes by identity on fast paths)."""
    s = _shapes.get((code, sizes))
    if s is None:
        if len(_shapes) >= SHAPE_CACHE_SIZE:
            _shapes.clear()         # bounded; dropping entries only costs a fast path, never a result
        # setdefault: threads making the same shape at once share the first one stored
        s = _shapes.setdefault((code, sizes), Shape(code, sizes))
    return s


_SCALAR_SHAPES = {D.INT64: _shape(D.INT64, ()), D.FLOAT64: _shape(D.FLOAT64, ()), D.BOOL: _shape(D.BOOL, ())}


def _scalar_key(code, v):
    """The data-cache key of a scalar value: equal keys <=> equal dtype and bytes (LTC's TensorComparer).
    Nonzero, non-NaN numbers compare by value; 0.0/-0.0 and NaN payloads by their bytes."""
    if v != 0 and v == v:
        return (code, v)
    return (code, _pack_d(v) if type(v) is float else v)


# LTC's device lock: one sync / compute at a time (collecting the tensors, compiling, running a program
# that owns reusable buffers, and handing the results to the tensors), so that threads syncing the same
# tensors see each one either holding IR or holding its data.  An in-place update (accel.lazy.inplace)
# takes it too, so that it never falls between a sync's "IR unchanged" test and its store.  Tracing
# out-of-place ops takes no lock.
device_lock = threading.RLock()

# ---- fork: a fork waits for a graph run in progress (it takes device_lock, then the locks of the objects
# registered with hold_at_fork: the generators, which graph runs take under device_lock), so the child never
# sees one half done; in the child, where the threads that held locks do not exist, every lock starts free.
# Leaf locks (held briefly, by tracing too: the data cache's, the metrics', the computation cache's) are not
# waited for: the child only starts them free. ----
_fork_holders = weakref.WeakSet()
_fork_held = []


def hold_at_fork(obj):
    """A fork takes ``obj.lock`` (after device_lock) until it is done, and the child gets it free."""
    _fork_holders.add(obj)


def _before_fork():
    device_lock.acquire()
    for o in list(_fork_holders):
        o.lock.acquire()
        _fork_held.append(o)


def _after_fork_in_parent():
    while _fork_held:
        _fork_held.pop().lock.release()
    device_lock.release()


def _after_fork_in_child():
    device_lock._at_fork_reinit()
    _data_lock._at_fork_reinit()
    while _fork_held:
        _fork_held.pop().lock._at_fork_reinit()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)

_SCALAR_NP = {D.INT64: _np.int64, D.FLOAT64: _np.float64, D.BOOL: _np.bool_}


_SCALAR_KIND = {float: (D.FLOAT64, _SCALAR_SHAPES[D.FLOAT64]), int: (D.INT64, _SCALAR_SHAPES[D.INT64]),
                bool: (D.BOOL, _SCALAR_SHAPES[D.BOOL])}
_INT64 = D.INT64


def _scalar_node(v, _fast=_lt.scalar_node):
    """GetIrValueForScalar: a device-data node for a Python number (Long, Double or Bool), handle from the cache."""
    n = _fast(v)
    if n is not None:
        return n
    return _scalar_node_slow(v)


def _scalar_node_slow(v, _kinds=_SCALAR_KIND, _get=_data_cache.get, _touch=_touch_data):
    k = _kinds.get(type(v))
    if k is None:
        raise TypeError(f"expected a lazy tensor or a Python number, got {type(v).__name__}: {v!r}")
    code, shape = k
    key = (code, v) if v != 0 and v == v else _scalar_key(code, v)
    d = _get(key)
    if d is None:
        if code == _INT64 and not -(1 << 63) <= v < (1 << 63):
            raise OverflowError(f"Python int {v} is out of the int64 range of a lazy scalar")
        d = _cached_data(key, lambda: _np.array(v, _SCALAR_NP[code]))
    else:
        _touch(key)
    if _reuse[0]:
        return _dd(shape, d)
    return _device_data(shape, d, DEVICE)


def _scalar_code(v):
    t = type(v)
    return D.FLOAT64 if t is float else (D.INT64 if t is int else D.BOOL)


def _as_number(v):
    """A Python number for a scalar operand (numpy scalars included), or None if ``v`` is not one."""
    t = type(v)
    if t is int or t is float or t is bool:
        return v
    if isinstance(v, (_np.integer, _np.floating, _np.bool_)):
        return v.item()
    return None


# ---- node side table: the non-tensor arguments of nodes that have any (for text and execution) ----
_attrs = {}


def _drop_attrs(ref, _a=_attrs):
    _a.pop(ref.key, None)


def set_attrs(node, kind, args, tags):
    """Record what a node needs beyond its op and operands: ``kind`` (kernel key), ``args`` and the
    ``tags`` text LTC prints after the op (e.g. ``dim=1, keepdim=0, dtype=null``)."""
    k = id(node)
    _attrs[k] = (weakref.KeyedRef(node, _drop_attrs, k), kind, args, tags)


def node_attrs(node):
    """(kind, args, tags) recorded for ``node``, or None."""
    e = _attrs.get(id(node))
    if e is None or e[0]() is not node:
        return None
    return e[1:]


# ---- run-time arguments: a Python object a node's kernel is handed when its graph runs, in no hash (the
# generator a random op given generator= draws from).  A cached program takes them anew at each run, so that
# an equal graph traced with another such object uses that one. ----
_run_args = {}


def _drop_run_arg(ref, _a=_run_args):
    _a.pop(ref.key, None)


def set_run_arg(node, obj, identity=False):
    """Hand ``obj`` to ``node``'s kernel when its graph runs; ``identity``: the IR trie reuses the node only for
    the same object (LTC's CanBeReused compares an at::Generator by identity)."""
    k = id(node)
    _run_args[k] = (weakref.KeyedRef(node, _drop_run_arg, k), obj, identity)


def run_arg(node):
    """The run-time argument of ``node``, or None."""
    e = _run_args.get(id(node))
    return None if e is None or e[0]() is not node else e[1]


def _identity_run_arg(node):
    """The run-time argument the IR trie compares by identity (set_run_arg(identity=True)), or None."""
    e = _run_args.get(id(node))
    return None if e is None or e[0]() is not node or not e[2] else e[1]


_trie.identity_arg = _identity_run_arg


_after = []


def after_run(fn):
    """Queue ``fn()`` to run once the current graph's results are in place (the executor calls them after a
    run: a kernel's update of a tensor other than its roots, e.g. batch_norm's running statistics)."""
    _after.append(fn)


def run_after():
    """Run (and clear) what after_run queued; the executor calls it under the device lock."""
    while _after:
        _after.pop(0)()


def drop_after():
    _after.clear()


def run_args(post):
    """The run-time arguments of a post order's nodes, in post order (empty when none has one)."""
    if not _run_args:
        return ()
    out = []
    for n in post:
        e = _run_args.get(id(n))
        if e is not None and e[0]() is n:
            out.append(e[1])
    return out


# ---- live tensors ----


live_tensors = _lt.live_tensors     # the live lazy tensors, in ascending id (LTC's DeviceContextArena order)


_wrap = _wrap_plain = _lt.wrap      # swapped for _wrap_slow while force_fallback or IR reuse is set


def _wrap_slow(node, shape):
    if type(node) is Output:        # an output of a multi-output node (its node went through here already)
        return _wrap_plain(node, shape)
    if _forced and node is not None and node.op.qualified_name in _forced:
        return _run_forced(node, shape)
    if not _reuse[0]:
        return _wrap_plain(node, shape)
    if node is not None and not node.is_device_data:   # device data went through the trie as it was made (_dd)
        node = trie_node(node)
    return _wrap_plain(node, shape)


def _gap(operands):
    """Whether an absent optional operand (None) comes before a present one: LTC's generated CanBeReused reads
    the operands positionally (nullable_operand(i++)), so such a node is never reused from the IR trie (e.g.
    clamp(max=...) without min), only inserted."""
    seen_none = False
    for o in operands:
        if o is None:
            seen_none = True
        elif seen_none:
            return True
    return False


def _wrap_unreusable(node, shape):
    """_wrap for a node LTC never reuses (see _gap): inserted into the IR trie without a lookup."""
    if _forced and node.op.qualified_name in _forced:
        return _run_forced(node, shape)
    return _wrap_plain(trie_node(node, False), shape)


def trie_node(node, reusable=True):
    """``node``, or with IR reuse on the equal node the IR trie holds (LTC's ReuseOrMakeNode; ``node`` is
    inserted when there is none, or when it is not ``reusable``).  Also for a node that is only ever an
    operand (a TensorList)."""
    if not _reuse[0]:
        return node
    tc = TrieCache.get()
    hit = tc._lookup(node, reuse_counter_name) if reusable else None
    if hit is None:
        tc.insert(node)
        return node
    return hit


def _irs(*tensors):
    """The tensors' IR values, made right to left as LTC's generated code makes them (the GetIrValue() calls
    are the arguments of one call, which GCC evaluates last to first): with IR reuse on, the order in which
    device-data nodes are made is the order the IR trie sees them."""
    out = [None] * len(tensors)
    for i in range(len(tensors) - 1, -1, -1):
        out[i] = tensors[i]._ir()
    return tuple(out)


def is_number_operand(node, i):
    """Whether operand ``i`` of ``node`` is a Python number (a Long / Double / Bool [] device-data operand): what
    tells LTC's ``.Scalar`` node classes from the ``.Tensor`` ones."""
    e = node.operands[i].node
    return e.is_device_data and not e.shapes[0].sizes and e.shapes[0].dtype in _SCALAR_SHAPES


def _dd(shape, handle):
    """A device-data node (reused from the TrieCache when IR reuse is on)."""
    if _reuse[0]:
        return TrieCache.get().reuse_or_make_device_data(shape, handle, DEVICE, reuse_counter_name)
    return _device_data(shape, handle, DEVICE)





def reuse_counter_name(node):
    """``IrNodeReused_torch::lazy::<Class>`` for a node made by this layer (LTC's TrieCache counter)."""
    op = node.op.qualified_name
    a = node_attrs(node)
    classes = _optable.CLASSES
    cls = classes.get(a[0] if a is not None and a[0] in classes else op)
    if callable(cls):
        cls = cls(node, a)
    if cls is None:
        if op.startswith("aten::"):
            # LTC's generated class: the op's name in CamelCase (neg -> Neg, select_scatter -> SelectScatter)
            cls = "".join(w.capitalize() for w in op[6:].split("_"))
        else:
            return "IrNodeReused_" + op
    return "IrNodeReused_torch::lazy::" + cls


def _fmt_size(sizes):
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def _dim_list(v):
    return " ".join(str(x) for x in v)


def _index(v, what="dim"):
    """``v`` as a Python int (``__index__``), refusing bools as torch's argument parser does."""
    if type(v) is int:
        return v
    if isinstance(v, (bool, _np.bool_)):
        raise TypeError(f"{what} must be int, not bool: {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(v).__name__}: {v!r}") from None


def _norm_dim(dim, ndim, what="dim"):
    if type(dim) is not int:
        dim = _index(dim, what)
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _int_list(values, what):
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = values[0]
    out = []
    for v in values:
        if type(v) is int:
            out.append(v)
        elif isinstance(v, (bool, _np.bool_)):
            raise TypeError(f"{what} must be ints, not bool: {v!r}")
        else:
            try:
                out.append(operator.index(v))
            except TypeError:
                raise TypeError(f"{what} must be ints, got {type(v).__name__}: {v!r}") from None
    return out


def _needs_args(args, fn, what):
    """torch's methods taking ``*sizes`` need at least one argument (``()`` for none)."""
    if not args:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "{what}"')
    return args


def _broadcast(sa, sb):
    if sa == sb:
        return sa
    na, nb = len(sa), len(sb)
    n = max(na, nb)
    out = []
    for i in range(n):
        a = sa[i - n + na] if i - n + na >= 0 else 1
        b = sb[i - n + nb] if i - n + nb >= 0 else 1
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                               f"non-singleton dimension {i}")
    return tuple(out)


def _prio(t):
    return D.DIM if t._shape.sizes else D.ZERO_DIM


class _AllDims:
    """The default ``dim`` of sum / mean: torch's ``sum()`` overload (aten::sum, all dims), which LTC records
    differently from ``sum(dim=None)`` (aten::sum.dim_IntList with dim=null)."""
    __slots__ = ()

    def __repr__(self):
        return "ALL_DIMS"


ALL_DIMS = _AllDims()

# OpKinds and hash seeds used on the hot path.
_K = {}


def _op(name):
    k = _K.get(name)
    if k is None:
        k = _K.setdefault(name, _OpKind(name))
    return k


_ME = _hash.mhash()          # MHash(): the seed of codegen nodes without scalar arguments
_NULL = _hash.NULL_OPT


def _seed(*values):
    return _hash.mhash(*values)


def _dtype_hash(code):
    return _hash.hash_scalar(code, "scalar_type")


def _dtype_name(code):
    return _ir.scalar_type_name(code)


# force_fallback: op names (e.g. "aten::add") run eagerly instead of being traced.
_forced = set()


def _emit_multi(opname, operands, shapes, seed=None, kind=None, args=None, tags=None):
    """Build one node of several outputs (``shapes``: (code, sizes) each) and wrap each output in a new tensor
    (holding ``Output(node, i)``), as LTC's multi-output nodes (topk, sort, max.dim)."""
    shp = tuple(_shape(c, s) for c, s in shapes)
    n = Node(_op(opname), operands, shp, len(shp), _ME if seed is None else seed)
    if tags is not None or kind is not None:
        set_attrs(n, kind or opname, args, tags)
    if _reuse[0]:
        n = trie_node(n, not _gap(operands))
    return tuple(_wrap(Output(n, i), s) for i, s in enumerate(shp))


def _emit(opname, operands, code, sizes, seed=None, kind=None, args=None, tags=None):
    """Build one node and wrap it in a new tensor (the common path of every op)."""
    shape = _shape(code, sizes)
    n = Node(_op(opname), operands, (shape,), 1, _ME if seed is None else seed)
    if tags is not None or kind is not None:
        set_attrs(n, kind or opname, args, tags)
    if _reuse[0] and _gap(operands):
        return _wrap_unreusable(n, shape)
    return _wrap(n, shape)


class LazyTensor(_lt.TensorBase):
    """A tensor on the lazy device: ops trace LTC IR; mark_step / sync_multi run it; ``numpy()`` returns values."""
    # the slots are TensorBase's; _base: the tensor's functionalisation state (None for a plain tensor; an
    # Alias of its storage for a view or a tensor with views: see accel.lazy.inplace)
    __slots__ = ()
    __array_priority__ = 1000          # numpy scalars on the left defer to our reflected operators

    def __init__(self, *args, **kwargs):
        raise TypeError("LazyTensor cannot be built directly: use accel.lazy.tensor(array)")

    # ---- IR value ----
    def _ir(self):
        """The tensor's IR node (LazyTensor::GetIrValue): device-data nodes are made on first use."""
        n = self._node
        if n is not None:
            return n
        h = self._handle
        src = self._src if h is None else None
        if src is not None:
            a = src.array
            if a.ndim == 0:
                code = self._shape.dtype
                v = a.item()
                key = _scalar_key(code, v) if src not in _UNINIT else (code, "uninitialised", id(src))
                h = _cached_data(key, lambda: a)
            else:
                h = src
        elif h is None:
            h = self._handle            # another thread's sync moved the source data to _handle meanwhile
            if h is None:
                if self._base is not None and runtime.alias_sync(self):    # stale alias: regenerate it
                    return self._ir()
                raise RuntimeError("lazy tensor has neither IR nor data")
        n = _dd(self._shape, h)
        self._node = n
        return n

    # ---- properties ----
    @property
    def shape(self):
        return tuple(self._shape.sizes)

    def size(self, dim=None):
        s = self.shape
        return s if dim is None else s[_norm_dim(dim, len(s))]

    @property
    def dtype(self):
        return D.DTYPES[self._shape.dtype]

    @property
    def ndim(self):
        return len(self._shape.sizes)

    def dim(self):
        return len(self._shape.sizes)

    def numel(self):
        n = 1
        for s in self._shape.sizes:
            n *= s
        return n

    @property
    def device(self):
        return "lazy:0"

    def __len__(self):
        if not self._shape.sizes:
            raise TypeError("len() of a 0-d tensor")
        return self._shape.sizes[0]

    def numpy(self):
        """The values as a new numpy array, computed when the tensor holds IR (which it keeps, as LTC's
        ``.cpu()`` does: mark_step or sync_multi replace IR by data)."""
        _c_to_copy[0] += 1             # LTC's .cpu(): a _to_copy to the CPU
        return runtime.tensor_value(self).copy()

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.numpy().item()

    def __repr__(self):
        n = self._node
        state = "data" if n is None else (str(n.op) if type(n) is not Output else f"{n.node.op}.{n.index}")
        return f"<LazyTensor id={self._id} {_dtype_name(self._shape.dtype)}{list(self._shape.sizes)} {state}>"

    def __bool__(self):
        """torch's Tensor.__bool__: the truth value of a one-element tensor (computed now, as .item())."""
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if n else
                               "Boolean value of Tensor with no values is ambiguous")
        _c_local_scalar[0] += 1
        _c_to_copy[0] += 1
        return bool(runtime.tensor_value(self).reshape(-1)[0])

    # tensors stay hashable by identity although == is elementwise (as torch's)
    __hash__ = _lt.TensorBase.__hash__

_c_local_scalar = _cell("aten::_local_scalar_dense")


def _bf16_tensor(a):
    """A bfloat16 tensor of the values of ``a`` (rounded to bfloat16, stored as float32)."""
    a = D.round_bf16(a)
    a.flags.writeable = False
    t = _wrap(None, _shape(D.BFLOAT16, tuple(int(s) for s in a.shape)))
    t._src = Data(a)
    _c_to_copy[0] += 1
    return t

_lt.setup(LazyTensor, _c_create, _c_destroy, _data_cache, _device_data, DEVICE, _SCALAR_KIND)


def _check_tensor(t, what):
    if type(t) is not LazyTensor:
        raise TypeError(f"{what} must be a lazy tensor, got {type(t).__name__}: {t!r}")


def _device(device):
    """The ``device=`` of a factory (tensor() included): the lazy device (None, "lazy", "lazy:0"); anything else
    is refused."""
    if device is not None and str(device) not in ("lazy", "lazy:0"):
        raise ValueError(f"accel.lazy factories make lazy tensors: device must be None or 'lazy', got {device!r}")


# the backend's copy-in of tensor()'s array (array -> Data handle), or None: the array is the handle's.  Set by
# executor.set_backend (the CUDA backend copies it to the device on the current stream).
source_hook = [None]


def tensor(data, dtype=None, device=None):
    """A lazy tensor holding a copy of ``data`` (a numpy array or anything numpy.asarray takes, e.g. a
    Python scalar): torch.from_numpy(a).to("lazy"); ``device``: None or the lazy device, as torch.tensor's."""
    _device(device)
    if type(data) is LazyTensor:
        raise TypeError("tensor() needs array data, got a lazy tensor (use .to(dtype) or the tensor itself)")
    if isinstance(data, (bool, int, float)) and dtype is None:
        a = _np.array(data, dtype=_np.int64 if type(data) is int else None)
        if a.dtype == _np.float64 and type(data) is float:
            a = a.astype(_np.float32)          # torch.tensor(1.5) is Float
    else:
        a = _np.array(data, dtype=None if dtype is None else D.CODE_TO_NP[D.to_code(dtype)], copy=True)
        if dtype is None and a.dtype == _np.float64 and not isinstance(data, (_np.ndarray, _np.generic)):
            a = a.astype(_np.float32)          # torch.tensor([1.5]) is Float (the default dtype)
    if dtype is not None and D.to_code(dtype) == D.BFLOAT16:
        return _bf16_tensor(a)
    code = D.NP_TO_CODE.get(a.dtype.newbyteorder("=") if a.dtype.byteorder == ">" else a.dtype)
    if code is None:
        raise TypeError(f"tensor() got numpy dtype {a.dtype}; supported: "
                        f"{', '.join(str(d) for d in D.CODE_TO_NP.values())}")
    if not a.flags.c_contiguous or a.dtype != D.CODE_TO_NP[code]:
        a = _np.array(a, dtype=D.CODE_TO_NP[code], order="C")
    a.flags.writeable = False
    t = _wrap(None, _shape(code, tuple(int(s) for s in a.shape)))
    up = source_hook[0]
    t._src = Data(a) if up is None else up(a)
    _c_to_copy[0] += 1             # LTC counts the copy to the lazy device as lazy::_to_copy
    return t



class _Runtime:
    """What the core needs of the layers above it, installed by them when they are imported (so that the
    core imports none of them): ``tensor_value(t)`` and ``compute_nodes(nodes)`` (accel.lazy.executor),
    ``alias_sync(t)`` (accel.lazy.inplace: regenerate a stale alias)."""
    __slots__ = ("tensor_value", "compute_nodes", "alias_sync")

    def __init__(self):
        self.tensor_value = self.compute_nodes = self.alias_sync = None


runtime = _Runtime()


def install_runtime(**parts):
    """Install ``tensor_value`` / ``compute_nodes`` / ``alias_sync`` (see _Runtime)."""
    for k, f in parts.items():
        setattr(runtime, k, f)


def _run_forced(node, shape):
    """A traced op whose name is in force_fallback: computed now from its inputs, returned as data."""
    _forced_cells = _metrics.Counter(node.op.qualified_name)
    _forced_cells.add(1)
    value = runtime.compute_nodes([node])[0]
    return tensor(value)


def force_fallback(op=None):
    """Make ``op`` (e.g. "aten::add") run eagerly instead of being traced; None or "" clears the setting.
    Returns the ops now forced (torch._C._lazy._set_force_fallback sets one name)."""
    if op is None or op == "":
        _forced.clear()
    elif not isinstance(op, str) or "::" not in op:
        raise ValueError(f"force_fallback needs an op name like 'aten::add', got {op!r}")
    else:
        _forced.add(op)
    _select_wrap()
    return sorted(_forced)


def get_force_fallback():
    """The ops forced to run eagerly, joined by ',' ('' when none)."""
    return ",".join(sorted(_forced))


# ---- IR reuse (LTC's TrieCache, torch._C._lazy._set_reuse_ir) ----
_reuse = [False]


def set_reuse_ir(flag):
    """With ``flag`` on, every op and device-data node is looked up in the TrieCache first and an equal node
    from an earlier step is reused (counters IrNodeReused_*, TrieForked); off by default, as in LTC."""
    if type(flag) is not bool:
        raise TypeError(f"set_reuse_ir needs a bool, got {type(flag).__name__}: {flag!r}")
    if not flag:
        _trie_release_all()
    _reuse[0] = flag
    _lt.set_reuse(flag)
    _select_wrap()
    return flag


def _select_wrap():
    global _wrap
    _wrap = _wrap_slow if (_reuse[0] or _forced) else _wrap_plain
    _lt.set_wrap_hook(_wrap_slow if _wrap is _wrap_slow else None)


def get_reuse_ir():
    return _reuse[0]
