/* The runtime's CUDA arrays, mipmapped arrays, copies with arrays, texture and surface objects: each is the
 * driver's (emu_array.c) on the current device, its channel format descriptor translated to the driver's array
 * format, with the runtime's documented argument checks; failures are recorded as the thread's last error.
 * cudaArray_t and cudaMipmappedArray_t are the driver's handles, as in CUDA. */
#include "emu_runtime.h"
#include "emu_array.h"

struct cudaChannelFormatDesc { int x, y, z, w, f; };

enum { K_SIGNED = 0, K_UNSIGNED = 1, K_FLOAT = 2, K_NORM_FIRST = 5, K_NORM_LAST = 16 };
enum { cudaErrorInvalidPitchValue_ = 12, cudaErrorInvalidResourceHandle_ = 400 };

/* A channel format descriptor as the driver's format and channel count; 0: none the emulator stores. */
static int to_format(const struct cudaChannelFormatDesc *c, int *format, unsigned int *channels)
{
    if (c->f >= K_NORM_FIRST && c->f <= K_NORM_LAST) {
        static const unsigned int ch[3] = { 1, 2, 4 };
        *format = 0xc0 + (c->f - K_NORM_FIRST);
        *channels = ch[(c->f - K_NORM_FIRST) % 3];
        return 1;
    }
    int b = c->x;
    unsigned int n = !c->y ? 1 : !c->z ? 2 : 4;
    if ((n == 1 && (c->z || c->w)) || (n == 2 && c->w) || (n == 4 && !c->w)) return 0;
    if ((c->y && c->y != b) || (c->z && c->z != b) || (c->w && c->w != b)) return 0;
    int f = 0;
    switch (c->f) {
    case K_SIGNED: f = b == 8 ? 0x08 : b == 16 ? 0x09 : b == 32 ? 0x0a : 0; break;
    case K_UNSIGNED: f = b == 8 ? 0x01 : b == 16 ? 0x02 : b == 32 ? 0x03 : 0; break;
    case K_FLOAT: f = b == 16 ? 0x10 : b == 32 ? 0x20 : 0; break;
    default: break;
    }
    *format = f;
    *channels = n;
    return f != 0;
}

static void from_format(int f, unsigned int n, struct cudaChannelFormatDesc *c)
{
    *c = (struct cudaChannelFormatDesc){ 0 };
    if (f >= 0xc0 && f <= 0xcb) {
        int bits = (f - 0xc0) / 3 % 2 ? 16 : 8;
        c->f = K_NORM_FIRST + (f - 0xc0);
        c->x = bits;
        if (n > 1) c->y = bits;
        if (n > 2) c->z = c->w = bits;
        return;
    }
    int bits = f == 0x01 || f == 0x08 ? 8 : f == 0x02 || f == 0x09 || f == 0x10 ? 16 : 32;
    c->f = f == 0x10 || f == 0x20 ? K_FLOAT : f >= 0x08 ? K_SIGNED : K_UNSIGNED;
    c->x = bits;
    if (n > 1) c->y = bits;
    if (n > 2) c->z = c->w = bits;
}

static cudaError_t done(int r) { return r ? fail(r) : cudaSuccess; }

/* The runtime's checks, then an array on the current device (its primary context made current). */
static cudaError_t make(void **out, const struct cudaChannelFormatDesc *c, size_t w, size_t h, size_t d,
                        unsigned int flags, unsigned int levels)
{
    if (!out || !c) return fail(cudaErrorInvalidValue);
    emu_array_desc_t ad = { w, h, d, 0, 0, flags };
    if (!to_format(c, &ad.Format, &ad.NumChannels)) return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    return done(levels ? emu_mipmap_create(out, &ad, levels) : emu_array_create(out, &ad));
}

EXPORT cudaError_t cudaMallocArray(void **out, const struct cudaChannelFormatDesc *c, size_t w, size_t h,
                                   unsigned int flags)
{
    RT_ENTER(cudaMallocArray, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (flags & ~(unsigned)(ARR_SURFACE_LDST | ARR_TEXTURE_GATHER)) return fail(cudaErrorInvalidValue);
    return make(out, c, w, h, 0, flags, 0);
}

EXPORT cudaError_t cudaMalloc3DArray(void **out, const struct cudaChannelFormatDesc *c, struct cudaExtent e,
                                     unsigned int flags)
{
    RT_ENTER(cudaMalloc3DArray, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    return make(out, c, e.width, e.height, e.depth, flags, 0);
}

EXPORT cudaError_t cudaMallocMipmappedArray(void **out, const struct cudaChannelFormatDesc *c, struct cudaExtent e,
                                            unsigned int levels, unsigned int flags)
{
    RT_ENTER(cudaMallocMipmappedArray, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    if (!levels) return fail(cudaErrorInvalidValue);
    return make(out, c, e.width, e.height, e.depth, flags, levels);
}

/* The runtime documents cudaErrorInvalidValue for a handle that is no array. */
static cudaError_t handle_err(int r) { return done(r == cudaErrorInvalidResourceHandle_ ? cudaErrorInvalidValue : r); }

EXPORT cudaError_t cudaFreeArray(void *a)
{
    RT_ENTER(cudaFreeArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return a ? handle_err(emu_array_destroy(a)) : cudaSuccess;
}

EXPORT cudaError_t cudaFreeMipmappedArray(void *m)
{
    RT_ENTER(cudaFreeMipmappedArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return m ? handle_err(emu_mipmap_destroy(m)) : cudaSuccess;
}

EXPORT cudaError_t cudaGetMipmappedArrayLevel(void **out, void *m, unsigned int level)
{
    RT_ENTER(cudaGetMipmappedArrayLevel, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    return handle_err(emu_mipmap_level(out, m, level));
}

EXPORT cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *c, struct cudaExtent *e, unsigned int *flags,
                                    void *a)
{
    emu_array_desc_t d;
    RT_ENTER(cudaArrayGetInfo, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!emu_array_get(a, &d)) return fail(cudaErrorInvalidValue);
    if (c) from_format(d.Format, d.NumChannels, c);
    if (e) *e = (struct cudaExtent){ d.Width, d.Height, d.Depth };
    if (flags) *flags = d.Flags;
    return cudaSuccess;
}

/* ------------------------------------------------------------------- copies */

/* An array side at (x bytes, y rows), or memory with pitch p. */
static emu_side_t arr_side(const void *a, size_t x, size_t y) { return (emu_side_t){ .array = (void *)a, .x = x, .y = y }; }
static emu_side_t mem_side(const void *p, size_t pitch) { return (emu_side_t){ .base = (char *)p, .pitch = pitch }; }

static cudaError_t copy(emu_side_t d, emu_side_t s, size_t w, size_t h, size_t depth, int kind, cudaStream_t st,
                        int sync)
{
    if ((unsigned)kind > 4) return fail(cudaErrorInvalidMemcpyDirection);
    if ((!d.array && !d.base) || (!s.array && !s.base)) return fail(cudaErrorInvalidValue);
    /* the documented code for rows wider than a memory side's pitch */
    if (h > 1 && ((!d.array && d.pitch < w) || (!s.array && s.pitch < w))) return fail(cudaErrorInvalidPitchValue_);
    ensure_ctx(t_dev);
    return handle_err(emu_array_copy(&d, &s, w, h, depth, kind, st, sync));
}

EXPORT cudaError_t cudaMemcpy2DToArray(void *dst, size_t wo, size_t ho, const void *src, size_t spitch, size_t w,
                                       size_t h, int kind)
{
    RT_ENTER(cudaMemcpy2DToArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy(arr_side(dst, wo, ho), mem_side(src, spitch), w, h, 1, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpy2DToArrayAsync(void *dst, size_t wo, size_t ho, const void *src, size_t spitch,
                                            size_t w, size_t h, int kind, cudaStream_t st)
{
    RT_ENTER(cudaMemcpy2DToArrayAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy(arr_side(dst, wo, ho), mem_side(src, spitch), w, h, 1, kind, st, 0);
}

EXPORT cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, const void *src, size_t wo, size_t ho,
                                         size_t w, size_t h, int kind)
{
    RT_ENTER(cudaMemcpy2DFromArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy(mem_side(dst, dpitch), arr_side(src, wo, ho), w, h, 1, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, const void *src, size_t wo, size_t ho,
                                              size_t w, size_t h, int kind, cudaStream_t st)
{
    RT_ENTER(cudaMemcpy2DFromArrayAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy(mem_side(dst, dpitch), arr_side(src, wo, ho), w, h, 1, kind, st, 0);
}

/* Deprecated: count bytes from (wo, ho) in one row. */
EXPORT cudaError_t cudaMemcpyToArray(void *dst, size_t wo, size_t ho, const void *src, size_t n, int kind)
{
    RT_ENTER(cudaMemcpyToArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy(arr_side(dst, wo, ho), mem_side(src, n), n, 1, 1, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpyFromArray(void *dst, const void *src, size_t wo, size_t ho, size_t n, int kind)
{
    RT_ENTER(cudaMemcpyFromArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy(mem_side(dst, n), arr_side(src, wo, ho), n, 1, 1, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpy2DArrayToArray(void *dst, size_t dwo, size_t dho, const void *src, size_t swo,
                                            size_t sho, size_t w, size_t h, int kind)
{
    RT_ENTER(cudaMemcpy2DArrayToArray, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy(arr_side(dst, dwo, dho), arr_side(src, swo, sho), w, h, 1, kind, NULL, 1);
}

/* cudaMemcpy3DParms: an array or a pitched pointer on each side (not both); with an array in the copy the
 * extent and the array's position are in its elements, else in bytes. */
static cudaError_t copy3d(const struct cudaMemcpy3DParms *p, cudaStream_t st, int sync)
{
    if (!p) return fail(cudaErrorInvalidValue);
    if ((p->srcArray != NULL) == (p->srcPtr.ptr != NULL) || (p->dstArray != NULL) == (p->dstPtr.ptr != NULL))
        return fail(cudaErrorInvalidValue);
    size_t elem = 1, se = 0, de = 0;
    emu_array_desc_t d;
    if (p->srcArray) {
        if (!emu_array_get(p->srcArray, &d)) return fail(cudaErrorInvalidValue);
        se = emu_array_elem(d.Format, d.NumChannels);
    }
    if (p->dstArray) {
        if (!emu_array_get(p->dstArray, &d)) return fail(cudaErrorInvalidValue);
        de = emu_array_elem(d.Format, d.NumChannels);
    }
    if (se && de && se != de) return fail(cudaErrorInvalidValue);
    elem = se ? se : de ? de : 1;
    emu_side_t s = p->srcArray ? arr_side(p->srcArray, p->srcPos.x * elem, p->srcPos.y)
                               : (emu_side_t){ .base = p->srcPtr.ptr, .pitch = p->srcPtr.pitch, .height = p->srcPtr.ysize,
                                               .x = p->srcPos.x, .y = p->srcPos.y };
    emu_side_t t = p->dstArray ? arr_side(p->dstArray, p->dstPos.x * elem, p->dstPos.y)
                               : (emu_side_t){ .base = p->dstPtr.ptr, .pitch = p->dstPtr.pitch, .height = p->dstPtr.ysize,
                                               .x = p->dstPos.x, .y = p->dstPos.y };
    s.z = p->srcPos.z;
    t.z = p->dstPos.z;
    if (p->extent.width > SIZE_MAX / elem) return fail(cudaErrorInvalidValue);
    return copy(t, s, p->extent.width * elem, p->extent.height, p->extent.depth, p->kind, st, sync);
}

EXPORT cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
    RT_ENTER(cudaMemcpy3D, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy3d(p, NULL, 1);
}

EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t st)
{
    RT_ENTER(cudaMemcpy3DAsync, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return copy3d(p, st, 0);
}

/* ------------------------------------------------------ texture and surface objects */

struct cudaResourceDesc {
    int resType;
    union {
        struct { void *array; } array;
        struct { void *mipmap; } mipmap;
        struct { void *devPtr; struct cudaChannelFormatDesc desc; size_t sizeInBytes; } linear;
        struct { void *devPtr; struct cudaChannelFormatDesc desc; size_t width, height, pitchInBytes; } pitch2D;
        int reserved[32];
    } res;
    unsigned int flags;
};
struct cudaTextureDesc {
    int addressMode[3];
    int filterMode, readMode, sRGB;
    float borderColor[4];
    int normalizedCoords;
    unsigned int maxAnisotropy;
    int mipmapFilterMode;
    float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
    int disableTrilinearOptimization, seamlessCubemap;
};
struct cudaResourceViewDesc {
    int format;
    size_t width, height, depth;
    unsigned int firstMipmapLevel, lastMipmapLevel, firstLayer, lastLayer;
    unsigned int reserved[16];
};

/* The runtime's resource description as the driver's; 0: a channel descriptor the emulator does not store. */
static int to_res(const struct cudaResourceDesc *r, emu_res_desc_t *o)
{
    *o = (emu_res_desc_t){ .resType = r->resType, .flags = r->flags };
    switch (r->resType) {
    case RES_ARRAY: o->res.array.hArray = r->res.array.array; return 1;
    case RES_MIPMAP: o->res.mipmap.hMipmappedArray = r->res.mipmap.mipmap; return 1;
    case RES_LINEAR:
        o->res.linear.devPtr = (uintptr_t)r->res.linear.devPtr;
        o->res.linear.sizeInBytes = r->res.linear.sizeInBytes;
        return to_format(&r->res.linear.desc, &o->res.linear.format, &o->res.linear.numChannels);
    case RES_PITCH2D:
        o->res.pitch2D.devPtr = (uintptr_t)r->res.pitch2D.devPtr;
        o->res.pitch2D.width = r->res.pitch2D.width;
        o->res.pitch2D.height = r->res.pitch2D.height;
        o->res.pitch2D.pitchInBytes = r->res.pitch2D.pitchInBytes;
        return to_format(&r->res.pitch2D.desc, &o->res.pitch2D.format, &o->res.pitch2D.numChannels);
    default: return 1;       /* the driver's check refuses it */
    }
}

EXPORT cudaError_t cudaCreateTextureObject(unsigned long long *out, const struct cudaResourceDesc *r,
                                           const struct cudaTextureDesc *t, const struct cudaResourceViewDesc *v)
{
    RT_ENTER(cudaCreateTextureObject, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    emu_res_desc_t res;
    if (!out || !r || !t || !to_res(r, &res)) return fail(cudaErrorInvalidValue);
    if ((unsigned)t->readMode > 1) return fail(cudaErrorInvalidValue);   /* element type, normalized float */
    emu_tex_desc_t tex = { .filterMode = t->filterMode, .maxAnisotropy = t->maxAnisotropy,
                           .mipmapFilterMode = t->mipmapFilterMode, .mipmapLevelBias = t->mipmapLevelBias,
                           .minMipmapLevelClamp = t->minMipmapLevelClamp,
                           .maxMipmapLevelClamp = t->maxMipmapLevelClamp };
    memcpy(tex.addressMode, t->addressMode, sizeof tex.addressMode);
    memcpy(tex.borderColor, t->borderColor, sizeof tex.borderColor);
    /* CU_TRSF_*: read as integer (cudaReadModeElementType), normalized coordinates, sRGB, trilinear, cubemap */
    tex.flags = (t->readMode == 0 ? 0x1 : 0) | (t->normalizedCoords ? 0x2 : 0) | (t->sRGB ? 0x10 : 0)
                | (t->disableTrilinearOptimization ? 0x20 : 0) | (t->seamlessCubemap ? 0x40 : 0);
    emu_view_desc_t view;
    if (v) {
        view = (emu_view_desc_t){ .format = v->format, .width = v->width, .height = v->height, .depth = v->depth,
                                  .firstMipmapLevel = v->firstMipmapLevel, .lastMipmapLevel = v->lastMipmapLevel,
                                  .firstLayer = v->firstLayer, .lastLayer = v->lastLayer };
    }
    ensure_ctx(t_dev);
    return done(emu_texobj_create(out, &res, &tex, v ? &view : NULL));
}

EXPORT cudaError_t cudaDestroyTextureObject(unsigned long long o)
{
    RT_ENTER(cudaDestroyTextureObject, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return done(emu_obj_destroy(o, 0));
}

EXPORT cudaError_t cudaCreateSurfaceObject(unsigned long long *out, const struct cudaResourceDesc *r)
{
    RT_ENTER(cudaCreateSurfaceObject, cudaErrorMemoryAllocation);
    RT_NEED_DEVICE();
    emu_res_desc_t res;
    if (!out || !r || !to_res(r, &res)) return fail(cudaErrorInvalidValue);
    ensure_ctx(t_dev);
    return done(emu_surfobj_create(out, &res));
}

EXPORT cudaError_t cudaDestroySurfaceObject(unsigned long long o)
{
    RT_ENTER(cudaDestroySurfaceObject, cudaErrorUnknown);
    RT_NEED_DEVICE();
    return done(emu_obj_destroy(o, 1));
}

/* The getters: the descriptions as created, in the runtime's structs (linear and pitched memory's channel
 * format from the driver's format it was stored as). */
static void from_res(const emu_res_desc_t *r, struct cudaResourceDesc *o)
{
    memset(o, 0, sizeof *o);
    o->resType = r->resType;
    o->flags = r->flags;
    switch (r->resType) {
    case RES_ARRAY: o->res.array.array = r->res.array.hArray; break;
    case RES_MIPMAP: o->res.mipmap.mipmap = r->res.mipmap.hMipmappedArray; break;
    case RES_LINEAR:
        o->res.linear.devPtr = (void *)(uintptr_t)r->res.linear.devPtr;
        o->res.linear.sizeInBytes = r->res.linear.sizeInBytes;
        from_format(r->res.linear.format, r->res.linear.numChannels, &o->res.linear.desc);
        break;
    default:
        o->res.pitch2D.devPtr = (void *)(uintptr_t)r->res.pitch2D.devPtr;
        o->res.pitch2D.width = r->res.pitch2D.width;
        o->res.pitch2D.height = r->res.pitch2D.height;
        o->res.pitch2D.pitchInBytes = r->res.pitch2D.pitchInBytes;
        from_format(r->res.pitch2D.format, r->res.pitch2D.numChannels, &o->res.pitch2D.desc);
        break;
    }
}

EXPORT cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc *c, const void *a)
{
    emu_array_desc_t d;
    RT_ENTER(cudaGetChannelDesc, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!c || !emu_array_get(a, &d)) return fail(cudaErrorInvalidValue);
    from_format(d.Format, d.NumChannels, c);
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc *out, unsigned long long o)
{
    emu_res_desc_t r;
    RT_ENTER(cudaGetTextureObjectResourceDesc, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    int e = emu_obj_get(o, 0, &r, NULL, NULL, NULL);
    if (e) return fail(e);
    from_res(&r, out);
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc *out, unsigned long long o)
{
    emu_tex_desc_t t;
    RT_ENTER(cudaGetTextureObjectTextureDesc, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    int e = emu_obj_get(o, 0, NULL, &t, NULL, NULL);
    if (e) return fail(e);
    *out = (struct cudaTextureDesc){ .filterMode = t.filterMode, .readMode = t.flags & 0x1 ? 0 : 1,
                                     .sRGB = !!(t.flags & 0x10), .normalizedCoords = !!(t.flags & 0x2),
                                     .maxAnisotropy = t.maxAnisotropy, .mipmapFilterMode = t.mipmapFilterMode,
                                     .mipmapLevelBias = t.mipmapLevelBias,
                                     .minMipmapLevelClamp = t.minMipmapLevelClamp,
                                     .maxMipmapLevelClamp = t.maxMipmapLevelClamp,
                                     .disableTrilinearOptimization = !!(t.flags & 0x20),
                                     .seamlessCubemap = !!(t.flags & 0x40) };
    memcpy(out->addressMode, t.addressMode, sizeof out->addressMode);
    memcpy(out->borderColor, t.borderColor, sizeof out->borderColor);
    return cudaSuccess;
}

EXPORT cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc *out, unsigned long long o)
{
    emu_res_desc_t r;
    RT_ENTER(cudaGetSurfaceObjectResourceDesc, cudaErrorUnknown);
    RT_NEED_DEVICE();
    if (!out) return fail(cudaErrorInvalidValue);
    int e = emu_obj_get(o, 1, &r, NULL, NULL, NULL);
    if (e) return fail(e);
    from_res(&r, out);
    return cudaSuccess;
}
