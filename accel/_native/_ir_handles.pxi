# The rarely used parts of a Node (_Extra) and the interning of data handles, for _ir_node.pxi (included
# there; not a module of its own).

from cpython.object cimport PyObject_RichCompareBool, Py_EQ


@cython.no_gc
@cython.final
cdef class _Extra:
    """The rarely used parts of a Node: a non-default hash seed, operand output indices when one is not 0,
    and a device-data node's handle, device label, interned handle id and links to the other holders of
    that id.  A record with only a seed is ``shared``: read-only, held by every Node of an OpKind built
    with that seed (so a seeded node allocates nothing for it); any other record is owned by exactly one
    Node (its traverse visits handle and device for it), and a Node that needs more than a seed copies a
    shared record first."""
    cdef object seed           # the hash seed as an int, None for HASH_SEED
    cdef bint shared           # seed only, never written again (see above)
    cdef tuple idx             # the output index of each operand, None when all are 0
    cdef object handle
    cdef object device
    cdef int32_t hid           # interned handle id, 0 for none
    cdef PyObject *prev        # holders of the same id: borrowed, each unlinks itself before it goes
    cdef PyObject *next


# Data handles are interned: equal handles (dict equality, as RunPostOrder's map) share one small id, so
# graph_hash de-duplicates parameters with per-id stamps instead of a dict.  The intern table owns no
# handle: its keys (_HKey) borrow the handle of one device-data node holding the id (the head of the id's
# holder list), so that the only reference to a handle is its node's, which the node's GC traverse
# reports.  An id goes back to the free list with its last holder.
@cython.no_gc
@cython.final
cdef class _HKey:
    cdef PyObject *obj         # borrowed from the head holder's handle; NULL once the id is gone
    cdef Py_hash_t h

    def __hash__(self):
        return self.h

    def __eq__(self, other):
        if type(other) is not _HKey:
            return NotImplemented
        if self.obj == NULL or (<_HKey>other).obj == NULL:
            return self is other
        a = <object>self.obj           # strong references while user __eq__ code runs
        b = <object>(<_HKey>other).obj
        return PyObject_RichCompareBool(a, b, Py_EQ)


cdef dict _HANDLE_IDS = {}           # _HKey -> id
cdef list _hkeys = [None]            # id -> its _HKey (id 0 is never used)
cdef list _handle_free = []
cdef PyObject **_hhead = NULL        # id -> the first holder (_Extra), borrowed
cdef Py_ssize_t _hcap = 0


cdef int _handle_grow(Py_ssize_t need) except -1:
    global _hhead, _hcap, acc_hstamp, acc_hidx
    cdef Py_ssize_t cap = _hcap * 2 if _hcap else 1024
    cdef void *p
    while cap < need:
        cap *= 2
    if cap > 0x7FFFFFFF:
        raise MemoryError()
    p = realloc(_hhead, cap * sizeof(PyObject*))
    if p == NULL:
        raise MemoryError()
    _hhead = <PyObject**>p
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


cdef int _handle_intern(_Extra x) except -1:
    """Give x (whose handle is set) the id of its handle, linking it into that id's holders."""
    cdef Py_ssize_t i
    cdef _HKey key = _HKey.__new__(_HKey)
    cdef _Extra head
    key.obj = <PyObject*>x.handle
    key.h = hash(x.handle)
    o = _HANDLE_IDS.get(key)              # may run the handle's __eq__
    if o is None:
        if _handle_free:
            i = <Py_ssize_t>_handle_free.pop()
        else:
            i = len(_hkeys)
            if i >= _hcap:
                _handle_grow(i + 1)
            _hkeys.append(None)
        # setdefault, not a plain store: a handle's own __eq__ may let another thread intern an equal
        # handle meanwhile, and then both must end up with that one id.
        o = _HANDLE_IDS.setdefault(key, i)
        if <Py_ssize_t>o == i:
            _hkeys[i] = key
            _hhead[i] = <PyObject*>x
            x.prev = x.next = NULL
            x.hid = <int32_t>i
            acc_hstamp[i] = 0
            return 0
        _handle_free.append(i)
    i = <Py_ssize_t>o
    head = <_Extra>_hhead[i]             # link x second: the head (whose handle the key borrows) stays
    x.prev = <PyObject*>head
    x.next = head.next
    if head.next != NULL:
        (<_Extra>head.next).prev = <PyObject*>x
    head.next = <PyObject*>x
    x.hid = <int32_t>i
    return 0


cdef void _handle_release(_Extra x) noexcept:
    """Unlink x from its id's holders (x.handle still set); free the id with its last holder."""
    cdef int32_t i = x.hid
    cdef _HKey key
    if not i:
        return
    x.hid = 0
    if x.next != NULL:
        (<_Extra>x.next).prev = x.prev
    if x.prev != NULL:
        (<_Extra>x.prev).next = x.next
    else:
        _hhead[i] = x.next
        if x.next != NULL:            # the key borrowed x's handle: lend it the new head's (an equal one)
            (<_HKey>_hkeys[i]).obj = <PyObject*>(<_Extra>x.next).handle
    x.prev = x.next = NULL
    if _hhead[i] != NULL:
        return
    key = <_HKey>_hkeys[i]
    key.obj = NULL               # matches nothing now, and compares without calling any handle's __eq__
    _hkeys[i] = None
    try:
        if _HANDLE_IDS.get(key) == i:
            del _HANDLE_IDS[key]
        _handle_free.append(i)
    except BaseException:        # teardown or out of memory: leak the id, never crash
        pass


cdef void _handle_move(_Extra src, _Extra dst) noexcept:
    """dst (holding no id) takes src's place among the holders of src's id; src's handle must be dst's."""
    cdef int32_t i = src.hid
    dst.hid = i
    dst.prev = src.prev
    dst.next = src.next
    if src.prev != NULL:
        (<_Extra>src.prev).next = <PyObject*>dst
    else:
        _hhead[i] = <PyObject*>dst
    if src.next != NULL:
        (<_Extra>src.next).prev = <PyObject*>dst
    src.hid = 0
    src.prev = src.next = NULL
