/* What the driver layer's files share (emu_driver.c: devices, contexts, streams, events, proc addresses;
 * emu_drvmem.c: memory): the driver API's types and codes, the prologue macros and the context helpers.
 * Hidden like everything not marked EXPORT. */
#ifndef ACCEL_EMU_DRIVER_H
#define ACCEL_EMU_DRIVER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUmemoryPool;
typedef unsigned long long CUdeviceptr;
typedef void (*CUhostFn)(void *);

enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2, CUDA_ERROR_NOT_INITIALIZED = 3,
       CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101, CUDA_ERROR_INVALID_CONTEXT = 201,
       CUDA_ERROR_UNSUPPORTED_LIMIT = 215, CUDA_ERROR_NOT_FOUND = 500, CUDA_ERROR_NOT_SUPPORTED = 801,
       CUDA_ERROR_UNKNOWN = 999 };

int accelEmuDeviceCount(void);

#pragma GCC visibility push(hidden)

/* A runtime call as the driver makes it: the thread's runtime last error is kept, and the codes
 * the emulated runtime returns have the same values in the driver API. */
#define RT(call) __extension__({ int saved_ = t_last; int r_ = (call); t_last = saved_; r_; })

/* Configuration errors (ACCEL_EMU_* malformed) read as "not initialised", as in emu_core.c, and so does a
 * driver not initialised yet (cuInit or the runtime: emu_internal.h's g_drv_ready). */
#define DRV_INIT() do { \
        if (accelEmuDeviceCount() < 0 || !atomic_load_explicit(&g_drv_ready, memory_order_acquire)) \
            return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

/* Prologue of every entry point that can fail: the configuration check, then its fault hook; one that
 * creates something fails with CUDA_ERROR_OUT_OF_MEMORY. */
#define DRV_ENTER(sym) do { DRV_INIT(); if (EMU_FAULT(sym)) return CUDA_ERROR_UNKNOWN; } while (0)
#define DRV_ENTER_CREATE(sym) do { DRV_INIT(); if (EMU_FAULT(sym)) return CUDA_ERROR_OUT_OF_MEMORY; } while (0)

/* emu_core.c: the emulator is initialised.  cuGetProcAddress does not initialise it (the real one loads
 * no device list): CUDA_VISIBLE_DEVICES set after a library resolved its driver functions still applies.  It
 * works before cuInit (libraries resolve cuInit with it) and in a forked child. */
extern atomic_int g_ready;
#define DRV_ENTER_LAZY(sym) do { \
        if (atomic_load(&g_ready)) { \
            if (accelEmuDeviceCount() < 0 && !g_forked) return CUDA_ERROR_NOT_INITIALIZED; \
            if (EMU_FAULT(sym)) return CUDA_ERROR_UNKNOWN; \
        } \
    } while (0)

/* emu_driver.c: the calling thread's current context (NULL: none), the device of a context (-1: not a
 * live context), a device's primary context. */
CUcontext current_ctx(void);
int ctx_device(CUcontext c);
CUcontext ctx_primary(int dev);

/* Work is created in the current context; none current is an error in the driver API. */
#define NEED_CTX() do { if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

/* emu_drvmanaged.c: managed memory's advice and prefetches (CUmemLocation passed by value, as the driver
 * takes it). */
typedef struct { int type, id; } CUmemLocation;
EXPORT CUresult cuMemAdvise(CUdeviceptr p, size_t n, int advice, int device);
EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, CUmemLocation l);
EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t size, int attr, CUdeviceptr p, size_t count);
EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *sizes, int *attrs, size_t n, CUdeviceptr p, size_t count);
EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, int device, CUstream s);
EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int flags, CUstream s);
EXPORT CUresult cuMemPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count, CUmemLocation *locs,
                                        size_t *idx, size_t nlocs, unsigned long long flags, CUstream s);
EXPORT CUresult cuMemDiscardBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count, unsigned long long flags,
                                       CUstream s);
EXPORT CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                                  CUmemLocation *locs, size_t *idx, size_t nlocs,
                                                  unsigned long long flags, CUstream s);

/* emu_drvpoolipc.c: sharing pools (within the process), by the handle types a pool was made with. */
EXPORT CUresult cuMemPoolExportToShareableHandle(void *out, CUmemoryPool pool, int type, unsigned long long flags);
EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *out, void *handle, int type,
                                                   unsigned long long flags);
EXPORT CUresult cuMemPoolExportPointer(void *out, CUdeviceptr ptr);
EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool, const void *data);

/* emu_drvmem.c: the memory entry points cuGetProcAddress hands out (name, ABI version, function). */
typedef struct { const char *name; int since; const char *symbol; void *fn; } proc_t;
extern const proc_t emu_drvmem_procs[];
extern const size_t emu_drvmem_nprocs;
/* The per-thread-default-stream variant of an entry point (its NULL stream is the calling thread's
 * per-thread stream), by the symbol it is a variant of. */
typedef struct { const char *symbol; void *fn; } variant_t;
extern const variant_t emu_drvmem_ptsz[];
extern const size_t emu_drvmem_nptsz;
/* emu_drvlaunch.c: the module, library, kernel, linker, occupancy and launch entry points, likewise. */
extern const proc_t emu_module_procs[];
extern const size_t emu_module_nprocs;
extern const variant_t emu_module_ptsz[];
extern const size_t emu_module_nptsz;
/* emu_graph_driver2.c: the graph queries and node removal (none takes a stream). */
extern const proc_t emu_graph_driver2_procs[];
extern const size_t emu_graph_driver2_nprocs;
/* emu_drvexport.c: cuGetExportTable (refuses every table, naming it). */
extern const proc_t emu_drvexport_procs[];
extern const size_t emu_drvexport_nprocs;
/* emu_array.c: CUDA arrays, mipmapped arrays, texture and surface objects, copies with arrays; a CUDA_MEMCPY2D
 * with an array on a side (emu_drvmem.c's cuMemcpy2D* hand those over). */
extern const proc_t emu_array_procs[];
extern const size_t emu_array_nprocs;
extern const variant_t emu_array_ptsz[];
extern const size_t emu_array_nptsz;
CUresult emu_array_copy2d(const void *copy, CUstream s, int sync);
/* emu_drvmisc.c: coredump settings, checkpointing (answered as without checkpoint support). */
extern const proc_t emu_drvmisc_procs[];
extern const size_t emu_drvmisc_nprocs;
/* emu_drvdevice.c: CUDA 13's context-taking forms, PCI bus ids, peer attributes, RDMA flushes. */
extern const proc_t emu_drvdevice_procs[];
extern const size_t emu_drvdevice_nprocs;

#pragma GCC visibility pop

/* CUDA_MEMCPY2D, emu_drvmem.c's copy2d; a copy with an array (CU_MEMORYTYPE_ARRAY) on a side is emu_array.c's. */
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

#endif
