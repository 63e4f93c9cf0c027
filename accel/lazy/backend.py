"""The numpy backend: compiles a post-order of LTC IR into one straight-line Python function over numpy.

A backend has ``name`` and ``compile(post, roots) -> Program``; a Program has ``run(params)`` (the
parameters' Data handles in parameter-sequence order, returning one array per root) and ``text`` (its
readable source).  Another backend (a fusing one, or one on accel streams) can be set beside this one with
accel.lazy.executor.set_backend.

Elementwise ops write into buffers that the program owns and reuses from step to step (numpy's ``out=``),
chosen by liveness: a buffer is reused once every value reading it (views included) has been consumed.
Roots never live in such buffers, so results handed to tensors are never overwritten.
"""
import numpy as _np

from accel.lazy import _dtypes as D
from accel.lazy.tensors import node_attrs


# Elementwise ops: numpy ufunc name, or a multi-statement recipe below.
_UFUNC = {"aten::neg": "negative", "aten::abs": "absolute", "aten::exp": "exp", "aten::log": "log",
          "aten::sqrt": "sqrt", "aten::cos": "cos", "aten::tanh": "tanh", "aten::mul": "multiply",
          "aten::div": "true_divide", "aten::maximum": "maximum", "aten::minimum": "minimum",
          "aten::pow": "power"}
_COMPARE = {"aten::eq": "equal", "aten::ne": "not_equal", "aten::lt": "less", "aten::le": "less_equal",
            "aten::gt": "greater", "aten::ge": "greater_equal"}
_EWISE = set(_UFUNC) | set(_COMPARE) | {"aten::add", "aten::sub", "aten::relu", "aten::sigmoid", "aten::rsqrt",
                        "aten::reciprocal", "aten::clamp"}
_VIEWS = {"reshape", "permute", "expand", "aten::t_copy"}
# ops whose 0-dim parameters numpy reads as Python numbers (weakly typed, as torch's wrapped numbers)
_WEAK = {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::pow", "aten::maximum", "aten::minimum",
         "aten::clamp"}


def _softmax(x, axis):
    if _np.size(x) == 0:                 # torch returns the empty result (numpy's max refuses a 0-size axis)
        return _np.empty_like(x)
    if x.dtype == _np.float16:
        return _half_softmax(x, axis, False)
    e = _np.exp(x - _np.max(x, axis=axis, keepdims=True))
    e /= _np.sum(e, axis=axis, keepdims=True)
    return e


def _log_softmax(x, axis):
    if _np.size(x) == 0:
        return _np.empty_like(x)
    if x.dtype == _np.float16:
        return _half_softmax(x, axis, True)
    s = x - _np.max(x, axis=axis, keepdims=True)
    s -= _np.log(_np.sum(_np.exp(s), axis=axis, keepdims=True))
    return s


def _half_softmax(x, axis, log):
    """float16 (log_)softmax as torch's CPU kernels compute it: in float, with the roundings to half of its
    two kernels (the last dim's keeps the sum and its log in half; the other dims' rounds exp(x - max))."""
    f32, f16 = _np.float32, _np.float16
    xf = x.astype(f32)
    s = xf - _np.max(xf, axis=axis, keepdims=True)
    e = _np.exp(s)
    total = _np.sum(e, axis=axis, keepdims=True)
    last = axis == x.ndim - 1
    if log:
        if last:
            return (s - _np.log(total.astype(f16).astype(f32)).astype(f16).astype(f32)).astype(f16)
        return (s - _np.log(total)).astype(f16)
    if not last:
        e = e.astype(f16).astype(f32)
    return (e / total).astype(f16)


def _ipow(x, y, dt):
    """pow with an integral or bool result as torch computes it: a negative exponent gives 1 for base 1, +-1
    for base -1 and 0 otherwise (numpy refuses negative integer powers); bool ** bool is ``x or not y``."""
    x, y = _np.asarray(x), _np.asarray(y)
    if x.dtype != dt and x.dtype.kind != "b" and dt != _np.bool_:
        x = x.astype(dt)            # a Python int base in a narrower result dtype wraps around, as torch casts it
    if dt == _np.bool_:
        return _np.logical_or(x, _np.logical_not(y))
    neg = y < 0
    if not neg.any():
        return _np.power(x, y, dtype=dt)
    r = _np.power(x, _np.where(neg, 0, y), dtype=dt)
    alt = _np.where(x == 1, 1, _np.where(x == -1, _np.where(y % 2 == 0, 1, -1), 0))
    return _np.where(neg, alt, r).astype(dt)


def _fpow(x, y, **kw):
    """Floating pow as torch's kernel (C's pow) computes it: numpy takes ``x ** 0.5`` (a single-element
    exponent) as ``sqrt(x)``, which gives NaN for -inf and -0.0 for -0.0 where pow gives +inf and +0.0."""
    r = _np.power(x, y, **kw)
    if _np.size(y) == 1 and _np.asarray(y).reshape(-1)[0] == 0.5:
        r = _np.asarray(r)
        fixed = _np.where(_np.isneginf(x), _np.asarray(_np.inf, r.dtype), r) + _np.asarray(0.0, r.dtype)
        if r.ndim:
            r[...] = fixed               # (r may be the out= buffer)
        else:
            r = fixed
    return r


def _astype(x, dt):
    return _np.asarray(x).astype(dt)


def _wrap_int(v, dt):
    """A 0-dim integer parameter's Python int as a scalar of the narrower integer dtype ``dt``, wrapping
    around as torch casts a wrapped number (numpy refuses an out-of-range Python int)."""
    return _np.array(v, _np.int64).astype(dt)[()]


_GLOBALS = {"_" + n: getattr(_np, n) for n in set(_UFUNC.values()) | set(_COMPARE.values()) | {
    "add", "subtract", "logical_or", "logical_and", "clip", "sum", "mean", "matmul", "reshape", "transpose",
    "broadcast_to", "concatenate", "asarray", "full", "zeros"}}
_GLOBALS.update({"_softmax": _softmax, "_log_softmax": _log_softmax, "_astype": _astype, "_wrap_int": _wrap_int,
                 "_ipow": _ipow, "_fpow": _fpow, "_checked_int": D.checked_int})
_NARROW_INTS = frozenset((D.UINT8, D.INT8, D.INT16, D.INT32))
for _c, _dt in D.CODE_TO_NP.items():
    _GLOBALS[f"_d{_c}"] = _dt


def _sample(node, is_param):
    """What numpy sees for a value: a Python scalar for a 0-dim parameter (weakly typed), else its dtype."""
    s = node.shapes[0]
    if is_param and not s.sizes:
        return {D.BOOL: True, D.FLOAT64: 0.0}.get(s.dtype, 0.0 if s.dtype in D.FLOATS else 0)
    return D.CODE_TO_NP[s.dtype]


class Program:
    """A compiled graph: ``run(params)`` returns the roots' arrays; ``text`` is the generated source;
    ``nbytes`` the host memory it keeps (its scratch buffers and its source text), which the
    computation cache's byte budget counts."""
    __slots__ = ("run", "text", "num_params", "graph_size", "nbytes")

    def __init__(self, run, text, num_params, graph_size, nbytes=0):
        self.run = run
        self.text = text
        self.num_params = num_params
        self.graph_size = graph_size
        self.nbytes = nbytes


class NumpyBackend:
    """Compiles IR to numpy calls (see the module docstring)."""
    name = "numpy"

    def compile(self, post, roots):
        return _Compiler(post, roots).build()


class _Compiler:
    def __init__(self, post, roots):
        self.post = post
        self.roots = roots
        self.index = {n: i for i, n in enumerate(post)}
        self.ns = dict(_GLOBALS)
        self.lines = []
        self.nbuf = 0

    def _var(self, node):
        return f"v{self.index[node]}"

    def build(self):
        post, index = self.post, self.index
        n = len(post)
        # parameters: device-data nodes deduplicated by handle, in post order
        param_of = {}
        handles = {}
        for i, node in enumerate(post):
            if node.is_device_data:
                h = node.handle
                k = handles.get(id(h))
                if k is None:
                    k = handles[id(h)] = len(handles)
                param_of[i] = k
        # aliases (views share their operand's memory) and the last reader of each base
        base = list(range(n))
        kinds = [None] * n
        attrs = [None] * n
        for i, node in enumerate(post):
            a = node_attrs(node)
            attrs[i] = a
            kind = a[0] if a is not None else node.op.qualified_name
            kinds[i] = kind
            if kind in _VIEWS:
                base[i] = base[index[node.operands[0].node]]
        last = [-1] * n
        for i, node in enumerate(post):
            for o in node.operands:
                b = base[index[o.node]]
                last[b] = i
                if kinds[index[o.node]] == "lazy_tensors::tensor_list":
                    for o2 in o.node.operands:
                        last[base[index[o2.node]]] = i
        escapes = set(base[index[r]] for r in self.roots)
        pool = {}
        owned = {}          # base index -> buffer name
        lines = self.lines
        for i, node in enumerate(post):
            kind = kinds[i]
            out = f"v{i}"
            if i in param_of:
                s = node.shapes[0]
                lines.append(f"{out} = P[{param_of[i]}].{'value' if not s.sizes else 'array'}")
                continue
            ins = [self._var(o.node) for o in node.operands]
            shape = node.shapes[0] if node.shapes else None
            buf = None
            if kind in _EWISE and shape.sizes and i not in escapes:
                # inputs read for the last time here may hand their buffer to the output
                self._release(i, node, base, last, owned, pool)
                key = (shape.dtype, tuple(shape.sizes))
                free = pool.get(key)
                if free:
                    buf = free.pop()
                else:
                    buf = f"_b{self.nbuf}"
                    self.nbuf += 1
                    self.ns[buf] = _np.empty(key[1], D.CODE_TO_NP[key[0]])
                owned[i] = (buf, key)
            self._emit(i, node, kind, attrs[i], ins, out, buf, param_of)
            self._release(i, node, base, last, owned, pool)
        rets = []
        for r in self.roots:
            i = index[r]
            s = r.shapes[0]
            v = f"v{i}"
            if i in param_of:
                v = f"P[{param_of[i]}].array"
            elif not s.sizes:
                v = f"_asarray({v}, _d{s.dtype})"
            elif base[i] in owned:
                v = f"{v}.copy()"
            rets.append(v)
        body = "\n".join("    " + x for x in lines)
        src = f"def run(P):\n{body}\n    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})\n"
        code = compile(src, "<accel.lazy graph>", "exec")
        exec(code, self.ns)
        run = self.ns.pop("run")        # no cycle through the globals: an evicted program is freed at once
        scratch = sum(self.ns[f"_b{k}"].nbytes for k in range(self.nbuf))
        return Program(run, src, len(handles), n, scratch + len(src))

    def _release(self, i, node, base, last, owned, pool):
        for o in node.operands:
            b = base[self.index[o.node]]
            if last[b] == i and b in owned:
                buf, key = owned.pop(b)
                pool.setdefault(key, []).append(buf)

    def _emit(self, i, node, kind, attrs, ins, out, buf, param_of):
        shape = node.shapes[0] if node.shapes else None
        code = shape.dtype if shape is not None else None
        dt = f"_d{code}"
        opnodes = [o.node for o in node.operands]
        # numpy's own result dtype for these inputs; pass dtype= only when torch's differs
        kw = ""
        weak = kind in _WEAK
        if not weak:
            # a 0-dim parameter is read as a Python number only where numpy's weak typing stands for torch's
            # wrapped-number / 0-dim priority; elsewhere (views, unary ops, reductions) it is its array
            for k, m in enumerate(opnodes):
                if self.index[m] in param_of and not m.shapes[0].sizes:
                    ins[k] = f"P[{param_of[self.index[m]]}].array"
        if kind in _EWISE:
            samples = [_sample(m, weak and self.index[m] in param_of) for m in opnodes]
            if kind in ("aten::add", "aten::sub"):
                natural = _np.result_type(*samples[:2])
            elif kind == "aten::clamp":
                natural = _np.result_type(*samples)
            elif kind in ("aten::sigmoid", "aten::rsqrt", "aten::reciprocal"):
                natural = None
            else:
                natural = _np.result_type(*samples)
            if natural is None or natural != D.CODE_TO_NP[code]:
                # torch casts every operand to the result dtype (a 0-dim Long into a Byte result wraps)
                kw += f", dtype={dt}, casting='unsafe'"
            if buf is not None:
                kw = f", out={buf}" + kw
            if code in _NARROW_INTS and weak:
                # integer parameters read as Python ints wrap around to the narrow dtype, as torch casts them
                # (every operand but add/sub's alpha, torch's checked Scalar)
                last = 2 if kind in ("aten::add", "aten::sub") else len(ins)
                ins = [f"_wrap_int({v}, {dt})" if k < last and self.index[m] in param_of and not m.shapes[0].sizes
                       and m.shapes[0].dtype in D.INTS else v for k, (v, m) in enumerate(zip(ins, opnodes))]
        L = self.lines.append
        x = ins[0] if ins else None
        if kind == "aten::pow":
            if code in D.FLOATS:
                L(f"{out} = _fpow({', '.join(ins)}{kw})")
            else:
                L(f"{out} = _ipow({ins[0]}, {ins[1]}, {dt})")
        elif kind in _UFUNC:
            L(f"{out} = _{_UFUNC[kind]}({', '.join(ins)}{kw})")
        elif kind == "aten::add" and code == D.BOOL:
            # bool + bool * alpha: alpha counts as a bool (numpy refuses to cast its int product to bool)
            L(f"{out} = _logical_or({x}, _logical_and({ins[1]}, {ins[2]} != 0){kw})")
        elif kind in ("aten::add", "aten::sub"):
            f = "_add" if kind == "aten::add" else "_subtract"
            y, a = ins[1], ins[2]
            if code in _NARROW_INTS:
                a = f"_checked_int({a}, {code})"        # torch's checked conversion of alpha, at run time
            L(f"{out} = {f}({x}, {y}{kw}) if {ins[2]} == 1 else "
              f"{f}({x}, _multiply({y}, {a}, dtype={dt}, casting='unsafe'){kw})")
        elif kind == "aten::relu":
            L(f"{out} = _maximum({x}, 0{kw})")
        elif kind == "aten::reciprocal":
            L(f"{out} = _true_divide(1, {x}{kw})")
        elif kind == "aten::rsqrt":
            L(f"{out} = _true_divide(1, _sqrt({x}, dtype={dt}){', out=' + buf if buf else ''})")
        elif kind == "aten::sigmoid":
            if shape.sizes:
                L(f"{out} = _negative({x}{kw})")
                L(f"_exp({out}, out={out}); _add({out}, 1, out={out}); _true_divide(1, {out}, out={out})")
            else:
                L(f"{out} = _true_divide(1, _add(1, _exp(_negative({x}, dtype={dt}))))")
        elif kind == "aten::clamp":
            has_lo, has_hi = attrs[1]
            k = 1
            lo = hi = "None"
            if has_lo:
                lo, k = ins[k], k + 1
            if has_hi:
                hi = ins[k]
            L(f"{out} = _clip({x}, {lo}, {hi}{kw})")
        elif kind in ("aten::sum.all", "aten::mean.all"):
            f = "_sum" if kind == "aten::sum.all" else "_mean"
            if code == D.FLOAT16:         # torch accumulates float16 in float32
                L(f"{out} = {f}({x}, dtype=_d{D.FLOAT32}).astype({dt})")
            else:
                L(f"{out} = {f}({x}, dtype={dt})")
        elif kind in ("aten::sum.dim", "aten::mean.dim"):
            f = "_sum" if kind == "aten::sum.dim" else "_mean"
            axes, keep = attrs[1]
            if code == D.FLOAT16:
                L(f"{out} = {f}({x}, axis={axes!r}, keepdims={keep}, dtype=_d{D.FLOAT32}).astype({dt})")
            else:
                L(f"{out} = {f}({x}, axis={axes!r}, keepdims={keep}, dtype={dt})")
        elif kind in ("aten::mm", "aten::bmm", "aten::mv"):
            L(f"{out} = _matmul({ins[0]}, {ins[1]})")
        elif kind == "reshape":
            L(f"{out} = _reshape({x}, {tuple(shape.sizes)!r})")
        elif kind == "aten::t_copy":
            L(f"{out} = _transpose({x})")
        elif kind == "permute":
            L(f"{out} = _transpose({x}, {attrs[1]!r})")
        elif kind == "expand":
            L(f"{out} = _broadcast_to({x}, {tuple(shape.sizes)!r})")
        elif kind in ("aten::_softmax", "aten::_log_softmax"):
            L(f"{out} = {kind[6:]}({x}, {attrs[1]})")
        elif kind == "aten::_to_copy":
            L(f"{out} = _astype({x}, {dt})")
        elif kind in _COMPARE:
            # compared in torch's promoted dtype (numpy would promote int64 with float32 to float64)
            cmp = D.CODE_TO_NP[attrs[1]]
            samples = [_sample(m, self.index[m] in param_of) for m in opnodes]
            if _np.result_type(*samples) != cmp:
                ins = [f"_astype({v}, _d{attrs[1]})" for v in ins]
            elif attrs[1] in _NARROW_INTS:
                # an integer read as a Python int wraps around to the compared dtype, as torch casts it
                # (uint8 t < -2 is t < 254)
                ins = [f"_wrap_int({v}, _d{attrs[1]})" if self.index[m] in param_of and not m.shapes[0].sizes
                       and m.shapes[0].dtype in D.INTS else v for v, m in zip(ins, opnodes)]
            L(f"{out} = _{_COMPARE[kind]}({ins[0]}, {ins[1]}{', out=' + buf if buf else ''})")
        elif kind == "aten::zero":
            L(f"{out} = _zeros({tuple(shape.sizes)!r}, {dt})")
        elif kind == "fill":
            L(f"{out} = _full({tuple(shape.sizes)!r}, {x}, {dt})")
        elif kind == "lazy_tensors::tensor_list":
            L(f"{out} = ({', '.join(ins)},)")
        elif kind == "aten::cat":
            axis, keep = attrs[1]
            if keep is not None:         # legacy empty 1-D operands take no part
                x = f"({''.join(f'{x}[{k}], ' for k in keep)})"
            if keep == ():
                L(f"{out} = _zeros((0,), {dt})")
            else:
                L(f"{out} = _concatenate({x}, axis={axis}, dtype={dt}, casting='same_kind')")
        else:
            raise NotImplementedError(f"the numpy backend has no kernel for {node}")


# ---- eager kernels for the ops LTC's TorchScript backend runs on the CPU (no lazy kernel) ----
def eager(name, args):
    """Run fallback op ``name`` (sin, rpow, dot, or ("amax", axes, keepdim)) on numpy values now."""
    if isinstance(name, tuple) and name[0] == "amax":
        r = _np.asarray(_np.amax(args[0], axis=name[1], keepdims=name[2]))
        if r.dtype.kind == "f":              # torch's max gives the positive quiet NaN, whatever NaN it met
            r = _np.where(_np.isnan(r), _np.array(_np.nan, r.dtype), r)
        return r
    if name == "sin":
        x = _np.asarray(args[0])
        return _np.sin(x if x.dtype.kind == "f" else x.astype(_np.float32))
    if name == "rpow":                       # number ** tensor
        x = _np.asarray(args[0])
        if x.dtype.kind == "f":
            return _fpow(args[1], x.astype(_np.float64))
        if type(args[1]) is float:
            return _np.power(args[1], x)
        return _ipow(args[1], x, _np.result_type(x, args[1]) if x.dtype.kind != "b" else _np.int64)
    if name == "dot":
        return _np.dot(args[0], args[1])
    if name == "copy":                       # dst.copy_(src): src broadcast to dst's shape (cast by the caller)
        return _np.broadcast_to(args[1], _np.shape(args[0]))
    raise NotImplementedError(f"no eager kernel for {name!r}")
