"""In-place ops on lazy tensors, functionalised as torch 2.13 records them for LTC.

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

from accel.lazy import _dtypes as D
from accel.lazy import tensors as T


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
        x = T._to(x, t.dtype, layout=True)
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
        r = T._to(r, t.dtype, layout=True)
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


# ---------------------------------------------------------------- the ops
def _tname(code):
    return "torch." + str(D.CODE_TO_NP[code])


def _check_sizes(t, sizes):
    if tuple(sizes) != tuple(t._shape.sizes):
        out = tuple(sizes)
        raise RuntimeError(f"output with shape torch.Size({list(t._shape.sizes)}) doesn't match the broadcast "
                           f"shape {out!r}")


def _other_info(t, other, what):
    """(broadcast sizes, result dtype code) of ``t op other`` (a tensor or a Python number)."""
    s = t._shape
    if type(other) is T.LazyTensor:
        sizes = T._broadcast(s.sizes, other._shape.sizes)
        code = D.result_type(((s.dtype, T._prio(t)), (other._shape.dtype, T._prio(other))))
        return sizes, code, other._shape.dtype
    v = T._as_number(other)
    if v is None:
        raise TypeError(f"{what}(): expected a lazy tensor or a Python number as 'other', got "
                        f"{type(other).__name__}: {other!r}")
    vc = T._scalar_code(v)
    return s.sizes, D.result_type(((s.dtype, T._prio(t)), (vc, D.WRAPPED))), vc


def _unsafe_cast(t, code):
    tc = t._shape.dtype
    if D.category(code) > D.category(tc):
        raise RuntimeError(f"Attempting to cast from {_tname(code)} to out tensor with dtype {_tname(tc)}, but "
                           "this can't be cast because it is not safe!")


def _begin(t, what):
    T._check_tensor(t, f"{what}() self")
    sync(t)


def add_(t, other, alpha=1, name="add"):
    _begin(t, name + "_")
    sizes, code, _ = _other_info(t, other, name + "_")
    _check_sizes(t, sizes)
    tc = t._shape.dtype
    if tc == D.BOOL and code != D.BOOL:
        raise RuntimeError("Promotion of bool.add/sub_(others) in in-place ops are not possible due to element "
                           "size change.")
    if tc in D.INTS and code in D.FLOATS:
        raise RuntimeError("Promotion of int.add/sub_(float) in in-place ops are not possible due to element "
                           "size change.")
    r = t.add(other, alpha=alpha) if name == "add" else t.sub(other, alpha=alpha)
    return commit(t, r)


def sub_(t, other, alpha=1):
    return add_(t, other, alpha, "sub")


def mul_(t, other):
    _begin(t, "mul_")
    sizes, _, _ = _other_info(t, other, "mul_")
    _check_sizes(t, sizes)
    return commit(t, t.mul(other))


def div_(t, other):
    _begin(t, "div_")
    sizes, code, _ = _other_info(t, other, "div_")
    _check_sizes(t, sizes)
    tc = t._shape.dtype
    if tc not in D.FLOATS:
        code = code if code in D.FLOATS else D.DEFAULT_FLOAT
        raise RuntimeError(f"result type {_tname(code)} can't be cast to the desired output type {_tname(tc)}")
    return commit(t, t.div(other))


def pow_(t, other):
    _begin(t, "pow_")
    sizes, code, _ = _other_info(t, other, "pow_")
    _check_sizes(t, sizes)
    _unsafe_cast(t, code)
    return commit(t, t.pow(other))


def clamp_(t, min=None, max=None):
    _begin(t, "clamp_")
    r = t.clamp(min, max)
    _unsafe_cast(t, r._shape.dtype)          # a refused clamp_ leaves t as it was (r is dropped)
    return commit(t, r)


def unary_(t, name):
    _begin(t, name + "_")
    code = t._shape.dtype
    if name == "relu" and code == D.BOOL:
        raise RuntimeError("Boolean inputs not supported for relu")
    if name in T._UNARY_FLOAT or name == "sin":
        if code not in D.FLOATS:
            _unsafe_cast(t, D.DEFAULT_FLOAT)
    return commit(t, getattr(t, name)())


def zero_(t):
    _begin(t, "zero_")
    T._fn_counter("zero")[0] += 1
    s = t._shape
    return commit(t, T._emit("aten::zero", (t._ir(),), s.dtype, s.sizes))


_FLOAT_NAMES = {D.FLOAT16: "c10::Half", D.FLOAT32: "float", D.FLOAT64: "double"}


def _fill_value(v, code):
    """``v`` converted to dtype ``code`` as torch converts a fill value (errors as torch's)."""
    import math
    import numpy as np
    if type(v) is int and not -(1 << 63) <= v < (1 << 64):       # torch's Python-int-to-Scalar conversion
        raise OverflowError("int too big to convert" if v > 0 else "can't convert negative int to unsigned")
    if code == D.BOOL:
        return bool(v)
    if code in D.INTS:
        return D.checked_int(v, code)
    f = float(v)
    with np.errstate(over="ignore"):
        c = float(np.array(f, D.CODE_TO_NP[code]))
    if math.isfinite(f) and not math.isfinite(c):
        raise RuntimeError(f"value cannot be converted to type {_FLOAT_NAMES[code]} without overflow")
    return c


def fill_(t, value):
    _begin(t, "fill_")
    v = T._as_number(value)
    if v is None:
        raise TypeError(f"fill_(): value must be a Python number, got {type(value).__name__}: {value!r}")
    s = t._shape
    code = s.dtype
    v = _fill_value(v, code)
    T._fn_counter("fill_")[0] += 1
    key = T._scalar_key(code, v)
    import numpy as np
    d = T._cached_data(key, lambda: np.array(v, D.CODE_TO_NP[code]))
    x = T._dd(T._shape(code, ()), d)
    if not s.sizes:                  # GetIrValueForExpandedScalar: a 0-dim tensor takes the scalar itself
        return commit(t, T._wrap(x, s))
    sizes = list(s.sizes)
    # LTC's hand-written Expand node: a TsNode hashed before its shape is computed (the shape is not hashed)
    n = T.Node(T._op("aten::expand"), (x,), (), 1, T._seed(sizes, True))
    n.add_computed_shape(s)
    T.set_attrs(n, "fill", None, f"size={T._dim_list(sizes)}, is_scalar_expand=1")
    return commit(t, T._wrap(n, s))


def copy_(t, src):
    """copy_(src): torch's functionalisation turns it into aten::copy, which LTC runs eagerly (CPU fallback)."""
    _begin(t, "copy_")
    T._check_tensor(src, "copy_() src")
    sizes = T._broadcast(t._shape.sizes, src._shape.sizes)
    if tuple(sizes) != tuple(t._shape.sizes):
        raise RuntimeError(f"output with shape {T._fmt_size(t._shape.sizes)} doesn't match the broadcast shape "
                           f"{T._fmt_size(sizes)}")
    return commit(t, T._fallback("aten::copy", "copy", [t, src], t._shape.dtype))
