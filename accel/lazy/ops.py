"""The lazy tensor ops beyond elementwise arithmetic, traced as LTC's TorchScript backend records them:
clamp, the matmul family (as torch decomposes matmul), reductions, the functionalised view ops
(``*_copy``), softmax / log_softmax, ``_to_copy`` and cat."""

from accel.lazy import _dtypes as D
from accel.lazy import inplace as _inplace
from accel.lazy.tensors import (  # noqa: F401
    ALL_DIMS, LazyTensor, Node, _NULL, _as_number, _check_tensor, _dim_list, _dtype_hash, _dtype_name, _emit, _fallback,
    _fmt_size, _fn_counter, _hash, _index, _int_list, _norm_dim, _op, _prio, _scalar_code, _scalar_node, _seed)


def _clamp(a, lo, hi):
    _check_tensor(a, "clamp() input")
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    lov = None if lo is None else _as_number(lo)
    hiv = None if hi is None else _as_number(hi)
    if (lo is not None and lov is None) or (hi is not None and hiv is None):
        raise TypeError(f"clamp(): min and max must be Python numbers or None, got min={lo!r}, max={hi!r}")
    s = a._shape
    ops = [(s.dtype, _prio(a))] + [(_scalar_code(v), D.WRAPPED) for v in (lov, hiv) if v is not None]
    code = D.result_type(ops)
    _fn_counter("clamp")[0] += 1
    x = a._ir()
    operands = (x, None if lov is None else _scalar_node(lov), None if hiv is None else _scalar_node(hiv))
    return _emit("aten::clamp", operands, code, s.sizes, None, "aten::clamp", (lov is not None, hiv is not None))


# ---------------------------------------------------------------- matmul family
def _mat_check(a, b, what):
    _check_tensor(a, f"{what}() input")
    _check_tensor(b, f"{what}() other")
    if a._shape.dtype != b._shape.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype_name(a._shape.dtype)} "
                           f"!= {_dtype_name(b._shape.dtype)}")


def mm(a, b):
    """Matrix product of two 2-D tensors (aten::mm)."""
    _mat_check(a, b, "mm")
    sa, sb = a._shape.sizes, b._shape.sizes
    if len(sa) != 2 or len(sb) != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {len(sa)}D and {len(sb)}D "
                           f"(shapes {_fmt_size(sa)} and {_fmt_size(sb)})")
    if sa[1] != sb[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})")
    _fn_counter("mm")[0] += 1
    return _emit("aten::mm", (a._ir(), b._ir()), a._shape.dtype, (sa[0], sb[1]))


def bmm(a, b):
    """Batched matrix product of two 3-D tensors (aten::bmm)."""
    _mat_check(a, b, "bmm")
    sa, sb = a._shape.sizes, b._shape.sizes
    if len(sa) != 3 or len(sb) != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor and batch2 must be a 3D tensor, got shapes "
                           f"{_fmt_size(sa)} and {_fmt_size(sb)}")
    if sa[0] != sb[0] or sa[2] != sb[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] "
                           f"but got: [{sb[0]}, {sb[1]}].")
    _fn_counter("bmm")[0] += 1
    return _emit("aten::bmm", (a._ir(), b._ir()), a._shape.dtype, (sa[0], sa[1], sb[2]))


def _mv(a, b):
    _fn_counter("mv")[0] += 1
    sa, sb = a._shape.sizes, b._shape.sizes
    if sa[1] != sb[0]:
        raise RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({sa[0]}x{sa[1]}), vec ({sb[0]})")
    return _emit("aten::mv", (a._ir(), b._ir()), a._shape.dtype, (sa[0],))


def matmul(a, b):
    """torch.matmul, decomposed as torch does before LTC sees it: mm / mv / unsqueeze+mm+squeeze /
    view+mm+view (N-D @ 2-D) / expand+view+bmm+view (batched), and dot (1-D @ 1-D) eagerly."""
    _mat_check(a, b, "matmul")
    sa, sb = a._shape.sizes, b._shape.sizes
    da, db = len(sa), len(sb)
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have "
                               f"the same number of elements, but got {sa[0]} and {sb[0]} elements respectively")
        if a._shape.dtype == D.BOOL:
            raise NotImplementedError('"dot" not implemented for \'Bool\'')
        return _fallback("aten::dot", "dot", [a, b], a._shape.dtype)
    if da == 2 and db == 2:
        return mm(a, b)
    if da == 2 and db == 1:
        return _mv(a, b)
    # torch's views inside matmul (unsqueeze, reshape, expand) read a regenerated value of an alias whose
    # storage was updated (_internal_view); its result is a view of the mm / bmm output (pending_view)
    if da == 1 and db == 2:
        out = mm(_internal_view(a, _unsqueeze0), b)
        return _inplace.pending_view(_squeeze(out, 0, False), out, _squeeze_meta, 0)   # torch's squeeze_(0)
    if da >= 3 and db == 2:
        if sa[-1] != sb[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({_numel(sa[:-1])}x{sa[-1]} and {sb[0]}x{sb[1]})")
        folded = _internal_view(a, lambda x: _view(x, (_numel(sa[:-1]), sa[-1]), "_unsafe_view", False))
        return _unsafe_view(mm(folded, b), sa[:-1] + (sb[1],))
    if da >= 3 and db >= 3 and sa[:-2] == sb[:-2]:
        if sa[-1] != sb[-2]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{_numel(sa[:-2])}, {sa[-1]}] but got: [{_numel(sb[:-2])}, {sb[-2]}].")
        batch = _numel(sa[:-2])
        x = _internal_view(a, lambda t: _view(_expand(t, sa, False), (batch,) + sa[-2:], "view_copy_symint", False))
        y = _internal_view(b, lambda t: _view(_expand(t, sb, False), (batch,) + sb[-2:], "view_copy_symint", False))
        return _unsafe_view(bmm(x, y), sa[:-2] + (sa[-2], sb[-1]))
    raise NotImplementedError(f"matmul of shapes {_fmt_size(sa)} and {_fmt_size(sb)} is not supported by accel.lazy "
                              "(supported: 1-D/2-D operands, N-D @ 2-D, and N-D @ N-D with equal batch sizes)")


def _internal_view(a, view):
    return view(a) if a._base is None else _inplace.internal_view(a, view)


def _unsqueeze0(x):
    return _unsqueeze(x, 0, False)


def _squeeze_meta(dim):
    return (lambda x: _squeeze(x, dim, False), lambda base, m: _unsqueeze_to(m, base._shape.sizes, dim))


def _unsafe_view_meta(size):
    return (lambda x: _view(x, size, "_unsafe_view", False),
            lambda base, m: _view(m, base._shape.sizes, "_unsafe_view", False))


def _unsafe_view(out, size):
    """torch's ``_unsafe_view`` of a fresh mm / bmm output: functionalised as a view of it."""
    return _inplace.pending_view(_view(out, size, "_unsafe_view", False), out, _unsafe_view_meta, size)


def _numel(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def _check_numel(sizes):
    """c10's safe_compute_numel: the product of ``sizes`` taken in uint64 with a sticky overflow flag (so a
    later zero does not hide it), then checked against int64's maximum."""
    prod, overflow = 1, False
    for n in sizes:
        prod *= n
        if prod >= 1 << 64:
            overflow = True
            prod &= (1 << 64) - 1
    if overflow or prod >= 1 << 63:
        raise RuntimeError("numel: integer multiplication overflow")


# ---------------------------------------------------------------- reductions
def _reduce(name, a, dim, keepdim):
    _check_tensor(a, f"{name}() input")
    if type(keepdim) is not bool:
        raise TypeError(f"{name}(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    s = a._shape
    code = s.dtype
    if name == "sum":
        if code not in D.FLOATS:
            code = D.INT64
    elif code not in D.FLOATS:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {_dtype_name(code)}")
    if dim is ALL_DIMS and keepdim:
        raise TypeError(f"{name}(): keepdim=True needs dim (torch's {name}() without dim takes no keepdim)")
    _fn_counter(name)[0] += 1
    nd = len(s.sizes)
    if dim is ALL_DIMS:
        return _emit("aten::" + name, (a._ir(),), code, (), _seed(None), "aten::" + name + ".all", None,
                     "dtype=null")
    if dim is None:
        dims = None
        axes = tuple(range(nd))
    else:
        dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
        dims = _int_list(dims, f"{name}() dim") if dims else []
        axes = tuple(_norm_dim(d, nd) for d in dims)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
        if not axes:
            axes = tuple(range(nd))
    sizes = tuple((1 if i in axes else n) for i, n in enumerate(s.sizes) if keepdim or i not in axes)
    tags = f"dim={'null' if dims is None else _dim_list(dims)}, keepdim={int(keepdim)}, dtype=null"
    return _emit("aten::" + name, (a._ir(),), code, sizes, _seed(dims, keepdim, None),
                 "aten::" + name + ".dim", (axes, keepdim), tags)


def _amax(a, dim, keepdim):
    _check_tensor(a, "amax() input")
    nd = a.ndim
    dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
    axes = tuple(_norm_dim(d, nd) for d in _int_list(dims, "amax() dim"))
    if type(keepdim) is not bool:
        raise TypeError(f"amax(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    sizes = a._shape.sizes
    if not axes and 0 in sizes:
        raise RuntimeError("amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    for d in axes:
        if sizes and sizes[d] == 0:
            raise IndexError(f"amax(): Expected reduction dim {d} to have non-zero size.")
    axes = axes or tuple(range(nd))
    return _fallback("aten::amax", ("amax", axes, keepdim), [a], a._shape.dtype)


# ---------------------------------------------------------------- views (functionalised *_copy ops)
def _view_input(a, alias):
    """The IR a view op reads: functionalisation's view kernels do not regenerate a stale alias, they view
    its old value (the new view is stale too, and regenerated when used); internal views (alias False:
    temporaries, view replays) read the current value."""
    if alias:
        return _inplace.current(a)._ir()
    return a._ir()


def _view_of(a, t, fwd, rev):
    """Register ``t`` as a view of ``a`` (functionalisation: an in-place op on either updates the other).
    ``fwd(x)`` replays the view on x, ``rev(base, mutated)`` writes a mutated view back into its base, as
    torch's ViewMeta forward / reverse functions (FunctionalInverses) do."""
    return _inplace.register_view(a, t, (fwd, rev))


def _infer_size(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = _numel([s for s in shape if s != -1])
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{_fmt_size(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{_fmt_size(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _view(a, shape, counter, alias=True):
    _check_tensor(a, "view() input")
    size = _int_list(shape, "view() size")
    s = a._shape
    out = _infer_size(size, _numel(s.sizes))
    _fn_counter(counter)[0] += 1
    t = _emit("aten::view_copy", (_view_input(a, alias),), s.dtype, out, _seed(size), "reshape", None, "size=" + _dim_list(size))
    if alias:
        t = _view_of(a, t, lambda x: _view(x, size, counter, False),
                     lambda base, m: _view(m, base._shape.sizes, counter, False))
    return t


def _t(a, alias=True):
    _check_tensor(a, "t() input")
    s = a._shape
    if len(s.sizes) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {len(s.sizes)}D")
    _fn_counter("t_copy")[0] += 1
    t = _emit("aten::t_copy", (_view_input(a, alias),), s.dtype, tuple(reversed(s.sizes)), None, "aten::t_copy")
    if not alias:
        return t
    return _view_of(a, t, _t_raw, lambda base, m: _t_raw(m))


def _t_raw(x):
    return _t(x, False)


def _transpose(a, d0, d1, alias=True):
    _check_tensor(a, "transpose() input")
    s = a._shape
    nd = len(s.sizes)
    i, j = _norm_dim(d0, nd, "dim0"), _norm_dim(d1, nd, "dim1")
    sizes = list(s.sizes)
    if nd:
        sizes[i], sizes[j] = sizes[j], sizes[i]
    perm = list(range(nd))
    if nd:
        perm[i], perm[j] = perm[j], perm[i]
    _fn_counter("transpose_copy")[0] += 1
    d0, d1 = _index(d0, "dim0"), _index(d1, "dim1")
    t = _emit("aten::transpose_copy", (_view_input(a, alias),), s.dtype, tuple(sizes), _seed(d0, d1), "permute", tuple(perm),
              f"dim0={d0}, dim1={d1}")
    if not alias:
        return t
    return _view_of(a, t, lambda x: _transpose(x, d0, d1, False), lambda base, m: _transpose(m, d0, d1, False))


def _permute(a, dims, alias=True):
    _check_tensor(a, "permute() input")
    dims = _int_list(dims, "permute() dims")
    s = a._shape
    nd = len(s.sizes)
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
                           f"len(dims) = {len(dims)}")
    perm = tuple(_norm_dim(d, nd) for d in dims)
    if len(set(perm)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {dims}")
    _fn_counter("permute_copy")[0] += 1
    t = _emit("aten::permute_copy", (_view_input(a, alias),), s.dtype, tuple(s.sizes[p] for p in perm), _seed(dims), "permute",
              perm, "dims=" + _dim_list(dims))
    if not alias:
        return t
    inverse = [0] * nd
    for i, p in enumerate(perm):
        inverse[p] = i
    return _view_of(a, t, lambda x: _permute(x, dims, False), lambda base, m: _permute(m, inverse, False))


def _unsqueeze(a, dim, alias=True):
    _check_tensor(a, "unsqueeze() input")
    s = a._shape
    nd = len(s.sizes)
    d = _index(dim, "unsqueeze(): dim")
    if not -(nd + 1) <= d <= nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-(nd + 1)}, {nd}], but got {d})")
    pos = d + nd + 1 if d < 0 else d
    sizes = s.sizes[:pos] + (1,) + s.sizes[pos:]
    _fn_counter("unsqueeze_copy")[0] += 1
    t = _emit("aten::unsqueeze_copy", (_view_input(a, alias),), s.dtype, sizes, _seed(d), "reshape", None, f"dim={d}")
    if not alias:
        return t
    return _view_of(a, t, lambda x: _unsqueeze(x, d, False), lambda base, m: _squeeze(m, d, False))


def _squeeze(a, dim=None, alias=True):
    _check_tensor(a, "squeeze() input")
    s = a._shape
    if dim is None:
        _fn_counter("squeeze_copy")[0] += 1
        sizes = tuple(n for n in s.sizes if n != 1)
        t = _emit("aten::squeeze_copy", (_view_input(a, alias),), s.dtype, sizes, None, "reshape")
    else:
        d = _index(dim, "squeeze(): dim")
        pos = _norm_dim(d, len(s.sizes))
        _fn_counter("squeeze_copy")[0] += 1
        sizes = s.sizes if not s.sizes or s.sizes[pos] != 1 else s.sizes[:pos] + s.sizes[pos + 1:]
        t = _emit("aten::squeeze_copy", (_view_input(a, alias),), s.dtype, sizes, _seed(d), "reshape", None, f"dim={d}")
    if not alias:
        return t
    return _view_of(a, t, lambda x: _squeeze(x, dim, False), lambda base, m: _unsqueeze_to(m, base._shape.sizes, dim))


def _unsqueeze_to(m, sizes, dim):
    """torch's unsqueeze_copy_to (the inverse of squeeze): unsqueeze_copy at each squeezed size-1 dim of ``sizes``."""
    if dim is None:
        dims = range(len(sizes))
    else:
        dims = (_norm_dim(dim, len(sizes)),) if sizes else ()
    for d in dims:
        if sizes[d] == 1:
            m = _unsqueeze(m, d, False)
    return m


def _expand(a, sizes, alias=True):
    _check_tensor(a, "expand() input")
    size = _int_list(sizes, "expand() size")
    s = a._shape
    nd, n = len(s.sizes), len(size)
    if n < nd:
        raise RuntimeError(f"expand(torch.FloatTensor{{{_fmt_size(s.sizes)}}}, size={_fmt_size(size)}): the number "
                           f"of sizes provided ({n}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({nd})")
    out = []
    for i, want in enumerate(size):
        j = i - (n - nd)
        have = s.sizes[j] if j >= 0 else 1
        if want == -1:
            if j < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            want = have
        elif have != want and have != 1:
            raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing size ({have}) at "
                               f"non-singleton dimension {i}.  Target sizes: {_fmt_size(size)}.  Tensor sizes: "
                               f"{_fmt_size(s.sizes)}")
        out.append(want)
    _check_numel(out)
    _fn_counter("expand_copy_symint")[0] += 1
    t = _emit("aten::expand_copy", (_view_input(a, alias),), s.dtype, tuple(out), _seed(size, False), "expand", None,
              f"size={_dim_list(size)}, implicit=0")
    if not alias:
        return t
    return _view_of(a, t, lambda x: _expand(x, size, False), _expand_inverse)


def _expand_inverse(base, m):
    """torch's expand inverse (FunctionalInverses, NeverView): base + sum_to(mutated - base, base.sizes)."""
    bs, ms = base._shape.sizes, m._shape.sizes
    diff = m.sub(base)
    if not bs:
        return base.add(_reduce("sum", diff, ALL_DIMS, False))   # at::sum_to to a 0-dim size: sum()
    lead = len(ms) - len(bs)
    dims = list(range(lead)) + [i for i in range(lead, len(ms)) if bs[i - lead] == 1 and ms[i] != 1]
    if dims:
        diff = _reduce("sum", diff, dims, True)
    if lead > 0:
        diff = _view(diff, bs, "view_copy_symint", False)
    return base.add(diff)


# ---------------------------------------------------------------- others
def _softmax(opname, a, dim):
    _check_tensor(a, f"{opname[1:]}() input")
    s = a._shape
    if s.dtype not in D.FLOATS and _numel(s.sizes):
        # LTC traces it and the run fails at mark_step; an empty one runs (an empty result of the input's dtype)
        raise RuntimeError(f"{opname[1:]}(): expected a floating point input, got {_dtype_name(s.dtype)}")
    d = _index(dim, f"{opname[1:]}(): dim")
    axis = _norm_dim(d, len(s.sizes))
    _fn_counter(opname)[0] += 1
    return _emit("aten::" + opname, (a._ir(),), s.dtype, s.sizes, _seed(d, False), "aten::" + opname, axis,
                 f"dim={d}, half_to_float=0")


_TO_COPY_NULLS = (_NULL, _NULL, _NULL)


_STRIDED = _hash.hash_scalar(0, "int8")        # c10::Layout::Strided


def _to(a, dtype, layout=False):
    """a.to(dtype): aten::_to_copy; ``layout``: with layout=Strided, as functionalisation casts an in-place
    op's result back to the tensor's dtype."""
    _check_tensor(a, "to() input")
    code = D.to_code(dtype, "to() dtype")
    s = a._shape
    if code == s.dtype:
        return a
    _fn_counter("_to_copy")[0] += 1
    nulls = (_STRIDED, _NULL, _NULL) if layout else _TO_COPY_NULLS
    seed = _hash.mhash_hashes((_dtype_hash(code),) + nulls + (_hash.hash_value(False), _NULL))
    return _emit("aten::_to_copy", (a._ir(),), code, s.sizes, seed, "aten::_to_copy", None,
                 f"dtype={_dtype_name(code)}, layout={'Strided' if layout else 'null'}, device=null, "
                 "pin_memory=null, non_blocking=0, memory_format=null")


def cat(tensors, dim=0):
    """Concatenate along ``dim``: a lazy_tensors::tensor_list node feeding aten::cat."""
    if isinstance(tensors, LazyTensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat() expects a list or tuple of lazy tensors, got {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        _check_tensor(t, f"cat() tensors[{i}]")
        if not t._shape.sizes:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    # torch's legacy rule: a 1-D empty tensor ([0]) takes part in the dtype only (no shape checks; skipped)
    keep = [i for i, t in enumerate(tensors) if t._shape.sizes != (0,)]
    d = _index(dim, "cat(): dim")
    if keep:
        first = tensors[keep[0]]._shape.sizes
        nd = len(first)
        axis = _norm_dim(d, nd)
        total = 0
        for i in keep:
            sz = tensors[i]._shape.sizes
            if len(sz) != nd:
                raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {len(sz)}")
            for k in range(nd):
                if k != axis and sz[k] != first[k]:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {axis}. Expected size "
                                       f"{first[k]} but got size {sz[k]} for tensor number {i} in the list.")
            total += sz[axis]
        sizes = first[:axis] + (total,) + first[axis + 1:]
    else:                            # only legacy empty tensors: dim is not even checked
        axis, sizes = 0, (0,)
    code = D.result_type([(t._shape.dtype, D.DIM) for t in tensors])
    _fn_counter("cat")[0] += 1
    lst = Node(_op("lazy_tensors::tensor_list"), [t._ir() for t in tensors], ())
    keep = None if len(keep) == len(tensors) else tuple(keep)
    return _emit("aten::cat", (lst,), code, sizes, _seed(d), "aten::cat", (axis, keep), f"dim={d}")
