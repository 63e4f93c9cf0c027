/* The driver API's memory entry points (libcuda.so.1 stand-in), on the emulated runtime's memory
 * (emu_memory.c): one allocation table, the same stream-ordered pools, pinned ranges and queued copies.
 * Each call is its runtime twin, made as the driver makes it (RT: the runtime's last error is kept;
 * the codes have the same values in both APIs), after the driver's own checks: a current context for
 * everything that allocates, copies or sets (CUDA_ERROR_INVALID_CONTEXT), zero-byte allocations refused
 * (CUDA_ERROR_INVALID_VALUE; cuMemAllocAsync keeps the runtime's NULL result), and synchronous copies
 * that return once done.  A CUdeviceptr is the allocation's host address (unified addressing).
 *
 * Fault injection as in emu_driver.c: every entry point is armed by its exported name and fails before
 * it changes anything (CUDA_ERROR_OUT_OF_MEMORY when it allocates, else CUDA_ERROR_UNKNOWN). */
#include "emu_driver.h"

#define DP(x) ((void *)(uintptr_t)(x))

/* The runtime entry points used here (emu_memory.c). */
int cudaMalloc(void **, size_t);
int cudaFree(void *);
int cudaMallocAsync(void **, size_t, void *);
int cudaFreeAsync(void *, void *);
int cudaMallocFromPoolAsync(void **, size_t, void *, void *);
int cudaMallocManaged(void **, size_t, unsigned int);
int cudaMemPoolCreate(void **, const void *);
int cudaMemPoolDestroy(void *);
int cudaMemPoolGetAttribute(void *, int, void *);
int cudaMemPoolSetAttribute(void *, int, void *);
int cudaMemPoolTrimTo(void *, size_t);
int cudaMemPoolSetAccess(void *, const void *, size_t);
int cudaMemPoolGetAccess(int *, void *, const void *);
int cudaDeviceGetMemPool(void **, int);
int cudaDeviceGetDefaultMemPool(void **, int);
int cudaDeviceSetMemPool(int, void *);
int cudaMemGetMemPool(void **, const void *, int);
int cudaMemGetDefaultMemPool(void **, const void *, int);
int cudaMemSetMemPool(const void *, int, void *);
int cudaHostAlloc(void **, size_t, unsigned int);
int cudaFreeHost(void *);
int cudaHostRegister(void *, size_t, unsigned int);
int cudaHostUnregister(void *);
int cudaHostGetDevicePointer(void **, void *, unsigned int);
typedef struct { char reserved[64]; } CUipcMemHandle;
int cudaIpcGetMemHandle(CUipcMemHandle *, void *);
int cudaIpcOpenMemHandle(void **, CUipcMemHandle, unsigned int);
int cudaIpcCloseMemHandle(void *);

/* ------------------------------------------------------------- allocations */

static CUresult alloc_out(CUdeviceptr *out, void *p, CUresult r)
{
    if (!r) *out = (CUdeviceptr)(uintptr_t)p;
    return r;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n)
{
    void *p = NULL;
    DRV_ENTER_CREATE(cuMemAlloc_v2);
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    return alloc_out(dptr, p, RT(cudaMalloc(&p, n)));
}

/* Rows are padded to 512 bytes (the device's texture pitch alignment is a divisor of it). */
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                   unsigned int elem)
{
    void *p = NULL;
    DRV_ENTER_CREATE(cuMemAllocPitch_v2);
    if (!dptr || !pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16)) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (width > SIZE_MAX - 511) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t row = (width + 511) / 512 * 512;
    if (height > SIZE_MAX / row) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = alloc_out(dptr, p, RT(cudaMalloc(&p, row * height)));
    if (!r) *pitch = row;
    return r;
}

/* cuMemFree(0) is an error in the driver API (cudaFree(NULL) is not). */
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    DRV_ENTER(cuMemFree_v2);
    NEED_CTX();
    return dptr ? RT(cudaFree(DP(dptr))) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned int flags)
{
    void *p = NULL;
    DRV_ENTER_CREATE(cuMemAllocManaged);
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return alloc_out(dptr, p, RT(cudaMallocManaged(&p, n, flags)));
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s)
{
    void *p = NULL;
    DRV_ENTER_CREATE(cuMemAllocAsync);
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return alloc_out(dptr, p, RT(cudaMallocAsync(&p, n, s)));
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s)
{
    void *p = NULL;
    DRV_ENTER_CREATE(cuMemAllocFromPoolAsync);
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return alloc_out(dptr, p, RT(cudaMallocFromPoolAsync(&p, n, pool, s)));
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    DRV_ENTER(cuMemFreeAsync);
    NEED_CTX();
    return dptr ? RT(cudaFreeAsync(DP(dptr), s)) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr dptr)
{
    emu_ptrinfo_t info;
    DRV_ENTER(cuMemGetAddressRange_v2);
    NEED_CTX();
    if (!emu_pointer_info(DP(dptr), &info)) return CUDA_ERROR_NOT_FOUND;
    if (base) *base = (CUdeviceptr)(uintptr_t)info.base;
    if (size) *size = info.size;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ pools */

/* Pools of pinned memory on a device or the host (HOST, HOST_NUMA node 0), of managed memory; the export
 * handle types are the pool's (CU_MEMPOOL_ATTR_EXPORT_HANDLE_TYPES, emu_drvpoolipc.c). */
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const void *props)
{
    DRV_ENTER_CREATE(cuMemPoolCreate);
    return RT(cudaMemPoolCreate(pool, props));
}

#define POOL_FN(name, params, call) EXPORT CUresult name params { DRV_ENTER(name); return RT(call); }
POOL_FN(cuMemPoolDestroy, (CUmemoryPool pool), cudaMemPoolDestroy(pool))
POOL_FN(cuMemPoolGetAttribute, (CUmemoryPool pool, int attr, void *value), cudaMemPoolGetAttribute(pool, attr, value))
POOL_FN(cuMemPoolSetAttribute, (CUmemoryPool pool, int attr, void *value), cudaMemPoolSetAttribute(pool, attr, value))
POOL_FN(cuMemPoolTrimTo, (CUmemoryPool pool, size_t keep), cudaMemPoolTrimTo(pool, keep))
POOL_FN(cuMemPoolSetAccess, (CUmemoryPool pool, const void *descs, size_t count),
        cudaMemPoolSetAccess(pool, descs, count))
POOL_FN(cuMemPoolGetAccess, (int *flags, CUmemoryPool pool, const void *location),
        cudaMemPoolGetAccess(flags, pool, location))
POOL_FN(cuDeviceGetMemPool, (CUmemoryPool *pool, CUdevice dev), cudaDeviceGetMemPool(pool, dev))
POOL_FN(cuDeviceGetDefaultMemPool, (CUmemoryPool *pool, CUdevice dev), cudaDeviceGetDefaultMemPool(pool, dev))
POOL_FN(cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool), cudaDeviceSetMemPool(dev, pool))

/* CUDA 13's pool of a location and allocation type (a device's, the host's, managed memory's): the
 * runtime's (emu_memory.c, cudaMemGetMemPool ...), which makes a location's default pool on first use. */
POOL_FN(cuMemGetMemPool, (CUmemoryPool *pool, const CUmemLocation *loc, int type), cudaMemGetMemPool(pool, loc, type))
POOL_FN(cuMemGetDefaultMemPool, (CUmemoryPool *pool, const CUmemLocation *loc, int type),
        cudaMemGetDefaultMemPool(pool, loc, type))
POOL_FN(cuMemSetMemPool, (const CUmemLocation *loc, int type, CUmemoryPool pool), cudaMemSetMemPool(loc, type, pool))

/* ------------------------------------------------------------ copies and sets */

enum { KIND_H2D = 1, KIND_D2H = 2, KIND_D2D = 3, KIND_DEFAULT = 4, LOC_DEVICE = 1 };
int cudaStreamGetDevice(void *, int *);

/* The device a copy on stream s runs on: the stream's, or the current context's for the NULL, legacy
 * and per-thread streams; -1 for a handle that is no stream (the copy itself then says so). */
static int copy_device(CUstream s)
{
    int dev = -1;
    if ((uintptr_t)s <= 2) return ctx_device(current_ctx());
    return RT(cudaStreamGetDevice(s, &dev)) ? -1 : dev;
}

/* A stream-ordered pool's memory is reached only from its own device and the devices its pool grants
 * access (cuMemPoolSetAccess): a copy that runs on another device is CUDA_ERROR_INVALID_VALUE, as the
 * real driver answers (peer access of contexts does not extend to pools).  A pool of pinned host memory
 * is copied by every device (as cuMemHostAlloc memory is), and managed memory is every device's. */
static CUresult reachable(const void *p, int dev)
{
    emu_ptrinfo_t in;
    int flags = 0;
    if (dev < 0 || !emu_pointer_info(p, &in) || !in.pool || in.device == dev || in.kind != EMU_PTR_DEVICE)
        return CUDA_SUCCESS;
    CUmemLocation loc = { LOC_DEVICE, dev };
    if (RT(cudaMemPoolGetAccess(&flags, in.pool, &loc)) || !flags) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult copy_reaches(const void *dst, const void *src, CUstream s)
{
    int dev = copy_device(s);
    CUresult r = reachable(dst, dev);
    return r ? r : reachable(src, dev);
}

static CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t n, int kind, CUstream s, int sync)
{
    NEED_CTX();
    CUresult r = n ? copy_reaches(DP(dst), DP(src), s) : CUDA_SUCCESS;
    return r ? r : RT(emu_copy(DP(dst), n, DP(src), n, n, 1, kind, s, sync));
}

#define COPY_FN(name, params, dst, src, n, kind, s, sync) \
    EXPORT CUresult name params { DRV_ENTER(name); return copy((CUdeviceptr)(uintptr_t)(dst), \
                                                              (CUdeviceptr)(uintptr_t)(src), n, kind, s, sync); }
COPY_FN(cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), d, s, n, KIND_DEFAULT, NULL, 1)
COPY_FN(cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), d, s, n, KIND_DEFAULT, st, 0)
COPY_FN(cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), d, s, n, KIND_H2D, NULL, 1)
COPY_FN(cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), d, s, n, KIND_D2H, NULL, 1)
COPY_FN(cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), d, s, n, KIND_D2D, NULL, 1)
COPY_FN(cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void *s, size_t n, CUstream st), d, s, n, KIND_H2D, st, 0)
COPY_FN(cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream st), d, s, n, KIND_D2H, st, 0)
COPY_FN(cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), d, s, n, KIND_D2D, st, 0)

/* Peer copies: both contexts must be live; every device reaches every other's memory. */
static CUresult peer(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx, size_t n, CUstream st, int sync)
{
    if (ctx_device(dctx) < 0 || ctx_device(sctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
    return copy(d, s, n, KIND_D2D, st, sync);
}

EXPORT CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx, size_t n)
{
    DRV_ENTER(cuMemcpyPeer);
    return peer(d, dctx, s, sctx, n, NULL, 1);
}

EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx, size_t n,
                                  CUstream st)
{
    DRV_ENTER(cuMemcpyPeerAsync);
    return peer(d, dctx, s, sctx, n, st, 0);
}


enum { MT_HOST = 1, MT_DEVICE = 2, MT_ARRAY = 3, MT_UNIFIED = 4 };

/* The first byte a side of a 2D copy addresses, and whether it must be device memory; -1: invalid. */
static int side(int type, const void *host, CUdeviceptr dev, size_t x, size_t y, size_t pitch, char **at)
{
    const char *base;
    switch (type) {
    case MT_HOST: base = host; break;
    case MT_DEVICE: case MT_UNIFIED: base = DP(dev); break;
    default: return -1;
    }
    if (y && pitch > (SIZE_MAX - x) / y) return -1;
    *at = (char *)base + y * pitch + x;
    return type == MT_DEVICE;
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream s, int sync)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (c->srcMemoryType == MT_ARRAY || c->dstMemoryType == MT_ARRAY) return emu_array_copy2d(c, s, sync);
    char *src, *dst;
    int sd = side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch, &src);
    int dd = side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch, &dst);
    if (sd < 0 || dd < 0) return CUDA_ERROR_INVALID_VALUE;
    if (c->Height > 1 && (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes))
        return CUDA_ERROR_INVALID_VALUE;
    int kind = sd && dd ? KIND_D2D : sd ? KIND_D2H : dd ? KIND_H2D : KIND_DEFAULT;
    CUresult r = c->WidthInBytes && c->Height ? copy_reaches(dst, src, s) : CUDA_SUCCESS;
    if (r) return r;
    return RT(emu_copy(dst, c->dstPitch, src, c->srcPitch, c->WidthInBytes, c->Height, kind, s, sync));
}

EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c)
{
    DRV_ENTER(cuMemcpy2D_v2);
    return copy2d(c, NULL, 1);
}

EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c)
{
    DRV_ENTER(cuMemcpy2DUnaligned_v2);
    return copy2d(c, NULL, 1);
}

EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s)
{
    DRV_ENTER(cuMemcpy2DAsync_v2);
    return copy2d(c, s, 0);
}

static CUresult set(CUdeviceptr d, unsigned int v, size_t n, int elem, CUstream s, int sync)
{
    NEED_CTX();
    return RT(emu_set(DP(d), v, n, elem, s, sync));
}

#define SET_FN(name, async, type, elem) \
    EXPORT CUresult name(CUdeviceptr d, type v, size_t n) { DRV_ENTER(name); return set(d, v, n, elem, NULL, 1); } \
    EXPORT CUresult async(CUdeviceptr d, type v, size_t n, CUstream s) \
    { \
        DRV_ENTER(async); \
        return set(d, v, n, elem, s, 0); \
    }
SET_FN(cuMemsetD8_v2, cuMemsetD8Async, unsigned char, 1)
SET_FN(cuMemsetD16_v2, cuMemsetD16Async, unsigned short, 2)
SET_FN(cuMemsetD32_v2, cuMemsetD32Async, unsigned int, 4)

/* ------------------------------------------------------------ host memory */

/* CU_MEMHOSTALLOC_* and CU_MEMHOSTREGISTER_* have the runtime's values. */
static CUresult host_alloc(void **pp, size_t n, unsigned int flags)
{
    if (!pp) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return n ? RT(cudaHostAlloc(pp, n, flags)) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    DRV_ENTER_CREATE(cuMemHostAlloc);
    return host_alloc(pp, n, flags);
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
    DRV_ENTER_CREATE(cuMemAllocHost_v2);
    return host_alloc(pp, n, 0);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    DRV_ENTER(cuMemFreeHost);
    NEED_CTX();
    return p ? RT(cudaFreeHost(p)) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
    DRV_ENTER(cuMemHostRegister_v2);
    NEED_CTX();
    return RT(cudaHostRegister(p, n, flags));
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
    DRV_ENTER(cuMemHostUnregister);
    NEED_CTX();
    return RT(cudaHostUnregister(p));
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned int flags)
{
    void *d = NULL;
    DRV_ENTER(cuMemHostGetDevicePointer_v2);
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return alloc_out(dptr, d, RT(cudaHostGetDevicePointer(&d, p, flags)));
}

/* ------------------------------------------------------------------- IPC */

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
    DRV_ENTER(cuIpcGetMemHandle);
    NEED_CTX();
    return RT(cudaIpcGetMemHandle(h, DP(dptr)));
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *dptr, CUipcMemHandle h, unsigned int flags)
{
    void *p = NULL;
    DRV_ENTER_CREATE(cuIpcOpenMemHandle_v2);
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return alloc_out(dptr, p, RT(cudaIpcOpenMemHandle(&p, h, flags)));
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    DRV_ENTER(cuIpcCloseMemHandle);
    NEED_CTX();
    return RT(cudaIpcCloseMemHandle(DP(dptr)));
}

/* ---------------------------------------------------------- pointer attributes */

enum {
    PA_CONTEXT = 1, PA_MEMORY_TYPE, PA_DEVICE_POINTER, PA_HOST_POINTER, PA_P2P_TOKENS, PA_SYNC_MEMOPS,
    PA_BUFFER_ID, PA_IS_MANAGED, PA_DEVICE_ORDINAL, PA_IS_LEGACY_CUDA_IPC_CAPABLE, PA_RANGE_START_ADDR,
    PA_RANGE_SIZE, PA_MAPPED, PA_ALLOWED_HANDLE_TYPES, PA_IS_GPU_DIRECT_RDMA_CAPABLE, PA_ACCESS_FLAGS,
    PA_MEMPOOL_HANDLE, PA_MAPPING_SIZE, PA_MAPPING_BASE_ADDR, PA_MEMORY_BLOCK_ID, PA_IS_HW_DECOMPRESS_CAPABLE,
};
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2 };

/* The size of attribute a's value, 0 for one the emulator does not know (P2P tokens included). */
static size_t attr_size(int a)
{
    switch (a) {
    case PA_CONTEXT: case PA_DEVICE_POINTER: case PA_HOST_POINTER: case PA_RANGE_START_ADDR:
    case PA_MEMPOOL_HANDLE: case PA_MAPPING_BASE_ADDR: case PA_BUFFER_ID: case PA_ALLOWED_HANDLE_TYPES:
    case PA_MEMORY_BLOCK_ID: case PA_RANGE_SIZE: case PA_MAPPING_SIZE:
        return 8;
    case PA_MEMORY_TYPE: case PA_SYNC_MEMOPS: case PA_IS_MANAGED: case PA_DEVICE_ORDINAL:
    case PA_IS_LEGACY_CUDA_IPC_CAPABLE: case PA_MAPPED: case PA_IS_GPU_DIRECT_RDMA_CAPABLE: case PA_ACCESS_FLAGS:
    case PA_IS_HW_DECOMPRESS_CAPABLE:
        return 4;
    default:
        return 0;
    }
}

/* Attribute a of p (info: what the emulator knows of it) as a 64-bit value; an address the emulator
 * does not know has every attribute 0 but its device ordinal (-2), as the real driver reports it. */
static uint64_t attr_value(int a, const void *p, const emu_ptrinfo_t *in)
{
    int known = in->kind != EMU_PTR_NONE, dev = in->kind == EMU_PTR_DEVICE || in->kind == EMU_PTR_MANAGED;
    uint64_t addr = (uint64_t)(uintptr_t)p, base = (uint64_t)(uintptr_t)in->base;
    switch (a) {
    case PA_CONTEXT: return known ? (uint64_t)(uintptr_t)ctx_primary(in->device) : 0;
    case PA_MEMORY_TYPE: return !known ? 0 : dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    case PA_DEVICE_POINTER: return known ? addr : 0;
    case PA_HOST_POINTER: return known && in->kind != EMU_PTR_DEVICE ? addr : 0;
    case PA_BUFFER_ID: case PA_MEMORY_BLOCK_ID: return base;
    case PA_IS_MANAGED: return in->kind == EMU_PTR_MANAGED;
    case PA_DEVICE_ORDINAL: return known ? (uint64_t)in->device : (uint64_t)(uint32_t)-2;
    case PA_IS_LEGACY_CUDA_IPC_CAPABLE: return in->kind == EMU_PTR_DEVICE && !in->pool;
    case PA_RANGE_START_ADDR: case PA_MAPPING_BASE_ADDR: return base;
    case PA_RANGE_SIZE: case PA_MAPPING_SIZE: return in->size;
    case PA_MAPPED: return known;
    case PA_ACCESS_FLAGS: return known ? 3 : 0;        /* CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE */
    case PA_MEMPOOL_HANDLE: return (uint64_t)(uintptr_t)in->pool;
    default: return 0;                                 /* sync memops, handle types, RDMA, decompression */
    }
}

static void attr_store(void *out, int a, uint64_t v)
{
    if (attr_size(a) == 8) memcpy(out, &v, 8);
    else {
        uint32_t w = (uint32_t)v;
        memcpy(out, &w, 4);
    }
}

/* One attribute: an address the emulator does not know is CUDA_ERROR_INVALID_VALUE, as for memory the
 * driver does not know. */
EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr ptr)
{
    emu_ptrinfo_t info;
    DRV_ENTER(cuPointerGetAttribute);
    if (!data || !attr_size(attr)) return CUDA_ERROR_INVALID_VALUE;
    if (!emu_pointer_info(DP(ptr), &info)) return CUDA_ERROR_INVALID_VALUE;
    if (attr == PA_HOST_POINTER && info.kind == EMU_PTR_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (attr == PA_MEMPOOL_HANDLE && !info.pool) return CUDA_ERROR_INVALID_VALUE;
    attr_store(data, attr, attr_value(attr, DP(ptr), &info));
    return CUDA_SUCCESS;
}

/* Several at once: every attribute is checked before any is written; unknown addresses succeed. */
EXPORT CUresult cuPointerGetAttributes(unsigned int n, const int *attrs, void **data, CUdeviceptr ptr)
{
    emu_ptrinfo_t info;
    DRV_ENTER(cuPointerGetAttributes);
    if (n && (!attrs || !data)) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < n; i++)
        if (!attr_size(attrs[i]) || !data[i]) return CUDA_ERROR_INVALID_VALUE;
    emu_pointer_info(DP(ptr), &info);
    for (unsigned int i = 0; i < n; i++) attr_store(data[i], attrs[i], attr_value(attrs[i], DP(ptr), &info));
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- proc addresses */

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
#define PROC_V(name, since, fn) { name, since, #fn, (void *)fn },

const proc_t emu_drvmem_procs[] = {
    PROC_V("cuMemAlloc", 0, cuMemAlloc_v2) PROC_V("cuMemFree", 0, cuMemFree_v2)
    PROC_V("cuMemAllocPitch", 0, cuMemAllocPitch_v2) PROC(cuMemAllocManaged) PROC(cuMemAllocAsync)
    PROC(cuMemAllocFromPoolAsync) PROC(cuMemFreeAsync) PROC_V("cuMemGetAddressRange", 0, cuMemGetAddressRange_v2)
    PROC(cuMemPoolCreate) PROC(cuMemPoolDestroy) PROC(cuMemPoolGetAttribute) PROC(cuMemPoolSetAttribute)
    PROC(cuMemPoolTrimTo) PROC(cuMemPoolSetAccess) PROC(cuMemPoolGetAccess) PROC(cuDeviceGetMemPool)
    PROC(cuDeviceGetDefaultMemPool) PROC(cuDeviceSetMemPool) PROC(cuMemGetMemPool) PROC(cuMemSetMemPool)
    PROC(cuMemGetDefaultMemPool)
    PROC(cuMemcpy) PROC(cuMemcpyAsync) PROC_V("cuMemcpyHtoD", 0, cuMemcpyHtoD_v2)
    PROC_V("cuMemcpyDtoH", 0, cuMemcpyDtoH_v2) PROC_V("cuMemcpyDtoD", 0, cuMemcpyDtoD_v2)
    PROC_V("cuMemcpyHtoDAsync", 0, cuMemcpyHtoDAsync_v2) PROC_V("cuMemcpyDtoHAsync", 0, cuMemcpyDtoHAsync_v2)
    PROC_V("cuMemcpyDtoDAsync", 0, cuMemcpyDtoDAsync_v2) PROC(cuMemcpyPeer) PROC(cuMemcpyPeerAsync)
    PROC_V("cuMemcpy2D", 0, cuMemcpy2D_v2) PROC_V("cuMemcpy2DUnaligned", 0, cuMemcpy2DUnaligned_v2)
    PROC_V("cuMemcpy2DAsync", 0, cuMemcpy2DAsync_v2)
    PROC_V("cuMemsetD8", 0, cuMemsetD8_v2) PROC_V("cuMemsetD16", 0, cuMemsetD16_v2)
    PROC_V("cuMemsetD32", 0, cuMemsetD32_v2) PROC(cuMemsetD8Async) PROC(cuMemsetD16Async) PROC(cuMemsetD32Async)
    PROC(cuMemHostAlloc) PROC_V("cuMemAllocHost", 0, cuMemAllocHost_v2) PROC(cuMemFreeHost)
    PROC_V("cuMemHostRegister", 0, cuMemHostRegister_v2) PROC(cuMemHostUnregister)
    PROC_V("cuMemHostGetDevicePointer", 0, cuMemHostGetDevicePointer_v2)
    PROC(cuIpcGetMemHandle) PROC_V("cuIpcOpenMemHandle", 0, cuIpcOpenMemHandle_v2) PROC(cuIpcCloseMemHandle)
    PROC(cuPointerGetAttribute) PROC(cuPointerGetAttributes)
    PROC(cuMemAdvise) PROC_V("cuMemAdvise", 12020, cuMemAdvise_v2) PROC(cuMemRangeGetAttribute)
    PROC(cuMemRangeGetAttributes) PROC(cuMemPrefetchAsync) PROC_V("cuMemPrefetchAsync", 12020, cuMemPrefetchAsync_v2)
    PROC(cuMemPrefetchBatchAsync) PROC(cuMemDiscardBatchAsync) PROC(cuMemDiscardAndPrefetchBatchAsync)
    PROC(cuMemPoolExportToShareableHandle) PROC(cuMemPoolImportFromShareableHandle) PROC(cuMemPoolExportPointer)
    PROC(cuMemPoolImportPointer)
};
const size_t emu_drvmem_nprocs = sizeof emu_drvmem_procs / sizeof *emu_drvmem_procs;

/* The per-thread-default-stream variants of the stream-ordered calls (`_ptsz`, as libcuda exports them). */
static CUstream ptds(CUstream s) { return s ? s : (CUstream)(uintptr_t)2; }

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s) { return cuMemAllocAsync(d, n, ptds(s)); }
EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s)
{
    return cuMemAllocFromPoolAsync(d, n, p, ptds(s));
}
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s) { return cuMemFreeAsync(d, ptds(s)); }
EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s)
{
    return cuMemcpyAsync(d, src, n, ptds(s));
}
EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *src, size_t n, CUstream s)
{
    return cuMemcpyHtoDAsync_v2(d, src, n, ptds(s));
}
EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *d, CUdeviceptr src, size_t n, CUstream s)
{
    return cuMemcpyDtoHAsync_v2(d, src, n, ptds(s));
}
EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s)
{
    return cuMemcpyDtoDAsync_v2(d, src, n, ptds(s));
}
EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s) { return cuMemcpy2DAsync_v2(c, ptds(s)); }
EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s)
{
    return cuMemcpyPeerAsync(d, dc, src, sc, n, ptds(s));
}
EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    return cuMemsetD8Async(d, v, n, ptds(s));
}
EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    return cuMemsetD16Async(d, v, n, ptds(s));
}
EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    return cuMemsetD32Async(d, v, n, ptds(s));
}

#define PTSZ(fn) { #fn, (void *)fn##_ptsz },
const variant_t emu_drvmem_ptsz[] = {
    PTSZ(cuMemAllocAsync) PTSZ(cuMemAllocFromPoolAsync) PTSZ(cuMemFreeAsync) PTSZ(cuMemcpyAsync)
    PTSZ(cuMemcpyHtoDAsync_v2) PTSZ(cuMemcpyDtoHAsync_v2) PTSZ(cuMemcpyDtoDAsync_v2) PTSZ(cuMemcpy2DAsync_v2)
    PTSZ(cuMemcpyPeerAsync) PTSZ(cuMemsetD8Async) PTSZ(cuMemsetD16Async) PTSZ(cuMemsetD32Async)
};
const size_t emu_drvmem_nptsz = sizeof emu_drvmem_ptsz / sizeof *emu_drvmem_ptsz;
