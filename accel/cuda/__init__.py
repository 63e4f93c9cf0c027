"""torch.cuda-shaped public API over the selected implementation (see accel._impl)."""
from accel import _impl
from accel.errors import CudaDriverError, CudaError, DeferredCudaCallError, LibraryNotFoundError

__all__ = ["cudart", "CudaError", "CudaDriverError", "DeferredCudaCallError", "LibraryNotFoundError"]


def cudart():
    """The active twin's raw binding module (``accel._native._cudart`` or ``accel._python._cudart``),
    with the CUDA runtime loaded.  Raises LibraryNotFoundError listing where it looked."""
    mod = _impl.cudart
    mod.load()
    return mod
