"""The numpy backend: compiles a post-order of LTC IR into one straight-line Python function over numpy.

A backend has ``name`` and ``compile(post, roots) -> Program``; a Program has ``run(params)`` (the
parameters' Data handles in parameter-sequence order, returning one array per root) and ``text`` (its
readable source).  A graph with nodes that carry a run-time argument (tensors.run_arg: the generator of a
random op given ``generator=``) is run as ``run(params, args)``, those arguments in post order; without
``args`` the program uses the ones it was compiled with.  Another backend (a fusing one, or one on accel
streams) can be set beside this one with accel.lazy.executor.set_backend.

Elementwise ops write into buffers that the program owns and reuses from step to step (numpy's ``out=``),
chosen by liveness: a buffer is reused once every value reading it (views included) has been consumed.
Kernels declared ``out`` (matmul, addmm, softmax, masked_fill, layer_norm, cat) write their float results
into such buffers too (never one of their own operands'), and a reshape numpy must copy copies into a buffer
of its own, so that a cached step allocates no large array afresh (fresh multi-megabyte arrays cost page
faults on every step).  Roots never live in such buffers, so results handed to tensors are never overwritten.
"""
import collections
import os
import threading
import weakref

import numpy as _np

from accel import _impl
from accel.lazy import _dtypes as D
from accel.lazy import _optable
from accel.lazy import tensors as _tensors
from accel.lazy.tensors import node_attrs, run_arg as _run_arg, Output as _Output


# Which kinds are elementwise / views / weakly typed comes from the op table (accel.lazy._optable).
def _astype(x, dt):
    return _np.asarray(x).astype(dt)


def _wrap_int(v, dt):
    """A 0-dim integer parameter's Python int as a scalar of the narrower integer dtype ``dt``, wrapping
    around as torch casts a wrapped number (numpy refuses an out-of-range Python int)."""
    return _np.array(v, _np.int64).astype(dt)[()]


# the names generated programs use: numpy functions as ``_<name>``, helpers, and ``_d<code>`` dtypes
_GLOBALS = {"_" + n: getattr(_np, n) for n in (
    "negative", "absolute", "exp", "log", "sqrt", "cos", "tanh", "multiply", "true_divide", "maximum", "minimum",
    "power", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "add", "subtract", "logical_or", "logical_and", "clip", "sum", "mean", "matmul", "reshape", "transpose",
    "broadcast_to", "concatenate", "asarray", "full", "zeros", "copyto")}
_GLOBALS.update({"_round_bf16": D.round_bf16, "_astype": _astype, "_wrap_int": _wrap_int, "_checked_int": D.checked_int})
_NARROW_INTS = frozenset((D.UINT8, D.INT8, D.INT16, D.INT32))
_HALF_OPMATH = frozenset(("aten::mul", "aten::div"))
_OUT_DTYPES = frozenset((D.FLOAT32, D.FLOAT64))      # what an ``out`` kernel (not elementwise) writes into a buffer
_KERNELS = _optable.KERNELS
for _c, _dt in D.CODE_TO_NP.items():
    _GLOBALS[f"_d{_c}"] = _dt


def _sample(node, is_param, index=0):
    """What numpy sees for a value (output ``index`` of ``node``): a Python scalar for a 0-dim parameter (weakly
    typed), else its dtype."""
    s = node.shapes[index]
    if is_param and not s.sizes:
        return {D.BOOL: True, D.FLOAT64: 0.0}.get(s.dtype, 0.0 if s.dtype in D.FLOATS else 0)
    return D.CODE_TO_NP[s.dtype]


class Program:
    """A compiled graph: ``run(params)`` returns the roots' arrays; ``text`` is the generated source;
    ``nbytes`` the host memory it keeps (its scratch buffers and its source text), which the
    computation cache's byte budget counts; ``param_shapes`` the Shape of each parameter (or None): its
    scratch buffers are made for those sizes, so it runs on nothing else."""
    __slots__ = ("run", "text", "num_params", "graph_size", "nbytes", "param_shapes")

    def __init__(self, run, text, num_params, graph_size, nbytes=0, param_shapes=None):
        self.run = run
        self.text = text
        self.num_params = num_params
        self.graph_size = graph_size
        self.nbytes = nbytes
        self.param_shapes = param_shapes


class NumpyBackend:
    """Compiles IR to numpy calls (see the module docstring).

    A graph made only of the kinds whose generated code reads no size (elementwise ops, matmuls, softmax,
    reductions over given dims, casts, ...: ``_TEMPLATE_KINDS``) is compiled once per *structure*: its ops,
    attributes, wiring, dtypes, ranks and the pattern of which sizes are equal (0 and 1 by value).  Its code
    object is kept as a template (``templates``, an LRU of at most ``max_templates``); a later graph of the same
    structure and other sizes (a first-seen graph hash, as when a batch dimension changes every step) gets a
    Program from it with new scratch buffers, without generating or compiling code again.  The computation cache above is unchanged: it still misses (LTC's
    UncachedCompile) for every new graph hash.  ``stats``: programs ``generated`` and ``specialised``."""
    name = "numpy"

    def __init__(self, max_templates=256):
        self.templates = TemplateCache(max_templates)
        self.stats = {"generated": 0, "specialised": 0}

    def _count(self, what):
        with self.templates._lock:          # (compile may run on several threads outside the device lock)
            self.stats[what] += 1

    def compile(self, post, roots):
        key = _structure(post, roots) if self.templates.maxsize else None
        if key is not None:
            t = self.templates.get(key)
            if t is not None:
                prog = t.specialise(post)
                self._count("specialised")
                return prog
        comp = _Compiler(post, roots)
        prog = comp.build()
        self._count("generated")
        if key is not None:
            t = comp.template(prog)
            if t is not None:
                self.templates.add(key, t)      # (only a whole, successful build is kept)
        return prog


# The kinds a template may hold: the elementwise ones, whose kernels' emit (accel.lazy.ops.elementwise) reads
# the node's and its operands' ranks and dtypes, never a size, and these others, whose emit reads ranks,
# dtypes and the node's attributes (which are part of the key) only.  The code is then the same for any sizes
# of one structure.  A kind whose emit writes sizes into the code (reshape / expand's target sizes, zeros /
# full, random draws, embedding) or whose plan depends on them (cat's parts) is not one: its graphs are
# generated per graph hash as before.  A kind added here must keep to that (tests/test_lazy_firstseen.py
# runs each through sizes that change).
_TEMPLATE_KINDS = frozenset((
    "aten::_softmax", "aten::_log_softmax", "aten::sum.dim", "aten::sum.all", "aten::mean.dim", "aten::mean.all",
    "aten::max", "aten::min", "aten::all", "aten::any", "aten::mm", "aten::bmm", "aten::mv", "aten::addmm",
    "aten::_to_copy", "aten::gelu", "aten::silu", "aten::leaky_relu", "aten::softplus", "aten::elu",
    "aten::addcmul", "aten::addcdiv", "aten::t_copy", "aten::masked_fill"))


def _generic_kinds():
    return frozenset(k for k, v in _KERNELS.items() if (v.ewise and not v.view) or k in _TEMPLATE_KINDS)


_GENERIC = [None, 0]          # the frozenset and len(_KERNELS) it was made for (family modules add kinds)
_node_attrs_table = _tensors._attrs          # (node_attrs / run_arg inlined: _structure runs per new graph)
_run_args_table = _tensors._run_args
_ir_wiring = _impl.module("_ir").wiring_hash


def _structure(post, roots):
    """The template key of a post order (see NumpyBackend), or None when it has a kind templates do not hold
    or a run-time argument.  Per node, in post order: its op, then a device-data node's parameter index (by
    handle, as the program reads them) or another node's kind and attributes, then its outputs' dtypes and
    sizes; the operands come in as the post order's wiring hash.  Sizes enter only as their equality
    pattern: each size value is replaced by the order of its first appearance (0 and 1 keep their own
    slots, as numpy's broadcasting reads them), so that two graphs with one key plan the same buffers and
    the same code."""
    if _GENERIC[1] != len(_KERNELS):
        _GENERIC[0], _GENERIC[1] = _generic_kinds(), len(_KERNELS)
    generic = _GENERIC[0]
    attrs, rargs = _node_attrs_table, _run_args_table
    handles = {}
    pos = {}
    sym = {0: 0, 1: 1}
    memo = {}
    parts = []
    add = parts.append
    i = 0
    for node in post:
        pos[id(node)] = i
        i += 1
        add(node.op)
        if node.is_device_data:
            h = id(node.handle)
            k = handles.get(h)
            if k is None:
                k = handles[h] = len(handles)
            add(k)
        else:
            e = attrs.get(id(node))
            if e is not None and e[0]() is node:
                kind = e[1]
                add(kind)
                add(e[2])
            else:
                kind = node.op.qualified_name
                add(kind)
                add(None)
            if kind not in generic or (rargs and _run_arg(node) is not None):
                return None
        shapes = node.shapes
        add(len(shapes))
        for sh in shapes:
            sz = sh.sizes
            c = memo.get(sz)
            if c is None:
                c = memo[sz] = tuple([sym.setdefault(d, len(sym)) for d in sz])
            add(sh.dtype)
            add(c)
    for r in roots:
        if type(r) is _Output:
            add((pos[id(r.node)], r.index))
        else:
            add((pos[id(r)], -1))
    add(_ir_wiring(post))
    key = tuple(parts)
    try:
        hash(key)
    except TypeError:           # an attribute that is not hashable: no template
        return None
    return key


class _Template:
    """What a graph's Program is made from for other sizes of its structure: the code object, its source, the
    globals without scratch buffers, and per scratch buffer the node whose shape it takes."""
    __slots__ = ("code", "src", "ns", "buffers", "params", "graph_size")

    def __init__(self, code, src, ns, buffers, params, graph_size):
        self.code, self.src, self.ns, self.buffers = code, src, ns, buffers
        self.params, self.graph_size = params, graph_size

    def specialise(self, post):
        """The Program of this structure for the sizes of ``post``: new scratch buffers, the same code."""
        ns = dict(self.ns)
        scratch = 0
        for name, i in self.buffers:
            s = post[i].shapes[0]
            b = ns[name] = _np.empty(tuple(s.sizes), D.CODE_TO_NP[s.dtype])
            scratch += b.nbytes
        exec(self.code, ns)
        run = ns.pop("run")
        shapes = tuple([post[i].shapes[0] for i in self.params])
        return Program(run, self.src, len(shapes), self.graph_size, scratch + len(self.src), shapes)


class TemplateCache:
    """An LRU of _Template by structure key (NumpyBackend.templates): at most ``maxsize`` entries (0: none
    kept) whose keys hold at most ``max_items`` items in all (a key holds about five per node: 256 templates of
    1e4-node graphs would otherwise keep ~100 MB of keys); the newest entry always stays.  Thread-safe; an
    entry is added only after its build succeeded, so a failed build leaves nothing."""

    def __init__(self, maxsize=256, max_items=1 << 22):
        for name, v in (("maxsize", maxsize), ("max_items", max_items)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"TemplateCache {name} must be an int >= 0, got {v!r}")
        self.maxsize = maxsize
        self.max_items = max_items
        self.items = 0                      # the items the keys hold
        self._items = collections.OrderedDict()
        self._lock = threading.Lock()
        _template_caches.add(self)

    def get(self, key):
        with self._lock:
            t = self._items.get(key)
            if t is not None:
                self._items.move_to_end(key)
            return t

    def add(self, key, template):
        if self.maxsize == 0:
            return
        with self._lock:
            if key not in self._items:
                self.items += len(key)
            self._items[key] = template
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize or (self.items > self.max_items and len(self._items) > 1):
                k, _ = self._items.popitem(last=False)
                self.items -= len(k)

    def clear(self):
        with self._lock:
            self._items.clear()
            self.items = 0

    def __len__(self):
        return len(self._items)


_template_caches = weakref.WeakSet()


def _after_fork_in_child():
    for c in list(_template_caches):      # (a thread that held a lock is not in the child)
        c._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Compiler:
    def __init__(self, post, roots):
        self.post = post
        self.roots = roots
        self.index = {n: i for i, n in enumerate(post)}
        self.ns = dict(_GLOBALS)
        self.ns.update(_optable.HELPERS)
        self.lines = []
        self.alias = {}     # node index -> the index whose variable already holds the same parameter read
        self.nbuf = 0
        self.npriv = 0
        self.slots = {}     # node index -> its run-time argument's slot in G (post order), tensors.run_arg
        self.run_args = []
        # node index -> the expression later readers take instead of its variable: a kernel that updates an
        # operand in place (batch_norm's running statistics, as LTC's kernel writes their buffers) hands the new
        # value on here, so the rest of the graph, in its order, sees it
        self.subst = {}
        self.buffers = []   # (name, node index) of each scratch buffer _b<k>: the node whose shape it has

    def _var(self, node):
        i = self.index[node]
        i = self.alias.get(i, i)
        return self.subst.get(i) or f"v{i}"

    def _out(self, o):
        """The expression of operand / root ``o`` (an Output or a Node): ``v<i>``, or ``v<i>[k]`` for output k of
        a multi-output node (its kernel assigns a tuple)."""
        if type(o) is not _Output:
            return self._var(o)
        n = o.node
        v = self._var(n)
        return f"{v}[{o.index}]" if n.num_outputs > 1 else v

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
        self.kinds = kinds = [None] * n
        attrs = [None] * n
        for i, node in enumerate(post):
            a = node_attrs(node)
            attrs[i] = a
            r = _run_arg(node)
            if r is not None:
                self.slots[i] = len(self.run_args)
                self.run_args.append(r)
            kind = a[0] if a is not None else node.op.qualified_name
            kinds[i] = kind
            k = _KERNELS.get(kind)
            if k is not None and k.view:
                base[i] = base[index[node.operands[0].node]]
        last = [-1] * n
        for i, node in enumerate(post):
            for o in node.operands:
                b = base[index[o.node]]
                last[b] = i
                if kinds[index[o.node]] == "lazy_tensors::tensor_list":
                    for o2 in o.node.operands:
                        last[base[index[o2.node]]] = i
        escapes = set(base[index[r.node if type(r) is _Output else r]] for r in self.roots)
        self.readers = readers = [0] * n
        for node in post:
            for o in node.operands:
                readers[index[o.node]] += 1
        into = self._plan_cats(kinds, attrs, base, escapes, param_of)
        self._plan_softmax(kinds, attrs, base, last, escapes, param_of)
        pool = {}
        owned = {}          # base index -> buffer name
        lines = self.lines
        reads = {}
        for i, node in enumerate(post):
            kind = kinds[i]
            out = f"v{i}"
            if i in param_of:
                s = node.shapes[0]
                read = (param_of[i], not s.sizes)
                first = reads.setdefault(read, i)
                if first != i:              # the same parameter read again (one per use in LTC's graph)
                    self.alias[i] = first
                    continue
                lines.append(f"{out} = P[{param_of[i]}].{'value' if not s.sizes else 'array'}")
                continue
            if i in self.skip:
                continue                # (computed by the fused kernel of its one reader: _plan_softmax)
            ins = [self._out(o) for o in node.operands]
            shape = node.shapes[0] if node.shapes else None
            buf = None
            k = _KERNELS.get(kind)
            floats_out = k is not None and k.out and shape.sizes and shape.dtype in _OUT_DTYPES
            if floats_out and k.view:
                if base[i] not in escapes:
                    # a view numpy may have to copy: the copy goes into a buffer of this node alone (its readers,
                    # views of it included, are all done within the step; no root can see it)
                    buf = f"_p{self.npriv}"
                    self.npriv += 1
                    self.ns[buf] = _np.empty(tuple(shape.sizes), D.CODE_TO_NP[shape.dtype])
            elif i in self.cats:
                pass                   # (its own buffer: _plan_cats)
            elif i in into:
                # an elementwise result only a cat reads: computed into its part of the cat's buffer
                self._release(i, node, base, last, owned, pool)
                buf = into[i]
            elif (floats_out or (k is not None and k.ewise and shape.sizes)) and i not in escapes:
                if k.ewise:
                    # inputs read for the last time here may hand their buffer to the output (an elementwise
                    # kernel reads each element before it writes it); other kernels never write over an input
                    self._release(i, node, base, last, owned, pool)
                key = (shape.dtype, tuple(shape.sizes))
                free = pool.get(key)
                if free:
                    buf = free.pop()
                else:
                    buf = f"_b{self.nbuf}"
                    self.nbuf += 1
                    self.ns[buf] = _np.empty(key[1], D.CODE_TO_NP[key[0]])
                    self.buffers.append((buf, i))
                owned[i] = (buf, key)
            if kind == "aten::cat" and i in self.cats:
                self._emit_cat(i, node, ins, out)
            elif i in self.fused:
                self._emit_masked_softmax(i, out, buf, param_of)
            else:
                self._emit(i, node, kind, attrs[i], ins, out, buf, param_of)
            if i in into:              # (a kernel that made a new array after all: its values copied in)
                lines.append(f"if {out} is not {buf}: _copyto({buf}, {out})")
            if not (k is not None and k.view) and any(s.dtype == D.BFLOAT16 for s in node.shapes):
                # bfloat16 values live in float32 arrays: each result is rounded as torch rounds its float math
                if node.num_outputs > 1:
                    bf = tuple(j for j, s in enumerate(node.shapes) if s.dtype == D.BFLOAT16)
                    lines.append(f"{out} = tuple(_round_bf16(x) if j in {bf!r} else x for j, x in enumerate({out}))")
                else:
                    lines.append(f"{out} = _round_bf16({out})")
            self._release(i, node, base, last, owned, pool)
        rets = []
        for r in self.roots:
            if type(r) is _Output and r.node.num_outputs > 1:
                # output k of a multi-output kernel: a fresh array (0-dim results as arrays of their dtype)
                rets.append(f"_asarray({self._out(r)}, _d{r.shape.dtype})")
                continue
            if type(r) is _Output:
                r = r.node
            i = index[r]
            s = r.shapes[0]
            v = f"v{i}"
            if self.subst.get(self.alias.get(i, i)):      # updated in place by a kernel: its new (fresh) array
                v = self.subst[self.alias.get(i, i)]
            elif i in param_of:
                v = f"P[{param_of[i]}].array"
            elif not s.sizes:
                v = f"_asarray({v}, _d{s.dtype})"
            elif base[i] in owned:
                v = f"{v}.copy()"
            rets.append(v)
        body = "\n".join("    " + x for x in lines)
        # G: the nodes' run-time arguments in post order (the executor passes the traced graph's; by default
        # the ones this program was compiled with, as run_cached_graph runs it)
        head = "def run(P, G=_G0):" if self.run_args else "def run(P):"
        src = f"{head}\n{body}\n    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})\n"
        code = self.code = compile(src, "<accel.lazy graph>", "exec")
        self.ns["_G0"] = tuple(self.run_args)
        exec(code, self.ns)
        run = self.ns.pop("run")        # no cycle through the globals: an evicted program is freed at once
        del self.ns["_G0"]
        scratch = sum(self.ns[f"_b{k}"].nbytes for k in range(self.nbuf)) + \
            sum(self.ns[f"_p{k}"].nbytes for k in range(self.npriv))
        shapes = [None] * len(handles)
        for i, k in param_of.items():
            if shapes[k] is None:
                shapes[k] = post[i].shapes[0]
        self.param_nodes = [None] * len(handles)
        for i, k in param_of.items():
            if self.param_nodes[k] is None:
                self.param_nodes[k] = i
        return Program(run, src, len(handles), n, scratch + len(src), tuple(shapes))

    def template(self, prog):
        """The _Template of this (built) graph for other sizes of its structure, or None where its plan is
        made for its sizes (cat parts, private view buffers) or it has run-time arguments.  (A fused softmax's
        plan reads sizes only to compare them: the key's size pattern decides it.)"""
        if self.npriv or self.cats or self.run_args:
            return None
        names = {name for name, _ in self.buffers}
        ns = {k: v for k, v in self.ns.items() if k not in names}
        return _Template(self.code, prog.text, ns, tuple(self.buffers), tuple(self.param_nodes), prog.graph_size)

    def _plan_cats(self, kinds, attrs, base, escapes, param_of):
        """A float cat no root sees gets a buffer of its own (``self.cats``: cat index -> (the buffer's name,
        the names of its parts' views, the operands' indices, ``into``)); each operand that is an elementwise
        float result of the cat's dtype read by nothing else is computed straight into its part of that buffer
        instead of being copied there (``into``, returned: operand index -> its part's name)."""
        post, index, readers = self.post, self.index, self.readers
        into = {}
        self.cats = {}
        for j, node in enumerate(post):
            if kinds[j] != "aten::cat" or j in escapes or attrs[j][1][1] is not None:
                continue
            shape = node.shapes[0]
            if shape.dtype not in _OUT_DTYPES or not shape.sizes:
                continue
            lst = node.operands[0].node
            if readers[index[lst]] != 1:
                continue
            axis = attrs[j][1][0]
            name = f"_p{self.npriv}"
            self.npriv += 1
            arr = self.ns[name] = _np.empty(tuple(shape.sizes), D.CODE_TO_NP[shape.dtype])
            parts = []
            start = 0
            for o in lst.operands:
                m = o.node
                q = index[m]
                sizes = m.shapes[o.index].sizes
                sl = (slice(None),) * axis + (slice(start, start + sizes[axis]),)
                start += sizes[axis]
                part = f"{name}_{len(parts)}"
                self.ns[part] = arr[sl]
                parts.append(part)
                k = _KERNELS.get(kinds[q])
                if (k is not None and k.ewise and not k.view and q not in param_of and m.num_outputs == 1
                        and readers[q] == 1 and base[q] == q and q not in escapes and q not in into
                        and m.shapes[0].dtype == shape.dtype and tuple(m.shapes[0].sizes) == arr[sl].shape):
                    into[q] = part
            self.cats[j] = (name, parts, [index[o.node] for o in lst.operands], into)
        return into

    def _plan_softmax(self, kinds, attrs, base, last, escapes, param_of):
        """softmax over the last dim of masked_fill(x * number, mask, number) (either step optional), each
        step's result read by the next alone, runs as one kernel (accel._kernels.masked_softmax: the same
        roundings, two passes over the data fewer): ``self.fused`` (softmax index -> (x, scale, mask, value)
        operands), ``self.skip`` (the steps not emitted), and their operands live until the softmax."""
        post, index, readers = self.post, self.index, self.readers
        self.fused, self.skip, self.extra = {}, set(), {}

        def scalar(o):
            q = index[o.node]
            return q in param_of and not o.node.shapes[0].sizes

        def same(o, shape):              # an input of the softmax's dtype and shape (no cast, no broadcast)
            s = o.node.shapes[o.index]
            return s.dtype == shape.dtype and tuple(s.sizes) == tuple(shape.sizes)

        def single(o, shape):            # a value only the next step reads, of the softmax's dtype and shape
            m, q = o.node, index[o.node]
            s = m.shapes[0]
            return (m.num_outputs == 1 and readers[q] == 1 and q not in escapes and base[q] == q
                    and q not in param_of and q not in self.skip and s.dtype == shape.dtype
                    and tuple(s.sizes) == tuple(shape.sizes))

        for j, node in enumerate(post):
            if kinds[j] != "aten::_softmax":
                continue
            shape = node.shapes[0]
            if shape.dtype not in _OUT_DTYPES or not shape.sizes or attrs[j][1] != len(shape.sizes) - 1:
                continue
            x, scale, mask, value, steps = node.operands[0], None, None, None, []
            if kinds[index[x.node]] == "aten::masked_fill" and single(x, shape):
                a, mk, v = x.node.operands
                if scalar(v) and same(a, shape) and mk.node.shapes[mk.index].dtype == D.BOOL:
                    steps.append(index[x.node])
                    x, mask, value = a, mk, v
            if kinds[index[x.node]] == "aten::mul" and single(x, shape):
                a, b = x.node.operands
                if scalar(a) and not scalar(b):
                    a, b = b, a
                if scalar(b) and not scalar(a) and same(a, shape) and \
                        b.node.shapes[0].dtype in (D.FLOAT64, D.INT64):
                    steps.append(index[x.node])
                    x, scale = a, b
            if not steps:
                continue
            self.fused[j] = (x, scale, mask, value)
            self.skip.update(steps)
            extra = [o.node for o in (x, scale, mask, value) if o is not None]
            self.extra[j] = extra
            for m in extra:              # the fused steps' operands are read at the softmax now
                b = base[index[m]]
                last[b] = max(last[b], j)

    def _emit_masked_softmax(self, i, out, buf, param_of):
        x, scale, mask, value = self.fused[i]
        sc = "None" if scale is None else self._out(scale)
        mk = "None" if mask is None else self._out(mask)
        val = "0" if value is None else f"P[{param_of[self.index[value.node]]}].array"
        into = f", {buf}" if buf else ""
        self.lines.append(f"{out} = _masked_softmax({self._out(x)}, {sc}, {mk}, {val}{into})")

    def _emit_cat(self, i, node, ins, out):
        name, parts, ops, into = self.cats[i]
        for part, q, o in zip(parts, ops, node.operands[0].node.operands):
            if into.get(q) != part:
                self.lines.append(f"_copyto({part}, {self._out(o)}, casting='same_kind')")
        self.lines.append(f"{out} = {name}")

    def _release(self, i, node, base, last, owned, pool):
        ms = [o.node for o in node.operands] + self.extra.get(i, [])
        for m in list(ms):
            if self.kinds[self.index[m]] == "lazy_tensors::tensor_list":
                ms.extend(o.node for o in m.operands)      # (read through the list: last[] counts them here)
        for m in ms:
            b = base[self.index[m]]
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
        kern = _KERNELS.get(kind)
        weak = kern is not None and kern.weak
        if code == D.FLOAT16 and kind in _HALF_OPMATH and any(
                self.index[m] in param_of and not m.shapes[0].sizes and m.shapes[0].dtype == D.FLOAT64
                for m in opnodes):
            # torch's half mul / div by a Python float computes in float with the scalar as a float, rounding
            # once at the end (numpy would round the scalar to half first)
            kern.emit(_Emit(self, node, kind, attrs, ins, out, None, f", dtype=_d{D.FLOAT32}", shape, D.FLOAT32,
                            f"_d{D.FLOAT32}", opnodes, param_of))
            self.lines.append(f"{out} = {out}.astype({dt})")
            return
        if not weak:
            # a 0-dim parameter is read as a Python number only where numpy's weak typing stands for torch's
            # wrapped-number / 0-dim priority; elsewhere (views, unary ops, reductions) it is its array
            for k, m in enumerate(opnodes):
                if self.index[m] in param_of and not m.shapes[0].sizes:
                    ins[k] = f"P[{param_of[self.index[m]]}].array"
        if kern is not None and kern.ewise:
            samples = [_sample(o.node, weak and self.index[o.node] in param_of, o.index) for o in node.operands]
            if kern.natural == "two":                       # add / sub: alpha takes no part
                natural = _np.result_type(*samples[:2])
            elif kern.natural is None:
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
                last = 2 if kern.natural == "two" else len(ins)
                ins = [f"_wrap_int({v}, {dt})" if k < last and self.index[m] in param_of and not m.shapes[0].sizes
                       and m.shapes[0].dtype in D.INTS else v for k, (v, m) in enumerate(zip(ins, opnodes))]
        if kern is None:
            raise NotImplementedError(f"the numpy backend has no kernel for {node}")
        kern.emit(_Emit(self, node, kind, attrs, ins, out, buf, kw, shape, code, dt, opnodes, param_of))


class _Emit:
    """What a kernel's ``emit`` gets: ``out`` (its variable), ``ins`` (its operands' expressions), ``x``
    (the first), ``kw`` (``out=`` / ``dtype=`` arguments of elementwise kinds), ``dt`` (the result's dtype
    name), ``code`` / ``shape``, ``attrs`` (what set_attrs recorded), ``buf`` (its reused buffer or None),
    ``line(text)`` to add a statement, and ``is_param(node)`` / ``opnodes`` for kernels that look at
    their operands."""
    __slots__ = ("comp", "node", "kind", "attrs", "ins", "out", "buf", "kw", "shape", "code", "dt", "opnodes",
                 "param_of", "x", "line")

    def __init__(self, comp, node, kind, attrs, ins, out, buf, kw, shape, code, dt, opnodes, param_of):
        self.comp, self.node, self.kind, self.attrs = comp, node, kind, attrs
        self.ins, self.out, self.buf, self.kw = ins, out, buf, kw
        self.shape, self.code, self.dt, self.opnodes, self.param_of = shape, code, dt, opnodes, param_of
        self.x = ins[0] if ins else None
        self.line = comp.lines.append

    def is_param(self, m):
        return self.comp.index[m] in self.param_of

    def is_scalar_param(self, m):
        return self.comp.index[m] in self.param_of and not m.shapes[0].sizes

    def update_operand(self, j, expr):
        """Later readers of operand ``j`` of this node (and the roots) take ``expr``: the kernel updated it."""
        m = self.node.operands[j].node
        i = self.comp.index[m]
        self.comp.subst[self.comp.alias.get(i, i)] = expr

    def run_arg(self):
        """The expression of this node's run-time argument (``G[k]``), or None if it has none."""
        k = self.comp.slots.get(self.comp.index[self.node])
        return None if k is None else f"G[{k}]"


def eager(name, args, params=()):
    """Run the eager (fallback) kernel ``name`` of the op table on numpy values now."""
    f = _optable.EAGER.get(name)
    if f is None:
        raise NotImplementedError(f"no eager kernel for {name!r}")
    return f(args, *params)
