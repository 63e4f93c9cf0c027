# Node, Output and device_data for _ir.pyx (included there; not a module of its own).
# Each Node owns one slot of the node arena (_ir_arena.h); traversal reads only the arena.  A Node holds
# its operand Nodes through the arena (one reference each, taken at construction), not through a tuple.

from libc.stdint cimport uint8_t
from cpython.sequence cimport PySequence_Fast_ITEMS

cdef extern from *:
    """
    typedef int (*acc_visit_fn)(PyObject *, void *);
    /* Install a type's GC slots (Cython's own would clear fields that must stay valid, see Node). */
    static void acc_set_gc(PyTypeObject *t, void *traverse, void *clear) {
        t->tp_traverse = (traverseproc)traverse;
        t->tp_clear = (inquiry)clear;
    }
    /* Could o (now or later) refer back to a node?  CPython's own test (_PyObject_GC_MAY_BE_TRACKED). */
    static int acc_may_cycle(PyObject *o) {
        if (!PyObject_IS_GC(o)) return 0;
        if (PyTuple_CheckExact(o)) return PyObject_GC_IsTracked(o);
        return 1;
    }
    static void acc_gc_track(PyObject *o) { if (!PyObject_GC_IsTracked(o)) PyObject_GC_Track(o); }
    static void acc_gc_untrack(PyObject *o) { if (PyObject_GC_IsTracked(o)) PyObject_GC_UnTrack(o); }
    """
    ctypedef int (*acc_visit_fn)(PyObject *, void *) noexcept
    void acc_set_gc(PyTypeObject *t, void *traverse, void *clear)
    bint acc_may_cycle(PyObject *o)
    void acc_gc_track(PyObject *o)
    void acc_gc_untrack(PyObject *o)

MAX_OUTPUTS = 0x7FFFFFFF
cdef object _MAX_OUTPUTS = MAX_OUTPUTS
cdef object _ONE = 1


# Nodes are GC-tracked only when they could be part of a reference cycle: the graph itself is a DAG
# (replace_operand refuses to close a loop), so a cycle needs an object that refers back into it, which
# only a data handle or device label (or the attributes of a Python subclass of Node or Shape) can.  A node is tracked (_gc)
# when such an object is one that CPython tracks, or when an operand is tracked (the cycle may pass
# through nodes built on it); every other node is untracked, since tracking millions of nodes made
# building graphs ~8x slower.  An Output is tracked when its node is.  A node that becomes tracked after
# it was built (set_data, replace_operand, add_computed_shape: _track_late) may already have users and
# Outputs, which a cycle through it can pass too: they all become tracked then (one pass over the arena,
# O(live nodes); untracked Outputs are listed in the arena for that, see acc_oalloc).  Without the GC
# there is no trashcan either, so Node.__dealloc__ frees long chains iteratively.
cdef PyObject **_pending = NULL      # references waiting to be dropped by the outermost dealloc
cdef Py_ssize_t _npending = 0
cdef Py_ssize_t _cappending = 0
cdef bint _draining = False

# Loop checks (see _check_link): every node gets a serial number when built; an operand's is always
# smaller, except on edges replace_operand pointed at a node that was not renumbered below its user.
# _nbad counts such edges (over-approximated), and serial order proves "no path" only when it is 0.
cdef uint64_t _SERIAL_STEP = 1 << 20        # room for renumbering between two nodes built in a row
cdef uint64_t _serial_next = 0
cdef Py_ssize_t _nbad = 0


cdef void _track_late(Node n) noexcept:
    """Make n (built earlier, untracked) GC-tracked, with every node that depends on it and their Outputs."""
    cdef int32_t seed = n._id
    cdef int32_t i, top = acc_top
    cdef unsigned char *mark
    cdef Node u
    n._gc = 1
    acc_gc_track(<PyObject*>n)
    mark = acc_mark_users(&seed, 1)
    for i in range(1, top):                 # out of memory: track them all (more work for the GC, no leak)
        if acc_self[i] != NULL and (mark == NULL or mark[i]):
            u = <Node>acc_self[i]
            if not u._gc:
                u._gc = 1
                acc_gc_track(<PyObject*>u)
    for i in range(1, acc_otop):
        if acc_outs[i].obj != NULL and (mark == NULL or mark[acc_outs[i].node]):
            acc_gc_track(acc_outs[i].obj)
            (<Output>acc_outs[i].obj)._slot = 0
            acc_orelease(i)
    free(mark)


cdef void _release_later(PyObject *o) noexcept:
    """Take over one reference to o, to be dropped by the outermost dealloc."""
    global _pending, _npending, _cappending
    cdef Py_ssize_t cap
    cdef PyObject **p
    if _npending == _cappending:
        cap = _cappending * 2 if _cappending else 1024
        p = <PyObject**>realloc(_pending, cap * sizeof(PyObject*))
        if p == NULL:           # out of memory: drop it now (recursion, but no leak)
            Py_DECREF(<object>o)
            return
        _pending = p
        _cappending = cap
    _pending[_npending] = o
    _npending += 1


cdef int _seed_extra(OpKind k, object given) except -1:
    """Make ``given`` (a hash seed) k's last seed: its seeded hash in k._last_h and its shared, read-only
    _Extra in k._last_extra (kept when the seed's value is the last one's).  The seed object is remembered
    for the identity check in Node() only when it is a plain int (immutable: its value cannot change)."""
    cdef acc_h128 s = _from_int(given, "Node hash_seed")
    cdef _Extra x = <_Extra>k._last_extra
    seed = _to_int(s)
    if x is None or x.seed != seed:
        x = _Extra.__new__(_Extra)
        x.seed = seed
        x.shared = True
    k._last_given = _NO_SEED              # (no Python code runs from here on: the three stay consistent)
    k._last_extra = x
    k._last_h = acc_combine(k._hash, s)
    if type(given) is int:
        k._last_given = given
    return 0


@cython.no_gc_clear
cdef class Node:
    """Node(op, operands, shapes=(), num_outputs=1, hash_seed=2731710185)
--

    An LTC TsNode: hashes (``hash`` = dag hash, ``shape_hash``) are computed once, at construction.
    An operand is an Output, a Node (its output 0, as LTC's Value(node)) or None (hashed, not kept)."""
    # What building a node reads of its operands (hashes, slot, _gc) comes first, in the cache line of
    # the reference count that the caller's list of operands has just touched (the GC header, when there
    # is one, sits before the object and the allocator puts objects of this size on a line boundary).
    cdef acc_h128 _dag
    cdef acc_h128 _shp
    cdef int32_t _id                 # arena slot (0: none, only while construction fails)
    cdef uint8_t _gc                 # GC-tracked: may be part of a reference cycle
    cdef uint8_t _is_data
    cdef int32_t _nout
    cdef uint32_t _nbad              # operand edges counted in _nbad (see _check_link)
    # (its serial number is acc_serial[_id], in the arena: the object fits a smaller allocator class)
    cdef OpKind _op
    cdef object _shapes              # a Shape (the usual single shape) or a tuple of Shapes
    cdef _Extra _extra               # None unless seeded, multi-output operands or device data
    cdef object __weakref__

    def __cinit__(self, op, operands, shapes=(), num_outputs=1, hash_seed=HASH_SEED):
        global _serial_next
        cdef OpKind k
        cdef object ops, shp
        cdef _Extra sx = None
        cdef PyObject **items
        cdef PyObject *p
        cdef Py_ssize_t i, j, n, nops = 0
        cdef acc_h128 h, hd, nul = acc_mk(0, _NULL_OPT), h0 = _SIZE_T_HASH[0]
        cdef bint dyn = _dyn_env or _dyn_flag
        cdef bint multi = False, taint = False
        cdef int32_t nout = 1
        cdef int32_t *ids
        cdef int32_t *idx = NULL
        cdef Node nd
        if type(self) is Node:
            acc_gc_untrack(<PyObject*>self)    # allocated tracked; tracked again below if it may cycle
        if type(op) is OpKind:
            k = <OpKind>op
        elif type(op) is str:
            k = _opkind_make(op)
        elif isinstance(op, OpKind):
            k = <OpKind>op
        else:
            raise TypeError(f"Node op must be a qualified name str or an OpKind, got {_tname(op)}: {op!r}")
        if type(operands) is list or type(operands) is tuple:
            ops = operands
        else:
            ops = _seq(operands, "Node operands", "Output, Node or None")
        if type(shapes) is tuple:
            if PyTuple_GET_SIZE(shapes) == 1 and type(<object>PyTuple_GET_ITEM(shapes, 0)) is Shape:
                shp = <object>PyTuple_GET_ITEM(shapes, 0)   # kept alone, as from a list (below)
            else:
                shp = shapes
        elif type(shapes) is list:
            if len(<list>shapes) == 1 and type((<list>shapes)[0]) is Shape:
                shp = (<list>shapes)[0]             # kept alone: no tuple until .shapes is read
            else:
                shp = PyList_AsTuple(shapes)
        else:
            shp = _seq(shapes, "Node shapes", "Shape")
        if num_outputs is not _ONE:
            nout = _num_outputs(num_outputs)
        if hash_seed is _DEFAULT_SEED:
            h = k._seeded
        else:
            if hash_seed is not k._last_given:
                _seed_extra(k, hash_seed)
            h = k._last_h
            sx = <_Extra>k._last_extra
        hd = h
        # Operands: from here until the arena slot holds them nothing allocates Python objects (so no GC,
        # no finalizer can change the list under us), and the items are read twice: to hash and check
        # them, then to keep them.
        items = PySequence_Fast_ITEMS(ops)
        n = len(ops)
        for i in range(n):
            p = items[i]
            if type(<object>p) is Node or (<object>p is not None and isinstance(<object>p, Node)):
                nd = <Node>p
                h = acc_combine(h, acc_combine(nd._shp, h0))      # as Output(nd, 0)
                if dyn:
                    hd = acc_combine(hd, acc_combine(nd._dag, h0))
            elif type(<object>p) is Output or (<object>p is not None and isinstance(<object>p, Output)):
                nd = (<Output>p)._node
                h = acc_combine(h, (<Output>p)._shp)
                if dyn:
                    hd = acc_combine(hd, (<Output>p)._hash)
                if (<Output>p)._index:
                    multi = True
            elif <object>p is None:
                h = acc_combine(h, nul)
                if dyn:
                    hd = acc_combine(hd, nul)
                continue
            else:
                raise TypeError(f"Node operands[{i}] must be an Output, a Node or None, got "
                                f"{_tname(<object>p)}: {<object>p!r}")
            nops += 1
            if nd._gc:
                taint = True
        if type(shp) is Shape:
            h = acc_combine(h, (<Shape>shp)._hb)
            if dyn:
                hd = acc_combine(hd, (<Shape>shp)._hn)
        else:
            for i in range(PyTuple_GET_SIZE(shp)):
                p = PyTuple_GET_ITEM(shp, i)
                if type(<object>p) is not Shape:
                    if not isinstance(<object>p, Shape):
                        raise TypeError(f"Node shapes[{i}] must be a Shape, got {_tname(<object>p)}: {<object>p!r}")
                    taint = True               # a subclass's attributes may refer back to the node
                h = acc_combine(h, (<Shape>p)._hb)
                if dyn:
                    hd = acc_combine(hd, (<Shape>p)._hn)
        if multi:
            idx = <int32_t*>malloc(nops * sizeof(int32_t))
            if idx == NULL:
                raise MemoryError()
        self._id = acc_alloc(<PyObject*>self, nops)
        if self._id == 0:
            free(idx)
            raise MemoryError()
        ids = acc_ops(&acc_recs[self._id])
        j = 0
        for i in range(n):
            p = items[i]
            if <object>p is None:
                continue
            if type(<object>p) is not Node and not isinstance(<object>p, Node):
                if multi:
                    idx[j] = <int32_t>(<Output>p)._index
                p = <PyObject*>(<Output>p)._node
            elif multi:
                idx[j] = 0
            Py_INCREF(<object>p)                 # the node's reference to its operand
            ids[j] = (<Node>p)._id
            j += 1
        self._op = k
        self._shapes = shp
        self._nout = nout
        self._shp = h
        self._dag = hd if dyn else h
        _serial_next += _SERIAL_STEP
        acc_serial[self._id] = _serial_next
        if multi:
            try:
                self._extra = _Extra.__new__(_Extra)
                self._extra.seed = sx.seed if sx is not None else None
                self._extra.idx = tuple([idx[j] for j in range(nops)])
            finally:
                free(idx)
        elif sx is not None:
            self._extra = sx
        if taint or type(self) is not Node:
            self._gc = 1
            acc_gc_track(<PyObject*>self)

    def __dealloc__(self):
        global _draining, _npending, _nbad
        cdef PyObject *p
        cdef int32_t *ids
        cdef Py_ssize_t j
        _nbad -= self._nbad
        self._nbad = 0
        if self._extra is not None:
            _handle_release(self._extra)
            Py_INCREF(self._extra)                  # handed to the pending stack (see below)
            _release_later(<PyObject*>self._extra)
            self._extra = None
        if self._id:
            # Hand our operand references to the pending stack; the outermost dealloc drops them one by
            # one, so freeing a chain never nests deeper than one Node in another.
            ids = acc_ops(&acc_recs[self._id])
            for j in range(acc_recs[self._id].info >> 1):
                acc_prefetch_obj(acc_self[ids[j]])     # their misses overlap instead of queueing
                _release_later(acc_self[ids[j]])
            acc_release(self._id)
            self._id = 0
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
        """The non-null operands, in order, as Outputs."""
        cdef Py_ssize_t j, n
        cdef int32_t *ids
        if not self._id:
            return ()
        n = acc_recs[self._id].info >> 1
        nodes = PyList_New(n)               # filled without allocating: the arena cannot move meanwhile
        ids = acc_ops(&acc_recs[self._id])
        acc_fill_list(nodes, ids, n)
        idx = self._extra.idx if self._extra is not None else None
        return tuple([Output(nodes[j], idx[j] if idx is not None else 0) for j in range(n)])

    @property
    def shapes(self):
        """Constructor shapes, then computed shapes."""
        if type(self._shapes) is Shape:
            self._shapes = (self._shapes,)
        return self._shapes

    @property
    def num_outputs(self):
        return self._nout

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
        if self._extra is not None and self._extra.seed is not None:
            return self._extra.seed
        return _DEFAULT_SEED

    @property
    def is_device_data(self):
        return bool(self._is_data)

    @property
    def handle(self):
        """The data handle of a device-data node, else None."""
        return self._extra.handle if self._extra is not None else None

    @property
    def device(self):
        """The device label of a device-data node, else None."""
        return self._extra.device if self._extra is not None else None

    def add_computed_shape(self, shape):
        """Append a shape known only after construction (shown in text, not hashed)."""
        if not isinstance(shape, Shape):
            raise TypeError(f"add_computed_shape needs a Shape, got {_tname(shape)}: {shape!r}")
        self._shapes = self.shapes + (shape,)
        if type(shape) is not Shape and not self._gc:
            _track_late(self)

    def set_data(self, handle):
        """Replace the data handle of a device-data node (DeviceData::SetData); TypeError on other nodes."""
        if not self._is_data:
            raise TypeError(f"set_data needs a device-data node, got {self}")
        hash(handle)
        cdef _Extra x = self._extra
        cdef _Extra t = _Extra.__new__(_Extra)
        t.handle = handle
        _handle_intern(t)                   # may raise (a handle's __eq__): then nothing has changed
        _handle_release(x)                  # (x.handle, the old handle, is still set)
        _handle_move(t, x)
        old = x.handle                      # dropped at return, when everything is consistent again
        x.handle = handle
        acc_set_hid(self._id, x.hid)
        if acc_may_cycle(<PyObject*>handle) and not self._gc:
            _track_late(self)

    def replace_operand(self, index, output):
        """Point operand ``index`` at ``output`` (an Output, or a Node for its output 0) without rehashing;
        ValueError if that would close a graph loop (``output`` is or depends on this node)."""
        cdef Node target
        cdef Py_ssize_t oi
        if isinstance(output, Output):
            target, oi = (<Output>output)._node, (<Output>output)._index
        elif isinstance(output, Node):
            target, oi = <Node>output, 0
        else:
            raise TypeError(f"replace_operand needs an Output or a Node, got {_tname(output)}: {output!r}")
        i = _index_arg(index, "replace_operand index")
        n = acc_recs[self._id].info >> 1
        if i < 0 or i >= n:
            raise IndexError(f"operand index {i} out of range for a node with {n} operand(s)")
        _check_link(self, target)
        _set_operand(self, <Py_ssize_t>i, target, oi)

    def __str__(self):
        s = "[" + ", ".join([str(x) for x in self.shapes]) + "] " + self._op.qualified_name
        if self._nout > 1:
            s += f", num_outputs={self._nout}"
        if self._is_data and self.device is not None:
            s += f", device={self.device}"
        return s

    def __repr__(self):
        return f"<Node {self}>"


cdef int _set_operand(Node self, Py_ssize_t i, Node target, Py_ssize_t oi) except -1:
    """Make operand i of self output oi of target (checked by the caller); keeps the loop bookkeeping."""
    global _nbad
    cdef _Extra x = self._extra
    cdef tuple idx = None
    cdef int32_t *ids
    cdef int32_t old
    cdef Py_ssize_t j, n = acc_recs[self._id].info >> 1
    cdef uint32_t bad = 0
    if oi or (x is not None and x.idx is not None):        # allocate first: nothing below may run Python
        idx = tuple([oi if j == i else (x.idx[j] if x is not None and x.idx is not None else 0)
                     for j in range(n)])
        if not any(idx):
            idx = ()                   # all 0 again: no tuple kept
        if x is None or x.shared:      # a node's own record: a shared one is never written
            x = _Extra.__new__(_Extra)
            x.seed = self._extra.seed if self._extra is not None else None
    Py_INCREF(target)
    ids = acc_ops(&acc_recs[self._id])
    old = ids[i]
    ids[i] = target._id
    if idx is not None:
        x.idx = idx if idx else None
        self._extra = x
    if target._gc and not self._gc:
        _track_late(self)
    if self._nbad or acc_serial[target._id] >= acc_serial[self._id]:
        for j in range(n):
            if acc_serial[ids[j]] >= acc_serial[self._id]:
                bad += 1
        _nbad += <Py_ssize_t>bad - <Py_ssize_t>self._nbad
        self._nbad = bad
    Py_DECREF(<object>acc_self[old])          # last: this may free nodes and run their finalizers
    return 0


def _link_unchecked(node, index, output):
    """Testing hook: replace_operand without the loop check, to exercise the walks' loop errors.  The
    native twin never frees a loop it closes (its nodes are not GC-tracked) unless a later call opens it."""
    if not isinstance(node, Node) or not isinstance(output, (Node, Output)):
        raise TypeError("_link_unchecked(node, index, output) needs a Node and an Output or a Node")
    target = output if isinstance(output, Node) else (<Output>output)._node
    n = acc_recs[(<Node>node)._id].info >> 1
    if not 0 <= index < n:
        raise IndexError(f"operand index {index} out of range for a node with {n} operand(s)")
    _set_operand(<Node>node, index, <Node>target, 0 if isinstance(output, Node) else (<Output>output)._index)


# GC slots of Node: report the operands (held through the arena) and what the _Extra holds for the node.
# Clearing drops only the handle and device: every cycle passes through one (the graph is a DAG), and
# the node's other fields must stay valid for whatever still holds it while the cycle is torn down.
cdef int _node_traverse(Node n, acc_visit_fn visit, void *arg) noexcept:
    cdef int r
    cdef int32_t *ids
    cdef Py_ssize_t j
    if n._extra is not None:
        r = _extra_traverse(n._extra, visit, arg)
        if r:
            return r
    if type(n._shapes) is tuple:
        r = visit(<PyObject*>n._shapes, arg)
        if r:
            return r
    if n._id:
        ids = acc_ops(&acc_recs[n._id])
        for j in range(acc_recs[n._id].info >> 1):
            r = visit(acc_self[ids[j]], arg)
            if r:
                return r
    return 0


cdef int _extra_traverse(_Extra x, acc_visit_fn visit, void *arg) noexcept:
    cdef int r
    if x.handle is not None:
        r = visit(<PyObject*>x.handle, arg)
        if r:
            return r
    if x.device is not None:
        return visit(<PyObject*>x.device, arg)
    return 0


cdef int _node_clear(Node n) noexcept:
    cdef _Extra x = n._extra
    if x is None or x.shared:         # (a shared record holds only a seed)
        return 0
    _handle_release(x)
    if n._is_data and n._id:          # (other nodes keep operand ids where data nodes keep the handle id)
        acc_set_hid(n._id, 0)
    x.device = None
    x.handle = None
    return 0


cdef int _output_clear(PyObject *o) noexcept:
    return 0            # an Output keeps its node: cycles through it are broken at a node's handle


cdef tuple _seq(value, str what, str item):
    if isinstance(value, (str, bytes, Node, Output, Shape)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{what} must be a sequence of {item}, got {_tname(value)}: {value!r}")
    return tuple(value)


cdef object _index_arg(value, str what):
    """An int index from an int or an __index__ object (bools refused), with the check every index shares."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an int, got {_tname(value)}: {value!r}")
    return _operator.index(value)


cdef int32_t _num_outputs(value) except -1:
    n = _index_arg(value, "Node num_outputs")
    if n < 1 or n > _MAX_OUTPUTS:
        raise ValueError(f"Node num_outputs must be in [1, {MAX_OUTPUTS}], got {n}")
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
    cdef _Extra x = _Extra.__new__(_Extra)        # its own record, not the shared one of the seed
    x.seed = n._extra.seed
    n._extra = x
    x.handle = handle
    x.device = device
    _handle_intern(x)
    acc_set_hid(n._id, x.hid)
    acc_recs[n._id].info |= ACC_DATA_BIT
    n._is_data = True
    if (acc_may_cycle(<PyObject*>handle) or acc_may_cycle(<PyObject*>device)) and not n._gc:
        n._gc = 1
        acc_gc_track(<PyObject*>n)
    return n


cdef class Output:
    """Output(node, index=0)
--

    Output ``index`` of ``node`` (an LTC Value); ``hash`` = HashCombine(node.hash, Hash(size_t index))."""
    cdef Node _node
    cdef Py_ssize_t _index
    cdef acc_h128 _hash
    cdef acc_h128 _shp
    cdef int32_t _slot               # while untracked: its slot among the untracked Outputs (see _track_late)

    def __cinit__(self, node, index=0):
        cdef Node nd
        cdef Py_ssize_t i
        cdef acc_h128 ih
        if type(self) is Output:
            acc_gc_untrack(<PyObject*>self)     # tracked only when its node is
        if type(node) is not Node and not isinstance(node, Node):
            raise TypeError(f"Output node must be a Node, got {_tname(node)}: {node!r}")
        nd = <Node>node
        if type(index) is not int:
            index = _index_arg(index, "Output index")
        if index < 0 or index >= nd._nout:
            raise IndexError(f"Output index {index} out of range for a node with {nd._nout} "
                             f"output(s): {nd}")
        i = index
        ih = _size_t_hash(i)
        self._node = nd
        self._index = i
        self._hash = acc_combine(nd._dag, ih)
        self._shp = acc_combine(nd._shp, ih)
        if nd._gc or type(self) is not Output:
            acc_gc_track(<PyObject*>self)
        else:
            self._slot = acc_oalloc(<PyObject*>self, nd._id)
            if self._slot == 0:             # out of memory: tracked (more work for the GC, no leak)
                acc_gc_track(<PyObject*>self)

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
        shapes = self._node.shapes
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


acc_set_gc(<PyTypeObject*>Node, <void*>_node_traverse, <void*>_node_clear)
acc_set_gc(<PyTypeObject*>Output, <void*>(<PyTypeObject*>Output).tp_traverse, <void*>_output_clear)


# Output's deallocation gives up its slot first (in C: a __dealloc__ would save and restore the
# exception state for each of the many short-lived Outputs).
cdef destructor _output_base_dealloc = (<PyTypeObject*>Output).tp_dealloc

cdef void _output_dealloc(PyObject *o) noexcept:
    cdef int32_t s = (<Output>o)._slot
    if s:
        acc_orelease(s)
    _output_base_dealloc(o)

(<PyTypeObject*>Output).tp_dealloc = _output_dealloc
