/* The driver API of the libcuda.so.1 stand-in, on the emulator's one state (emu_runtime.h).
 *
 * Every function maps onto the emulated runtime: a primary context is its device, making it
 * current is cudaSetDevice, streams and events are the runtime's handles (CUstream == cudaStream_t,
 * flags and error codes share their values).  Runtime calls made here leave the thread's runtime
 * last error as it was: the driver API never touches it.
 *
 * Contexts: each device's primary context (handle CTX_BASE + 256*ordinal + 0x90, aligned like a real
 * context pointer) and contexts made by cuCtxCreate (tag 0xa0), which share their device's work and
 * memory.  Each thread has a context stack (cuCtxPush/Pop/SetCurrent); its top is a context of the
 * runtime's current device (cudaSetDevice to another device replaces it with that device's primary
 * context).  A thread with an empty stack sees the primary context of the runtime's current device once
 * the runtime made that context current (retaining it is not enough), NULL before and after the thread
 * popped its last context, as with real CUDA.  Memory entry points are in emu_drvmem.c.
 *
 * cuGetProcAddress resolves names in this table only, by name and ABI version; a `_ptsz`/`_ptds`
 * name or the per-thread-default-stream flag gives the variant whose NULL stream is the calling
 * thread's per-thread stream.  Module, library, kernel, linker, occupancy and launch entry points are in
 * emu_module.c and emu_drvlaunch.c (their table: emu_module_procs); the few the emulator lacks return
 * CUDA_ERROR_NOT_SUPPORTED (their first call is logged with ACCEL_EMU_TRACE=1).
 *
 * Fault injection: every entry point that can fail has a hook armed by its exported name
 * (ACCEL_EMU_FAIL="cuStreamCreate:1,...", accelEmuSetFail; EMU_DRIVER_SYMBOLS in emu_internal.h).
 * The armed call fails before it changes anything, with CUDA_ERROR_OUT_OF_MEMORY when it creates a
 * context, stream, event, pool or allocation and CUDA_ERROR_UNKNOWN otherwise.  A `_ptsz` variant, or the pointer
 * cuGetProcAddress hands out, counts as the entry point it is a variant of; one call counts one
 * driver name (the runtime calls it makes inside count their own runtime names, as before). */
#include "emu_driver.h"
#include "emu_props.h"

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
int cudaDeviceSetLimit(int, size_t);
int cudaDeviceGetLimit(size_t *, int);
int cudaDeviceEnablePeerAccess(int, unsigned int);
int cudaDeviceCanAccessPeer(int *, int, int);
int cudaProfilerStart(void);
int cudaProfilerStop(void);
int cudaStreamAddCallback(void *, void (*)(void *, int, void *), void *, unsigned int);
CUresult cuInit(unsigned int);
CUresult cuDriverGetVersion(int *);
CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned int *, int *);
CUresult cuGetErrorName(CUresult, const char **);
CUresult cuGetErrorString(CUresult, const char **);

/* ------------------------------------------------------------------ contexts */

#define CTX_BASE 0x5c0000000000ull
#define CTX_TAG 0x90u               /* a primary context: CTX_BASE + 256*ordinal + CTX_TAG */
#define CTX_TAG_OWN 0xa0u           /* a created one: CTX_BASE + 256*(MAX + id) + CTX_TAG_OWN */
#define CTX_DEPTH 64

static __thread CUcontext t_stack[CTX_DEPTH];
static __thread int t_depth;
/* The thread emptied its stack (popped or set NULL its last context): none is current, until it pushes
 * or sets one or the runtime makes a device current again (t_binds moved past t_unbound_at). */
static __thread int t_unbound;
static __thread unsigned t_unbound_at;

/* Created contexts (cuCtxCreate): their device and flags by id; ids only grow, so a destroyed context's
 * handle never names a later one. */
typedef struct { int device; int live; unsigned int flags; } ownctx_t;
static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static ownctx_t *g_own;
static size_t g_nown, g_capown;

CUcontext ctx_primary(int dev) { return (CUcontext)(uintptr_t)(CTX_BASE + ((uint64_t)dev << 8) + CTX_TAG); }

static CUcontext ctx_own(size_t id)
{
    return (CUcontext)(uintptr_t)(CTX_BASE + ((uint64_t)(EMU_MAX_DEVICES + id) << 8) + CTX_TAG_OWN);
}

/* The id of a created context's handle (live or not), -1 if it is not one. */
static long own_id(CUcontext c)
{
    uint64_t v = (uint64_t)(uintptr_t)c;
    if (v < CTX_BASE || (v & 0xff) != CTX_TAG_OWN) return -1;
    uint64_t id = ((v - CTX_BASE) >> 8) - EMU_MAX_DEVICES;
    return (v - CTX_BASE) >> 8 >= EMU_MAX_DEVICES && id < (1ull << 40) ? (long)id : -1;
}

int ctx_device(CUcontext c)
{
    uint64_t v = (uint64_t)(uintptr_t)c;
    if (v < CTX_BASE) return -1;
    if ((v & 0xff) == CTX_TAG) {
        uint64_t dev = (v - CTX_BASE) >> 8;
        return dev < (uint64_t)g_ndev ? (int)dev : -1;
    }
    long id = own_id(c);
    if (id < 0) return -1;
    pthread_mutex_lock(&g_ctx_lock);
    int dev = (size_t)id < g_nown && g_own[id].live ? g_own[id].device : -1;
    pthread_mutex_unlock(&g_ctx_lock);
    return dev;
}

/* The top of the stack is always a context of the runtime's current device: the driver makes the
 * runtime follow every change of the top, and cudaSetDevice to another device replaces the top with
 * that device's primary context, as in CUDA. */
CUcontext current_ctx(void)
{
    int dev = 0;
    if (RT(cudaGetDevice(&dev))) return NULL;
    if (t_depth) {
        CUcontext top = t_stack[t_depth - 1];
        if ((uintptr_t)top % 256 == CTX_TAG || ctx_device(top) != dev) top = t_stack[t_depth - 1] = ctx_primary(dev);
        return top;
    }
    if (t_unbound && t_binds == t_unbound_at) return NULL;
    t_unbound = 0;
    return atomic_load(&g_ctx[dev]) == 1 ? ctx_primary(dev) : NULL;
}

/* The stack is now empty: no context is current on this thread. */
static void unbind(void)
{
    t_unbound = 1;
    t_unbound_at = t_binds;
}

/* Makes c's device the runtime's current one (c is a valid context or NULL).  The stack changes
 * only once it succeeded, so a refused change leaves the stack and the runtime's device as they were. */
static CUresult follow(CUcontext c)
{
    if (!c) return CUDA_SUCCESS;
    int dev = ctx_device(c);
    return dev < 0 ? CUDA_ERROR_INVALID_CONTEXT : RT(cudaSetDevice(dev));
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
    int inactive = 0;
    atomic_compare_exchange_strong(&g_ctx[dev], &inactive, 2);     /* active, current on no thread */
    *ctx = ctx_primary(dev);
    return CUDA_SUCCESS;
}

/* The runtime holds its own reference to every primary context it made current, so releasing the
 * driver's references never deactivates one. */
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    DRV_ENTER(cuDevicePrimaryCtxRelease_v2);
    return dev < 0 || dev >= g_ndev ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

/* Reset waits for the device's queued work and deactivates its primary context (a later retain, push or
 * runtime call activates it again, with the same handle).  Unlike a real reset it leaves the device's
 * allocations, streams and events alone: the emulator cannot destroy them under their other users.  It
 * clears the device's sticky error (emu_launch.c). */
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    DRV_ENTER(cuDevicePrimaryCtxReset_v2);
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    emu_sticky_clear(dev);      /* a dead context starts again, with its queued work skipped */
    int cur = 0;
    CUresult r = RT(cudaGetDevice(&cur));
    if (!r && cur != dev) r = RT(cudaSetDevice(dev));
    if (!r) r = RT(cudaDeviceSynchronize());
    if (cur != dev) RT(cudaSetDevice(cur));
    if (r) return r;
    atomic_store(&g_ctx[dev], 0);
    return CUDA_SUCCESS;
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
        if (!r && !t_depth) unbind();
        return r;
    }
    CUresult r = follow(ctx);
    if (r) return r;
    t_unbound = 0;
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
    if (!r) {
        t_stack[t_depth++] = ctx;
        t_unbound = 0;
    }
    return r;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *out)
{
    DRV_ENTER(cuCtxPopCurrent_v2);
    if (!t_depth) return CUDA_ERROR_INVALID_CONTEXT;
    current_ctx();                  /* the top follows a device the runtime made current since */
    CUresult r = t_depth > 1 ? follow(t_stack[t_depth - 2]) : CUDA_SUCCESS;
    if (r) return r;
    CUcontext c = t_stack[--t_depth];
    if (!t_depth) unbind();
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
    CUcontext c = current_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    long own = own_id(c);
    pthread_mutex_lock(&g_ctx_lock);
    *flags = own < 0 ? 0 : g_own[own].flags;
    pthread_mutex_unlock(&g_ctx_lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    DRV_ENTER(cuCtxGetId);
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    if (!ctx) ctx = current_ctx();
    int dev = ctx_device(ctx);
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    long own = own_id(ctx);
    *id = own < 0 ? (unsigned long long)dev + 1 : (unsigned long long)(EMU_MAX_DEVICES + 1 + own);
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

/* Created contexts are contexts of their device like its primary one: the emulator keeps streams,
 * events and memory per device, so they share the device's work and memory (a real driver gives each
 * context its own).  Creating pushes the context on the calling thread's stack; destroying removes it
 * from the calling thread's stack and makes its handle invalid (another thread that still has it on top
 * of its stack finds its device's primary context there instead). */
#define CTX_CREATE_FLAGS 0x1fu      /* scheduling (0-7), MAP_HOST, LMEM_RESIZE_TO_MAX */

static CUresult ctx_create(CUcontext *out, unsigned int flags, CUdevice dev)
{
    if (!out || (flags & ~CTX_CREATE_FLAGS) || (flags & 7) == 3 || (flags & 7) > 4) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= g_ndev) return CUDA_ERROR_INVALID_DEVICE;
    if (t_depth == CTX_DEPTH) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_ctx_lock);
    if (g_nown == g_capown) {
        size_t nc = g_capown ? g_capown * 2 : 16;
        ownctx_t *no = realloc(g_own, nc * sizeof *no);
        if (no) { g_own = no; g_capown = nc; }
    }
    size_t id = g_nown;
    int ok = g_nown < g_capown;
    if (ok) g_own[g_nown++] = (ownctx_t){ dev, 1, flags };
    pthread_mutex_unlock(&g_ctx_lock);
    if (!ok) return CUDA_ERROR_OUT_OF_MEMORY;
    CUcontext c = ctx_own(id);
    CUresult r = follow(c);
    if (r) {                        /* never handed out: the id stays retired */
        pthread_mutex_lock(&g_ctx_lock);
        g_own[id].live = 0;
        pthread_mutex_unlock(&g_ctx_lock);
        return r;
    }
    atomic_store(&g_ctx[dev], 1);
    t_stack[t_depth++] = c;
    t_unbound = 0;
    *out = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice dev)
{
    DRV_ENTER_CREATE(cuCtxCreate_v2);
    return ctx_create(ctx, flags, dev);
}

/* Execution affinity (v3, v4) and CIG (v4) parameters are not modelled: none may be given. */
EXPORT CUresult cuCtxCreate_v3(CUcontext *ctx, const void *params, int nparams, unsigned int flags, CUdevice dev)
{
    DRV_ENTER_CREATE(cuCtxCreate_v3);
    if (nparams < 0 || (nparams && !params)) return CUDA_ERROR_INVALID_VALUE;
    if (nparams) return CUDA_ERROR_NOT_SUPPORTED;
    return ctx_create(ctx, flags, dev);
}

typedef struct { const void *affinity; int naffinity; const void *cig; } ctx_create_params_t;

EXPORT CUresult cuCtxCreate_v4(CUcontext *ctx, const ctx_create_params_t *params, unsigned int flags, CUdevice dev)
{
    DRV_ENTER_CREATE(cuCtxCreate_v4);
    if (params && (params->naffinity < 0 || (params->naffinity && !params->affinity))) return CUDA_ERROR_INVALID_VALUE;
    if (params && (params->naffinity || params->cig)) return CUDA_ERROR_NOT_SUPPORTED;
    return ctx_create(ctx, flags, dev);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    DRV_ENTER(cuCtxDestroy_v2);
    long id = own_id(ctx);
    if (id < 0 || ctx_device(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    /* the new top, once every entry of ctx is gone from this thread's stack */
    int n = 0;
    CUcontext rest[CTX_DEPTH];
    for (int i = 0; i < t_depth; i++)
        if (t_stack[i] != ctx) rest[n++] = t_stack[i];
    CUresult r = n && n != t_depth && t_stack[t_depth - 1] == ctx ? follow(rest[n - 1]) : CUDA_SUCCESS;
    if (r) return r;
    pthread_mutex_lock(&g_ctx_lock);
    g_own[id].live = 0;
    pthread_mutex_unlock(&g_ctx_lock);
    if (n != t_depth) {
        memcpy(t_stack, rest, (size_t)n * sizeof *rest);
        t_depth = n;
        if (!n) unbind();
    }
    return CUDA_SUCCESS;
}

/* Limits are the runtime's (cudaDeviceSetLimit) for 0-6; the driver-only ones do not exist here. */
EXPORT CUresult cuCtxSetLimit(int limit, size_t value)
{
    DRV_ENTER(cuCtxSetLimit);
    NEED_CTX();
    return limit < 0 || limit > 6 ? CUDA_ERROR_UNSUPPORTED_LIMIT : RT(cudaDeviceSetLimit(limit, value));
}

EXPORT CUresult cuCtxGetLimit(size_t *value, int limit)
{
    DRV_ENTER(cuCtxGetLimit);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return limit < 0 || limit > 6 ? CUDA_ERROR_UNSUPPORTED_LIMIT : RT(cudaDeviceGetLimit(value, limit));
}

/* The cache preference is accepted and reported back (it shapes nothing on the emulator). */
static __thread int t_cache_config;

EXPORT CUresult cuCtxSetCacheConfig(int config)
{
    DRV_ENTER(cuCtxSetCacheConfig);
    NEED_CTX();
    if (config < 0 || config > 3) return CUDA_ERROR_INVALID_VALUE;
    t_cache_config = config;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCacheConfig(int *config)
{
    DRV_ENTER(cuCtxGetCacheConfig);
    if (!config) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    *config = t_cache_config;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    DRV_ENTER(cuCtxEnablePeerAccess);
    int dev = ctx_device(peer);
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    NEED_CTX();
    return RT(cudaDeviceEnablePeerAccess(dev, flags));
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    DRV_ENTER(cuDeviceCanAccessPeer);
    return RT(cudaDeviceCanAccessPeer(can, dev, peer));
}

EXPORT CUresult cuProfilerStart(void)
{
    DRV_ENTER(cuProfilerStart);
    NEED_CTX();
    return RT(cudaProfilerStart());
}

EXPORT CUresult cuProfilerStop(void)
{
    DRV_ENTER(cuProfilerStop);
    NEED_CTX();
    return RT(cudaProfilerStop());
}

/* -------------------------------------------------------- streams and events */


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
STREAM_FN(cuStreamAddCallback, (CUstream s, void (*cb)(void *, int, void *), void *arg, unsigned int flags),
          cudaStreamAddCallback(s, cb, arg, flags))
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
    if (!r) *ctx = ctx_primary(dev);
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
    X(cuTensorMapEncodeTiled) X(cuModuleGetTexRef) \
    X(cuLaunch) X(cuLaunchGrid) X(cuLaunchGridAsync)
/* stream capture and graphs: emu_graph_driver.c; modules, libraries, kernels, linker, occupancy and launches:
 * emu_module.c, emu_drvlaunch.c */
DRV_UNSUPPORTED(UNSUPPORTED)

/* Whether fn (a pointer cuGetProcAddress handed out) is one of the stubs above: the driver surface test
 * (tests/test_emu_driver_surface.py) counts those as gaps. */
#define STUB_ADDR(name) (void *)name,
EXPORT int accelEmuDriverUnsupported(const void *fn)
{
    CUresult cuGetExportTable(const void **, const void *);     /* refuses every table: emu_drvexport.c */
    static void *const stubs[] = { DRV_UNSUPPORTED(STUB_ADDR) (void *)cuGetExportTable };
    for (size_t i = 0; i < sizeof stubs / sizeof *stubs; i++)
        if (stubs[i] == fn) return 1;
    return 0;
}

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
    DRV_ENTER_LAZY(cuGetProcAddress);
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
    PROC_V("cuCtxCreate", 0, cuCtxCreate_v2) PROC_V("cuCtxCreate", 11040, cuCtxCreate_v3)
    PROC_V("cuCtxCreate", 12050, cuCtxCreate_v4) PROC_V("cuCtxDestroy", 0, cuCtxDestroy_v2)
    PROC(cuCtxSetLimit) PROC(cuCtxGetLimit) PROC(cuCtxSetCacheConfig) PROC(cuCtxGetCacheConfig)
    PROC(cuCtxEnablePeerAccess) PROC(cuDeviceCanAccessPeer) PROC(cuProfilerStart) PROC(cuProfilerStop)
    PROC(cuStreamAddCallback)
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
    const proc_t *tables[] = { procs, emu_drvmem_procs, emu_module_procs, emu_graph_driver2_procs,
                               emu_drvexport_procs, emu_drvmisc_procs, emu_drvdevice_procs, emu_array_procs };
    size_t sizes[] = { NPROCS, emu_drvmem_nprocs, emu_module_nprocs, emu_graph_driver2_nprocs, emu_drvexport_nprocs,
                       emu_drvmisc_nprocs, emu_drvdevice_nprocs, emu_array_nprocs };
    enum { NTABLES = sizeof tables / sizeof *tables };
    for (int t = 0; t < NTABLES; t++)
        for (size_t i = 0; i < sizes[t]; i++) {
            const proc_t *p = &tables[t][i];
            if (strlen(p->name) == len && !memcmp(p->name, name, len) && p->since <= version
                && (!best || p->since > best->since))
                best = p;
        }
    for (int t = 0; t < NTABLES && !best; t++)
        for (size_t i = 0; !best && i < sizes[t]; i++)
            if (strlen(tables[t][i].symbol) == len && !memcmp(tables[t][i].symbol, name, len)) best = &tables[t][i];
    if (!best) return emu_graph_driver_proc(name, len, version, per_thread);   /* capture and graphs */
    for (size_t i = 0; per_thread && i < sizeof ptsz / sizeof *ptsz; i++)
        if (!strcmp(ptsz[i].symbol, best->symbol)) return ptsz[i].fn;
    for (size_t i = 0; per_thread && i < emu_drvmem_nptsz; i++)
        if (!strcmp(emu_drvmem_ptsz[i].symbol, best->symbol)) return emu_drvmem_ptsz[i].fn;
    for (size_t i = 0; per_thread && i < emu_array_nptsz; i++)
        if (!strcmp(emu_array_ptsz[i].symbol, best->symbol)) return emu_array_ptsz[i].fn;
    for (size_t i = 0; per_thread && i < emu_module_nptsz; i++)
        if (!strcmp(emu_module_ptsz[i].symbol, best->symbol)) return emu_module_ptsz[i].fn;
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
    DRV_ENTER_LAZY(cuGetProcAddress_v2);
    return get_proc(symbol, pfn, version, flags, status);
}
