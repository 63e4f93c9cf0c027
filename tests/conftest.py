"""Suite-wide guards and the twin fixture.

Every hot-path test takes ``twin`` (or a fixture built on it) and so runs once against the compiled
``accel._native`` modules and once against the ``accel._python`` twins, ids ``native`` / ``python``.

The guard below makes it impossible to test the source tree by accident: ``accel`` must come from an
installed build (a regular install, or meson-python's editable install of this checkout), and when that build
says it compiled the native modules they must all import.
"""
import importlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import types

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent

def _fail(msg):
    pytest.exit(f"accel test guard: {msg}", returncode=3)


def _editable():
    """An editable install of this checkout (``pip install --no-build-isolation -e .``): meson-python's loader maps
    ``accel`` to the checkout's accel/ and what the build makes (the compiled twins, the emulator, the generated
    modules) to its build directory, rebuilding on import.  That is an installed build, not the source tree."""
    import importlib.util

    spec = importlib.util.find_spec("accel")
    return spec is not None and type(spec.loader).__module__.endswith("_editable_loader")


EDITABLE = _editable()


def _guard():
    """Refuse a source-tree import; when the build compiled the twins, they must all import."""
    import importlib.util

    spec = importlib.util.find_spec("accel")
    if spec is None or spec.origin is None:
        _fail("'accel' is not installed: run `pip install .[test]` first")
    where = pathlib.Path(spec.origin).resolve()
    if REPO == where.parent.parent and not EDITABLE:
        _fail(f"'accel' was imported from the source tree ({where}) instead of the installed build. "
              "Install it (pip install .) and run `pytest` (not `python -m pytest`) from the checkout.")
    from accel import _build_config, _impl

    if _build_config.NATIVE:
        for name in _impl.MODULES:
            try:
                mod = importlib.import_module(f"accel._native.{name}")
            except ImportError as exc:
                _fail(f"this build claims native modules but accel._native.{name} does not import: {exc}")
            if not str(mod.__file__).endswith((".so", ".pyd")):
                _fail(f"accel._native.{name} is not a compiled module: {mod.__file__}")


_guard()

# The emulated runtime unless the run asks for the real one (e.g. on a GPU machine).  A -Dnative=false
# install has no emulator: the tests that need it skip (see the ``emu`` fixtures).
from accel import _lib  # noqa: E402  (after the guard: this must be the installed package)

if os.environ.get("ACCEL_TEST_CUDART", "emu") == "emu":
    USING_EMU = os.path.exists(_lib.emu_path())
    if USING_EMU:
        os.environ["ACCEL_CUDART"] = "emu"
        # The emulator honours CUDA_VISIBLE_DEVICES (a GPU machine's setting would hide emulated devices);
        # the suite expects all of them (4, or ACCEL_EMU_DEVICES), and the tests of the variable set it in their
        # subprocesses.
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
else:
    os.environ["ACCEL_CUDART"] = os.environ["ACCEL_TEST_CUDART"]
    USING_EMU = False


def pytest_configure(config):
    config.addinivalue_line("markers", "native_only: needs the compiled twin")
    config.addinivalue_line("markers", "devices(n): needs at least n CUDA devices (skipped, naming the need, "
                                       "where the runtime has fewer; the emulator has 4 unless ACCEL_EMU_DEVICES says)")
    config.addinivalue_line("markers", "emu_only(why): needs the emulated runtime (its fault injection, its "
                                       "ACCEL_EMU_* controls or its accelEmu* test symbols); skipped on a real one")
    config.addinivalue_line("markers", "not_editable(why): checks what an editable install changes by design (the "
                                       "checkout's accel/ is the installed package); skipped on one")


def pytest_report_header(config):
    import accel
    from accel import _build_config
    return [f"accel {accel.__version__} from {pathlib.Path(accel.__file__).parent}; "
            f"backend={accel.backend} ({accel.backend_reason}); native built={_build_config.NATIVE}; "
            f"cudart={'emulator' if USING_EMU else os.environ.get('ACCEL_CUDART', 'system search')}; "
            f"CUDA devices: {DEVICE_COUNT}{f' ({DEVICE_COUNT_WHY})' if DEVICE_COUNT_WHY else ''}"]


def _runtime_name():
    if USING_EMU:
        n = os.environ.get("ACCEL_EMU_DEVICES")
        return f"the emulator (ACCEL_EMU_DEVICES={n})" if n is not None else "the emulator"
    return "this machine"


def pytest_collection_modifyitems(config, items):
    """``devices(n)`` / ``emu_only``: a skip naming the need where the runtime cannot meet it."""
    for item in items:
        mark = item.get_closest_marker("not_editable")
        if EDITABLE and mark is not None:
            item.add_marker(pytest.mark.skip(reason=f"an editable install: {mark.args[0]}"))
            continue
        if not USING_EMU:
            mark = item.get_closest_marker("emu_only")
            if mark is not None:
                why = f" ({mark.args[0]})" if mark.args else ""
                item.add_marker(pytest.mark.skip(reason=f"needs the emulated runtime{why}"))
                continue
        need = max((m.args[0] for m in item.iter_markers("devices")), default=0)
        if need > DEVICE_COUNT:
            item.add_marker(pytest.mark.skip(reason=_needs_devices(need)))


def _needs_devices(n):
    why = f", {DEVICE_COUNT_WHY}" if DEVICE_COUNT_WHY else ""
    return f"needs {n} CUDA device{'' if n == 1 else 's'}, {_runtime_name()} has {DEVICE_COUNT}{why}"


@pytest.fixture
def a_device():
    """For the fixtures that set up state on device 0 (a marker cannot be put on a fixture): the test skips,
    as ``devices(1)`` would, where the runtime has no device."""
    if DEVICE_COUNT < 1:
        pytest.skip(_needs_devices(1))


class Twin:
    """One implementation: ``name`` is "native" or "python"; ``mod(x)`` imports ``accel.<pkg>.<x>``."""

    def __init__(self, name):
        self.name = name
        self.package = f"accel._{name}"

    def mod(self, name):
        return importlib.import_module(f"{self.package}.{name}")

    def __repr__(self):
        return f"Twin({self.name})"


def _twin_param(name):
    from accel import _build_config
    marks = [] if (name == "python" or _build_config.NATIVE) else [
        pytest.mark.skip(reason="installed with -Dnative=false: no compiled twin")]
    return pytest.param(name, id=name, marks=marks)


@pytest.fixture(params=[_twin_param("native"), _twin_param("python")], scope="session")
def twin(request):
    return Twin(request.param)


@pytest.fixture(scope="session")
def both_twins():
    """Both implementations at once, for differential tests."""
    from accel import _build_config
    if not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false: no compiled twin")
    return Twin("native"), Twin("python")


def run_python(code, env=None, timeout=120):
    """Run ``code`` in a fresh interpreter (outside the checkout) and return the CompletedProcess."""
    full_env = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    return subprocess.run([sys.executable, "-c", code], env=full_env, cwd=tempfile.gettempdir(), timeout=timeout,
                          capture_output=True, text=True)


@pytest.fixture(scope="session")
def subprocess_python():
    return run_python


# The CUDA devices the suite's runtime has, found once in a fresh interpreter (so that this process's accel state,
# and its lazy initialisation, stay untouched): the emulator's (4 unless ACCEL_EMU_DEVICES says otherwise) or the
# real runtime's (ACCEL_TEST_CUDART).  The ``devices(n)`` marker compares with it; the fixtures that reset state
# over "every device" read it from ACCEL_TEST_DEVICE_COUNT (they are loaded by path and cannot import conftest).
_PROBE = """
import ctypes, json
from accel import _lib
try:
    lib = _lib.cudart()
except Exception as exc:
    print(json.dumps([0, "no CUDA runtime: " + " ".join(line.strip() for line in str(exc).splitlines())]))
    raise SystemExit
n = ctypes.c_int(0)
rc = lib.cdll.cudaGetDeviceCount(ctypes.byref(n))
lib.cdll.cudaGetErrorName.restype = ctypes.c_char_p
name = "" if rc == 0 else (lib.cdll.cudaGetErrorName(rc) or b"?").decode()
print(json.dumps([n.value, ""] if rc == 0 else [0, f"cudaGetDeviceCount: error {rc} ({name})"]))
"""


def _probe_device_count():
    proc = run_python(_PROBE, timeout=60)
    try:
        count, why = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        _fail(f"could not count the CUDA devices (rc={proc.returncode}): {proc.stderr[-2000:]}")
    return count, why


DEVICE_COUNT, DEVICE_COUNT_WHY = _probe_device_count()
os.environ["ACCEL_TEST_DEVICE_COUNT"] = str(DEVICE_COUNT)


@pytest.fixture(scope="session")
def device_count():
    """The CUDA devices of the suite's runtime (see DEVICE_COUNT), e.g. to compute an expected message."""
    return DEVICE_COUNT


# The helpers every lazy test module's CHECKS script may use (a module may define its own over them): ``raises``
# (the exception, its message containing each text) and ``cv`` (a lazy counter's value, 0 when absent).
_CHECKS_PRELUDE = """
def raises(exc, fn, *texts):
    try:
        fn()
    except exc as e:
        for t in texts:
            assert t in str(e), (t, str(e))
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")

def cv(name):
    from accel.lazy import metrics as _metrics
    return _metrics.counter_value(name) or 0
"""

# The runner appended to a lazy test module's CHECKS script: every check_* function, its traceback if it fails.
_CHECKS_RUNNER = """
import json as _json, traceback as _traceback, accel as _accel
_results = {}
for _name, _fn in list(globals().items()):
    if _name.startswith("check_"):
        try:
            _fn()
            _results[_name] = "ok"
        except Exception:
            _results[_name] = _traceback.format_exc()
print(_json.dumps({"backend": _accel.backend, "results": _results}))
"""


@pytest.fixture(scope="session")
def lazy_checks():
    """``lazy_checks(code, backend)``: run the check_* functions of ``code`` in a fresh interpreter on the
    twin ``backend`` (ACCEL_BACKEND); {name: "ok" or the traceback}.  Skips native on a -Dnative=false build."""
    def run(code, backend, timeout=600):
        from accel import _build_config
        if backend == "native" and not _build_config.NATIVE:
            pytest.skip("installed with -Dnative=false: no compiled twin")
        r = run_python(_CHECKS_PRELUDE + code + _CHECKS_RUNNER, env={"ACCEL_BACKEND": backend}, timeout=timeout)
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert out["backend"] == backend
        return out["results"]
    return run


@pytest.fixture
def ir(twin):
    """The twin's IR module (``_ir``), for the accel.lazy IR tests."""
    return twin.mod("_ir")


@pytest.fixture(scope="session")
def rss_growth():
    """``rss_growth(twin, body, n)`` of tests/lazy_rss.py (the lazy IR cycle tests' RSS check) in a fresh
    interpreter (loaded by path: the suite runs with --import-mode=importlib)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("lazy_rss", pathlib.Path(__file__).with_name("lazy_rss.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return lambda twin, body, n: mod.rss_growth(run_python, twin, body, n)
