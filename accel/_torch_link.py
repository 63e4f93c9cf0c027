"""accel in the same process as torch: one pending target device for both (shared by both twins).

c10 (torch's CUDA core) and accel keep a per-thread *target* device: a guard's exit to a device that has
no primary context yet records it instead of calling cudaSetDevice (reference/torch_device_stream.md
§2.8-2.10).  Two private targets on one CUDA runtime disagree: after ``with accel.cuda.device(1)`` exits,
accel says device 0 while torch allocates on cuda:1 (the runtime's device), and the other way round.

So once torch's CUDA libraries are in the process (libc10_cuda.so, with libtorch_cuda.so's primary-context
probe registered) and call the same ``cudaGetDevice`` as accel, each twin's device module is linked to the
target c10 keeps, through c10's exported device functions: ``GetDevice`` (the target, else the runtime's
device), ``SetDevice(d, force)`` (clears it) and ``MaybeSetDevice(d)`` (records it when ``d`` has no
primary context).  Each returns a cudaError_t; accel calls them only where they cannot throw (an index in
range, a device already probed).  The target is then torch's own: read, recorded and cleared by both.

torch may be imported after accel: an import hook (first on ``sys.meta_path``, finding nothing) waits for
torch's first submodule import after ``torch._C`` is loaded, links, and goes inert.
"""
import ctypes
import os
import sys
import threading
import warnings

__all__ = ["register", "linked"]

# c10::cuda's functions (c10/cuda/CUDAFunctions.h; DeviceIndex is int8_t, mangled "a").
SYMBOLS = ("_ZN3c104cuda9GetDeviceEPa",          # cudaError_t GetDevice(DeviceIndex*)
           "_ZN3c104cuda9SetDeviceEab",          # cudaError_t SetDevice(DeviceIndex, bool force) (torch >= 2.8)
           "_ZN3c104cuda14MaybeSetDeviceEa")     # cudaError_t MaybeSetDevice(DeviceIndex)

_lock = threading.RLock()
_linkers = []       # each twin's _link_torch(get, set, maybe_set), registered at its import
_state = None       # None: torch not loaded yet; a tuple of the three addresses once linked; False: not shared
# torch.device once linked: the ``.device`` of accel's objects (accel._stream_common.cuda_device).  torch reads a
# device object it does not know (``_get_device_index``) as its *current* device: torch.cuda.stream(accel stream
# of another device) restored the wrong device's stream, torch.cuda.current_stream(buf.device) named device 0.
torch_device = None
_why = ""           # why not, when _state is False


def linked():
    """``(True, "")`` once accel shares torch's target device, else ``(False, why)``."""
    with _lock:
        if _state is None:
            _try_link()
        return bool(_state), _why


def register(linker):
    """``linker(get, set, maybe_set)`` (the three c10 function addresses) is called once torch's CUDA
    libraries are found in this process: now if they already are, else when torch is imported."""
    with _lock:
        _linkers.append(linker)
        if _state:
            _call(linker, _state)
        elif _state is None and not _try_link() and _watch not in sys.meta_path:
            sys.meta_path.insert(0, _watch)


def _try_link():
    """Link every registered twin if torch is loaded; False while it is not (keep waiting)."""
    global _state, _why
    if _state is not None:
        return True
    if "torch._C" not in sys.modules:
        return False
    global torch_device
    addrs, _why = _find()
    _state = addrs or False
    if addrs:
        torch_device = getattr(sys.modules["torch._C"], "device", None)
        for linker in _linkers:
            _call(linker, addrs)
    elif _why.startswith("!"):
        _why = _why[1:]
        warnings.warn(f"accel and torch keep separate pending target devices: {_why}", RuntimeWarning,
                      stacklevel=2)
    return True


def _call(linker, addrs):
    # never an exception into torch's import (the hook runs inside it)
    try:
        linker(*addrs)
    except Exception as exc:  # noqa: BLE001
        warnings.warn(f"accel could not share torch's pending target device ({type(exc).__name__}: {exc})",
                      RuntimeWarning, stacklevel=3)


def _find():
    """(the three addresses, "") or (None, why not); a why that starts with "!" deserves a warning."""
    flags = os.RTLD_NOW | getattr(os, "RTLD_NOLOAD", 4)
    try:
        c10 = ctypes.CDLL("libc10_cuda.so", mode=flags)
        ctypes.CDLL("libtorch_cuda.so", mode=flags)   # registers c10's primary-context probe
    except OSError:
        return None, "torch's CUDA libraries are not loaded (a CPU build)"
    try:
        addrs = tuple(ctypes.cast(getattr(c10, name), ctypes.c_void_p).value for name in SYMBOLS)
    except AttributeError as exc:
        return None, f"!this torch's libc10_cuda.so lacks a device function accel needs ({exc})"
    from accel import _lib
    from accel.errors import LibraryNotFoundError
    try:
        rt = _lib.cudart()
    except LibraryNotFoundError:
        return None, "accel has no CUDA runtime"
    ours = ctypes.cast(rt.cdll.cudaGetDevice, ctypes.c_void_p).value
    if ctypes.cast(c10.cudaGetDevice, ctypes.c_void_p).value != ours:
        return None, f"torch and accel use different CUDA runtimes (accel's is {rt.path})"
    return addrs, ""


class _Watch:
    """A meta-path finder that finds nothing: it links accel to torch at the first ``torch.*`` import after
    ``torch._C`` (torch's CUDA libraries) is loaded, then does nothing more (it stays in the list: removing
    an entry while the import system walks it would skip the next finder)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if _state is None and name.startswith("torch.") and "torch._C" in sys.modules:
            with _lock:
                _try_link()
        return None


_watch = _Watch()
