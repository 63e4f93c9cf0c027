"""The binding layer follows from its one table (accel/_cudart_table.py), on both twins.

- both twins expose exactly the table's functions, with the same signatures and docstrings;
- a table of bad arguments, generated per parameter and C type, gives the same exception type and
  message on both twins, before any C call (proved with the emulator's fault injection);
- in-range boundary values reach the C call;
- the emulator exports every symbol of the table; docs/bindings.md lists exactly the table.
"""
import ctypes
import importlib.util
import inspect
import os
import pathlib

import pytest

from accel import _build_config, _cudart_table as table, _lib
from accel.errors import CudaDriverError, CudaError

REPO = pathlib.Path(__file__).resolve().parent.parent
ROWS = [(f, False) for f in table.RUNTIME] + [(f, True) for f in table.DRIVER]
INT_KINDS = ("int", "handle")


def _row_id(row):
    return row[0].name


class IndexBoom(Exception):
    pass


class RaisesInIndex:
    def __index__(self):
        raise IndexBoom("__index__ failed on purpose")

    def __repr__(self):
        return "RaisesInIndex()"


class IndexReturnsStr:
    def __index__(self):
        return "7"

    def __repr__(self):
        return "IndexReturnsStr()"


class Seven:
    def __index__(self):
        return 7


def _emu():
    if os.environ.get("ACCEL_CUDART") != "emu":
        pytest.skip("needs the emulated runtime (absent from -Dnative=false installs)")
    cdll = _lib.cudart().cdll
    cdll.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    return cdll


@pytest.fixture
def emu():
    cdll = _emu()
    yield cdll
    cdll.accelEmuSetFail(None)


def _placeholders(f):
    """Valid-typed inputs for every parameter of ``f`` (0 for integers, 64 zero bytes for a handle)."""
    return {p.name: (bytes(64) if p.ctype == "cudaIpcEventHandle_t" else 0) for p in f.inputs}


def _outcome(call):
    try:
        return "returned", call()
    except Exception as exc:  # noqa: BLE001 - the outcome is compared, whatever it is
        return type(exc).__name__, str(exc)


def _bad_values(p):
    kind, lo, hi = table.TYPES[p.ctype]
    return [("str", "7", TypeError), ("float", 1.5, TypeError), ("None", None, TypeError),
            ("object", object(), TypeError), ("index-raises", RaisesInIndex(), IndexBoom),
            ("index-returns-str", IndexReturnsStr(), TypeError),
            ("below", lo - 1, OverflowError), ("above", hi + 1, OverflowError),
            ("min-int64-minus-1", -2**63 - 1, OverflowError), ("2**64", 2**64, OverflowError)]


BAD_CASES = [pytest.param(f, driver, p, label, value, exc, id=f"{f.name}-{p.name}-{label}")
             for f, driver in ROWS for p in f.inputs if table.TYPES[p.ctype][0] in INT_KINDS
             for label, value, exc in _bad_values(p)]


def test_twins_bind_exactly_the_table(twin):
    mod = twin.mod("_cudart")
    assert mod.__all__ == ["load", "driver_loaded"] + [f.name for f, _ in ROWS]
    for f, _ in ROWS:
        fn = getattr(mod, f.name)
        params = list(inspect.signature(fn).parameters.values())
        assert [p.name for p in params] == [p.name for p in f.inputs], f.name
        assert [None if p.default is inspect.Parameter.empty else str(p.default) for p in params] == \
            [p.default for p in f.inputs], f.name
        assert fn.__doc__ == f.doc, f.name


@pytest.mark.skipif(not _build_config.NATIVE, reason="installed with -Dnative=false")
def test_twins_have_the_same_signatures_and_docs(both_twins):
    native, python = (t.mod("_cudart") for t in both_twins)
    for f, _ in ROWS:
        a, b = getattr(native, f.name), getattr(python, f.name)
        assert str(inspect.signature(a)) == str(inspect.signature(b)), f.name
        assert a.__doc__ == b.__doc__, f.name


def _arm(emu, f):
    """Make the next call of ``f``'s C symbol fail (fault injection), so that a C call is visible."""
    assert emu.accelEmuSetFail(f"{f.symbols[0]}:1".encode()) == 0


def _raw_call_fails(f):
    """Call ``f``'s C symbol directly with scratch arguments: True if the armed fault answered it."""
    scratch = ctypes.create_string_buffer(4096)
    fn = _lib.cudart().cdll[f.symbols[0]]   # a fresh function pointer: the twins keep their own
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * len(f.params)
    return fn(*([ctypes.addressof(scratch)] * len(f.params))) != 0


@pytest.mark.parametrize("f, driver, p, label, value, exc", BAD_CASES)
def test_bad_integer_arguments(emu, both_twins, f, driver, p, label, value, exc):
    """Each bad value raises the same exception on both twins, naming the parameter, before any C call."""
    outcomes = []
    for t in both_twins:
        mod = t.mod("_cudart")
        mod.load()
        if driver:
            getattr(mod, "cuDevicePrimaryCtxGetState")(0)  # open the driver first
        args = _placeholders(f)
        args[p.name] = value
        injectable = f.returns in ("error", "query")   # the const char* lookups have no fault hook
        if injectable:
            _arm(emu, f)
        with pytest.raises(exc) as info:
            getattr(mod, f.name)(*args.values())
        # the armed fault is still pending: the wrapper made no C call
        assert not injectable or _raw_call_fails(f), f"{t.name}: {f.name} reached the C call with {label}"
        emu.accelEmuSetFail(None)
        mod.cudaGetLastError()
        outcomes.append((type(info.value), str(info.value)))
    assert outcomes[0] == outcomes[1]
    kind, message = outcomes[0]
    if exc is TypeError and label != "index-returns-str":
        assert message == (f"{f.name}() argument '{p.name}' must be an int, not {type(value).__name__}: "
                           f"{value!r}")
    elif exc is OverflowError:
        _, lo, hi = table.TYPES[p.ctype]
        assert message == (f"{f.name}() argument '{p.name}' = {value} does not fit the C type {p.ctype} "
                           f"(expected {lo} <= {p.name} <= {hi})")
    elif exc is IndexBoom:
        assert message == "__index__ failed on purpose"   # propagated unchanged


CALLABLE_ROWS = [pytest.param(f, driver, id=f.name) for f, driver in ROWS if f.returns in ("error", "query")]


@pytest.mark.parametrize("f, driver", CALLABLE_ROWS)
def test_boundary_values_reach_the_c_call(twin, emu, f, driver):
    """The extremes of every integer parameter's C type convert and reach C (the armed fault answers)."""
    mod = twin.mod("_cudart")
    mod.load()
    if driver:
        mod.cuDevicePrimaryCtxGetState(0)
    ints = [p for p in f.inputs if table.TYPES[p.ctype][0] in INT_KINDS]
    for which in (1, 2):
        args = _placeholders(f)
        for p in ints:
            args[p.name] = table.TYPES[p.ctype][which]
        _arm(emu, f)
        with pytest.raises(CudaDriverError if driver else CudaError):
            getattr(mod, f.name)(*args.values())
        emu.accelEmuSetFail(None)
        mod.cudaGetLastError()


@pytest.mark.devices(2)
def test_index_objects_and_bools_are_integers(twin, emu):
    mod = twin.mod("_cudart")
    before = mod.cudaGetDevice()
    try:
        mod.cudaSetDevice(Seven() if mod.cudaGetDeviceCount() > 7 else True)
        assert mod.cudaGetDevice() == (7 if mod.cudaGetDeviceCount() > 7 else 1)
        with pytest.raises(CudaError) as info:
            mod.cudaSetDevice(Seven()) if mod.cudaGetDeviceCount() <= 7 else mod.cudaSetDevice(99)
        assert info.value.code == 101
    finally:
        mod.cudaSetDevice(before)


def test_ipc_handle_argument_errors_match(both_twins, emu):
    outcomes = []
    for t in both_twins:
        mod = t.mod("_cudart")
        outcomes.append([_outcome(lambda v=v: mod.cudaIpcOpenEventHandle(v))
                         for v in (12, None, "x" * 64, b"abc", bytearray(65))])
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == ("TypeError", "cudaIpcOpenEventHandle() argument 'handle' must be a bytes-like "
                                           "object of 64 bytes, not int: 12")
    assert outcomes[0][3] == ("ValueError", "cudaIpcOpenEventHandle() argument 'handle' must be 64 bytes, got 3")


def test_argument_count_errors_are_type_errors_naming_the_function(both_twins, emu):
    """Too many / too few arguments: TypeError on both twins, naming the function.  The wording is the
    interpreter's (Cython's for the native twin, CPython's for the python one)."""
    for f, _ in ROWS:
        n = len(f.inputs)
        for args in ((0,) * (n + 1), () if n and f.inputs[-1].default is None else None):
            if args is None:
                continue
            kinds = []
            for t in both_twins:
                with pytest.raises(TypeError) as info:
                    getattr(t.mod("_cudart"), f.name)(*args)
                assert f.name in str(info.value)
                kinds.append(type(info.value))
            assert kinds[0] is kinds[1]


def test_emulator_exports_every_symbol_of_the_table():
    emu_lib = _emu()
    missing = [f.name for f, _ in ROWS if not any(hasattr(emu_lib, s) for s in f.symbols)]
    assert missing == []


def _generator():
    spec = importlib.util.spec_from_file_location("gen_bindings", REPO / "tools" / "gen_bindings.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_lists_exactly_the_table():
    readme = (REPO / "docs" / "bindings.md").read_text()
    begin, end = "<!-- bindings:begin -->\n", "<!-- bindings:end -->"
    assert begin in readme and end in readme, "docs/bindings.md lost its generated bindings list"
    listed = readme.split(begin, 1)[1].split(end, 1)[0]
    expected = _generator().readme(table)
    assert listed.strip() == expected.strip(), (
        "docs/bindings.md's bindings list is stale: regenerate it with "
        "`python tools/gen_bindings.py accel/_cudart_table.py readme`")


def test_generated_sources_are_not_checked_in():
    for path in ("accel/_native/_cudart.pyx", "accel/_native/_cudart.pxd", "accel/_python/_cudart.py"):
        assert not (REPO / path).exists(), f"{path} is generated at build time and must not be in the tree"


@pytest.mark.parametrize("call, args, param", [
    ("cudaSetDevice", (2**32,), "device"),                 # used to select device 0
    ("cudaMalloc", (2**64,), "size"),                      # used to "succeed" with pointer 0
    ("cudaStreamQuery", (2**64,), "stream"),               # used to query the legacy stream
    ("cudaEventCreateWithFlags", (2**64,), "flags"),       # used to create an event
    ("cudaLaunchHostFunc", (0, -2**63 - 1, 0), "fn"),      # used to enqueue a jump to 0x7fff...ffff
])
def test_out_of_range_integers_no_longer_wrap(rt_twin_pair, call, args, param):
    """Issue 12 items 9 and 19: each of these wrapped silently on both twins before the table."""
    for mod in rt_twin_pair:
        device = mod.cudaGetDevice()
        with pytest.raises(OverflowError, match=rf"^{call}\(\) argument '{param}' = "):
            getattr(mod, call)(*args)
        assert mod.cudaGetDevice() == device


@pytest.fixture
def rt_twin_pair(both_twins, emu):
    mods = [t.mod("_cudart") for t in both_twins]
    for m in mods:
        m.load()
    return mods
