"""Raw binding calls on the emulator, both twins, against a Python no-op call and a bare ctypes call."""
import ctypes

import pytest

from accel import _lib
from accel._native import _cudart as native
from accel._python import _cudart as python

TWINS = {"native": native, "python": python}


@pytest.fixture(scope="module", autouse=True)
def loaded():
    native.load()
    python.load()


def _noop():
    pass


@pytest.mark.benchmark(group="cudaGetDevice")
def test_noop_python_call(bench):
    bench(_noop)


@pytest.mark.benchmark(group="cudaGetDevice")
def test_floor_bare_ctypes_call(bench):
    fn = _lib.cudart().cdll.cudaGetDevice
    fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    ref = ctypes.byref(ctypes.c_int())
    bench(fn, ref)


@pytest.mark.benchmark(group="cudaGetDevice")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_cudaGetDevice(bench, twin):
    assert bench(TWINS[twin].cudaGetDevice) == 0


@pytest.mark.benchmark(group="cudaSetDevice")
def test_floor_bare_ctypes_set(bench):
    fn = _lib.cudart().cdll.cudaSetDevice
    fn.argtypes = [ctypes.c_int]
    bench(fn, 0)


@pytest.mark.benchmark(group="cudaSetDevice")
def test_noop_python_call_1arg(bench):
    bench(lambda d: None, 0)


@pytest.mark.benchmark(group="cudaSetDevice")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_cudaSetDevice(bench, twin):
    bench(TWINS[twin].cudaSetDevice, 0)


@pytest.mark.benchmark(group="cudaStreamQuery")
def test_floor_bare_ctypes_query(bench):
    fn = _lib.cudart().cdll.cudaStreamQuery
    fn.argtypes = [ctypes.c_size_t]
    bench(fn, 0)


@pytest.mark.benchmark(group="cudaStreamQuery")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_cudaStreamQuery(bench, twin):
    assert bench(TWINS[twin].cudaStreamQuery, 0) is True


@pytest.mark.benchmark(group="cudaStreamQuery")
def test_noop_python_call_query(bench):
    bench(lambda s: None, 0)
