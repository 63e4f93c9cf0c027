"""A user's typed code over accel.accelerator, accel.device_interface and accel.mtia, checked with mypy --strict
by tests/test_types.py (never run)."""
import accel.accelerator as acc
import accel.cuda
import accel.mtia as mtia
from accel.device_interface import CudaInterface, DeviceGuard, get_interface_for_device


def where() -> tuple[str, int, int]:
    kind = acc.current_accelerator()
    name = "none" if kind is None else kind.type
    with acc.device_index(0):
        n: int = acc.device_count() + acc.current_device_index()
    acc.synchronize()
    iface = get_interface_for_device("cuda")
    with DeviceGuard(iface, 0):
        n += iface.device_count() + iface.current_device()
    s: accel.cuda.Stream = CudaInterface.current_stream()
    cc: int = CudaInterface.get_compute_capability(0)
    if mtia.is_available():
        with mtia.device(0), mtia.stream(mtia.Stream()):
            e = mtia.current_stream().record_event(mtia.Event(enable_timing=True))
            e.synchronize()
            assert e.query() and mtia.get_device_capability() >= (1, 0)
    return name, n + s.device_index, cc
