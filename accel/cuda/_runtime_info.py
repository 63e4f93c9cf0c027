"""What the loaded runtime and devices support: torch.cuda's is_bf16_supported, is_tf32_supported,
get_arch_list, get_gencode_flags, ipc_collect, is_current_stream_capturing and cudaStatus, with accel's
meaning (accel compiles no kernels)."""
from accel import _impl
from accel.cuda._init import _lazy_init, device_count, is_available
from accel.cuda._properties import get_device_capability
from accel.errors import LibraryNotFoundError

__all__ = ["is_bf16_supported", "is_tf32_supported", "get_arch_list", "get_gencode_flags", "ipc_collect",
           "is_current_stream_capturing", "cudaStatus", "_is_compiled"]

_CAPTURE_NONE = 0  # cudaStreamCaptureStatusNone


class cudaStatus:
    """torch.cuda.cudaStatus.  ERROR_NOT_READY is cudaErrorNotReady, 600 (torch's 34 is stale: the value
    of CUDA < 10)."""
    SUCCESS = 0
    ERROR_NOT_READY = 600


def _is_compiled():
    """torch: whether torch was built with CUDA.  accel binds the runtime when it runs, so: whether a CUDA
    runtime library can be loaded (no device needed, no initialisation)."""
    try:
        _impl.cudart.load()
    except LibraryNotFoundError:
        return False
    return True


def is_bf16_supported(including_emulation=True):
    """Whether bfloat16 is usable on the current device: natively from compute capability 8.0; with
    ``including_emulation`` (default, like torch) on any CUDA device (bf16 data computed in fp32).
    False when no device is available."""
    if not is_available():
        return False
    major, _ = get_device_capability(None)
    if major >= 8:
        return True
    return bool(including_emulation)


def is_tf32_supported():
    """Whether TF32 tensor-core math exists on the current device: compute capability 8.0 and up (torch:
    native bfloat16 support); False when no device is available."""
    return is_bf16_supported(including_emulation=False)


def is_current_stream_capturing():
    """Whether a CUDA graph capture is under way on the current stream of the current device
    (cudaStreamIsCapturing: active or invalidated, as torch: anything but "not capturing"); initialises CUDA."""
    _lazy_init()
    from accel.cuda._stream_api import current_raw_stream
    return _impl.cudart.cudaStreamIsCapturing(current_raw_stream()) != _CAPTURE_NONE


def get_arch_list():
    """The architectures the loaded runtime and driver run code for here: ``"sm_XY"`` of each visible
    device, sorted, without duplicates ([] when none is available).  torch lists the architectures its
    kernels were compiled for; accel compiles no kernels, so it lists what the devices support."""
    if not is_available():
        return []
    _lazy_init()
    archs = {"sm_%d%d" % get_device_capability(d) for d in range(device_count())}
    return sorted(archs, key=lambda a: int(a[3:]))


def get_gencode_flags():
    """nvcc ``-gencode`` flags for get_arch_list() (torch's format); "" when the list is empty."""
    return " ".join(f"-gencode compute=compute_{arch[3:]},code=sm_{arch[3:]}" for arch in get_arch_list())


def ipc_collect():
    """torch frees the CUDA memory of tensors received from other processes once unused.  accel hands
    out no IPC memory (only IPC event handles, owned by their Event), so after lazy initialisation (the
    same errors as the first CUDA use) there is nothing to collect."""
    _lazy_init()
