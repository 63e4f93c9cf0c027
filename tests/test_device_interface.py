"""accel.device_interface: registry, DeviceGuard, the cuda and cpu interfaces (emulated runtime)."""
import time

import pytest

import accel.cuda
from accel import device_interface as di


@pytest.fixture(autouse=True)
def on_device_0(device_count):
    if not device_count:   # the tests that need one say so (the cpu interface's do not)
        yield
        return
    accel.cuda.set_device(0)
    yield
    accel.cuda.set_stream(accel.cuda.default_stream(0))
    accel.cuda.set_device(0)


@pytest.mark.devices(4)
def test_builtin_registrations():
    names = dict(di.get_registered_device_interfaces())
    assert names["cuda"] is di.CudaInterface and names["cpu"] is di.CpuInterface
    assert [k for k in names if k.startswith("cuda:")] == [f"cuda:{i}" for i in range(accel.cuda.device_count())]
    assert di.get_interface_for_device("cuda:3") is di.CudaInterface
    assert di.get_interface_for_device(accel.cuda.Stream(device=2).device) is di.CudaInterface  # str() "cuda:2"


@pytest.mark.parametrize("device", ["xpu", "cuda:99", "mps:0"])
def test_unknown_device(device):
    with pytest.raises(NotImplementedError, match=f"^No interface for device {device}$"):
        di.get_interface_for_device(device)


def test_register_custom_interface():
    class Fake(di.DeviceInterface):
        device_count = staticmethod(lambda: 7)

    di.register_interface_for_device("fake", Fake)
    try:
        assert di.get_interface_for_device("fake").device_count() == 7
        with pytest.raises(NotImplementedError, match="current_device"):
            Fake.current_device()
        with pytest.raises(NotImplementedError):
            Fake.Stream()
    finally:
        di.device_interfaces.pop("fake")
    with pytest.raises(TypeError, match="must be a class"):  # any class is accepted, like torch
        di.register_interface_for_device("bad", object())


@pytest.mark.devices(3)
def test_cuda_interface_maps_to_accel_cuda(device_count):
    ci = di.get_interface_for_device("cuda")
    assert ci.Stream is accel.cuda.Stream and ci.Event is accel.cuda.Event and ci.device is accel.cuda.device
    assert ci.is_available() is True and ci.device_count() == device_count
    s = ci.Stream(device=1)
    ci.set_stream(s)
    assert ci.current_device() == 1 and ci.current_stream() is s and ci.get_raw_stream(1) == s.cuda_stream
    with ci.stream(ci.Stream(device=2)):
        assert ci.current_device() == 2
    assert ci.current_device() == 1
    ci.synchronize()
    major, minor = accel.cuda.get_device_capability(0)
    assert ci.get_compute_capability(0) == major * 10 + minor
    assert ci.get_device_properties(0).name == accel.cuda.get_device_properties(0).name


@pytest.mark.devices(3)
def test_device_guard_exchanges_and_restores():
    ci = di.CudaInterface
    with di.DeviceGuard(ci, 2) as g:
        assert ci.current_device() == 2 and g.prev_idx == 0
    assert ci.current_device() == 0
    with di.DeviceGuard(ci, None):
        assert ci.current_device() == 0


@pytest.mark.devices(4)
def test_worker_caches():
    w = di.CudaInterface.Worker
    try:
        w.set_device(3)
        assert w.current_device() == 3 and accel.cuda.current_device() == 0
        props = w.get_device_properties()
        assert props.name == accel.cuda.get_device_properties(3).name
        assert w.get_device_properties("cuda:1") is w.get_device_properties(1)
    finally:
        di.CudaInterface.Worker._current_device = None


def test_cpu_interface_is_synchronous():
    cpu = di.get_interface_for_device("cpu")
    assert (cpu.device_count(), cpu.current_device(), cpu.is_available(), cpu.get_raw_stream()) == (1, 0, True, 0)
    s = cpu.current_stream()
    assert s.query() is True and cpu.Stream() is s
    start, end = cpu.Event(), cpu.Event()
    start.record()
    time.sleep(0.01)
    end.record(s)
    assert end.query() is True and start.elapsed_time(end) >= 9
    with cpu.device(0), cpu.stream(s):
        cpu.synchronize()
    with di.DeviceGuard(cpu, 0):
        pass
    assert s.record_event().query() is True
