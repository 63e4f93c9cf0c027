"""Issue 8 item 6 (and 1, 7): the device-interface registry in the seed's shape."""
import os

import pytest

import accel.cuda
from accel import device_interface as di

NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)


def test_meta_checks_event_and_stream_classes():
    class Good(di.DeviceInterface):
        Event = accel.cuda.Event
        Stream = accel.cuda.Stream
    assert isinstance(Good, di.DeviceInterfaceMeta)
    with pytest.raises(AssertionError, match="member Event of Bad should be a class") as info:
        class Bad(di.DeviceInterface):
            Event = lambda: None  # noqa: E731
    assert isinstance(info.value, TypeError)
    with pytest.raises(AssertionError, match=r"member Stream of Bad2 .*missing: wait_event"):
        class Bad2(di.DeviceInterface):
            class Stream:
                def query(self): ...
                def synchronize(self): ...
                def wait_stream(self, s): ...
                def record_event(self, e=None): ...
    assert di.CpuInterface.Stream() is di.CpuInterface.current_stream()


@pytest.mark.devices(4)
def test_init_device_reg_public_and_registration():
    di.init_device_reg()
    assert di.get_interface_for_device("cuda:3") is di.CudaInterface

    class Dev:
        type, index = "cuda", 2

    class Duck:  # the seed accepts any interface class
        pass
    try:
        di.register_interface_for_device(Dev(), Duck)
        assert di.get_interface_for_device("cuda:2") is Duck
        assert di.get_interface_for_device(Dev()) is Duck
    finally:
        di.register_interface_for_device("cuda:2", di.CudaInterface)
    with pytest.raises(TypeError, match="must be a class"):
        di.register_interface_for_device("cuda:2", Duck())


@pytest.mark.devices(2)
def test_get_cuda_stream():
    s = accel.cuda.Stream(device=1)
    before = accel.cuda.current_stream(1)
    with accel.cuda.stream(s):
        assert di.get_cuda_stream(1) == s.cuda_stream != 0
    assert di.get_cuda_stream(1) == before.cuda_stream


@pytest.mark.devices(3)
def test_worker_properties_use_worker_current_device():
    class Dev:
        type, index = "cuda", None
    W = di.CudaInterface.Worker
    W.set_device(2)
    try:
        p2 = accel.cuda.get_device_properties(2)
        assert W.get_device_properties(None) == p2
        assert W.get_device_properties("cuda") == p2
        assert W.get_device_properties(Dev()) == p2
        assert W.get_device_properties("cuda:1") == accel.cuda.get_device_properties(1)
        with pytest.raises(AssertionError, match=f"Invalid device id {NDEV + 3}"):
            W.get_device_properties(NDEV + 3)
    finally:
        W._current_device = None
