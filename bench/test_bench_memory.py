"""Device memory on the emulator, both twins, against a Python no-op, the raw binding calls and memcpy.

Targets (issue 13): ``alloc(4096)`` + ``free()`` from a warm pool <= 3x the two raw binding calls
(cudaMallocAsync + cudaFreeAsync) on the native twin; ``memory_allocated()`` <= 1.5 no-op Python calls;
256 MiB host->device and device->host copies from pinned memory >= 50% of a plain memcpy of the same
bytes (on the emulator).  torch's caching allocator and CuPy's pool are measured when importable.
Issue 21: a typed round trip (DeviceArray: to_device + copy_to_host of a float32 (64, 64)) costs what the
bytes path (DeviceBuffer: alloc + copy_from_host + copy_to_host) costs, within noise; creating a view
(``a[2:6]``, ``a[:, ::2]``, ``a[3]``, ``a.T``) <= 3 no-op Python calls on the native twin.
"""
import ctypes
import importlib.util

import numpy as np
import pytest

import accel.cuda as cuda
from accel._native import _cudart as native_rt
from accel._native import _memory as native
from accel._python import _cudart as python_rt
from accel._python import _memory as python

TWINS = {"native": native, "python": python}
RAW = {"native": native_rt, "python": python_rt}
LOOP = 100
BIG = 256 << 20


def _noop(*args):
    pass


@pytest.fixture(scope="module", autouse=True)
def loaded():
    native_rt.load()
    python_rt.load()
    native_rt.cudaSetDevice(0)
    for mem in TWINS.values():
        mem.alloc(4096).free()    # warm: the pool keeps the block


# -- alloc + free ------------------------------------------------------------------------------------

def _raw_pair(rt):
    m, f = rt.cudaMallocAsync, rt.cudaFreeAsync
    for _ in range(LOOP):
        f(m(4096, 0), 0)


def _peer_loop(make, args, kwargs):
    for _ in range(LOOP):
        make(*args, **kwargs)    # dropped at once: back to the peer's pool


def _alloc_free(alloc):
    for _ in range(LOOP):
        alloc(4096).free()


@pytest.mark.benchmark(group="alloc_free")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_malloc_async_free_async(bench, twin):
    bench(_raw_pair, RAW[twin], per=LOOP)


@pytest.mark.benchmark(group="alloc_free")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_alloc_free_4096(bench, twin):
    bench(_alloc_free, TWINS[twin].alloc, per=LOOP)


@pytest.mark.benchmark(group="alloc_free")
def test_peer_torch_empty_1024(bench):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not importable")
    import torch
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    bench(_peer_loop, torch.empty, (1024,), {"device": "cuda"}, per=LOOP)


@pytest.mark.benchmark(group="alloc_free")
def test_peer_cupy_pool_alloc(bench):
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("cupy is not importable")
    import cupy
    bench(_peer_loop, cupy.cuda.alloc, (4096,), {}, per=LOOP)


# -- memory_allocated ----------------------------------------------------------------------------------

@pytest.mark.benchmark(group="memory_allocated")
def test_noop_python_call(bench):
    bench(_noop)


@pytest.mark.benchmark(group="memory_allocated")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_memory_allocated(bench, twin):
    bench(TWINS[twin].memory_allocated)


@pytest.mark.benchmark(group="memory_allocated")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_memory_allocated_device_given(bench, twin):
    bench(TWINS[twin].memory_allocated, 0)


# -- 256 MiB pinned copies -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pinned():
    a = cuda.pinned_empty(BIG, np.uint8)
    b = cuda.pinned_empty(BIG, np.uint8)
    a[:] = 1
    b[:] = 0
    return a, b


def _memcpy(dst, src):
    ctypes.memmove(dst.ctypes.data, src.ctypes.data, BIG)


def _h2d(buf, src):
    buf.copy_from_host(src)
    buf.stream.synchronize()


def _d2h(buf, out):
    buf.copy_to_host(out)
    buf.stream.synchronize()


@pytest.mark.benchmark(group="pinned_copy_256MiB")
def test_floor_memcpy_256MiB(bench, pinned):
    bench(_memcpy, pinned[1], pinned[0], iterations=1, rounds=8)


@pytest.mark.benchmark(group="pinned_copy_256MiB")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_h2d_pinned_256MiB(bench, twin, pinned):
    buf = TWINS[twin].alloc(BIG)
    bench(_h2d, buf, pinned[0], iterations=1, rounds=8)
    buf.free()


@pytest.mark.benchmark(group="pinned_copy_256MiB")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_d2h_pinned_256MiB(bench, twin, pinned):
    buf = TWINS[twin].alloc(BIG)
    buf.memset(1)
    bench(_d2h, buf, pinned[1], iterations=1, rounds=8)
    buf.free()


# -- typed arrays (issue 21) ---------------------------------------------------------------------------

HOST = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)


def _round_trip_bytes(mem, x):
    for _ in range(10):
        b = mem.alloc(x.nbytes)
        b.copy_from_host(x)
        b.copy_to_host()
        b.free()


def _round_trip_typed(mem, x):
    for _ in range(10):
        a = mem.as_array(mem.alloc(x.nbytes), x.dtype, x.shape)
        a.copy_from_host(x)
        a.copy_to_host()
        a.free()


def _round_trip_to_device(x):
    for _ in range(10):
        a = cuda.to_device(x)
        a.copy_to_host()
        a.free()


@pytest.mark.benchmark(group="round_trip_16KiB")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_round_trip_bytes(bench, twin):
    bench(_round_trip_bytes, TWINS[twin], HOST, iterations=200, rounds=40, per=10)


@pytest.mark.benchmark(group="round_trip_16KiB")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_round_trip_typed(bench, twin):
    bench(_round_trip_typed, TWINS[twin], HOST, iterations=200, rounds=40, per=10)


@pytest.mark.benchmark(group="round_trip_16KiB")
def test_round_trip_to_device_public(bench):
    bench(_round_trip_to_device, HOST, iterations=200, rounds=40, per=10)


@pytest.fixture(scope="module")
def arrays():
    return {t: (m.as_array(m.alloc(HOST.nbytes), HOST.dtype, HOST.shape),
                m.as_array(m.alloc(4096), np.float32, (1024,))) for t, m in TWINS.items()}


def _slice_1d(a):
    return a[2:6]


def _slice_2d(a):
    return a[:, ::2]


def _index_int(a):
    return a[3]


def _transpose(a):
    return a.T


@pytest.mark.benchmark(group="view")
def test_noop_python_call_view(bench):
    bench(_noop, None)


@pytest.mark.benchmark(group="view")
@pytest.mark.parametrize("twin", ["native", "python"])
@pytest.mark.parametrize("op", [_slice_1d, _slice_2d, _index_int, _transpose], ids=lambda f: f.__name__[1:])
def test_view(bench, arrays, twin, op):
    two_d, one_d = arrays[twin]
    bench(op, one_d if op is _slice_1d else two_d)
