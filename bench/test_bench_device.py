"""Device selection on the emulator, both twins, against a Python no-op call and the raw binding calls
of the same twin: current_device(), ``with device(i)`` on the current device, switching between two."""
import ctypes

import pytest

from accel import _lib
from accel._native import _cudart as native_rt
from accel._native import _device as native_dev
from accel._python import _cudart as python_rt
from accel._python import _device as python_dev

RT = {"native": native_rt, "python": python_rt}
DEV = {"native": native_dev, "python": python_dev}
TWINS = ["native", "python"]


@pytest.fixture(scope="module", autouse=True)
def contexts():
    # contexts on 0 and 1 so a guard's exit really switches back (the steady state of a real program)
    for twin in TWINS:
        if RT[twin].cudaGetDeviceCount() > 1:
            DEV[twin].set_device(1)
        DEV[twin].set_device(0)
    yield


def _noop():
    pass


# -- current_device ----------------------------------------------------------------------------------------

@pytest.mark.benchmark(group="current_device")
def test_noop_python_call(bench):
    bench(_noop)


@pytest.mark.benchmark(group="current_device")
def test_floor_bare_ctypes_cudaGetDevice(bench):
    fn = _lib.cudart().cdll.cudaGetDevice
    fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
    bench(fn, ctypes.byref(ctypes.c_int()))


@pytest.mark.benchmark(group="current_device")
@pytest.mark.parametrize("twin", TWINS)
def test_floor_raw_cudaGetDevice(bench, twin):
    assert bench(RT[twin].cudaGetDevice) == 0


@pytest.mark.benchmark(group="current_device")
@pytest.mark.parametrize("twin", TWINS)
def test_current_device(bench, twin):
    assert bench(DEV[twin].current_device) == 0


# -- with device(i), i current ---------------------------------------------------------------------------

# Guards are timed in an inline loop of LOOP (as user code runs them), so no wrapper call is counted;
# the floors run the same loop around the raw calls.
LOOP = 100


def _guard_same(D):
    for _ in range(LOOP):
        with D(0):
            pass


def _raw_get_twice(get):
    for _ in range(LOOP):
        get()
        get()


@pytest.mark.benchmark(group="with device(current)")
def test_noop_python_call_1arg(bench):
    bench(lambda x: None, 0)


@pytest.mark.benchmark(group="with device(current)")
@pytest.mark.parametrize("twin", TWINS)
def test_floor_raw_cudaGetDevice_x2(bench, twin):
    bench(_raw_get_twice, RT[twin].cudaGetDevice, per=LOOP)


def _guard_noop(D):
    for _ in range(LOOP):
        with D(-1):
            pass


@pytest.mark.benchmark(group="with device(current)")
@pytest.mark.parametrize("twin", TWINS)
def test_floor_with_device_noop(bench, twin):
    # the guard with no CUDA call (device -1): the ``with`` statement, the guard's construction and calls
    bench(_guard_noop, DEV[twin].device, per=LOOP)


@pytest.mark.benchmark(group="with device(current)")
@pytest.mark.parametrize("twin", TWINS)
def test_with_device_same(bench, twin):
    bench(_guard_same, DEV[twin].device, per=LOOP)
    assert DEV[twin].current_device() == 0


# -- with device(1) from device 0 (both have contexts) ------------------------------------------------------

def _guard_switch(D):
    for _ in range(LOOP):
        with D(1):
            pass


def _raw_set_twice(set_):
    for _ in range(LOOP):
        set_(1)
        set_(0)


@pytest.mark.benchmark(group="with device(other)")
@pytest.mark.devices(2)
def test_noop_python_call_arg(bench):
    bench(lambda x: None, 0)


@pytest.mark.benchmark(group="with device(other)")
@pytest.mark.devices(2)
@pytest.mark.parametrize("twin", TWINS)
def test_floor_raw_cudaSetDevice_x2(bench, twin):
    bench(_raw_set_twice, RT[twin].cudaSetDevice, per=LOOP)


def _raw_guard_sequence(rt):
    # the calls a switching guard makes (torch's too): enter get+set, exit get+probe+set
    for _ in range(LOOP):
        rt.cudaGetDevice()
        rt.cudaSetDevice(1)
        rt.cudaGetDevice()
        rt.cuDevicePrimaryCtxGetState(0)
        rt.cudaSetDevice(0)


@pytest.mark.benchmark(group="with device(other)")
@pytest.mark.devices(2)
@pytest.mark.parametrize("twin", TWINS)
def test_floor_raw_guard_sequence(bench, twin):
    bench(_raw_guard_sequence, RT[twin], per=LOOP)


@pytest.mark.benchmark(group="with device(other)")
@pytest.mark.devices(2)
@pytest.mark.parametrize("twin", TWINS)
def test_floor_with_device_noop_other(bench, twin):
    bench(_guard_noop, DEV[twin].device, per=LOOP)


@pytest.mark.benchmark(group="with device(other)")
@pytest.mark.devices(2)
@pytest.mark.parametrize("twin", TWINS)
def test_with_device_switch(bench, twin):
    bench(_guard_switch, DEV[twin].device, per=LOOP)
    assert DEV[twin].current_device() == 0


# -- exchange_device / maybe_exchange_device (the DeviceGuard protocol) --------------------------------------

def _exchange_pair(dev):
    for _ in range(LOOP):
        dev.maybe_exchange_device(dev.exchange_device(1))


@pytest.mark.benchmark(group="exchange+maybe_exchange")
@pytest.mark.devices(2)
def test_noop_python_call_exchange(bench):
    bench(lambda x: None, 0)


@pytest.mark.benchmark(group="exchange+maybe_exchange")
@pytest.mark.devices(2)
@pytest.mark.parametrize("twin", TWINS)
def test_floor_raw_cudaSetDevice_pair(bench, twin):
    bench(_raw_set_twice, RT[twin].cudaSetDevice, per=LOOP)


@pytest.mark.benchmark(group="exchange+maybe_exchange")
@pytest.mark.devices(2)
@pytest.mark.parametrize("twin", TWINS)
def test_exchange_pair(bench, twin):
    bench(_exchange_pair, DEV[twin], per=LOOP)
    assert DEV[twin].current_device() == 0
