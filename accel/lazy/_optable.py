"""The op table of accel.lazy: every op is declared once, in the family module of accel.lazy.ops that traces
it (elementwise, reductions, views, linalg, nn, casts, inplace, factories), with

- its torch names: the LazyTensor methods and operators, and the module functions (``accel.lazy.exp``);
- its tracing function (argument parsing, torch's dtype / shape rule and the IR LTC records);
- the numpy kernels of the node kinds it records (what accel.lazy.backend compiles a node to), with
  their buffer / aliasing properties;
- its eager kernel where LTC has no lazy kernel and runs the op on the CPU (its fallback).

This module is a leaf (it imports nothing of accel.lazy): the family modules fill it in when they are
imported, the backend reads its kernels, accel.lazy.functions binds its methods and module functions.
"""

# kind (a node's op name, or the kind recorded with set_attrs) -> Kernel
KERNELS = {}
# eager (fallback) kernel name -> function(args, *params) over numpy values
EAGER = {}
# LazyTensor attribute name -> function (self first)
METHODS = {}
# module function name -> function
FUNCTIONS = {}
# torch.nn.functional name -> function (accel.lazy.nn.functional), where it differs from the module function
NN_FUNCTIONAL = {}
# torch.linalg name -> function (accel.lazy.linalg)
LINALG = {}
# op name -> Op (the declarations, for listing and tests)
OPS = {}


class Kernel:
    """How the numpy backend compiles one node kind: ``emit(k)`` appends the statements computing it (``k``:
    the backend's emission context); ``ewise``: elementwise (may write into a reused buffer, its dtype
    handled by the backend's casting rule); ``weak``: a 0-dim parameter operand is read as a Python
    number (torch's wrapped-number typing); ``view``: the result aliases its first operand's memory;
    ``out``: not elementwise, but its emit writes a float32 / float64 result (its first) into ``k.buf`` when
    the backend gives it one (a buffer the program owns and reuses from step to step, never one of the node's
    own operands), so that a cached step allocates no large array afresh; for a ``view`` kind, ``out`` means
    that numpy may have to copy (a reshape of a non-contiguous array): the backend gives it a buffer of its
    own (never shared with another node) for that copy, unless its result may reach a root."""
    __slots__ = ("kind", "emit", "ewise", "weak", "view", "natural", "out")

    def __init__(self, kind, emit, ewise=False, weak=False, view=False, natural="all", out=False):
        self.kind = kind
        self.emit = emit
        self.ewise = ewise
        self.out = out
        self.weak = weak
        self.view = view
        # for ewise kinds: which operands make numpy's own result dtype ("all", "two" or None: never numpy's)
        self.natural = natural


class Op:
    """One declared op: ``name``, ``methods`` / ``functions`` (the names it is bound under), ``kinds`` (the
    node kinds it records, each with a Kernel) and ``eager`` (its fallback kernel name, if any)."""
    __slots__ = ("name", "methods", "functions", "kinds", "eager")

    def __init__(self, name, methods, functions, kinds, eager):
        self.name = name
        self.methods = methods
        self.functions = functions
        self.kinds = kinds
        self.eager = eager

    def __repr__(self):
        return f"<Op {self.name}: methods {list(self.methods)}, functions {list(self.functions)}, " \
               f"kinds {list(self.kinds)}>"


def _add(table, key, value, what):
    if key in table and table[key] is not value:
        raise RuntimeError(f"accel.lazy op table: {what} {key!r} is declared twice")
    table[key] = value


def declare(name, methods=None, functions=None, kernels=(), eager=None, nn=None, linalg=None):
    """Declare op ``name``: ``methods`` / ``functions`` map names to callables (self / input first),
    ``kernels`` is a sequence of Kernel, ``eager`` maps fallback kernel names to functions.  Returns the Op."""
    methods = dict(methods or {})
    functions = dict(functions or {})
    eager = dict(eager or {})
    nn = dict(nn or {})
    linalg = dict(linalg or {})
    for table, items, what in ((NN_FUNCTIONAL, nn, "nn.functional function"), (LINALG, linalg, "linalg function"), (METHODS, methods, "method"), (FUNCTIONS, functions, "module function"),
                               (KERNELS, {k.kind: k for k in kernels}, "node kind"), (EAGER, eager, "eager kernel"),
                               (OPS, {name: None}, "op")):
        for k, v in items.items():         # checked first: a refused declaration changes nothing
            if k in table and table[k] is not v:
                raise RuntimeError(f"accel.lazy op table: {what} {k!r} is declared twice")
    for k, f in methods.items():
        _add(METHODS, k, f, "method")
    for k, f in functions.items():
        _add(FUNCTIONS, k, f, "module function")
    for kern in kernels:
        _add(KERNELS, kern.kind, kern, "node kind")
    for k, f in eager.items():
        _add(EAGER, k, f, "eager kernel")
    for k, f in nn.items():
        _add(NN_FUNCTIONAL, k, f, "nn.functional function")
    for k, f in linalg.items():
        _add(LINALG, k, f, "linalg function")
    op = OPS[name] = Op(name, tuple(methods), tuple(functions), tuple(k.kind for k in kernels), tuple(eager))
    return op

# name -> function the generated programs call (kernel helpers: ``_softmax``, ``_ipow``, ...)
HELPERS = {}


def helpers(**fns):
    """Make functions callable from generated programs under their given names."""
    for k, f in fns.items():
        _add(HELPERS, k, f, "kernel helper")

# kind -> the C++ node class LTC names its IrNodeReused_ counter after (or function(node, attrs) -> name)
CLASSES = {}


def classes(**names):
    """Declare the LTC node classes of kinds (``classes(**{"aten::add": "AddTensor"})``)."""
    for k, c in names.items():
        _add(CLASSES, k, c, "node class")
