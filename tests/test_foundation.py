"""Selection, library discovery, twin surfaces, the driver-less system runtime and the CLI."""
import inspect
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import accel
from accel import _build_config, _impl, _lib

REPO = pathlib.Path(__file__).resolve().parent.parent
SYSTEM_CUDART = shutil.which("ldconfig") and any(
    "libcudart.so.1" in line for line in subprocess.run(["ldconfig", "-p"], capture_output=True,
                                                         text=True).stdout.splitlines())
needs_native = pytest.mark.skipif(not _build_config.NATIVE, reason="installed with -Dnative=false")


def _public(mod):
    return sorted(getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")])


@needs_native
@pytest.mark.parametrize("name", _impl.MODULES)
def test_twins_have_identical_public_surfaces(name, both_twins):
    native, python = (t.mod(name) for t in both_twins)
    assert _public(native) == _public(python)
    for attr in _public(native):
        a, b = getattr(native, attr), getattr(python, attr)
        assert type(a).__name__ in ("type", "cython_function_or_method", "builtin_function_or_method",
                                    "function", "module") or callable(a) == callable(b)
        if callable(a) and not isinstance(a, type):
            assert str(inspect.signature(a)) == str(inspect.signature(b)), attr
            assert (a.__doc__ or "").strip() == (b.__doc__ or "").strip(), f"{name}.{attr} docstrings differ"
        if isinstance(b, type):
            # classes: inspect.signature reads the compiled class (its docstring's clinic line) and every public
            # method (Cython's embedsignature), as it reads the python twin's
            assert str(inspect.signature(a)) == str(inspect.signature(b)), attr
            for meth, fn in vars(b).items():
                if callable(fn) and (not meth.startswith("_") or meth in ("__enter__", "__exit__", "__call__")):
                    assert str(inspect.signature(getattr(a, meth))) == str(inspect.signature(fn)), f"{attr}.{meth}"
            # every method the python twin's class defines has the same docstring on the compiled class (help()
            # and docs/api read it; Cython's clinic embedsignature makes a method without one read "None")
            for meth, fn in vars(b).items():
                dunder = meth.startswith("__") and meth.endswith("__")
                if not (callable(fn) or isinstance(fn, property)) or meth.startswith("_") and not dunder or \
                        dunder and type(vars(a).get(meth)).__name__ not in ("method_descriptor",
                                                                            "cython_function_or_method"):
                    continue          # private helpers; slot wrappers (__init__, __repr__) carry CPython's text
                doc_a = (getattr(vars(a).get(meth, getattr(a, meth, None)), "__doc__", None) or "").strip()
                assert doc_a == (fn.__doc__ or "").strip(), f"{name}.{attr}.{meth} docstrings differ"
                assert doc_a != "None" and not doc_a.startswith("None\n"), f"{name}.{attr}.{meth} reads 'None'"


def test_backend_is_reported():
    assert accel.backend in ("native", "python")
    assert accel.backend_reason
    if _build_config.NATIVE and os.environ.get("ACCEL_BACKEND", "auto") != "python":
        assert accel.backend == "native"
        assert _impl.cudart.__name__ == "accel._native._cudart"


@pytest.mark.parametrize("value, backend", [("python", "python"), ("native", "native"), ("auto", None)])
def test_backend_env_selection(subprocess_python, value, backend):
    if value == "native" and not _build_config.NATIVE:
        pytest.skip("no compiled twin")
    r = subprocess_python("import accel, accel._impl as i; print(accel.backend, i.cudart.__name__)",
                          env={"ACCEL_BACKEND": value})
    assert r.returncode == 0, r.stderr
    got, modname = r.stdout.split()
    expected = backend or ("native" if _build_config.NATIVE else "python")
    assert got == expected and modname == f"accel._{expected}._cudart"


@pytest.mark.parametrize("twin", ["native", "python"])
def test_import_does_not_load_numpy(subprocess_python, twin):
    """`import accel.cuda` (a device or stream switch) costs what it did before the typed arrays and lazy
    tensors: numpy (and its BLAS threads) load with the first array or lazy tensor, not at import."""
    if twin == "native" and not _build_config.NATIVE:
        pytest.skip("no compiled twin")
    r = subprocess_python("import sys, accel, accel.cuda as c, accel.device_interface, accel.accelerator\n"
                          "c.Event(); print(accel.backend, sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))\n"
                          "import accel.lazy as L; L.tensor([1.0]); print('numpy' in sys.modules)",
                          env={"ACCEL_BACKEND": twin, "ACCEL_CUDART": "emu"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == [f"{twin} []", "True"], r.stdout


def test_backend_env_invalid(subprocess_python):
    r = subprocess_python("import accel", env={"ACCEL_BACKEND": "fast"})
    assert r.returncode != 0 and "ACCEL_BACKEND='fast' is not valid" in r.stderr


_BLOCK_NATIVE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.startswith("accel._native."):
            raise ImportError("simulated: no compiled module " + name)
sys.meta_path.insert(0, Block())
"""


def test_native_requested_but_missing_fails_loudly(subprocess_python):
    r = subprocess_python(_BLOCK_NATIVE + "import accel", env={"ACCEL_BACKEND": "native"})
    assert r.returncode != 0
    assert "ImportError: ACCEL_BACKEND=native was requested but" in r.stderr


def test_auto_falls_back_and_says_why(subprocess_python):
    r = subprocess_python(_BLOCK_NATIVE + "import accel; print(accel.backend); print(accel.backend_reason)",
                          env={"ACCEL_BACKEND": "auto"})
    assert r.returncode == 0, r.stderr
    backend, reason = r.stdout.splitlines()
    assert backend == "python" and "ACCEL_BACKEND=auto" in reason


# -- discovery --------------------------------------------------------------------------------------

_LOAD = "import json, accel._lib as L; lib = L.cudart(); print(json.dumps([lib.path, lib.how, lib.emulated]))"


def _load(subprocess_python, env, pre=""):
    r = subprocess_python(pre + _LOAD, env=env)
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


@needs_native
def test_discovery_emu_override(subprocess_python):
    r, got = _load(subprocess_python, {"ACCEL_CUDART": "emu"})
    assert got == [_lib.emu_path(), "ACCEL_CUDART=emu (the bundled emulated runtime)", True]


def test_discovery_missing_path_lists_it(subprocess_python):
    r = subprocess_python("import accel.cuda as c\ntry:\n c.cudart()\nexcept c.LibraryNotFoundError as e:\n"
                          " print(e.searched)\n print(e)", env={"ACCEL_CUDART": "/nope/libcudart.so.13"})
    assert r.returncode == 0, r.stderr
    assert "/nope/libcudart.so.13 [ACCEL_CUDART=/nope/libcudart.so.13]: no such file" in r.stdout
    assert "could not load the CUDA runtime library (libcudart); searched:" in r.stdout


def _wheel_cudart():
    """A libcudart of an installed NVIDIA wheel (torch's CUDA wheels bring one), which discovery takes first."""
    for entry in filter(None, sys.path):
        for parts in _lib._WHEEL_DIRS:
            d = os.path.join(entry, *parts)
            if os.path.isdir(d) and any(n.startswith("libcudart.so") for n in os.listdir(d)):
                return d
    return None


@needs_native
@pytest.mark.parametrize("layout, var", [
    (("lib64",), "CUDA_HOME"), (("lib",), "CUDA_PATH"), (("lib",), "CONDA_PREFIX"),
    (("nvidia", "cu13", "lib"), "PYTHONPATH")])
def test_discovery_search_steps(subprocess_python, tmp_path, layout, var):
    if var != "PYTHONPATH" and _wheel_cudart():
        pytest.skip(f"a pip wheel's libcudart ({_wheel_cudart()}) comes before {var} in the search order")
    d = tmp_path.joinpath(*layout)
    d.mkdir(parents=True)
    shutil.copy(_lib.emu_path(), d / "libcudart.so.13")
    r, got = _load(subprocess_python, {"ACCEL_CUDART": None, var: str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert got[0] == str(d / "libcudart.so.13")
    assert var.lstrip("$") in got[1] or (var == "PYTHONPATH" and got[1].startswith("pip wheel"))


@needs_native
def test_discovery_prefers_already_loaded(subprocess_python, tmp_path):
    shutil.copy(_lib.emu_path(), tmp_path / "libcudart.so.12")
    pre = f"import ctypes; ctypes.CDLL({str(tmp_path / 'libcudart.so.12')!r})\n"
    r, got = _load(subprocess_python, {"ACCEL_CUDART": None}, pre)
    assert r.returncode == 0, r.stderr
    assert got[:2] == [str(tmp_path / "libcudart.so.12"), "already loaded in this process"]


def test_debug_loading_logs(subprocess_python):
    r = subprocess_python("import accel._lib as L\ntry: L.cudart()\nexcept Exception: pass",
                          env={"ACCEL_DEBUG_LOADING": "1", "ACCEL_CUDART": "/nope.so"})
    assert "accel loading: CUDA runtime library (libcudart): /nope.so [ACCEL_CUDART=/nope.so]" in r.stderr


# -- the real libcudart on a machine with no driver -------------------------------------------------

@pytest.mark.skipif(not SYSTEM_CUDART, reason="no system libcudart")
@pytest.mark.parametrize("backend", ["native", "python"])
def test_system_runtime_without_driver(subprocess_python, backend):
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("no compiled twin")
    code = f"""
import accel._{backend}._cudart as rt
try:
    n = rt.cudaGetDeviceCount(); print("count", n)
except RuntimeError as e:
    print("error", e.code, e.name, rt.cudaGetLastError() in (0, e.code))
print("runtime", rt.cudaRuntimeGetVersion() >= 12000)
"""
    r = subprocess_python(code, env={"ACCEL_CUDART": None})
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("count"):
        pytest.skip("this machine has a working GPU driver")
    assert r.stdout.splitlines() == ["error 35 cudaErrorInsufficientDriver True", "runtime True"]


# -- CLI ---------------------------------------------------------------------------------------------

@needs_native
def test_cli_report_on_emulator(subprocess_python):
    r = subprocess_python("import sys, runpy; sys.argv=['accel']; runpy.run_module('accel', run_name='__main__')",
                          env={"ACCEL_CUDART": "emu", "ACCEL_EMU_DEVICES": "2"})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"backend: {accel.backend}" in out and "EMULATED" in out
    assert "devices: 2" in out and "cuda:1:" in out and "compute capability: 9.0" in out


def test_cli_report_without_gpu(subprocess_python):
    r = subprocess_python("import sys, runpy; sys.argv=['accel']; runpy.run_module('accel', run_name='__main__')",
                          env={"ACCEL_CUDART": None})
    assert r.returncode == 0, r.stderr
    assert "backend:" in r.stdout and "devices:" in r.stdout


def test_cli_report_missing_library(subprocess_python):
    r = subprocess_python("import sys, runpy; sys.argv=['accel']; runpy.run_module('accel', run_name='__main__')",
                          env={"ACCEL_CUDART": "/nope.so"})
    assert r.returncode == 0, r.stderr
    assert "CUDA runtime: not found" in r.stdout and "/nope.so" in r.stdout


def test_cli_report_nvml_line_says_what_it_searched(subprocess_python):
    """Without a loadable NVML library the report's NVML line lists the places searched (it ended in a bare
    "searched:")."""
    pytest.importorskip("pynvml")
    r = subprocess_python("import sys, runpy; sys.argv=['accel']; runpy.run_module('accel', run_name='__main__')",
                          env={"ACCEL_CUDART": "emu", "ACCEL_NVML": "/nope/libnvidia-ml.so.1"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("NVML:"))
    assert lines[at].endswith("searched:"), r.stdout
    assert lines[at + 1].startswith("    - /nope/libnvidia-ml.so.1"), r.stdout


# -- the guard against testing the source tree -------------------------------------------------------

@pytest.mark.skipif(not (REPO / "accel" / "_impl.py").exists(), reason="no checkout next to the tests")
@pytest.mark.not_editable("the checkout's accel/ is the installed package: no source-tree import to refuse")
def test_suite_refuses_source_tree(tmp_path):
    """`python -m pytest` from the checkout would import the uncompiled source: the guard must stop it."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/test_foundation.py::test_backend_is_reported"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "imported from the source tree" in r.stdout + r.stderr


@needs_native
def test_cli_bench_table(subprocess_python):
    r = subprocess_python("import sys, runpy; sys.argv=['accel', 'bench']; runpy.run_module('accel', run_name='__main__')",
                          env={"ACCEL_CUDART": None}, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    if not SYSTEM_CUDART or "EMULATED" in lines[0]:
        assert lines[0].startswith("runtime: EMULATED runtime")
    for op in ("cudaGetDevice", "current_device()", "with device(current)", "current_stream()", "Event.query()",
               "Node(op, 2 operands, 1 shape)", "post_order, per node", "graph_hash, per node"):
        rows = [ln for ln in lines if ln.startswith(op + " ")]
        assert {ln.split()[-3] for ln in rows} >= {"native", "python"}, (op, rows)
        assert all(float(ln.split()[-2]) > 0 for ln in rows)
    # every peer is either timed (rows with an accel / peer ratio, on the runtime named) or says why not
    for peer in ("torch.cuda", "cuda.core", "cupy"):
        timed = [ln for ln in lines if ln.split()[1:2] == [peer]]
        skipped = [ln for ln in lines if ln.startswith(f"{peer}: not timed (")]
        assert bool(timed) != bool(skipped), (peer, timed, skipped)
        assert all(ln.endswith("x") for ln in timed)
    if any(ln.startswith("peers on ") for ln in lines):
        assert "EMULATED" not in lines[0] or "stand-ins" in lines[0]


_MINIMAL_CUDART = r"""
static int dev;
int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaGetDevice(int *d) { *d = dev; return 0; }
int cudaSetDevice(int d) { if (d != 0) return 101; dev = d; return 0; }
int cudaGetLastError(void) { return 0; }
const char *cudaGetErrorString(int e) { return e ? "invalid device ordinal" : "no error"; }
const char *cudaGetErrorName(int e) { return e ? "cudaErrorInvalidDevice" : "cudaSuccess"; }
"""


@pytest.fixture(scope="module")
def minimal_cudart(tmp_path_factory):
    """A runtime exporting only the six required symbols (built with the C compiler, if any)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("minimal")
    (d / "min.c").write_text(_MINIMAL_CUDART)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "libcudart.so.13"), str(d / "min.c")], check=True)
    return d / "libcudart.so.13"


@pytest.mark.parametrize("backend", ["native", "python"])
def test_optional_symbols_fail_only_when_called(subprocess_python, minimal_cudart, backend):
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("no compiled twin")
    code = f"""
import accel._{backend}._cudart as rt
print(rt.cudaGetDeviceCount(), rt.cudaGetDevice())
try:
    rt.cudaSetDevice(3)
except RuntimeError as e:
    print(e.code, e.name)
for call in (lambda: rt.cudaStreamGetDevice(0), rt.cudaDeviceSynchronize, lambda: rt.cuDevicePrimaryCtxGetState(0)):
    try:
        call()
    except (NotImplementedError, RuntimeError) as e:
        print(type(e).__name__, str(e).splitlines()[0])
"""
    r = subprocess_python(code, env={"ACCEL_CUDART": str(minimal_cudart)})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["1 0", "101 cudaErrorInvalidDevice"]
    assert lines[2] == f"NotImplementedError cudaStreamGetDevice is not exported by {minimal_cudart}"
    assert lines[3] == f"NotImplementedError cudaDeviceSynchronize is not exported by {minimal_cudart}"
    # no libcuda on this machine (or it lacks the symbol): a clear error either way, never a crash
    assert lines[4].split()[0] in ("LibraryNotFoundError", "NotImplementedError", "CudaDriverError")


@pytest.mark.parametrize("backend", ["native", "python"])
def test_library_without_required_symbols_is_rejected(subprocess_python, tmp_path, backend):
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("no compiled twin")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    (tmp_path / "x.c").write_text("int cudaGetDevice(int *d) { *d = 0; return 0; }\n")
    lib = tmp_path / "libcudart.so.12"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "x.c")], check=True)
    r = subprocess_python(f"import accel._{backend}._cudart as rt\ntry:\n rt.load()\nexcept RuntimeError as e:\n"
                          " print(type(e).__name__, e.searched)", env={"ACCEL_CUDART": str(lib)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"LibraryNotFoundError ['{lib}: does not export cudaGetDeviceCount']"


def test_version_is_declared_once():
    """meson.build's project() version is the distribution's version and accel.__version__."""
    import importlib.metadata
    assert accel.__version__ == importlib.metadata.version("accel-runtime")
    if (REPO / "meson.build").exists():
        import re
        m = re.search(r"project\('accel', version: '([^']+)'", (REPO / "meson.build").read_text())
        assert m and m.group(1) == accel.__version__
        assert 'dynamic = ["version"]' in (REPO / "pyproject.toml").read_text()
        assert "__version__ = " not in (REPO / "accel" / "__init__.py").read_text()
