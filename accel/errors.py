"""Exception types shared by both implementations (native and python raise the very same classes)."""

__all__ = ["CudaError", "CudaDriverError", "LibraryNotFoundError", "DeferredCudaCallError", "OutOfMemoryError"]

_DOCS = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"


class CudaError(RuntimeError):
    """A CUDA runtime call failed.  ``code`` is the cudaError_t value, ``name`` its cudaGetErrorName.

    ``CudaError(code, name, string)`` (what accel raises) has torch's C++ composition:
    ``"CUDA error: " + string`` and a help line, like torch.AcceleratorError.  ``CudaError(code)`` is
    torch.cuda.CudaError's form: ``"<cudaGetErrorString(code)> (<code>)"``, the strings asked from the
    loaded runtime ("unknown error" / "cudaError <code>" without one).  A RuntimeError subclass.
    """

    def __init__(self, code, name=None, string=None):
        self.code = int(code)
        if name is None and string is None:
            self.name, self.string = _runtime_strings(self.code)
            self._short = True
            RuntimeError.__init__(self, f"{self.string} ({self.code})")
            return
        self._short = False
        self.name = name if name is not None else f"cudaError {self.code}"
        self.string = string if string is not None else "unknown error"
        if self.code == 101:
            help_ = "\nGPU device may be out of range, do you have enough GPUs?"
        elif self.code in _CAPTURE_HELP:
            help_ = _CAPTURE_HELP[self.code] + f"\nSearch for `{self.name}' in {_DOCS} for more information."
        else:
            help_ = f"\nSearch for `{self.name}' in {_DOCS} for more information."
        super().__init__(f"CUDA error: {self.string}{help_}")

    def __reduce__(self):
        if getattr(self, "_short", False):
            return (type(self), (self.code,))
        return (type(self), (self.code, self.name, self.string))


# The stream-capture errors (cudaErrorStreamCapture*, 900-908): what happened to the CUDA graph capture.
_CAPTURE_HELP = {
    900: "\nThis operation is not permitted while a CUDA graph is being captured (a synchronisation, a query, "
         "cudaMalloc/cudaFree, or a call on the capturing stream); the capture it conflicted with was "
         "invalidated: its capture_end() raises cudaErrorStreamCaptureInvalidated.",
    901: "\nThe CUDA graph capture was invalidated by an earlier operation that is not permitted during "
         "capture; nothing was captured (reset() the CUDAGraph, or make a new one, and capture again).",
    904: "\nA stream forked from the capture (it waited on an event recorded in the capturing stream) was "
         "never joined back into the capturing stream before capture_end().",
    905: "\nA capturing stream waited on work that is not part of the capture and has not completed.",
    907: "\nThe event was last recorded in a stream that is still capturing a CUDA graph.",
}


def _runtime_strings(code):
    """(cudaGetErrorName, cudaGetErrorString) of ``code`` from the loaded runtime; placeholders when no
    runtime can be loaded (an error message must never fail)."""
    try:
        from accel import _impl
        rt = _impl.cudart
        rt.load()
        return rt.cudaGetErrorName(code) or f"cudaError {code}", rt.cudaGetErrorString(code) or "unknown error"
    except Exception:  # noqa: BLE001 - no runtime library, or a code out of the C range
        return f"cudaError {code}", "unknown error"


class CudaDriverError(CudaError):
    """A CUDA driver API call (``cu*``, a CUresult) failed."""

    def __init__(self, code, name=None, string=None):
        self.code = int(code)
        self.name = name if name is not None else f"CUresult {self.code}"
        self.string = string if string is not None else "unknown error"
        RuntimeError.__init__(self, f"CUDA driver error: {self.string} ({self.name})")


class LibraryNotFoundError(RuntimeError):
    """A CUDA library (runtime, driver or NVML) could not be found or opened.

    ``searched`` lists every place that was tried, in order, with the reason it was rejected.
    """

    def __init__(self, what, searched):
        self.what = what
        self.searched = list(searched)
        lines = "\n".join(f"  - {s}" for s in self.searched) or "  (nowhere)"
        super().__init__(f"could not load the {what}; searched:\n{lines}")

    def __reduce__(self):
        return (type(self), (self.what, self.searched))


class DeferredCudaCallError(RuntimeError):
    """A call queued with ``_lazy_call`` failed during lazy initialisation."""


class OutOfMemoryError(CudaError):
    """A device allocation failed for lack of memory (torch.cuda.OutOfMemoryError's name and message shape).

    ``code`` is 2 (cudaErrorMemoryAllocation); the message is built by the allocator
    (accel.cuda._memory_api): "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total
    capacity of ... of which ... is free. ..."  A CudaError, hence a RuntimeError.
    """

    def __init__(self, message, code=2, name="cudaErrorMemoryAllocation", string="out of memory"):
        self.code = int(code)
        self.name = name
        self.string = string
        RuntimeError.__init__(self, message)

    def __reduce__(self):
        return (type(self), (str(self), self.code, self.name, self.string))
