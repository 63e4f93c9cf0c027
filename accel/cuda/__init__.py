"""torch.cuda-shaped public API over the selected implementation (see accel._impl).

The device half lives in accel/cuda/_device_api.py, the stream/event half in accel/cuda/_stream_api.py,
device memory in accel/cuda/_memory_api.py;
both are plain Python over the selected twins (``accel._impl.module("_device")``, ...).
"""
from accel import _impl
from accel.cuda._device_api import *  # noqa: F401,F403
from accel.cuda._device_api import __all__ as _device_all
from accel.cuda._stream_api import *  # noqa: F401,F403
from accel.cuda._stream_api import __all__ as _stream_all
from accel.cuda._runtime_info import *  # noqa: F401,F403
from accel.cuda._runtime_info import __all__ as _info_all
from accel.cuda._memory_api import *  # noqa: F401,F403
from accel.cuda._memory_api import __all__ as _memory_all
from accel.cuda._graphs_api import *  # noqa: F401,F403
from accel.cuda._graphs_api import __all__ as _graphs_all
from accel.errors import CudaDriverError, CudaError, DeferredCudaCallError, LibraryNotFoundError

__all__ = ["cudart", "CudaError", "CudaDriverError", "DeferredCudaCallError", "LibraryNotFoundError",
           *_device_all, *_stream_all, *_info_all, *_memory_all, *_graphs_all]


def cudart():
    """The active twin's raw binding module (``accel._native._cudart`` or ``accel._python._cudart``),
    after lazy initialisation (torch.cuda.cudart()'s shape; the same errors as the first CUDA use).
    Its functions raise CudaError rather than return codes; check_error() accepts their None."""
    _lazy_init()
    mod = _impl.cudart
    mod.load()
    return mod
