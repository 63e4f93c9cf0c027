"""Pure-Python twin of accel._native._ir: LTC IR nodes, post-order, parameter sequence and graph hash.

Same public names, signatures, results and error texts as the Cython module (tests enforce it).
All hashes are Python ints in [0, 2**128); see shared/reference/ltc_ir.md for the algorithms.
"""
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


class OpKind:
    """An interned qualified op name (``ns::name``); ``.hash`` is StringHash(name)."""
    __slots__ = ("_name", "_hash", "_seeded", "__weakref__")

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


class Node:
    """An LTC TsNode: hashes (``hash`` = dag hash, ``shape_hash``) are computed once, at construction."""
    # The walk reads _mark and, for the common two-operand node, _a and _b (its operand nodes; _a is
    # None otherwise) of every node: first, so they share a cache line with the reference count (the
    # walk is memory-bound on large graphs: a separate operand tuple would cost a miss per node).
    __slots__ = ("_mark", "_a", "_b", "_opnodes", "_op", "_operands", "_shapes", "_num_outputs", "_dag",
                 "_shp", "_seed", "_data", "_handle", "_device", "__weakref__")

    def __init__(self, op, operands, shapes=(), num_outputs=1, hash_seed=HASH_SEED):
        if type(op) is not OpKind:
            op = _opkind(op)
        if type(operands) is not list and type(operands) is not tuple:
            operands = _seq(operands, "Node operands", "Output or None")
        if type(shapes) is not tuple:
            shapes = _seq(shapes, "Node shapes", "Shape")
        if type(num_outputs) is not int or num_outputs < 1:
            num_outputs = _num_outputs(num_outputs)
        if hash_seed is HASH_SEED:
            h = op._seeded
        else:
            hash_seed = _u128(hash_seed, "Node hash_seed")
            h = _combine(op._hash, hash_seed)
        dyn = _dynamic or _dynamic_flag
        hd = h
        outs = []
        nodes = []
        i = 0
        for o in operands:
            if type(o) is Output or (o is not None and isinstance(o, Output)):
                outs.append(o)
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
                raise TypeError(f"Node operands[{i}] must be an Output or None, got {_tname(o)}: {o!r}")
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
        self._operands = tuple(outs)
        self._opnodes = nodes = tuple(nodes)
        self._a, self._b = nodes if len(nodes) == 2 else (None, None)
        self._shapes = shapes
        self._num_outputs = num_outputs
        self._shp = h
        self._dag = hd if dyn else h
        self._seed = hash_seed
        self._mark = 0
        self._data = False
        self._handle = None
        self._device = None

    op = property(lambda self: self._op, doc="The OpKind.")
    operands = property(lambda self: self._operands, doc="The non-null operand Outputs, in order.")
    shapes = property(lambda self: self._shapes, doc="Constructor shapes, then computed shapes.")
    num_outputs = property(lambda self: self._num_outputs)
    hash = property(lambda self: self._dag, doc="The dag hash (Node::hash()).")
    shape_hash = property(lambda self: self._shp, doc="Node::shapeHash() (always with sizes).")
    hash_seed = property(lambda self: self._seed)
    is_device_data = property(lambda self: self._data)
    handle = property(lambda self: self._handle, doc="The data handle of a device-data node, else None.")
    device = property(lambda self: self._device, doc="The device label of a device-data node, else None.")

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
        """Point operand ``index`` at ``output`` without rehashing (can create loops; for tests and passes)."""
        if not isinstance(output, Output):
            raise TypeError(f"replace_operand needs an Output, got {_tname(output)}: {output!r}")
        index = _operator.index(index)
        if index < 0 or index >= len(self._operands):
            raise IndexError(f"operand index {index} out of range for a node with {len(self._operands)} operand(s)")
        ops = list(self._operands)
        ops[index] = output
        nodes = list(self._opnodes)
        nodes[index] = output._node
        self._operands = tuple(ops)
        self._opnodes = nodes = tuple(nodes)
        self._a, self._b = nodes if len(nodes) == 2 else (None, None)

    def __str__(self):
        s = "[" + ", ".join([str(x) for x in self._shapes]) + "] " + self._op._name
        if self._num_outputs > 1:
            s += f", num_outputs={self._num_outputs}"
        if self._data and self._device is not None:
            s += f", device={self._device}"
        return s

    def __repr__(self):
        return f"<Node {self}>"


def _num_outputs(n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"Node num_outputs must be an int, got {_tname(n)}: {n!r}")
    if n < 1:
        raise ValueError(f"Node num_outputs must be >= 1, got {n}")
    return int(n)


def device_data(shape, handle, device=None):
    """A DeviceData leaf: op lazy_tensors::device_data, seed 101, one shape; the handle is not hashed."""
    if not isinstance(shape, Shape):
        raise TypeError(f"device_data shape must be a Shape, got {_tname(shape)}: {shape!r}")
    try:
        hash(handle)
    except TypeError:
        raise TypeError(f"device_data handle must be hashable, got {_tname(handle)}: {handle!r}") from None
    n = Node(DEVICE_DATA_OP, (), (shape,), 1, DEVICE_DATA_SEED)
    n._data = True
    n._handle = handle
    n._device = device
    return n


class Output:
    """Output ``index`` of ``node`` (an LTC Value); ``hash`` = HashCombine(node.hash, Hash(size_t index))."""
    __slots__ = ("_node", "_index", "_hash", "_shp")

    def __init__(self, node, index=0):
        if type(node) is not Node and not isinstance(node, Node):
            raise TypeError(f"Output node must be a Node, got {_tname(node)}: {node!r}")
        if type(index) is not int:
            if isinstance(index, bool) or not hasattr(index, "__index__"):
                raise TypeError(f"Output index must be an int, got {_tname(index)}: {index!r}")
            index = _operator.index(index)
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
