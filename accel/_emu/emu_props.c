/* cudaDeviceProp of an emulated device, the whole struct in the CUDA 13 layout (what
 * cudaGetDeviceProperties fills; torch reads major/minor and more at their CUDA 13 offsets).  The
 * layout is declared field by field in emu_props.h; every value comes from the device attribute table
 * (emu_tables.c) so cudaDeviceGetAttribute and the properties always agree. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "emu_internal.h"
#include "emu_props.h"

static int attr(int code, int phys)
{
    int v = 0;
    return emu_device_attr(code, phys, &v) ? 0 : v;
}

#define ATTRS(field, ...) do { \
        static const int codes_[] = {__VA_ARGS__}; \
        for (size_t i_ = 0; i_ < sizeof codes_ / sizeof *codes_; i_++) \
            (field)[i_] = attr(codes_[i_], phys); \
    } while (0)

/* "Emulated <the profile's board name> (accel emu)": what CUDA and NVML both call the device. */
void emu_device_name(int phys, char *out, size_t len)
{
    snprintf(out, len, "Emulated %s (accel emu)", emu_profile(phys)->name);
}

void emu_fill_props(void *out, int phys, size_t total)
{
    struct emu_device_prop p;
    memset(&p, 0, sizeof p);
    emu_device_name(phys, p.name, sizeof p.name);
    emu_uuid(phys, p.uuid);
    p.totalGlobalMem = total;
    p.sharedMemPerBlock = (size_t)attr(8, phys);
    p.regsPerBlock = attr(12, phys);
    p.warpSize = attr(10, phys);
    p.memPitch = (size_t)attr(11, phys);
    p.maxThreadsPerBlock = attr(1, phys);
    ATTRS(p.maxThreadsDim, 2, 3, 4);
    ATTRS(p.maxGridSize, 5, 6, 7);
    p.totalConstMem = (size_t)attr(9, phys);
    p.major = attr(75, phys);
    p.minor = attr(76, phys);
    p.textureAlignment = (size_t)attr(14, phys);
    p.texturePitchAlignment = (size_t)attr(51, phys);
    p.multiProcessorCount = attr(16, phys);
    p.integrated = attr(18, phys);
    p.canMapHostMemory = attr(19, phys);
    p.maxTexture1D = attr(21, phys);
    p.maxTexture1DMipmap = attr(77, phys);
    ATTRS(p.maxTexture2D, 22, 23);
    ATTRS(p.maxTexture2DMipmap, 73, 74);
    ATTRS(p.maxTexture2DLinear, 70, 71, 72);
    ATTRS(p.maxTexture2DGather, 45, 46);
    ATTRS(p.maxTexture3D, 24, 25, 26);
    ATTRS(p.maxTexture3DAlt, 47, 48, 49);
    p.maxTextureCubemap = attr(52, phys);
    ATTRS(p.maxTexture1DLayered, 42, 43);
    ATTRS(p.maxTexture2DLayered, 27, 28, 29);
    ATTRS(p.maxTextureCubemapLayered, 53, 54);
    p.maxSurface1D = attr(55, phys);
    ATTRS(p.maxSurface2D, 56, 57);
    ATTRS(p.maxSurface3D, 58, 59, 60);
    ATTRS(p.maxSurface1DLayered, 61, 62);
    ATTRS(p.maxSurface2DLayered, 63, 64, 65);
    p.maxSurfaceCubemap = attr(66, phys);
    ATTRS(p.maxSurfaceCubemapLayered, 67, 68);
    p.surfaceAlignment = (size_t)attr(30, phys);
    p.concurrentKernels = attr(31, phys);
    p.ECCEnabled = attr(32, phys);
    p.pciBusID = attr(33, phys);
    p.pciDeviceID = attr(34, phys);
    p.pciDomainID = attr(50, phys);
    p.tccDriver = attr(35, phys);
    p.asyncEngineCount = attr(40, phys);
    p.unifiedAddressing = attr(41, phys);
    p.memoryBusWidth = attr(37, phys);
    p.l2CacheSize = attr(38, phys);
    p.persistingL2CacheMaxSize = attr(108, phys);
    p.maxThreadsPerMultiProcessor = attr(39, phys);
    p.streamPrioritiesSupported = attr(78, phys);
    p.globalL1CacheSupported = attr(79, phys);
    p.localL1CacheSupported = attr(80, phys);
    p.sharedMemPerMultiprocessor = (size_t)attr(81, phys);
    p.regsPerMultiprocessor = attr(82, phys);
    p.managedMemory = attr(83, phys);
    p.isMultiGpuBoard = attr(84, phys);
    p.multiGpuBoardGroupID = attr(85, phys);
    p.hostNativeAtomicSupported = attr(86, phys);
    p.pageableMemoryAccess = attr(88, phys);
    p.concurrentManagedAccess = attr(89, phys);
    p.computePreemptionSupported = attr(90, phys);
    p.canUseHostPointerForRegisteredMem = attr(91, phys);
    p.cooperativeLaunch = attr(95, phys);
    p.sharedMemPerBlockOptin = (size_t)attr(97, phys);
    p.pageableMemoryAccessUsesHostPageTables = attr(100, phys);
    p.directManagedMemAccessFromHost = attr(101, phys);
    p.maxBlocksPerMultiProcessor = attr(106, phys);
    p.accessPolicyMaxWindowSize = attr(109, phys);
    p.reservedSharedMemPerBlock = (size_t)attr(111, phys);
    p.hostRegisterSupported = attr(99, phys);
    p.sparseCudaArraySupported = attr(112, phys);
    p.hostRegisterReadOnlySupported = attr(113, phys);
    p.timelineSemaphoreInteropSupported = attr(114, phys);
    p.memoryPoolsSupported = attr(115, phys);
    p.gpuDirectRDMASupported = attr(116, phys);
    p.gpuDirectRDMAFlushWritesOptions = (unsigned)attr(117, phys);
    p.gpuDirectRDMAWritesOrdering = attr(118, phys);
    p.memoryPoolSupportedHandleTypes = (unsigned)attr(119, phys);
    p.deferredMappingCudaArraySupported = attr(121, phys);
    p.ipcEventSupported = attr(125, phys);
    p.clusterLaunch = attr(120, phys);
    p.deviceNumaConfig = attr(130, phys);
    p.deviceNumaId = attr(131, phys);
    p.mpsEnabled = attr(133, phys);
    p.hostNumaId = attr(134, phys);
    p.gpuPciDeviceID = (unsigned)attr(139, phys);
    p.gpuPciSubsystemID = (unsigned)attr(140, phys);
    memcpy(out, &p, sizeof p);
}
