"""CUDA C code generation of accel.lazy's CUDA backend: a graph (post order + roots) as one CUDA C source holding
a sequence of kernels ("stages"), run in order on the stream.

Which nodes get memory: the roots, the results of the kernels that are not elementwise (reductions, softmax,
matmul, cat) and those kernels' operands.  Every other node is computed inline, where it is read:

- elementwise kinds (add / sub with alpha, mul, div, neg, relu, abs, exp, log, sqrt, rsqrt, tanh, sigmoid, cos,
  pow, reciprocal, silu, maximum / minimum / clamp, masked_fill, fill / zero, tril / triu, comparisons, _to_copy)
  as an expression of their operands at the same (broadcast) index;
- views (reshape / view, permute, t, expand, slice, select, alias, flip, repeat) as an index mapping onto their
  operand: no copy, the reader indexes its operand's memory (or its operand's inline value) where the view's
  element is.
- index_select / embedding / gather: the index read where the element is, then the input read at it; an index
  out of range sets the kernel's error flag (the program then runs the graph on the host, which raises).

A node is generated as "its value at index (i0, i1, ...)", memoised per (node, index), so a chain of
elementwise ops and views over several tensors becomes one pass.  Results with memory of one shape share one
elementwise kernel, unless one of them reads another kernel's result not computed yet.

Non-elementwise kernels (one thread block per output element / row / tile):
- sum / mean (all dims or some, keepdim), max / min / all / any (all dims), std: a block reduction (256
  threads, shared memory), accumulated in the result's dtype (integers wrapping, computed unsigned: bit-exact);
- _softmax / _log_softmax over any dim: a block per row (max, then the sum of exp, then the outputs);
- mm / bmm / mv / addmm (linear): 16x16 tiles through shared memory, accumulated in the result's dtype,
  addmm's alpha and beta applied as numpy's backend does (r * alpha, then + bias (* beta));
- cat: one elementwise kernel per part, writing its slice.

Every size, stride and offset is a kernel parameter (``Stage.consts``), never a literal, and broadcast dims read
with stride 0: the source depends on the graph's structure, ranks and dtypes only, so a new shape reuses the
compiled kernel.

Tolerances (what the tests allow): float32 elementwise arithmetic, integers, bools, comparisons and casts are
bit-exact with the numpy backend (-fmad=false: no contraction); exp / log / tanh are CUDA's (a few ulp, not
numpy's bits); reductions and matmul add in another order than numpy (pairwise / BLAS): relative error of the
order of n * eps of the values' magnitude (the tests use rtol 1e-4 / atol 1e-5 there); exp / log / tanh / cos /
sigmoid / pow within 4 ulp in the tests.
"""
from accel.lazy import _dtypes as D
from accel.lazy.tensors import node_attrs, run_arg as _run_arg, Output as _Output

CTYPE = {D.FLOAT32: "float", D.FLOAT64: "double", D.INT32: "int", D.INT64: "long long", D.BOOL: "bool",
         D.INT8: "signed char", D.UINT8: "unsigned char", D.INT16: "short", D.FLOAT16: "float"}
# float16: values are floats holding a half (each result rounded to half, as torch's and numpy's half ops compute
# in float and round once), stored as their 16 bits (PTX's cvt converts: no header needed)
STYPE = {**CTYPE, D.FLOAT16: "unsigned short"}
PRELUDE = ("__device__ __forceinline__ float h2f(unsigned short h) "
           "{ float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
           "__device__ __forceinline__ unsigned short f2h(float f) "
           "{ unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n")


def _load(code, expr):
    return f"h2f({expr})" if code == D.FLOAT16 else expr


def _store(code, expr):
    return f"f2h({expr})" if code == D.FLOAT16 else expr
# integer arithmetic is done unsigned (wrapping, as torch's and numpy's); the narrow types in unsigned int (C
# would promote them to int, whose overflow is undefined), the result truncated back
_UTYPE = {D.INT32: "unsigned int", D.INT64: "unsigned long long", D.INT8: "unsigned int", D.UINT8: "unsigned int",
          D.INT16: "unsigned int"}
_FLOATS = (D.FLOAT32, D.FLOAT64, D.FLOAT16)
_UNARY = {"aten::exp": "exp", "aten::log": "log", "aten::sqrt": "sqrt", "aten::tanh": "tanh", "aten::cos": "cos"}
_CMP = {"aten::eq": "==", "aten::ne": "!=", "aten::lt": "<", "aten::le": "<=", "aten::gt": ">", "aten::ge": ">="}
_BINARY = {"aten::mul": "*", "aten::div": "/"}
EWISE = frozenset(("aten::add", "aten::sub", "aten::neg", "aten::relu", "aten::_to_copy", "aten::abs",
                   "aten::reciprocal", "aten::rsqrt", "aten::sigmoid", "aten::maximum", "aten::minimum", "aten::clamp",
                   "aten::pow", "aten::masked_fill", "aten::zero", "fill", "aten::silu")) | set(_UNARY) | set(_CMP) | \
    set(_BINARY)
_FLOAT_ONLY = frozenset(("aten::div", "aten::reciprocal", "aten::rsqrt", "aten::sigmoid", "aten::pow",
                         "aten::silu")) | set(_UNARY)
VIEWS = frozenset(("reshape", "permute", "aten::t_copy", "expand", "aten::slice_copy", "aten::select_copy",
                   "aten::alias_copy", "aten::flip", "aten::repeat"))
TRI = frozenset(("aten::tril", "aten::triu"))
REDUCE = frozenset(("aten::sum.all", "aten::sum.dim", "aten::mean.all", "aten::mean.dim", "aten::max", "aten::min",
                    "aten::all", "aten::any", "aten::std"))
SOFTMAX = frozenset(("aten::_softmax", "aten::_log_softmax"))
MATMUL = frozenset(("aten::mm", "aten::bmm", "aten::mv", "aten::addmm"))
SPECIAL = REDUCE | SOFTMAX | MATMUL | {"aten::cat"}
INDEX = frozenset(("aten::index_select", "aten::embedding", "aten::gather"))
BLOCK = 256
TILE = 16


def kind_of(n):
    a = node_attrs(n)
    return (a[0] if a is not None else n.op.qualified_name), a


def _contig(sizes):
    st, s = [], 1
    for n in reversed(sizes):
        st.append(s)
        s *= n
    return tuple(reversed(st))


def _numel(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


class Stage:
    """One kernel of a graph: ``entry`` (its name), ``kind`` ("ewise", "reduce", "softmax", "matmul"),
    ``outs`` (node indices it writes), ``bufs`` (the node / parameter buffers it reads, in argument order:
    ("node", i) or ("param", k)), ``scalars`` (parameter indices passed by value), ``consts`` (the sizes,
    strides and offsets the kernel takes as parameters, in order), ``grid`` / ``block``."""
    __slots__ = ("entry", "kind", "outs", "bufs", "scalars", "consts", "grid", "block", "err")


class Graph:
    """The code of one graph (``build()`` returns None, or why it is not covered)."""

    def __init__(self, post, roots):
        self.post, self.roots = post, roots
        self.index = {n: i for i, n in enumerate(post)}
        self.has_err = False             # an index op: its kernels flag an index out of range

    # ------------------------------------------------------------------ analysis
    def build(self):
        post, index = self.post, self.index
        handles, param_of = {}, {}
        for i, n in enumerate(post):
            if n.is_device_data:
                k = handles.get(id(n.handle))
                if k is None:
                    k = handles[id(n.handle)] = len(handles)
                param_of[i] = k
        self.param_of = param_of
        self.num_params = len(handles)
        self.param_shapes = [None] * len(handles)
        for i, k in param_of.items():
            self.param_shapes[k] = post[i].shapes[0]
        self.kinds, self.attrs = {}, {}
        for i, n in enumerate(post):
            if n.op.qualified_name == "lazy_tensors::tensor_list" and i not in param_of:
                self.kinds[i], self.attrs[i] = "lazy_tensors::tensor_list", None
                continue
            if n.num_outputs != 1 or len(n.shapes) != 1:
                return f"{n.op.qualified_name}: {n.num_outputs} outputs"
            for o in n.operands:
                if type(o) is _Output and o.node.num_outputs > 1:
                    return "an operand of a multi-output node"
            if _run_arg(n) is not None:
                return f"{n.op.qualified_name}: a run-time argument"
            s = n.shapes[0]
            if s.dtype not in CTYPE:
                return f"{n.op.qualified_name}: dtype {D.DTYPES[s.dtype]}"
            if i in param_of:
                continue
            kind, a = kind_of(n)
            self.kinds[i], self.attrs[i] = kind, a
            why = self._covered(i, n, kind, a)
            if why:
                return why
        rets, self.root_nodes = [], []
        for r in self.roots:
            if type(r) is _Output:
                if r.node.num_outputs > 1:
                    return "a multi-output root"
                r = r.node
            i = index[r]
            if i in param_of:
                rets.append(("param", param_of[i]))
            else:
                rets.append(("node", i))
        self.rets = rets
        # which nodes get memory: roots, special results, special operands
        mat = set()
        for w, i in rets:
            if w == "node":
                mat.add(i)
        for i, kind in self.kinds.items():
            if kind == "aten::cat":                  # (its parts are computed into it, where they are read)
                mat.add(i)
            elif kind in SPECIAL:
                mat.add(i)
                for o in post[i].operands:
                    j = index[o.node]
                    if j not in param_of:
                        mat.add(j)
        self.mat = mat
        self._emit()
        return None

    def _covered(self, i, n, kind, a):
        s = n.shapes[0]
        if kind in EWISE:
            sizes = tuple(s.sizes)
            for o in n.operands:
                os_ = tuple(o.node.shapes[0].sizes)
                if len(os_) > len(sizes) or any(x not in (1, y) for x, y in zip(reversed(os_), reversed(sizes))):
                    return f"{kind}: operand shape {list(os_)} does not broadcast to {list(sizes)}"
                if o.node.shapes[0].dtype not in CTYPE:
                    return f"{kind}: operand dtype"
            if kind in _CMP and (a is None or a[1] not in CTYPE):
                return f"{kind}: compared dtype"
            if kind in _FLOAT_ONLY and s.dtype not in _FLOATS:
                return f"{kind}: an integer result"
            if kind == "aten::pow" and n.operands[1].node.shapes[0].dtype not in _FLOATS + (D.INT64, D.INT32):
                return "aten::pow: exponent dtype"
            if kind in ("aten::neg", "aten::relu", "aten::clamp", "aten::maximum", "aten::minimum") and \
                    s.dtype == D.BOOL:
                return f"{kind} of bool"
            return None
        if kind in TRI:
            x = n.operands[0].node.shapes[0]
            return None if x.dtype == s.dtype and len(s.sizes) >= 2 and type(a[1]) is int else f"{kind}: operand"
        if kind in INDEX:
            x, ix = n.operands[0].node.shapes[0], n.operands[1].node.shapes[0]
            if ix.dtype not in (D.INT64, D.INT32) or x.dtype != s.dtype or not x.sizes:
                return f"{kind}: dtypes"
            if kind == "aten::index_select" and len(ix.sizes) > 1:
                return f"{kind}: index rank"
            if kind == "aten::embedding" and len(x.sizes) != 2:
                return f"{kind}: weight rank"
            if kind == "aten::gather" and len(ix.sizes) != len(x.sizes):
                return f"{kind}: index rank"
            self.has_err = True
            return None
        if kind in VIEWS:
            if a is None:
                return f"{kind}: no attributes"
            src = n.operands[0].node.shapes[0]
            if src.dtype != s.dtype:
                return f"{kind}: a view changing dtype"
            if kind == "permute" and sorted(a[1]) != list(range(len(s.sizes))):
                return "permute: axes"
            return None
        if kind == "lazy_tensors::tensor_list":
            return None
        if kind == "aten::cat":
            lst = n.operands[0].node
            if a is None or a[1][1] is not None or self.kinds.get(self.index[lst]) != "lazy_tensors::tensor_list":
                return "aten::cat: legacy empty operands"
            if any(o.node.num_outputs != 1 or o.node.shapes[0].dtype not in CTYPE for o in lst.operands):
                return "aten::cat: operands"
            return None
        if kind == "prim::Constant":
            return None if s.dtype == D.INT64 and not s.sizes and type(a[1]) is int else "prim::Constant: value"
        if kind in SPECIAL and (s.dtype == D.FLOAT16 or any(
                o.node.shapes[0].dtype == D.FLOAT16 for o in n.operands if len(o.node.shapes) == 1)):
            return f"{kind}: float16"
        if kind in REDUCE:
            xs = n.operands[0].node.shapes[0]
            if kind in ("aten::max", "aten::min"):
                return None if xs.dtype == s.dtype and s.dtype != D.BOOL and xs.sizes and \
                    0 not in xs.sizes else f"{kind}: dtype or size"
            if kind in ("aten::all", "aten::any"):
                return None if s.dtype in (D.BOOL, D.UINT8) else f"{kind}: dtype"
            if kind == "aten::std":
                return None if s.dtype in _FLOATS and xs.dtype == s.dtype and type(a[1][1]) in (int, float) \
                    else "aten::std: dtype"
            if s.dtype not in (D.FLOAT32, D.FLOAT64, D.INT64, D.INT32) or \
                    (kind.startswith("aten::mean") and s.dtype not in (D.FLOAT32, D.FLOAT64)):
                return f"{kind}: dtype {D.DTYPES[s.dtype]}"
            return None
        if kind in SOFTMAX:
            if s.dtype not in (D.FLOAT32, D.FLOAT64) or n.operands[0].node.shapes[0].dtype != s.dtype or not s.sizes:
                return f"{kind}: dtype or rank"
            return None
        if kind in MATMUL:
            ops = n.operands[1:3] if kind == "aten::addmm" else n.operands[:2]
            if any(o.node.shapes[0].dtype != s.dtype for o in ops) or s.dtype == D.BOOL:
                return f"{kind}: operand dtypes"
            if kind == "aten::addmm":
                bs = tuple(n.operands[0].node.shapes[0].sizes)
                if n.operands[0].node.shapes[0].dtype != s.dtype or len(bs) > 2 or \
                        any(x not in (1, y) for x, y in zip(reversed(bs), reversed(tuple(s.sizes)))):
                    return "aten::addmm: bias"
                for o in n.operands[3:]:
                    if o.node.shapes[0].sizes or self.index[o.node] not in self.param_of:
                        return "aten::addmm: alpha / beta"
            return None
        return f"{kind} is not covered by the CUDA code generation yet"

    # ------------------------------------------------------------------ emission
    def _reads(self, i, memo):
        """The nodes with memory that computing node i inline reads (not i itself)."""
        r = memo.get(i)
        if r is None:
            r = set()
            for o in self.post[i].operands:
                j = self.index[o.node]
                if j in self.param_of:
                    continue
                if j in self.mat:
                    r.add(j)
                else:
                    r |= self._reads(j, memo)
            memo[i] = r
        return r

    def _emit(self):
        """Stages in post order: a non-elementwise kernel each; results with memory of one shape share an
        elementwise kernel while none of them reads another pending kernel's result (else those run first)."""
        post, mat = self.post, self.mat
        self.kernels = []                # source text of each __global__ function
        self.stages = []
        pending = {}                     # shape -> [node indices], kernels not emitted yet, in creation order
        member = {}
        rmemo = {}

        def flush():
            for outs in pending.values():
                self._ewise(outs)
            pending.clear()
            member.clear()

        for i in sorted(mat):
            if self.kinds[i] in SPECIAL:
                flush()
                kind = self.kinds[i]
                if kind == "aten::cat":
                    self._cat(i)
                elif kind in REDUCE:
                    self._reduce(i)
                elif kind in SOFTMAX:
                    self._softmax(i)
                else:
                    self._matmul(i)
                continue
            key = tuple(post[i].shapes[0].sizes)
            if any(member.get(j, key) != key for j in self._reads(i, rmemo)):
                flush()
            pending.setdefault(key, []).append(i)
            member[i] = key
        flush()
        self.source = PRELUDE + "\n".join(self.kernels)

    def _new_stage(self, kind, outs):
        st = Stage()
        st.entry = f"k{len(self.stages)}"
        st.kind, st.outs, st.bufs, st.scalars, st.consts, st.err = kind, outs, [], [], [], False
        self.stages.append(st)
        return st

    # a value context: reads of buffers / scalars for one kernel
    def _args(self, st):
        args = []
        for j, i in enumerate(st.outs):
            args.append(f"{STYPE[self.post[i].shapes[0].dtype]}* __restrict__ o{j}")
        if st.err:
            args.append("int* __restrict__ err")
        for w, k in st.bufs:
            code = self.post[k].shapes[0].dtype if w == "node" else self.param_shapes[k].dtype
            args.append(f"const {STYPE[code]}* __restrict__ {self._bufname(w, k)}")
        for k in st.scalars:
            args.append(f"{CTYPE[self.param_shapes[k].dtype]} s{k}")
        for j in range(len(st.consts)):
            args.append(f"long long z{j}")
        return args

    @staticmethod
    def _z(st, value):
        """A size / stride / offset of this kernel: a kernel parameter (one per use, never shared by value, so
        that the source is the same for every shape and a new shape reuses the compiled kernel)."""
        st.consts.append(int(value))
        return f"z{len(st.consts) - 1}"

    @staticmethod
    def _bufname(w, k):
        return f"b{k}" if w == "node" else f"p{k}"

    def _buf(self, st, i):
        """The buffer expression of node i (materialised or a tensor parameter) in stage st."""
        k = self.param_of.get(i)
        key = ("param", k) if k is not None else ("node", i)
        if key not in st.bufs:
            st.bufs.append(key)
        return self._bufname(*key)

    def _scalar(self, st, k):
        if k not in st.scalars:
            st.scalars.append(k)
        return f"s{k}"

    def _value(self, st, i, idx, body, memo, inline_ok):
        """A C variable holding node i's value at index ``idx`` (a tuple of C expressions, one per dim)."""
        key = (i, idx)
        v = memo.get(key)
        if v is not None:
            return v
        n = self.post[i]
        s = n.shapes[0]
        ct = CTYPE[s.dtype]
        v = f"v{len(memo)}"
        memo[key] = v
        if i in self.param_of and not s.sizes:
            body.append(f"{ct} {v} = {self._scalar(st, self.param_of[i])};")
            return v
        if i in self.param_of or (i in self.mat and not inline_ok(i)):
            # (a dim of size 1 has stride 0: its index may run over a broadcast)
            st_ = _contig(tuple(s.sizes))
            off = " + ".join(f"({x}) * {self._z(st, 0 if s.sizes[d] == 1 else st_[d])}"
                             for d, x in enumerate(idx)) or "0"
            body.append(f"{ct} {v} = {_load(s.dtype, f'{self._buf(st, i)}[{off}]')};")
            return v
        kind, a = self.kinds[i], self.attrs[i]
        if kind == "prim::Constant":
            body.append(f"long long {v} = {self._z(st, a[1])};")
            return v
        if kind in INDEX:
            w = self._indexed(st, i, n, kind, a, idx, body, memo, inline_ok)
            memo[key] = w
            return w
        if kind in TRI:
            # tril keeps col - row <= k, triu col - row >= k (a broadcast dim's index counts as 0)
            sz = tuple(s.sizes)
            row = f"({idx[-2]}) * {self._z(st, 0 if sz[-2] == 1 else 1)}"
            col = f"({idx[-1]}) * {self._z(st, 0 if sz[-1] == 1 else 1)}"
            x = self._value(st, self.index[n.operands[0].node], idx, body, memo, inline_ok)
            op = "<=" if kind == "aten::tril" else ">="
            body.append(f"{ct} {v} = ({col} - {row} {op} {self._z(st, a[1])}) ? {x} : ({ct})0;")
            return v
        if kind in VIEWS:
            src = self.index[n.operands[0].node]
            sidx = self._view_index(st, kind, a, n, idx, body, memo)
            w = self._value(st, src, sidx, body, memo, inline_ok)
            memo[key] = w
            return w
        ins = []
        nd = len(s.sizes)
        for o in n.operands:
            m = o.node
            osz = tuple(m.shapes[0].sizes)
            oidx = tuple(idx[nd - len(osz) + d] for d in range(len(osz)))     # (size-1 dims: see the reads)
            w = self._value(st, self.index[m], oidx, body, memo, inline_ok)
            if s.dtype == D.FLOAT16 and not osz and m.shapes[0].dtype != D.FLOAT16 and \
                    kind not in ("aten::mul", "aten::div") and self.index[m] in self.param_of:
                w = f"h2f(f2h((float){w}))"     # (a number is rounded to half first, but by mul / div: numpy's)
            ins.append(w)
        e = _expr(kind, s.dtype, ins, a)
        if s.dtype == D.FLOAT16 and kind not in _CMP:
            e = f"h2f(f2h({e}))"
        body.append(f"{ct} {v} = {e};")
        return v

    def _indexed(self, st, i, n, kind, a, idx, body, memo, inline_ok):
        """index_select / embedding / gather: the index read (inline) where the element is, then the input read
        at it.  An index out of range sets the kernel's error flag (and reads element 0): the program then runs
        the graph on the host, which raises the numpy backend's error."""
        xn, ixn = n.operands[0].node, n.operands[1].node
        xs = tuple(xn.shapes[0].sizes)
        if kind == "aten::embedding":
            iidx, axis, bound = idx[:-1], 0, xs[0]
        elif kind == "aten::index_select":
            axis = a[1] if a[1] >= 0 else a[1] + len(xs)
            iidx, bound = (idx[axis],) if ixn.shapes[0].sizes else (), xs[axis]
        else:
            axis = a[1] if a[1] >= 0 else a[1] + len(xs)
            iidx, bound = idx, xs[axis]
        iv = self._value(st, self.index[ixn], tuple(iidx), body, memo, inline_ok)
        q = f"q{len(memo)}"
        memo[("q", q)] = q
        st.err = True
        body.append(f"long long {q} = (long long){iv}; if ({q} < 0 || {q} >= {self._z(st, bound)}) {{ *err = 1; {q} = 0; }}")
        if kind == "aten::embedding":
            xidx = (q, idx[-1])
        else:
            xidx = tuple(q if d == axis else x for d, x in enumerate(idx))
        return self._value(st, self.index[xn], xidx, body, memo, inline_ok)

    def _view_index(self, st, kind, a, n, idx, body, memo):
        out = tuple(n.shapes[0].sizes)
        src = tuple(n.operands[0].node.shapes[0].sizes)
        if kind == "aten::alias_copy":
            return idx
        if kind == "aten::flip":
            dims = {d + len(src) if d < 0 else d for d in a[1]}
            return tuple(f"({self._z(st, src[d] - 1)} - ({x}) * {self._z(st, 0 if src[d] == 1 else 1)})"
                         if d in dims else x for d, x in enumerate(idx))
        if kind == "aten::repeat":
            nd = len(out)
            return tuple(f"(({idx[nd - len(src) + d]}) % {self._z(st, max(src[d], 1))})" for d in range(len(src)))
        if kind == "permute":
            axes = a[1]
            sidx = [None] * len(src)
            for j, ax in enumerate(axes):
                sidx[ax] = idx[j]
            return tuple(sidx)
        if kind == "aten::t_copy":
            return tuple(reversed(idx)) if len(idx) == 2 else idx
        if kind == "expand":
            nd = len(out)
            return tuple(idx[nd - len(src) + d] for d in range(len(src)))       # (size-1 dims: see the reads)
        if kind == "aten::slice_copy":
            d, lo, hi, step = a[1]
            r = range(src[d])[slice(lo, hi, step)]
            sidx = list(idx)
            sidx[d] = f"({self._z(st, r.start)} + ({idx[d]}) * {self._z(st, 0 if out[d] == 1 else r.step)})"
            return tuple(sidx)
        if kind == "aten::select_copy":
            d, i = a[1]
            i = i + src[d] if i < 0 else i
            return tuple(idx[:d]) + (self._z(st, i),) + tuple(idx[d:])
        # reshape: the element's linear position in the output, unravelled in the source's shape
        ost = _contig(out)
        lin = " + ".join(f"({x}) * {self._z(st, 0 if out[d] == 1 else ost[d])}" for d, x in enumerate(idx)) or "0"
        t = f"l{len(memo)}"
        memo[("lin", t)] = t
        body.append(f"long long {t} = {lin};")
        sst = _contig(src)
        return tuple(f"(({t} / {self._z(st, sst[d])}) % {self._z(st, src[d])})" for d in range(len(src)))

    def _unravel(self, st, var, sizes, body, prefix):
        """C statements splitting the linear ``var`` over ``sizes`` (kernel parameters); returns the per-dim
        expressions."""
        nd = len(sizes)
        if not nd:
            return ()
        body.append(f"long long {prefix}r = {var};")
        names = [None] * nd
        for d in range(nd - 1, 0, -1):
            z = self._z(st, sizes[d])
            body.append(f"long long {prefix}{d} = {prefix}r % {z}; {prefix}r /= {z};")
            names[d] = f"{prefix}{d}"
        body.append(f"long long {prefix}0 = {prefix}r;")
        names[0] = f"{prefix}0"
        return tuple(names)

    def _finish(self, st, body, prologue=""):
        src = (f'extern "C" __global__ void {st.entry}(' + ", ".join(self._args(st) + ["long long n"]) + ")\n{\n"
               + prologue + "".join(f"    {b}\n" for b in body) + "}\n")
        self.kernels.append(src)

    def _ewise(self, outs):
        st = self._new_stage("ewise", outs)
        sizes = tuple(self.post[outs[0]].shapes[0].sizes)
        body = ["long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;", "if (i >= n) return;"]
        idx = self._unravel(st, "i", sizes, body, "c")
        memo = {}
        outset = set(outs)
        for j, i in enumerate(outs):
            v = self._value(st, i, idx, body, memo, lambda q: q in outset)
            body.append(f"o{j}[i] = {_store(self.post[i].shapes[0].dtype, v)};")
        st.grid = ("n", _numel(sizes))
        st.block = BLOCK
        self._finish(st, body)

    def _cat(self, i):
        """cat: one elementwise kernel per part, computing the part (inline, as any elementwise chain) into its
        slice of the result."""
        n = self.post[i]
        axis = self.attrs[i][1][0]
        out = tuple(n.shapes[0].sizes)
        ost = _contig(out)
        start = 0
        for o in n.operands[0].node.operands:
            part = tuple(o.node.shapes[0].sizes)
            st = self._new_stage("ewise", [i])
            body = ["long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;", "if (i >= n) return;"]
            idx = self._unravel(st, "i", part, body, "c")
            v = self._value(st, self.index[o.node], idx, body, {}, lambda q: False)
            off = " + ".join(f"({x}{f' + {self._z(st, start)}' if d == axis else ''}) * {self._z(st, ost[d])}"
                             for d, x in enumerate(idx)) or "0"
            code = n.shapes[0].dtype
            body.append(f"o0[{off}] = {_store(code, f'({CTYPE[code]}){v}')};")
            st.grid = ("n", _numel(part))
            st.block = BLOCK
            self._finish(st, body)
            start += part[axis]

    def _operand_reader(self, st, o):
        """(C buffer name) of a special kernel's operand: its memory (a parameter or a materialised node)."""
        return self._buf(st, self.index[o.node])

    def _reduce(self, i):
        """sum / mean / max / min / all / any / std over some dims: a block per output element, each thread
        accumulating a strided share, then a tree in shared memory (std: the mean first, then the squares)."""
        n = self.post[i]
        kind, a = self.kinds[i], self.attrs[i]
        st = self._new_stage("reduce", [i])
        x = n.operands[0].node
        src = tuple(x.shapes[0].sizes)
        code = n.shapes[0].dtype
        ct = CTYPE[code]
        if kind in ("aten::sum.all", "aten::mean.all", "aten::max", "aten::min", "aten::all", "aten::any"):
            axes = tuple(range(len(src)))
        else:
            axes = tuple(a[1][0])
        keep = [d for d in range(len(src)) if d not in axes]
        red = list(axes)
        sst = _contig(src)
        inp = self._operand_reader(st, n.operands[0])
        op = {"aten::max": "max", "aten::min": "min", "aten::all": "all", "aten::any": "any"}.get(kind, "sum")
        at = "bool" if op in ("all", "any") else ct if op in ("max", "min") else _UTYPE.get(code, ct)
        body = [f"__shared__ {at} sh[{BLOCK}];", "long long o = blockIdx.x;"]
        oidx = self._unravel(st, "o", tuple(src[d] for d in keep), body, "q")
        base = " + ".join(f"{oidx[j]} * {self._z(st, sst[d])}" for j, d in enumerate(keep)) or "0"
        body.append(f"long long base = {base};")
        body.append(f"long long rn = {self._z(st, _numel([src[d] for d in red]))};")
        inner = []
        ridx = self._unravel(st, "r", tuple(src[d] for d in red), inner, "w")
        off = " + ".join(f"{ridx[j]} * {self._z(st, sst[d])}" for j, d in enumerate(red)) or "0"

        def combine(x_, y_):
            if op == "all":
                return f"({x_} && {y_})"
            if op == "any":
                return f"({x_} || {y_})"
            if op in ("max", "min"):
                return _maxmin(op == "max", x_, y_, code)
            return f"({at})({x_} + {y_})"

        def block_reduce(value, init):
            body.append("{")
            body.append(f"{at} acc = {init};")
            body.append("for (long long r = threadIdx.x; r < rn; r += blockDim.x) {")
            body.extend("    " + b for b in inner)
            body.append(f"    {at} e = {value};")
            body.append(f"    acc = {combine('acc', 'e')};")
            body.append("}")
            body.append("sh[threadIdx.x] = acc; __syncthreads();")
            body.append(f"for (int s = {BLOCK // 2}; s > 0; s >>= 1) {{")
            body.append(f"    if (threadIdx.x < s) sh[threadIdx.x] = {combine('sh[threadIdx.x]', 'sh[threadIdx.x + s]')};")
            body.append("    __syncthreads();")
            body.append("}")
            body.append("}")

        elem = f"{inp}[base + {off}]"
        if op in ("all", "any"):
            block_reduce(f"({elem} != 0)", "true" if op == "all" else "false")
            res = f"({ct})sh[0]"
        elif op in ("max", "min"):
            # (every thread starts from the first element: max / min are idempotent)
            block_reduce(f"({at}){elem}", f"({at}){inp}[base]")
            res = "sh[0]"
        else:
            block_reduce(f"({at})({ct}){elem}", "0")
            res = f"({ct})sh[0]"
            if kind.startswith("aten::mean"):
                res = f"({res} / ({ct})rn)"
            elif kind == "aten::std":
                corr = a[1][1]
                body.append(f"{ct} m = ({ct})sh[0] / ({ct})rn; __syncthreads();")
                inner_sq = f"(({ct}){elem} - m) * (({ct}){elem} - m)"
                block_reduce(inner_sq, "0")
                body.append(f"double den = (double)rn - (double)({corr!r}); if (den < 0) den = 0;")
                res = f"({ct})sqrt((double)(sh[0] / ({ct})den))" if ct == "double" else \
                    f"sqrtf(sh[0] / ({ct})den)"
        body.append(f"if (threadIdx.x == 0) o0[o] = {res};")
        st.grid = ("blocks", _numel([src[d] for d in keep]))
        st.block = BLOCK
        self._finish(st, body)

    def _softmax(self, i):
        n = self.post[i]
        kind, a = self.kinds[i], self.attrs[i]
        st = self._new_stage("softmax", [i])
        sizes = tuple(n.shapes[0].sizes)
        d = a[1]
        d = d + len(sizes) if d < 0 else d
        inner = _numel(sizes[d + 1:])
        length = sizes[d]
        outer = _numel(sizes[:d])
        ct = CTYPE[n.shapes[0].dtype]
        f = "f" if ct == "float" else ""
        inp = self._operand_reader(st, n.operands[0])
        body = [f"__shared__ {ct} sh[{BLOCK}];",
                f"long long len = {self._z(st, length)}, inner = {self._z(st, inner)};",
                "long long row = blockIdx.x; long long base = (row / inner) * (len * inner) + (row % inner);",
                f"{ct} m = {'-__int_as_float(0x7f800000)' if ct == 'float' else '-__longlong_as_double(0x7ff0000000000000LL)'};",
                f"for (long long j = threadIdx.x; j < len; j += blockDim.x) {{ {ct} x = {inp}[base + j * inner]; m = (x > m || x != x) ? x : m; }}",
                "sh[threadIdx.x] = m; __syncthreads();",
                f"for (int s = {BLOCK // 2}; s > 0; s >>= 1) {{ if (threadIdx.x < s) {{ {ct} y = sh[threadIdx.x + s]; "
                "if (y > sh[threadIdx.x] || y != y) sh[threadIdx.x] = y; } __syncthreads(); }",
                "m = sh[0]; __syncthreads();",
                f"{ct} t = 0;",
                f"for (long long j = threadIdx.x; j < len; j += blockDim.x) t = t + exp{f}({inp}[base + j * inner] - m);",
                "sh[threadIdx.x] = t; __syncthreads();",
                f"for (int s = {BLOCK // 2}; s > 0; s >>= 1) {{ if (threadIdx.x < s) sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + s]; __syncthreads(); }}",
                "t = sh[0];"]
        if kind == "aten::_softmax":
            body.append(f"for (long long j = threadIdx.x; j < len; j += blockDim.x) "
                        f"o0[base + j * inner] = exp{f}({inp}[base + j * inner] - m) / t;")
        else:
            body.append(f"{ct} lt = log{f}(t);")
            body.append(f"for (long long j = threadIdx.x; j < len; j += blockDim.x) "
                        f"o0[base + j * inner] = ({inp}[base + j * inner] - m) - lt;")
        st.grid = ("blocks", outer * inner)
        st.block = BLOCK
        self._finish(st, body)

    def _matmul(self, i):
        n = self.post[i]
        kind = self.kinds[i]
        st = self._new_stage("matmul", [i])
        code = n.shapes[0].dtype
        ct = CTYPE[code]
        at = _UTYPE.get(code, ct)
        ops = n.operands[1:3] if kind == "aten::addmm" else n.operands[:2]
        A, B = ops
        asz, bsz = tuple(A.node.shapes[0].sizes), tuple(B.node.shapes[0].sizes)
        if kind == "aten::bmm":
            batch, M, K = asz
            N = bsz[2]
            sa = (M * K, K, 1)
            sb = (K * N, N, 1)
        elif kind == "aten::mv":
            batch, (M, K), N = 1, asz, 1
            sa, sb = (0, K, 1), (0, 0, 1)            # B(k, j) = b[k]
            sb = (0, 1, 0)
        else:
            batch, (M, K), N = 1, asz, bsz[1]
            sa, sb = (0, K, 1), (0, N, 1)
        a_ = self._operand_reader(st, A)
        b_ = self._operand_reader(st, B)
        T = TILE
        body = [f"__shared__ {at} ta[{T}][{T}]; __shared__ {at} tb[{T}][{T}];",
                f"long long M = {self._z(st, M)}, N = {self._z(st, N)}, K = {self._z(st, K)};",
                f"long long sa0 = {self._z(st, sa[0])}, sa1 = {self._z(st, sa[1])}, sa2 = {self._z(st, sa[2])};",
                f"long long sb0 = {self._z(st, sb[0])}, sb1 = {self._z(st, sb[1])}, sb2 = {self._z(st, sb[2])};",
                "long long z = blockIdx.z; int ty = threadIdx.y, tx = threadIdx.x;",
                f"long long row = (long long)blockIdx.y * {T} + ty, col = (long long)blockIdx.x * {T} + tx;",
                f"{at} acc = 0;",
                f"for (long long k0 = 0; k0 < K; k0 += {T}) {{",
                f"    ta[ty][tx] = (row < M && k0 + tx < K) ? ({at}){a_}[z * sa0 + row * sa1 + (k0 + tx) * sa2] : ({at})0;",
                f"    tb[ty][tx] = (col < N && k0 + ty < K) ? ({at}){b_}[z * sb0 + (k0 + ty) * sb1 + col * sb2] : ({at})0;",
                "    __syncthreads();",
                f"    for (int k = 0; k < {T}; k++) acc = acc + ta[ty][k] * tb[k][tx];",
                "    __syncthreads();",
                "}",
                "if (row >= M || col >= N) return;",
                f"{ct} r = ({ct})acc;"]
        if kind == "aten::addmm":
            bias, beta, alpha = n.operands[0].node, n.operands[3].node, n.operands[4].node
            bsz_ = tuple(bias.shapes[0].sizes)
            bb = self._buf(st, self.index[bias])
            full = (1,) * (2 - len(bsz_)) + bsz_                  # the bias as [rows, cols], broadcast dims stride 0
            boff = f"row * {self._z(st, 0 if full[0] == 1 else full[1])} + col * {self._z(st, 0 if full[1] == 1 else 1)}"
            sb_ = self._scalar(st, self.param_of[self.index[beta]])
            sa_ = self._scalar(st, self.param_of[self.index[alpha]])
            body.append(f"if ({sa_} != 1) r = r * ({ct}){sa_};")
            body.append(f"{ct} bv = {bb}[{boff}]; r = r + ({sb_} == 1 ? bv : ({ct})(bv * ({ct}){sb_}));")
        body.append("o0[z * (M * N) + row * N + col] = r;")
        st.grid = ("tiles", ((N + T - 1) // T, (M + T - 1) // T, batch))
        st.block = (T, T)
        self._finish(st, body)


def _expr(kind, code, ins, a):
    ct = CTYPE[code]
    if kind == "aten::_to_copy":
        if code in (D.INT8, D.UINT8, D.INT16):
            return f"({ct})(long long){ins[0]}"   # (a float to a narrow integer: through int64, wrapping)
        return f"({ct}){ins[0]}"
    x = f"({ct}){ins[0]}"
    if kind in ("aten::add", "aten::sub"):
        y, alpha = f"({ct}){ins[1]}", ins[2]
        if code == D.BOOL:
            if kind == "aten::add":
                return f"({x} || ({y} && {alpha} != 0))"
            return f"({x} != {y})"        # (never reached: torch refuses bool sub)
        op = "+" if kind == "aten::add" else "-"
        if code in _UTYPE:
            u = _UTYPE[code]
            return (f"({alpha} == 1 ? ({ct})(({u}){x} {op} ({u}){y}) : "
                    f"({ct})(({u}){x} {op} ({u}){y} * ({u})({ct}){alpha}))")
        # numpy: x + y if alpha == 1, else x + (y * alpha) in the result's dtype (rounded there)
        return f"({alpha} == 1 ? ({ct})({x} {op} {y}) : ({ct})({x} {op} ({ct})({y} * ({ct}){alpha})))"
    if kind in _BINARY:
        op = _BINARY[kind]
        y = f"({ct}){ins[1]}"
        if code in _UTYPE:
            u = _UTYPE[code]
            return f"({ct})(({u}){x} {op} ({u}){y})"
        if code == D.BOOL:
            return f"({x} && {y})"
        return f"({ct})({x} {op} {y})"
    if kind == "aten::neg":
        if code in _UTYPE:
            return f"({ct})(0 - ({_UTYPE[code]}){x})"
        return f"(-{x})"
    if kind == "aten::relu":
        if code in _FLOATS:
            # numpy's maximum(x, 0): NaN stays, an equal pair gives the second (relu(-0.0) is +0.0)
            return f"({x} != {x} ? {x} : ({x} > 0 ? {x} : ({ct})0))"
        return f"({x} > 0 ? {x} : ({ct})0)"
    f = "f" if code in (D.FLOAT32, D.FLOAT16) else ""
    if kind in _UNARY:
        return f"{_UNARY[kind]}{f}({x})"
    if kind == "aten::abs":
        if code in _FLOATS:
            return f"fabs{f}({x})"
        if code == D.BOOL:
            return x
        return f"({x} < 0 ? ({ct})(0 - ({_UTYPE[code]}){x}) : {x})"
    if kind == "aten::silu":
        return f"({x} / (({ct})1 + exp{f}(-{x})))"
    if kind == "aten::reciprocal":
        return f"(({ct})1 / {x})"
    if kind == "aten::rsqrt":
        return f"(({ct})1 / sqrt{f}({x}))"
    if kind == "aten::sigmoid":
        return f"(({ct})1 / (({ct})1 + exp{f}(-{x})))"
    if kind == "aten::pow":
        return f"pow{f}({x}, ({ct}){ins[1]})"
    if kind in ("aten::maximum", "aten::minimum"):
        return _maxmin(kind == "aten::maximum", x, f"({ct}){ins[1]}", code)
    if kind == "aten::clamp":
        v, k = x, 1
        if a[1][0]:
            v, k = _maxmin(True, v, f"({ct}){ins[k]}", code), k + 1
        if a[1][1]:
            v = _maxmin(False, v, f"({ct}){ins[k]}", code)
        return v
    if kind == "aten::masked_fill":
        return f"({ins[1]} ? ({ct}){ins[2]} : {x})"
    if kind == "aten::zero":
        return f"({ct})0"
    if kind == "fill":
        return x
    if kind in _CMP:
        cmp = CTYPE[a[1]]
        return f"(({cmp}){ins[0]} {_CMP[kind]} ({cmp}){ins[1]})"
    raise AssertionError(kind)


def _maxmin(is_max, x, y, code):
    """numpy's maximum / minimum: the first where it compares >= (<=) or is NaN, else the second."""
    op = ">=" if is_max else "<="
    if code in _FLOATS:
        return f"(({x} {op} {y} || {x} != {x}) ? {x} : {y})"
    return f"({x} {op} {y} ? {x} : {y})"
