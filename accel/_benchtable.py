"""``python -m accel bench``: ns per call of the hot paths for each twin, the raw floors and peers.

A quick table with timeit (best of several repeats); the authoritative numbers come from the
pytest-benchmark suite in bench/.  Without a usable GPU it runs on the emulated runtime and says so.
"""
import ctypes
import os
import sys
import timeit

from accel import _lib


def _choose_runtime():
    """Use the real runtime if it reports a device, else the emulator.  Returns a description."""
    if os.environ.get("ACCEL_CUDART"):
        return f"ACCEL_CUDART={os.environ['ACCEL_CUDART']}"
    try:
        lib = _lib.search_cudart()
        n = ctypes.c_int()
        fn = lib.cdll.cudaGetDeviceCount
        fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
        if fn(ctypes.byref(n)) == 0 and n.value > 0:
            return f"real CUDA runtime {lib.path}"
    except Exception:  # noqa: BLE001 - any failure means "no usable GPU runtime"
        pass
    os.environ["ACCEL_CUDART"] = "emu"
    return "EMULATED runtime (no usable GPU here): times are host-side overheads only"


def _ns(stmt, number=200_000, repeat=5):
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e9


def rows():
    """[(operation, implementation, ns)] for the binding floor and both twins."""
    from accel._native import _cudart as native
    from accel._python import _cudart as python
    native.load()
    python.load()
    lib = _lib.cudart().cdll
    raw = lib.cudaGetDevice
    raw.argtypes = [ctypes.POINTER(ctypes.c_int)]
    c = ctypes.c_int()
    ref = ctypes.byref(c)

    def noop():
        pass

    out = [("python no-op call", "-", _ns(noop)),
           ("cudaGetDevice", "raw ctypes call", _ns(lambda: raw(ref))),
           ("cudaGetDevice", "native", _ns(native.cudaGetDevice)),
           ("cudaGetDevice", "python", _ns(python.cudaGetDevice))]
    return out


def main(argv):
    where = _choose_runtime()
    try:
        table = rows()
    except ImportError as exc:
        print(f"bench needs the compiled twin: {exc}", file=sys.stderr)
        return 1
    print(f"runtime: {where}")
    print(f"{'operation':<28} {'implementation':<18} {'ns/call':>9}")
    for op, impl, ns in table:
        print(f"{op:<28} {impl:<18} {ns:>9.1f}")
    return 0
