"""Pure-Python twin of accel._native._ir: LTC IR nodes, post-order, parameter sequence and graph hash.

Same public names, signatures, results and error texts as the Cython module (tests enforce it).
All hashes are Python ints in [0, 2**128); see shared/reference/ltc_ir.md for the algorithms.
"""
import array as _array
import itertools as _itertools
import operator as _operator
import os as _os
import threading as _threading
import weakref as _weakref

from accel._python._hash import (_CONTAINER_SEED, _DATA_SEED, _GOLD, _KB, _M64, _M128, _MHASH_SEED,
                                 _SIZE_T_HASH, HASH_SEED, _combine, _hash_block, _idx_kb, _size_t_hash,
                                 _size_t_hash_uncached, _tname, _u128)
from accel._python._hash import NULL_OPT as _NULL_OPT, string_hash as _string_hash

DEVICE_DATA_SEED = 101
DEVICE_DATA_OP = "lazy_tensors::device_data"
NOT_SUPPORTED_OP = "lazy_tensors::not_supported"
EMITTING = 1
EMITTED = 2

_DTYPE_NAMES = (
    "Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "ComplexHalf", "ComplexFloat",
    "ComplexDouble", "Bool", "QInt8", "QUInt8", "QInt32", "BFloat16", "QUInt4x2", "QUInt2x4", "Bits1x8",
    "Bits2x4", "Bits4x2", "Bits8", "Bits16", "Float8_e5m2", "Float8_e4m3fn", "Float8_e5m2fnuz",
    "Float8_e4m3fnuz", "UInt16", "UInt32", "UInt64", "UInt1", "UInt2", "UInt3", "UInt4", "UInt5", "UInt6",
    "UInt7", "Int1", "Int2", "Int3", "Int4", "Int5", "Int6", "Int7", "Float8_e8m0fnu", "Float4_e2m1fn_x2",
    "BComplex32")

# ----------------------------------------------------------------------------- dtype, OpKind, Shape

def scalar_type_name(code):
    """The c10 name of a ScalarType code as Shape::to_string prints it (UNKNOWN_SCALAR if unknown)."""
    code = _dtype_code(code)
    return _DTYPE_NAMES[code] if code < len(_DTYPE_NAMES) else "UNKNOWN_SCALAR"


def _dtype_code(dtype):
    if type(dtype) is not int:
        if isinstance(dtype, bool) or not hasattr(dtype, "__index__"):
            raise TypeError(f"dtype must be an int ScalarType code, got {_tname(dtype)}: {dtype!r}")
        dtype = _operator.index(dtype)
    if dtype < 0 or dtype > 127:
        raise ValueError(f"dtype must be a ScalarType code in [0, 127], got {dtype}")
    return dtype


_OPKINDS = {}
_NO_SEED = object()         # no Node of an OpKind was given a seed yet


class OpKind:
    """An interned qualified op name (``ns::name``); ``.hash`` is StringHash(name)."""
    # _last: (seed, seeded hash) of the last non-default seed object a Node of this op was given (one
    # attribute: threads replace it whole)
    __slots__ = ("_name", "_hash", "_seeded", "_last", "__weakref__")

    def __new__(cls, qualified_name):
        k = _OPKINDS.get(qualified_name) if type(qualified_name) is str else None
        if k is not None:
            return k
        if type(qualified_name) is not str:
            raise TypeError(f"OpKind expects a qualified name str, got {_tname(qualified_name)}: {qualified_name!r}")
        ns, sep, name = qualified_name.partition("::")
        if not sep or not ns or not name:
            raise ValueError(f"OpKind expects a qualified name like 'aten::add', got {qualified_name!r}")
        self = object.__new__(cls)
        self._name = qualified_name
        self._hash = _string_hash(qualified_name)
        self._seeded = _combine(self._hash, HASH_SEED)
        self._last = (_NO_SEED, None)
        _OPKINDS[qualified_name] = self
        return self

    @property
    def qualified_name(self):
        return self._name

    @property
    def hash(self):
        return self._hash

    def __str__(self):
        return self._name

    def __repr__(self):
        return f"OpKind({self._name!r})"

    def __reduce__(self):
        """Pickles by name: ``OpKind(qualified_name)``."""
        return (OpKind, (self._name,))


class Shape:
    """A c10 ScalarType code and int64 sizes; ``hash(bake_in_sizes)`` is Shape::hash, str() is to_string()."""
    __slots__ = ("_dtype", "_sizes", "_hb", "_hn")

    def __init__(self, dtype, sizes):
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
        db = _hash_block(bytes((self._dtype,)), _DATA_SEED)
        raw = b"".join([(v & _M64).to_bytes(8, "little") for v in out])
        self._hb = _combine(db, _hash_block(raw, _DATA_SEED))
        self._hn = _combine(db, _size_t_hash(len(out)))

    @property
    def dtype(self):
        return self._dtype

    @property
    def sizes(self):
        return self._sizes

    def hash(self, bake_in_sizes=True):
        """Shape::hash(bakeInSizes): dtype and raw int64 sizes, or dtype and rank."""
        return self._hb if bake_in_sizes else self._hn

    def __eq__(self, other):
        if not isinstance(other, Shape):
            return NotImplemented
        return self._dtype == other._dtype and self._sizes == other._sizes

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


# ----------------------------------------------------------------------------- Node, Output

_dynamic = bool(_os.environ.get("LTC_ENABLE_DYNAMIC_SHAPES") is not None)
_dynamic_flag = False


def set_dynamic_shapes(enabled):
    """Set the dynamic-shape flag (nodes built while on hash without sizes); returns the previous flag."""
    global _dynamic_flag
    prev = _dynamic_flag
    _dynamic_flag = bool(enabled)
    return prev


def dynamic_shapes_enabled():
    """True when LTC_ENABLE_DYNAMIC_SHAPES was set at import or the flag is on."""
    return _dynamic or _dynamic_flag


def _opkind(op):
    if type(op) is str:
        k = _OPKINDS.get(op)
        return k if k is not None else OpKind(op)
    if isinstance(op, OpKind):
        return op
    raise TypeError(f"Node op must be a qualified name str or an OpKind, got {_tname(op)}: {op!r}")


def _seq(value, what, item):
    if isinstance(value, (str, bytes, Node, Output, Shape)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{what} must be a sequence of {item}, got {_tname(value)}: {value!r}")
    return tuple(value)


def _index_arg(value, what):
    """An int index from an int or an __index__ object (bools refused), with the check every index shares."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an int, got {_tname(value)}: {value!r}")
    return _operator.index(value)


MAX_OUTPUTS = 0x7FFFFFFF


def _num_outputs(value):
    n = _index_arg(value, "Node num_outputs")
    if n < 1 or n > MAX_OUTPUTS:
        raise ValueError(f"Node num_outputs must be in [1, {MAX_OUTPUTS}], got {n}")
    return n


_H0KB = _SIZE_T_HASH[0] * _KB + _GOLD           # Hash(size_t 0), as HashCombine uses it
# Loop checks (see _check_link): every node gets a serial number when built, above its operands'; an edge
# replace_operand points at a node that is not below its user (after renumbering) is out of order, and
# the nodes with such edges are kept here: serial order proves "no path" only while there are none.
_SERIAL_STEP = 1 << 20
_next_serial = _itertools.count(_SERIAL_STEP, _SERIAL_STEP).__next__
_bad_nodes = _weakref.WeakSet()
_link_lock = _threading.RLock()    # (a finalizer run by a GC inside a check may call replace_operand)


class Node:
    """An LTC TsNode: hashes (``hash`` = dag hash, ``shape_hash``) are computed once, at construction.
    An operand is an Output, a Node (its output 0, as LTC's Value(node)) or None (hashed, not kept)."""
    # The walk reads _mark and, for the common two-operand node, _a and _b (its operand nodes; _a is
    # None otherwise) of every node: first, so they share a cache line with the reference count (the
    # walk is memory-bound on large graphs: a separate operand tuple would cost a miss per node).
    # _operands (the Outputs) is made when first read unless the constructor was given Outputs only.
    __slots__ = ("_mark", "_a", "_b", "_opnodes", "_opidx", "_op", "_operands", "_shapes", "_num_outputs",
                 "_dag", "_shp", "_seed", "_serial", "_data", "_handle", "_device", "__weakref__")

    def __init__(self, op, operands, shapes=(), num_outputs=1, hash_seed=HASH_SEED):
        if type(op) is not OpKind:
            op = _opkind(op)
        if type(operands) is not list and type(operands) is not tuple:
            operands = _seq(operands, "Node operands", "Output, Node or None")
        if type(shapes) is not tuple:
            shapes = tuple(shapes) if type(shapes) is list else _seq(shapes, "Node shapes", "Shape")
        if type(num_outputs) is not int or not 1 <= num_outputs <= MAX_OUTPUTS:
            num_outputs = _num_outputs(num_outputs)
        if hash_seed is HASH_SEED:
            h = op._seeded
        elif hash_seed is (last := op._last)[0]:    # the same (immutable, checked) seed object as last time
            h = last[1]
        else:
            given = hash_seed
            hash_seed = _u128(hash_seed, "Node hash_seed")
            h = _combine(op._hash, hash_seed)
            if given is hash_seed:
                op._last = (hash_seed, h)
        dyn = _dynamic or _dynamic_flag
        hd = h
        outs = []           # the Output operands, None once a Node was given
        nodes = []
        idx = None
        i = 0
        for o in operands:
            t = type(o)
            if t is Node or (o is not None and t is not Output and isinstance(o, Node)):
                nodes.append(o)
                outs = None
                s = o._shp                              # as Output(o, 0)
                x = s ^ ((_H0KB + (s << 6) + (s >> 2)) & _M128)
                h = h ^ ((x * _KB + _GOLD + (h << 6) + (h >> 2)) & _M128)
                if dyn:
                    d = o._dag
                    x = d ^ ((_H0KB + (d << 6) + (d >> 2)) & _M128)
                    hd = hd ^ ((x * _KB + _GOLD + (hd << 6) + (hd >> 2)) & _M128)
                if idx is not None:
                    idx.append(0)
            elif t is Output or (o is not None and isinstance(o, Output)):
                if outs is not None:
                    outs.append(o)
                if o._index and idx is None:
                    idx = [0] * len(nodes)
                if idx is not None:
                    idx.append(o._index)
                nodes.append(o._node)
                x = o._shp
                h = h ^ ((x * _KB + _GOLD + (h << 6) + (h >> 2)) & _M128)
                if dyn:
                    x = o._hash
                    hd = hd ^ ((x * _KB + _GOLD + (hd << 6) + (hd >> 2)) & _M128)
            elif o is None:
                h = h ^ ((_NULL_OPT * _KB + _GOLD + (h << 6) + (h >> 2)) & _M128)
                if dyn:
                    hd = hd ^ ((_NULL_OPT * _KB + _GOLD + (hd << 6) + (hd >> 2)) & _M128)
            else:
                raise TypeError(f"Node operands[{i}] must be an Output, a Node or None, got {_tname(o)}: {o!r}")
            i += 1
        i = 0
        for s in shapes:
            if type(s) is not Shape and not isinstance(s, Shape):
                raise TypeError(f"Node shapes[{i}] must be a Shape, got {_tname(s)}: {s!r}")
            x = s._hb
            h = h ^ ((x * _KB + _GOLD + (h << 6) + (h >> 2)) & _M128)
            if dyn:
                x = s._hn
                hd = hd ^ ((x * _KB + _GOLD + (hd << 6) + (hd >> 2)) & _M128)
            i += 1
        self._op = op
        self._operands = None if outs is None else tuple(outs)
        self._opnodes = nodes = tuple(nodes)
        self._opidx = None if idx is None else tuple(idx)
        self._a, self._b = nodes if len(nodes) == 2 else (None, None)
        self._shapes = shapes
        self._num_outputs = num_outputs
        self._shp = h
        self._dag = hd if dyn else h
        self._seed = hash_seed
        self._serial = _next_serial()
        self._mark = 0
        self._data = False
        self._handle = None
        self._device = None

    op = property(lambda self: self._op, doc="The OpKind.")
    shapes = property(lambda self: self._shapes, doc="Constructor shapes, then computed shapes.")
    num_outputs = property(lambda self: self._num_outputs)
    hash = property(lambda self: self._dag, doc="The dag hash (Node::hash()).")
    shape_hash = property(lambda self: self._shp, doc="Node::shapeHash() (always with sizes).")
    hash_seed = property(lambda self: self._seed)
    is_device_data = property(lambda self: self._data)
    handle = property(lambda self: self._handle, doc="The data handle of a device-data node, else None.")
    device = property(lambda self: self._device, doc="The device label of a device-data node, else None.")

    @property
    def operands(self):
        """The non-null operands, in order, as Outputs."""
        ops = self._operands
        if ops is None:
            idx = self._opidx
            ops = self._operands = tuple([Output(n, idx[i] if idx is not None else 0)
                                          for i, n in enumerate(self._opnodes)])
        return ops

    def add_computed_shape(self, shape):
        """Append a shape known only after construction (shown in text, not hashed)."""
        if not isinstance(shape, Shape):
            raise TypeError(f"add_computed_shape needs a Shape, got {_tname(shape)}: {shape!r}")
        self._shapes = self._shapes + (shape,)

    def set_data(self, handle):
        """Replace the data handle of a device-data node (DeviceData::SetData); TypeError on other nodes."""
        if not self._data:
            raise TypeError(f"set_data needs a device-data node, got {self}")
        hash(handle)
        self._handle = handle

    def replace_operand(self, index, output):
        """Point operand ``index`` at ``output`` (an Output, or a Node for its output 0) without rehashing;
        ValueError if that would close a graph loop (``output`` is or depends on this node)."""
        if isinstance(output, Output):
            target, oi = output._node, output._index
        elif isinstance(output, Node):
            target, oi = output, 0
        else:
            raise TypeError(f"replace_operand needs an Output or a Node, got {_tname(output)}: {output!r}")
        i = _index_arg(index, "replace_operand index")
        n = len(self._opnodes)
        if i < 0 or i >= n:
            raise IndexError(f"operand index {i} out of range for a node with {n} operand(s)")
        with _link_lock:
            _check_link(self, target)
            _set_operand(self, i, target, oi)

    def __str__(self):
        s = "[" + ", ".join([str(x) for x in self._shapes]) + "] " + self._op._name
        if self._num_outputs > 1:
            s += f", num_outputs={self._num_outputs}"
        if self._data and self._device is not None:
            s += f", device={self._device}"
        return s

    def __repr__(self):
        return f"<Node {self}>"


def _set_operand(node, i, target, oi):
    """Make operand i of node output oi of target (checked by the caller); keeps the loop bookkeeping."""
    nodes = list(node._opnodes)
    nodes[i] = target
    if oi or node._opidx is not None:
        idx = list(node._opidx or (0,) * len(nodes))
        idx[i] = oi
        node._opidx = tuple(idx) if any(idx) else None
    node._opnodes = nodes = tuple(nodes)
    node._operands = None
    node._a, node._b = nodes if len(nodes) == 2 else (None, None)
    if node in _bad_nodes or target._serial >= node._serial:
        if any(c._serial >= node._serial for c in nodes):
            _bad_nodes.add(node)
        else:
            _bad_nodes.discard(node)


def _loop_msg(target, node):
    return f"replace_operand would close a graph loop: {target!r} is or depends on {node!r}"


def _check_link(node, target):
    """ValueError if making ``target`` an operand of ``node`` would close a loop (target is or reaches node).

    Serial numbers make the usual case O(1): with no out-of-order edge, every path goes to ever smaller
    serials, so a target built before the node cannot reach it.  Otherwise an iterative walk from target
    looks for node, skipping (while no edge is out of order) whatever is older than node; the nodes it went
    through are then renumbered below node where there is room, so that the new edge keeps the order."""
    if target is node:
        raise ValueError(_loop_msg(target, node))
    limit = node._serial
    prune = not _bad_nodes
    if prune and target._serial < limit:
        return
    state = {}              # id -> 1 on the path, 2 done (every node here is alive: the graph holds it)
    post = []
    stack = [target]
    while stack:
        x = stack[-1]
        if x is None:                                   # a marker: the node below it is done
            stack.pop()
            x = stack.pop()
            state[id(x)] = 2
            post.append(x)
            continue
        if id(x) in state:                              # done, or on the path (a _link_unchecked loop)
            stack.pop()
            continue
        if x is node:
            raise ValueError(_loop_msg(target, node))
        if prune and x._serial < limit:
            state[id(x)] = 2
            stack.pop()
            continue
        state[id(x)] = 1
        stack.append(None)
        stack.extend([c for c in x._opnodes if id(c) not in state])
    for x in post:                                      # operands first
        m = max([c._serial for c in x._opnodes], default=0)
        if m + 1 < x._serial:
            x._serial = m + 1
            _bad_nodes.discard(x)


def _link_unchecked(node, index, output):
    """Testing hook: replace_operand without the loop check, to exercise the walks' loop errors.  The
    native twin never frees a loop it closes (its nodes are not GC-tracked) unless a later call opens it."""
    if not isinstance(node, Node) or not isinstance(output, (Node, Output)):
        raise TypeError("_link_unchecked(node, index, output) needs a Node and an Output or a Node")
    target = output if isinstance(output, Node) else output._node
    n = len(node._opnodes)
    if not 0 <= index < n:
        raise IndexError(f"operand index {index} out of range for a node with {n} operand(s)")
    with _link_lock:
        _set_operand(node, index, target, 0 if isinstance(output, Node) else output._index)


_DD_KIND = OpKind(DEVICE_DATA_OP)


def device_data(shape, handle, device=None):
    """A DeviceData leaf: op lazy_tensors::device_data, seed 101, one shape; the handle is not hashed."""
    if not isinstance(shape, Shape):
        raise TypeError(f"device_data shape must be a Shape, got {_tname(shape)}: {shape!r}")
    try:
        hash(handle)
    except TypeError:
        raise TypeError(f"device_data handle must be hashable, got {_tname(handle)}: {handle!r}") from None
    # Node(_DD_KIND, (), (shape,), 1, DEVICE_DATA_SEED) without the generic operand and shape loops (a
    # traced scalar makes one of these per op): the seeded hash combined with the one shape's hash.
    last = _DD_KIND._last
    if last[0] is not DEVICE_DATA_SEED:
        Node(_DD_KIND, (), (shape,), 1, DEVICE_DATA_SEED)   # caches the seeded hash on the OpKind
        last = _DD_KIND._last
    h0 = last[1]
    x = shape._hb
    h = h0 ^ ((x * _KB + _GOLD + (h0 << 6) + (h0 >> 2)) & _M128)
    if _dynamic or _dynamic_flag:
        x = shape._hn
        hd = h0 ^ ((x * _KB + _GOLD + (h0 << 6) + (h0 >> 2)) & _M128)
    else:
        hd = h
    n = _new_node(Node)
    n._op = _DD_KIND
    n._operands = n._opnodes = ()
    n._opidx = n._a = n._b = None
    n._shapes = (shape,)
    n._num_outputs = 1
    n._shp = h
    n._dag = hd
    n._seed = DEVICE_DATA_SEED
    n._serial = _next_serial()
    n._mark = 0
    n._data = True
    n._handle = handle
    n._device = device
    return n


_new_node = object.__new__


class Output:
    """Output ``index`` of ``node`` (an LTC Value); ``hash`` = HashCombine(node.hash, Hash(size_t index))."""
    __slots__ = ("_node", "_index", "_hash", "_shp")

    def __init__(self, node, index=0):
        if type(node) is not Node and not isinstance(node, Node):
            raise TypeError(f"Output node must be a Node, got {_tname(node)}: {node!r}")
        if type(index) is not int:
            index = _index_arg(index, "Output index")
        if index < 0 or index >= node._num_outputs:
            raise IndexError(f"Output index {index} out of range for a node with {node._num_outputs} "
                             f"output(s): {node}")
        ih = _SIZE_T_HASH[index] if index < 256 else _size_t_hash_uncached(index)
        self._node = node
        self._index = index
        d = node._dag
        self._hash = d ^ ((ih * _KB + _GOLD + (d << 6) + (d >> 2)) & _M128)
        s = node._shp
        self._shp = self._hash if s is d else s ^ ((ih * _KB + _GOLD + (s << 6) + (s >> 2)) & _M128)

    node = property(lambda self: self._node)
    index = property(lambda self: self._index)
    hash = property(lambda self: self._hash, doc="Value::hash().")
    shape_hash = property(lambda self: self._shp, doc="Value::shapeHash().")

    @property
    def shape(self):
        """The node's shape for this output, or None if the node has no shape at that index."""
        shapes = self._node._shapes
        return shapes[self._index] if self._index < len(shapes) else None

    def __eq__(self, other):
        if not isinstance(other, Output):
            return NotImplemented
        return self._index == other._index and self._node._dag == other._node._dag

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self._hash)

    def __repr__(self):
        return f"Output(<Node {self._node}>, {self._index})"


# ----------------------------------------------------------------------------- traversal
# Visit state lives on the nodes (``_mark``): traversal e stamps 2e (emitting) and 2e+1 (emitted), so a
# fresh traversal needs no map and no clearing.  An EmissionMap owns one epoch; when another traversal
# is about to overwrite its stamps it snapshots them, and restamps its nodes when used again.

_lock = _threading.Lock()
_epoch = [0]
_owner = [None]       # weakref to the EmissionMap whose stamps are on the nodes, or None


def _after_fork_in_child():
    """A forked child starts the module's locks free (the thread that held one is not there)."""
    _lock._at_fork_reinit()
    _link_lock._at_fork_reinit()


_os.register_at_fork(after_in_child=_after_fork_in_child)


class EmissionMap:
    """LTC's EmissionMap for incremental post_order calls: remembers which nodes were already emitted."""
    __slots__ = ("_base", "_nodes", "_saved", "__weakref__")

    def __init__(self):
        self._base = 0
        self._nodes = []
        self._saved = None

    def __len__(self):
        return len(self._nodes)

    def __contains__(self, node):
        return self.status(node) is not None

    def status(self, node):
        """EMITTING (1), EMITTED (2), or None when the node was never visited with this map."""
        if not isinstance(node, Node):
            raise TypeError(f"EmissionMap.status needs a Node, got {_tname(node)}: {node!r}")
        with _lock:
            owner = _owner[0]
            if owner is not None and owner() is self:
                m = node._mark - self._base
                return (EMITTING if m == 0 else EMITTED) if 0 <= m <= 1 and self._base else None
            for n, st in zip(self._nodes, self._saved or ()):
                if n is node:
                    return EMITTING if st == 0 else EMITTED
            return None

    def clear(self):
        """Forget every node."""
        with _lock:
            owner = _owner[0]
            if owner is not None and owner() is self:
                _owner[0] = None
            self._base = 0
            self._nodes = []
            self._saved = None


def _begin(emap):
    """Pick the stamp base for a traversal (caller holds _lock); returns (base, visited list or None)."""
    owner = _owner[0]
    cur = owner() if owner is not None else None
    if emap is not None and cur is emap and emap._base:
        return emap._base, emap._nodes
    if cur is not None:
        cur._saved = [n._mark - cur._base for n in cur._nodes]
    _owner[0] = None
    _epoch[0] += 1
    base = 2 * _epoch[0]
    if emap is None:
        return base, None
    if not isinstance(emap, EmissionMap):
        raise TypeError(f"emission_map must be an EmissionMap or None, got {_tname(emap)}: {emap!r}")
    if emap._saved is not None:
        for n, st in zip(emap._nodes, emap._saved):
            n._mark = base + st
    emap._base = base
    emap._saved = None
    _owner[0] = _weakref.ref(emap)
    return base, emap._nodes


def _loop(node):
    raise RuntimeError(f"Graph loop found at {node}")


def _walk(roots, base, post, visited=None, leaves=None):
    # Util::ComputePostOrder reshaped for the interpreter (same order, same errors): the last operand
    # found unvisited is not pushed but descended into at once (LTC pushes and pops it straight back);
    # two operands (_a, _b) are not iterated.  LTC's second-visit check can only fail on stale
    # EMITTING stamps, left in an EmissionMap (visited given) by a walk that hit a loop: only then it runs.
    # leaves, if given, gets the nodes without operands (device data among them) in post order.
    emitting = base
    emitted = base + 1
    for root in roots:
        if root._mark == emitted:
            continue
        stack = [root]
        while stack:
            node = stack.pop()
            m = node._mark
            if m == emitting:                           # second visit: every operand is done
                if visited is not None:
                    for c in node._opnodes:
                        if c._mark != emitted:
                            _loop(c)
                node._mark = emitted
                post.append(node)
                continue
            if m > emitting:                            # pushed twice and already emitted
                continue
            while True:                                 # first visit of node
                if visited is not None:
                    visited.append(node)
                a = node._a
                if a is not None:
                    node._mark = emitting
                    b = node._b
                    ma = a._mark
                    mb = b._mark
                    if ma < emitting:
                        stack.append(node)
                        if mb < emitting:
                            stack.append(a)
                            node = b
                        elif mb == emitting:
                            _loop(b)
                        else:
                            node = a
                        continue
                    if ma == emitting:
                        _loop(a)
                    if mb < emitting:
                        stack.append(node)
                        node = b
                        continue
                    if mb == emitting:
                        _loop(b)
                else:
                    ops = node._opnodes
                    if not ops:
                        node._mark = emitted
                        post.append(node)
                        if leaves is not None:
                            leaves.append(node)
                        break
                    node._mark = emitting
                    top = None
                    for c in ops:
                        m = c._mark
                        if m < emitting:
                            stack.append(node if top is None else top)
                            top = c
                        elif m == emitting:
                            _loop(c)
                    if top is not None:
                        node = top
                        continue
                node._mark = emitted                    # every operand already emitted: emit now
                post.append(node)
                break


def _root_nodes(roots):
    if isinstance(roots, Node):
        return [roots]
    if isinstance(roots, Output):
        return [roots._node]
    out = []
    for i, r in enumerate(_seq(roots, "roots", "Output or Node objects")):
        if type(r) is Output or isinstance(r, Output):
            out.append(r._node)
        elif isinstance(r, Node):
            out.append(r)
        else:
            raise TypeError(f"roots[{i}] must be an Output or a Node, got {_tname(r)}: {r!r}")
    return out


def _post_order_nodes(nodes, emission_map, leaves=None):
    post = []
    with _lock:
        base, visited = _begin(emission_map)
        _walk(nodes, base, post, visited, leaves)
    return post


def post_order(roots, emission_map=None):
    """Util::ComputePostOrder: operands last-to-first, one emission map across roots; RuntimeError on loops."""
    return _post_order_nodes(_root_nodes(roots), emission_map)


def graph_size(roots):
    """Util::GetGraphSize: the number of nodes reachable from ``roots``."""
    return len(_post_order_nodes(_root_nodes(roots), None))


def _param_seq(post):
    seen = {}
    seq = []
    for n in post:
        if n._data:
            h = n._handle
            i = seen.get(h)
            if i is None:
                i = seen[h] = len(seen)
            seq.append(i)
    return seq


def parameter_sequence(roots):
    """RunPostOrder's parameter_sequence: per device-data node in post order, the first-seen index of its handle."""
    leaves = []
    _post_order_nodes(_root_nodes(roots), None, leaves)
    return _param_seq(leaves)


_MHASH_TRUE = _combine(_hash_block(b"\x01", _DATA_SEED), _MHASH_SEED)

def graph_hash(roots, tensor_ids=None):
    """LazyGraphExecutor::GetGraphHash as 16 little-endian bytes; equal tensor_ids mark the same tensor twice."""
    if isinstance(roots, (Node, Output)):
        roots = (roots,)
    roots = _seq(roots, "roots", "Output or Node objects")
    if tensor_ids is not None:
        tensor_ids = _seq(tensor_ids, "tensor_ids", "hashable tensor ids")
        if len(tensor_ids) != len(roots):
            raise ValueError(f"tensor_ids has {len(tensor_ids)} entries but there are {len(roots)} roots")
    h = 0
    nodes = []
    if roots:
        h = _MHASH_TRUE
        seen = set()
        for i, r in enumerate(roots):
            if type(r) is Output or isinstance(r, Output):
                node, oh = r._node, r._hash
            elif isinstance(r, Node):
                node = r
                d = r._dag
                oh = d ^ ((_SIZE_T_HASH[0] * _KB + _GOLD + (d << 6) + (d >> 2)) & _M128)
            else:
                raise TypeError(f"roots[{i}] must be an Output or a Node, got {_tname(r)}: {r!r}")
            if tensor_ids is not None:
                tid = tensor_ids[i]
                if tid in seen:
                    continue
                seen.add(tid)
            if node._op._name == NOT_SUPPORTED_OP:
                continue
            h = h ^ ((oh * _KB + _GOLD + (h << 6) + (h >> 2)) & _M128)
            nodes.append(node)
    ph = _CONTAINER_SEED
    leaves = []
    _post_order_nodes(nodes, None, leaves)
    seq = _param_seq(leaves)
    tab = _idx_kb(max(seq) + 1 if seq else 0)
    ntab, m128 = len(tab), _M128
    for i in seq:
        x = tab[i] if i < ntab else (_size_t_hash_uncached(i) * _KB + _GOLD) & m128
        ph = ph ^ ((x + (ph << 6) + (ph >> 2)) & m128)
    h = h ^ ((ph * _KB + _GOLD + (h << 6) + (h >> 2)) & _M128)
    return h.to_bytes(16, "little")


def wiring_hash(post):
    """16 bytes naming how the nodes of ``post`` (a post order: a list of Nodes) read each other: DataHash of
    the int32 sequence, per node, of its operand count, then per operand the operand node's position in
    ``post`` (-1 if absent) and its output index.  A graph hash (GetGraphHash) sees operands only through
    their hashes, and a device-data node's hash is its shape's: two graphs that read the same tensors in
    other places hash alike; this tells them apart."""
    lst = post if type(post) is list else list(post)
    for k, o in enumerate(lst):
        if not isinstance(o, Node):
            raise TypeError(f"wiring_hash needs a list of Nodes, got {_tname(o)} at [{k}]: {o!r}")
    pos = {id(nd): k for k, nd in enumerate(lst)}
    buf = _array.array("i")
    for nd in lst:
        ops = nd._opnodes
        idx = nd._opidx
        buf.append(len(ops))
        for j, m in enumerate(ops):
            buf.append(pos.get(id(m), -1))
            buf.append(idx[j] if idx is not None else 0)
    return _hash_block(buf.tobytes(), _DATA_SEED).to_bytes(16, "little")
