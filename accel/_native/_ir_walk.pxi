# Traversal for _ir.pyx (included there): post-order, EmissionMap, parameter sequence, graph hash.
# Visit state lives on the nodes (NodeCore.mark): traversal e stamps 2e (emitting) and 2e+1 (emitted),
# so a fresh traversal needs no map and no clearing.  An EmissionMap owns one epoch; when another
# traversal is about to overwrite its stamps it snapshots them, and restamps its nodes when used again.
# The walk itself runs no Python code (so nothing can re-enter it); lists are built afterwards.

from cpython.bytes cimport PyBytes_FromStringAndSize

ctypedef struct Vec:
    NodeCore **data
    Py_ssize_t n
    Py_ssize_t cap

cdef uint64_t _epoch = 0
cdef PyObject *_owner = NULL      # the EmissionMap whose stamps are on the nodes, or NULL
cdef Vec _stack                   # reused by every walk (walks never nest)
_stack.data = NULL
_stack.n = 0
_stack.cap = 0


cdef int _vec_reserve(Vec *v, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap = v.cap if v.cap else 64
    cdef NodeCore **p
    while cap < need:
        cap *= 2
    p = <NodeCore**>realloc(v.data, cap * sizeof(NodeCore*))
    if p == NULL:
        raise MemoryError()
    v.data = p
    v.cap = cap
    return 0


cdef inline int _vec_push(Vec *v, NodeCore *c) except -1:
    if v.n == v.cap:
        _vec_reserve(v, v.n + 1)
    v.data[v.n] = c
    v.n += 1
    return 0


cdef int _walk(NodeCore **roots, Py_ssize_t nroots, uint64_t base, Vec *post, Vec *visited,
               NodeCore **loop) except -1:
    """Util::ComputePostOrder over ``roots`` with one shared stamp base; returns 1 and sets loop on a cycle."""
    cdef uint64_t emitting = base, emitted = base + 1, m, cm
    cdef NodeCore *node
    cdef NodeCore *c
    cdef Py_ssize_t r, i, nops, depth
    cdef Vec *st = &_stack
    for r in range(nroots):
        node = roots[r]
        if node.mark == emitted:
            continue
        st.n = 0
        _vec_push(st, node)
        while st.n:
            node = st.data[st.n - 1]
            m = node.mark
            if m < emitting:
                if visited != NULL:
                    _vec_push(visited, node)
                nops = node.nops
                if nops == 0:
                    node.mark = emitted
                    _vec_push(post, node)
                    st.n -= 1
                    continue
                node.mark = emitting
                if st.n + nops > st.cap:
                    _vec_reserve(st, st.n + nops)
                depth = st.n
                for i in range(nops):
                    c = node.ops[i]
                    cm = c.mark
                    if cm < emitting:
                        st.data[st.n] = c
                        st.n += 1
                    elif cm == emitting:
                        loop[0] = c
                        return 1
                if st.n == depth:           # every operand already emitted: emit now, as the 2nd visit would
                    node.mark = emitted
                    _vec_push(post, node)
                    st.n -= 1
            elif m == emitting:
                for i in range(node.nops):
                    if node.ops[i].mark != emitted:
                        loop[0] = node.ops[i]
                        return 1
                node.mark = emitted
                _vec_push(post, node)
                st.n -= 1
            else:
                st.n -= 1
    return 0


cdef class EmissionMap:
    """EmissionMap()
--

    LTC's EmissionMap for incremental post_order calls: remembers which nodes were already emitted."""
    cdef uint64_t _base
    cdef list _nodes
    cdef bytes _saved
    cdef object __weakref__

    def __cinit__(self):
        self._base = 0
        self._nodes = []
        self._saved = None

    def __dealloc__(self):
        global _owner
        if _owner == <PyObject*>self:
            _owner = NULL

    def __len__(self):
        return len(self._nodes)

    def __contains__(self, node):
        return self.status(node) is not None

    def status(self, node):
        """EMITTING (1), EMITTED (2), or None when the node was never visited with this map."""
        cdef uint64_t m
        if not isinstance(node, Node):
            raise TypeError(f"EmissionMap.status needs a Node, got {_tname(node)}: {node!r}")
        if _owner == <PyObject*>self:
            m = (<Node>node).c.mark - self._base
            return (EMITTING if m == 0 else EMITTED) if m <= 1 and self._base else None
        for n, st in zip(self._nodes, self._saved or b""):
            if n is node:
                return EMITTING if st == 0 else EMITTED
        return None

    def clear(self):
        """Forget every node."""
        global _owner
        if _owner == <PyObject*>self:
            _owner = NULL
        self._base = 0
        self._nodes = []
        self._saved = None


cdef uint64_t _begin(EmissionMap emap) except 0:
    """Pick the stamp base for a traversal, saving and restoring EmissionMap stamps as needed."""
    global _epoch, _owner
    cdef EmissionMap cur
    cdef Py_ssize_t i
    cdef uint64_t base
    if emap is not None and _owner == <PyObject*>emap and emap._base:
        return emap._base
    if _owner != NULL:
        cur = <EmissionMap>_owner
        cur._saved = bytes([<unsigned char>((<Node>n).c.mark - cur._base) for n in cur._nodes])
        _owner = NULL
    _epoch += 1
    base = 2 * _epoch
    if emap is None:
        return base
    if emap._saved is not None:
        for i in range(len(emap._nodes)):
            (<Node>emap._nodes[i]).c.mark = base + <unsigned char>emap._saved[i]
    emap._base = base
    emap._saved = None
    _owner = <PyObject*>emap
    return base


cdef tuple _root_tuple(roots):
    if isinstance(roots, (Node, Output)):
        return (roots,)
    return _seq(roots, "roots", "Output or Node objects")


cdef int _root_cores(tuple roots, Vec *out) except -1:
    cdef Py_ssize_t i
    _vec_reserve(out, len(roots) + 1)
    for i in range(len(roots)):
        r = roots[i]
        if isinstance(r, Output):
            out.data[out.n] = &(<Output>r)._node.c
        elif isinstance(r, Node):
            out.data[out.n] = &(<Node>r).c
        else:
            raise TypeError(f"roots[{i}] must be an Output or a Node, got {_tname(r)}: {r!r}")
        out.n += 1
    return 0


cdef int _post_order_cores(Vec *rv, EmissionMap emap, Vec *post) except -1:
    cdef Vec visited
    cdef NodeCore *loop = NULL
    cdef int rc
    cdef Py_ssize_t i
    cdef uint64_t base
    visited.data = NULL
    visited.n = visited.cap = 0
    base = _begin(emap)
    try:
        rc = _walk(rv.data, rv.n, base, post, &visited if emap is not None else NULL, &loop)
        if emap is not None:
            for i in range(visited.n):
                emap._nodes.append(<object>visited.data[i].self)
        if rc:
            raise RuntimeError(f"Graph loop found at {_core_node(loop)}")
    finally:
        free(visited.data)
    return 0


cdef list _to_list(Vec *v):
    cdef list out = PyList_New(v.n)
    cdef Py_ssize_t i
    cdef PyObject *o
    for i in range(v.n):
        o = v.data[i].self
        Py_INCREF(<object>o)
        PyList_SET_ITEM(out, i, <object>o)
    return out


def post_order(roots, emission_map=None):
    """Util::ComputePostOrder: operands last-to-first, one emission map across roots; RuntimeError on loops."""
    cdef Vec rv, post
    cdef tuple rt = _root_tuple(roots)
    rv.data = post.data = NULL
    rv.n = rv.cap = post.n = post.cap = 0
    try:
        _root_cores(rt, &rv)
        if emission_map is not None and not isinstance(emission_map, EmissionMap):
            raise TypeError(f"emission_map must be an EmissionMap or None, got {_tname(emission_map)}: "
                            f"{emission_map!r}")
        _post_order_cores(&rv, emission_map, &post)
        return _to_list(&post)
    finally:
        free(rv.data)
        free(post.data)


def graph_size(roots):
    """Util::GetGraphSize: the number of nodes reachable from ``roots``."""
    cdef Vec rv, post
    cdef tuple rt = _root_tuple(roots)
    rv.data = post.data = NULL
    rv.n = rv.cap = post.n = post.cap = 0
    try:
        _root_cores(rt, &rv)
        _post_order_cores(&rv, None, &post)
        return post.n
    finally:
        free(rv.data)
        free(post.data)


cdef list _param_seq(Vec *post):
    cdef dict seen = {}
    cdef list seq = []
    cdef Py_ssize_t i
    cdef NodeCore *c
    for i in range(post.n):
        c = post.data[i]
        if c.is_data:
            h = (<Node>c.self)._handle
            j = seen.get(h)
            if j is None:
                j = seen[h] = len(seen)
            seq.append(j)
    return seq


def parameter_sequence(roots):
    """RunPostOrder's parameter_sequence: per device-data node in post order, the first-seen index of its handle."""
    cdef Vec rv, post
    cdef tuple rt = _root_tuple(roots)
    rv.data = post.data = NULL
    rv.n = rv.cap = post.n = post.cap = 0
    try:
        _root_cores(rt, &rv)
        _post_order_cores(&rv, None, &post)
        return _param_seq(&post)
    finally:
        free(rv.data)
        free(post.data)


def graph_hash(roots, tensor_ids=None):
    """LazyGraphExecutor::GetGraphHash as 16 little-endian bytes; equal tensor_ids mark the same tensor twice."""
    cdef Vec rv, post
    cdef acc_h128 h = acc_mk(0, 0), ph, oh
    cdef Py_ssize_t i, j, n
    cdef Node node
    cdef unsigned char out[16]
    cdef set seen = None
    if isinstance(roots, (Node, Output)):
        roots = (roots,)
    cdef tuple rt = _seq(roots, "roots", "Output or Node objects")
    cdef tuple ids = None
    n = len(rt)
    if tensor_ids is not None:
        ids = _seq(tensor_ids, "tensor_ids", "hashable tensor ids")
        if len(ids) != n:
            raise ValueError(f"tensor_ids has {len(ids)} entries but there are {n} roots")
        seen = set()
    rv.data = post.data = NULL
    rv.n = rv.cap = post.n = post.cap = 0
    try:
        _vec_reserve(&rv, n + 1)
        if n:
            h = _MHASH_TRUE
        for i in range(n):
            r = rt[i]
            if isinstance(r, Output):
                node = (<Output>r)._node
                oh = (<Output>r)._hash
            elif isinstance(r, Node):
                node = <Node>r
                oh = acc_combine(node.c.dag, _SIZE_T_HASH[0])
            else:
                raise TypeError(f"roots[{i}] must be an Output or a Node, got {_tname(r)}: {r!r}")
            if ids is not None:
                tid = ids[i]
                if tid in seen:
                    continue
                seen.add(tid)
            if node._op is _NS_KIND:
                continue
            h = acc_combine(h, oh)
            rv.data[rv.n] = &node.c
            rv.n += 1
        _post_order_cores(&rv, None, &post)
        ph = acc_mk(0, _CONTAINER_SEED)
        for x in _param_seq(&post):
            ph = acc_combine(ph, _size_t_hash(<Py_ssize_t>x))
        h = acc_combine(h, ph)
        for j in range(8):
            out[j] = (h.lo >> (8 * j)) & 0xff
            out[8 + j] = (h.hi >> (8 * j)) & 0xff
        return PyBytes_FromStringAndSize(<char*>out, 16)
    finally:
        free(rv.data)
        free(post.data)
