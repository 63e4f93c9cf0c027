# Traversal for _ir.pyx (included there): post-order, EmissionMap, parameter sequence, graph hash.
# The walk is acc_walk in _ir_arena.h: it reads only the node arena (stamps, operand ids, handle ids)
# and runs no Python code, so nothing can re-enter it or move the arena; lists are built afterwards.
# Traversal e stamps 2e (emitting) and 2e+1 (emitted), so a fresh traversal needs no map and no
# clearing.  An EmissionMap owns one epoch; when another traversal is about to overwrite its stamps it
# snapshots them, and restamps its nodes when used again.  Everything holds the GIL throughout, which
# is what keeps two threads from interleaving their stamps.

from cpython.bytes cimport PyBytes_FromStringAndSize

# Stamps are uint32: when the epoch would overflow, every mark is reset to 0 (after the owning
# EmissionMap has saved its stamps) and counting starts again.
cdef uint32_t _EPOCH_LIMIT = 0x7FFFFFF0
cdef uint32_t _epoch = 0
cdef uint32_t _hepoch = 0         # handle stamps, one per parameter walk
cdef PyObject *_owner = NULL      # the EmissionMap whose stamps are on the nodes, or NULL
cdef acc_ivec _stack              # reused by every walk (walks never nest) ...
_stack.d = NULL
_stack.n = 0
_stack.cap = 0
cdef acc_ivec _post               # ... and by every post_order, so neither regrows each call
_post.d = NULL
_post.n = 0
_post.cap = 0
cdef Py_ssize_t _KEEP = 1 << 20             # buffers above this many entries are freed after use


cdef void _trim() noexcept:
    """Free the shared stack after a huge walk (a 10M-node chain) instead of holding it forever."""
    if _stack.cap > _KEEP:
        free(_stack.d)
        _stack.d = NULL
        _stack.cap = 0


def _set_epochs(epoch, handle_epoch):
    """Testing hook: move the stamp counters forward (to exercise wrap-around)."""
    global _epoch, _hepoch
    if epoch < _epoch or handle_epoch < _hepoch:
        raise ValueError("stamp counters only move forward: older stamps would look current")
    _epoch = epoch
    _hepoch = handle_epoch


cdef uint32_t _next_hbase():
    global _hepoch
    cdef Py_ssize_t i
    if _hepoch >= 0xFFFFFFF0u:
        for i in range(len(_hkeys)):
            acc_hstamp[i] = 0
        _hepoch = 0
    _hepoch += 1
    return _hepoch


cdef class EmissionMap:
    """EmissionMap()
--

    LTC's EmissionMap for incremental post_order calls: remembers which nodes were already emitted."""
    cdef uint32_t _base
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
        cdef uint32_t m
        if not isinstance(node, Node):
            raise TypeError(f"EmissionMap.status needs a Node, got {_tname(node)}: {node!r}")
        if _owner == <PyObject*>self:
            m = acc_recs[(<Node>node)._id].mark - self._base
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


cdef uint32_t _begin(EmissionMap emap) except 0:
    """Pick the stamp base for a traversal, saving and restoring EmissionMap stamps as needed."""
    global _epoch, _owner
    cdef EmissionMap cur
    cdef Py_ssize_t i
    cdef uint32_t base
    if emap is not None and _owner == <PyObject*>emap and emap._base:
        return emap._base
    if _owner != NULL:
        cur = <EmissionMap>_owner
        cur._saved = bytes([<unsigned char>(acc_recs[(<Node>n)._id].mark - cur._base) for n in cur._nodes])
        _owner = NULL
    if _epoch >= _EPOCH_LIMIT:
        # No map owns stamps now (all saved above), so every mark can go back to "never visited".
        for i in range(acc_top):
            acc_recs[i].mark = 0
        _epoch = 0
    _epoch += 1
    base = 2 * _epoch
    if emap is None:
        return base
    if emap._saved is not None:
        for i in range(len(emap._nodes)):
            acc_recs[(<Node>emap._nodes[i])._id].mark = base + <unsigned char>emap._saved[i]
    emap._base = base
    emap._saved = None
    _owner = <PyObject*>emap
    return base


cdef inline int32_t _root_id(r, Py_ssize_t i) except 0:
    if type(r) is Output or isinstance(r, Output):
        return (<Output>r)._node._id
    if isinstance(r, Node):
        return (<Node>r)._id
    raise TypeError(f"roots[{i}] must be an Output or a Node, got {_tname(r)}: {r!r}")


cdef int _root_ids(roots, acc_ivec *out) except -1:
    """The roots' arena ids (a single Node or Output is one root), in order."""
    cdef tuple rt
    cdef Py_ssize_t i
    if isinstance(roots, (Node, Output)):
        rt = (roots,)
    else:
        rt = _seq(roots, "roots", "Output or Node objects")
    if acc_ivec_reserve(out, len(rt) + 1):
        raise MemoryError()
    for i in range(len(rt)):
        out.d[i] = _root_id(rt[i], i)
    out.n = len(rt)
    return 0


def _root_nodes(roots):
    """The Nodes of ``roots``, checked as every graph function checks them (for accel.lazy.dump)."""
    if isinstance(roots, Output):
        return [(<Output>roots)._node]
    if isinstance(roots, Node):
        return [roots]
    rt = _seq(roots, "roots", "Output or Node objects")
    out = []
    for i in range(len(rt)):
        r = rt[i]
        if isinstance(r, Output):
            out.append((<Output>r)._node)
        elif isinstance(r, Node):
            out.append(r)
        else:
            raise TypeError(f"roots[{i}] must be an Output or a Node, got {_tname(r)}: {r!r}")
    return out


# ----------------------------------------------------------------------------- loop check

cdef str _loop_msg(Node target, Node node):
    return f"replace_operand would close a graph loop: {target!r} is or depends on {node!r}"


cdef inline uint64_t _serial_of(int32_t id) noexcept:
    return acc_serial[id]


cdef int _check_link(Node node, Node target) except -1:
    """ValueError if making ``target`` an operand of ``node`` would close a loop (target is or reaches node).

    Serial numbers (see _ir_node.pxi) make the usual case O(1): with no counted out-of-order edge, every
    path goes to ever smaller serials, so a target built before the node cannot reach it.  Otherwise an
    iterative walk from target looks for node, skipping (while no edge is out of order) whatever is older
    than node; the nodes it went through are then renumbered below node where there is room, so that the
    new edge, and those the walk passed, keep the order."""
    cdef uint64_t limit = acc_serial[node._id]
    cdef bint prune = _nbad == 0
    cdef uint32_t emitting, emitted
    cdef int32_t e, c, want = node._id
    cdef Py_ssize_t sp, j, nops
    cdef int32_t *ops
    cdef int32_t *stack
    cdef acc_ivec post
    cdef bint found = False
    if target is node:
        raise ValueError(_loop_msg(target, node))
    if prune and acc_serial[target._id] < limit:
        return 0
    emitting = _begin(None)
    emitted = emitting + 1
    post.d = NULL
    post.n = post.cap = 0
    try:
        if _stack.cap < 64 and acc_ivec_reserve(&_stack, 64):
            raise MemoryError()
        stack = _stack.d
        stack[0] = target._id
        sp = 1
        while sp:                       # post-order, as acc_walk, over the nodes newer than node
            e = stack[sp - 1]
            if e < 0:
                acc_recs[~e].mark = emitted
                if post.n == post.cap and acc_ivec_reserve(&post, post.n + 1):
                    raise MemoryError()
                post.d[post.n] = ~e
                post.n += 1
                sp -= 1
                continue
            if acc_recs[e].mark >= emitting:        # done, or on the path (a loop _link_unchecked made)
                sp -= 1
                continue
            if e == want:
                found = True
                break
            if prune and _serial_of(e) < limit:
                acc_recs[e].mark = emitted
                sp -= 1
                continue
            acc_recs[e].mark = emitting
            stack[sp - 1] = ~e
            nops = acc_recs[e].info >> 1
            if sp + nops > _stack.cap:
                if acc_ivec_reserve(&_stack, sp + nops):
                    raise MemoryError()
                stack = _stack.d
            ops = acc_ops(&acc_recs[e])
            for j in range(nops):
                c = ops[j]
                if acc_recs[c].mark < emitting:
                    stack[sp] = c
                    sp += 1
        if not found:
            _renumber(&post)
    finally:
        free(post.d)
        _trim()
    if found:
        raise ValueError(_loop_msg(target, node))
    return 0


cdef void _renumber(acc_ivec *post) noexcept:
    """Lower each node of post (operands first) to just above its highest operand, where that is lower:
    all its operand edges are then in order (and no longer counted); its users' stay in order."""
    global _nbad
    cdef Py_ssize_t k, j
    cdef int32_t x
    cdef int32_t *ops
    cdef uint64_t m, s
    cdef Node nd
    for k in range(post.n):
        x = post.d[k]
        ops = acc_ops(&acc_recs[x])
        m = 0
        for j in range(acc_recs[x].info >> 1):
            s = _serial_of(ops[j])
            if s > m:
                m = s
        nd = <Node>acc_self[x]
        if m + 1 < acc_serial[x]:
            acc_serial[x] = m + 1
            _nbad -= nd._nbad
            nd._nbad = 0


cdef int _walk_done(int rc, int32_t loop) except -1:
    if rc == 1:
        raise RuntimeError(f"Graph loop found at {<object>acc_self[loop]}")
    if rc:
        raise MemoryError()
    return 0


cdef list _id_list(acc_ivec *v):
    """The Nodes of arena ids, as a new list."""
    cdef list out = PyList_New(v.n)
    acc_fill_list(out, v.d, v.n)
    return out


def post_order(roots, emission_map=None):
    """Util::ComputePostOrder: operands last-to-first, one emission map across roots; RuntimeError on loops."""
    global _post
    cdef acc_ivec rv, visited
    cdef acc_ivec post = _post        # taken over: a GC-run finalizer could call post_order meanwhile
    cdef EmissionMap em = None
    cdef int32_t loop = 0
    cdef int rc
    _post.d = NULL
    _post.cap = 0
    post.n = 0
    rv.d = visited.d = NULL
    rv.n = rv.cap = visited.n = visited.cap = 0
    try:
        _root_ids(roots, &rv)
        if emission_map is not None:
            if not isinstance(emission_map, EmissionMap):
                raise TypeError(f"emission_map must be an EmissionMap or None, got {_tname(emission_map)}: "
                                f"{emission_map!r}")
            em = <EmissionMap>emission_map
        base = _begin(em)
        if em is None:
            rc = acc_walk_post(rv.d, rv.n, base, 0, &_stack, &post, NULL, &loop)
        else:
            rc = acc_walk_post(rv.d, rv.n, base, 1, &_stack, &post, &visited, &loop)
            em._nodes.extend(_id_list(&visited))
        _walk_done(rc, loop)
        return _id_list(&post)
    finally:
        if _post.d == NULL and post.cap <= _KEEP:
            _post = post              # hand the buffer back for the next call
        else:
            free(post.d)
        _trim()
        free(rv.d)
        free(visited.d)


def graph_size(roots):
    """Util::GetGraphSize: the number of nodes reachable from ``roots``."""
    cdef acc_ivec rv
    cdef int32_t loop = 0
    cdef Py_ssize_t count = 0
    cdef int rc
    rv.d = NULL
    rv.n = rv.cap = 0
    try:
        _root_ids(roots, &rv)
        rc = acc_walk_count(rv.d, rv.n, _begin(None), &_stack, &count, &loop)
        _walk_done(rc, loop)           # a separate statement: loop is set by the walk
        return count
    finally:
        _trim()
        free(rv.d)


cdef int _param_walk(acc_ivec *rv, acc_ivec *seq) except -1:
    cdef int32_t loop = 0, nparams = 0
    cdef uint32_t base = _begin(None)
    cdef int rc = acc_walk_params(rv.d, rv.n, base, &_stack, seq, _next_hbase(), &nparams, &loop)
    _trim()
    return _walk_done(rc, loop)


def parameter_sequence(roots):
    """RunPostOrder's parameter_sequence: per device-data node in post order, the first-seen index of its handle."""
    cdef acc_ivec rv, seq
    cdef Py_ssize_t i
    rv.d = seq.d = NULL
    rv.n = rv.cap = seq.n = seq.cap = 0
    try:
        _root_ids(roots, &rv)
        _param_walk(&rv, &seq)
        return [seq.d[i] for i in range(seq.n)]
    finally:
        free(rv.d)
        free(seq.d)


def graph_hash(roots, tensor_ids=None):
    """LazyGraphExecutor::GetGraphHash as 16 little-endian bytes; equal tensor_ids mark the same tensor twice."""
    cdef acc_ivec rv, seq
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
    rv.d = seq.d = NULL
    rv.n = rv.cap = seq.n = seq.cap = 0
    try:
        if acc_ivec_reserve(&rv, n + 1):
            raise MemoryError()
        if n:
            h = _MHASH_TRUE
        for i in range(n):
            r = rt[i]
            if isinstance(r, Output):
                node = (<Output>r)._node
                oh = (<Output>r)._hash
            elif isinstance(r, Node):
                node = <Node>r
                oh = acc_combine(node._dag, _SIZE_T_HASH[0])
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
            rv.d[rv.n] = node._id
            rv.n += 1
        _param_walk(&rv, &seq)
        ph = acc_mk(0, _CONTAINER_SEED)
        for i in range(seq.n):
            ph = acc_combine(ph, _size_t_hash(seq.d[i]))
        h = acc_combine(h, ph)
        for j in range(8):
            out[j] = (h.lo >> (8 * j)) & 0xff
            out[8 + j] = (h.hi >> (8 * j)) & 0xff
        return PyBytes_FromStringAndSize(<char*>out, 16)
    finally:
        free(rv.d)
        free(seq.d)


def wiring_hash(post):
    """16 bytes naming how the nodes of ``post`` (a post order: a list of Nodes) read each other: DataHash of
    the int32 sequence, per node, of its operand count, then per operand the operand node's position in
    ``post`` (-1 if absent) and its output index.  A graph hash (GetGraphHash) sees operands only through
    their hashes, and a device-data node's hash is its shape's: two graphs that read the same tensors in
    other places hash alike; this tells them apart."""
    cdef list lst = post if type(post) is list else list(post)
    cdef Py_ssize_t n = len(lst), k, j, nops, w = 0, total = 0
    cdef int32_t *pos = NULL
    cdef int32_t *buf = NULL
    cdef int32_t *ids
    cdef int32_t top = acc_top
    cdef Node nd
    cdef tuple idx
    cdef acc_h128 h
    cdef unsigned char out[16]
    try:
        pos = <int32_t*>malloc((<size_t>top + 1) * sizeof(int32_t))
        if pos == NULL:
            raise MemoryError()
        memset(pos, 0xff, (<size_t>top + 1) * sizeof(int32_t))      # -1: not in post
        for k in range(n):
            o = lst[k]
            if not isinstance(o, Node):
                raise TypeError(f"wiring_hash needs a list of Nodes, got {_tname(o)} at [{k}]: {o!r}")
            nd = <Node>o
            if nd._id:
                pos[nd._id] = <int32_t>k
                total += 1 + 2 * <Py_ssize_t>(acc_recs[nd._id].info >> 1)
            else:
                total += 1
        buf = <int32_t*>malloc((<size_t>total + 1) * sizeof(int32_t))
        if buf == NULL:
            raise MemoryError()
        for k in range(n):
            nd = <Node>lst[k]
            if not nd._id:
                buf[w] = 0
                w += 1
                continue
            nops = acc_recs[nd._id].info >> 1
            ids = acc_ops(&acc_recs[nd._id])
            idx = nd._extra.idx if nd._extra is not None else None
            buf[w] = <int32_t>nops
            w += 1
            for j in range(nops):
                buf[w] = pos[ids[j]] if ids[j] <= top else -1
                buf[w + 1] = <int32_t>(<object>idx[j]) if idx is not None else 0
                w += 2
        h = acc_data_hash(buf, <size_t>w * sizeof(int32_t))
        for j in range(8):
            out[j] = (h.lo >> (8 * j)) & 0xff
            out[8 + j] = (h.hi >> (8 * j)) & 0xff
        return PyBytes_FromStringAndSize(<char*>out, 16)
    finally:
        free(pos)
        free(buf)
