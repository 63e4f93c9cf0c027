/* Device and context entry points of the libcuda.so.1 stand-in added for issue 33: CUDA 13's context-taking forms
 * (cuCtxGetDevice_v2, cuCtxSynchronize_v2), cuCtxResetPersistingL2Cache, cuDeviceGetByPCIBusId,
 * cuDeviceGetP2PAttribute and cuFlushGPUDirectRDMAWrites.  cuGetProcAddress finds them through
 * emu_drvdevice_procs (chained in emu_driver.c's lookup); each has a fault hook by name (EMU_DRVSURFACE_SYMBOLS). */
#include <stdio.h>
#include <strings.h>

#include "emu_driver.h"

int cudaDeviceGetPCIBusId(char *, int, int);
int cudaDeviceCanAccessPeer(int *, int, int);
int emu_device_synchronize(int);

/* ctx, or the current context when NULL; -1 when neither is a live context. */
static int ctx_or_current(CUcontext ctx)
{
    if (!ctx) ctx = current_ctx();
    return ctx ? ctx_device(ctx) : -1;
}

EXPORT CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
    DRV_ENTER(cuCtxGetDevice_v2);
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    int d = ctx_or_current(ctx);
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *dev = d;
    return CUDA_SUCCESS;
}

/* A context's work is its device's (the emulator's contexts share their device's streams). */
EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    DRV_ENTER(cuCtxSynchronize_v2);
    int d = ctx_or_current(ctx);
    return d < 0 ? CUDA_ERROR_INVALID_CONTEXT : RT(emu_device_synchronize(d));
}

/* The emulator keeps no persisting L2 lines: nothing to reset. */
EXPORT CUresult cuCtxResetPersistingL2Cache(void)
{
    DRV_ENTER(cuCtxResetPersistingL2Cache);
    NEED_CTX();
    return CUDA_SUCCESS;
}

/* "[domain]:[bus]:[device].[function]", "[domain]:[bus]:[device]" or "[bus]:[device].[function]", hexadecimal:
 * 1 with the parts, 0 when the text is none of those. */
static int parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev)
{
    unsigned a, b, c, f;
    char tail;
    if (sscanf(s, "%x:%x:%x.%x%c", &a, &b, &c, &f, &tail) == 4 ||
        sscanf(s, "%x:%x:%x%c", &a, &b, &c, &tail) == 3) {
        *dom = a, *bus = b, *dev = c;
        return 1;
    }
    if (sscanf(s, "%x:%x.%x%c", &b, &c, &f, &tail) == 3) {
        *dom = 0, *bus = b, *dev = c;
        return 1;
    }
    return 0;
}

EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *out, const char *id)
{
    DRV_ENTER(cuDeviceGetByPCIBusId);
    if (!out || !id) return CUDA_ERROR_INVALID_VALUE;
    unsigned dom, bus, dev;
    if (!parse_bus_id(id, &dom, &bus, &dev)) return CUDA_ERROR_INVALID_VALUE;
    for (int d = 0; d < g_ndev; d++) {
        char mine[32];
        unsigned md, mb, mv;
        if (RT(cudaDeviceGetPCIBusId(mine, sizeof mine, d)) == 0 && parse_bus_id(mine, &md, &mb, &mv) &&
            md == dom && mb == bus && mv == dev) {
            *out = d;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

/* CU_DEVICE_P2P_ATTRIBUTE_*: every pair of emulated devices has the same link (rank 0); access, native atomics and
 * CUDA-array access as cuDeviceCanAccessPeer says; no partial atomics. */
EXPORT CUresult cuDeviceGetP2PAttribute(int *value, int attr, CUdevice src, CUdevice dst)
{
    DRV_ENTER(cuDeviceGetP2PAttribute);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    if (src < 0 || src >= g_ndev || dst < 0 || dst >= g_ndev || src == dst) return CUDA_ERROR_INVALID_DEVICE;
    int can = 0;
    switch (attr) {
    case 1: *value = 0; return CUDA_SUCCESS;
    case 2: case 3: case 4: {
        CUresult r = RT(cudaDeviceCanAccessPeer(&can, src, dst));
        if (!r) *value = can;
        return r;
    }
    case 5: *value = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Emulated device memory is the host's, coherent as it is: a flush has nothing to wait for.  Target: the current
 * context (0); scope: its owner (100) or all devices (200). */
EXPORT CUresult cuFlushGPUDirectRDMAWrites(int target, int scope)
{
    DRV_ENTER(cuFlushGPUDirectRDMAWrites);
    if (target != 0 || (scope != 100 && scope != 200)) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return CUDA_SUCCESS;
}

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
#define PROC_V(name, since, fn) { name, since, #fn, (void *)fn },
const proc_t emu_drvdevice_procs[] = {
    PROC_V("cuCtxGetDevice", 13000, cuCtxGetDevice_v2) PROC_V("cuCtxSynchronize", 13000, cuCtxSynchronize_v2)
    PROC(cuCtxResetPersistingL2Cache) PROC(cuDeviceGetByPCIBusId) PROC(cuDeviceGetP2PAttribute)
    PROC(cuFlushGPUDirectRDMAWrites)
};
const size_t emu_drvdevice_nprocs = sizeof emu_drvdevice_procs / sizeof *emu_drvdevice_procs;
