/* cudaDeviceProp in the CUDA 12 layout, for the libcudart.so.12 stand-in (a cu12 torch reads its
 * fields at these offsets).  CUDA 13 removed eight fields from the middle of the struct (clockRate,
 * deviceOverlap, ...), so most offsets after `totalConstMem` differ: the CUDA 12 struct is filled
 * from the CUDA 13 one field by field, plus the removed fields from the device attributes. */
#include <string.h>

#include "emu_props.h"
#include "emu_props12.h"

struct emu_device_prop12 {          /* cudaDeviceProp, CUDA 12.x (12.0 .. 12.9 keep this layout) */
    char name[256];
    unsigned char uuid[16];
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem, sharedMemPerBlock;
    int regsPerBlock, warpSize;
    size_t memPitch;
    int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    int clockRate;                                                          /* removed in 13 */
    size_t totalConstMem;
    int major, minor;
    size_t textureAlignment, texturePitchAlignment;
    int deviceOverlap;                                                      /* removed in 13 */
    int multiProcessorCount;
    int kernelExecTimeoutEnabled;                                           /* removed in 13 */
    int integrated, canMapHostMemory;
    int computeMode;                                                        /* removed in 13 */
    int maxTexture1D, maxTexture1DMipmap;
    int maxTexture1DLinear;                                                 /* removed in 13 */
    int maxTexture2D[2], maxTexture2DMipmap[2];
    int maxTexture2DLinear[3], maxTexture2DGather[2], maxTexture3D[3], maxTexture3DAlt[3];
    int maxTextureCubemap, maxTexture1DLayered[2], maxTexture2DLayered[3];
    int maxTextureCubemapLayered[2], maxSurface1D, maxSurface2D[2], maxSurface3D[3];
    int maxSurface1DLayered[2], maxSurface2DLayered[3], maxSurfaceCubemap;
    int maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver;
    int asyncEngineCount, unifiedAddressing;
    int memoryClockRate;                                                    /* removed in 13 */
    int memoryBusWidth, l2CacheSize;
    int persistingL2CacheMaxSize, maxThreadsPerMultiProcessor, streamPrioritiesSupported;
    int globalL1CacheSupported, localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID;
    int hostNativeAtomicSupported;
    int singleToDoublePrecisionPerfRatio;                                   /* removed in 13 */
    int pageableMemoryAccess, concurrentManagedAccess;
    int computePreemptionSupported, canUseHostPointerForRegisteredMem, cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;                                       /* removed in 13 */
    size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables, directManagedMemAccessFromHost;
    int maxBlocksPerMultiProcessor, accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
    int hostRegisterSupported, sparseCudaArraySupported, hostRegisterReadOnlySupported;
    int timelineSemaphoreInteropSupported, memoryPoolsSupported, gpuDirectRDMASupported;
    unsigned int gpuDirectRDMAFlushWritesOptions;
    int gpuDirectRDMAWritesOrdering;
    unsigned int memoryPoolSupportedHandleTypes;
    int deferredMappingCudaArraySupported, ipcEventSupported, clusterLaunch;
    int unifiedFunctionPointers;
    int reserved[63];
};

/* Offsets and size from the CUDA 12.8 headers (nvidia-cuda-runtime-cu12 12.8.90, driver_types.h). */
_Static_assert(offsetof(struct emu_device_prop12, uuid) == 256, "uuid");
_Static_assert(offsetof(struct emu_device_prop12, totalGlobalMem) == 288, "totalGlobalMem");
_Static_assert(offsetof(struct emu_device_prop12, warpSize) == 308, "warpSize");
_Static_assert(offsetof(struct emu_device_prop12, clockRate) == 348, "clockRate");
_Static_assert(offsetof(struct emu_device_prop12, totalConstMem) == 352, "totalConstMem");
_Static_assert(offsetof(struct emu_device_prop12, major) == 360, "major");
_Static_assert(offsetof(struct emu_device_prop12, minor) == 364, "minor");
_Static_assert(offsetof(struct emu_device_prop12, deviceOverlap) == 384, "deviceOverlap");
_Static_assert(offsetof(struct emu_device_prop12, multiProcessorCount) == 388, "multiProcessorCount");
_Static_assert(offsetof(struct emu_device_prop12, computeMode) == 404, "computeMode");
_Static_assert(offsetof(struct emu_device_prop12, maxTexture1DLinear) == 416, "maxTexture1DLinear");
_Static_assert(offsetof(struct emu_device_prop12, memoryClockRate) == 608, "memoryClockRate");
_Static_assert(offsetof(struct emu_device_prop12, memoryBusWidth) == 612, "memoryBusWidth");
_Static_assert(offsetof(struct emu_device_prop12, l2CacheSize) == 616, "l2CacheSize");
_Static_assert(offsetof(struct emu_device_prop12, maxThreadsPerMultiProcessor) == 624, "maxThreadsPerMultiProcessor");
_Static_assert(offsetof(struct emu_device_prop12, sharedMemPerMultiprocessor) == 640, "sharedMemPerMultiprocessor");
_Static_assert(offsetof(struct emu_device_prop12, singleToDoublePrecisionPerfRatio) == 668, "singleToDouble...");
_Static_assert(offsetof(struct emu_device_prop12, cooperativeMultiDeviceLaunch) == 692, "cooperativeMultiDevice...");
_Static_assert(offsetof(struct emu_device_prop12, sharedMemPerBlockOptin) == 696, "sharedMemPerBlockOptin");
_Static_assert(offsetof(struct emu_device_prop12, reservedSharedMemPerBlock) == 720, "reservedSharedMemPerBlock");
_Static_assert(offsetof(struct emu_device_prop12, unifiedFunctionPointers) == 776, "unifiedFunctionPointers");
_Static_assert(sizeof(struct emu_device_prop12) == EMU_PROPS12_SIZE, "sizeof(cudaDeviceProp)");

/* The fields both layouts have, copied by name. */
#define COMMON_FIELDS(X) \
    X(name) X(uuid) X(luid) X(luidDeviceNodeMask) X(totalGlobalMem) X(sharedMemPerBlock) X(regsPerBlock) \
    X(warpSize) X(memPitch) X(maxThreadsPerBlock) X(maxThreadsDim) X(maxGridSize) X(totalConstMem) X(major) \
    X(minor) X(textureAlignment) X(texturePitchAlignment) X(multiProcessorCount) X(integrated) \
    X(canMapHostMemory) X(maxTexture1D) X(maxTexture1DMipmap) X(maxTexture2D) X(maxTexture2DMipmap) \
    X(maxTexture2DLinear) X(maxTexture2DGather) X(maxTexture3D) X(maxTexture3DAlt) X(maxTextureCubemap) \
    X(maxTexture1DLayered) X(maxTexture2DLayered) X(maxTextureCubemapLayered) X(maxSurface1D) X(maxSurface2D) \
    X(maxSurface3D) X(maxSurface1DLayered) X(maxSurface2DLayered) X(maxSurfaceCubemap) \
    X(maxSurfaceCubemapLayered) X(surfaceAlignment) X(concurrentKernels) X(ECCEnabled) X(pciBusID) \
    X(pciDeviceID) X(pciDomainID) X(tccDriver) X(asyncEngineCount) X(unifiedAddressing) X(memoryBusWidth) \
    X(l2CacheSize) X(persistingL2CacheMaxSize) X(maxThreadsPerMultiProcessor) X(streamPrioritiesSupported) \
    X(globalL1CacheSupported) X(localL1CacheSupported) X(sharedMemPerMultiprocessor) X(regsPerMultiprocessor) \
    X(managedMemory) X(isMultiGpuBoard) X(multiGpuBoardGroupID) X(hostNativeAtomicSupported) \
    X(pageableMemoryAccess) X(concurrentManagedAccess) X(computePreemptionSupported) \
    X(canUseHostPointerForRegisteredMem) X(cooperativeLaunch) X(sharedMemPerBlockOptin) \
    X(pageableMemoryAccessUsesHostPageTables) X(directManagedMemAccessFromHost) X(maxBlocksPerMultiProcessor) \
    X(accessPolicyMaxWindowSize) X(reservedSharedMemPerBlock) X(hostRegisterSupported) \
    X(sparseCudaArraySupported) X(hostRegisterReadOnlySupported) X(timelineSemaphoreInteropSupported) \
    X(memoryPoolsSupported) X(gpuDirectRDMASupported) X(gpuDirectRDMAFlushWritesOptions) \
    X(gpuDirectRDMAWritesOrdering) X(memoryPoolSupportedHandleTypes) X(deferredMappingCudaArraySupported) \
    X(ipcEventSupported) X(clusterLaunch) X(unifiedFunctionPointers)

#define COPY(f) \
    _Static_assert(sizeof q.f == sizeof p->f, #f); \
    memcpy(&q.f, &p->f, sizeof q.f);

/* The fields CUDA 13 removed and their cudaDeviceAttr codes. */
#define REMOVED_FIELDS(X) \
    X(clockRate, 13) X(deviceOverlap, 15) X(kernelExecTimeoutEnabled, 17) X(computeMode, 20) \
    X(maxTexture1DLinear, 69) X(memoryClockRate, 36) X(singleToDoublePrecisionPerfRatio, 87)

#define READ(f, code) \
    if ((e = attr(&q.f, code, dev)) != 0) return e;

int emu_props12(void *out, const struct emu_device_prop *p, int (*attr)(int *value, int code, int dev), int dev)
{
    struct emu_device_prop12 q;
    int e;
    memset(&q, 0, sizeof q);
    COMMON_FIELDS(COPY)
    REMOVED_FIELDS(READ)
    q.cooperativeMultiDeviceLaunch = 0;     /* attribute 96, gone in CUDA 13: the emulator launches no kernels */
    memcpy(out, &q, sizeof q);
    return 0;
}
