"""View ops, functionalised as torch 2.13 records them for LTC (``*_copy`` ops, each result registered as
a view of its input: accel.lazy.inplace), and cat."""
from accel.lazy import _dtypes as D
from accel.lazy import inplace as _inplace
from accel.lazy._optable import Kernel, classes, declare
from accel.lazy.ops.reductions import _reduce
from accel.lazy.tensors import (
    ALL_DIMS, LazyTensor, Node, _check_tensor, _dim_list, _emit, _fmt_size, _fn_counter, _index, _int_list,
    _needs_args, _norm_dim, _op, _seed)


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


# ---------------------------------------------------------------- kernels
def _k_reshape(k):
    k.line(f"{k.out} = _reshape({k.x}, {tuple(k.shape.sizes)!r})")


def _k_t(k):
    k.line(f"{k.out} = _transpose({k.x})")


def _k_permute(k):
    k.line(f"{k.out} = _transpose({k.x}, {k.attrs[1]!r})")


def _k_expand(k):
    k.line(f"{k.out} = _broadcast_to({k.x}, {tuple(k.shape.sizes)!r})")


def _k_tensor_list(k):
    k.line(f"{k.out} = ({', '.join(k.ins)},)")


def _k_cat(k):
    axis, keep = k.attrs[1]
    x = k.x
    if keep is not None:         # legacy empty 1-D operands take no part
        x = f"({''.join(f'{x}[{i}], ' for i in keep)})"
    if keep == ():
        k.line(f"{k.out} = _zeros((0,), {k.dt})")
    else:
        k.line(f"{k.out} = _concatenate({x}, axis={axis}, dtype={k.dt}, casting='same_kind')")


# ---------------------------------------------------------------- the declarations
def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _view_m(self, *shape):
    return _view(self, _needs_args(shape, "view", "size"), "view_copy_symint")


def _reshape_m(self, *shape):
    return _view(self, _needs_args(shape, "reshape", "shape"), "view_copy_symint")


def _t_m(self):
    return _t(self)


def _transpose_m(self, dim0, dim1):
    return _transpose(self, dim0, dim1)


def _permute_m(self, *dims):
    return _permute(self, _needs_args(dims, "permute", "dims"))


def _unsqueeze_m(self, dim):
    return _unsqueeze(self, dim)


def _squeeze_m(self, dim=None):
    return _squeeze(self, dim)


def _expand_m(self, *sizes):
    return _expand(self, _needs_args(sizes, "expand", "size"))


def reshape(input, shape):
    return _input(input, "reshape").reshape(shape)


def t(input):
    return _input(input, "t").t()


def transpose(input, dim0, dim1):
    return _input(input, "transpose").transpose(dim0, dim1)


def permute(input, dims):
    return _input(input, "permute").permute(dims)


def unsqueeze(input, dim):
    return _input(input, "unsqueeze").unsqueeze(dim)


def squeeze(input, dim=None):
    return _input(input, "squeeze").squeeze(dim)


_RESHAPE = Kernel("reshape", _k_reshape, view=True)
declare("view", {"view": _view_m, "reshape": _reshape_m}, {"reshape": reshape}, [_RESHAPE])
declare("t", {"t": _t_m}, {"t": t}, [Kernel("aten::t_copy", _k_t, view=True)])
declare("transpose", {"transpose": _transpose_m}, {"transpose": transpose},
        [Kernel("permute", _k_permute, view=True)])
declare("permute", {"permute": _permute_m}, {"permute": permute})
declare("unsqueeze", {"unsqueeze": _unsqueeze_m}, {"unsqueeze": unsqueeze})
declare("squeeze", {"squeeze": _squeeze_m}, {"squeeze": squeeze})
declare("expand", {"expand": _expand_m}, {}, [Kernel("expand", _k_expand, view=True)])
declare("cat", {}, {"cat": cat},
        [Kernel("lazy_tensors::tensor_list", _k_tensor_list), Kernel("aten::cat", _k_cat)])


def _squeeze_class(node, attrs):
    return "SqueezeCopyDim" if attrs is not None and attrs[2] else "SqueezeCopy"


classes(**{"aten::view_copy": "ViewCopy", "aten::t_copy": "TCopy", "aten::transpose_copy": "TransposeCopyInt",
           "aten::permute_copy": "PermuteCopy", "aten::unsqueeze_copy": "UnsqueezeCopy",
           "aten::expand_copy": "ExpandCopy", "aten::cat": "Cat", "lazy_tensors::tensor_list": "TensorList",
           "lazy_tensors::device_data": "DeviceData", "aten::squeeze_copy": _squeeze_class})
