"""Functionalisation of lazy tensors as torch 2.13 records it for LTC: views, aliases and in-place updates
(the in-place ops themselves are in accel.lazy.ops.inplace).

torch wraps every lazy tensor in a FunctionalTensorWrapper sharing a storage (FunctionalStorageImpl) with
its aliases.  An in-place op syncs its inputs, computes the out-of-place result (cast back with
``_to_copy`` when its dtype differs), makes it the tensor's new value, queues it on the storage
(``commit_update``: the storage's generation goes up) and syncs the tensor: the update is written into
the storage's base through the inverse view ops of the tensor's view chain, and the tensor is
regenerated from the new base (its view chain replayed, then cast to its dtype if an inverse changed the
base's, as ``replace_`` does).  A tensor is up to date while its generation is the storage's; the first
non-view op that reads a stale one regenerates it.  Until then its IR text still shows the value it had
(what LTC's ``_get_tensors_text`` prints).  A view op does not sync its input: it views the input's
(possibly old) value, and the view is born at generation 0, so a view of a storage that was ever updated
is stale from birth and regenerated from the base when first read (fuzz p331, p419).  Views inside
composite ops (matmul's unsqueeze / reshape / expand) follow the same rule (``internal_view``), and
matmul's result is itself a view (``squeeze_`` / ``_unsafe_view``) of its mm / bmm output.

Here: a tensor that is a view, or has views, has an ``Alias`` in its ``_base`` slot (storage, view metas
from the root, generation).  A plain tensor's slot holds None, ``_MUTATED`` once it was updated in place
(its storage's generation, should it get views, is not 0), or a pending view (matmul's result: the Alias
is built only when needed).  A stale tensor's own fields are empty (so every op, fast paths included,
reaches ``LazyTensor._ir`` and regenerates it); the value it had lives on in a hidden tensor (``stale``),
which is what get_tensors_text / get_graph_hash / sync_multi see and mark_step syncs, as LTC syncs the
wrapper's old inner tensor.  The storage's base is the root tensor itself while that is up to date (and
not a cast of the base), else a hidden tensor holding the newest base.
"""
import weakref

from accel.lazy import tensors as T
from accel.lazy.ops.casts import to_copy as _to_copy


class _Storage:
    """FunctionalStorageImpl: ``base`` (None: the root tensor's own value; else a hidden tensor), ``gen``
    (bumped by each update) and weak references to the tensors sharing it."""
    __slots__ = ("base", "gen", "members")

    def __init__(self):
        self.base = None
        self.gen = 0
        self.members = []


class Alias:
    """A tensor's place in a storage: ``metas`` ((forward, reverse) per view op from the root), ``gen`` (the
    storage generation its value reflects), ``stale`` (hidden tensor with the value it had, while stale),
    ``root`` (the root tensor; None for the root, and for a storage whose base is hidden: matmul's) and
    ``parent`` (the tensor the view was taken of: a view keeps it alive, as torch's functionalised views do,
    so mark_step syncs it too)."""
    __slots__ = ("storage", "metas", "gen", "stale", "root", "parent")

    def __init__(self, storage, metas, gen, root, parent):
        self.storage = storage
        self.metas = metas
        self.gen = gen
        self.stale = None
        self.root = root
        self.parent = parent

    def __repr__(self):
        return f"<Alias of {self.root!r}, {len(self.metas)} view op(s){', stale' if self.stale is not None else ''}>"


# In a plain tensor's ``_base`` slot: it was updated in place (its storage's generation is not 0 any more).
_MUTATED = "mutated"


def _alias_of(a):
    al = a._base
    if type(al) is not Alias:
        s = _Storage()
        if type(al) is tuple:            # a pending view of a hidden base (pending_view)
            base, meta_of, arg = al
            s.base = base
            al = Alias(s, (meta_of(arg),), 0, None, None)
        else:
            if al is _MUTATED:
                s.gen = 1
            al = Alias(s, (), s.gen, None, None)
        a._base = al
        s.members.append(weakref.ref(a))
    return al


def pending_view(t, base, meta_of, arg):
    """Make ``t`` a view (meta ``meta_of(arg)``) of ``base``, an internal tensor nobody else holds: torch's
    matmul returns ``_unsafe_view`` / ``squeeze_`` of its mm / bmm output, a view of a storage whose base is
    that output (kept alive, so mark_step syncs it).  The Alias is built only when ``t`` gets a view or an
    in-place update, so tracing a matmul pays one tuple."""
    t._base = (base, meta_of, arg)
    return t


def register_view(a, t, meta):
    """Make ``t`` (just traced from ``a``) a view of ``a``: same storage, ``a``'s view chain plus ``meta``."""
    al = _alias_of(a)
    s = al.storage
    t._base = Alias(s, al.metas + (meta,), 0, al.root if al.metas else a, a)
    s.members.append(weakref.ref(t))
    if s.gen:                        # born at generation 0: stale once the storage has been updated
        _make_stale(t)
    return t


def current(t):
    """The tensor whose fields hold ``t``'s value as LTC's text / hash / sync see it (no regeneration)."""
    al = t._base
    if type(al) is Alias and al.stale is not None:
        return al.stale
    return t


def _regenerate(t, al, view=None):
    """``t``'s value replayed from its storage's base through its view chain (then ``view``), cast to
    ``t``'s dtype when an inverse changed the base's (FunctionalTensorWrapper::replace_'s ``_to_copy``)."""
    s = al.storage
    x = s.base if s.base is not None else (t if not al.metas else al.root)
    for fwd, _ in al.metas:
        x = fwd(x)
    if view is not None:
        x = view(x)
    if x._shape.dtype != t._shape.dtype:
        x = _to_copy(x, t.dtype, layout=True)
    return x


def internal_view(a, view):
    """``view(a)`` for a view inside a composite op (matmul's unsqueeze / reshape / expand), as the op reads
    it: torch's view is born at generation 0, so once ``a``'s storage has been updated it is regenerated from
    the storage's base through ``a``'s view chain (new nodes) when read, and ``a`` itself is left as it is (a
    view op does not sync its input).  Plainly ``view(a)`` when ``a``'s storage was never updated."""
    al = a._base
    if type(al) is not Alias or not al.storage.gen:
        return view(a)
    return _regenerate(a, al, view)


def _take(t, x):
    t._node, t._handle, t._src = x._node, x._handle, x._src


def sync(t):
    """Regenerate ``t`` from its storage's base if an update to an alias made it stale; True if it did."""
    al = t._base
    if type(al) is not Alias or al.gen == al.storage.gen:
        return False
    with T.device_lock:
        return _sync(t, al)


def _sync(t, al):
    s = al.storage
    if al.gen == s.gen:
        return False
    x = _regenerate(t, al)
    if not al.metas and x is s.base:  # the root holds the base again (not a cast of it)
        s.base = None
    _take(t, x)
    al.gen = s.gen
    al.stale = None
    return True


def _make_stale(m):
    h = T._wrap_plain(m._node, m._shape)
    h._handle, h._src = m._handle, m._src
    m._node = m._handle = m._src = None
    m._base.stale = h


def commit(t, r):
    """Make ``r`` (the out-of-place result, of ``t``'s sizes) the new value of ``t`` and of its aliases.
    Under the device lock: a sync on another thread (mark_step, numpy()) tests that a tensor's IR is the
    one it computed and then hands it the value; an update must not fall between the two."""
    if r._shape.dtype != t._shape.dtype:
        r = _to_copy(r, t.dtype, layout=True)
    with T.device_lock:
        return _commit(t, r)


def _commit(t, r):
    al = t._base
    if type(al) is not Alias:
        if type(al) is not tuple:
            _take(t, r)
            t._base = _MUTATED
            return t
        al = _alias_of(t)
    s = al.storage
    metas = al.metas
    if metas:
        base = s.base if s.base is not None else al.root
        tmp = [base]
        for fwd, _ in metas[:-1]:
            tmp.append(fwd(tmp[-1]))
        x = r
        for i in range(len(metas) - 1, -1, -1):
            x = metas[i][1](tmp[i], x)
    s.gen += 1
    live = []
    for ref in s.members:
        m = ref()
        if m is None:
            continue
        live.append(ref)
        ma = m._base
        if m is not t and type(ma) is Alias and ma.storage is s and ma.stale is None:
            _make_stale(m)
    s.members = live
    if metas:
        s.base = x
        _sync(t, al)
    else:
        _take(t, r)
        s.base = None
        al.gen = s.gen
        al.stale = None
    return t


T.install_runtime(alias_sync=sync)
