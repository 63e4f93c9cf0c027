/* The runtime's CUDA arrays (issue 33): cudaMallocArray / cudaMalloc3DArray / cudaFreeArray / cudaArrayGetInfo and
 * the 2D copies to, from and between arrays, over the driver stand-in's arrays (emu_drvarray.c: a cudaArray_t is a
 * CUarray, as in CUDA).  A channel descriptor becomes the driver's format: every used channel (x, y, z, w nonzero
 * from the first) of one size, 8 / 16 / 32 bits signed or unsigned, 16 / 32 bits float; another is
 * cudaErrorInvalidChannelDescriptor.  Copies keep the runtime's kind checks (emu_memory.c's emu_copy); an array
 * range past its rows is cudaErrorInvalidValue, an unknown array cudaErrorInvalidResourceHandle. */
#include "emu_runtime.h"

typedef struct { int x, y, z, w, f; } channel_desc_t;
typedef struct { size_t width, height, depth; } extent_t;
typedef struct { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; } array_desc_t;
enum { CH_SIGNED = 0, CH_UNSIGNED = 1, CH_FLOAT = 2 };
enum { cudaErrorInvalidPitchValue = 12, cudaErrorInvalidChannelDescriptor = 20 };

/* emu_drvarray.c (CUresult codes: the runtime's values) */
int emu_array_create(void **out, size_t w, size_t h, size_t d, int format, unsigned nch, unsigned flags);
int emu_array_destroy(void *h);
int emu_array_desc(const void *h, void *out);
int emu_drv_array(const void *h, void **mem, size_t *row, size_t *height, size_t *bytes);

/* The driver's format and channel count of a channel descriptor; 0: not one the arrays have. */
static int format_of(const channel_desc_t *c, unsigned *nch)
{
    int bits[4] = { c->x, c->y, c->z, c->w };
    unsigned n = 0;
    while (n < 4 && bits[n]) n++;
    for (unsigned i = n; i < 4; i++)
        if (bits[i]) return 0;
    for (unsigned i = 1; i < n; i++)
        if (bits[i] != bits[0]) return 0;
    if (n != 1 && n != 2 && n != 4) return 0;
    *nch = n;
    switch (c->f) {
    case CH_SIGNED: return bits[0] == 8 ? 0x08 : bits[0] == 16 ? 0x09 : bits[0] == 32 ? 0x0a : 0;
    case CH_UNSIGNED: return bits[0] == 8 ? 0x01 : bits[0] == 16 ? 0x02 : bits[0] == 32 ? 0x03 : 0;
    case CH_FLOAT: return bits[0] == 16 ? 0x10 : bits[0] == 32 ? 0x20 : 0;
    default: return 0;
    }
}

static cudaError_t malloc_array(void **out, const channel_desc_t *c, size_t w, size_t h, size_t d, unsigned flags)
{
    unsigned nch = 0;
    if (!out || !c) return cudaErrorInvalidValue;
    int format = format_of(c, &nch);
    if (!format) return cudaErrorInvalidChannelDescriptor;
    return emu_array_create(out, w, h, d, format, nch, flags);
}

EXPORT cudaError_t cudaMallocArray(void **out, const channel_desc_t *c, size_t w, size_t h, unsigned int flags)
{
    RT_ENTER(cudaMallocArray, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (flags & ~(2u | 8u)) return fail(cudaErrorInvalidValue);      /* SurfaceLoadStore, TextureGather */
    cudaError_t err = malloc_array(out, c, w, h, 0, flags);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaMalloc3DArray(void **out, const channel_desc_t *c, extent_t e, unsigned int flags)
{
    RT_ENTER(cudaMalloc3DArray, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    cudaError_t err = malloc_array(out, c, e.width, e.height, e.depth, flags);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaFreeArray(void *a)
{
    RT_ENTER(cudaFreeArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!a) return cudaSuccess;
    cudaError_t err = emu_array_destroy(a);
    return err ? fail(err) : cudaSuccess;
}

EXPORT cudaError_t cudaArrayGetInfo(channel_desc_t *c, extent_t *e, unsigned int *flags, void *a)
{
    RT_ENTER(cudaArrayGetInfo, cudaErrorUnknown);
    RT_NEED_DEVICE();
    array_desc_t d;
    cudaError_t err = emu_array_desc(a, &d);
    if (err) return fail(err);
    if (c) {
        int bits = d.Format == 0x01 || d.Format == 0x08 ? 8 : d.Format == 0x02 || d.Format == 0x09 || d.Format == 0x10 ? 16 : 32;
        channel_desc_t v = { bits, d.NumChannels > 1 ? bits : 0, d.NumChannels > 2 ? bits : 0,
                             d.NumChannels > 2 ? bits : 0,
                             d.Format >= 0x10 ? CH_FLOAT : d.Format >= 0x08 ? CH_SIGNED : CH_UNSIGNED };
        *c = v;
    }
    if (e) { e->width = d.Width; e->height = d.Height; e->depth = d.Depth; }
    if (flags) *flags = d.Flags;
    return cudaSuccess;
}

/* The address of (x bytes, row y) of array a with `width` x `rows` bytes inside it, and its row pitch. */
static cudaError_t at(const void *a, size_t x, size_t y, size_t width, size_t rows, char **p, size_t *pitch)
{
    void *mem;
    size_t row, height, bytes;
    if (!emu_drv_array(a, &mem, &row, &height, &bytes)) return cudaErrorInvalidResourceHandle;
    if (x > row || width > row - x || y > height || rows > height - y) return cudaErrorInvalidValue;
    *p = (char *)mem + y * row + x;
    *pitch = row;
    return cudaSuccess;
}

static cudaError_t to_array(void *a, size_t x, size_t y, const void *src, size_t spitch, size_t w, size_t h, int kind,
                            cudaStream_t s, int sync)
{
    char *p;
    size_t pitch;
    cudaError_t err = at(a, x, y, w, h, &p, &pitch);
    if (!err && h > 1 && spitch < w) err = cudaErrorInvalidPitchValue;
    if (err) return fail(err);
    return emu_copy(p, pitch, src, spitch, w, h, kind, s, sync);
}

static cudaError_t from_array(void *dst, size_t dpitch, const void *a, size_t x, size_t y, size_t w, size_t h,
                              int kind, cudaStream_t s, int sync)
{
    char *p;
    size_t pitch;
    cudaError_t err = at(a, x, y, w, h, &p, &pitch);
    if (!err && h > 1 && dpitch < w) err = cudaErrorInvalidPitchValue;
    if (err) return fail(err);
    return emu_copy(dst, dpitch, p, pitch, w, h, kind, s, sync);
}

EXPORT cudaError_t cudaMemcpy2DToArray(void *a, size_t x, size_t y, const void *src, size_t spitch, size_t w, size_t h,
                                       int kind)
{
    RT_ENTER(cudaMemcpy2DToArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return to_array(a, x, y, src, spitch, w, h, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpy2DToArrayAsync(void *a, size_t x, size_t y, const void *src, size_t spitch, size_t w,
                                            size_t h, int kind, cudaStream_t s)
{
    RT_ENTER(cudaMemcpy2DToArrayAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return to_array(a, x, y, src, spitch, w, h, kind, s, 0);
}

EXPORT cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, const void *a, size_t x, size_t y, size_t w, size_t h,
                                         int kind)
{
    RT_ENTER(cudaMemcpy2DFromArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return from_array(dst, dpitch, a, x, y, w, h, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, const void *a, size_t x, size_t y, size_t w,
                                              size_t h, int kind, cudaStream_t s)
{
    RT_ENTER(cudaMemcpy2DFromArrayAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return from_array(dst, dpitch, a, x, y, w, h, kind, s, 0);
}

EXPORT cudaError_t cudaMemcpy2DArrayToArray(void *dst, size_t dx, size_t dy, const void *src, size_t sx, size_t sy,
                                            size_t w, size_t h, int kind)
{
    RT_ENTER(cudaMemcpy2DArrayToArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (kind != 3 && kind != 4) return fail(cudaErrorInvalidMemcpyDirection);   /* device to device, default */
    char *d, *s;
    size_t dp, sp;
    cudaError_t err = at(dst, dx, dy, w, h, &d, &dp);
    if (!err) err = at(src, sx, sy, w, h, &s, &sp);
    if (err) return fail(err);
    return emu_copy(d, dp, s, sp, w, h, kind, NULL, 1);
}
