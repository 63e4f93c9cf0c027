"""accel: a torch-free runtime for CUDA devices, streams and events, and LTC-exact lazy IR graphs.

``accel.backend`` is "native" (Cython) or "python" (ctypes / pure Python); ``accel.backend_reason``
says why.  Subpackages: ``accel.cuda``, ``accel.lazy``, ``accel.device_interface``, ``accel.mtia``,
``accel.accelerator``.
"""
import importlib

from accel._impl import backend, reason as backend_reason  # first: it explains an unbuilt source tree
from accel._build_config import VERSION as __version__
from accel.errors import CudaError

__all__ = ["backend", "backend_reason", "CudaError", "cuda", "lazy", "device_interface", "mtia",
           "accelerator", "__version__"]

_SUBMODULES = ("cuda", "lazy", "device_interface", "mtia", "accelerator", "emu")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"accel.{name}")
    raise AttributeError(f"module 'accel' has no attribute {name!r}")
