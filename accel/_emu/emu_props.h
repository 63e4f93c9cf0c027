/* cudaDeviceProp in the CUDA 13 layout, field by field: what emu_props.c fills, and what the
 * libcudart.so.12 stand-in (emu_props12.c) converts to the CUDA 12 layout. */
#ifndef ACCEL_EMU_PROPS_H
#define ACCEL_EMU_PROPS_H

#include <stddef.h>

struct emu_device_prop {            /* cudaDeviceProp, CUDA 13.0 */
    char name[256];
    unsigned char uuid[16];
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem, sharedMemPerBlock;
    int regsPerBlock, warpSize;
    size_t memPitch;
    int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    size_t totalConstMem;
    int major, minor;
    size_t textureAlignment, texturePitchAlignment;
    int multiProcessorCount, integrated, canMapHostMemory;
    int maxTexture1D, maxTexture1DMipmap, maxTexture2D[2], maxTexture2DMipmap[2];
    int maxTexture2DLinear[3], maxTexture2DGather[2], maxTexture3D[3], maxTexture3DAlt[3];
    int maxTextureCubemap, maxTexture1DLayered[2], maxTexture2DLayered[3];
    int maxTextureCubemapLayered[2], maxSurface1D, maxSurface2D[2], maxSurface3D[3];
    int maxSurface1DLayered[2], maxSurface2DLayered[3], maxSurfaceCubemap;
    int maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver;
    int asyncEngineCount, unifiedAddressing, memoryBusWidth, l2CacheSize;
    int persistingL2CacheMaxSize, maxThreadsPerMultiProcessor, streamPrioritiesSupported;
    int globalL1CacheSupported, localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID;
    int hostNativeAtomicSupported, pageableMemoryAccess, concurrentManagedAccess;
    int computePreemptionSupported, canUseHostPointerForRegisteredMem, cooperativeLaunch;
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
    int unifiedFunctionPointers, deviceNumaConfig, deviceNumaId, mpsEnabled, hostNumaId;
    unsigned int gpuPciDeviceID, gpuPciSubsystemID;
    int hostNumaMultinodeIpcSupported;
    int reserved[56];
};

/* The offsets torch and accel read, and the size, pinned to the CUDA 13 headers' values. */
_Static_assert(offsetof(struct emu_device_prop, uuid) == 256, "uuid");
_Static_assert(offsetof(struct emu_device_prop, totalGlobalMem) == 288, "totalGlobalMem");
_Static_assert(offsetof(struct emu_device_prop, major) == 360, "major");
_Static_assert(offsetof(struct emu_device_prop, multiProcessorCount) == 384, "multiProcessorCount");
_Static_assert(sizeof(struct emu_device_prop) == 1008, "sizeof(cudaDeviceProp)");

#endif
