/* The libcudart.so.12 stand-in (torch cu12 builds): every runtime symbol torch 2.8's cu12 libraries
 * import (accel/_emu/torch_cudart12_imports.txt), plus a few device/stream calls C programs use,
 * each with the version node libcudart.so.12.
 *
 * It holds no state: it depends on (DT_NEEDED, found through $ORIGIN) the libcudart.so.13 stand-in,
 * which embeds the emulator, so devices, streams and events made through either library -- or
 * through accel, or the libcuda.so.1 stand-in -- are the same objects.
 *  - Entry points whose ABI CUDA 13 kept (and the unsupported stubs, which ignore their arguments)
 *    are a single jump to the same name at version libcudart.so.13: no wrapper, no signature to
 *    restate, the callee's own argument checks, last-error and fault-injection behaviour.
 *  - The ones whose ABI differs are converted here: cudaGetDeviceProperties_v2 (the CUDA 12
 *    cudaDeviceProp layout, emu_props12.c), cudaPointerGetAttributes (CUDA 13's struct is 64 bytes
 *    longer: only CUDA 12's 24 are written), cudaStreamGetCaptureInfo_v2 (no edge data),
 *    cudaGetDriverEntryPoint (gone in 13: driver entry points at the CUDA 12 ABI version), and
 *    cudaRuntimeGetVersion, which reports EMU_CUDA12_VERSION.  cudaDriverGetVersion reports the
 *    emulated driver's 13000, as a CUDA 13 driver does under a CUDA 12 runtime. */
#include <stddef.h>
#include <string.h>

#include "emu_props.h"
#include "emu_props12.h"

#define EXPORT __attribute__((visibility("default")))
#define EMU_CUDA12_VERSION 12080    /* CUDA 12.8: the runtime PyPI's torch 2.8 cu12 wheel is built with */

typedef int cudaError_t;

/* The libcudart.so.13 stand-in's entry point `name`, called as name##_13. */
#define CUDA13(ret, name, params) \
    ret name##_13 params; \
    __asm__(".symver " #name "_13, " #name "@libcudart.so.13");

CUDA13(cudaError_t, cudaRuntimeGetVersion, (int *))
CUDA13(cudaError_t, cudaGetDeviceProperties, (void *, int))
CUDA13(cudaError_t, cudaDeviceGetAttribute, (int *, int, int))
CUDA13(cudaError_t, cudaPointerGetAttributes, (void *, const void *))
CUDA13(cudaError_t, cudaStreamGetCaptureInfo, (void *, int *, unsigned long long *, void **, const void **,
                                               const void **, size_t *))
CUDA13(cudaError_t, cudaGetDriverEntryPointByVersion, (const char *, void **, unsigned int, unsigned long long,
                                                       int *))

/* `name` at version libcudart.so.12 jumps to `name` at version libcudart.so.13 (through the GOT, so
 * the dynamic linker binds it like any import).  With control-flow protection on, each starts with the
 * landing pad an indirect call needs, as the compiler's own functions do. */
#if defined(__x86_64__)
#if defined(__CET__)
#define LANDING_PAD "    endbr64\n"
#else
#define LANDING_PAD ""
#endif
#define FUNCTION_TYPE "@function"
#define JUMP(name) "    jmp *" #name "_13@GOTPCREL(%rip)\n"
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define LANDING_PAD "    hint 34\n"     /* bti c */
#else
#define LANDING_PAD ""
#endif
#define FUNCTION_TYPE "%function"
#define JUMP(name) \
    "    adrp x16, :got:" #name "_13\n" \
    "    ldr x16, [x16, :got_lo12:" #name "_13]\n" \
    "    br x16\n"
#else
#error "the libcudart.so.12 stand-in's forwarders are written for x86_64 and aarch64"
#endif
#define FORWARD(name) __asm__( \
    ".symver " #name "_13, " #name "@libcudart.so.13\n" \
    ".pushsection .text\n.globl " #name "\n.type " #name ", " FUNCTION_TYPE "\n.p2align 4\n" #name ":\n" \
    LANDING_PAD \
    JUMP(name) \
    ".size " #name ", .-" #name "\n.popsection\n");

/* load-time hooks and launch configuration */
FORWARD(__cudaInitModule) FORWARD(__cudaPopCallConfiguration) FORWARD(__cudaPushCallConfiguration)
FORWARD(__cudaRegisterFatBinary) FORWARD(__cudaRegisterFatBinaryEnd) FORWARD(__cudaRegisterFunction)
FORWARD(__cudaRegisterVar) FORWARD(__cudaUnregisterFatBinary)
/* devices, versions, errors */
FORWARD(cudaDeviceCanAccessPeer) FORWARD(cudaDeviceEnablePeerAccess) FORWARD(cudaDeviceGetAttribute)
FORWARD(cudaDeviceGetPCIBusId) FORWARD(cudaDeviceGetStreamPriorityRange) FORWARD(cudaDeviceSynchronize)
FORWARD(cudaDriverGetVersion) FORWARD(cudaGetDevice) FORWARD(cudaGetDeviceCount) FORWARD(cudaSetDevice)
FORWARD(cudaGetDriverEntryPointByVersion) FORWARD(cudaGetErrorName) FORWARD(cudaGetErrorString)
FORWARD(cudaGetLastError) FORWARD(cudaPeekAtLastError) FORWARD(cudaProfilerStart) FORWARD(cudaProfilerStop)
/* streams */
FORWARD(cudaStreamCreate) FORWARD(cudaStreamCreateWithFlags) FORWARD(cudaStreamCreateWithPriority)
FORWARD(cudaStreamDestroy) FORWARD(cudaStreamQuery) FORWARD(cudaStreamSynchronize) FORWARD(cudaStreamWaitEvent)
FORWARD(cudaStreamGetPriority) FORWARD(cudaStreamGetFlags) FORWARD(cudaStreamGetId) FORWARD(cudaStreamGetDevice)
FORWARD(cudaStreamAddCallback) FORWARD(cudaLaunchHostFunc) FORWARD(cudaStreamIsCapturing)
FORWARD(cudaThreadExchangeStreamCaptureMode)
/* events */
FORWARD(cudaEventCreate) FORWARD(cudaEventCreateWithFlags) FORWARD(cudaEventDestroy) FORWARD(cudaEventElapsedTime)
FORWARD(cudaEventQuery) FORWARD(cudaEventRecord) FORWARD(cudaEventRecordWithFlags) FORWARD(cudaEventSynchronize)
FORWARD(cudaIpcGetEventHandle) FORWARD(cudaIpcOpenEventHandle)
/* memory */
FORWARD(cudaMalloc) FORWARD(cudaFree) FORWARD(cudaMemGetInfo) FORWARD(cudaMallocAsync) FORWARD(cudaFreeAsync)
FORWARD(cudaDeviceGetDefaultMemPool) FORWARD(cudaDeviceGetMemPool) FORWARD(cudaMemPoolGetAttribute)
FORWARD(cudaMemPoolSetAttribute) FORWARD(cudaMemPoolTrimTo) FORWARD(cudaHostAlloc) FORWARD(cudaFreeHost)
FORWARD(cudaHostRegister) FORWARD(cudaHostUnregister) FORWARD(cudaMemcpyAsync) FORWARD(cudaMemsetAsync)
/* not supported by the emulator (the 13 stand-in's stubs: cudaErrorNotSupported, traced by name) */
FORWARD(cudaLaunchKernel) FORWARD(cudaLaunchKernelExC) FORWARD(cudaFuncGetAttributes) FORWARD(cudaFuncSetAttribute)
FORWARD(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)
/* stream capture and graphs (emu_graph.c) */
FORWARD(cudaStreamBeginCapture) FORWARD(cudaStreamEndCapture) FORWARD(cudaGraphDestroy) FORWARD(cudaGraphExecDestroy)
FORWARD(cudaGraphGetNodes) FORWARD(cudaGraphInstantiate) FORWARD(cudaGraphInstantiateWithFlags)
FORWARD(cudaGraphLaunch) FORWARD(cudaGraphDebugDotPrint)
/* memory (emu_memory.c) */
FORWARD(cudaMemcpy) FORWARD(cudaMemset) FORWARD(cudaMemcpy2DAsync) FORWARD(cudaMemcpyPeerAsync)
FORWARD(cudaMemPoolSetAccess) FORWARD(cudaIpcGetMemHandle) FORWARD(cudaIpcOpenMemHandle) FORWARD(cudaIpcCloseMemHandle)

/* ------------------------------------------------------- CUDA 12 ABI */

EXPORT cudaError_t cudaRuntimeGetVersion(int *version)
{
    cudaError_t e = cudaRuntimeGetVersion_13(version);
    if (!e) *version = EMU_CUDA12_VERSION;
    return e;
}

/* The CUDA 13 properties, converted (a failed attribute query fails the call, as the last error it set). */
EXPORT cudaError_t cudaGetDeviceProperties_v2(void *prop, int dev)
{
    struct emu_device_prop p;
    cudaError_t e = cudaGetDeviceProperties_13(prop ? &p : NULL, dev);
    return e ? e : emu_props12(prop, &p, cudaDeviceGetAttribute_13, dev);
}

/* CUDA 12's struct cudaPointerAttributes: the first 24 bytes of CUDA 13's (type, device, devicePointer,
 * hostPointer); CUDA 13 appended 64 reserved bytes that a CUDA 12 caller has no room for. */
EXPORT cudaError_t cudaPointerGetAttributes(void *at, const void *p)
{
    struct { int type, device; void *devicePointer, *hostPointer; long reserved[8]; } a13;
    cudaError_t e = cudaPointerGetAttributes_13(at ? (void *)&a13 : NULL, p);
    if (!e) memcpy(at, &a13, offsetof(__typeof__(a13), reserved));
    return e;
}

/* CUDA 12's signature: no edge data (CUDA 13's cudaStreamGetCaptureInfo is 12's _v3). */
EXPORT cudaError_t cudaStreamGetCaptureInfo_v2(void *stream, int *status, unsigned long long *id, void **graph,
                                               const void **deps, size_t *ndeps)
{
    return cudaStreamGetCaptureInfo_13(stream, status, id, graph, deps, NULL, ndeps);
}

/* The driver entry point at the ABI of the runtime's own CUDA version, as CUDA 12 documents it. */
EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags, int *status)
{
    return cudaGetDriverEntryPointByVersion_13(symbol, fn, EMU_CUDA12_VERSION, flags, status);
}
