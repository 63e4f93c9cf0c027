"""View ops, functionalised as torch 2.13 records them for LTC (``*_copy`` ops, each result registered as
a view of its input: accel.lazy.inplace), and cat."""
import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy import inplace as _inplace
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import fallback
from accel.lazy.ops.factories import _empty
from accel.lazy.ops.inplace import fill_ as _fill
from accel.lazy.ops.reductions import _reduce
from accel.lazy.tensors import (
    ALL_DIMS, LazyTensor, Node, _check_tensor, _dim_list, _emit, _fmt_size, _fn_counter, _index, _int_list,
    _as_number, _needs_args, _norm_dim, _op, _seed, _shape, _wrap_plain, set_attrs, trie_node)

_hash = _impl.module("_hash")


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


def expanded_sizes(sizes, size, type_name="FloatTensor"):
    """The sizes a tensor of ``sizes`` expanded to ``size`` has (-1 keeps a dim), with torch's messages
    (``type_name`` as expand's names the tensor's type)."""
    nd, n = len(sizes), len(size)
    if n < nd:
        raise RuntimeError(f"expand(torch.{type_name}{{{_fmt_size(sizes)}}}, size={_fmt_size(size)}): the number "
                           f"of sizes provided ({n}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({nd})")
    out = []
    for i, want in enumerate(size):
        j = i - (n - nd)
        have = sizes[j] if j >= 0 else 1
        if want == -1:
            if j < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            want = have
        elif have != want and have != 1:
            raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing size ({have}) at "
                               f"non-singleton dimension {i}.  Target sizes: {_fmt_size(size)}.  Tensor sizes: "
                               f"{_fmt_size(sizes)}")
        out.append(want)
    return out


def _expand(a, sizes, alias=True):
    _check_tensor(a, "expand() input")
    size = _int_list(sizes, "expand() size")
    s = a._shape
    out = expanded_sizes(s.sizes, size)
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
    lst = trie_node(Node(_op("lazy_tensors::tensor_list"), [t._ir() for t in tensors], ()))
    keep = None if len(keep) == len(tensors) else tuple(keep)
    return _emit("aten::cat", (lst,), code, sizes, _seed(d), "aten::cat", (axis, keep), f"dim={d}")


# ---------------------------------------------------------------- kernels
def _k_reshape(k):
    if k.buf:           # a copy, where numpy must make one, goes into this node's own buffer
        k.line(f"{k.out} = _reshape_into({k.x}, {tuple(k.shape.sizes)!r}, {k.buf})")
    else:
        k.line(f"{k.out} = _reshape({k.x}, {tuple(k.shape.sizes)!r})")


try:
    _np.reshape(_np.zeros(1), 1, copy=False)
    _VIEW_ONLY = True                    # numpy >= 2.1: reshape(copy=False) refuses to copy
except TypeError:
    _VIEW_ONLY = False


def _np_reshape_into(x, shape, buf):
    """``x`` reshaped (C order): a view where numpy can make one, else a copy written into ``buf`` (of
    ``shape``, the program's own buffer of this node, reused from step to step).  numpy < 2.1 cannot be asked
    for a view only: there numpy's reshape decides (a fresh array where it copies)."""
    if not _VIEW_ONLY:
        return _np.reshape(x, shape)
    try:
        return _np.reshape(x, shape, copy=False)
    except ValueError:                   # a copy is needed
        _np.copyto(buf.reshape(_np.shape(x)), x)
        return buf


helpers(_reshape_into=_np_reshape_into)


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
        # into the program's buffer when it gives one (a float result: numpy takes no dtype= with out=)
        into = f"out={k.buf}" if k.buf else f"dtype={k.dt}"
        k.line(f"{k.out} = _concatenate({x}, axis={axis}, {into}, casting='same_kind')")


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


_RESHAPE = Kernel("reshape", _k_reshape, view=True, out=True)
declare("view", {"view": _view_m, "reshape": _reshape_m}, {"reshape": reshape}, [_RESHAPE])
declare("t", {"t": _t_m}, {"t": t}, [Kernel("aten::t_copy", _k_t, view=True)])
declare("transpose", {"transpose": _transpose_m}, {"transpose": transpose},
        [Kernel("permute", _k_permute, view=True)])
declare("permute", {"permute": _permute_m}, {"permute": permute})
declare("unsqueeze", {"unsqueeze": _unsqueeze_m}, {"unsqueeze": unsqueeze})
declare("squeeze", {"squeeze": _squeeze_m}, {"squeeze": squeeze})
declare("expand", {"expand": _expand_m}, {}, [Kernel("expand", _k_expand, view=True)])
declare("cat", {}, {"cat": cat},
        [Kernel("lazy_tensors::tensor_list", _k_tensor_list), Kernel("aten::cat", _k_cat, out=True)])


def _squeeze_class(node, attrs):
    return "SqueezeCopyDim" if attrs is not None and attrs[2] else "SqueezeCopy"


classes(**{"aten::view_copy": "ViewCopy", "aten::t_copy": "TCopy", "aten::transpose_copy": "TransposeCopyInt",
           "aten::permute_copy": "PermuteCopy", "aten::unsqueeze_copy": "UnsqueezeCopy",
           "aten::expand_copy": "ExpandCopy", "aten::cat": "Cat", "lazy_tensors::tensor_list": "TensorList",
           "lazy_tensors::device_data": "DeviceData", "aten::squeeze_copy": _squeeze_class})


# ---------------------------------------------------------------- indexing and more views (issue 19)
_INT64_MAX = (1 << 63) - 1
_LONG_HASH = _hash.hash_scalar(D.INT64, "scalar_type")


def _const(v):
    """LTC's Scalar node for a SymInt argument given as a number: ``prim::Constant`` of a Long[] holding ``v``
    (a new node each time, hashed by MHash(ScalarHash(value), scalar type))."""
    n = Node(_op("prim::Constant"), (), (_shape(D.INT64, ()),), 1,
             _hash.mhash_hashes((_hash.hash_value(v), _LONG_HASH)))
    set_attrs(n, "prim::Constant", v, f"value={v}, type=Long")
    return n


def _slice(a, dim, start, end, step, alias=True):
    """aten::slice_copy(input, start, end, step), dim an attribute; start / end as given (Python's slice
    bounds, raw), normalised for the shape as torch's slice does."""
    _check_tensor(a, "slice() input")
    s = a._shape
    nd = len(s.sizes)
    if nd == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _norm_dim(dim, nd)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    n = s.sizes[d]
    lo = start + n if start < 0 else start
    hi = end + n if end < 0 else end
    lo = 0 if lo < 0 else (n if lo >= n else lo)
    hi = lo if hi < lo else (n if hi >= n else hi)
    sizes = s.sizes[:d] + ((hi - lo + step - 1) // step,) + s.sizes[d + 1:]
    _fn_counter("slice_copy_symint")[0] += 1
    operands = (_view_input(a, alias), _const(start), _const(end), _const(step))
    t = _emit("aten::slice_copy", operands, s.dtype, sizes, _seed(dim), "aten::slice_copy", (d, lo, hi, step),
              f"dim={dim}")
    if not alias:
        return t
    return _view_of(a, t, lambda x: _slice(x, dim, start, end, step, False),
                    lambda base, m: _slice_scatter(base, m, dim, start, end, step))


def _select(a, dim, index, alias=True, what="select()"):
    _check_tensor(a, "select() input")
    s = a._shape
    nd = len(s.sizes)
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = _index(dim, "select(): dim")
    index = _index(index, "select(): index")
    d = _norm_dim(dim, nd)
    n = s.sizes[d]
    if not -n <= index < n:
        if what == "getitem":
            raise IndexError(f"index {index} is out of bounds for dimension {d} with size {n}")
        raise IndexError(f"select(): index {index} out of range for tensor of size {_fmt_size(s.sizes)} at "
                         f"dimension {d}")
    _fn_counter("select_copy")[0] += 1
    idx = index + n if index < 0 else index
    t = _emit("aten::select_copy", (_view_input(a, alias),), s.dtype, s.sizes[:d] + s.sizes[d + 1:],
              _seed(dim, index), "aten::select_copy", (d, idx), f"dim={dim}, index={index}")
    if not alias:
        return t
    return _view_of(a, t, lambda x: _select(x, dim, index, False),
                    lambda base, m: _select_scatter(base, m, dim, index))


def _select_scatter(base, src, dim, index):
    """select's inverse (functionalisation writing a mutated select view back): aten::select_scatter."""
    s = base._shape
    d = _norm_dim(dim, len(s.sizes))
    idx = index + s.sizes[d] if index < 0 else index
    _fn_counter("select_scatter")[0] += 1
    return _emit("aten::select_scatter", (base._ir(), src._ir()), s.dtype, s.sizes, _seed(dim, index),
                 "aten::select_scatter", (d, idx), f"dim={dim}, index={index}")


def _slice_scatter(base, src, dim, start, end, step):
    """slice's inverse: aten::slice_scatter(base, src, start, end, step), dim an attribute."""
    s = base._shape
    d = _norm_dim(dim, len(s.sizes))
    n = s.sizes[d]
    lo = start + n if start < 0 else start
    hi = end + n if end < 0 else end
    lo = 0 if lo < 0 else (n if lo >= n else lo)
    hi = lo if hi < lo else (n if hi >= n else hi)
    _fn_counter("slice_scatter_symint")[0] += 1
    operands = (base._ir(), src._ir(), _const(start), _const(end), _const(step))
    return _emit("aten::slice_scatter", operands, s.dtype, s.sizes, _seed(dim), "aten::slice_scatter",
                 (d, lo, hi, step), f"dim={dim}")


def _alias(a, alias=True):
    _fn_counter("alias_copy")[0] += 1
    s = a._shape
    t = _emit("aten::alias_copy", (_view_input(a, alias),), s.dtype, s.sizes, None, "aten::alias_copy")
    if not alias:
        return t
    # the inverse (alias_inverse, never a view): alias_copy of the updated alias
    return _view_of(a, t, lambda x: _alias(x, False), lambda base, m: _alias(m, False))


def _narrow(a, dim, start, length):
    _check_tensor(a, "narrow() input")
    s = a._shape
    if not s.sizes:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _norm_dim(_index(dim, "narrow(): dim"), len(s.sizes))
    start, length = _index(start, "narrow(): start"), _index(length, "narrow(): length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    n = s.sizes[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice(a, dim, start, start + length, 1)


def _getitem(a, index, alias_self=True):
    """torch's Tensor.__getitem__ for ints, slices, None and ...: select_copy / slice_copy / unsqueeze_copy as
    torch's indexing records them (a lone slice is always sliced; in a tuple a slice covering the whole
    dim is skipped, and a result that is the tensor itself becomes alias_copy).  ``alias_self=False``: the
    view of a setitem, where torch skips a lone whole-dim slice too and the tensor itself stays itself."""
    t = type(index)
    if t is int or isinstance(index, _np.integer):
        if not a._shape.sizes:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        return _select(a, 0, _index(index, "index"), True, "getitem")
    if t is slice:
        start, stop, step = _slice_bounds(index)
        if not alias_self and a._shape.sizes and start == 0 and a._shape.sizes[0] <= stop and step == 1:
            return a                     # setitem: torch's applySlice skips a slice covering the whole dim
        return _slice(a, 0, start, stop, step)
    if index is None:
        return _unsqueeze(a, 0)
    if index is Ellipsis:
        return _alias(a) if alias_self else a
    if t is not tuple:
        index = (index,)
    for i in index:
        if isinstance(i, (LazyTensor, list, tuple, bool, _np.ndarray, _np.bool_)):
            raise NotImplementedError(f"indexing a lazy tensor with {type(i).__name__} ({i!r}) is not supported by "
                                      "accel.lazy yet (supported: ints, slices, None, ...)")
        if i is not None and i is not Ellipsis and type(i) is not slice and not hasattr(i, "__index__"):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(i).__name__})")
    specified = sum(1 for i in index if i is not None and i is not Ellipsis)
    nd = len(a._shape.sizes)
    if specified > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    r = a
    dim = 0
    for i in index:
        if i is None:
            r = _unsqueeze(r, dim)
            dim += 1
        elif i is Ellipsis:
            dim += nd - specified
        elif type(i) is slice:
            start, stop, step = _slice_bounds(i)
            n = r._shape.sizes[dim]
            if not (start == 0 and n <= stop and step == 1):
                r = _slice(r, dim, start, stop, step)
            dim += 1
        else:
            r = _select(r, dim, _index(i, "index"), True, "getitem")
    return _alias(r) if r is a and alias_self else r


def _slice_bounds(sl):
    step = 1 if sl.step is None else _index(sl.step, "slice step")
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = 0 if sl.start is None else _index(sl.start, "slice start")
    stop = _INT64_MAX if sl.stop is None else _index(sl.stop, "slice stop")
    return start, stop, step


def _flatten(a, start_dim=0, end_dim=-1):
    _check_tensor(a, "flatten() input")
    sizes = a._shape.sizes
    if not sizes:
        return _view(a, (1,), "view_copy_symint")
    s = _norm_dim(_index(start_dim, "flatten(): start_dim"), len(sizes))
    e = _norm_dim(_index(end_dim, "flatten(): end_dim"), len(sizes))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return a
    return _view(a, sizes[:s] + (_numel(sizes[s:e + 1]),) + sizes[e + 1:], "view_copy_symint")


def _unflatten(a, dim, sizes):
    _check_tensor(a, "unflatten() input")
    cur = a._shape.sizes
    d = _norm_dim(_index(dim, "unflatten(): dim"), len(cur))
    sizes = _int_list(tuple(sizes), "unflatten() sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inferred = _infer_size(sizes, cur[d])
    return _view(a, cur[:d] + inferred + cur[d + 1:], "view_copy_symint")


def _movedim(a, source, destination):
    _check_tensor(a, "movedim() input")
    nd = len(a._shape.sizes)
    src = [source] if not isinstance(source, (tuple, list)) else list(source)
    dst = [destination] if not isinstance(destination, (tuple, list)) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({_fmt_size(src)} dims) should "
                           f"contain the same number of dims as destination ({_fmt_size(dst)} dims)")
    src = [_norm_dim(_index(x, "movedim(): source"), nd) for x in src]
    dst = [_norm_dim(_index(x, "movedim(): destination"), nd) for x in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in `source` or `destination`")
    perm = [-1] * nd
    for s_, d_ in zip(src, dst):
        perm[d_] = s_
    rest = iter(i for i in range(nd) if i not in src)
    perm = [p if p != -1 else next(rest) for p in perm]
    if not nd:                           # torch: a 0-dim tensor's movedim is its alias
        return _alias(a)
    return _permute(a, perm)             # the identity too: LTC records permute_copy


def _stack(tensors, dim=0):
    if isinstance(tensors, LazyTensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"stack() expects a list or tuple of lazy tensors, got {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        _check_tensor(t, f"stack() tensors[{i}]")
    first = tensors[0]._shape.sizes
    for i, t in enumerate(tensors):
        if t._shape.sizes != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {_fmt_size(first)} at entry 0 "
                               f"and {_fmt_size(t._shape.sizes)} at entry {i}")
    d = _index(dim, "stack(): dim")
    nd = len(first)
    if not -(nd + 1) <= d <= nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-(nd + 1)}, {nd}], but got {d})")
    axis = d + nd + 1 if d < 0 else d
    code = tensors[0]._shape.dtype
    if D.result_type([(t._shape.dtype, D.DIM) for t in tensors]) != code:
        # LTC's shape function gives the first tensor's dtype where eager torch promotes to another: torch
        # disagrees with itself there, so accel refuses rather than pick one
        raise NotImplementedError("stack() of tensors whose promoted dtype is not the first tensor's is not "
                                  "supported by accel.lazy (cast them to one dtype first)")
    _fn_counter("stack")[0] += 1
    lst = trie_node(Node(_op("lazy_tensors::tensor_list"), [t._ir() for t in tensors], ()))
    sizes = first[:axis] + (len(tensors),) + first[axis:]
    return _emit("aten::stack", (lst,), code, sizes, _seed(d), "aten::stack", axis, f"dim={d}")


def _flip(a, dims):
    _check_tensor(a, "flip() input")
    dims = _int_list(tuple(dims), "flip() dims")
    nd = len(a._shape.sizes)
    axes = [_norm_dim(x, nd) for x in dims]
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
    _fn_counter("flip")[0] += 1
    s = a._shape
    return _emit("aten::flip", (a._ir(),), s.dtype, s.sizes, _seed(dims), "aten::flip", tuple(axes),
                 "dims=" + _dim_list(dims))


def _repeat(a, repeats):
    _check_tensor(a, "repeat() input")
    reps = _int_list(tuple(repeats), "repeat() repeats")
    sizes = a._shape.sizes
    if len(reps) < len(sizes):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    for r in reps:
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {r}: {_fmt_size(reps)}")
    padded = (1,) * (len(reps) - len(sizes)) + tuple(sizes)
    out = tuple(p * r for p, r in zip(padded, reps))
    _check_numel(out)
    _fn_counter("repeat")[0] += 1
    return _emit("aten::repeat", (a._ir(),), a._shape.dtype, out, _seed(reps), "aten::repeat", tuple(reps),
                 "repeats=" + _dim_list(reps))


def _clone(a, memory_format=None):
    """torch's clone on a lazy tensor: a new tensor on the same IR value (LTC records no node)."""
    _check_tensor(a, "clone() input")
    return _wrap_plain(a._ir(), a._shape)


def _roll(a, shifts, dims=None):
    _check_tensor(a, "roll() input")
    sh = [shifts] if not isinstance(shifts, (tuple, list)) else list(shifts)
    sh = _int_list(sh, "roll() shifts")
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        axes = None
    else:
        dl = _int_list([dims] if not isinstance(dims, (tuple, list)) else list(dims), "roll() dims")
        if len(dl) != len(sh):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(dl)}")
        if 0 in a._shape.sizes:          # torch returns an empty tensor's clone before it looks at the dims
            return fallback("aten::roll", "roll", [a], a._shape.dtype, (0, None))
        axes = tuple(_norm_dim(x, len(a._shape.sizes)) for x in dl)
    return fallback("aten::roll", "roll", [a], a._shape.dtype, (tuple(sh) if axes is not None else sh[0], axes))


# ---------------------------------------------------------------- kernels
def _idx(d, what):
    return "[" + ":, " * d + what + "]"


def _k_const(k):
    k.line(f"{k.out} = _asarray({k.attrs[1]!r}, _d{D.INT64})")


def _k_slice(k):
    d, lo, hi, step = k.attrs[1]
    k.line(f"{k.out} = {k.x}{_idx(d, f'{lo}:{hi}:{step}')}")


def _k_select(k):
    d, i = k.attrs[1]
    k.line(f"{k.out} = {k.x}{_idx(d, str(i))}")


def _k_scatter(k, what):
    if what == "select":
        d, i = k.attrs[1]
        where = _idx(d, str(i))
    else:
        d, lo, hi, step = k.attrs[1]
        where = _idx(d, f"{lo}:{hi}:{step}")
    k.line(f"{k.out} = _asarray({k.ins[0]}).copy(); {k.out}{where} = {k.ins[1]}")


def _k_alias(k):
    k.line(f"{k.out} = {k.x}")


def _k_stack(k):
    k.line(f"{k.out} = _stack({k.x}, axis={k.attrs[1]}, dtype={k.dt}, casting='same_kind')")


def _k_flip(k):
    k.line(f"{k.out} = _flip({k.x}, {k.attrs[1]!r})")


def _k_repeat(k):
    k.line(f"{k.out} = _tile({k.x}, {k.attrs[1]!r})")


def _eager_roll(args, shifts, axes):
    return _np.roll(args[0], shifts, axes)


helpers(_stack=_np.stack, _flip=_np.flip, _tile=_np.tile)


def _setitem_m(self, index, value):
    """t[index] = value as torch records it: a Python number becomes a 0-dim tensor of ``t``'s dtype
    (at::scalar_tensor on the lazy device: empty, then fill_), then the indexed view (select / slice / unsqueeze
    views) takes it through copy_to, written back into ``t`` through the views' inverses (select_scatter /
    slice_scatter) when ``t`` is next used."""
    number = type(value) is not LazyTensor
    if number:
        v = _as_number(value)
        if v is None:
            raise TypeError(f"t[...] = value: value must be a lazy tensor or a Python number, got "
                            f"{type(value).__name__}: {value!r}")
        value = _fill(_empty((), self._shape.dtype), v)
    view = _getitem(self, index, False)
    copy_to(view, value, number)


def _prefix1s_stripped(sizes):
    k = 0
    while k < len(sizes) and sizes[k] == 1:
        k += 1
    return sizes[k:]


def copy_to(dst, src, number=False):
    """at::indexing::copy_to: copy_ when the sizes agree, else ``src`` viewed without its leading 1s and expanded
    to ``dst``'s sizes first.  For a Python-number value LTC counts that view and expand twice."""
    ds = dst._shape.sizes
    if src._shape.sizes != ds:
        src = _view(src, _prefix1s_stripped(src._shape.sizes), "view_copy_symint", False)
        src = _expand(src, ds, False)
        if number:
            _fn_counter("view_copy_symint")[0] += 1
            _fn_counter("expand_copy_symint")[0] += 1
    dst.copy_(src)


def _narrow_m(self, dim, start, length):
    return _narrow(self, dim, start, length)


def _select_m(self, dim, index):
    return _select(self, dim, index)


def _flatten_m(self, start_dim=0, end_dim=-1):
    return _flatten(self, start_dim, end_dim)


def _unflatten_m(self, dim, sizes):
    return _unflatten(self, dim, sizes)


def _view_as_m(self, other):
    _check_tensor(other, "view_as() other")
    return _view(self, other._shape.sizes, "view_copy_symint")


def _expand_as_m(self, other):
    _check_tensor(other, "expand_as() other")
    return _expand(self, other._shape.sizes)


def _movedim_m(self, source, destination):
    return _movedim(self, source, destination)


def _flip_m(self, *dims):
    return _flip(self, _needs_args(dims, "flip", "dims"))


def _repeat_m(self, *repeats):
    return _repeat(self, _needs_args(repeats, "repeat", "repeats"))


def _contiguous_m(self, memory_format=None):
    return self


def _roll_m(self, shifts, dims=None):
    return _roll(self, shifts, dims)


def narrow(input, dim, start, length):
    return _input(input, "narrow").narrow(dim, start, length)


def select(input, dim, index):
    return _input(input, "select").select(dim, index)


def flatten(input, start_dim=0, end_dim=-1):
    return _input(input, "flatten").flatten(start_dim, end_dim)


def unflatten(input, dim, sizes):
    return _input(input, "unflatten").unflatten(dim, sizes)


def movedim(input, source, destination):
    return _input(input, "movedim").movedim(source, destination)


def flip(input, dims):
    return _input(input, "flip").flip(dims)


def roll(input, shifts, dims=None):
    return _input(input, "roll").roll(shifts, dims)


def clone(input, memory_format=None):
    return _input(input, "clone").clone()


def stack(tensors, dim=0):
    """Stack equal-sized tensors along a new dim ``dim``: a lazy_tensors::tensor_list node feeding aten::stack."""
    return _stack(tensors, dim)


declare("prim::Constant", {}, {}, [Kernel("prim::Constant", _k_const)])
declare("slice", {}, {}, [Kernel("aten::slice_copy", _k_slice, view=True)])
declare("narrow", {"narrow": _narrow_m}, {"narrow": narrow})
declare("select", {"select": _select_m}, {"select": select}, [Kernel("aten::select_copy", _k_select, view=True)])
declare("alias", {}, {}, [Kernel("aten::alias_copy", _k_alias, view=True)])
declare("select_scatter", {}, {}, [Kernel("aten::select_scatter", lambda k: _k_scatter(k, "select"))])
declare("slice_scatter", {}, {}, [Kernel("aten::slice_scatter", lambda k: _k_scatter(k, "slice"))])
declare("flatten", {"flatten": _flatten_m}, {"flatten": flatten})
declare("unflatten", {"unflatten": _unflatten_m}, {"unflatten": unflatten})
declare("view_as", {"view_as": _view_as_m, "reshape_as": _view_as_m})
declare("expand_as", {"expand_as": _expand_as_m})
declare("movedim", {"movedim": _movedim_m}, {"movedim": movedim})
declare("stack", {}, {"stack": stack}, [Kernel("aten::stack", _k_stack)])
declare("flip", {"flip": _flip_m}, {"flip": flip}, [Kernel("aten::flip", _k_flip, view=True)])
declare("repeat", {"repeat": _repeat_m}, {}, [Kernel("aten::repeat", _k_repeat)])
declare("clone", {"clone": _clone}, {"clone": clone})
declare("contiguous", {"contiguous": _contiguous_m})
declare("roll", {"roll": _roll_m}, {"roll": roll}, eager={"roll": _eager_roll})
classes(**{"aten::slice_copy": "SliceCopyTensor", "aten::select_copy": "SelectCopyInt",
           "aten::alias_copy": "AliasCopy", "aten::stack": "Stack", "aten::flip": "Flip", "aten::repeat": "Repeat",
           "prim::Constant": "Scalar"})
