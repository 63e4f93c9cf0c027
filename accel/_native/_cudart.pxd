# The binding table, shared at C level with the other native modules (accel._native._device,
# _stream, ...): they cimport ``table()`` and call the function pointers directly, so the semantic layers
# pay no Python call per CUDA call.  Nothing here has semantics: it only binds.
ctypedef int cudaError_t
ctypedef void* cudaStream_t
ctypedef void* cudaEvent_t
ctypedef void (*cudaHostFn_t)(void*) noexcept nogil

cdef struct IpcEventHandle:
    char reserved[64]

cdef struct PointerAttributes:
    int type
    int device
    void* devicePointer
    void* hostPointer

cdef struct Table:
    cudaError_t (*cudaGetDeviceCount)(int*) noexcept nogil
    cudaError_t (*cudaGetDevice)(int*) noexcept nogil
    cudaError_t (*cudaSetDevice)(int) noexcept nogil
    cudaError_t (*cudaDeviceSynchronize)() noexcept nogil
    cudaError_t (*cudaDriverGetVersion)(int*) noexcept nogil
    cudaError_t (*cudaRuntimeGetVersion)(int*) noexcept nogil
    cudaError_t (*cudaGetLastError)() noexcept nogil
    cudaError_t (*cudaPeekAtLastError)() noexcept nogil
    const char* (*cudaGetErrorString)(cudaError_t) noexcept nogil
    const char* (*cudaGetErrorName)(cudaError_t) noexcept nogil
    cudaError_t (*cudaDeviceGetStreamPriorityRange)(int*, int*) noexcept nogil
    cudaError_t (*cudaDeviceGetAttribute)(int*, int, int) noexcept nogil
    cudaError_t (*cudaGetDeviceProperties)(void*, int) noexcept nogil
    cudaError_t (*cudaDeviceCanAccessPeer)(int*, int, int) noexcept nogil
    cudaError_t (*cudaMemGetInfo)(size_t*, size_t*) noexcept nogil
    cudaError_t (*cudaStreamCreate)(cudaStream_t*) noexcept nogil
    cudaError_t (*cudaStreamCreateWithFlags)(cudaStream_t*, unsigned int) noexcept nogil
    cudaError_t (*cudaStreamCreateWithPriority)(cudaStream_t*, unsigned int, int) noexcept nogil
    cudaError_t (*cudaStreamDestroy)(cudaStream_t) noexcept nogil
    cudaError_t (*cudaStreamQuery)(cudaStream_t) noexcept nogil
    cudaError_t (*cudaStreamSynchronize)(cudaStream_t) noexcept nogil
    cudaError_t (*cudaStreamGetPriority)(cudaStream_t, int*) noexcept nogil
    cudaError_t (*cudaStreamGetFlags)(cudaStream_t, unsigned int*) noexcept nogil
    cudaError_t (*cudaStreamGetId)(cudaStream_t, unsigned long long*) noexcept nogil
    cudaError_t (*cudaStreamGetDevice)(cudaStream_t, int*) noexcept nogil
    cudaError_t (*cudaStreamWaitEvent)(cudaStream_t, cudaEvent_t, unsigned int) noexcept nogil
    cudaError_t (*cudaStreamIsCapturing)(cudaStream_t, int*) noexcept nogil
    cudaError_t (*cudaThreadExchangeStreamCaptureMode)(int*) noexcept nogil
    cudaError_t (*cudaEventCreate)(cudaEvent_t*) noexcept nogil
    cudaError_t (*cudaEventCreateWithFlags)(cudaEvent_t*, unsigned int) noexcept nogil
    cudaError_t (*cudaEventDestroy)(cudaEvent_t) noexcept nogil
    cudaError_t (*cudaEventRecord)(cudaEvent_t, cudaStream_t) noexcept nogil
    cudaError_t (*cudaEventRecordWithFlags)(cudaEvent_t, cudaStream_t, unsigned int) noexcept nogil
    cudaError_t (*cudaEventQuery)(cudaEvent_t) noexcept nogil
    cudaError_t (*cudaEventSynchronize)(cudaEvent_t) noexcept nogil
    cudaError_t (*cudaEventElapsedTime)(float*, cudaEvent_t, cudaEvent_t) noexcept nogil
    cudaError_t (*cudaIpcGetEventHandle)(IpcEventHandle*, cudaEvent_t) noexcept nogil
    cudaError_t (*cudaIpcOpenEventHandle)(cudaEvent_t*, IpcEventHandle) noexcept nogil
    cudaError_t (*cudaMalloc)(void**, size_t) noexcept nogil
    cudaError_t (*cudaFree)(void*) noexcept nogil
    cudaError_t (*cudaMemcpyAsync)(void*, const void*, size_t, int, cudaStream_t) noexcept nogil
    cudaError_t (*cudaMemsetAsync)(void*, int, size_t, cudaStream_t) noexcept nogil
    cudaError_t (*cudaPointerGetAttributes)(PointerAttributes*, const void*) noexcept nogil
    cudaError_t (*cudaLaunchHostFunc)(cudaStream_t, cudaHostFn_t, void*) noexcept nogil

cdef struct DriverTable:
    int (*cuDevicePrimaryCtxGetState)(int, unsigned int*, int*) noexcept nogil
    int (*cuGetErrorName)(int, const char**) noexcept nogil
    int (*cuGetErrorString)(int, const char**) noexcept nogil


cdef Table* table() except NULL            # the loaded table (loads the library on first use)
cdef DriverTable* driver_table() except NULL  # the driver entry points (opens libcuda / the emulator)
cdef object error(cudaError_t err)         # clears the sticky error; returns the CudaError to raise
cdef object driver_error(int err)          # the CudaDriverError for a CUresult
