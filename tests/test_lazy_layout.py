"""The shape of accel.lazy (issue 19): its modules import each other without a circle and only at module
level (no function-level import of a sibling holding a circle apart), every module imports fresh on its
own, the tensor core knows no op, and every op is declared once in the op table, from which the methods,
operators, module functions and the backend's kernels come."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAZY = ROOT / "accel" / "lazy"
PKG = "accel.lazy"


def _modules():
    out = {}
    for p in sorted(LAZY.rglob("*.py")):
        rel = p.relative_to(LAZY).with_suffix("")
        parts = [x for x in rel.parts if x != "__init__"]
        out[".".join([PKG] + parts)] = p
    return out


MODULES = _modules()


def _imports(path, name):
    """(module-level imports, nested imports) of accel.lazy modules in the file, as module names.  ``from
    accel.lazy import x`` counts as importing submodule x when there is one, else the package itself."""
    tree = ast.parse(path.read_text())
    top, nested = set(), set()

    def targets(node):
        if isinstance(node, ast.Import):
            return [a.name for a in node.names if a.name.startswith(PKG)]
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith(PKG):
            res = []
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                res.append(sub if sub in MODULES else node.module)
            return res
        return []

    for node in tree.body:
        top.update(targets(node))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for sub in ast.walk(node):
                nested.update(targets(sub))
    top.discard(name)
    return top, nested


def test_no_function_level_imports_of_siblings():
    bad = {m: sorted(n) for m, p in MODULES.items() for n in [_imports(p, m)[1]] if n}
    assert bad == {}


def test_no_import_circle():
    graph = {m: _imports(p, m)[0] for m, p in MODULES.items()}
    # the package's __init__ imports its submodules; a submodule must not import names from the package
    for m, deps in graph.items():
        if m != PKG:
            assert PKG not in deps, f"{m} imports names from the accel.lazy package itself (a circle through __init__)"
    state = {}

    def visit(m, stack):
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if d == PKG or d not in graph:
                continue
            if state.get(d) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack + [m, d]))
            if d not in state:
                visit(d, stack + [m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_fresh(module, subprocess_python):
    r = subprocess_python(f"import importlib; importlib.import_module({module!r}); print('ok')")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


def test_core_knows_no_op():
    from accel.lazy import _optable
    tree = ast.parse((LAZY / "tensors.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LazyTensor")
    defined = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert defined & set(_optable.METHODS) == set()
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    named = [c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and isinstance(c.value, str)
             and id(c) not in docs and re.search(r"aten::\w", c.value) and "like 'aten::" not in c.value]
    # the one aten name the core holds is the counter LTC bumps when a tensor's value is read (bool(t))
    assert named == ["aten::_local_scalar_dense"], named


def test_ops_come_from_the_table():
    import accel.lazy as L
    from accel.lazy import _optable, backend
    for name, f in _optable.METHODS.items():
        assert getattr(L.LazyTensor, name) is f, name
    for name, f in _optable.FUNCTIONS.items():
        assert getattr(L, name) is f, name
        assert name in L.__all__
    # every node kind the ops record has exactly one kernel, and the backend takes its kernels from the table
    assert backend._KERNELS is _optable.KERNELS
    for kind in ("aten::add", "aten::sum.dim", "reshape", "aten::cat", "aten::_softmax", "aten::_to_copy", "fill"):
        assert kind in _optable.KERNELS, kind
    owners = {}
    for op in _optable.OPS.values():
        for k in op.kinds:
            assert k not in owners, f"{k} declared by {owners[k]} and {op.name}"
            owners[k] = op.name
    assert {"sin", "rpow", "dot", "amax", "copy"} <= set(_optable.EAGER)


def test_redeclaring_an_op_name_is_refused():
    from accel.lazy import _optable
    with pytest.raises(RuntimeError, match="declared twice"):
        _optable.declare("exp_again", {"exp": lambda self: self})
    assert "exp_again" not in _optable.OPS
