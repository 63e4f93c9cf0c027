/* The driver API of the libcuda.so.1 stand-in, on the emulator's one state (emu_runtime.h).
 *
 * Every function maps onto the emulated runtime: a primary context is its device, making it
 * current is cudaSetDevice, streams and events are the runtime's handles (CUstream == cudaStream_t,
 * flags and error codes share their values).  Runtime calls made here leave the thread's runtime
 * last error as it was: the driver API never touches it.
 *
 * Contexts: the only contexts are the devices' primary contexts (handle CTX_BASE + 256*ordinal + 0x90,
 * aligned like a real context pointer).
 * Each thread has a context stack (cuCtxPush/Pop/SetCurrent); its top is the runtime's current
 * device (cudaSetDevice replaces it).  A thread with an empty stack sees the primary context of the
 * runtime's current device once that context is active (the runtime made it current), NULL before,
 * as with real CUDA.
 *
 * cuGetProcAddress resolves names in this table only, by name and ABI version; a `_ptsz`/`_ptds`
 * name or the per-thread-default-stream flag gives the variant whose NULL stream is the calling
 * thread's per-thread stream.  Kernel, module and linker entry points return CUDA_ERROR_NOT_SUPPORTED
 * (their first call is logged with ACCEL_EMU_TRACE=1).
 *
 * Fault injection: every entry point that can fail has a hook armed by its exported name
 * (ACCEL_EMU_FAIL="cuStreamCreate:1,...", accelEmuSetFail; EMU_DRIVER_SYMBOLS in emu_internal.h).
 * The armed call fails before it changes anything, with CUDA_ERROR_OUT_OF_MEMORY when it creates a
 * stream or an event and CUDA_ERROR_UNKNOWN otherwise.  A `_ptsz` variant, or the pointer
 * cuGetProcAddress hands out, counts as the entry point it is a variant of; one call counts one
 * driver name (the runtime calls it makes inside count their own runtime names, as before). */
#include <stdint.h>
#include <string.h>

#include "emu_internal.h"
#include "emu_props.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void (*CUhostFn)(void *);

enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2, CUDA_ERROR_NOT_INITIALIZED = 3,
       CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101, CUDA_ERROR_INVALID_CONTEXT = 201,
       CUDA_ERROR_NOT_FOUND = 500, CUDA_ERROR_NOT_SUPPORTED = 801, CUDA_ERROR_UNKNOWN = 999 };

/* The runtime entry points used here (emu_device.c, emu_stream.c, emu_event.c, emu_memory.c). */
int cudaGetDeviceCount(int *);
int cudaGetDevice(int *);
int cudaSetDevice(int);
int cudaDeviceSynchronize(void);
int cudaDeviceGetAttribute(int *, int, int);
int cudaDeviceGetPCIBusId(char *, int, int);
int cudaGetDeviceProperties(void *, int);
int cudaDeviceGetStreamPriorityRange(int *, int *);
int cudaMemGetInfo(size_t *, size_t *);
int cudaStreamCreateWithPriority(void **, unsigned int, int);
int cudaStreamDestroy(void *);
int cudaStreamQuery(void *);
int cudaStreamSynchronize(void *);
int cudaStreamWaitEvent(void *, void *, unsigned int);
int cudaStreamGetPriority(void *, int *);
int cudaStreamGetFlags(void *, unsigned int *);
int cudaStreamGetId(void *, unsigned long long *);
int cudaStreamGetDevice(void *, int *);
int cudaStreamIsCapturing(void *, int *);
int cudaLaunchHostFunc(void *, CUhostFn, void *);
int cudaEventCreateWithFlags(void **, unsigned int);
int cudaEventDestroy(void *);
int cudaEventRecordWithFlags(void *, void *, unsigned int);
int cudaEventQuery(void *);
int cudaEventSynchronize(void *);
int cudaEventElapsedTime(float *, void *, void *);
int accelEmuDeviceCount(void);
CUresult cuInit(unsigned int);
CUresult cuDriverGetVersion(int *);
CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned int *, int *);
CUresult cuGetErrorName(CUresult, const char **);
CUresult cuGetErrorString(CUresult, const char **);

/* A runtime call as the driver makes it: the thread's runtime last error is kept, and the codes
 * the emulated runtime returns have the same values in the driver API. */
#define RT(call) __extension__({ int saved_ = t_last; int r_ = (call); t_last = saved_; r_; })

/* Configuration errors (ACCEL_EMU_* malformed) read as "not initialised", as in emu_core.c. */
#define DRV_INIT() do { if (accelEmuDeviceCount() < 0) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

/* Prologue of every entry point that can fail: the configuration check, then its fault hook. */
#define DRV_ENTER(sym) do { DRV_INIT(); if (EMU_FAULT(sym)) return CUDA_ERROR_UNKNOWN; } while (0)
#define DRV_ENTER_CREATE(sym) do { DRV_INIT(); if (EMU_FAULT(sym)) return CUDA_ERROR_OUT_OF_MEMORY; } while (0)

/* ------------------------------------------------------------------ contexts */

#define CTX_BASE 0x5c0000000000ull
#define CTX_TAG 0x90u
#define CTX_DEPTH 64

static __thread CUcontext t_stack[CTX_DEPTH];
static __thread int t_depth;

static CUcontext primary(int dev) { return (CUcontext)(uintptr_t)(CTX_BASE + ((uint64_t)dev << 8) + CTX_TAG); }

static int ctx_device(CUcontext c)
{
    uint64_t v = (uint64_t)(uintptr_t)c;
    if (v < CTX_BASE || (v & 0xff) != CTX_TAG) return -1;
    uint64_t dev = (v - CTX_BASE) >> 8;
    return dev < (uint64_t)g_ndev ? (int)dev : -1;
}

/* The top of the stack is always the runtime's current device's primary context: the driver makes
 * the runtime follow every change of the top, and cudaSetDevice replaces the top, as in CUDA. */
static CUcontext current_ctx(void)
{
    int dev = 0;
    if (RT(cudaGetDevice(&dev))) return NULL;
    if (t_depth) return t_stack[t_depth - 1] = primary(dev);
    return atomic_load(&g_ctx[dev]) ? primary(dev) : NULL;
}

/* Makes c's device the runtime's current one (c is a valid context or NULL).  The stack changes
 * only once it succeeded, so a refused change leaves the stack and the runtime's device as they were. */
static CUresult follow(CUcontext c)
{
    return c ? RT(cudaSetDevice(ctx_device(c))) : CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    DRV_ENTER(cuDeviceGetCount);
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = g_ndev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    DRV_ENTER(cuDeviceGet);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev)
{
    DRV_ENTER(cuDeviceGetAttribute);
    return RT(cudaDeviceGetAttribute(value, attrib, dev));
}

static CUresult props(CUdevice dev, struct emu_device_prop *buf)
{
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    return RT(cudaGetDeviceProperties(buf, dev));
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    struct emu_device_prop p;
    DRV_ENTER(cuDeviceGetName);
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = props(dev, &p);
    if (r) return r;
    strncpy(name, p.name, (size_t)len - 1);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

static CUresult device_uuid(unsigned char *uuid, CUdevice dev)
{
    struct emu_device_prop p;
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = props(dev, &p);
    if (!r) memcpy(uuid, p.uuid, sizeof p.uuid);
    return r;
}

EXPORT CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev)
{
    DRV_ENTER(cuDeviceGetUuid_v2);
    return device_uuid(uuid, dev);
}

EXPORT CUresult cuDeviceGetUuid(unsigned char *uuid, CUdevice dev)
{
    DRV_ENTER(cuDeviceGetUuid);
    return device_uuid(uuid, dev);
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    struct emu_device_prop p;
    DRV_ENTER(cuDeviceTotalMem_v2);
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = props(dev, &p);
    if (!r) *bytes = p.totalGlobalMem;
    return r;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice dev)
{
    DRV_ENTER(cuDeviceGetPCIBusId);
    return RT(cudaDeviceGetPCIBusId(buf, len, dev));
}

EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    DRV_ENTER(cuDeviceComputeCapability);
    if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = RT(cudaDeviceGetAttribute(major, 75, dev));
    return r ? r : RT(cudaDeviceGetAttribute(minor, 76, dev));
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    DRV_ENTER(cuDevicePrimaryCtxRetain);
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    atomic_store(&g_ctx[dev], 1);
    *ctx = primary(dev);
    return CUDA_SUCCESS;
}

/* The runtime holds its own reference to every primary context it made current, so releasing the
 * driver's references never deactivates one; reset is cudaDeviceReset's driver form and is
 * refused like it (the emulator cannot tear down a device's streams and events under accel). */
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    DRV_ENTER(cuDevicePrimaryCtxRelease_v2);
    return dev < 0 || dev >= g_ndev ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    DRV_ENTER(cuDevicePrimaryCtxSetFlags_v2);
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    return flags ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    DRV_ENTER(cuCtxGetCurrent);
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    *ctx = current_ctx();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    DRV_ENTER(cuCtxSetCurrent);
    if (ctx && ctx_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx) {                     /* pops the top; the context below becomes current */
        CUresult r = t_depth > 1 ? follow(t_stack[t_depth - 2]) : CUDA_SUCCESS;
        if (!r && t_depth) t_depth--;
        return r;
    }
    CUresult r = follow(ctx);
    if (r) return r;
    if (t_depth) t_stack[t_depth - 1] = ctx;
    else t_stack[t_depth++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    DRV_ENTER(cuCtxPushCurrent_v2);
    if (ctx_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (t_depth == CTX_DEPTH) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = follow(ctx);
    if (!r) t_stack[t_depth++] = ctx;
    return r;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *out)
{
    DRV_ENTER(cuCtxPopCurrent_v2);
    if (!t_depth) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = t_depth > 1 ? follow(t_stack[t_depth - 2]) : CUDA_SUCCESS;
    if (r) return r;
    CUcontext c = t_stack[--t_depth];
    if (out) *out = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
    DRV_ENTER(cuCtxGetDevice);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = current_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    *dev = ctx_device(c);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    DRV_ENTER(cuCtxSynchronize);
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    return RT(cudaDeviceSynchronize());
}

EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    DRV_ENTER(cuCtxGetApiVersion);
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    if (!ctx) ctx = current_ctx();
    if (ctx_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020;                /* the API version of every context since CUDA 3.2 */
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    DRV_ENTER(cuCtxGetFlags);
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    *flags = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    DRV_ENTER(cuCtxGetId);
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    if (!ctx) ctx = current_ctx();
    int dev = ctx_device(ctx);
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *id = (unsigned long long)dev + 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    DRV_ENTER(cuCtxGetStreamPriorityRange);
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    return RT(cudaDeviceGetStreamPriorityRange(least, greatest));
}

EXPORT CUresult cuMemGetInfo_v2(size_t *freeb, size_t *total)
{
    DRV_ENTER(cuMemGetInfo_v2);
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    return RT(cudaMemGetInfo(freeb, total));
}

/* -------------------------------------------------------- streams and events */

/* Work is created in the current context; none current is an error in the driver API. */
#define NEED_CTX() do { if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

static CUresult stream_create(CUstream *s, unsigned int flags, int prio)
{
    NEED_CTX();
    return RT(cudaStreamCreateWithPriority(s, flags, prio));
}

EXPORT CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int prio)
{
    DRV_ENTER_CREATE(cuStreamCreateWithPriority);
    return stream_create(s, flags, prio);
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    DRV_ENTER_CREATE(cuStreamCreate);
    return stream_create(s, flags, 0);
}

#define STREAM_FN(name, params, call) EXPORT CUresult name params { DRV_ENTER(name); return RT(call); }
STREAM_FN(cuStreamDestroy_v2, (CUstream s), cudaStreamDestroy(s))
STREAM_FN(cuStreamQuery, (CUstream s), cudaStreamQuery(s))
STREAM_FN(cuStreamSynchronize, (CUstream s), cudaStreamSynchronize(s))
STREAM_FN(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int flags), cudaStreamWaitEvent(s, e, flags))
STREAM_FN(cuStreamGetPriority, (CUstream s, int *prio), cudaStreamGetPriority(s, prio))
STREAM_FN(cuStreamGetFlags, (CUstream s, unsigned int *flags), cudaStreamGetFlags(s, flags))
STREAM_FN(cuStreamGetId, (CUstream s, unsigned long long *id), cudaStreamGetId(s, id))
STREAM_FN(cuStreamGetDevice, (CUstream s, CUdevice *dev), cudaStreamGetDevice(s, dev))
STREAM_FN(cuStreamIsCapturing, (CUstream s, int *status), cudaStreamIsCapturing(s, status))
STREAM_FN(cuLaunchHostFunc, (CUstream s, CUhostFn fn, void *arg), cudaLaunchHostFunc(s, fn, arg))
STREAM_FN(cuEventDestroy_v2, (CUevent e), cudaEventDestroy(e))
STREAM_FN(cuEventRecord, (CUevent e, CUstream s), cudaEventRecordWithFlags(e, s, 0))
STREAM_FN(cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned int flags), cudaEventRecordWithFlags(e, s, flags))
STREAM_FN(cuEventQuery, (CUevent e), cudaEventQuery(e))
STREAM_FN(cuEventSynchronize, (CUevent e), cudaEventSynchronize(e))
STREAM_FN(cuEventElapsedTime_v2, (float *ms, CUevent a, CUevent b), cudaEventElapsedTime(ms, a, b))

static CUresult stream_ctx(CUstream s, CUcontext *ctx)
{
    int dev;
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = RT(cudaStreamGetDevice(s, &dev));
    if (!r) *ctx = primary(dev);
    return r;
}

EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx)
{
    DRV_ENTER(cuStreamGetCtx);
    return stream_ctx(s, ctx);
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    DRV_ENTER_CREATE(cuEventCreate);
    NEED_CTX();
    return RT(cudaEventCreateWithFlags(e, flags));
}

/* ------------------------------------------------- what the emulator cannot do */

#define UNSUPPORTED(name) \
    EXPORT CUresult name(void) \
    { \
        static atomic_int seen_; \
        emu_trace_unsupported(#name, &seen_); \
        return CUDA_ERROR_NOT_SUPPORTED; \
    }
#define DRV_UNSUPPORTED(X) \
    X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuFuncSetCacheConfig) X(cuLaunchKernel) \
    X(cuLaunchCooperativeKernel) X(cuLaunchKernelEx) X(cuLinkAddData_v2) X(cuLinkComplete) \
    X(cuLinkCreate_v2) X(cuLinkDestroy) X(cuModuleGetFunction) X(cuModuleLoad) X(cuModuleLoadData) \
    X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    X(cuPointerGetAttribute) X(cuTensorMapEncodeTiled) X(cuLibraryLoadData) X(cuLibraryUnload) \
    X(cuLibraryGetKernel) X(cuKernelGetFunction) X(cuGetExportTable) X(cuDevicePrimaryCtxReset_v2) \
    X(cuCtxCreate) X(cuCtxDestroy)
DRV_UNSUPPORTED(UNSUPPORTED)

/* ------------------------------------------------------------- proc addresses */

/* Newer ABIs of a name that cuGetProcAddress hands out by version. */
EXPORT CUresult cuStreamGetCtx_v2(CUstream s, CUcontext *ctx, void **green)
{
    DRV_ENTER(cuStreamGetCtx_v2);
    CUresult r = stream_ctx(s, ctx);
    if (!r && green) *green = NULL;             /* no green contexts */
    return r;
}

EXPORT CUresult cuLaunchHostFunc_v2(CUstream s, CUhostFn fn, void *arg, unsigned int flags)
{
    DRV_ENTER(cuLaunchHostFunc_v2);
    return flags ? CUDA_ERROR_NOT_SUPPORTED : RT(cudaLaunchHostFunc(s, fn, arg));
}

CUresult cuGetProcAddress_v2(const char *, void **, int, unsigned long long, int *);
static CUresult get_proc(const char *, void **, int, unsigned long long, int *);
/* Before CUDA 12 a name not found was an error (CUDA_ERROR_NOT_FOUND); _v2 reports it in the status. */
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags)
{
    DRV_ENTER(cuGetProcAddress);
    CUresult r = get_proc(symbol, pfn, version, flags, NULL);
    return !r && !*pfn ? CUDA_ERROR_NOT_FOUND : r;
}

/* The per-thread-default-stream variants: the NULL stream is the calling thread's per-thread stream
 * (CU_STREAM_PER_THREAD) instead of the legacy one. */
static CUstream ptds(CUstream s) { return s ? s : (CUstream)(uintptr_t)2; }

EXPORT CUresult cuStreamQuery_ptsz(CUstream s) { return cuStreamQuery(ptds(s)); }
EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) { return cuStreamSynchronize(ptds(s)); }
EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int f)
{
    return cuStreamWaitEvent(ptds(s), e, f);
}
EXPORT CUresult cuStreamGetPriority_ptsz(CUstream s, int *p) { return cuStreamGetPriority(ptds(s), p); }
EXPORT CUresult cuStreamGetFlags_ptsz(CUstream s, unsigned int *f) { return cuStreamGetFlags(ptds(s), f); }
EXPORT CUresult cuStreamGetId_ptsz(CUstream s, unsigned long long *id) { return cuStreamGetId(ptds(s), id); }
EXPORT CUresult cuStreamGetDevice_ptsz(CUstream s, CUdevice *d) { return cuStreamGetDevice(ptds(s), d); }
EXPORT CUresult cuStreamGetCtx_ptsz(CUstream s, CUcontext *c) { return cuStreamGetCtx(ptds(s), c); }
EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream s, CUcontext *c, void **g) { return cuStreamGetCtx_v2(ptds(s), c, g); }
EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, int *st) { return cuStreamIsCapturing(ptds(s), st); }
EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *a) { return cuLaunchHostFunc(ptds(s), fn, a); }
EXPORT CUresult cuLaunchHostFunc_v2_ptsz(CUstream s, CUhostFn fn, void *a, unsigned int f)
{
    return cuLaunchHostFunc_v2(ptds(s), fn, a, f);
}
EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return cuEventRecord(e, ptds(s)); }
EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int f)
{
    return cuEventRecordWithFlags(e, ptds(s), f);
}

typedef struct { const char *symbol; void *fn; } variant_t;
#define PTSZ(fn) { #fn, (void *)fn##_ptsz },
static const variant_t ptsz[] = {
    PTSZ(cuStreamQuery) PTSZ(cuStreamSynchronize) PTSZ(cuStreamWaitEvent) PTSZ(cuStreamGetPriority)
    PTSZ(cuStreamGetFlags) PTSZ(cuStreamGetId) PTSZ(cuStreamGetDevice) PTSZ(cuStreamGetCtx)
    PTSZ(cuStreamGetCtx_v2) PTSZ(cuStreamIsCapturing) PTSZ(cuLaunchHostFunc) PTSZ(cuLaunchHostFunc_v2)
    PTSZ(cuEventRecord) PTSZ(cuEventRecordWithFlags)
};

/* cuGetProcAddress is asked for a base name and the CUDA version whose ABI the caller was built
 * against: it gets the entry of that name with the highest `since` not above the version.  A name
 * no entry has as its base is looked up as an exported symbol name (e.g. "cuStreamGetCtx_v2"). */
typedef struct { const char *name; int since; const char *symbol; void *fn; } proc_t;
#define PROC(fn) { #fn, 0, #fn, (void *)fn },
#define PROC_V(name, since, fn) { name, since, #fn, (void *)fn },

static const proc_t procs[] = {
    PROC(cuInit) PROC(cuDriverGetVersion) PROC(cuGetErrorName) PROC(cuGetErrorString)
    PROC_V("cuGetProcAddress", 0, cuGetProcAddress) PROC_V("cuGetProcAddress", 12000, cuGetProcAddress_v2)
    PROC(cuDeviceGetCount) PROC(cuDeviceGet) PROC(cuDeviceGetAttribute) PROC(cuDeviceGetName)
    PROC_V("cuDeviceGetUuid", 0, cuDeviceGetUuid_v2) PROC_V("cuDeviceTotalMem", 0, cuDeviceTotalMem_v2)
    PROC(cuDeviceGetPCIBusId) PROC(cuDeviceComputeCapability)
    PROC(cuDevicePrimaryCtxGetState) PROC(cuDevicePrimaryCtxRetain)
    PROC_V("cuDevicePrimaryCtxRelease", 0, cuDevicePrimaryCtxRelease_v2)
    PROC_V("cuDevicePrimaryCtxSetFlags", 0, cuDevicePrimaryCtxSetFlags_v2)
    PROC_V("cuDevicePrimaryCtxReset", 0, cuDevicePrimaryCtxReset_v2)
    PROC(cuCtxGetCurrent) PROC(cuCtxSetCurrent) PROC_V("cuCtxPushCurrent", 0, cuCtxPushCurrent_v2)
    PROC_V("cuCtxPopCurrent", 0, cuCtxPopCurrent_v2) PROC(cuCtxGetDevice) PROC(cuCtxSynchronize)
    PROC(cuCtxGetApiVersion) PROC(cuCtxGetFlags) PROC(cuCtxGetId) PROC(cuCtxGetStreamPriorityRange)
    PROC_V("cuMemGetInfo", 0, cuMemGetInfo_v2)
    PROC(cuStreamCreate) PROC(cuStreamCreateWithPriority) PROC_V("cuStreamDestroy", 0, cuStreamDestroy_v2)
    PROC(cuStreamQuery) PROC(cuStreamSynchronize) PROC(cuStreamWaitEvent) PROC(cuStreamGetPriority)
    PROC(cuStreamGetFlags) PROC(cuStreamGetId) PROC(cuStreamGetDevice)
    PROC(cuStreamGetCtx) PROC_V("cuStreamGetCtx", 12050, cuStreamGetCtx_v2)
    PROC(cuStreamIsCapturing)
    PROC(cuLaunchHostFunc) PROC_V("cuLaunchHostFunc", 13020, cuLaunchHostFunc_v2)
    PROC(cuEventCreate) PROC_V("cuEventDestroy", 0, cuEventDestroy_v2) PROC(cuEventRecord)
    PROC(cuEventRecordWithFlags) PROC(cuEventQuery) PROC(cuEventSynchronize)
    PROC_V("cuEventElapsedTime", 0, cuEventElapsedTime_v2)
    DRV_UNSUPPORTED(PROC)
};
#define NPROCS (sizeof procs / sizeof *procs)

void *emu_driver_proc(const char *name, int version, int per_thread)
{
    size_t len = strlen(name);
    if (len > 5 && (!strcmp(name + len - 5, "_ptsz") || !strcmp(name + len - 5, "_ptds"))) {
        len -= 5;
        per_thread = 1;
    }
    const proc_t *best = NULL;
    for (size_t i = 0; i < NPROCS; i++)
        if (strlen(procs[i].name) == len && !memcmp(procs[i].name, name, len) && procs[i].since <= version
            && (!best || procs[i].since > best->since))
            best = &procs[i];
    for (size_t i = 0; !best && i < NPROCS; i++)
        if (strlen(procs[i].symbol) == len && !memcmp(procs[i].symbol, name, len)) best = &procs[i];
    if (!best) return emu_graph_driver_proc(name, len, version, per_thread);   /* capture and graphs */
    for (size_t i = 0; per_thread && i < sizeof ptsz / sizeof *ptsz; i++)
        if (!strcmp(ptsz[i].symbol, best->symbol)) return ptsz[i].fn;
    return best->fn;             /* no stream argument: the same function in both variants */
}

#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2ull

/* A name not found is CUDA_SUCCESS with *pfn NULL and status 1 (CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND),
 * as documented since CUDA 12; found: status 0. */
static CUresult get_proc(const char *symbol, void **pfn, int version, unsigned long long flags, int *status)
{
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    *pfn = emu_driver_proc(symbol, version, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
    if (status) *status = *pfn ? 0 : 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                                    int *status)
{
    DRV_ENTER(cuGetProcAddress_v2);
    return get_proc(symbol, pfn, version, flags, status);
}
