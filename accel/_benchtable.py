"""``python -m accel bench``: ns per call of the hot paths for each twin, the raw floors and peers.

A quick table with timeit (best of several repeats); the authoritative numbers come from the
pytest-benchmark suite in bench/.  Without a usable GPU it runs on the emulated runtime (its stand-in
libraries, so that torch.cuda and cuda.core, when importable, run on the same runtime) and says so.
Peers (torch.cuda, cuda.core, CuPy) get their own rows and an ``accel / peer`` ratio when they import
and run; otherwise the reason is printed.
"""
import ctypes
import os
import subprocess
import sys
import timeit

from accel import _lib


_PROBE = """
import ctypes
from accel import _lib
lib = _lib.search_cudart()
n = ctypes.c_int()
fn = lib.cdll.cudaGetDeviceCount
fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
print(lib.path if fn(ctypes.byref(n)) == 0 and n.value > 0 else "")
"""


def _choose_runtime():
    """Use the real runtime if it reports a device, else the emulator.  Returns (a description, whether a
    runtime with devices is in use).  The probe runs in a child process, so that this one has loaded no
    libcudart when the stand-ins are activated."""
    if os.environ.get("ACCEL_CUDART"):
        return f"ACCEL_CUDART={os.environ['ACCEL_CUDART']}", True
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60)
        if probe.returncode == 0 and probe.stdout.strip():
            return f"real CUDA runtime {probe.stdout.strip()}", True
    except (OSError, subprocess.SubprocessError):  # no usable GPU runtime
        pass
    if not os.path.exists(_lib.emu_path()):
        return ("none: no usable GPU, and this install has no emulated runtime (it was built with "
                "-Dnative=false): the device, stream and event rows are not timed"), False
    try:
        from accel import emu
        emu.activate()  # the stand-ins: accel and any peer imported later share one emulated runtime
        return (f"EMULATED runtime, stand-ins {emu.cudart_path()} (no usable GPU here): times are host-side "
                "overheads only"), True
    except Exception:  # noqa: BLE001 - no stand-ins (e.g. a foreign libcudart already loaded): accel alone
        os.environ["ACCEL_CUDART"] = "emu"
        return "EMULATED runtime (no usable GPU here; peers not on it): times are host-side overheads only", True


def _ns(stmt, globals_=None, number=100_000, repeat=5):
    return min(timeit.repeat(stmt, number=number, repeat=repeat, globals=globals_)) / number * 1e9


def _twins(name):
    """[(twin, module)]: both twins, or the python twin alone on a -Dnative=false install."""
    import importlib
    from accel import _build_config
    twins = ("native", "python") if _build_config.NATIVE else ("python",)
    return [(t, importlib.import_module(f"accel._{t}.{name}")) for t in twins]


def _dag(ir, n):
    """An n-node DAG in which each node reads the two previous outputs (shared operands)."""
    shape = ir.Shape(6, [4])
    outs = [ir.Output(ir.device_data(shape, i)) for i in range(2)]
    for _ in range(n):
        outs.append(ir.Output(ir.Node("aten::add", [outs[-1], outs[-2]], [shape])))
    return outs[-1]


def rows(devices=True):
    """[(operation, implementation, ns per operation)] for the floors and the twins; without ``devices`` (no
    runtime to call) only the lazy IR rows."""
    out = []

    def noop():
        pass

    out.append(("python no-op call", "-", _ns(noop)))
    if devices:
        out += _device_rows()
    out += _ir_rows()
    return out


def _device_rows():
    out = []
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
    return out


def _ir_rows():
    out = []
    for twin, ir in _twins("_ir"):
        shape = ir.Shape(6, [2, 3])
        a = ir.Output(ir.device_data(shape, 0))
        out.append(("Node(op, 2 operands, 1 shape)", twin,
                    _ns(lambda: ir.Node("aten::add", [a, a], [shape]), number=20_000)))
        root = _dag(ir, 20_000)
        out.append(("post_order, per node", twin, _ns(lambda: ir.post_order([root]), number=3) / 20_002))
        out.append(("graph_hash, per node", twin, _ns(lambda: ir.graph_hash([root]), number=3) / 20_002))
    return out


def _peer_torch():
    import torch
    if torch.version.cuda is None:
        raise RuntimeError(f"torch {torch.__version__} is a CPU build (no torch.cuda)")
    torch.cuda.init()
    ev = torch.cuda.Event()
    ev.record()
    cur = torch.cuda.current_device()
    return [("current_device()", torch.cuda.current_device, None),
            ("with device(current)", "with guard(i): pass", {"guard": torch.cuda.device, "i": cur}),
            ("current_stream()", torch.cuda.current_stream, None),
            ("Event.query()", ev.query, None)]


def _peer_cuda_core():
    from cuda.core import Device
    dev = Device()
    dev.set_current()
    ev = dev.create_event()
    return [("current_device()", Device, None), ("current_stream()", lambda: dev.default_stream, None),
            ("Event.query()", lambda: ev.is_done, None)]


def _peer_cupy():
    if _lib.cudart().emulated:
        from accel import emu
        raise RuntimeError(emu.CUPY_UNSUPPORTED)
    import cupy
    ev = cupy.cuda.Event()
    ev.record()
    return [("current_device()", cupy.cuda.runtime.getDevice, None),
            ("with device(current)", "with guard(i): pass", {"guard": cupy.cuda.Device,
                                                             "i": cupy.cuda.runtime.getDevice()}),
            ("current_stream()", cupy.cuda.get_current_stream, None), ("Event.query()", lambda: ev.done, None)]


PEERS = (("torch.cuda", _peer_torch), ("cuda.core", _peer_cuda_core), ("cupy", _peer_cupy))


def peer_rows():
    """([(operation, peer, ns)], [(peer, why it was not timed)])."""
    out, skipped = [], []
    for name, setup in PEERS:
        try:
            ops = setup()
            for op, stmt, globals_ in ops:
                out.append((op, name, _ns(stmt, globals_, number=20_000)))
        except Exception as exc:  # noqa: BLE001 - any failure of a peer is a reason to print, not to stop
            skipped.append((name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    return out, skipped


def main(argv):
    from accel import _build_config
    where, devices = _choose_runtime()
    table = rows(devices)
    print(f"runtime: {where}")
    if not _build_config.NATIVE:
        print("twins: python only (this install was built with -Dnative=false: no compiled twin to compare)")
    noop = table[0][2]
    print(f"{'operation':<32} {'implementation':<18} {'ns/op':>9} {'x no-op call':>13}")
    for op, impl, ns in sorted(table[1:], key=lambda r: (r[0], r[1])):
        print(f"{op:<32} {impl:<18} {ns:>9.1f} {ns / noop:>12.1f}x")
    print(f"{table[0][0]:<32} {'-':<18} {noop:>9.1f}")
    peers, skipped = peer_rows() if devices else ([], [])
    if peers:
        native = {op: ns for op, impl, ns in table if impl == "native"}
        print(f"\npeers on {where.split(':')[0]}:")
        print(f"{'operation':<32} {'peer':<18} {'ns/op':>9} {'accel native / peer':>20}")
        for op, peer, ns in sorted(peers):
            ratio = f"{native[op] / ns:>19.2f}x" if op in native else f"{'':>20}"
            print(f"{op:<32} {peer:<18} {ns:>9.1f} {ratio}")
    for peer, why in skipped:
        print(f"{peer}: not timed ({why})")
    return 0
