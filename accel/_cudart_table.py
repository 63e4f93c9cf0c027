"""Every CUDA runtime and driver function accel binds: one row a function.

This table is the single declaration of the binding layer.  At build time ``tools/gen_bindings.py``
generates both twins from it: the Cython module ``accel._native._cudart`` (with ``_cudart.pxd``, the
C-level table the other native modules cimport) and the ctypes module ``accel._python._cudart``.
Adding a CUDA function to both twins is adding one row here.

A row: ``fn(name, params, doc, ...)``.
- ``params``: the C parameters, comma-separated, each ``[out|inout] TYPE NAME [= DEFAULT] [as bool]``.
  ``out`` parameters are returned (one: its value; several: a tuple, in order); ``inout`` ones are
  taken and returned.  ``as bool`` returns an ``int`` out parameter as a bool.  TYPE is one of
  ``TYPES`` below.
- ``returns``: ``"error"`` (default: the function returns cudaError_t / CUresult; non-zero raises
  CudaError / CudaDriverError after clearing the sticky error), ``"query"`` (0 -> True,
  cudaErrorNotReady -> False, else raise), ``"code"`` (the cudaError_t is returned, never raised),
  ``"str"`` (a ``const char*`` result, returned as str or None).
- ``blocking``: the call may wait (device work, runtime initialisation, allocation): it runs without
  the GIL.  Other calls keep the GIL (cheaper).
- ``required``: a library that lacks the symbol is not a CUDA runtime (LibraryNotFoundError at load;
  for the driver: NotImplementedError when the driver is first opened).  Other symbols are optional:
  calling one the library lacks raises NotImplementedError naming the symbol and the library.
- ``symbols``: the exported symbols to try, in order (default: ``name``).

Integer parameters accept ``int`` and objects with ``__index__`` (whose exceptions propagate); any
other type raises TypeError naming the parameter; a value that does not fit the C type raises
OverflowError naming the parameter, before any C call (``accel._cargs``, shared by both twins).

This module is plain data: no imports, so the build can read it without importing accel.
"""

# C type -> (kind, lowest, highest).  kind: "int" (an integer of that range), "handle" (a pointer-sized
# handle or address, passed as an int), "float", and the structs / strings with their own conversion.
TYPES = {
    "int": ("int", -2**31, 2**31 - 1),
    "unsigned int": ("int", 0, 2**32 - 1),
    "unsigned long long": ("int", 0, 2**64 - 1),
    "size_t": ("int", 0, 2**64 - 1),
    "cudaError_t": ("int", -2**31, 2**31 - 1),
    "CUresult": ("int", -2**31, 2**31 - 1),
    "float": ("float", None, None),
    "void*": ("handle", 0, 2**64 - 1),
    "const void*": ("handle", 0, 2**64 - 1),
    "cudaStream_t": ("handle", 0, 2**64 - 1),
    "cudaEvent_t": ("handle", 0, 2**64 - 1),
    "cudaHostFn_t": ("handle", 0, 2**64 - 1),
    "cudaMemPool_t": ("handle", 0, 2**64 - 1),
    "cudaGraph_t": ("handle", 0, 2**64 - 1),
    "cudaGraphExec_t": ("handle", 0, 2**64 - 1),
    "cudaGraphNode_t": ("handle", 0, 2**64 - 1),
    "CUmodule": ("handle", 0, 2**64 - 1),
    "CUfunction": ("handle", 0, 2**64 - 1),
    "const char*": ("cstring", None, None),
    "cudaDeviceProp": ("struct", None, None),
    "cudaIpcEventHandle_t": ("struct", None, None),
    "cudaPointerAttributes": ("struct", None, None),
}


class fn:
    """One bound function (see the module docstring)."""

    def __init__(self, name, params, doc, returns="error", blocking=False, required=False, symbols=None):
        self.name = name
        self.params = tuple(_param(p) for p in params.split(",") if p.strip())
        self.doc = doc
        self.returns = returns
        self.blocking = blocking
        self.required = required
        self.symbols = tuple(symbols or (name,))

    def __repr__(self):
        return f"fn({self.name!r})"

    @property
    def inputs(self):
        return tuple(p for p in self.params if p.direction in ("in", "inout"))

    @property
    def outputs(self):
        return tuple(p for p in self.params if p.direction in ("out", "inout"))

    def c_prototype(self, result):
        args = ", ".join(f"{p.ctype}{'*' if p.direction != 'in' else ''} {p.name}" for p in self.params)
        return f"{result} {self.name}({args})"


class Param:
    __slots__ = ("direction", "ctype", "name", "default", "as_bool")

    def __init__(self, direction, ctype, name, default, as_bool):
        self.direction, self.ctype, self.name, self.default, self.as_bool = direction, ctype, name, default, as_bool

    def __repr__(self):
        return f"Param({self.direction} {self.ctype} {self.name})"


def _param(text):
    text = text.strip()
    as_bool = text.endswith(" as bool")
    if as_bool:
        text = text[:-len(" as bool")]
    default = None
    if "=" in text:
        text, default = (t.strip() for t in text.split("=", 1))
    words = text.split()
    direction = "in"
    if words[0] in ("out", "inout"):
        direction = words.pop(0)
    ctype, name = " ".join(words[:-1]), words[-1]
    if ctype not in TYPES:
        raise ValueError(f"unknown C type {ctype!r} in parameter {text!r}")
    return Param(direction, ctype, name, default, as_bool)


# -- the CUDA runtime (libcudart) ---------------------------------------------------------------------

RUNTIME = (
    # devices
    fn("cudaGetDeviceCount", "out int count",
       "Number of devices; raises CudaError (e.g. 35 without a driver, 100 with no device).",
       blocking=True, required=True),  # the first call initialises the runtime (slow on a real GPU)
    fn("cudaGetDevice", "out int device", "The calling thread's current device.", required=True),
    fn("cudaSetDevice", "int device",
       "Make ``device`` current for the calling thread (creates its primary context).", required=True),
    fn("cudaDeviceSynchronize", "", "Wait for all work on the current device.", blocking=True),
    fn("cudaProfilerStart", "", "Start profiler data collection (cuda_profiler_api.h; a no-op without a profiler)."),
    fn("cudaProfilerStop", "", "Stop profiler data collection (cuda_profiler_api.h)."),
    fn("cudaDriverGetVersion", "out int driverVersion",
       "The driver's CUDA version (e.g. 13000), 0 when no driver is installed."),
    fn("cudaRuntimeGetVersion", "out int runtimeVersion", "The runtime library's CUDA version (e.g. 13000)."),
    fn("cudaGetLastError", "", "Return and clear the calling thread's last error code (never raises).",
       returns="code", required=True),
    fn("cudaPeekAtLastError", "",
       "Return the calling thread's last error code without clearing it (never raises).", returns="code"),
    fn("cudaGetErrorString", "cudaError_t error", "The runtime's description of ``error``.",
       returns="str", required=True),
    fn("cudaGetErrorName", "cudaError_t error", "The runtime's enum name of ``error``.",
       returns="str", required=True),
    fn("cudaDeviceGetStreamPriorityRange", "out int leastPriority, out int greatestPriority",
       "(leastPriority, greatestPriority) of the current device, e.g. (0, -5)."),
    fn("cudaDeviceGetAttribute", "out int value, int attr, int device",
       "Integer value of cudaDeviceAttr ``attr`` for ``device``."),
    fn("cudaGetDeviceProperties", "out cudaDeviceProp prop, int device",
       "(name, uuid, total_memory) from the stable head of cudaDeviceProp for ``device``.",
       symbols=("cudaGetDeviceProperties_v2", "cudaGetDeviceProperties")),  # CUDA 12+: _v2 is the current layout
    fn("cudaDeviceCanAccessPeer", "out int canAccessPeer as bool, int device, int peer",
       "Whether ``device`` can access ``peer``'s memory directly."),
    fn("cudaMemGetInfo", "out size_t free, out size_t total", "(free, total) bytes on the current device.",
       blocking=True),

    # streams
    fn("cudaStreamCreate", "out cudaStream_t stream", "A new blocking stream on the current device (handle int).",
       blocking=True),
    fn("cudaStreamCreateWithFlags", "out cudaStream_t stream, unsigned int flags",
       "A new stream with ``flags`` (0 default, 1 non-blocking) on the current device.", blocking=True),
    fn("cudaStreamCreateWithPriority", "out cudaStream_t stream, unsigned int flags, int priority",
       "A new stream with ``flags`` and ``priority`` (clamped by the runtime) on the current device.",
       blocking=True),
    fn("cudaStreamDestroy", "cudaStream_t stream", "Destroy ``stream`` (its pending work still completes).",
       blocking=True),
    fn("cudaStreamQuery", "cudaStream_t stream",
       "True if all work on ``stream`` is done, False if not (cudaErrorNotReady).", returns="query"),
    fn("cudaStreamSynchronize", "cudaStream_t stream", "Wait for all work on ``stream``.", blocking=True),
    fn("cudaStreamGetPriority", "cudaStream_t stream, out int priority", "The priority of ``stream``."),
    fn("cudaStreamGetFlags", "cudaStream_t stream, out unsigned int flags", "The creation flags of ``stream``."),
    fn("cudaStreamGetId", "cudaStream_t stream, out unsigned long long streamId",
       "The runtime's unique id of ``stream``."),
    fn("cudaStreamGetDevice", "cudaStream_t stream, out int device",
       "The device of ``stream`` (CUDA >= 12.8; NotImplementedError if the library lacks it)."),
    fn("cudaStreamWaitEvent", "cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0",
       "Make future work on ``stream`` wait for ``event``'s latest record.", blocking=True),
    fn("cudaStreamIsCapturing", "cudaStream_t stream, out int captureStatus",
       "cudaStreamCaptureStatus of ``stream`` (0 none, 1 active, 2 invalidated)."),
    fn("cudaStreamGetCaptureInfo",
       "cudaStream_t stream, out int captureStatus, out unsigned long long id, void* graph = 0, "
       "void* dependencies = 0, void* edgeData = 0, void* numDependencies = 0",
       "(cudaStreamCaptureStatus, capture id) of ``stream``: the id is unique in the process and shared by every "
       "stream joined to that capture through an event (meaningless when not capturing)."),
    fn("cudaThreadExchangeStreamCaptureMode", "inout int mode",
       "Set this thread's capture mode to ``mode``; returns the previous mode."),

    # events
    fn("cudaEventCreate", "out cudaEvent_t event", "A new event (default flags) on the current device.",
       blocking=True),
    fn("cudaEventCreateWithFlags", "out cudaEvent_t event, unsigned int flags",
       "A new event with ``flags`` (1 blocking sync, 2 disable timing, 4 interprocess).", blocking=True),
    fn("cudaEventDestroy", "cudaEvent_t event", "Destroy ``event``.", blocking=True),
    fn("cudaEventRecord", "cudaEvent_t event, cudaStream_t stream",
       "Record ``event`` at the current end of ``stream``.", blocking=True),
    fn("cudaEventRecordWithFlags", "cudaEvent_t event, cudaStream_t stream, unsigned int flags = 0",
       "Record ``event`` on ``stream`` with ``flags`` (1 = external, during capture).", blocking=True),
    fn("cudaEventQuery", "cudaEvent_t event",
       "True if ``event``'s latest record was reached (or it was never recorded), else False.",
       returns="query"),
    fn("cudaEventSynchronize", "cudaEvent_t event", "Wait until ``event``'s latest record is reached.",
       blocking=True),
    fn("cudaEventElapsedTime", "out float ms, cudaEvent_t start, cudaEvent_t end",
       "Milliseconds between two completed timing events (a float32 value)."),
    fn("cudaIpcGetEventHandle", "out cudaIpcEventHandle_t handle, cudaEvent_t event",
       "The 64-byte IPC handle of an interprocess ``event``."),
    fn("cudaIpcOpenEventHandle", "out cudaEvent_t event, cudaIpcEventHandle_t handle",
       "Open an event from its 64-byte IPC ``handle`` (bytes-like); returns the event handle.", blocking=True),

    # memory and host functions
    fn("cudaMalloc", "out void* devPtr, size_t size",
       "Allocate ``size`` bytes on the current device; returns the pointer int.", blocking=True),
    fn("cudaFree", "void* devPtr", "Free device memory at ``devPtr`` (0 is a no-op).", blocking=True),
    fn("cudaMemcpyAsync", "void* dst, const void* src, size_t count, int kind, cudaStream_t stream",
       "Copy ``count`` bytes from ``src`` to ``dst`` in ``stream`` order (cudaMemcpyKind ``kind``).",
       blocking=True),
    fn("cudaMemsetAsync", "void* devPtr, int value, size_t count, cudaStream_t stream",
       "Set ``count`` bytes at ``devPtr`` to ``value`` in ``stream`` order.", blocking=True),
    fn("cudaPointerGetAttributes", "out cudaPointerAttributes attributes, const void* ptr",
       "(type, device, devicePointer, hostPointer) of ``ptr`` (cudaMemoryType codes)."),

    # stream-ordered allocation on the device's memory pool, pinned host memory
    fn("cudaMallocAsync", "out void* devPtr, size_t size, cudaStream_t hStream",
       "Allocate ``size`` bytes in ``hStream`` order from the pool of the stream's device; returns the pointer int.",
       blocking=True),
    fn("cudaFreeAsync", "void* devPtr, cudaStream_t hStream",
       "Return ``devPtr`` (from cudaMallocAsync) to its pool in ``hStream`` order.", blocking=True),
    fn("cudaDeviceGetDefaultMemPool", "out cudaMemPool_t memPool, int device",
       "The default memory pool of ``device`` (handle int)."),
    fn("cudaDeviceGetMemPool", "out cudaMemPool_t memPool, int device",
       "The current memory pool of ``device`` (what cudaMallocAsync uses; handle int)."),
    fn("cudaMemPoolGetAttribute", "cudaMemPool_t memPool, int attr, out unsigned long long value",
       "Value of cudaMemPoolAttr ``attr`` of ``memPool`` (the int attributes 1-3 read as 0/1)."),
    fn("cudaMemPoolSetAttribute", "cudaMemPool_t memPool, int attr, inout unsigned long long value",
       "Set cudaMemPoolAttr ``attr`` of ``memPool`` to ``value``; returns the value."),
    fn("cudaMemPoolTrimTo", "cudaMemPool_t memPool, size_t minBytesToKeep",
       "Release the pool's unused memory until it holds at most ``minBytesToKeep`` bytes.", blocking=True),
    fn("cudaHostAlloc", "out void* pHost, size_t size, unsigned int flags",
       "Allocate ``size`` bytes of page-locked host memory (cudaHostAlloc flags); returns the pointer int.",
       blocking=True),
    fn("cudaFreeHost", "void* ptr", "Free page-locked host memory from cudaHostAlloc.", blocking=True),
    fn("cudaHostRegister", "void* ptr, size_t size, unsigned int flags",
       "Page-lock the existing host range [``ptr``, ``ptr`` + ``size``) (cudaHostRegister flags).", blocking=True),
    fn("cudaHostUnregister", "void* ptr", "Unregister the host range registered at ``ptr``.", blocking=True),
    fn("cudaLaunchHostFunc", "cudaStream_t stream, cudaHostFn_t fn, void* userData",
       "Enqueue the C function pointer ``fn(userData)`` on ``stream`` (both ints).", blocking=True),

    # stream capture and CUDA graphs
    fn("cudaStreamBeginCapture", "cudaStream_t stream, int mode",
       "Begin capturing ``stream`` into a new graph (cudaStreamCaptureMode ``mode``: 0 global, 1 thread-local, "
       "2 relaxed).", blocking=True),
    fn("cudaStreamEndCapture", "cudaStream_t stream, out cudaGraph_t graph",
       "End the capture begun on ``stream``; returns the captured graph (handle int).", blocking=True),
    fn("cudaGraphCreate", "out cudaGraph_t graph, unsigned int flags = 0", "A new empty graph (handle int).",
       blocking=True),
    fn("cudaGraphDestroy", "cudaGraph_t graph", "Destroy ``graph`` (its executable graphs stay valid).",
       blocking=True),
    fn("cudaGraphGetNodes", "cudaGraph_t graph, void* nodes, inout size_t numNodes",
       "Fill the array at address ``nodes`` with up to ``numNodes`` node handles (0: none); returns the "
       "graph's node count."),
    fn("cudaGraphNodeGetType", "cudaGraphNode_t node, out int type", "The cudaGraphNodeType of ``node``."),
    fn("cudaGraphDebugDotPrint", "cudaGraph_t graph, const void* path, unsigned int flags = 0",
       "Write ``graph`` in DOT to the file named by the NUL-terminated bytes at address ``path``.",
       blocking=True),
    fn("cudaGraphInstantiate", "out cudaGraphExec_t graphExec, cudaGraph_t graph, unsigned long long flags = 0",
       "An executable graph of ``graph`` (cudaGraphInstantiateFlags ``flags``; handle int).", blocking=True),
    fn("cudaGraphInstantiateWithFlags",
       "out cudaGraphExec_t graphExec, cudaGraph_t graph, unsigned long long flags = 0",
       "An executable graph of ``graph`` (cudaGraphInstantiateFlags ``flags``; handle int).", blocking=True),
    fn("cudaGraphUpload", "cudaGraphExec_t graphExec, cudaStream_t stream",
       "Upload ``graphExec`` to the device in ``stream`` order, ahead of its launch.", blocking=True),
    fn("cudaGraphLaunch", "cudaGraphExec_t graphExec, cudaStream_t stream",
       "Queue the executable graph ``graphExec`` on ``stream``.", blocking=True),
    fn("cudaGraphExecDestroy", "cudaGraphExec_t graphExec",
       "Destroy ``graphExec`` (launches already queued still run).", blocking=True),
)

# -- the CUDA driver (libcuda, or the emulator standing in for it) -------------------------------------

DRIVER = (
    fn("cuDevicePrimaryCtxGetState", "int dev, out unsigned int flags, out int active as bool",
       "(flags, active) of ``dev``'s primary context, from the driver (libcuda or the emulator).",
       required=True),  # the device guards' context probe; a driver without it is not used
    fn("cuInit", "unsigned int flags", "Initialise the driver API (``flags`` must be 0)."),
    fn("cuDriverGetVersion", "out int driverVersion", "The driver's CUDA version (e.g. 13000)."),
    fn("cuGetErrorName", "CUresult error, out const char* name", "The driver's enum name of CUresult ``error``."),
    fn("cuGetErrorString", "CUresult error, out const char* string",
       "The driver's description of CUresult ``error``."),

    # modules and launches (accel.lazy's CUDA backend: NVRTC's PTX / cubin, loaded into the current context)
    fn("cuModuleLoadData", "out CUmodule module, const void* image",
       "Load the PTX text (NUL-terminated) or cubin at address ``image`` into the current context; returns the "
       "module (handle int).", blocking=True),
    fn("cuModuleGetFunction", "out CUfunction hfunc, CUmodule hmod, const void* name",
       "The kernel of ``hmod`` named by the NUL-terminated bytes at address ``name`` (handle int)."),
    fn("cuModuleUnload", "CUmodule hmod", "Unload ``hmod`` (its functions become invalid).", blocking=True),
    fn("cuLaunchKernel",
       "CUfunction func, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, "
       "unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, cudaStream_t hStream, "
       "void* kernelParams, void* extra = 0",
       "Queue kernel ``func`` on ``hStream`` with the grid and block given; ``kernelParams``: the address of an "
       "array of pointers to each parameter's value (copied at the call).", blocking=True),
)
