"""Types for users' editors and checkers: accel ships py.typed and stubs for its public API; a typed example
passes mypy --strict and mypy infers accel's own types (not Any) for what accel returns.  The stubs declare
exactly the public names (both twins have one surface: tests/test_foundation.py checks their signatures)."""
import ast
import importlib.util
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
    """mypy on the installed accel, run outside the checkout (mypy searches its working directory first)."""
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is missing: the test extra (pip install '.[test]') installs it")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir=/dev/null", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)
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
