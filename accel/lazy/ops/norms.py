"""Normalisation and losses (issue 19): layer_norm, batch_norm (eval), nll_loss / cross_entropy as the LTC
nodes torch 2.13 records (aten::native_layer_norm, aten::native_batch_norm with 3 outputs,
aten::nll_loss_forward with 2; the tensors hold output 0), and what torch decomposes before LTC sees it:
rms_norm (pow / mean / add / rsqrt / mul), group_norm (views around an eager var_mean), logsumexp (an eager
amax, then a graph that torch's out= path syncs at once: the result is device data), cross_entropy's
label smoothing."""
import weakref

import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy import metrics as _metrics
from accel.lazy import inplace as _inplace
from accel.lazy import tensors as _t
from accel.lazy._optable import Kernel, classes, declare, helpers
from accel.lazy.executor import compute_values, tensor_value
from accel.lazy.ops.nn import _softmax
from accel.lazy.ops.reductions import _amax
from accel.lazy.ops.casts import to_copy as _to_copy
from accel.lazy.ops.views import _const, _numel, _unsqueeze, _view
from accel.lazy.tensors import (
    LazyTensor, _as_number, _check_tensor, _dim_list, _dtype_name, _emit, _fn_counter, _index, _int_list,
    _norm_dim, _seed)


def _g(v):
    """A double as LTC's tags print it (C++ ostream's default: %g with 6 digits)."""
    return f"{float(v):g}"


def _emit_multi(opname, operands, shapes, seed, args, tags, outputs=False):
    """A node with several outputs (``shapes``: (dtype code, sizes) each; its kernel returns a tuple): a tensor
    per output, holding Output(node, i), as LTC makes them; the functional forms hand back output 0 (all of
    them with ``outputs``)."""
    outs = _t._emit_multi(opname, operands, shapes, seed, opname, args, tags)
    return outs if outputs else outs[0]


def _opt(x, what):
    if x is None:
        return None
    _check_tensor(x, what)
    return x


def _float_input(a, what):
    _check_tensor(a, f"{what}() input")
    if a._shape.dtype not in D.FLOATS:
        raise RuntimeError(f"{what}(): expected a floating point input, got {_dtype_name(a._shape.dtype)}")
    return a._shape


def _normalized_shape(ns, sizes, what):
    ns = [ns] if not isinstance(ns, (tuple, list)) else list(ns)
    ns = _int_list(ns, f"{what}(): normalized_shape") if ns else []
    if not ns or len(ns) > len(sizes) or list(sizes[len(sizes) - len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={ns}, expected input with shape [*, "
                           f"{', '.join(str(n) for n in ns)}], but got input of size{list(sizes)}")
    return ns


def _eps(v, what):
    e = _as_number(v)
    if e is None or isinstance(v, bool):
        raise TypeError(f"{what}(): eps must be a Python number, got {type(v).__name__}: {v!r}")
    return float(e)


def _param_shape(p, sizes, what):
    if p is not None and tuple(p._shape.sizes) != tuple(sizes):
        raise RuntimeError(f"{what}: expected a tensor of shape {list(sizes)}, got {list(p._shape.sizes)}")


# ---------------------------------------------------------------- layer_norm / rms_norm
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm: aten::native_layer_norm(input, weight?, bias?) with 3 outputs
    (the result, mean and rstd of shape [*, 1, ...]); the result is output 0."""
    s = _float_input(input, "layer_norm")
    ns = _normalized_shape(normalized_shape, s.sizes, "layer_norm")
    weight, bias = _opt(weight, "layer_norm() weight"), _opt(bias, "layer_norm() bias")
    _param_shape(weight, ns, "layer_norm() weight")
    _param_shape(bias, ns, "layer_norm() bias")
    e = _eps(eps, "layer_norm")
    stat = tuple(s.sizes[:len(s.sizes) - len(ns)]) + (1,) * len(ns)
    _fn_counter("native_layer_norm")[0] += 1
    ops = (input._ir(), None if weight is None else weight._ir(), None if bias is None else bias._ir())
    return _emit_multi("aten::native_layer_norm", ops, ((s.dtype, s.sizes), (s.dtype, stat), (s.dtype, stat)),
                       _seed(ns, e), (len(ns), e, weight is not None, bias is not None),
                       f"normalized_shape={_dim_list(ns)}, eps={_g(e)}")


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.nn.functional.rms_norm, as torch 2.13 decomposes it: x * rsqrt(mean(x ** 2, last dims, keepdim) +
    eps) * weight, cast back to the input's dtype (a half / bfloat16 input is computed in float); eps (None:
    the compute type's epsilon) is rounded to the compute type first, as torch's eps_val."""
    s = _float_input(input, "rms_norm")
    ns = _normalized_shape(normalized_shape, s.sizes, "rms_norm")
    weight = _opt(weight, "rms_norm() weight")
    _param_shape(weight, ns, "rms_norm() weight")
    nd = len(s.sizes)
    dims = [nd - i - 1 for i in range(len(ns))]
    reduced = s.dtype in (D.FLOAT16, D.BFLOAT16)
    x = _to_copy(input, _np.float32) if reduced else input
    e = float(_np.finfo(D.CODE_TO_NP[x._shape.dtype]).eps) if eps is None else _eps(eps, "rms_norm")
    e = float(_np.asarray(e).astype(D.CODE_TO_NP[x._shape.dtype]))       # torch's opmath_t eps_val
    r = x * x.pow(2).mean(dims, keepdim=True).add(e).rsqrt()
    if weight is not None:
        r = r * weight
    if reduced:
        r = _to_copy(r, D.DTYPES[s.dtype], layout=True)
    return r


# ---------------------------------------------------------------- batch_norm (eval)
_kernels = _impl.module("_kernels")


class _RunningStats:
    """The run-time argument of a training batch_norm node: the running-statistics tensors it updates when its
    graph runs (weakly: a tensor dropped meanwhile is not updated).  LTC's TorchScript kernel writes the new
    statistics into their buffers in place; here the kernel hands them to ``update`` and each tensor takes its
    new value, as an in-place op gives it (its views see it), once the run's results are in place."""
    __slots__ = ("refs",)

    def __init__(self, rm, rv):
        self.refs = (weakref.ref(rm), weakref.ref(rv))

    def update(self, mean, var):
        for ref, a in zip(self.refs, (mean, var)):
            t = ref()
            if t is not None:
                _t.after_run(lambda t=t, a=a: _set_running(t, a))


def _set_running(t, a):
    r = _t.tensor(a)
    _t._c_to_copy[0] -= 1            # written by the kernel, not copied to the device
    _inplace.commit(t, r)


def _param_dtype(code, params):
    """The dtype of batch_norm's parameters (weight, bias, running_mean, running_var; None for absent ones), as
    torch's CPU kernel checks them: the first one given decides; another type than the input's is torch's mixed
    type, a half / bfloat16 input with float parameters only (its messages)."""
    given = [p for p in params if p is not None]
    if given and given[0]._shape.dtype != code:
        if any(p._shape.dtype != D.FLOAT32 for p in given):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if code not in (D.FLOAT16, D.BFLOAT16):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        return D.FLOAT32
    for p in params[2:] + params[:2]:          # the running statistics are read first (their update)
        if p is not None and p._shape.dtype != code:
            raise RuntimeError(f"expected scalar type {_dtype_name(code)} but found {_dtype_name(p._shape.dtype)}")
    return code


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """torch.nn.functional.batch_norm: aten::native_batch_norm(input, weight?, bias?, running_mean?,
    running_var?) with 3 outputs; the result is output 0.  In training, the batch's statistics normalise and
    the running ones (when given) are updated when the graph runs, as LTC's kernel updates them in place
    (momentum * batch + (1 - momentum) * running; the variance unbiased)."""
    s = _float_input(input, "batch_norm")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if not training and running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    if len(s.sizes) < 2:
        raise ValueError(f"Expected 2D or more input (got {len(s.sizes)}D input)")
    if training and s.sizes[1] and _numel(s.sizes) // s.sizes[1] == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"torch.Size([{', '.join(str(k) for k in s.sizes)}])")
    c = s.sizes[1]
    ts = []
    for name, p in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        p = _opt(p, f"batch_norm() {name}")
        _param_shape(p, (c,), f"batch_norm() {name}")
        ts.append(p)
    pcode = _param_dtype(s.dtype, ts)
    e = _eps(eps, "batch_norm")
    m = _as_number(momentum)
    if m is None or isinstance(momentum, bool):
        raise TypeError(f"batch_norm(): momentum must be a Python number, got {momentum!r}")
    m = float(m)
    if 0 in s.sizes:
        # torch's _batch_norm_impl_index of an empty input: input.clone() (on the lazy device, the input's IR
        # itself), * weight[0], + bias[0]; no native_batch_norm, the running statistics untouched
        out = _t._wrap(input._ir(), s)
        if ts[0] is not None:
            out = out * ts[0][0]
        if ts[1] is not None:
            out = out + ts[1][0]
        return out
    _fn_counter("native_batch_norm")[0] += 1
    ops = (input._ir(),) + tuple(None if p is None else p._ir() for p in ts)
    stats = (pcode, (c,)) if ts[2] is not None else (D.UNDEFINED, (0,))    # LTC's shapes without running ones
    outs = _emit_multi("aten::native_batch_norm", ops, ((s.dtype, s.sizes), stats, stats),
                       _seed(bool(training), m, e),
                       (e, ts[0] is not None, ts[1] is not None, bool(training), m, ts[2] is not None),
                       f"training={int(bool(training))}, momentum={_g(m)}, eps={_g(e)}", outputs=True)
    if training and ts[2] is not None:         # a node the IR trie gave back takes this call's tensors
        _t.set_run_arg(outs[0]._node.node, _RunningStats(ts[2], ts[3]))
    return outs[0]


# ---------------------------------------------------------------- group_norm
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.group_norm as torch 2.13 decomposes it: x.view(N, G, -1), an eager var_mean
    (correction 0, keepdim), (x - mean) * rsqrt(var + eps), viewed back, * weight, + bias (viewed [1, C, 1...])."""
    s = _float_input(input, "group_norm")
    g = _index(num_groups, "group_norm(): num_groups")
    if len(s.sizes) < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {len(s.sizes)}")
    n, c = s.sizes[0], s.sizes[1]
    if g <= 0 or c % g:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(s.sizes)} and num_groups={g}")
    size = [n * c // g, g] + list(s.sizes[2:])      # torch.nn.functional's _verify_batch_size
    if _numel([size[0]] + size[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    weight, bias = _opt(weight, "group_norm() weight"), _opt(bias, "group_norm() bias")
    _param_shape(weight, (c,), "group_norm() weight")
    _param_shape(bias, (c,), "group_norm() bias")
    e = _eps(eps, "group_norm")
    if 0 in s.sizes:
        # torch 2.13 of an empty input: one aten::as_strided_copy of a new empty tensor (its device data; the
        # strides the products of the sizes after each dim, the storage offset a constant 0), neither the input
        # nor weight and bias read, as LTC records it
        strides, acc = [], 1
        for k in reversed(s.sizes):
            strides.insert(0, acc)
            acc *= k
        _fn_counter("empty_strided_symint")[0] += 1
        _fn_counter("as_strided_copy_symint")[0] += 1
        fresh = _t._dd(s, _t.Data(_np.zeros(s.sizes, D.CODE_TO_NP[s.dtype])))
        return _emit("aten::as_strided_copy", (fresh, _const(0)), s.dtype, s.sizes,
                     _seed(list(s.sizes), strides), "aten::as_strided_copy", None,
                     f"size={_dim_list(list(s.sizes))}, stride={_dim_list(strides)}")
    xr = _view(input, (n, g, _numel(s.sizes) // (n * g) if n * g else 0), "view_copy_symint")
    var, mean = _var_mean(xr, 2)
    rstd = (var + e).rsqrt()
    out = _view((xr - mean) * rstd, s.sizes, "view_copy_symint")
    shape = (1, c) + (1,) * (len(s.sizes) - 2)
    if weight is not None:
        out = out * _view(weight, shape, "view_copy_symint")
    if bias is not None:
        out = out + _view(bias, shape, "view_copy_symint")
    # torch squeezes mean and rstd for its other two outputs: two squeeze_copy nodes, traced (and with IR reuse
    # reused, IrNodeReused_SqueezeCopyDim) though no graph reads them
    mean.squeeze(2)
    rstd.squeeze(2)
    return out


def _var_mean(x, axis):
    """torch.var_mean(x, [axis], correction=0, keepdim=True): no lazy kernel in LTC (eager, counter
    aten::var_mean.correction); two results holding data."""
    _metrics.Counter("aten::var_mean.correction").add(1)
    a = tensor_value(x)
    _t._c_to_copy[0] += 1
    a64 = _np.asarray(a, _np.float64)
    code = x._shape.dtype
    return (_data_tensor(a64.var(axis=axis, keepdims=True), code),
            _data_tensor(a64.mean(axis=axis, keepdims=True), code))


def _data_tensor(a, code):
    """A new tensor holding ``a`` as dtype ``code`` (bfloat16 rounded), as a fallback's result."""
    a = _np.asarray(a).astype(D.CODE_TO_NP[code])
    return _t.tensor(a, D.bfloat16) if code == D.BFLOAT16 else _t.tensor(a)


# ---------------------------------------------------------------- logsumexp
def logsumexp(input, dim, keepdim=False):
    """torch.logsumexp as torch 2.13 runs it on LTC: an eager amax (keepdim), inf maxima set to 0 (in place on
    the squeezed view, as functionalisation records it), log(sum(exp(x - max))) + max, then synced by the
    out= path's copy: the result holds device data."""
    _check_tensor(input, "logsumexp() input")
    if type(keepdim) is not bool:
        raise TypeError(f"logsumexp(): keepdim must be a bool, got {type(keepdim).__name__}: {keepdim!r}")
    x = input
    if x._shape.dtype not in D.FLOATS:
        x = _to_copy(x, _np.float32)
    nd = len(x._shape.sizes)
    dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
    dims = _int_list(dims, "logsumexp() dim") if dims else []
    if not dims:
        raise NotImplementedError("logsumexp() over no dims is not supported by accel.lazy yet")
    axes = sorted(_norm_dim(d, nd) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
    if 0 in x._shape.sizes:
        r = x.exp().sum(dims, keepdim).log()        # torch takes no max of an empty tensor
    else:
        maxes = _amax(x, dims, True)
        if keepdim:
            maxes = maxes.masked_fill(maxes.abs() == float("inf"), 0)
            squeezed = maxes
        else:
            sq = _squeeze_dims(maxes, dims, axes)
            sq = sq.masked_fill(sq.abs() == float("inf"), 0)
            maxes = sq
            for a in axes:
                maxes = _unsqueeze(maxes, a, False)
            squeezed = _squeeze_dims(maxes, dims, axes)
        r = (x - maxes).exp().sum(dims, keepdim).log().add(squeezed)
    # torch's out= path: resize_ (a fallback), then the result copied through the CPU: computed now (as
    # .cpu() computes, the graph stays), handed back as a new tensor holding its data
    value = compute_values([r])[0]
    for name in ("aten::resize_", "lazy::_copy_from", "lazy::_copy_from_and_resize"):
        _metrics.Counter(name).add(1)
    return _data_tensor(value, r._shape.dtype)


def _squeeze_dims(a, dims, axes):
    s = a._shape
    sizes = tuple(n for i, n in enumerate(s.sizes) if i not in axes or n != 1)
    _fn_counter("squeeze_copy")[0] += 1
    return _emit("aten::squeeze_copy", (a._ir(),), s.dtype, sizes, _seed(dims), "reshape", None,
                 f"dim={_dim_list(dims)}")


# ---------------------------------------------------------------- nll_loss / cross_entropy
_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """torch.nn.functional.nll_loss for an input [N, C] or [C] and class-index targets: aten::nll_loss_forward
    (input, target, weight?) with 2 outputs (the loss, the total weight); the loss is output 0.  [N, C, d...]:
    aten::nll_loss2d_forward (see _nll_loss_nd)."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("nll_loss(size_average=, reduce=) (deprecated) is not supported by accel.lazy; "
                                  "use reduction=")
    s = _float_input(input, "nll_loss")
    _check_tensor(target, "nll_loss() target")
    if reduction not in _REDUCTION:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nd = len(s.sizes)
    ts = target._shape.sizes
    if nd == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    # torch's checks in its order (nll_loss_nd, then nll_loss_forward / nll_loss2d_forward): the batch size, the
    # target's dims and sizes, its dtype, then the weight's class count
    if nd != 1 and (not ts or ts[0] != s.sizes[0]):
        raise ValueError(f"Expected input batch_size ({s.sizes[0]}) to match target batch_size ({ts[0] if ts else 1}).")
    if nd >= 3:
        return _nll_loss_nd(input, target, weight, ignore_index, reduction)
    if len(ts) > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if nd == 1 and ts and ts[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {ts[0]}")
    _target_dtype(target)
    weight = _opt(weight, "nll_loss() weight")
    c = s.sizes[-1]
    if weight is not None and (len(weight._shape.sizes) != 1 or _numel(weight._shape.sizes) != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got weight "
                           f"tensor of shape: {list(weight._shape.sizes)}")
    ig = _index(ignore_index, "nll_loss(): ignore_index")
    red = _REDUCTION[reduction]
    out = tuple(ts) if red == 0 else ()          # ([N], or a 1-D input's [] / [1])
    _fn_counter("nll_loss_forward")[0] += 1
    ops = (input._ir(), target._ir(), None if weight is None else weight._ir())
    return _emit_multi("aten::nll_loss_forward", ops, ((s.dtype, out), (s.dtype, ())), _seed(red, ig),
                       (red, ig, weight is not None), f"reduction={red}, ignore_index={ig}")


def _target_dtype(target):
    if target._shape.dtype not in (D.INT64, D.UINT8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_dtype_name(target._shape.dtype)}")


def _nll_loss_nd(input, target, weight, ignore_index, reduction):
    """nll_loss of an input [N, C, d1, ...]: aten::nll_loss2d_forward on [N, C, H, W] (other ranks viewed as
    [N, C, 1, -1] and the target as [N, 1, -1], the unreduced loss viewed back), as torch's nll_loss_nd."""
    s, ts = input._shape, target._shape.sizes
    n, c = s.sizes[0], s.sizes[1]
    if len(s.sizes) == 4:
        if len(ts) != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                               f"{len(ts)}")
        if tuple(ts) != (n,) + tuple(s.sizes[2:]):
            raise RuntimeError(f"size mismatch (got input: {list(s.sizes)} , target: {list(ts)}")
    elif tuple(ts[1:]) != tuple(s.sizes[2:]):
        raise RuntimeError(f"Expected target size {[n] + list(s.sizes[2:])}, got {list(ts)}")
    _target_dtype(target)
    weight = _opt(weight, "nll_loss() weight")
    if weight is not None and _numel(weight._shape.sizes) != c:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    if target._shape.dtype != D.INT64:      # nll_loss2d's kernel reads int64 targets (its check passes Byte)
        raise RuntimeError("expected scalar type Long but found Byte")
    x, t = input, target
    if len(s.sizes) != 4:
        empty = 0 in s.sizes                       # torch views an empty input as [N, C, 0, 0], its target [N, 0, 0]
        t = _view(target, (n, 0, 0) if empty else (n, 1, -1), "view_copy_symint")
        x = _view(input, (n, c, 0, 0) if empty else (n, c, 1, -1), "view_copy_symint")
    ig = _index(ignore_index, "nll_loss(): ignore_index")
    red = _REDUCTION[reduction]
    out = (n,) + tuple(x._shape.sizes[2:]) if red == 0 else ()
    _fn_counter("nll_loss2d_forward")[0] += 1
    ops = (x._ir(), t._ir(), None if weight is None else weight._ir())
    r = _emit_multi("aten::nll_loss2d_forward", ops, ((s.dtype, out), (s.dtype, ())), _seed(red, ig),
                    (red, ig, weight is not None), f"reduction={red}, ignore_index={ig}")
    if red == 0 and len(s.sizes) != 4:
        r = _view(r, ts, "view_copy_symint")
    return r


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """torch.nn.functional.cross_entropy as torch 2.13's cross_entropy_loss decomposes it: a target of the
    input's shape holds class probabilities (_prob_target); otherwise class indices: _log_softmax over the class
    dim, then nll_loss_forward, and label_smoothing > 0 adds torch's smoothing term (_smoothed)."""
    s = _float_input(input, "cross_entropy")
    if size_average is not None or reduce is not None:
        raise NotImplementedError("cross_entropy(size_average=, reduce=) (deprecated) is not supported by "
                                  "accel.lazy; use reduction=")
    _check_tensor(target, "cross_entropy() target")
    ls = _as_number(label_smoothing)
    if ls is None:
        raise TypeError(f"cross_entropy_loss(): argument 'label_smoothing' (position 6) must be float, not "
                        f"{type(label_smoothing).__name__}")
    ls = float(ls)
    if reduction not in _REDUCTION:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    weight = _opt(weight, "cross_entropy() weight")
    ig = _index(ignore_index, "cross_entropy(): ignore_index")
    class_dim = 0 if len(s.sizes) == 1 else 1
    if tuple(target._shape.sizes) == tuple(s.sizes):      # torch: the same shapes mean class probabilities
        return _prob_target(input, target, weight, reduction, ig, ls, label_smoothing, class_dim)
    if ls > 0.0 and ls > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing!r}")
    logp = _softmax("_log_softmax", input, class_dim)
    if not ls > 0.0:                 # (torch takes a negative or NaN label_smoothing as none)
        return nll_loss(logp, target, weight, None, ig, None, reduction)
    return _smoothed(logp, target, weight, reduction, ig, ls, class_dim)


def _class_weight(weight, logp, class_dim, always=False):
    """The class weights viewed to broadcast along the class dim of ``logp`` (torch's weight_broadcast_shape;
    the probability path keeps a 1-D input's weight as it is, the label-smoothing path views it ``always``)."""
    nd = len(logp._shape.sizes)
    if nd <= 1 and not always:
        return weight
    shape = [1] * nd
    shape[class_dim] = weight._shape.sizes[0]
    return _view(weight, shape, "view_copy_symint")


def _ratio(ls, n_classes):
    """label_smoothing / n_classes as C++ divides doubles (no classes: inf, for a label_smoothing > 0)."""
    return ls / n_classes if n_classes else float("inf")


def _prob_target(input, target, weight, reduction, ig, ls, given, class_dim):
    """torch's cross_entropy_loss_prob_target: -(log_softmax(input) * target [* weight]) summed (over the class
    dim for reduction='none'), the mean divided by numel / n_classes (an integer, as torch's SymInt division)."""
    ts = target._shape
    if ts.dtype not in D.FLOATS:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_dtype_name(ts.dtype)}")
    if ig >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    s = input._shape
    n_classes = s.sizes[class_dim]
    if weight is not None and (len(weight._shape.sizes) != 1 or _numel(weight._shape.sizes) != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or "
                           f"no classes but got weight tensor of shape: {list(weight._shape.sizes)}")
    logp = _softmax("_log_softmax", input, class_dim)
    if ls > 0.0:
        if ls > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {given!r}")
        target = target * (1 - ls) + _ratio(ls, n_classes)
    prod = logp * target
    if weight is not None:
        prod = prod * _class_weight(weight, logp, class_dim)
    if reduction == "none":
        return prod.sum(class_dim).neg()
    total = prod.sum()
    if reduction == "sum":
        return total.neg()
    numel = _numel(s.sizes)
    if numel == 0:
        return total.fill_(float("nan")).neg()
    return total.neg() / (numel // n_classes)


def _smoothed(logp, target, weight, reduction, ig, ls, class_dim):
    """torch's cross_entropy_loss_label_smoothing for class-index targets: (1 - ls) * nll_loss + ls / n_classes *
    the smoothing term; with weights, the mean divides by the targets' weights (torch 2.13's gather / masked_fill
    form), without them by the count of targets not ignored (its ~ignore_mask runs eagerly, as LTC's
    bitwise_not fallback)."""
    n_classes = logp._shape.sizes[class_dim]
    nll = nll_loss(logp, target, weight, None, ig, None, reduction)
    ignore_mask = target == ig
    if weight is not None:
        smooth = (logp * _class_weight(weight, logp, class_dim, always=True)).sum(class_dim).neg()
    else:
        smooth = logp.sum(class_dim).neg()
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == "mean":
        if weight is not None:
            filtered = target.masked_fill(ignore_mask, 0)
            tgt_w = weight.gather(0, filtered.flatten())          # (flat, as LTC records it)
            smooth = smooth.sum() / tgt_w.masked_fill(ignore_mask.flatten(), 0).sum()
        else:
            smooth = smooth.sum() / _bitwise_not(ignore_mask).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - ls) + smooth * _ratio(ls, n_classes)


def _bitwise_not(mask):
    """~mask: no lazy kernel in LTC (eager, counter aten::bitwise_not)."""
    _metrics.Counter("aten::bitwise_not").add(1)
    a = tensor_value(mask)
    _t._c_to_copy[0] += 1
    return _t.tensor(_np.logical_not(a))


# ---------------------------------------------------------------- kernels
def _np_layer_norm(x, *rest, out=None):
    """(result, mean, rstd) of native_layer_norm: in float for float / half / bfloat16 inputs (as torch's CPU
    kernel accumulates), in double for double ones.  ``out``: the program's buffer for the result (float32 /
    float64, x's shape), or None."""
    (k, eps, has_w, has_b), params = rest[-1], list(rest[:-1])
    w = params.pop(0) if has_w else None
    b = params.pop(0) if has_b else None
    dt = _np.asarray(x).dtype
    calc = _np.float64 if dt == _np.float64 else _np.float32
    xc = _np.asarray(x, calc)
    w = None if w is None else _np.asarray(w)
    b = None if b is None else _np.asarray(b)
    wider = any(p is not None and p.dtype.itemsize > _np.dtype(calc).itemsize for p in (w, b))
    d, mean, rstd = _kernels.layer_norm(xc, k, eps, None if wider else w, None if wider else b,
                                        out if out is not None and out.dtype == calc else None)
    if wider:            # a double weight / bias of a float input: multiplied in double, as numpy's d *= w
        if w is not None:
            d *= w
        if b is not None:
            d += b
    return d.astype(dt, copy=False), mean.astype(dt), rstd.astype(dt)


def _np_batch_norm(x, *rest, stats=None, same=False):
    """(the result, save_mean, save_invstd) of native_batch_norm, as torch's CPU kernel computes them (checked
    against 2.13): in training the batch's statistics (over every dim but 1; mean and biased variance summed in
    double, the variance from the products (x - mean) ** 2 in the input's float type, stored in the
    parameters' type), in evaluation the running ones; then alpha = invstd * weight and beta = bias - mean *
    alpha in that type, the result x * alpha + beta.  In training with running statistics the new ones are
    handed to ``stats.update`` and returned as items 3 and 4 (``same``: one tensor is both)."""
    (eps, has_w, has_b, training, momentum, has_running), params = rest[-1], list(rest[:-1])
    w = params.pop(0) if has_w else None
    b = params.pop(0) if has_b else None
    rm, rv = params if has_running else (None, None)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    c = x.shape[1]
    f = _np.float64 if x.dtype == _np.float64 else _np.float32          # opmath: float for half / bfloat16
    pt = rm.dtype if has_running else (w.dtype if w is not None else x.dtype)   # the parameters' type
    pf = _np.float64 if pt == _np.float64 else _np.float32
    xf = _np.asarray(x, f)
    new = ()
    if training:
        axes = (0,) + tuple(range(2, x.ndim))
        n = x.size // c
        mean64 = _np.asarray(x, _np.float64).sum(axis=axes) / n
        mf = mean64.astype(f)
        d = xf - _np.reshape(mf, shape)
        var_sum = (d * d).astype(_np.float64).sum(axis=axes)
        mean = mean64.astype(pt)
        invstd = (1.0 / _np.sqrt(var_sum / n + eps)).astype(pt)
        if stats is not None:
            # torch's update (batch_norm_cpu_update_stats_template): momentum * mean + (1 - momentum) * running
            # in the input's float type (momentum rounded to it first); the variance momentum * (var_sum / (n -
            # 1)) in double plus (1 - momentum) * running, read after the mean's update (one buffer when same)
            mom = f(momentum)
            keep = f(1) - mom
            var_sum_f = var_sum.astype(f)
            new_m = (mom * mf + keep * _np.asarray(rm, f)).astype(rm.dtype)
            new_v = _np.float64(mom) * (var_sum_f.astype(_np.float64) / (n - 1)) + \
                (keep * _np.asarray(new_m if same else rv, f)).astype(_np.float64)
            new_v = new_v.astype(f).astype(rv.dtype)
            stats.update(new_m, new_v)
            new = (new_m, new_v)     # not outputs of the node: what the graph's later readers take
        save = (mean, invstd) if has_running else (_np.zeros(0, x.dtype), _np.zeros(0, x.dtype))
    else:
        mean = _np.asarray(rm, pf)
        invstd = pf(1) / _np.sqrt(_np.asarray(rv, pf) + pf(eps))
        save = (_np.zeros(c, pt), _np.zeros(c, pt))                   # eval: no batch statistics
    alpha = _np.asarray(invstd, pf) * (_np.asarray(w, pf) if w is not None else pf(1))
    beta = (_np.asarray(b, pf) if b is not None else pf(0)) - _np.asarray(mean, pf) * alpha
    r = xf * _np.reshape(alpha.astype(f), shape) + _np.reshape(beta.astype(f), shape)
    return (r.astype(x.dtype),) + save + new


def _k_as_strided_empty(k):          # only ever of an empty tensor (group_norm's): nothing to read
    k.line(f"{k.out} = _np_zeros({tuple(k.shape.sizes)!r}, _d{k.code})")


def _k_batch_norm(k):
    g = k.run_arg()
    if not g:
        k.line(f"{k.out} = _native_batch_norm({', '.join(k.ins)}, {k.attrs[1]!r})")
        return
    # training with running statistics: updated in place, as LTC's kernel writes their buffers; the rest of the
    # graph (in its order) reads the new values (outputs 3 and 4 of the kernel's tuple)
    rm, rv = k.node.operands[-2], k.node.operands[-1]
    same = rm.node is rv.node and rm.index == rv.index
    k.line(f"{k.out} = _native_batch_norm({', '.join(k.ins)}, {k.attrs[1]!r}, stats={g}, same={same})")
    k.update_operand(len(k.node.operands) - 2, f"{k.out}[3]")
    k.update_operand(len(k.node.operands) - 1, f"{k.out}[4]")


def _np_nll2d(x, t, *rest):
    x = _np.moveaxis(_np.asarray(x), 1, -1)           # [N, H, W, C]
    t = _np.asarray(t)
    loss, total_w = _np_nll(x.reshape(-1, x.shape[-1]), t.reshape(-1), *rest)
    return loss.reshape(t.shape if rest[-1][0] == 0 else ()), total_w


def _np_nll(x, t, *rest):
    """(the loss, the total weight) of nll_loss_forward."""
    (red, ig, has_w), params = rest[-1], rest[:-1]
    x = _np.asarray(x)
    t = _np.asarray(t).astype(_np.int64)
    x2 = x.reshape(-1, x.shape[-1])
    t1 = t.reshape(-1)
    c = x2.shape[1]
    keep = t1 != ig
    bad = t1[keep & ((t1 < 0) | (t1 >= c))]
    if bad.size:
        raise IndexError(f"Target {int(bad[0])} is out of bounds.")
    safe = _np.where(keep, t1, 0)
    w = _np.asarray(params[0], _np.float64)[safe] if has_w else _np.ones(len(t1))
    w = _np.where(keep, w, 0.0)
    picked = _np.where(keep, x2[_np.arange(len(t1)), safe].astype(_np.float64), 0.0)   # ignored: never read
    total_w = _np.asarray(w.sum(), x.dtype)
    if red == 0:                         # torch: -x[t] * w, and +0 where the target is ignored
        losses = _np.where(keep, -picked * w, 0.0)
        return losses.astype(x.dtype).reshape(t.shape), total_w
    total = 0.0 - (picked * w).sum()     # torch subtracts from 0: a zero loss is +0
    if red == 2:
        return _np.asarray(total, x.dtype), total_w
    with _np.errstate(all="ignore"):
        return _np.asarray(total / w.sum(), x.dtype), total_w


helpers(_np_zeros=_np.zeros, _native_layer_norm=_np_layer_norm, _native_batch_norm=_np_batch_norm,
        _nll_loss_forward=_np_nll,
        _nll_loss2d_forward=_np_nll2d)


def _k_attrs(name):
    def emit(k):
        out = f", out={k.buf}" if k.buf else ""           # (kinds declared out=True)
        k.line(f"{k.out} = {name}({', '.join(k.ins)}, {k.attrs[1]!r}{out})")
    return emit


def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def _logsumexp_m(self, dim, keepdim=False):
    return logsumexp(self, dim, keepdim)


def _logsumexp_f(input, dim, keepdim=False):
    return logsumexp(_input(input, "logsumexp"), dim, keepdim)


def _layer_norm_f(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return layer_norm(_input(input, "layer_norm"), normalized_shape, weight, bias, eps)


declare("logsumexp", {"logsumexp": _logsumexp_m}, {"logsumexp": _logsumexp_f})
declare("layer_norm", {}, {"layer_norm": _layer_norm_f},
        [Kernel("aten::native_layer_norm", _k_attrs("_native_layer_norm"), out=True)], nn={"layer_norm": layer_norm})
declare("rms_norm", {}, {"rms_norm": rms_norm}, nn={"rms_norm": rms_norm})
declare("group_norm", {}, {"group_norm": group_norm},
        [Kernel("aten::as_strided_copy", _k_as_strided_empty)], nn={"group_norm": group_norm})
def _batch_norm_f(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    """torch.batch_norm (the module function's argument order)."""
    return batch_norm(_input(input, "batch_norm"), running_mean, running_var, weight, bias, training, momentum, eps)


declare("batch_norm", {}, {"batch_norm": _batch_norm_f},
        [Kernel("aten::native_batch_norm", _k_batch_norm)], nn={"batch_norm": batch_norm})
declare("nll_loss", {}, {}, [Kernel("aten::nll_loss_forward", _k_attrs("_nll_loss_forward")),
                             Kernel("aten::nll_loss2d_forward", _k_attrs("_nll_loss2d_forward"))],
        nn={"nll_loss": nll_loss})
declare("cross_entropy", {}, {}, nn={"cross_entropy": cross_entropy})
classes(**{"aten::native_layer_norm": "NativeLayerNorm", "aten::native_batch_norm": "NativeBatchNorm",
           "aten::nll_loss_forward": "NllLossForward", "aten::nll_loss2d_forward": "NllLoss2dForward"})
