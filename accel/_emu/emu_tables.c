/* Static tables of the emulated CUDA runtime: error names/texts and the
 * attributes of the emulated device.  Kept apart from the runtime's files
 * (emu_core.c and its neighbours), which hold the behaviour. */
#include <stddef.h>

#include "emu_tables.h"

/* ------------------------------------------------------------------ errors */

/* Names and texts as reported by libcudart 13.0. */
static const errdesc_t rt_errors[] = {
    {0, "cudaSuccess", "no error"},
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {2, "cudaErrorMemoryAllocation", "out of memory"},
    {3, "cudaErrorInitializationError", "initialization error"},
    {4, "cudaErrorCudartUnloading", "driver shutting down"},
    {5, "cudaErrorProfilerDisabled", "profiler disabled while using external profiling tool"},
    {6, "cudaErrorProfilerNotInitialized", "profiler not initialized: call cudaProfilerInitialize()"},
    {7, "cudaErrorProfilerAlreadyStarted", "profiler already started"},
    {8, "cudaErrorProfilerAlreadyStopped", "profiler already stopped"},
    {9, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {12, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {13, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {16, "cudaErrorInvalidHostPointer", "invalid host pointer"},
    {17, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {18, "cudaErrorInvalidTexture", "invalid texture reference"},
    {19, "cudaErrorInvalidTextureBinding", "texture is not bound to a pointer"},
    {20, "cudaErrorInvalidChannelDescriptor", "invalid channel descriptor"},
    {21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {22, "cudaErrorAddressOfConstant", "invalid address of constant"},
    {23, "cudaErrorTextureFetchFailed", "fetch from texture failed"},
    {24, "cudaErrorTextureNotBound", "cannot fetch from a texture that is not bound"},
    {25, "cudaErrorSynchronizationError", "incorrect use of __syncthreads()"},
    {26, "cudaErrorInvalidFilterSetting", "linear filtering not supported for non-float type"},
    {27, "cudaErrorInvalidNormSetting", "read as normalized float not supported for data type"},
    {28, "cudaErrorMixedDeviceExecution", "device emulation mode and device execution mode cannot be mixed"},
    {31, "cudaErrorNotYetImplemented", "feature not yet implemented"},
    {32, "cudaErrorMemoryValueTooLarge", "memory size or pointer value too large to fit in 32 bit"},
    {34, "cudaErrorStubLibrary", "CUDA driver is a stub library"},
    {35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {36, "cudaErrorCallRequiresNewerDriver", "API call is not supported in the installed CUDA driver"},
    {37, "cudaErrorInvalidSurface", "invalid surface reference"},
    {43, "cudaErrorDuplicateVariableName", "duplicate global variable looked up by string name"},
    {44, "cudaErrorDuplicateTextureName", "duplicate texture looked up by string name"},
    {45, "cudaErrorDuplicateSurfaceName", "duplicate surface looked up by string name"},
    {46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"},
    {49, "cudaErrorIncompatibleDriverContext", "incompatible driver context"},
    {52, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {53, "cudaErrorPriorLaunchFailure", "unspecified launch failure in prior launch"},
    {65, "cudaErrorLaunchMaxDepthExceeded", "launch would exceed maximum depth of nested launches"},
    {66, "cudaErrorLaunchFileScopedTex", "launch failed because kernel uses unsupported, file-scoped textures (texture objects are supported)"},
    {67, "cudaErrorLaunchFileScopedSurf", "launch failed because kernel uses unsupported, file-scoped surfaces (surface objects are supported)"},
    {68, "cudaErrorSyncDepthExceeded", "cudaDeviceSynchronize failed because caller's grid depth exceeds cudaLimitDevRuntimeSyncDepth"},
    {69, "cudaErrorLaunchPendingCountExceeded", "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount"},
    {98, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {102, "cudaErrorDeviceNotLicensed", "device doesn't have valid Grid license"},
    {103, "cudaErrorSoftwareValidityNotEstablished", "integrity checks failed"},
    {127, "cudaErrorStartupFailure", "startup failure in cuda runtime"},
    {200, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {201, "cudaErrorDeviceUninitialized", "invalid device context"},
    {205, "cudaErrorMapBufferObjectFailed", "mapping of buffer object failed"},
    {206, "cudaErrorUnmapBufferObjectFailed", "unmapping of buffer object failed"},
    {207, "cudaErrorArrayIsMapped", "array is mapped"},
    {208, "cudaErrorAlreadyMapped", "resource already mapped"},
    {209, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device"},
    {210, "cudaErrorAlreadyAcquired", "resource already acquired"},
    {211, "cudaErrorNotMapped", "resource not mapped"},
    {212, "cudaErrorNotMappedAsArray", "resource not mapped as array"},
    {213, "cudaErrorNotMappedAsPointer", "resource not mapped as pointer"},
    {214, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"},
    {215, "cudaErrorUnsupportedLimit", "limit is not supported on this architecture"},
    {216, "cudaErrorDeviceAlreadyInUse", "exclusive-thread device already in use by a different thread"},
    {217, "cudaErrorPeerAccessUnsupported", "peer access is not supported between these two devices"},
    {218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed"},
    {219, "cudaErrorInvalidGraphicsContext", "invalid OpenGL or DirectX context"},
    {220, "cudaErrorNvlinkUncorrectable", "uncorrectable NVLink error detected during the execution"},
    {221, "cudaErrorJitCompilerNotFound", "PTX JIT compiler library not found"},
    {222, "cudaErrorUnsupportedPtxVersion", "the provided PTX was compiled with an unsupported toolchain."},
    {223, "cudaErrorJitCompilationDisabled", "PTX JIT compilation was disabled"},
    {224, "cudaErrorUnsupportedExecAffinity", "the provided execution affinity is not supported"},
    {225, "cudaErrorUnsupportedDevSideSync", "the provided PTX contains unsupported call to cudaDeviceSynchronize"},
    {226, "cudaErrorContained", "Invalid access of peer GPU memory over nvlink or a hardware error"},
    {300, "cudaErrorInvalidSource", "device kernel image is invalid"},
    {301, "cudaErrorFileNotFound", "file not found"},
    {302, "cudaErrorSharedObjectSymbolNotFound", "shared object symbol not found"},
    {303, "cudaErrorSharedObjectInitFailed", "shared object initialization failed"},
    {304, "cudaErrorOperatingSystem", "OS call failed or operation not supported on this OS"},
    {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {401, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {402, "cudaErrorLossyQuery", "attempted introspection would be semantically lossy"},
    {500, "cudaErrorSymbolNotFound", "named symbol not found"},
    {600, "cudaErrorNotReady", "device not ready"},
    {700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {702, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {703, "cudaErrorLaunchIncompatibleTexturing", "launch uses incompatible texturing mode"},
    {704, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {705, "cudaErrorPeerAccessNotEnabled", "peer access has not been enabled"},
    {708, "cudaErrorSetOnActiveProcess", "cannot set while device is active in this process"},
    {709, "cudaErrorContextIsDestroyed", "context is destroyed"},
    {710, "cudaErrorAssert", "device-side assert triggered"},
    {711, "cudaErrorTooManyPeers", "peer mapping resources exhausted"},
    {712, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
    {713, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {714, "cudaErrorHardwareStackError", "hardware stack error"},
    {715, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {716, "cudaErrorMisalignedAddress", "misaligned address"},
    {717, "cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space"},
    {718, "cudaErrorInvalidPc", "invalid program counter"},
    {719, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {720, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"},
    {721, "cudaErrorTensorMemoryLeak", "tensor memory not completely freed"},
    {800, "cudaErrorNotPermitted", "operation not permitted"},
    {801, "cudaErrorNotSupported", "operation not supported"},
    {802, "cudaErrorSystemNotReady", "system not yet initialized"},
    {803, "cudaErrorSystemDriverMismatch", "system has unsupported display driver / cuda driver combination"},
    {804, "cudaErrorCompatNotSupportedOnDevice", "forward compatibility was attempted on non supported HW"},
    {805, "cudaErrorMpsConnectionFailed", "MPS client failed to connect to the MPS control daemon or the MPS server"},
    {806, "cudaErrorMpsRpcFailure", "the remote procedural call between the MPS server and the MPS client failed"},
    {807, "cudaErrorMpsServerNotReady", "MPS server is not ready to accept new MPS client requests"},
    {808, "cudaErrorMpsMaxClientsReached", "the hardware resources required to create MPS client have been exhausted"},
    {809, "cudaErrorMpsMaxConnectionsReached", "the hardware resources required to support device connections have been exhausted"},
    {810, "cudaErrorMpsClientTerminated", "the MPS client has been terminated by the server"},
    {811, "cudaErrorCdpNotSupported", "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it"},
    {812, "cudaErrorCdpVersionMismatch", "unsupported interaction between different versions of CUDA Dynamic Parallelism"},
    {900, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {901, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {902, "cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"},
    {903, "cudaErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began"},
    {904, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {905, "cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"},
    {906, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
    {907, "cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"},
    {908, "cudaErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread"},
    {909, "cudaErrorTimeout", "wait operation timed out"},
    {910, "cudaErrorGraphExecUpdateFailure", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
    {911, "cudaErrorExternalDevice", "an async error has occured in external entity outside of CUDA"},
    {912, "cudaErrorInvalidClusterSize", "a kernel launch error has occurred due to cluster misconfiguration"},
    {913, "cudaErrorFunctionNotLoaded", "the function handle is not loaded when calling an API that requires a loaded function"},
    {914, "cudaErrorInvalidResourceType", "one or more resources passed in are not valid resource types for the operation"},
    {915, "cudaErrorInvalidResourceConfiguration", "one or more resources are insufficient or non-applicable for the operation"},
    {999, "cudaErrorUnknown", "unknown error"},
};

static const errdesc_t drv_errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "primary context active"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", "a kernel launch error has occurred due to cluster misconfiguration"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const errdesc_t *find_err(const errdesc_t *tab, size_t n, int code)
{
    for (size_t i = 0; i < n; i++)
        if (tab[i].code == code) return &tab[i];
    return NULL;
}

/* ----------------------------------------------------- device description */

int emu_pci_bus(int phys) { return (0x18 + 0x10 * phys) & 0xff; }

/* Attribute values of physical device phys, keyed by cudaDeviceAttr: those that differ between boards
 * from its profile (emu_profiles.c), the rest common to every board of compute capability 7.5 and up. */
int emu_device_attr(int attr, int phys, int *v)
{
    const emu_profile_t *p = emu_profile(phys);
    int hopper = p->major >= 9, ampere = p->major >= 8;
    switch (attr) {
    case 1: *v = 1024; break;                     /* MaxThreadsPerBlock */
    case 2: case 3: *v = 1024; break;            /* MaxBlockDimX/Y */
    case 4: *v = 64; break;
    case 5: *v = 2147483647; break;               /* MaxGridDimX */
    case 6: case 7: *v = 65535; break;
    case 8: *v = 49152; break;                    /* MaxSharedMemoryPerBlock */
    case 9: *v = 65536; break;                    /* TotalConstantMemory */
    case 10: *v = 32; break;                      /* WarpSize */
    case 11: *v = 2147483647; break;              /* MaxPitch */
    case 12: *v = 65536; break;                   /* MaxRegistersPerBlock */
    case 13: *v = p->clock_khz; break;            /* ClockRate (kHz) */
    case 14: *v = 512; break;                     /* TextureAlignment */
    case 15: *v = 1; break;                       /* GpuOverlap */
    case 16: *v = p->sms; break;                  /* MultiProcessorCount */
    case 17: *v = 0; break;                       /* KernelExecTimeout */
    case 18: *v = 0; break;                       /* Integrated */
    case 19: *v = 1; break;                       /* CanMapHostMemory */
    case 20: *v = 0; break;                       /* ComputeMode default */
    case 21: *v = 131072; break;
    case 22: *v = 131072; break;
    case 23: *v = 65536; break;
    case 24: case 25: case 26: *v = 16384; break;
    case 27: *v = 32768; break;
    case 28: *v = 32768; break;
    case 29: *v = 2048; break;
    case 30: *v = 512; break;                     /* SurfaceAlignment */
    case 31: *v = 1; break;                       /* ConcurrentKernels */
    case 32: *v = 1; break;                       /* EccEnabled */
    case 33: *v = emu_pci_bus(phys); break;           /* PciBusId */
    case 34: *v = 0; break;                       /* PciDeviceId */
    case 35: *v = 0; break;                       /* TccDriver */
    case 36: *v = p->mem_clock_khz; break;        /* MemoryClockRate (kHz) */
    case 37: *v = p->bus_width; break;            /* GlobalMemoryBusWidth */
    case 38: *v = p->l2; break;                   /* L2CacheSize */
    case 39: *v = p->threads_per_sm; break;       /* MaxThreadsPerMultiProcessor */
    case 40: *v = p->copy_engines; break;         /* AsyncEngineCount */
    case 41: *v = 1; break;                       /* UnifiedAddressing */
    case 42: *v = 32768; break;
    case 43: *v = 2048; break;
    case 45: case 46: *v = 32768; break;
    case 47: case 48: *v = 8192; break;
    case 49: *v = 32768; break;
    case 50: *v = 0; break;                       /* PciDomainId */
    case 51: *v = 32; break;                      /* TexturePitchAlignment */
    case 52: case 53: *v = 32768; break;
    case 54: *v = 2046; break;
    case 55: case 56: *v = 32768; break;
    case 57: *v = 65536; break;
    case 58: case 59: case 60: *v = 16384; break;
    case 61: *v = 32768; break;
    case 62: *v = 2048; break;
    case 63: case 64: *v = 32768; break;
    case 65: *v = 2048; break;
    case 66: case 67: *v = 32768; break;
    case 68: *v = 2046; break;
    case 69: *v = 268435456; break;
    case 70: case 71: *v = 131072; break;
    case 72: *v = 2097120; break;
    case 73: *v = 32768; break;
    case 74: *v = 32768; break;
    case 75: *v = p->major; break;                /* ComputeCapabilityMajor */
    case 76: *v = p->minor; break;                /* ComputeCapabilityMinor */
    case 77: *v = 32768; break;
    case 78: *v = 1; break;                       /* StreamPrioritiesSupported */
    case 79: case 80: *v = 1; break;              /* Global/Local L1 cache */
    case 81: *v = p->smem_per_sm; break;          /* MaxSharedMemoryPerMultiprocessor */
    case 82: *v = 65536; break;                   /* MaxRegistersPerMultiprocessor */
    case 83: *v = 1; break;                       /* ManagedMemory */
    case 84: *v = 0; break;                       /* IsMultiGpuBoard */
    case 85: *v = phys; break;                    /* MultiGpuBoardGroupID */
    case 86: *v = 0; break;                       /* HostNativeAtomicSupported */
    case 87: *v = p->fp64_ratio; break;           /* SingleToDoublePrecisionPerfRatio */
    case 88: *v = 0; break;                       /* PageableMemoryAccess */
    case 89: *v = 1; break;                       /* ConcurrentManagedAccess */
    case 90: *v = 1; break;                       /* ComputePreemptionSupported */
    case 91: *v = 1; break;                       /* CanUseHostPointerForRegisteredMem */
    case 95: *v = 1; break;                       /* CooperativeLaunch */
    case 97: *v = p->smem_optin; break;           /* MaxSharedMemoryPerBlockOptin */
    case 98: *v = 0; break;                       /* CanFlushRemoteWrites */
    case 99: *v = 1; break;                       /* HostRegisterSupported */
    case 100: *v = 0; break;                      /* PageableMemoryAccessUsesHostPageTables */
    case 101: *v = 0; break;                      /* DirectManagedMemAccessFromHost */
    case 106: *v = p->blocks_per_sm; break;       /* MaxBlocksPerMultiprocessor */
    case 108: *v = p->persisting_l2; break;       /* MaxPersistingL2CacheSize */
    case 109: *v = ampere ? 134213632 : 0; break; /* MaxAccessPolicyWindowSize (8.0+) */
    case 111: *v = p->smem_reserved; break;       /* ReservedSharedMemoryPerBlock */
    case 112: case 113: case 114: case 115: *v = 1; break;
    case 116: *v = 1; break;                      /* GPUDirectRDMASupported */
    case 117: *v = 1; break;
    case 118: *v = 0; break;
    case 119: *v = 9; break;                      /* MemoryPoolSupportedHandleTypes */
    case 120: *v = hopper; break;                 /* ClusterLaunch (9.0+) */
    case 121: *v = 1; break;
    case 125: *v = 1; break;                      /* IpcEventSupport */
    case 126: *v = hopper ? 4 : 1; break;         /* MemSyncDomainCount */
    case 130: *v = 0; break;                      /* NumaConfig */
    case 131: *v = -1; break;                     /* NumaId */
    case 133: *v = 0; break;                      /* MpsEnabled */
    case 134: *v = 0; break;                      /* HostNumaId: the host's one NUMA node */
    case 135: case 138: *v = 0; break;
    case 139: *v = (int)(p->pci_device << 16 | 0x10de); break;     /* GpuPciDeviceId */
    case 140: *v = (int)(p->pci_subsystem << 16 | 0x10de); break;  /* GpuPciSubsystemId */
    case 142: *v = 1; break;                      /* HostNumaMemoryPoolsSupported (node 0) */
    case 143: *v = 0; break;                      /* HostNumaMultinodeIpcSupported */
    case 144: *v = 1; break;                      /* HostMemoryPoolsSupported */
    case 147: *v = 0; break;
    default: return -1;
    }
    return 0;
}

const errdesc_t *emu_rt_error(int code)
{
    return find_err(rt_errors, sizeof rt_errors / sizeof *rt_errors, code);
}

const errdesc_t *emu_drv_error(int code)
{
    return find_err(drv_errors, sizeof drv_errors / sizeof *drv_errors, code);
}
