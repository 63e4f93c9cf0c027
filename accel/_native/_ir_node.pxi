# Node, Output and device_data for _ir.pyx (included there; not a module of its own).
# Each Node owns one slot of the node arena (_ir_arena.h); traversal reads only the arena.

# Data handles are interned: equal handles (dict equality, as RunPostOrder's map) share one small id,
# so graph_hash de-duplicates parameters with per-id stamps instead of a dict.  Ids are refcounted by
# the device-data nodes using them and recycled when the last one goes.
cdef dict _HANDLE_IDS = {}           # handle -> id
cdef list _handle_objs = [None]      # id -> the interned handle (id 0 is never used)
cdef list _handle_free = []
cdef int32_t *_href = NULL           # id -> number of device-data nodes holding it
cdef Py_ssize_t _hcap = 0


cdef int _handle_grow(Py_ssize_t need) except -1:
    global _href, _hcap, acc_hstamp, acc_hidx
    cdef Py_ssize_t cap = _hcap * 2 if _hcap else 1024
    cdef void *p
    while cap < need:
        cap *= 2
    if cap > 0x7FFFFFFF:
        raise MemoryError()
    p = realloc(_href, cap * sizeof(int32_t))
    if p == NULL:
        raise MemoryError()
    _href = <int32_t*>p
    p = realloc(acc_hstamp, cap * sizeof(uint32_t))
    if p == NULL:
        raise MemoryError()
    acc_hstamp = <uint32_t*>p
    p = realloc(acc_hidx, cap * sizeof(int32_t))
    if p == NULL:
        raise MemoryError()
    acc_hidx = <int32_t*>p
    _hcap = cap
    return 0


cdef int32_t _handle_intern(object handle) except 0:
    cdef Py_ssize_t i
    o = _HANDLE_IDS.get(handle)
    if o is not None:
        i = <Py_ssize_t>o
        _href[i] += 1
        return <int32_t>i
    if _handle_free:
        i = <Py_ssize_t>_handle_free.pop()
    else:
        i = len(_handle_objs)
        if i >= _hcap:
            _handle_grow(i + 1)
        _handle_objs.append(None)
    # setdefault, not a plain store: a handle's own __hash__/__eq__ may let another thread intern an
    # equal handle meanwhile, and then both must end up with that one id.
    o = _HANDLE_IDS.setdefault(handle, i)
    if <Py_ssize_t>o != i:
        _handle_free.append(i)
        i = <Py_ssize_t>o
        _href[i] += 1
        return <int32_t>i
    _handle_objs[i] = handle
    _href[i] = 1
    acc_hstamp[i] = 0
    return <int32_t>i


cdef void _handle_release(int32_t i) noexcept:
    _href[i] -= 1
    if _href[i]:
        return
    try:
        h = _handle_objs[i]
        _handle_objs[i] = None
        if _HANDLE_IDS.get(h) == i:
            del _HANDLE_IDS[h]
        _handle_free.append(i)
    except BaseException:        # a handle whose hash changed, or teardown: leak the id, never crash
        pass


# Nodes and Outputs are not GC-tracked: an IR graph is acyclic (only replace_operand can close a loop,
# and such a loop is never freed), and tracking millions of nodes made building graphs ~8x slower.
# Without the GC there is no trashcan either, so Node.__dealloc__ frees long chains iteratively.
cdef PyObject **_pending = NULL      # operand tuples waiting to be released by the outermost dealloc
cdef Py_ssize_t _npending = 0
cdef Py_ssize_t _cappending = 0
cdef bint _draining = False


cdef void _release_later(PyObject *t) noexcept:
    global _pending, _npending, _cappending
    cdef Py_ssize_t cap
    cdef PyObject **p
    if _npending == _cappending:
        cap = _cappending * 2 if _cappending else 1024
        p = <PyObject**>realloc(_pending, cap * sizeof(PyObject*))
        if p == NULL:           # out of memory: release now (recursion, but no leak)
            Py_DECREF(<object>t)
            return
        _pending = p
        _cappending = cap
    _pending[_npending] = t
    _npending += 1


@cython.no_gc
cdef class Node:
    """Node(op, operands, shapes=(), num_outputs=1, hash_seed=2731710185)
--

    An LTC TsNode: hashes (``hash`` = dag hash, ``shape_hash``) are computed once, at construction."""
    cdef int32_t _id                 # arena slot (0: none, only while construction fails)
    cdef bint _is_data
    cdef acc_h128 _dag
    cdef acc_h128 _shp
    cdef OpKind _op
    cdef tuple _operands
    cdef tuple _shapes
    cdef Py_ssize_t _num_outputs
    cdef acc_h128 _seed
    cdef object _handle
    cdef object _device
    cdef object __weakref__

    def __cinit__(self, op, operands, shapes=(), num_outputs=1, hash_seed=HASH_SEED):
        cdef OpKind k
        cdef tuple ops_t, shp_t
        cdef Py_ssize_t i, j, n, nnull = 0
        cdef acc_h128 h, hd, nul = acc_mk(0, _NULL_OPT)
        cdef bint dyn = _dyn_env or _dyn_flag
        cdef Output o
        cdef Shape s
        cdef PyObject *item
        cdef int32_t *ids
        if type(op) is OpKind:
            k = <OpKind>op
        elif type(op) is str:
            k = _opkind_make(op)
        elif isinstance(op, OpKind):
            k = <OpKind>op
        else:
            raise TypeError(f"Node op must be a qualified name str or an OpKind, got {_tname(op)}: {op!r}")
        if type(operands) is tuple:
            ops_t = <tuple>operands
        elif type(operands) is list:
            ops_t = PyList_AsTuple(operands)
        else:
            ops_t = _seq(operands, "Node operands", "Output or None")
        if type(shapes) is tuple:
            shp_t = <tuple>shapes
        else:
            shp_t = _seq(shapes, "Node shapes", "Shape")
        if type(num_outputs) is not int or num_outputs < 1:
            num_outputs = _num_outputs(num_outputs)
        if hash_seed is _DEFAULT_SEED:
            h = k._seeded
            self._seed = acc_mk(0, 0xA2D296E9)
        else:
            self._seed = _from_int(hash_seed, "Node hash_seed")
            h = acc_combine(k._hash, self._seed)
        hd = h
        n = PyTuple_GET_SIZE(ops_t)
        for i in range(n):
            item = PyTuple_GET_ITEM(ops_t, i)
            if type(<object>item) is Output or (<object>item is not None and isinstance(<object>item, Output)):
                o = <Output>item
                h = acc_combine(h, o._shp)
                if dyn:
                    hd = acc_combine(hd, o._hash)
            elif <object>item is None:
                nnull += 1
                h = acc_combine(h, nul)
                if dyn:
                    hd = acc_combine(hd, nul)
            else:
                raise TypeError(f"Node operands[{i}] must be an Output or None, got "
                                f"{_tname(<object>item)}: {<object>item!r}")
        for i in range(PyTuple_GET_SIZE(shp_t)):
            item = PyTuple_GET_ITEM(shp_t, i)
            if type(<object>item) is not Shape and not isinstance(<object>item, Shape):
                raise TypeError(f"Node shapes[{i}] must be a Shape, got {_tname(<object>item)}: {<object>item!r}")
            s = <Shape>item
            h = acc_combine(h, s._hb)
            if dyn:
                hd = acc_combine(hd, s._hn)
        if nnull:
            ops_t = tuple([x for x in ops_t if x is not None])
            n = len(ops_t)
        self._id = acc_alloc(<PyObject*>self, n)
        if self._id == 0:
            raise MemoryError()
        ids = acc_ops(&acc_recs[self._id])
        for j in range(n):
            ids[j] = (<Output>PyTuple_GET_ITEM(ops_t, j))._node._id
        self._op = k
        self._operands = ops_t
        self._shapes = shp_t
        self._num_outputs = num_outputs
        self._shp = h
        self._dag = hd if dyn else h

    def __dealloc__(self):
        global _draining, _npending
        cdef PyObject *t = <PyObject*>self._operands
        cdef PyObject *p
        if self._id:
            if self._is_data:
                _handle_release(acc_get_hid(self._id))
            acc_release(self._id)
            self._id = 0
        if t != NULL and <object>t is not None:
            # Hand our reference to the operand tuple to the pending stack; the outermost dealloc drops
            # them one by one, so freeing a chain never nests deeper than tuple -> Output -> Node.
            Py_INCREF(<object>t)
            _release_later(t)
            self._operands = None
        if _draining:
            return
        _draining = True
        try:
            while _npending:
                _npending -= 1
                p = _pending[_npending]
                Py_DECREF(<object>p)
        finally:
            _draining = False

    @property
    def op(self):
        """The OpKind."""
        return self._op

    @property
    def operands(self):
        """The non-null operand Outputs, in order."""
        return self._operands

    @property
    def shapes(self):
        """Constructor shapes, then computed shapes."""
        return self._shapes

    @property
    def num_outputs(self):
        return self._num_outputs

    @property
    def hash(self):
        """The dag hash (Node::hash())."""
        return _to_int(self._dag)

    @property
    def shape_hash(self):
        """Node::shapeHash() (always with sizes)."""
        return _to_int(self._shp)

    @property
    def hash_seed(self):
        return _to_int(self._seed)

    @property
    def is_device_data(self):
        return bool(self._is_data)

    @property
    def handle(self):
        """The data handle of a device-data node, else None."""
        return self._handle

    @property
    def device(self):
        """The device label of a device-data node, else None."""
        return self._device

    def add_computed_shape(self, shape):
        """Append a shape known only after construction (shown in text, not hashed)."""
        if not isinstance(shape, Shape):
            raise TypeError(f"add_computed_shape needs a Shape, got {_tname(shape)}: {shape!r}")
        self._shapes = self._shapes + (shape,)

    def set_data(self, handle):
        """Replace the data handle of a device-data node (DeviceData::SetData); TypeError on other nodes."""
        if not self._is_data:
            raise TypeError(f"set_data needs a device-data node, got {self}")
        hash(handle)
        cdef int32_t old = acc_get_hid(self._id)
        acc_set_hid(self._id, _handle_intern(handle))
        _handle_release(old)
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
        self._operands = tuple(ops)
        acc_ops(&acc_recs[self._id])[<Py_ssize_t>index] = (<Output>output)._node._id

    def __str__(self):
        s = "[" + ", ".join([str(x) for x in self._shapes]) + "] " + self._op.qualified_name
        if self._num_outputs > 1:
            s += f", num_outputs={self._num_outputs}"
        if self._is_data and self._device is not None:
            s += f", device={self._device}"
        return s

    def __repr__(self):
        return f"<Node {self}>"


cdef tuple _seq(value, str what, str item):
    if isinstance(value, (str, bytes, Node, Output, Shape)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{what} must be a sequence of {item}, got {_tname(value)}: {value!r}")
    return tuple(value)


cdef Py_ssize_t _num_outputs(n) except -1:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"Node num_outputs must be an int, got {_tname(n)}: {n!r}")
    if n < 1:
        raise ValueError(f"Node num_outputs must be >= 1, got {n}")
    return n


cdef OpKind _DD_KIND = _opkind_make(DEVICE_DATA_OP)
cdef OpKind _NS_KIND = _opkind_make(NOT_SUPPORTED_OP)


def device_data(shape, handle, device=None):
    """A DeviceData leaf: op lazy_tensors::device_data, seed 101, one shape; the handle is not hashed."""
    if not isinstance(shape, Shape):
        raise TypeError(f"device_data shape must be a Shape, got {_tname(shape)}: {shape!r}")
    try:
        hash(handle)
    except TypeError:
        raise TypeError(f"device_data handle must be hashable, got {_tname(handle)}: {handle!r}") from None
    cdef Node n = Node(_DD_KIND, (), (shape,), 1, _DD_SEED)
    acc_set_hid(n._id, _handle_intern(handle))
    acc_recs[n._id].info |= ACC_DATA_BIT
    n._is_data = True
    n._handle = handle
    n._device = device
    return n


@cython.no_gc
cdef class Output:
    """Output(node, index=0)
--

    Output ``index`` of ``node`` (an LTC Value); ``hash`` = HashCombine(node.hash, Hash(size_t index))."""
    cdef Node _node
    cdef Py_ssize_t _index
    cdef acc_h128 _hash
    cdef acc_h128 _shp

    def __cinit__(self, node, index=0):
        cdef Node nd
        cdef Py_ssize_t i
        cdef acc_h128 ih
        if type(node) is not Node and not isinstance(node, Node):
            raise TypeError(f"Output node must be a Node, got {_tname(node)}: {node!r}")
        nd = <Node>node
        if type(index) is not int:
            if isinstance(index, bool) or not hasattr(index, "__index__"):
                raise TypeError(f"Output index must be an int, got {_tname(index)}: {index!r}")
            index = _operator.index(index)
        if index < 0 or index >= nd._num_outputs:
            raise IndexError(f"Output index {index} out of range for a node with {nd._num_outputs} "
                             f"output(s): {nd}")
        i = index
        ih = _size_t_hash(i)
        self._node = nd
        self._index = i
        self._hash = acc_combine(nd._dag, ih)
        if nd._dag.lo == nd._shp.lo and nd._dag.hi == nd._shp.hi:
            self._shp = self._hash
        else:
            self._shp = acc_combine(nd._shp, ih)

    @property
    def node(self):
        return self._node

    @property
    def index(self):
        return self._index

    @property
    def hash(self):
        """Value::hash()."""
        return _to_int(self._hash)

    @property
    def shape_hash(self):
        """Value::shapeHash()."""
        return _to_int(self._shp)

    @property
    def shape(self):
        """The node's shape for this output, or None if the node has no shape at that index."""
        shapes = self._node._shapes
        return shapes[self._index] if self._index < len(shapes) else None

    def __eq__(self, other):
        if not isinstance(other, Output):
            return NotImplemented
        cdef Output o = <Output>other
        return (self._index == o._index and self._node._dag.lo == o._node._dag.lo
                and self._node._dag.hi == o._node._dag.hi)

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(_to_int(self._hash))

    def __repr__(self):
        return f"Output(<Node {self._node}>, {self._index})"
