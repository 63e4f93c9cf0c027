"""Lazy initialisation, fork poisoning and the device count (torch.cuda semantics, reference §2.1-2.3, §5).

``_lazy_init()`` runs once, under a lock, before the first CUDA use (it is the twin's init hook): it
refuses a forked child of a process that used CUDA, checks that a device exists, then runs the calls
queued with ``_lazy_call``.  ``device_count()`` / ``is_available()`` never raise.
"""
import os
import threading
import traceback
import warnings

from accel import _impl
from accel.cuda import _visible
from accel.errors import DeferredCudaCallError, LibraryNotFoundError

_device = _impl.module("_device")

FORK_MESSAGE = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must "
                "use the 'spawn' start method")
_DRIVER_URL = "http://www.nvidia.com/Download/index.aspx"

_initialized = False
_in_bad_fork = False
_fork_handler_registered = False
_initialization_lock = threading.RLock()  # re-entrant: a queued call may queue another
_tls = threading.local()
_queued_calls = []  # (callable, formatted call-site traceback)
_raw_count = None   # cudart's count, cached once it was obtained (a failure is retried, unlike torch)
_count_warned = False  # the "CUDA initialization: ..." warning was given (once per process)
_cached_device_count = None  # device_count(), cached only once CUDA is initialised and the count obtained


def _after_fork_in_child():
    global _in_bad_fork, _initialized
    _in_bad_fork = True
    _initialized = False
    _device.set_initialized(False)


def _register_fork_handler():
    # Registered at the first cudart call, not at import: a process that never touched CUDA stays
    # fork-safe (torch registers in _cuda_getDeviceCount / _cuda_init).
    global _fork_handler_registered
    if not _fork_handler_registered:
        _fork_handler_registered = True
        os.register_at_fork(after_in_child=_after_fork_in_child)


def _is_in_bad_fork():
    """True in a forked child of a process that had used CUDA."""
    return _in_bad_fork


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
    if code == 3:  # cudaErrorInitializationError
        raise RuntimeError("CUDA driver initialization failed, you might not have a CUDA gpu.")
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
    if _initialized and (nvml_count >= 0 or _raw_count is not None):  # never a failed count
        _cached_device_count = n
    return n


def is_available():
    """Whether a CUDA device is usable; never raises (False without a runtime, driver or device)."""
    if _nvml_based_avail():
        return device_count() > 0
    return _cuda_get_device_count() > 0


def is_initialized():
    """Whether CUDA has been initialised in this process (False in a forked child)."""
    return _initialized and not _in_bad_fork


def _lazy_call(callable, seed=False, seed_all=False):
    """Run ``callable()`` now if CUDA is initialised, else at initialisation (its call site is kept for
    DeferredCudaCallError).  ``seed`` / ``seed_all`` are torch's keywords for its RNG-seeding calls; accel
    has no RNG, so such calls are queued and run in order like any other (torch keeps only the latest
    seed / seed_all call and runs it after the others)."""
    with _initialization_lock:
        if is_initialized():
            callable()
        else:
            _queued_calls.append((callable, traceback.format_stack()))


def _lazy_init():
    """Initialise CUDA once (thread-safe, re-entrant from queued calls): RuntimeError in a forked child,
    without a driver or device; DeferredCudaCallError if a queued call fails."""
    global _initialized, _queued_calls
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        if _in_bad_fork:
            raise RuntimeError(FORK_MESSAGE)
        _register_fork_handler()
        n = _count_or_raise(True)  # torch's device_count_ensure_non_zero: not cached
        if n == 0:
            raise RuntimeError("No CUDA GPUs are available")
        os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
        _tls.is_initializing = True
        try:
            for queued_call, orig_traceback in _queued_calls:
                try:
                    queued_call()
                except Exception as e:
                    msg = (f"CUDA call failed lazily at initialization with error: {e}\n\n"
                           f"CUDA call was originally invoked at:\n\n{''.join(orig_traceback)}")
                    raise DeferredCudaCallError(msg) from e
            _queued_calls = []
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True
        _device.set_initialized(True)


def _init_hook():
    # The twin's hook: False tells it that initialisation is still under way (re-entrant call).
    _lazy_init()
    return is_initialized()


def init():
    """Initialise CUDA now (normally lazy); the same errors as the first CUDA use."""
    _lazy_init()


_device.set_init_hook(_init_hook)
