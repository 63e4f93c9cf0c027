"""Lazy initialisation, fork poisoning and the device count (torch.cuda semantics, reference §2.1-2.3, §5).

``_lazy_init()`` runs once, under a lock, before the first CUDA use (it is the twin's init hook): it
refuses a forked child of a process that used CUDA, checks that a device exists, then runs the calls
queued with ``_lazy_call``.  The machinery is accel/_device_init.py's (shared with accel.mtia); this
module adds CUDA's start (the device count with torch's error texts).  ``device_count()`` /
``is_available()`` never raise.
"""
import os
import warnings

from accel import _device_init, _impl, emu
from accel.cuda import _visible
from accel.errors import DeferredCudaCallError, LibraryNotFoundError

_device = _impl.module("_device")

_DRIVER_URL = "http://www.nvidia.com/Download/index.aspx"

_raw_count = None   # cudart's count, cached once it was obtained (a failure is retried, unlike torch)
_count_warned = False  # the "CUDA initialization: ..." warning was given (once per process)
_cached_device_count = None  # device_count(), cached only once CUDA is initialised and the count obtained


def _start():
    # torch's _cuda_init: register the fork handler, device_count_ensure_non_zero (not cached).
    _register_fork_handler()
    n = _count_or_raise(True)
    if n == 0:
        raise RuntimeError("No CUDA GPUs are available")
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")


# The shared lazy-init / queued-call / fork machinery (accel/_device_init.py), for CUDA.
_state = _device_init.DeviceInit("CUDA", lambda: _start(), DeferredCudaCallError, _device.set_initialized)
FORK_MESSAGE = _state.fork_message
_register_fork_handler = _state.register_fork_handler
is_initialized = _state.is_initialized
_lazy_call = _state.lazy_call
_lazy_init = _state.lazy_init


def _is_in_bad_fork():
    """True in a forked child of a process that had used CUDA."""
    return _state.in_bad_fork


def _count_or_raise(fail_if_no_driver):
    """cudaGetDeviceCount with torch's device_count_impl error mapping (RuntimeError texts of §2.1)."""
    rt = _impl.cudart
    rt.load()  # LibraryNotFoundError lists where it looked
    try:
        return rt.cudaGetDeviceCount()
    except Exception as exc:  # a CudaError; the binding already cleared the sticky error
        code = getattr(exc, "code", None)
        if code is None:
            raise
    if code == 100:  # cudaErrorNoDevice
        return 0
    if code == 35:  # cudaErrorInsufficientDriver
        try:
            version = rt.cudaDriverGetVersion()
        except Exception:
            version = -1
        if version <= 0:
            if not fail_if_no_driver:
                return 0
            raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
                               f"and installed a driver from {_DRIVER_URL}")
        raise RuntimeError(f"The NVIDIA driver on your system is too old (found version {version}). Please update "
                           f"your GPU driver by downloading and installing a new version from the URL: {_DRIVER_URL} "
                           "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been "
                           "compiled with your version of the CUDA driver.")
    if code == 3:  # cudaErrorInitializationError; on the emulator, maybe a malformed ACCEL_EMU_* (named)
        why = emu.config_error()
        raise RuntimeError("CUDA driver initialization failed, you might not have a CUDA gpu." + (" " + why if why else ""))
    if code == 999:  # cudaErrorUnknown
        raise RuntimeError("CUDA unknown error - this may be due to an incorrectly set up environment, e.g. "
                           "changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available "
                           "devices to be zero.")
    raise RuntimeError("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
                       f"NumCudaDevices() that might have already set an error? Error {code}: "
                       f"{rt.cudaGetErrorString(code)}")


def _cuda_get_device_count():
    """cudart's device count, cached once obtained (0 included: no runtime library, driver or device).
    A failed cudaGetDeviceCount gives 0 with a "CUDA initialization: ..." warning (the first time only)
    and is not cached: the next call asks again.  torch caches the failed 0 for the process's life."""
    global _raw_count, _count_warned
    if _raw_count is None:
        _register_fork_handler()
        try:
            n = _count_or_raise(False)
        except LibraryNotFoundError:
            n = 0
        except RuntimeError as exc:
            if not _count_warned:
                _count_warned = True
                warnings.warn(f"CUDA initialization: {exc}", stacklevel=3)
            return 0
        _raw_count = n
    return _raw_count


def _nvml_based_avail():
    return os.getenv("ACCEL_NVML_BASED_CUDA_CHECK") == "1" or os.getenv("PYTORCH_NVML_BASED_CUDA_CHECK") == "1"


def device_count():
    """Number of visible CUDA devices; 0 (never an exception) when there is no runtime, driver or device.
    With ACCEL_NVML_BASED_CUDA_CHECK=1 it asks NVML first (no CUDA init, fork-safe).  Cached once initialised."""
    global _cached_device_count
    if _cached_device_count is not None:
        return _cached_device_count
    nvml_count = _visible._device_count_nvml() if _nvml_based_avail() else -1
    n = _cuda_get_device_count() if nvml_count < 0 else nvml_count
    if _state.initialized and (nvml_count >= 0 or _raw_count is not None):  # never a failed count
        _cached_device_count = n
    return n


def is_available():
    """Whether a CUDA device is usable; never raises (False without a runtime, driver or device)."""
    if _nvml_based_avail():
        return device_count() > 0
    return _cuda_get_device_count() > 0


def _init_hook():
    # The twin's hook: False tells it that initialisation is still under way (re-entrant call).
    _lazy_init()
    return is_initialized()


def init():
    """Initialise CUDA now (normally lazy); the same errors as the first CUDA use."""
    _lazy_init()


_device.set_init_hook(_init_hook)
