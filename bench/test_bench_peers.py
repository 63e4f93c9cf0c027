"""accel beside its peers on the same CUDA runtime, in one run: torch.cuda, cuda.core and CuPy doing the
operations accel's other bench groups time (same group names, so the summary lists them together and
prints ``accel / peer`` ratios).

Which runtime: on a machine without a GPU, bench/conftest.py activates accel's stand-in libraries
(accel.emu) before anything imports a peer, so accel, torch (CUDA wheel) and cuda.core share one
emulated runtime; with ACCEL_BENCH_CUDART pointing at a real libcudart they all run on the GPU.  A peer
that is not importable or cannot run there is skipped with the reason (CuPy links the CUDA runtime
statically and needs NVIDIA's private driver export tables: it runs only on a real GPU).
"""
import ctypes

import pytest

from accel import _lib
from accel._native import _cudart as native_rt
from accel._native import _device as native_dev
from accel._native import _stream as native
from accel._python import _cudart as python_rt
from accel._python import _device as python_dev
from accel._python import _stream as python

DEV = {"native": native_dev, "python": python_dev}
RT = {"native": native_rt, "python": python_rt}
TWINS = {"native": native, "python": python}
PEERS = ["torch.cuda", "cuda.core", "cupy"]
LOOP = 100


def _torch():
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    if torch.version.cuda is None:
        return None, f"torch {torch.__version__} is a CPU build (no torch.cuda)"
    try:
        if torch.cuda.device_count() < 1:     # the rows on a second device are devices(2)
            return None, "torch.cuda sees no device"
    except Exception as exc:  # noqa: BLE001  (any failure of the peer's initialisation is a skip reason)
        return None, f"torch.cuda does not initialise here: {exc}"
    return torch, None


def _cuda_core():
    try:
        from cuda.core import Device
    except ImportError:
        return None, "cuda-core is not installed"
    try:
        if native_rt.cudaGetDeviceCount() > 1:
            Device(1).set_current()
        Device(0).set_current()
    except Exception as exc:  # noqa: BLE001
        return None, f"cuda.core does not run here: {str(exc).splitlines()[0]}"
    return Device, None


def _cupy():
    if _lib.cudart().emulated:
        from accel import emu
        return None, emu.CUPY_UNSUPPORTED
    try:
        import cupy
    except ImportError:
        return None, "cupy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy sees no device"
    except Exception as exc:  # noqa: BLE001
        return None, f"CuPy does not run here: {exc}"
    return cupy, None


_LOADERS = {"torch.cuda": _torch, "cuda.core": _cuda_core, "cupy": _cupy}
_loaded = {}


@pytest.fixture
def peer(request, benchmark):
    """The peer's module (torch / cuda.core's Device / cupy), or a skip with the reason."""
    name = request.param
    if name not in _loaded:
        _loaded[name] = _LOADERS[name]()
    mod, reason = _loaded[name]
    if mod is None:
        pytest.skip(f"{name}: {reason}")
    benchmark.extra_info["peer"] = name
    return mod


def peers(*names):
    return pytest.mark.parametrize("peer", names, indirect=True)


def _none(name, what):
    pytest.skip(f"{name} has no {what}")


@pytest.fixture(scope="module", autouse=True)
def on_device_0():
    for twin in DEV:
        if RT[twin].cudaGetDeviceCount() > 1:
            DEV[twin].set_device(1)
        DEV[twin].set_device(0)
    yield
    for twin in DEV:
        DEV[twin].set_device(0)


def _noop(*args):
    pass


# The least a ctypes program can pay for the C calls of an operation (the python twin's floor): the
# functions unprototyped (no per-argument conversion), with the arguments made beforehand.
def _ctypes_min(name):
    return python_rt._unprototyped(name)


@pytest.mark.benchmark(group="current_device")
def test_floor_ctypes_min_cudaGetDevice(bench):
    out = ctypes.c_int()
    bench(_ctypes_min("cudaGetDevice"), ctypes.byref(out))


@pytest.mark.benchmark(group="set_device(current)")
def test_floor_ctypes_min_cudaSetDevice(bench):
    bench(_ctypes_min("cudaSetDevice"), 0)


def _get_twice(get, p):
    for _ in range(LOOP):
        get(p)
        get(p)


@pytest.mark.benchmark(group="with device(current)")
def test_floor_ctypes_min_cudaGetDevice_x2(bench):
    bench(_get_twice, _ctypes_min("cudaGetDevice"), ctypes.byref(ctypes.c_int()), per=LOOP)


def _guard_calls(get, set_, p):
    for _ in range(LOOP):
        get(p)
        set_(1)
        get(p)
        set_(0)


@pytest.mark.benchmark(group="with device(other)")
@pytest.mark.devices(2)
def test_floor_ctypes_min_guard_calls(bench):
    # enter: get + set; exit: get + set (the primary-context probe left out)
    bench(_guard_calls, _ctypes_min("cudaGetDevice"), _ctypes_min("cudaSetDevice"),
          ctypes.byref(ctypes.c_int()), per=LOOP)


def _query_event():
    e = python.Event()
    e.record(python.Stream(device=0))
    e.synchronize()
    return e


@pytest.mark.benchmark(group="Event.query")
def test_floor_ctypes_min_cudaEventQuery(bench):
    e = _query_event()
    assert bench(_ctypes_min("cudaEventQuery"), ctypes.c_void_p(e.cuda_event)) == 0


def _get_and_record(get, p, record, e, s):
    get(p)
    return record(e, s)


@pytest.mark.benchmark(group="Event.record(s)")
def test_floor_ctypes_min_cudaGetDevice_cudaEventRecord(bench):
    e, s = python.Event(), python.Stream(device=0)
    e.record(s)
    bench(_get_and_record, _ctypes_min("cudaGetDevice"), ctypes.byref(ctypes.c_int()),
          _ctypes_min("cudaEventRecord"), ctypes.c_void_p(e.cuda_event), ctypes.c_void_p(s.cuda_stream))
    s.synchronize()


# -- current device ------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="current_device")
@peers(*PEERS)
def test_peer_current_device(bench, peer, request):
    name = request.node.callspec.params["peer"]
    fn = {"torch.cuda": lambda: peer.cuda.current_device, "cuda.core": lambda: peer,
          "cupy": lambda: peer.cuda.runtime.getDevice}[name]()
    bench(fn)


# -- set_device(current) -------------------------------------------------------------------------------

@pytest.mark.benchmark(group="set_device(current)")
def test_noop_python_call_1arg(bench):
    bench(_noop, 0)


@pytest.mark.benchmark(group="set_device(current)")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_cudaSetDevice(bench, twin):
    bench(RT[twin].cudaSetDevice, 0)


@pytest.mark.benchmark(group="set_device(current)")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_set_device(bench, twin):
    # accel.cuda.set_device is this function (torch.cuda.set_device's semantics)
    bench(DEV[twin].set_current_device, 0)


@pytest.mark.benchmark(group="set_device(current)")
@peers(*PEERS)
def test_peer_set_device(bench, peer, request):
    name = request.node.callspec.params["peer"]
    if name == "torch.cuda":
        bench(peer.cuda.set_device, 0)
    elif name == "cuda.core":
        bench(peer(0).set_current)
    else:
        bench(peer.cuda.runtime.setDevice, 0)


# -- with device(current) / with device(other) -----------------------------------------------------------

def _guard_loop(ctx, i):
    for _ in range(LOOP):
        with ctx(i):
            pass


def _device_ctx(name, peer):
    if name == "torch.cuda":
        return peer.cuda.device
    if name == "cupy":
        return peer.cuda.Device
    return _none(name, "device context manager (`with device`)")


@pytest.mark.benchmark(group="with device(current)")
@peers(*PEERS)
def test_peer_with_device_same(bench, peer, request):
    bench(_guard_loop, _device_ctx(request.node.callspec.params["peer"], peer), 0, per=LOOP)


@pytest.mark.benchmark(group="with device(other)")
@pytest.mark.devices(2)
@peers(*PEERS)
def test_peer_with_device_switch(bench, peer, request):
    bench(_guard_loop, _device_ctx(request.node.callspec.params["peer"], peer), 1, per=LOOP)


# -- streams -------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="current_stream")
@peers(*PEERS)
def test_peer_current_stream(bench, peer, request):
    name = request.node.callspec.params["peer"]
    if name == "torch.cuda":
        bench(peer.cuda.current_stream)
    elif name == "cuda.core":
        dev = peer(0)
        bench(lambda: dev.default_stream)
    else:
        bench(peer.cuda.get_current_stream)


def _peer_stream(name, peer, device):
    if name == "torch.cuda":
        return peer.cuda.Stream(device=device)
    if name == "cuda.core":
        return peer(device).create_stream()
    with peer.cuda.Device(device):
        return peer.cuda.Stream(non_blocking=True)


@pytest.mark.benchmark(group="with stream(s)")
@peers(*PEERS)
@pytest.mark.parametrize("device", [0, pytest.param(1, marks=pytest.mark.devices(2))],
                         ids=["same_device", "other_device"])
def test_peer_with_stream(bench, peer, request, device):
    name = request.node.callspec.params["peer"]
    s = _peer_stream(name, peer, device)
    if name == "torch.cuda":
        bench(_guard_loop, peer.cuda.stream, s, per=LOOP)
    elif name == "cupy":
        bench(_guard_loop, lambda x: x, s, per=LOOP)
    else:
        _none(name, "stream context manager (`with stream`)")


@pytest.mark.benchmark(group="wait_stream")
def test_noop_python_call_wait(bench):
    bench(_noop, 0)


@pytest.mark.benchmark(group="wait_stream")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_wait_stream(bench, twin):
    mod = TWINS[twin]
    a, b = mod.Stream(device=0), mod.Stream(device=0)
    bench(a.wait_stream, b)
    a.synchronize()


@pytest.mark.benchmark(group="wait_stream")
@peers(*PEERS)
def test_peer_wait_stream(bench, peer, request):
    name = request.node.callspec.params["peer"]
    a, b = _peer_stream(name, peer, 0), _peer_stream(name, peer, 0)
    if name == "torch.cuda":
        bench(a.wait_stream, b)
        a.synchronize()
    elif name == "cuda.core":
        bench(a.wait, b)
        a.sync()
    else:
        _none(name, "wait_stream (only wait_event)")


# -- events --------------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="Event()")
def test_noop_python_call_event(bench):
    bench(_noop)


@pytest.mark.benchmark(group="Event()")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_event_create(bench, twin):
    bench(TWINS[twin].Event)


def _event_factory(name, peer):
    if name == "torch.cuda":
        return peer.cuda.Event
    if name == "cuda.core":
        dev = peer(0)
        return dev.create_event
    return peer.cuda.Event


@pytest.mark.benchmark(group="Event()")
@peers(*PEERS)
def test_peer_event_create(bench, peer, request):
    bench(_event_factory(request.node.callspec.params["peer"], peer))


@pytest.mark.benchmark(group="Event().record()")
def test_noop_python_call_event_record(bench):
    bench(_noop)


@pytest.mark.benchmark(group="Event().record()")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_event_create_record(bench, twin):
    mod = TWINS[twin]
    bench(lambda: mod.Event().record())
    mod.current_stream(0).synchronize()


@pytest.mark.benchmark(group="Event().record()")
@peers(*PEERS)
def test_peer_event_create_record(bench, peer, request):
    name = request.node.callspec.params["peer"]
    if name == "cuda.core":
        s = peer(0).default_stream
        bench(s.record)
        s.sync()
    else:
        make = _event_factory(name, peer)
        bench(lambda: make().record())
        (peer.cuda.synchronize if name == "torch.cuda" else peer.cuda.runtime.deviceSynchronize)()


@pytest.mark.benchmark(group="Event.record(s)")
@peers(*PEERS)
def test_peer_event_record(bench, peer, request):
    name = request.node.callspec.params["peer"]
    s = _peer_stream(name, peer, 0)
    if name == "cuda.core":
        e = peer(0).create_event()
        bench(s.record, e)
        s.sync()
    else:
        e = _event_factory(name, peer)()
        bench(e.record, s)
        s.synchronize()


@pytest.mark.benchmark(group="Event.record() on the current stream")
@peers(*PEERS)
def test_peer_event_record_current_stream(bench, peer, request):
    name = request.node.callspec.params["peer"]
    if name == "cuda.core":
        _none(name, "current stream (a stream is always given)")
    e = _event_factory(name, peer)()
    bench(e.record)
    e.synchronize()


@pytest.mark.benchmark(group="Event.query")
@peers(*PEERS)
def test_peer_event_query(bench, peer, request):
    name = request.node.callspec.params["peer"]
    s = _peer_stream(name, peer, 0)
    if name == "cuda.core":
        e = s.record()
        e.sync()
        assert bench(lambda: e.is_done) is True
    else:
        e = _event_factory(name, peer)()
        e.record(s)
        e.synchronize()
        assert bench(e.query if name == "torch.cuda" else lambda: e.done) is True
