"""NVML monitoring through nvidia-ml-py (``pip install accel[nvml]``): utilization, memory_usage,
temperature, power_draw, clock_rate.  Device arguments are CUDA indices, mapped to NVML indices through
CUDA_VISIBLE_DEVICES.  Without nvidia-ml-py every function raises ModuleNotFoundError saying so.  On the
emulated runtime they read the emulator's NVML (accel/_emu/emu_nvml.c).
"""
import importlib

from accel import _lib
from accel.cuda import _visible
from accel.cuda._utils import _get_device_index

_NVML_CLOCK_SM = 1
_NVML_TEMPERATURE_GPU = 0


def _pynvml():
    try:
        return importlib.import_module("pynvml")
    except ImportError as exc:
        raise ModuleNotFoundError(
            "NVML monitoring needs nvidia-ml-py, which is not installed or cannot be imported "
            f"({exc}): pip install nvidia-ml-py (or accel[nvml])") from exc


def _get_nvml_device_index(device):
    """The NVML index of CUDA ``device`` (default: current) under CUDA_VISIBLE_DEVICES; RuntimeError when
    it is not visible."""
    idx = _get_device_index(device, optional=True)
    visible = _visible._parse_visible_devices()
    if visible and isinstance(visible[0], str):
        uuids = _visible._raw_device_uuid_nvml()
        if uuids is None:
            raise RuntimeError("Can't get device UUIDs")
        visible = _visible._transform_uuid_to_ordinals(visible, uuids)
    if idx is None or not 0 <= idx < len(visible):
        raise RuntimeError(f"device {idx} is not visible (CUDA_VISIBLE_DEVICES={visible})")
    return visible[idx]


def _bind_emulated_nvml(nvml):
    """On the emulated runtime, point nvidia-ml-py at the emulator's NVML (the same devices and
    allocations) before it loads a libnvidia-ml.so.1 of its own: nvidia-ml-py opens its library once,
    into its module global ``nvmlLib``."""
    if getattr(nvml, "nvmlLib", False) is not None:    # not nvidia-ml-py, or it already has its library
        return
    rt = _lib.cudart._result
    if rt is not None and rt.emulated:
        nvml.nvmlLib = _lib.nvml().cdll


def _handle(device):
    nvml = _pynvml()
    _bind_emulated_nvml(nvml)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError_DriverNotLoaded as exc:
        raise RuntimeError("cuda driver can't be loaded, is cuda enabled?") from exc
    return nvml, nvml.nvmlDeviceGetHandleByIndex(_get_nvml_device_index(device))


def utilization(device=None):
    """Percent of the last sample period during which a kernel ran on ``device`` (NVML)."""
    nvml, h = _handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(h).gpu


def memory_usage(device=None):
    """Percent of the last sample period during which ``device``'s memory was read or written (NVML)."""
    nvml, h = _handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(h).memory


def temperature(device=None):
    """GPU die temperature of ``device`` in degrees Celsius (NVML)."""
    nvml, h = _handle(device)
    return nvml.nvmlDeviceGetTemperature(h, _NVML_TEMPERATURE_GPU)


def power_draw(device=None):
    """Power draw of ``device`` in milliwatts (NVML)."""
    nvml, h = _handle(device)
    return nvml.nvmlDeviceGetPowerUsage(h)


def clock_rate(device=None):
    """SM clock of ``device`` in MHz (NVML)."""
    nvml, h = _handle(device)
    return nvml.nvmlDeviceGetClockInfo(h, _NVML_CLOCK_SM)
