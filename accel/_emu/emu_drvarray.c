/* CUDA arrays in the libcuda.so.1 stand-in (issue 33), as descriptors over device memory: cuArrayCreate /
 * cuArray3DCreate keep the descriptor and allocate width x height x depth elements of device memory on the current
 * context's device (counted like any allocation), laid out row after row, slice after slice, without padding;
 * cuArrayGetDescriptor / cuArray3DGetDescriptor give the descriptor back; copies to and from arrays
 * (cuMemcpyHtoA, AtoH, DtoA, AtoD, AtoA and their async forms; cuMemcpy2D with CU_MEMORYTYPE_ARRAY, in
 * emu_drvmem.c; cuMemcpy3D(Async), here, for every side kind: one 2D copy per slice) are device-memory copies at the
 * element's byte offset, in stream order.  Texture and surface
 * objects, mipmapped arrays and sampling are not emulated.
 *
 * Documented choices:
 *  - Formats: the integer, half and float formats of 1, 2 or 4 channels (CU_AD_FORMAT_UNSIGNED_INT8 .. FLOAT); the
 *    others (planar video, block-compressed, UNORM / SNORM packed) are CUDA_ERROR_NOT_SUPPORTED.  Flags: LAYERED,
 *    SURFACE_LDST, CUBEMAP and TEXTURE_GATHER are kept (a cubemap needs width == height and a depth of 6, or a
 *    multiple of 6 when layered); SPARSE and DEFERRED_MAPPING are CUDA_ERROR_NOT_SUPPORTED, any other bit
 *    CUDA_ERROR_INVALID_VALUE.
 *  - cuArrayGetDescriptor of a 3D or layered array gives its width, height, format and channels.
 *  - The offset-based copies (HtoA, AtoH, DtoA, AtoD, AtoA) address the array's bytes in that layout; a range past
 *    its end is CUDA_ERROR_INVALID_VALUE.
 * As every driver entry point they keep the runtime's last error and have a fault hook by name
 * (EMU_DRVSURFACE_SYMBOLS, emu_internal.h); cuGetProcAddress finds them through emu_drvarray_procs. */
#include "emu_driver.h"

typedef struct { size_t Width, Height; int Format; unsigned NumChannels; } CUDA_ARRAY_DESCRIPTOR;
typedef struct { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; } CUDA_ARRAY3D_DESCRIPTOR;

enum { AF_LAYERED = 1, AF_SURFACE_LDST = 2, AF_CUBEMAP = 4, AF_TEXTURE_GATHER = 8, AF_SPARSE = 0x40,
       AF_DEFERRED_MAPPING = 0x80 };
enum { KIND_H2D = 1, KIND_D2H = 2, KIND_D2D = 3, CUDA_ERROR_INVALID_HANDLE = 400 };

#define ARRAY_MAGIC 0x41525259u     /* "ARRY" */
typedef struct drv_array {
    unsigned magic;
    struct drv_array *next;
    CUDA_ARRAY3D_DESCRIPTOR d;
    size_t row, bytes;              /* bytes of a row, of the whole array */
    void *mem;                      /* its device memory (the runtime's allocation) */
} drv_array_t;

int cudaMalloc(void **, size_t);
int cudaFree(void *);

static pthread_mutex_t g_arrays_lock = PTHREAD_MUTEX_INITIALIZER;
static drv_array_t *g_arrays;

/* A live array of this handle, NULL otherwise.  Its memory stays valid while the caller uses it (an array
 * destroyed during a copy through it is the caller's race, as in CUDA). */
__attribute__((visibility("hidden")))
int emu_drv_array(const void *h, void **mem, size_t *row, size_t *height, size_t *bytes)
{
    pthread_mutex_lock(&g_arrays_lock);
    drv_array_t *a = g_arrays;
    while (a && a != h) a = a->next;
    if (a) {
        *mem = a->mem;
        *row = a->row;
        *height = (a->d.Height ? a->d.Height : 1) * (a->d.Depth ? a->d.Depth : 1);
        *bytes = a->bytes;
    }
    pthread_mutex_unlock(&g_arrays_lock);
    return a != NULL;
}

/* Bytes of an element of a format with n channels; 0: a format the emulator does not have. */
static size_t elem_size(int format, unsigned n)
{
    switch (format) {
    case 0x01: case 0x08: return n;             /* (UNSIGNED_)INT8 */
    case 0x02: case 0x09: case 0x10: return 2u * n;     /* (UNSIGNED_)INT16, HALF */
    case 0x03: case 0x0a: case 0x20: return 4u * n;     /* (UNSIGNED_)INT32, FLOAT */
    default: return 0;
    }
}

static CUresult array_create(void **out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (!out || !d || !d->Width) return CUDA_ERROR_INVALID_VALUE;
    if (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) return CUDA_ERROR_INVALID_VALUE;
    if (d->Flags & (AF_SPARSE | AF_DEFERRED_MAPPING)) return CUDA_ERROR_NOT_SUPPORTED;
    if (d->Flags & ~(unsigned)(AF_LAYERED | AF_SURFACE_LDST | AF_CUBEMAP | AF_TEXTURE_GATHER))
        return CUDA_ERROR_INVALID_VALUE;
    if (d->Depth && !d->Height && !(d->Flags & AF_LAYERED)) return CUDA_ERROR_INVALID_VALUE;  /* 3D needs a height */
    if ((d->Flags & AF_LAYERED) && !d->Depth) return CUDA_ERROR_INVALID_VALUE;
    if ((d->Flags & AF_CUBEMAP) &&
        (d->Width != d->Height || !d->Depth || ((d->Flags & AF_LAYERED) ? d->Depth % 6 : d->Depth != 6)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((d->Flags & AF_TEXTURE_GATHER) && (!d->Height || d->Depth)) return CUDA_ERROR_INVALID_VALUE;
    size_t e = elem_size(d->Format, d->NumChannels);
    if (!e) return d->Format > 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    size_t h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1, row, plane, bytes;
    if (__builtin_mul_overflow(d->Width, e, &row) || __builtin_mul_overflow(row, h, &plane) ||
        __builtin_mul_overflow(plane, z, &bytes))
        return CUDA_ERROR_INVALID_VALUE;
    drv_array_t *a = calloc(1, sizeof *a);
    if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = RT(cudaMalloc(&a->mem, bytes));
    if (r) {
        free(a);
        return r;
    }
    a->magic = ARRAY_MAGIC;
    a->d = *d;
    a->row = row;
    a->bytes = bytes;
    pthread_mutex_lock(&g_arrays_lock);
    a->next = g_arrays;
    g_arrays = a;
    pthread_mutex_unlock(&g_arrays_lock);
    *out = a;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuArrayCreate_v2(void **out, const CUDA_ARRAY_DESCRIPTOR *d)
{
    DRV_ENTER_CREATE(cuArrayCreate_v2);
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    CUDA_ARRAY3D_DESCRIPTOR d3 = { d->Width, d->Height, 0, d->Format, d->NumChannels, 0 };
    return array_create(out, &d3);
}

EXPORT CUresult cuArray3DCreate_v2(void **out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    DRV_ENTER_CREATE(cuArray3DCreate_v2);
    NEED_CTX();
    return array_create(out, d);
}

/* The runtime's cudaMallocArray / cudaMalloc3DArray (emu_array_rt.c): an array of the driver's description on the
 * runtime's current device.  Hidden. */
int emu_array_create(void **out, size_t w, size_t h, size_t d, int format, unsigned nch, unsigned flags)
{
    CUDA_ARRAY3D_DESCRIPTOR d3 = { w, h, d, format, nch, flags };
    return array_create(out, &d3);
}

/* The array of handle h, unlinked when `take` (G of the arrays held by the caller). */
static drv_array_t *find(const void *h, int take)
{
    for (drv_array_t **pp = &g_arrays; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            drv_array_t *a = *pp;
            if (take) *pp = a->next;
            return a;
        }
    return NULL;
}

EXPORT CUresult cuArrayDestroy(void *h)
{
    DRV_ENTER(cuArrayDestroy);
    return emu_array_destroy(h);
}

int emu_array_destroy(void *h)
{
    pthread_mutex_lock(&g_arrays_lock);
    drv_array_t *a = find(h, 1);
    pthread_mutex_unlock(&g_arrays_lock);
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    RT(cudaFree(a->mem));
    a->magic = 0;
    free(a);
    return CUDA_SUCCESS;
}

static CUresult describe(const void *h, CUDA_ARRAY3D_DESCRIPTOR *out)
{
    return emu_array_desc(h, out);
}

/* The descriptor of array h (a CUDA_ARRAY3D_DESCRIPTOR), for cudaArrayGetInfo too.  Hidden. */
int emu_array_desc(const void *h, void *outp)
{
    CUDA_ARRAY3D_DESCRIPTOR *out = outp;
    pthread_mutex_lock(&g_arrays_lock);
    drv_array_t *a = find(h, 0);
    if (a) *out = a->d;
    pthread_mutex_unlock(&g_arrays_lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *out, void *h)
{
    DRV_ENTER(cuArrayGetDescriptor_v2);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUresult r = describe(h, &d);
    if (!r) {
        out->Width = d.Width;
        out->Height = d.Height;
        out->Format = d.Format;
        out->NumChannels = d.NumChannels;
    }
    return r;
}

EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *out, void *h)
{
    DRV_ENTER(cuArray3DGetDescriptor_v2);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    return describe(h, out);
}

/* [off, off + n) of array h's bytes: its address, or CUDA_ERROR_INVALID_HANDLE / CUDA_ERROR_INVALID_VALUE. */
static CUresult range(const void *h, size_t off, size_t n, char **at)
{
    void *mem;
    size_t row, height, bytes;
    if (!emu_drv_array(h, &mem, &row, &height, &bytes)) return CUDA_ERROR_INVALID_HANDLE;
    if (off > bytes || n > bytes - off) return CUDA_ERROR_INVALID_VALUE;
    *at = (char *)mem + off;
    return CUDA_SUCCESS;
}

static CUresult copy(void *dst, const void *src, size_t n, int kind, CUstream s, int sync)
{
    NEED_CTX();
    if ((kind == KIND_H2D && !src) || (kind == KIND_D2H && !dst)) return CUDA_ERROR_INVALID_VALUE;
    return RT(emu_copy(dst, n, src, n, n, 1, kind, s, sync));
}

#define TO_ARRAY(name, params, srcexpr, kind, stream, sync) \
    EXPORT CUresult name params \
    { \
        DRV_ENTER(name); \
        char *at; \
        CUresult r = range(dst, off, n, &at); \
        return r ? r : copy(at, srcexpr, n, kind, stream, sync); \
    }
#define FROM_ARRAY(name, params, dstexpr, kind, stream, sync) \
    EXPORT CUresult name params \
    { \
        DRV_ENTER(name); \
        char *at; \
        CUresult r = range(src, off, n, &at); \
        return r ? r : copy(dstexpr, at, n, kind, stream, sync); \
    }
TO_ARRAY(cuMemcpyHtoA_v2, (void *dst, size_t off, const void *host, size_t n), host, KIND_H2D, NULL, 1)
TO_ARRAY(cuMemcpyHtoAAsync_v2, (void *dst, size_t off, const void *host, size_t n, CUstream s), host, KIND_H2D, s, 0)
TO_ARRAY(cuMemcpyDtoA_v2, (void *dst, size_t off, CUdeviceptr d, size_t n), (void *)(uintptr_t)d, KIND_D2D, NULL, 1)
FROM_ARRAY(cuMemcpyAtoH_v2, (void *host, void *src, size_t off, size_t n), host, KIND_D2H, NULL, 1)
FROM_ARRAY(cuMemcpyAtoHAsync_v2, (void *host, void *src, size_t off, size_t n, CUstream s), host, KIND_D2H, s, 0)
FROM_ARRAY(cuMemcpyAtoD_v2, (CUdeviceptr d, void *src, size_t off, size_t n), (void *)(uintptr_t)d, KIND_D2D, NULL, 1)

EXPORT CUresult cuMemcpyAtoA_v2(void *dst, size_t doff, void *src, size_t soff, size_t n)
{
    DRV_ENTER(cuMemcpyAtoA_v2);
    char *d, *s;
    CUresult r = range(dst, doff, n, &d);
    if (!r) r = range(src, soff, n, &s);
    return r ? r : copy(d, s, n, KIND_D2D, NULL, 1);
}

/* CUDA_MEMCPY3D */
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray, *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray, *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
enum { MT_HOST = 1, MT_DEVICE = 2, MT_ARRAY = 3, MT_UNIFIED = 4 };

/* A side of a 3D copy: its first byte, row pitch and slice stride; 1 for device memory (arrays too), 0 host,
 * -1 invalid (an array range past its extent, pitches too small, an unknown memory type). */
static int side3d(int type, const void *host, CUdeviceptr dev, void *array, size_t x, size_t y, size_t z, size_t pitch,
                  size_t height, const CUDA_MEMCPY3D *c, char **at, size_t *rowp, size_t *slicep)
{
    size_t w = c->WidthInBytes, h = c->Height, d = c->Depth;
    if (type == MT_ARRAY) {
        void *mem;
        size_t row, rows, bytes;
        if (!emu_drv_array(array, &mem, &row, &rows, &bytes)) return -1;
        CUDA_ARRAY3D_DESCRIPTOR desc;
        if (describe(array, &desc)) return -1;
        size_t ah = desc.Height ? desc.Height : 1, slices = desc.Depth ? desc.Depth : 1;
        if (x > row || w > row - x || y > ah || h > ah - y || z > slices || d > slices - z) return -1;
        *rowp = row;
        *slicep = row * ah;
        *at = (char *)mem + z * *slicep + y * row + x;
        return 1;
    }
    const char *base = type == MT_HOST ? host : type == MT_DEVICE || type == MT_UNIFIED ? (const char *)(uintptr_t)dev : NULL;
    if (!base) return -1;
    if ((h > 1 || d > 1) && pitch < w) return -1;
    if (d > 1 && height < h) return -1;
    size_t slice, off;
    if (__builtin_mul_overflow(pitch, height, &slice) || __builtin_mul_overflow(z, slice, &off)) return -1;
    *rowp = pitch;
    *slicep = slice;
    *at = (char *)base + off + y * pitch + x;
    return type == MT_DEVICE;
}

static CUresult copy3d(const CUDA_MEMCPY3D *c, CUstream s, int sync)
{
    if (!c || c->srcLOD || c->dstLOD || c->reserved0 || c->reserved1) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    char *src, *dst;
    size_t sr, ss, dr, ds;
    int sd = side3d(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY, c->srcZ,
                    c->srcPitch, c->srcHeight, c, &src, &sr, &ss);
    int dd = side3d(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, c->dstZ,
                    c->dstPitch, c->dstHeight, c, &dst, &dr, &ds);
    if (sd < 0 || dd < 0) return CUDA_ERROR_INVALID_VALUE;
    int kind = sd && dd ? KIND_D2D : sd ? KIND_D2H : dd ? KIND_H2D : 4;
    CUresult r = CUDA_SUCCESS;
    for (size_t z = 0; z < c->Depth && !r; z++)
        r = RT(emu_copy(dst + z * ds, dr, src + z * ss, sr, c->WidthInBytes, c->Height, kind, s, sync));
    return r;
}

EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *c)
{
    DRV_ENTER(cuMemcpy3D_v2);
    return copy3d(c, NULL, 1);
}

EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *c, CUstream s)
{
    DRV_ENTER(cuMemcpy3DAsync_v2);
    return copy3d(c, s, 0);
}

static CUstream ptds(CUstream s) { return s ? s : (CUstream)(uintptr_t)2; }
EXPORT CUresult cuMemcpyHtoAAsync_v2_ptsz(void *dst, size_t off, const void *host, size_t n, CUstream s)
{
    return cuMemcpyHtoAAsync_v2(dst, off, host, n, ptds(s));
}
EXPORT CUresult cuMemcpyAtoHAsync_v2_ptsz(void *host, void *src, size_t off, size_t n, CUstream s)
{
    return cuMemcpyAtoHAsync_v2(host, src, off, n, ptds(s));
}
EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *c, CUstream s) { return cuMemcpy3DAsync_v2(c, ptds(s)); }
/* The synchronous copies take no stream: their per-thread variants are themselves (the legacy stream's order
 * does not apply to a synchronous copy that returns once done). */

#define PROC_V(name, since, fn) { name, since, #fn, (void *)fn },
const proc_t emu_drvarray_procs[] = {
    PROC_V("cuArrayCreate", 0, cuArrayCreate_v2) PROC_V("cuArray3DCreate", 0, cuArray3DCreate_v2)
    PROC_V("cuArrayGetDescriptor", 0, cuArrayGetDescriptor_v2)
    PROC_V("cuArray3DGetDescriptor", 0, cuArray3DGetDescriptor_v2) PROC_V("cuArrayDestroy", 0, cuArrayDestroy)
    PROC_V("cuMemcpyHtoA", 0, cuMemcpyHtoA_v2) PROC_V("cuMemcpyHtoAAsync", 0, cuMemcpyHtoAAsync_v2)
    PROC_V("cuMemcpyDtoA", 0, cuMemcpyDtoA_v2) PROC_V("cuMemcpyAtoH", 0, cuMemcpyAtoH_v2)
    PROC_V("cuMemcpyAtoHAsync", 0, cuMemcpyAtoHAsync_v2) PROC_V("cuMemcpyAtoD", 0, cuMemcpyAtoD_v2)
    PROC_V("cuMemcpyAtoA", 0, cuMemcpyAtoA_v2) PROC_V("cuMemcpy3D", 0, cuMemcpy3D_v2)
    PROC_V("cuMemcpy3DAsync", 0, cuMemcpy3DAsync_v2)
};
const size_t emu_drvarray_nprocs = sizeof emu_drvarray_procs / sizeof *emu_drvarray_procs;
const variant_t emu_drvarray_ptsz[] = {
    { "cuMemcpyHtoAAsync_v2", (void *)cuMemcpyHtoAAsync_v2_ptsz },
    { "cuMemcpyAtoHAsync_v2", (void *)cuMemcpyAtoHAsync_v2_ptsz },
    { "cuMemcpy3DAsync_v2", (void *)cuMemcpy3DAsync_v2_ptsz },
};
const size_t emu_drvarray_nptsz = sizeof emu_drvarray_ptsz / sizeof *emu_drvarray_ptsz;
