"""The matmul family: mm, bmm, mv, and matmul decomposed as torch does before LTC sees it."""
import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy import inplace as _inplace
from accel.lazy._optable import Kernel, classes, declare
from accel.lazy.executor import fallback
from accel.lazy.ops.views import _expand, _numel, _squeeze, _unsqueeze, _unsqueeze_to, _view
from accel.lazy.tensors import _check_tensor, _dtype_name, _emit, _fmt_size, _fn_counter, _irs


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
    return _emit("aten::mm", _irs(a, b), a._shape.dtype, (sa[0], sb[1]))


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
    return _emit("aten::bmm", _irs(a, b), a._shape.dtype, (sa[0], sa[1], sb[2]))


def _mv(a, b):
    _fn_counter("mv")[0] += 1
    sa, sb = a._shape.sizes, b._shape.sizes
    if sa[1] != sb[0]:
        raise RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({sa[0]}x{sa[1]}), vec ({sb[0]})")
    return _emit("aten::mv", _irs(a, b), a._shape.dtype, (sa[0],))


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
        return fallback("aten::dot", "dot", [a, b], a._shape.dtype)
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


def _k_matmul(k):
    out = f", out={k.buf}" if k.buf else ""
    k.line(f"{k.out} = _matmul({k.ins[0]}, {k.ins[1]}{out})")


def _eager_dot(args):
    return _np.dot(args[0], args[1])


def _mm_m(self, other):
    return mm(self, other)


def _bmm_m(self, other):
    return bmm(self, other)


def _matmul_m(self, other):
    return matmul(self, other)


def _rmatmul_m(self, other):
    return matmul(other, self)


declare("mm", {"mm": _mm_m}, {"mm": mm}, [Kernel("aten::mm", _k_matmul, out=True)])
declare("bmm", {"bmm": _bmm_m}, {"bmm": bmm}, [Kernel("aten::bmm", _k_matmul, out=True)])
declare("mv", {}, {}, [Kernel("aten::mv", _k_matmul, out=True)])
declare("matmul", {"matmul": _matmul_m, "__matmul__": _matmul_m, "__rmatmul__": _rmatmul_m}, {"matmul": matmul},
        eager={"dot": _eager_dot})
classes(**{"aten::mm": "Mm", "aten::bmm": "Bmm", "aten::mv": "Mv"})
