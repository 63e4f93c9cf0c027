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


def _ns(stmt, globals_=None, number=100_000, repeat=5):
    return min(timeit.repeat(stmt, number=number, repeat=repeat, globals=globals_)) / number * 1e9


def _twins(name):
    import importlib
    return [(t, importlib.import_module(f"accel._{t}.{name}")) for t in ("native", "python")]


def _dag(ir, n):
    """An n-node DAG in which each node reads the two previous outputs (shared operands)."""
    shape = ir.Shape(6, [4])
    outs = [ir.Output(ir.device_data(shape, i)) for i in range(2)]
    for _ in range(n):
        outs.append(ir.Output(ir.Node("aten::add", [outs[-1], outs[-2]], [shape])))
    return outs[-1]


def rows():
    """[(operation, implementation, ns per operation)] for the floors and both twins."""
    out = []

    def noop():
        pass

    out.append(("python no-op call", "-", _ns(noop)))
    lib = _lib.cudart().cdll
    raw = lib.cudaGetDevice
    raw.argtypes = [ctypes.POINTER(ctypes.c_int)]
    ref = ctypes.byref(ctypes.c_int())
    out.append(("cudaGetDevice", "bare ctypes call", _ns(lambda: raw(ref))))
    for twin, rt in _twins("_cudart"):
        rt.load()
        out.append(("cudaGetDevice", twin, _ns(rt.cudaGetDevice)))
    for twin, dev in _twins("_device"):
        out.append(("current_device()", twin, _ns(dev.current_device)))
        guard = dev.device
        out.append(("with device(current)", twin, _ns(f"with guard({dev.current_device()}): pass",
                                                         {"guard": guard})))
    for twin, st in _twins("_stream"):
        out.append(("current_stream()", twin, _ns(st.current_stream)))
        ev = st.Event()
        ev.record()
        out.append(("Event.query()", twin, _ns(ev.query)))
    for twin, ir in _twins("_ir"):
        shape = ir.Shape(6, [2, 3])
        a = ir.Output(ir.device_data(shape, 0))
        out.append(("Node(op, 2 operands, 1 shape)", twin,
                    _ns(lambda: ir.Node("aten::add", [a, a], [shape]), number=20_000)))
        root = _dag(ir, 20_000)
        out.append(("post_order, per node", twin, _ns(lambda: ir.post_order([root]), number=3) / 20_002))
        out.append(("graph_hash, per node", twin, _ns(lambda: ir.graph_hash([root]), number=3) / 20_002))
    return out


def main(argv):
    where = _choose_runtime()
    try:
        table = rows()
    except ImportError as exc:
        print(f"bench needs the compiled twin: {exc}", file=sys.stderr)
        return 1
    print(f"runtime: {where}")
    noop = table[0][2]
    print(f"{'operation':<32} {'implementation':<18} {'ns/op':>9} {'x no-op call':>13}")
    for op, impl, ns in sorted(table[1:], key=lambda r: (r[0], r[1])):
        print(f"{op:<32} {impl:<18} {ns:>9.1f} {ns / noop:>12.1f}x")
    print(f"{table[0][0]:<32} {'-':<18} {noop:>9.1f}")
    return 0
