/* Emulator state that every layer shares: the runtime's files (emu_runtime.h builds on this), the
 * stand-in layers (emu_standin.c: the libcudart.so.13 exports the emulator does not implement
 * itself; emu_driver.c: the driver API behind the libcuda.so.1 stand-in) and emu_props.c.
 * Hidden like everything not marked EXPORT. */
#ifndef ACCEL_EMU_INTERNAL_H
#define ACCEL_EMU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include "emu_tables.h"

#pragma GCC visibility push(hidden)

#define EMU_CUDA_VERSION 13000      /* the runtime version the emulator reports, and its least driver version */

/* emu_core.c: the driver version (cuDriverGetVersion, cudaDriverGetVersion, NVML's CUDA driver version):
 * ACCEL_EMU_DRIVER_VERSION when it is a number from EMU_CUDA_VERSION to 99999, else EMU_CUDA_VERSION.
 * `accel emu` sets it to the newest NVRTC in the process (accel/emu.py), so that PTX it generates is not
 * "newer than the driver" (cuda.core warns then, a real driver refuses it). */
int emu_driver_version(void);

/* emu_core.c (set once by its initialisation, which every exported runtime call runs first) */
extern int g_ndev;                              /* visible devices */
extern int g_phys[EMU_MAX_DEVICES];             /* visible ordinal -> physical device */
/* The device's primary context is active: 1 once the runtime made it current (a thread without a context of
 * its own then sees it, emu_driver.c), 2 while it is only retained by the driver (cuDevicePrimaryCtxRetain
 * binds it to no thread); 0 inactive. */
extern atomic_int g_ctx[EMU_MAX_DEVICES];
extern __thread int t_last;                     /* the calling thread's last runtime error */
extern size_t g_mem_total[EMU_MAX_DEVICES];     /* visible device -> its memory in bytes */
extern size_t g_phys_mem[EMU_MAX_DEVICES];      /* physical device -> its memory in bytes (the profile's,
                                                   or ACCEL_EMU_MEMORY) */

/* emu_core.c: the driver API is initialised, by cuInit or by the runtime's first call (as the real runtime
 * initialises the driver itself); before, every driver call but the version, error-string and entry-point
 * queries is CUDA_ERROR_NOT_INITIALIZED.  g_forked: this process was forked from one where the driver was
 * initialised, which the driver refuses (emu_stream.c's atfork_child): the runtime's calls are
 * cudaErrorInitializationError and the driver's CUDA_ERROR_NOT_INITIALIZED, cuInit's included. */
extern atomic_int g_drv_ready;
extern int g_forked;
/* emu_core.c: a runtime entry point's first call initialises the emulator, then the driver. */
void emu_rt_init(void);

/* emu_memory.c: the bytes visible device `dev` has allocated (cudaMalloc and pools' reservations). */
size_t emu_mem_used(int dev);
/* Counts the calling thread's cudaSetDevice calls: the runtime made a primary context current, which
 * binds it to a thread whose driver context stack was emptied (emu_driver.c). */
extern __thread unsigned t_binds;

/* emu_launch.c: sticky errors (CUDA_ERROR_ILLEGAL_ADDRESS and the other execution faults).  Once a kernel
 * faulted on a device, the calls on its context (every runtime call but the device queries, the driver's
 * too) return the code, until its primary context is reset (cuDevicePrimaryCtxReset,
 * accelEmuResetContexts).  One relaxed load while no device has one. */
extern atomic_int g_sticky_any;
extern atomic_int g_sticky[EMU_MAX_DEVICES];
static inline int emu_sticky(int dev)
{
    return atomic_load_explicit(&g_sticky_any, memory_order_relaxed) && dev >= 0 && dev < EMU_MAX_DEVICES
           ? atomic_load_explicit(&g_sticky[dev], memory_order_relaxed) : 0;
}
void emu_sticky_clear(int dev);

/* emu_props.c: writes the whole cudaDeviceProp (CUDA 13 layout: struct emu_device_prop, emu_props.h) of a
 * physical device whose global memory is `total` bytes. */
void emu_fill_props(void *out, int phys, size_t total);
void emu_device_name(int phys, char *out, size_t len);

/* emu_driver.c: the driver entry point `name` in the ABI of CUDA `version` as cuGetProcAddress
 * resolves it (NULL when the emulator has none); `per_thread`: the per-thread-default-stream
 * variant was asked for. */
void *emu_driver_proc(const char *name, int version, int per_thread);

/* emu_graph_driver.c: the driver entry point of capture and graphs whose base name is name[0..len) in the ABI
 * of CUDA `version`, its per-thread-default-stream variant with `per_thread` (NULL when none). */
void *emu_graph_driver_proc(const char *name, size_t len, int version, int per_thread);

/* emu_memory.c, for the driver layer (errors are cudaError_t values, also recorded as the runtime's last
 * error, which the driver restores).  emu_copy: `rows` rows of `width` bytes, `dpitch`/`spitch` apart,
 * with the checks of cudaMemcpyKind `kind`, on `stream`; emu_set: `count` elements of `elem` (1, 2, 4)
 * bytes; sync: returns once done. */
int emu_copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows, int kind,
             void *stream, int sync);
int emu_set(void *p, unsigned int value, size_t count, int elem, void *stream, int sync);
enum { EMU_PTR_NONE, EMU_PTR_HOST, EMU_PTR_DEVICE, EMU_PTR_MANAGED };
typedef struct {
    int kind;                       /* EMU_PTR_*: pinned host memory, a device or managed allocation */
    int device;
    void *base;                     /* the allocation or pinned range holding the address */
    size_t size;
    void *pool;                     /* a stream-ordered allocation's pool, else NULL */
} emu_ptrinfo_t;
int emu_pointer_info(const void *p, emu_ptrinfo_t *out);
/* emu_drvmanaged.c (the stand-ins only; weak, so NULL elsewhere): a freed managed allocation's advice goes. */
void emu_advice_forget(const void *base) __attribute__((weak));

/* emu_standin.c: the first call of an unsupported entry point is logged when ACCEL_EMU_TRACE=1 (the stand-ins
 * only; weak, so NULL elsewhere). */
void emu_trace_unsupported(const char *name, atomic_int *seen) __attribute__((weak));

/* --------------------------------------------------------------------------- fault injection */

/* Every injectable exported symbol (ACCEL_EMU_FAIL="sym:n,...", accelEmuSetFail); the id indexes
 * the per-symbol call counters (emu_core.c).  String getters of the runtime cannot fail and are
 * absent.  EMU_SYMBOLS: the runtime library's; EMU_DRIVER_SYMBOLS: the driver layer's (emu_driver.c) and
 * EMU_STANDIN_SYMBOLS: the real runtime entry points of the libcudart.so.13 stand-in (emu_standin.c), both
 * in the stand-ins only: elsewhere they can be armed but are never called. */
/* The graph queries, node removal, graph memory attributes (emu_graph_query.c), cudaGraphAddNode
 * (emu_graph_addnode.c) and their driver forms with IPC events (emu_graph_driver2.c), and the device / context
 * entry points of emu_drvdevice.c: listed
 * inside EMU_SYMBOLS and EMU_GRAPH_DRIVER_SYMBOLS below. */
#define EMU_GRAPHQ_SYMBOLS(X) \
    X(cudaGraphNodeGetDependentNodes) X(cudaGraphGetEdges) X(cudaGraphDestroyNode) \
    X(cudaGraphMemAllocNodeGetParams) X(cudaGraphMemFreeNodeGetParams) X(cudaDeviceGetGraphMemAttribute) \
    X(cudaDeviceSetGraphMemAttribute) X(cudaDeviceGraphMemTrim) X(cudaGraphAddNode) X(cudaGraphGetRootNodes) \
    X(cudaGraphNodeGetContainingGraph) X(cudaGraphGetId) X(cudaGraphEventRecordNodeGetEvent) \
    X(cudaGraphEventRecordNodeSetEvent) X(cudaGraphEventWaitNodeGetEvent) X(cudaGraphEventWaitNodeSetEvent) \
    X(cudaGraphHostNodeGetParams) X(cudaGraphHostNodeSetParams) X(cudaGraphMemsetNodeGetParams) \
    X(cudaGraphRemoveDependencies) X(cudaGraphNodeGetParams) X(cudaGraphConditionalHandleCreate) \
    X(cudaGraphAddChildGraphNode) X(cudaGraphChildGraphNodeGetGraph) X(cudaStreamBeginCaptureToGraph) \
    X(cudaStreamUpdateCaptureDependencies) X(cudaGraphExecChildGraphNodeSetParams) X(cudaGraphExecGetFlags) \
    X(cudaGraphNodeSetEnabled) X(cudaGraphNodeGetEnabled) X(cudaGraphExecHostNodeSetParams) \
    X(cudaGraphExecEventRecordNodeSetEvent) X(cudaGraphExecEventWaitNodeSetEvent) X(cudaGraphMemsetNodeSetParams) \
    X(cudaGraphExecMemsetNodeSetParams) X(cudaGraphNodeSetParams) X(cudaGraphExecNodeSetParams) \
    X(cudaGraphMemcpyNodeSetParams) X(cudaGraphExecMemcpyNodeSetParams) X(cudaGraphMemcpyNodeGetParams)
#define EMU_DRVSURFACE_SYMBOLS(X) \
    X(cuGraphNodeGetDependentNodes) X(cuGraphNodeGetDependentNodes_v2) X(cuGraphGetEdges) X(cuGraphGetEdges_v2) \
    X(cuGraphDestroyNode) X(cuGraphMemAllocNodeGetParams) X(cuGraphMemFreeNodeGetParams) \
    X(cuDeviceGetGraphMemAttribute) X(cuDeviceSetGraphMemAttribute) X(cuDeviceGraphMemTrim) \
    X(cuIpcGetEventHandle) X(cuIpcOpenEventHandle) X(cuGraphAddNode) X(cuGraphAddNode_v2) X(cuGraphGetRootNodes) \
    X(cuGraphNodeGetContainingGraph) X(cuGraphGetId) X(cuGraphEventRecordNodeGetEvent) \
    X(cuGraphEventRecordNodeSetEvent) X(cuGraphEventWaitNodeGetEvent) X(cuGraphEventWaitNodeSetEvent) \
    X(cuGraphHostNodeGetParams) X(cuGraphHostNodeSetParams) X(cuGraphMemsetNodeGetParams) \
    X(cuGraphRemoveDependencies) X(cuGraphRemoveDependencies_v2) X(cuGraphNodeGetParams) X(cuCtxGetDevice_v2) \
    X(cuGraphConditionalHandleCreate) X(cuGraphAddChildGraphNode) X(cuGraphChildGraphNodeGetGraph) \
    X(cuStreamBeginCaptureToGraph) X(cuStreamUpdateCaptureDependencies) X(cuStreamUpdateCaptureDependencies_v2) \
    X(cuGraphExecChildGraphNodeSetParams) \
    X(cuGraphExecGetFlags) X(cuGraphNodeSetEnabled) X(cuGraphNodeGetEnabled) X(cuGraphExecHostNodeSetParams) \
    X(cuGraphExecEventRecordNodeSetEvent) X(cuGraphExecEventWaitNodeSetEvent) X(cuGraphMemsetNodeSetParams) \
    X(cuGraphExecMemsetNodeSetParams) X(cuGraphNodeSetParams) X(cuGraphExecNodeSetParams) X(cuGraphMemcpyNodeSetParams) \
    X(cuGraphExecMemcpyNodeSetParams) X(cuGraphMemcpyNodeGetParams) \
    X(cuCtxSynchronize_v2) X(cuCtxResetPersistingL2Cache) X(cuDeviceGetByPCIBusId) X(cuDeviceGetP2PAttribute) \
    X(cuFlushGPUDirectRDMAWrites)
/* CUDA arrays, mipmapped arrays, texture and surface objects: the runtime's (emu_array_rt.c) and the driver's
 * (emu_array.c), listed inside EMU_SYMBOLS and EMU_GRAPH_DRIVER_SYMBOLS below. */
#define EMU_ARRAY_RT_SYMBOLS(X) \
    X(cudaMallocArray) X(cudaMalloc3DArray) X(cudaFreeArray) X(cudaArrayGetInfo) X(cudaMallocMipmappedArray) \
    X(cudaGetMipmappedArrayLevel) X(cudaFreeMipmappedArray) X(cudaMemcpy2DToArray) X(cudaMemcpy2DToArrayAsync) \
    X(cudaMemcpy2DFromArray) X(cudaMemcpy2DFromArrayAsync) X(cudaMemcpyToArray) X(cudaMemcpyFromArray) \
    X(cudaMemcpy2DArrayToArray) X(cudaMemcpy3D) X(cudaMemcpy3DAsync) X(cudaCreateTextureObject) \
    X(cudaDestroyTextureObject) X(cudaCreateSurfaceObject) X(cudaDestroySurfaceObject) X(cudaGetChannelDesc) \
    X(cudaGetTextureObjectResourceDesc) X(cudaGetTextureObjectTextureDesc) X(cudaGetSurfaceObjectResourceDesc)
#define EMU_ARRAY_DRV_SYMBOLS(X) \
    X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuArrayGetDescriptor_v2) X(cuArray3DGetDescriptor_v2) \
    X(cuArrayDestroy) X(cuMipmappedArrayCreate) X(cuMipmappedArrayGetLevel) X(cuMipmappedArrayDestroy) \
    X(cuMemcpy3D_v2) X(cuMemcpy3DAsync_v2) X(cuMemcpyAtoH_v2) X(cuMemcpyHtoA_v2) X(cuMemcpyAtoHAsync_v2) \
    X(cuMemcpyHtoAAsync_v2) X(cuMemcpyAtoD_v2) X(cuMemcpyDtoA_v2) X(cuMemcpyAtoA_v2) X(cuTexObjectCreate) \
    X(cuTexObjectDestroy) X(cuTexObjectGetResourceDesc) X(cuTexObjectGetTextureDesc) \
    X(cuTexObjectGetResourceViewDesc) X(cuSurfObjectCreate) X(cuSurfObjectDestroy) X(cuSurfObjectGetResourceDesc)
#define EMU_SYMBOLS(X) \
    X(cudaGetDeviceCount) X(cudaGetDevice) X(cudaSetDevice) X(cudaDeviceSynchronize) \
    EMU_ARRAY_RT_SYMBOLS(X) \
    EMU_GRAPHQ_SYMBOLS(X) \
    X(cudaDriverGetVersion) X(cudaRuntimeGetVersion) X(cudaGetLastError) \
    X(cudaPeekAtLastError) X(cudaDeviceGetStreamPriorityRange) X(cudaStreamCreate) \
    X(cudaStreamCreateWithFlags) X(cudaStreamCreateWithPriority) X(cudaStreamDestroy) \
    X(cudaStreamQuery) X(cudaStreamSynchronize) X(cudaStreamGetPriority) \
    X(cudaStreamGetFlags) X(cudaStreamGetId) X(cudaStreamGetDevice) X(cudaStreamWaitEvent) \
    X(cudaStreamIsCapturing) X(cudaThreadExchangeStreamCaptureMode) X(cudaEventCreate) \
    X(cudaEventCreateWithFlags) X(cudaEventDestroy) X(cudaEventRecord) \
    X(cudaEventRecordWithFlags) X(cudaEventQuery) X(cudaEventSynchronize) \
    X(cudaEventElapsedTime) X(cudaIpcGetEventHandle) X(cudaIpcOpenEventHandle) \
    X(cudaMalloc) X(cudaFree) X(cudaMemGetInfo) X(cudaMemcpyAsync) X(cudaMemsetAsync) \
    X(cudaPointerGetAttributes) X(cudaLaunchHostFunc) X(cudaDeviceGetAttribute) \
    X(cudaGetDeviceProperties) X(cudaGetDeviceProperties_v2) X(cudaDeviceCanAccessPeer) \
    X(cudaDeviceGetPCIBusId) X(cuDevicePrimaryCtxGetState) X(cuGetErrorName) \
    X(cuGetErrorString) X(cuDriverGetVersion) X(cuInit) \
    X(cudaProfilerStart) X(cudaProfilerStop) \
    X(cudaMallocAsync) X(cudaFreeAsync) X(cudaDeviceGetDefaultMemPool) X(cudaDeviceGetMemPool) \
    X(cudaMemPoolGetAttribute) X(cudaMemPoolSetAttribute) X(cudaMemPoolTrimTo) X(cudaHostAlloc) \
    X(cudaFreeHost) X(cudaHostRegister) X(cudaHostUnregister) \
    X(cudaMallocFromPoolAsync) X(cudaMemPoolCreate) X(cudaMemPoolDestroy) X(cudaDeviceSetMemPool) \
    X(cudaMemPoolSetAccess) X(cudaMemPoolGetAccess) X(cudaMemGetMemPool) X(cudaMemGetDefaultMemPool) \
    X(cudaMemSetMemPool) X(cudaMallocManaged) X(cudaMemcpy) X(cudaMemset) \
    X(cudaMemcpy2DAsync) X(cudaMemcpyPeerAsync) X(cudaHostGetDevicePointer) X(cudaIpcGetMemHandle) \
    X(cudaIpcOpenMemHandle) X(cudaIpcCloseMemHandle) X(cudaDeviceSetLimit) X(cudaDeviceGetLimit) \
    X(cudaStreamBeginCapture) X(cudaStreamEndCapture) X(cudaStreamGetCaptureInfo) X(cudaGraphCreate) \
    X(cudaGraphAddEmptyNode) X(cudaGraphDestroy) X(cudaGraphGetNodes) X(cudaGraphNodeGetType) \
    X(cudaGraphDebugDotPrint) X(cudaGraphInstantiate) X(cudaGraphInstantiateWithFlags) \
    X(cudaGraphExecDestroy) X(cudaGraphLaunch) X(cudaGraphUpload) \
    X(cudaUserObjectCreate) X(cudaUserObjectRetain) X(cudaUserObjectRelease) X(cudaGraphRetainUserObject) \
    X(cudaGraphReleaseUserObject) X(cudaGraphAddMemcpyNode) X(cudaGraphAddMemcpyNode1D) X(cudaGraphAddMemsetNode) \
    X(cudaGraphAddHostNode) X(cudaGraphAddEventRecordNode) X(cudaGraphAddEventWaitNode) \
    X(cudaGraphAddDependencies) X(cudaGraphNodeGetDependencies) X(cudaGraphClone) X(cudaGraphNodeFindInClone) \
    X(cudaGraphExecUpdate) X(cudaGraphAddMemAllocNode) X(cudaGraphAddMemFreeNode)
#define EMU_DRIVER_SYMBOLS(X) \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDeviceGetUuid) \
    X(cuDeviceGetUuid_v2) X(cuDeviceTotalMem_v2) X(cuDeviceGetPCIBusId) X(cuDeviceComputeCapability) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxSetFlags_v2) \
    X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxGetDevice) \
    X(cuCtxSynchronize) X(cuCtxGetApiVersion) X(cuCtxGetFlags) X(cuCtxGetId) X(cuCtxGetStreamPriorityRange) \
    X(cuMemGetInfo_v2) X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuStreamDestroy_v2) \
    X(cuStreamQuery) X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuStreamGetPriority) X(cuStreamGetFlags) \
    X(cuStreamGetId) X(cuStreamGetDevice) X(cuStreamGetCtx) X(cuStreamGetCtx_v2) X(cuStreamIsCapturing) \
    X(cuLaunchHostFunc) X(cuLaunchHostFunc_v2) X(cuEventCreate) X(cuEventDestroy_v2) X(cuEventRecord) \
    X(cuEventRecordWithFlags) X(cuEventQuery) X(cuEventSynchronize) X(cuEventElapsedTime_v2) \
    X(cuGetProcAddress) X(cuGetProcAddress_v2) \
    X(cuDevicePrimaryCtxReset_v2) X(cuCtxCreate_v2) X(cuCtxCreate_v3) X(cuCtxCreate_v4) X(cuCtxDestroy_v2) \
    X(cuCtxSetLimit) X(cuCtxGetLimit) X(cuCtxSetCacheConfig) X(cuCtxGetCacheConfig) X(cuCtxEnablePeerAccess) \
    X(cuDeviceCanAccessPeer) X(cuProfilerStart) X(cuProfilerStop) X(cuStreamAddCallback) \
    EMU_DRVMEM_SYMBOLS(X)
/* emu_drvmem.c's */
#define EMU_DRVMEM_SYMBOLS(X) \
    X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemFree_v2) X(cuMemAllocManaged) X(cuMemAllocAsync) \
    X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync) X(cuMemGetAddressRange_v2) X(cuMemPoolCreate) \
    X(cuMemPoolDestroy) X(cuMemPoolGetAttribute) X(cuMemPoolSetAttribute) X(cuMemPoolTrimTo) \
    X(cuMemPoolSetAccess) X(cuMemPoolGetAccess) X(cuDeviceGetMemPool) X(cuDeviceGetDefaultMemPool) \
    X(cuDeviceSetMemPool) X(cuMemGetMemPool) X(cuMemSetMemPool) \
    X(cuMemGetDefaultMemPool) X(cuMemcpy) X(cuMemcpyAsync) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) \
    X(cuMemcpyDtoD_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoDAsync_v2) \
    X(cuMemcpyPeer) X(cuMemcpyPeerAsync) X(cuMemcpy2D_v2) X(cuMemcpy2DUnaligned_v2) X(cuMemcpy2DAsync_v2) \
    X(cuMemsetD8_v2) X(cuMemsetD8Async) X(cuMemsetD16_v2) X(cuMemsetD16Async) X(cuMemsetD32_v2) \
    X(cuMemsetD32Async) X(cuMemHostAlloc) X(cuMemAllocHost_v2) X(cuMemFreeHost) X(cuMemHostRegister_v2) \
    X(cuMemHostUnregister) X(cuMemHostGetDevicePointer_v2) X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle_v2) \
    X(cuIpcCloseMemHandle) X(cuPointerGetAttribute) X(cuPointerGetAttributes) \
    X(cuMemAdvise) X(cuMemAdvise_v2) X(cuMemRangeGetAttribute) X(cuMemRangeGetAttributes) \
    X(cuMemPrefetchAsync) X(cuMemPrefetchAsync_v2) X(cuMemPrefetchBatchAsync) X(cuMemDiscardBatchAsync) \
    X(cuMemDiscardAndPrefetchBatchAsync) X(cuMemPoolExportToShareableHandle) X(cuMemPoolImportFromShareableHandle) \
    X(cuMemPoolExportPointer) X(cuMemPoolImportPointer)

#define EMU_STANDIN_SYMBOLS(X) \
    X(cudaGetDriverEntryPointByVersion) X(cudaDeviceEnablePeerAccess) \
    X(cudaStreamAddCallback)

/* The driver layer's stream capture and graphs (emu_graph_driver.c, in the stand-ins). */
#define EMU_GRAPH_DRIVER_SYMBOLS(X) \
    X(cuStreamBeginCapture_v2) X(cuStreamEndCapture) X(cuStreamGetCaptureInfo_v2) X(cuStreamGetCaptureInfo_v3) \
    EMU_DRVSURFACE_SYMBOLS(X) \
    EMU_ARRAY_DRV_SYMBOLS(X) \
    X(cuThreadExchangeStreamCaptureMode) X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphGetNodes) \
    X(cuGraphNodeGetType) X(cuGraphAddEmptyNode) X(cuGraphDebugDotPrint) X(cuGraphInstantiateWithFlags) \
    X(cuGraphInstantiateWithParams) X(cuGraphUpload) X(cuGraphLaunch) X(cuGraphExecDestroy) \
    X(cuUserObjectCreate) X(cuUserObjectRetain) X(cuUserObjectRelease) X(cuGraphRetainUserObject) \
    X(cuGraphReleaseUserObject) X(cuGraphAddMemcpyNode) X(cuGraphAddMemsetNode) X(cuGraphAddHostNode) \
    X(cuGraphAddEventRecordNode) X(cuGraphAddEventWaitNode) X(cuGraphAddDependencies) \
    X(cuGraphNodeGetDependencies) X(cuGraphClone) X(cuGraphNodeFindInClone) X(cuGraphExecUpdate_v2) \
    X(cuGraphAddMemAllocNode) X(cuGraphAddMemFreeNode)

/* The driver layer's modules, libraries, functions, kernels, linker, occupancy and launches (emu_module.c,
 * emu_drvlaunch.c, in the stand-ins). */
#define EMU_MODULE_SYMBOLS(X) \
    X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleLoadFatBinary) X(cuModuleLoad) X(cuModuleUnload) \
    X(cuModuleGetFunction) X(cuModuleGetFunctionCount) X(cuModuleEnumerateFunctions) X(cuModuleGetGlobal_v2) \
    X(cuModuleGetLoadingMode) X(cuLibraryLoadData) X(cuLibraryLoadFromFile) X(cuLibraryUnload) X(cuLibraryGetKernel) \
    X(cuLibraryGetKernelCount) X(cuLibraryEnumerateKernels) X(cuLibraryGetModule) X(cuLibraryGetGlobal) \
    X(cuLibraryGetManaged) X(cuKernelGetFunction) X(cuKernelGetLibrary) X(cuKernelGetName) X(cuKernelGetParamInfo) \
    X(cuKernelGetAttribute) X(cuKernelSetAttribute) X(cuKernelSetCacheConfig) X(cuFuncGetAttribute) \
    X(cuFuncSetAttribute) X(cuFuncSetCacheConfig) X(cuFuncSetSharedMemConfig) X(cuFuncGetName) X(cuFuncGetParamInfo) \
    X(cuFuncGetModule) X(cuFuncIsLoaded) X(cuFuncLoad) X(cuLinkCreate_v2) X(cuLinkAddData_v2) X(cuLinkAddFile_v2) \
    X(cuLinkComplete) X(cuLinkDestroy) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) X(cuOccupancyMaxPotentialBlockSize) \
    X(cuOccupancyMaxPotentialBlockSizeWithFlags) X(cuOccupancyAvailableDynamicSMemPerBlock) \
    X(cuOccupancyMaxPotentialClusterSize) X(cuOccupancyMaxActiveClusters) X(cuLaunchKernel) X(cuLaunchKernelEx) \
    X(cuLaunchCooperativeKernel) X(cuGraphAddKernelNode_v2) X(cuGraphKernelNodeGetParams_v2) \
    X(cuGraphKernelNodeSetParams_v2) X(cuGraphExecKernelNodeSetParams_v2)

/* NVML's entry points (emu_nvml*.c): each has a fault hook by name; an injected fault is NVML_ERROR_UNKNOWN. */
#define EMU_NVML_SYMBOLS(X) \
    X(nvmlInit_v2) X(nvmlInit) X(nvmlInitWithFlags) X(nvmlShutdown) X(nvmlSystemGetDriverVersion) \
    X(nvmlSystemGetNVMLVersion) X(nvmlSystemGetCudaDriverVersion) X(nvmlSystemGetCudaDriverVersion_v2) \
    X(nvmlSystemGetDriverBranch) X(nvmlSystemGetProcessName) X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetCount) \
    X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetHandleByIndex) X(nvmlDeviceGetHandleByUUID) \
    X(nvmlDeviceGetHandleByPciBusId_v2) X(nvmlDeviceGetHandleByPciBusId) X(nvmlDeviceGetIndex) \
    X(nvmlDeviceGetName) X(nvmlDeviceGetUUID) X(nvmlDeviceGetSerial) X(nvmlDeviceGetMinorNumber) \
    X(nvmlDeviceGetBrand) X(nvmlDeviceGetArchitecture) X(nvmlDeviceGetCudaComputeCapability) \
    X(nvmlDeviceGetNumGpuCores) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2) \
    X(nvmlDeviceGetComputeRunningProcesses_v3) X(nvmlDeviceGetComputeRunningProcesses_v2) \
    X(nvmlDeviceGetComputeRunningProcesses) X(nvmlDeviceGetGraphicsRunningProcesses_v3) \
    X(nvmlDeviceGetGraphicsRunningProcesses_v2) X(nvmlDeviceGetGraphicsRunningProcesses) \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v3) X(nvmlDeviceGetUtilizationRates) \
    X(nvmlDeviceGetTemperature) X(nvmlDeviceGetTemperatureV) X(nvmlDeviceGetPowerUsage) \
    X(nvmlDeviceGetPowerManagementLimit) X(nvmlDeviceGetPowerManagementDefaultLimit) \
    X(nvmlDeviceGetEnforcedPowerLimit) X(nvmlDeviceGetFanSpeed) X(nvmlDeviceGetNumFans) \
    X(nvmlDeviceGetClockInfo) X(nvmlDeviceGetMaxClockInfo) X(nvmlDeviceGetClock) \
    X(nvmlDeviceGetPerformanceState) X(nvmlDeviceGetCurrentClocksEventReasons) \
    X(nvmlDeviceGetSupportedClocksEventReasons) X(nvmlDeviceGetPciInfo_v3) X(nvmlDeviceGetPciInfoExt) \
    X(nvmlDeviceGetCurrPcieLinkGeneration) X(nvmlDeviceGetMaxPcieLinkGeneration) \
    X(nvmlDeviceGetGpuMaxPcieLinkGeneration) X(nvmlDeviceGetCurrPcieLinkWidth) \
    X(nvmlDeviceGetMaxPcieLinkWidth) X(nvmlDeviceGetComputeMode) X(nvmlDeviceGetPersistenceMode) \
    X(nvmlDeviceGetDisplayMode) X(nvmlDeviceGetDisplayActive) X(nvmlDeviceIsMigDeviceHandle) \
    X(nvmlDeviceGetEccMode) X(nvmlDeviceGetMigMode) X(nvmlDeviceGetModuleId) X(nvmlDeviceGetNumaNodeId) \
    X(nvmlDeviceGetAutoBoostedClocksEnabled) X(nvmlDeviceGetMaxCustomerBoostClock) \
    X(nvmlDeviceGetMinMaxClockOfPState) X(nvmlDeviceGetPcieReplayCounter) X(nvmlDeviceGetPcieThroughput) \
    X(nvmlDeviceGetMarginTemperature) X(nvmlDeviceGetMaxMigDeviceCount) X(nvmlDeviceGetP2PStatus) \
    X(nvmlDeviceGetSupportedEventTypes) X(nvmlEventSetCreate) X(nvmlEventSetFree) \
    X(nvmlDeviceRegisterEvents) X(nvmlEventSetWait_v2) X(nvmlSystemEventSetCreate) X(nvmlSystemEventSetFree) \
    X(nvmlSystemRegisterEvents) X(nvmlSystemEventSetWait) X(nvmlDeviceGetFieldValues) \
    X(nvmlDeviceClearFieldValues) X(nvmlDeviceGetSupportedPerformanceStates) \
    X(nvmlDeviceGetDynamicPstatesInfo) X(nvmlDeviceGetClockOffsets) X(nvmlDeviceGetTopologyCommonAncestor) \
    X(nvmlDeviceGetTopologyNearestGpus) X(nvmlSystemGetTopologyGpuSet) \
    X(nvmlDeviceGetCpuAffinityWithinScope) X(nvmlDeviceGetCpuAffinity) X(nvmlDeviceGetMemoryAffinity) \
    X(nvmlDeviceSetPersistenceMode)

#define X_ENUM(s) SYM_##s,
enum { EMU_SYMBOLS(X_ENUM) EMU_DRIVER_SYMBOLS(X_ENUM) EMU_STANDIN_SYMBOLS(X_ENUM) EMU_GRAPH_DRIVER_SYMBOLS(X_ENUM)
       EMU_MODULE_SYMBOLS(X_ENUM)
       EMU_NVML_SYMBOLS(X_ENUM) SYM_COUNT };

#define MAX_FAIL 64
typedef struct { int sym; unsigned long long nth; } failpt_t;
extern pthread_mutex_t g_fail_lock;
extern failpt_t g_fail[MAX_FAIL];
extern int g_nfail;
extern unsigned long long g_calls[SYM_COUNT];
/* Checked on every call without a lock: counting only starts once a spec is
 * installed, which keeps the no-injection fast path to one relaxed load. */
extern atomic_int g_fail_active;

/* Counts a call of `sym`: 1 when this call is one the installed spec fails. */
static inline int fail_hit(int sym)
{
    int hit = 0;
    pthread_mutex_lock(&g_fail_lock);
    unsigned long long c = ++g_calls[sym];
    for (int i = 0; i < g_nfail; i++)
        if (g_fail[i].sym == sym && g_fail[i].nth == c) hit = 1;
    pthread_mutex_unlock(&g_fail_lock);
    return hit;
}

#define EMU_FAULT(sym) \
    (atomic_load_explicit(&g_fail_active, memory_order_relaxed) && fail_hit(SYM_##sym))

#pragma GCC visibility pop

#endif
