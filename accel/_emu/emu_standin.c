/* The rest of the libcudart.so.13 stand-in: every runtime symbol torch's CUDA libraries import
 * (accel/_emu/torch_cudart13_imports.txt) that the emulated runtime does not implement.
 *
 *  - The launch configuration push/pop of a <<<...>>> launch; the registration path (__cudaRegister*),
 *    launches, symbols, function attributes and occupancy are emu_register.c's.
 *  - Real where torch's device/stream/event paths need them: cudaGetDriverEntryPointByVersion (the
 *    driver layer of emu_driver.c), cudaDeviceEnablePeerAccess, cudaStreamAddCallback; each has a fault hook armed by its name
 *    (EMU_STANDIN_SYMBOLS in emu_internal.h), failing with cudaErrorUnknown.
 *  - Everything else (graphs and capture, pool access, copies the emulator does
 *    not model) returns cudaErrorNotSupported, records it as the thread's last error and, with
 *    ACCEL_EMU_TRACE=1, logs its first call on stderr.  Those definitions are weak: a real
 *    implementation elsewhere in the emulator replaces the stub at link time. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

#define EXPORT __attribute__((visibility("default")))
#define WEAK __attribute__((weak))

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct { unsigned int x, y, z; } dim3;

enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
       cudaErrorInitializationError = 3, cudaErrorInvalidDevice = 101,
       cudaErrorPeerAccessAlreadyEnabled = 704, cudaErrorNotSupported = 801,
       cudaErrorStreamCaptureUnsupported = 900, cudaErrorUnknown = 999 };

int cudaGetDevice(int *);
int cudaStreamIsCapturing(cudaStream_t, int *);
int cudaLaunchHostFunc(cudaStream_t, void (*)(void *), void *);
int accelEmuDeviceCount(void);

void emu_trace_unsupported(const char *name, atomic_int *seen)
{
    if (atomic_exchange(seen, 1)) return;
    const char *t = getenv("ACCEL_EMU_TRACE");
    if (t && !strcmp(t, "1"))
        fprintf(stderr, "accel emu: %s is not supported by the emulated runtime (returns %s)\n", name,
                strncmp(name, "cuda", 4) && strncmp(name, "__cuda", 6) ? "CUDA_ERROR_NOT_SUPPORTED"
                                                                       : "cudaErrorNotSupported");
}

/* ------------------------------------------------------------ launch configuration */

/* One pending launch configuration per thread, pushed by <<<...>>> and popped by the launch stub. */
static __thread struct { dim3 grid, block; size_t shmem; void *stream; } t_launch;

EXPORT unsigned int __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, void *stream)
{
    t_launch.grid = grid;
    t_launch.block = block;
    t_launch.shmem = shmem;
    t_launch.stream = stream;
    return 0;
}

EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream)
{
    if (grid) *grid = t_launch.grid;
    if (block) *block = t_launch.block;
    if (shmem) *shmem = t_launch.shmem;
    if (stream) memcpy(stream, &t_launch.stream, sizeof t_launch.stream);
    return cudaSuccess;
}

/* ------------------------------------------------------------------ real ones */

/* Prologue of the real ones, as the runtime's: the configuration check (which initialises the emulator,
 * installing ACCEL_EMU_FAIL), then the fault hook (EMU_STANDIN_SYMBOLS); a failure is the last error.  The
 * runtime calls they make inside count their own names. */
#define STANDIN_ENTER(sym) do { \
        emu_rt_init(); \
        if (accelEmuDeviceCount() < 0) return t_last = cudaErrorInitializationError; \
        if (EMU_FAULT(sym)) return t_last = cudaErrorUnknown; \
    } while (0)

/* status (cudaDriverEntryPointQueryResult): 0 found, 1 symbol not found.  A name the driver layer
 * does not have is reported through the status with cudaSuccess, as torch's lookups expect. */
EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                                    unsigned long long flags, int *status)
{
    STANDIN_ENTER(cudaGetDriverEntryPointByVersion);
    if (!symbol || !fn) return t_last = cudaErrorInvalidValue;
    *fn = emu_driver_proc(symbol, (int)version, (flags & 2ull) != 0);    /* cudaEnablePerThreadDefaultStream */
    if (status) *status = *fn ? 0 : 1;
    return cudaSuccess;
}

static pthread_mutex_t g_peer_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char g_peer[EMU_MAX_DEVICES][EMU_MAX_DEVICES];   /* [dev][peer] access enabled */

EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    int dev;
    STANDIN_ENTER(cudaDeviceEnablePeerAccess);
    cudaError_t e = cudaGetDevice(&dev);
    if (e) return e;
    if (flags) return t_last = cudaErrorInvalidValue;
    if (peer < 0 || peer >= g_ndev || peer == dev) return t_last = cudaErrorInvalidDevice;
    pthread_mutex_lock(&g_peer_lock);
    int was = g_peer[dev][peer];
    g_peer[dev][peer] = 1;
    pthread_mutex_unlock(&g_peer_lock);
    return was ? (t_last = cudaErrorPeerAccessAlreadyEnabled) : cudaSuccess;
}

typedef void (*cudaStreamCallback_t)(cudaStream_t, cudaError_t, void *);
typedef struct { cudaStreamCallback_t cb; cudaStream_t stream; void *arg; } callback_t;

static void run_callback(void *p)
{
    callback_t c = *(callback_t *)p;
    free(p);
    c.cb(c.stream, cudaSuccess, c.arg);
}

/* A host function with the callback's signature (flags must be 0, as documented).  Not capturable (CUDA
 * captures cudaLaunchHostFunc only): on a capturing stream it is cudaErrorStreamCaptureUnsupported. */
EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *arg, unsigned int flags)
{
    int capturing = 0;
    STANDIN_ENTER(cudaStreamAddCallback);
    if (!cb || flags) return t_last = cudaErrorInvalidValue;
    cudaError_t e = cudaStreamIsCapturing(s, &capturing);
    if (e) return e;
    if (capturing) return t_last = cudaErrorStreamCaptureUnsupported;
    callback_t *c = malloc(sizeof *c);
    if (!c) return t_last = cudaErrorMemoryAllocation;
    c->cb = cb;
    c->stream = s;
    c->arg = arg;
    e = cudaLaunchHostFunc(s, run_callback, c);
    if (e) free(c);
    return e;
}

/* ------------------------------------------------------------ not supported */

#define UNSUPPORTED(name) \
    WEAK EXPORT cudaError_t name(void) \
    { \
        static atomic_int seen_; \
        emu_trace_unsupported(#name, &seen_); \
        return t_last = cudaErrorNotSupported; \
    }

/* graphs and stream capture */
UNSUPPORTED(cudaStreamBeginCapture)
UNSUPPORTED(cudaStreamEndCapture)
UNSUPPORTED(cudaGraphAddNode) UNSUPPORTED(cudaGraphDestroy)
UNSUPPORTED(cudaGraphExecDestroy) UNSUPPORTED(cudaGraphGetNodes) UNSUPPORTED(cudaGraphInstantiateWithFlags)
UNSUPPORTED(cudaGraphInstantiate) UNSUPPORTED(cudaGraphDebugDotPrint)   /* imported by torch cu12 */
UNSUPPORTED(cudaGraphLaunch) UNSUPPORTED(cudaGraphNodeGetDependencies) UNSUPPORTED(cudaGraphRetainUserObject)
UNSUPPORTED(cudaUserObjectCreate) UNSUPPORTED(cudaUserObjectRelease)
UNSUPPORTED(cudaDeviceGetGraphMemAttribute) UNSUPPORTED(cudaDeviceSetGraphMemAttribute)
