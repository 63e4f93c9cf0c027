"""Types for users' editors and checkers: accel ships py.typed and stubs for its public API; a typed example
passes mypy --strict and mypy infers accel's own types (not Any) for what accel returns.  The stubs declare
exactly the public names (both twins have one surface: tests/test_foundation.py checks their signatures)."""
import ast
import importlib
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import accel
import accel.cuda

PKG = pathlib.Path(accel.__file__).resolve().parent
DATA = pathlib.Path(__file__).resolve().parent / "data" / "typed"


def test_package_is_typed():
    assert (PKG / "py.typed").is_file(), "accel must ship py.typed (PEP 561)"


def _stub_names(path):
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname)
    return names


def test_cuda_stub_declares_every_public_name():
    stub = PKG / "cuda" / "__init__.pyi"
    assert stub.is_file()
    missing = sorted(set(accel.cuda.__all__) - _stub_names(stub))
    assert not missing, f"accel.cuda names the stub does not declare: {missing}"


def _mypy(cwd, *args):
    """mypy on the installed accel, run outside the checkout (mypy searches its working directory first).
    An editable install is an import hook, which type checkers do not run: there, as docs/install.md tells its
    users, mypy is pointed at the checkout (MYPYPATH) and reads accel's own modules silently, as it reads an
    installed package's."""
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is missing: the test extra (pip install '.[test]') installs it")
    env = dict(os.environ)
    if type(importlib.util.find_spec("accel").loader).__module__.endswith("_editable_loader"):
        env["MYPYPATH"] = str(PKG.parent)
        args = ("--follow-imports=silent", *args)
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir=/dev/null", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return proc.stdout, proc.stderr, proc.returncode


def test_typed_example_passes_mypy_strict(tmp_path):
    out, err, status = _mypy(tmp_path, "--strict", str(DATA / "cuda_example.py"))
    assert status == 0, out + err


def test_mypy_infers_accel_types(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import accel.cuda as cuda\n"
                     "reveal_type(cuda.alloc(16))\n"
                     "reveal_type(cuda.current_stream())\n"
                     "reveal_type(cuda.to_device([1.0]).shape)\n"
                     "reveal_type(cuda.Event().elapsed_time(cuda.Event()))\n")
    out, err, status = _mypy(tmp_path, "--strict", str(probe))
    revealed = [ln.split("Revealed type is ")[1].strip('"').replace("builtins.", "")
                for ln in out.splitlines() if "Revealed type is" in ln]
    assert revealed == ["accel.cuda.DeviceBuffer", "accel.cuda.Stream", "tuple[int, ...]", "float"], out + err


# -- accel.lazy: stubs generated from the op table (tools/gen_lazy_stub.py) ------------------------------------

REPO = pathlib.Path(__file__).resolve().parent.parent
LAZY_STUBS = ("__init__.pyi", "linalg.pyi", "nn/__init__.pyi", "nn/functional.pyi")


def test_lazy_stubs_are_installed_and_declare_every_public_name():
    import accel.lazy
    from accel.lazy import _optable
    for rel in LAZY_STUBS:
        assert (PKG / "lazy" / rel).is_file(), f"accel/lazy/{rel} is not installed"
    stub = PKG / "lazy" / "__init__.pyi"
    missing = sorted(set(accel.lazy.__all__) - _stub_names(stub))
    assert not missing, f"accel.lazy names the stub does not declare: {missing}"
    cls = next(n for n in ast.parse(stub.read_text()).body if isinstance(n, ast.ClassDef) and n.name == "LazyTensor")
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert not sorted(set(_optable.METHODS) - methods), "LazyTensor methods the stub does not declare"


@pytest.mark.skipif(not (REPO / "tools" / "gen_lazy_stub.py").exists(), reason="no checkout next to the tests")
def test_lazy_stubs_are_current(tmp_path):
    """The committed stubs are what tools/gen_lazy_stub.py makes of the installed op table."""
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_lazy_stub.py"), str(tmp_path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    stale = [rel for rel in LAZY_STUBS
             if (tmp_path / rel).read_text() != (REPO / "accel" / "lazy" / rel).read_text()]
    assert not stale, f"accel/lazy stubs out of date: {stale}: run `python tools/gen_lazy_stub.py` from the checkout"


def test_lazy_typed_example_passes_mypy_strict(tmp_path):
    out, err, status = _mypy(tmp_path, "--strict", str(DATA / "lazy_example.py"))
    assert status == 0, out + err


def test_lazy_typed_example_runs_and_its_types_hold():
    """The example mypy checks also runs: the stub's types are what the ops return."""
    import numpy as np
    import accel.lazy as lazy
    spec = importlib.util.spec_from_file_location("lazy_example", DATA / "lazy_example.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out, graph, text = mod.step(lazy.tensor(np.eye(4, dtype=np.float32)), np.ones((2, 4), np.float32))
    assert out.shape == (3, 4) and isinstance(graph, bytes) and len(graph) == 16 and text.startswith("IR {")
    x = lazy.tensor([[3.0, 1.0], [2.0, 5.0]])
    for r in (x.sort(), x.topk(1), x.max(1), x.min(0), lazy.sort(x), lazy.max(x, 1)):
        assert isinstance(r, tuple) and len(r) == 2 and r.values is r[0] and r.indices is r[1]
        assert all(type(t) is lazy.LazyTensor for t in r)
    for r in (x.split(1), x.chunk(2), x.unbind(), lazy.split(x, 1)):
        assert type(r) is tuple and all(type(t) is lazy.LazyTensor for t in r)
    assert type(x.max()) is lazy.LazyTensor and type(x.min()) is lazy.LazyTensor
    assert isinstance(lazy.manual_seed(1), lazy.Generator) and type(lazy.initial_seed()) is int


def test_mypy_infers_lazy_types(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import accel.lazy as lazy\n"
                     "x = lazy.tensor([1.0])\n"
                     "reveal_type((x * 2).relu().sum())\n"
                     "reveal_type(lazy.get_graph_hash([x]))\n"
                     "reveal_type(x.sort().values)\n"
                     "reveal_type(x.shape)\n")
    out, err, status = _mypy(tmp_path, "--strict", str(probe))
    revealed = [ln.split("Revealed type is ")[1].strip('"').replace("builtins.", "")
                for ln in out.splitlines() if "Revealed type is" in ln]
    assert revealed == ["accel.lazy.LazyTensor", "bytes", "accel.lazy.LazyTensor", "tuple[int, ...]"], out + err


# -- accel.accelerator, accel.device_interface, accel.mtia: hand-written stubs ----------------------------------

@pytest.mark.parametrize("module", ["accelerator", "device_interface", "mtia"])
def test_interface_stubs_declare_every_public_name(module):
    mod = importlib.import_module(f"accel.{module}")
    stub = PKG / (f"{module}/__init__.pyi" if module == "mtia" else f"{module}.pyi")
    assert stub.is_file(), f"{stub} is not installed"
    missing = sorted(set(mod.__all__) - _stub_names(stub))
    assert not missing, f"accel.{module} names its stub does not declare: {missing}"


def test_interfaces_typed_example_passes_mypy_strict(tmp_path):
    out, err, status = _mypy(tmp_path, "--strict", str(DATA / "interfaces_example.py"))
    assert status == 0, out + err


@pytest.mark.devices(1)
def test_interfaces_typed_example_runs_and_its_types_hold():
    import accel.cuda
    spec = importlib.util.spec_from_file_location("interfaces_example", DATA / "interfaces_example.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    name, n, cc = mod.where()
    assert name == "cuda" and type(n) is int and cc == 10 * accel.cuda.get_device_capability(0)[0] + \
        accel.cuda.get_device_capability(0)[1]
