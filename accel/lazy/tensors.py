"""Lazy tensors over the LTC IR: each op records the node(s) LTC's TorchScript backend records for it.

A LazyTensor holds either IR (a Node), device data (a ``Data`` handle after a sync), or source data (a
numpy array given to ``tensor()``, turned into a device-data node on first use), as an LTC LazyTensor.
Python scalars become ``Long[]``/``Double[]`` device data through the device-data cache, as LTC's
GetIrValueForScalar does.  Execution is in accel.lazy.executor; the numpy kernels in accel.lazy.backend.
"""
import collections
import operator
import struct
import threading
import weakref

import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy import metrics as _metrics

_ir = _impl.module("_ir")
_hash = _impl.module("_hash")
_lt = _impl.module("_lazy_trace")
Node = _ir.Node
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


# ---- live tensors ----


live_tensors = _lt.live_tensors     # the live lazy tensors, in ascending id (LTC's DeviceContextArena order)


_wrap = _wrap_plain = _lt.wrap      # swapped for _wrap_slow while force_fallback or IR reuse is set


def _wrap_slow(node, shape):
    if _forced and node is not None and node.op.qualified_name in _forced:
        return _run_forced(node, shape)
    if not _reuse[0]:
        return _wrap_plain(node, shape)
    if node is not None:
        from accel.lazy.trie import TrieCache
        tc = TrieCache.get()
        hit = tc._lookup(node, reuse_counter_name)
        if hit is None:
            tc.insert(node)
        else:
            node = hit
    return _wrap_plain(node, shape)


def _dd(shape, handle):
    """A device-data node (reused from the TrieCache when IR reuse is on)."""
    if _reuse[0]:
        from accel.lazy.trie import TrieCache
        return TrieCache.get().reuse_or_make_device_data(shape, handle, DEVICE, reuse_counter_name)
    return _device_data(shape, handle, DEVICE)


# The C++ node classes LTC names its IrNodeReused_ counters after, by op (or by recorded kind).
_CLASSES = {
    "aten::add": "AddTensor", "aten::sub": "SubTensor", "aten::mul": "MulTensor", "aten::div": "DivTensor",
    "aten::maximum": "Maximum", "aten::minimum": "Minimum", "aten::mm": "Mm", "aten::bmm": "Bmm", "aten::mv": "Mv",
    "aten::rsqrt": "Rsqrt", "aten::sum.all": "Sum", "aten::sum.dim": "SumDimIntlist", "aten::mean.all": "Mean",
    "aten::mean.dim": "MeanDim", "aten::view_copy": "ViewCopy", "aten::t_copy": "TCopy",
    "aten::transpose_copy": "TransposeCopyInt", "aten::permute_copy": "PermuteCopy",
    "aten::unsqueeze_copy": "UnsqueezeCopy", "aten::expand_copy": "ExpandCopy", "aten::_softmax": "Softmax",
    "aten::_log_softmax": "LogSoftmax", "aten::_to_copy": "ToCopy", "aten::cat": "Cat",
    "lazy_tensors::tensor_list": "TensorList", "lazy_tensors::device_data": "DeviceData"}


def reuse_counter_name(node):
    """``IrNodeReused_torch::lazy::<Class>`` for a node made by this layer (LTC's TrieCache counter)."""
    op = node.op.qualified_name
    a = node_attrs(node)
    cls = _CLASSES.get(a[0] if a is not None and a[0] in _CLASSES else op)
    if cls is None:
        if op == "aten::pow":       # a Python-number exponent is a Long/Double/Bool[] device-data operand
            e = node.operands[1].node
            scalar = e.is_device_data and not e.shapes[0].sizes and e.shapes[0].dtype in _SCALAR_SHAPES
            cls = "PowTensorScalar" if scalar else "PowTensorTensor"
        elif op == "aten::squeeze_copy":
            cls = "SqueezeCopyDim" if a is not None and a[2] else "SqueezeCopy"
        elif op.startswith("aten::"):
            cls = op[6:].capitalize()          # neg -> Neg, relu -> Relu, clamp -> Clamp, ...
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


def _emit(opname, operands, code, sizes, seed=None, kind=None, args=None, tags=None):
    """Build one node and wrap it in a new tensor (the common path of every op)."""
    shape = _shape(code, sizes)
    n = Node(_op(opname), operands, (shape,), 1, _ME if seed is None else seed)
    if tags is not None or kind is not None:
        set_attrs(n, kind or opname, args, tags)
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
                h = _cached_data(_scalar_key(code, v), lambda: a)
            else:
                h = src
        elif h is None:
            h = self._handle            # another thread's sync moved the source data to _handle meanwhile
            if h is None:
                if self._base is not None and _inplace.sync(self):    # stale alias: regenerate it
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
        return D.CODE_TO_NP[self._shape.dtype]

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
        from accel.lazy import executor
        _c_to_copy[0] += 1             # LTC's .cpu(): a _to_copy to the CPU
        return executor.tensor_value(self).copy()

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.numpy().item()

    def __repr__(self):
        state = "data" if self._node is None else str(self._node.op)
        return f"<LazyTensor id={self._id} {_dtype_name(self._shape.dtype)}{list(self._shape.sizes)} {state}>"

    def __bool__(self):
        """torch's Tensor.__bool__: the truth value of a one-element tensor (computed now, as .item())."""
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if n else
                               "Boolean value of Tensor with no values is ambiguous")
        from accel.lazy import executor
        _c_local_scalar[0] += 1
        _c_to_copy[0] += 1
        return bool(executor.tensor_value(self).reshape(-1)[0])

    # tensors stay hashable by identity although == is elementwise (as torch's)
    __hash__ = _lt.TensorBase.__hash__

    # ---- comparisons (aten::eq/ne/lt/le/gt/ge, Bool results); reflected forms come through Python's swap ----
    def __eq__(self, other):
        return _compare("eq", self, other, True)

    def __ne__(self, other):
        return _compare("ne", self, other, True)

    def __lt__(self, other):
        return _compare("lt", self, other, True)

    def __le__(self, other):
        return _compare("le", self, other, True)

    def __gt__(self, other):
        return _compare("gt", self, other, True)

    def __ge__(self, other):
        return _compare("ge", self, other, True)

    def eq(self, other):
        return _compare("eq", self, other)

    def ne(self, other):
        return _compare("ne", self, other)

    def lt(self, other):
        return _compare("lt", self, other)

    def le(self, other):
        return _compare("le", self, other)

    def gt(self, other):
        return _compare("gt", self, other)

    def ge(self, other):
        return _compare("ge", self, other)

    # ---- in-place ops (functionalised as torch records them for LTC: accel.lazy.inplace) ----
    def add_(self, other, alpha=1):
        return _inplace.add_(self, other, alpha)

    def sub_(self, other, alpha=1):
        return _inplace.sub_(self, other, alpha)

    def mul_(self, other):
        return _inplace.mul_(self, other)

    def div_(self, other):
        return _inplace.div_(self, other)

    def pow_(self, exponent):
        return _inplace.pow_(self, exponent)

    def __iadd__(self, other):
        return _inplace.add_(self, other)

    def __isub__(self, other):
        return _inplace.sub_(self, other)

    def __imul__(self, other):
        return _inplace.mul_(self, other)

    def __itruediv__(self, other):
        return _inplace.div_(self, other)

    def __ipow__(self, other):
        return _inplace.pow_(self, other)

    def clamp_(self, min=None, max=None):
        return _inplace.clamp_(self, min, max)

    def zero_(self):
        return _inplace.zero_(self)

    def fill_(self, value):
        return _inplace.fill_(self, value)

    def copy_(self, src):
        return _inplace.copy_(self, src)

    # ---- arithmetic (add, sub, mul, div, pow, their operators, and the unary ops are bound after the
    # class from per-op closures: see _bind_fast_methods) ----

    def maximum(self, other):
        return _binary_tt("maximum", self, other)

    def minimum(self, other):
        return _binary_tt("minimum", self, other)

    def __rsub__(self, other):
        return _rsub(self, other)

    def __rtruediv__(self, other):
        return _rdiv(self, other)

    def __rpow__(self, other):
        return _rpow(self, other)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def matmul(self, other):
        return matmul(self, other)

    def mm(self, other):
        return mm(self, other)

    def bmm(self, other):
        return bmm(self, other)

    # ---- unary without a lazy kernel ----

    def sin(self):
        return _fallback_unary("sin", self)

    # ---- reductions ----
    def sum(self, dim=ALL_DIMS, keepdim=False):
        return _reduce("sum", self, dim, keepdim)

    def mean(self, dim=ALL_DIMS, keepdim=False):
        return _reduce("mean", self, dim, keepdim)

    def amax(self, dim=(), keepdim=False):
        return _amax(self, dim, keepdim)

    # ---- shapes ----
    def view(self, *shape):
        return _view(self, _needs_args(shape, "view", "size"), "view_copy_symint")

    def reshape(self, *shape):
        return _view(self, _needs_args(shape, "reshape", "shape"), "view_copy_symint")

    def t(self):
        return _t(self)

    def transpose(self, dim0, dim1):
        return _transpose(self, dim0, dim1)

    def permute(self, *dims):
        return _permute(self, _needs_args(dims, "permute", "dims"))

    def unsqueeze(self, dim):
        return _unsqueeze(self, dim)

    def squeeze(self, dim=None):
        return _squeeze(self, dim)

    def expand(self, *sizes):
        return _expand(self, _needs_args(sizes, "expand", "size"))

    # ---- others ----
    def softmax(self, dim):
        return _softmax("_softmax", self, dim)

    def log_softmax(self, dim):
        return _softmax("_log_softmax", self, dim)

    def clamp(self, min=None, max=None):
        return _clamp(self, min, max)

    def to(self, dtype):
        return _to(self, dtype)


def _make_unary_(name):
    def f(self):
        return _inplace.unary_(self, name)
    f.__name__ = f.__qualname__ = name + "_"
    f.__doc__ = f"In-place {name} (functionalised: {name}, cast back to the tensor's dtype if needed)."
    return f


for _n in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "reciprocal"):
    setattr(LazyTensor, _n + "_", _make_unary_(_n))
del _n

_c_local_scalar = _cell("aten::_local_scalar_dense")

_lt.setup(LazyTensor, _c_create, _c_destroy, _data_cache, _device_data, DEVICE, _SCALAR_KIND)


def _check_tensor(t, what):
    if type(t) is not LazyTensor:
        raise TypeError(f"{what} must be a lazy tensor, got {type(t).__name__}: {t!r}")


def tensor(data, dtype=None):
    """A lazy tensor holding a copy of ``data`` (a numpy array or anything numpy.asarray takes, e.g. a
    Python scalar): torch.from_numpy(a).to("lazy")."""
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
    code = D.NP_TO_CODE.get(a.dtype.newbyteorder("=") if a.dtype.byteorder == ">" else a.dtype)
    if code is None:
        raise TypeError(f"tensor() got numpy dtype {a.dtype}; supported: "
                        f"{', '.join(str(d) for d in D.CODE_TO_NP.values())}")
    if not a.flags.c_contiguous or a.dtype != D.CODE_TO_NP[code]:
        a = _np.array(a, dtype=D.CODE_TO_NP[code], order="C")
    a.flags.writeable = False
    t = _wrap(None, _shape(code, tuple(int(s) for s in a.shape)))
    t._src = Data(a)
    _c_to_copy[0] += 1             # LTC counts the copy to the lazy device as lazy::_to_copy
    return t


# ---------------------------------------------------------------- elementwise ops
_UNARY_FLOAT = frozenset(("exp", "log", "sqrt", "rsqrt", "cos", "tanh", "sigmoid", "reciprocal"))


def _unary_impl(name, a):
    s = a._shape
    code = s.dtype
    if name in _UNARY_FLOAT:
        if code not in D.FLOATS:
            code = D.DEFAULT_FLOAT
    elif code == D.BOOL and name == "relu":
        raise RuntimeError("Boolean inputs not supported for relu")
    elif code == D.BOOL and name == "neg":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    _fn_counter(name)[0] += 1
    return _emit("aten::" + name, (a._ir(),), code, s.sizes)


def _unary_keep(name):
    """The input dtypes unary op ``name`` keeps (its one-node case): floats for the float-only ops, else all
    but bool."""
    return frozenset(D.FLOATS) if name in _UNARY_FLOAT else frozenset(D.CODE_TO_NP) - {D.BOOL}


def _make_unary(name):
    op = _op("aten::" + name)
    cell = _fn_counter(name)
    keep = _unary_keep(name)

    def f(a):
        s = a._shape
        if s.dtype not in keep:
            return _unary_impl(name, a)
        cell[0] += 1
        x = a._node
        return _wrap(Node(op, (x if x is not None else a._ir(),), (s,), 1, _ME), s)
    f.__name__ = f.__qualname__ = name
    return f


_UNARIES = {}


def _unary(name, a):
    f = _UNARIES.get(name)
    if f is None:
        f = _UNARIES[name] = _make_unary(name)
    return f(a)


# result dtype of (tensor dtype, Python number dtype): the tensor's unless the number's category is higher
_WRAPPED_RESULT = {(c, v): D.result_type(((c, D.DIM), (v, D.WRAPPED)))
                   for c in D.CODE_TO_NP for v in (D.INT64, D.FLOAT64, D.BOOL)}
_NUM_CODE = {float: D.FLOAT64, int: D.INT64, bool: D.BOOL}


def _make_binary(name):
    """mul / div / pow with a tensor or a Python number on the right (mul both orders via __rmul__)."""
    op = _op("aten::" + name)
    cell = _fn_counter(name)
    is_div = name == "div"
    is_pow = name == "pow"

    def f(a, b):
        tb = type(b)
        if tb is LazyTensor:
            return _binary_tt(name, a, b)
        vc = _NUM_CODE.get(tb)
        if vc is None:
            v = _as_number(b)
            if v is None:
                raise TypeError(f"{name}(): expected a lazy tensor or a Python number as 'other', got "
                                f"{tb.__name__}: {b!r}")
            b, vc = v, _NUM_CODE[type(v)]
        s = a._shape
        code = _WRAPPED_RESULT[(s.dtype, vc)]
        if is_div and code not in D.FLOATS:
            code = D.DEFAULT_FLOAT
        elif is_pow and code in D.INTS and vc != D.FLOAT64:
            _check_int_exponent(b, code)
        cell[0] += 1
        x = a._node
        operands = (x if x is not None else a._ir(), _scalar_node(b))
        if code == s.dtype:
            return _wrap(Node(op, operands, (s,), 1, _ME), s)
        return _emit(op.qualified_name, operands, code, s.sizes)
    f.__name__ = f.__qualname__ = name
    return f


def _check_int_exponent(e, code):
    """torch's checks of a Python-number exponent of an integral pow (raised at the call, as torch does)."""
    if e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    info = _np.iinfo(D.CODE_TO_NP[code])
    if e > info.max:
        raise RuntimeError(f"value cannot be converted to type {D.INT_C_NAMES[code]} without overflow")


_mul = _make_binary("mul")
_div = _make_binary("div")
_pow = _make_binary("pow")
_BINARIES = {"mul": _mul, "div": _div, "pow": _pow}


def _binary(name, a, b):
    return _BINARIES[name](a, b)


def _bind_fast_methods():
    """Bind the hot operator methods to _lazy_trace's per-op functions: each traces its common case (one
    node of the input's Shape, Python numbers whose device data is cached) in one call and hands every
    other case to the closure above, which does the same as a fast path would."""
    F = _lt
    float_ok = frozenset(D.FLOATS)                           # a Python float keeps these dtypes
    int_ok = frozenset(c for c in D.CODE_TO_NP if c != D.BOOL)  # a Python int keeps these
    for c in D.CODE_TO_NP:
        assert (_WRAPPED_RESULT[(c, D.FLOAT64)] == c) == (c in float_ok)
        assert (_WRAPPED_RESULT[(c, D.INT64)] == c) == (c in int_ok)
    for name in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "cos", "tanh", "sigmoid", "relu", "reciprocal"):
        slow = _UNARIES.get(name) or _UNARIES.setdefault(name, _make_unary(name))
        f = F.unary(Node, _op("aten::" + name), _fn_counter(name), _unary_keep(name), _ME, slow)
        setattr(LazyTensor, name, f)
        if name in ("neg", "abs"):
            setattr(LazyTensor, f"__{name}__", f)
    mul = F.binary_scalar(Node, _op("aten::mul"), _fn_counter("mul"), float_ok, int_ok, _ME, _mul)
    div = F.binary_scalar(Node, _op("aten::div"), _fn_counter("div"), float_ok, float_ok, _ME, _div)
    # integral pow goes to the closure, which checks the exponent (negative / out of range) as torch does
    pow_ = F.binary_scalar(Node, _op("aten::pow"), _fn_counter("pow"), float_ok, float_ok, _ME, _pow)
    add = F.add_sub(Node, _op("aten::add"), _fn_counter("add"), float_ok, int_ok, _ME, _ADD_SUB["add"])
    sub = F.add_sub(Node, _op("aten::sub"), _fn_counter("sub"), float_ok, int_ok, _ME, _ADD_SUB["sub"])
    LazyTensor.__mul__ = LazyTensor.__rmul__ = LazyTensor.mul = mul
    LazyTensor.__truediv__ = LazyTensor.div = div
    LazyTensor.__pow__ = LazyTensor.pow = pow_
    LazyTensor.__add__ = LazyTensor.__radd__ = LazyTensor.add = add
    LazyTensor.__sub__ = LazyTensor.sub = sub


def _binary_tt(name, a, b):
    _check_tensor(a, f"{name}() input")
    _check_tensor(b, f"{name}() other")
    sa, sb = a._shape, b._shape
    sizes = _broadcast(sa.sizes, sb.sizes)
    if sa.dtype == sb.dtype:
        code = sa.dtype
    else:
        code = D.result_type(((sa.dtype, _prio(a)), (sb.dtype, _prio(b))))
    if name == "div" and code not in D.FLOATS:
        code = D.DEFAULT_FLOAT
    elif name == "pow" and code == D.BOOL:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    _fn_counter(name)[0] += 1
    x = a._node if a._node is not None else a._ir()
    y = b._node if b._node is not None else b._ir()
    if code == sa.dtype and sizes is sa.sizes:
        return _wrap(Node(_op("aten::" + name), (x, y), (sa,), 1, _ME), sa)
    return _emit("aten::" + name, (x, y), code, sizes)


def _sub_check(code_a, code_b):
    """torch's sub_check on the dtype codes of a subtraction's operands (a Python number's code for a number)."""
    if code_a == D.BOOL and code_b == D.BOOL:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if code_a == D.BOOL or code_b == D.BOOL:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _add_sub_impl(name, a, b, alpha):
    """add/sub(self, other, alpha): other and alpha become operands (Python numbers through the data cache)."""
    if type(a) is not LazyTensor:                  # 2 + t reaches here as __radd__ with the tensor in a
        a, b = b, a
    av = _as_number(alpha)
    if av is None:
        raise TypeError(f"{name}(): alpha must be a Python number, got {type(alpha).__name__}: {alpha!r}")
    if type(b) is LazyTensor:
        sa, sb = a._shape, b._shape
        sizes = _broadcast(sa.sizes, sb.sizes)
        vb = sb.dtype
        code = sa.dtype if sa.dtype == vb else D.result_type(((sa.dtype, _prio(a)), (vb, _prio(b))))
    else:
        v = _as_number(b)
        if v is None:
            raise TypeError(f"{name}(): expected a lazy tensor or a Python number as 'other', got "
                            f"{type(b).__name__}: {b!r}")
        sa = a._shape
        sizes = sa.sizes
        vb = _scalar_code(v)
        code = sa.dtype if vb == sa.dtype else D.result_type(((sa.dtype, _prio(a)), (vb, D.WRAPPED)))
    if name == "sub":
        _sub_check(sa.dtype, vb)
    if type(av) is float and code not in D.FLOATS:
        raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating point number "
                           f"(got alpha={av!r})")
    if type(b) is LazyTensor:                      # made after the checks: a refused op changes nothing
        y = b._node if b._node is not None else b._ir()
    else:
        y = _scalar_node(v)
    _fn_counter(name)[0] += 1
    x = a._node if a._node is not None else a._ir()
    operands = (x, y, _scalar_node(av))
    if code == sa.dtype and sizes is sa.sizes:
        return _wrap(Node(_op("aten::" + name), operands, (sa,), 1, _ME), sa)
    return _emit("aten::" + name, operands, code, sizes)


def _make_add_sub(name):
    op = _op("aten::" + name)
    cell = _fn_counter(name)

    def f(a, b, alpha=1):
        """Fast path: a tensor plus a Python int/float with an int alpha; everything else in _add_sub_impl."""
        tb = type(b)
        if type(a) is not LazyTensor or type(alpha) is not int:
            return _add_sub_impl(name, a, b, alpha)
        s = a._shape
        if tb is LazyTensor:
            sb = b._shape
            if sb is not s:                 # same dtype and sizes share one Shape object
                return _add_sub_impl(name, a, b, alpha)
            y = b._node
            if y is None:
                y = b._ir()
        elif tb is float or tb is int:
            code = _WRAPPED_RESULT[(s.dtype, _NUM_CODE[tb])]
            if code != s.dtype or code == D.BOOL:
                return _add_sub_impl(name, a, b, alpha)
            y = _scalar_node(b)
        else:
            return _add_sub_impl(name, a, b, alpha)
        if s.dtype == D.BOOL:
            return _add_sub_impl(name, a, b, alpha)
        cell[0] += 1
        x = a._node
        operands = (x if x is not None else a._ir(), y, _scalar_node(alpha))
        return _wrap(Node(op, operands, (s,), 1, _ME), s)
    f.__name__ = f.__qualname__ = name
    return f


_ADD_SUB = {"add": _make_add_sub("add"), "sub": _make_add_sub("sub")}


def _add_sub(name, a, b, alpha):
    return _ADD_SUB[name](a, b, alpha)


_bind_fast_methods()


def _compare(name, a, b, operator=False):
    """aten::eq / ne / lt / le / gt / ge of a tensor and a tensor (broadcast) or a Python number: a Bool
    tensor; both operands are compared in their promoted dtype (kept for the kernel).  An operator given
    something that is neither answers NotImplemented (``t == None`` is False, as torch's)."""
    _check_tensor(a, f"{name}() input")
    s = a._shape
    if type(b) is LazyTensor:
        sb = b._shape
        sizes = _broadcast(s.sizes, sb.sizes)
        code = s.dtype if s.dtype == sb.dtype else D.result_type(((s.dtype, _prio(a)), (sb.dtype, _prio(b))))
        y = None
    else:
        v = _as_number(b)
        if v is None:
            if operator:
                return NotImplemented
            raise TypeError(f"{name}(): expected a lazy tensor or a Python number as 'other', got "
                            f"{type(b).__name__}: {b!r}")
        sizes = s.sizes
        code = D.result_type(((s.dtype, _prio(a)), (_scalar_code(v), D.WRAPPED)))
        y = v
    _fn_counter(name)[0] += 1
    x = a._ir()
    y = b._ir() if y is None else _scalar_node(y)
    return _emit("aten::" + name, (x, y), D.BOOL, sizes, None, "aten::" + name, code)


def _rsub(a, other):
    """other - a for a Python number: sub(scalar, a, alpha) (LTC records the wrapped number first)."""
    v = _as_number(other)
    if v is None:
        raise TypeError(f"rsub(): expected a Python number, got {type(other).__name__}: {other!r}")
    s = a._shape
    vc = _scalar_code(v)
    _sub_check(vc, s.dtype)
    code = s.dtype if vc == s.dtype else D.result_type(((s.dtype, _prio(a)), (vc, D.WRAPPED)))
    _fn_counter("sub")[0] += 1
    return _emit("aten::sub", (_scalar_node(v), a._ir(), _scalar_node(1)), code, s.sizes)


def _rdiv(a, other):
    """other / a for a Python number: reciprocal(a) * other, as torch decomposes it."""
    v = _as_number(other)
    if v is None:
        raise TypeError(f"rdiv(): expected a Python number, got {type(other).__name__}: {other!r}")
    return _binary("mul", _unary("reciprocal", a), v)


def _rpow(a, other):
    """number ** a: torch has no lazy kernel for pow.Scalar; it runs eagerly (counter aten::pow.Scalar)."""
    v = _as_number(other)
    if v is None:
        raise TypeError(f"rpow(): expected a Python number, got {type(other).__name__}: {other!r}")
    s = a._shape
    code = D.result_type(((s.dtype, _prio(a)), (_scalar_code(v), D.WRAPPED)))
    return _fallback("aten::pow.Scalar", "rpow", [a, v], code)


def _fallback_unary(name, a):
    code = a._shape.dtype
    return _fallback("aten::" + name, name, [a], code if code in D.FLOATS else D.DEFAULT_FLOAT)


# ---------------------------------------------------------------- eager fallback
def _fallback(counter, name, inputs, code):
    """Run an op LTC has no lazy kernel for eagerly (its CPU fallback): the inputs are computed as by
    ``numpy()`` (they keep their IR), the result (cast to torch's dtype ``code``) is a new tensor holding data."""
    from accel.lazy import backend, executor
    _metrics.Counter(counter).add(1)
    tensors = [t for t in inputs if type(t) is LazyTensor]
    args = [executor.tensor_value(t) if type(t) is LazyTensor else t for t in inputs]
    _c_to_copy[0] += len(tensors)     # the inputs' copies to the CPU
    result = _np.asarray(backend.eager(name, args)).astype(D.CODE_TO_NP[code], copy=False)
    return tensor(result)


def _run_forced(node, shape):
    """A traced op whose name is in force_fallback: computed now from its inputs, returned as data."""
    from accel.lazy import executor
    _forced_cells = _metrics.Counter(node.op.qualified_name)
    _forced_cells.add(1)
    value = executor.compute_nodes([node])[0]
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
        from accel.lazy import trie
        trie.release_all()
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


# The remaining ops live in accel.lazy.ops (imported last: it builds on the names above).
from accel.lazy.ops import (  # noqa: E402,F401
    _amax, _clamp, _expand, _permute, _reduce, _softmax, _squeeze, _t, _to, _transpose, _unsqueeze, _view, bmm,
    cat, matmul, mm)
from accel.lazy import inplace as _inplace  # noqa: E402
