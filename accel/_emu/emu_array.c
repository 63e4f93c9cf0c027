/* CUDA arrays, mipmapped arrays, texture and surface objects in the driver API (libcuda.so.1 stand-in), and the
 * core the runtime's forms share (emu_array_rt.c).
 *
 * An array is a descriptor plus a device allocation of its elements packed row after row, slice after slice
 * (cudaMalloc: it counts against the device's memory as the driver's arrays do, and fails as it does when the
 * device is full); its handle is validated against the live arrays before any use.  A mipmapped array is its
 * levels, each such an array (not destroyable on its own).  Texture and surface objects are descriptors: their
 * resource, texture and view descriptions are checked as the driver documents and kept as given; sampling them
 * in kernels is not emulated yet.  Copies with an array on either side (cuMemcpy2D/3D, cuMemcpyAtoH & co) are
 * row copies of the emulated runtime's memory (emu_copy), with the array's bounds checked.
 *
 * Formats stored: the integer, half and float formats with 1, 2 or 4 channels and the normalized
 * UNORM/SNORM_INT8/16X1/X2/X4 formats; the block-compressed, video (YUV) and packed formats, sparse, deferred-mapping,
 * depth, color-attachment and video arrays are CUDA_ERROR_NOT_SUPPORTED (logged with ACCEL_EMU_TRACE=1).
 * Size limits are the device's own attributes (cuDeviceGetAttribute: textures', or surfaces' for
 * CUDA_ARRAY3D_SURFACE_LDST arrays). */
#include <stdio.h>

#include "emu_driver.h"
#include "emu_array.h"

#define DP(x) ((void *)(uintptr_t)(x))

int cudaMalloc(void **, size_t);
int cudaFree(void *);
int cudaGetDevice(int *);
int cudaDeviceGetAttribute(int *, int, int);

enum { CUDA_ERROR_INVALID_HANDLE = 400 };

/* ------------------------------------------------------------------ formats */

size_t emu_array_elem(int f, unsigned int n)
{
    if (f >= 0xc0 && f <= 0xcb) {            /* UNORM/SNORM_INT8/16 X1, X2, X4: the channels are the format's */
        static const unsigned int ch[3] = { 1, 2, 4 };
        unsigned int c = ch[(f - 0xc0) % 3];
        size_t b = (f - 0xc0) / 3 % 2 ? 2 : 1;
        return n == c ? b * c : 0;
    }
    if (n != 1 && n != 2 && n != 4) return 0;
    switch (f) {
    case 0x01: case 0x08: return n;              /* (UN)SIGNED_INT8 */
    case 0x02: case 0x09: case 0x10: return 2 * (size_t)n;   /* (UN)SIGNED_INT16, HALF */
    case 0x03: case 0x0a: case 0x20: return 4 * (size_t)n;   /* (UN)SIGNED_INT32, FLOAT */
    default: return 0;
    }
}

/* The formats CUDA 13 has that the emulator does not store (packed, planar and block-compressed). */
static int format_known(int f)
{
    return (f >= 0x50 && f <= 0x5e) || (f >= 0x91 && f <= 0x9f) || (f >= 0xa1 && f <= 0xa9) || (f >= 0xb0 && f <= 0xb5);
}

static CUresult refuse(const char *what)
{
    static atomic_int seen[8];
    static const char *names[8];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int i;
    pthread_mutex_lock(&lock);
    for (i = 0; i < 7 && names[i] && strcmp(names[i], what); i++) {}
    if (!names[i]) names[i] = what;
    pthread_mutex_unlock(&lock);
    if (emu_trace_unsupported) emu_trace_unsupported(what, &seen[i]);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ------------------------------------------------------------------- arrays */

typedef struct arr {
    struct arr *next;
    emu_array_desc_t d;
    size_t elem, bytes;
    void *data;
    int device;
    int level;                  /* a mipmapped array's level: not destroyed on its own */
} arr_t;

typedef struct mip {
    struct mip *next;
    unsigned int n;
    arr_t **levels;
} mip_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static arr_t *g_arrays;
static mip_t *g_mips;

static arr_t *find_array(const void *a)
{
    arr_t *p;
    for (p = g_arrays; p && p != a; p = p->next) {}
    return p;
}

static int attr(int a, int dev)
{
    int v = 0;
    return RT(cudaDeviceGetAttribute(&v, a, dev)) ? 0 : v;
}

/* Device attributes: the limits of each kind of array, textures' then surfaces'. */
enum { A_TEX1D = 21, A_TEX2D_W = 22, A_TEX2D_H = 23, A_TEX3D_W = 24, A_TEX3D_H = 25, A_TEX3D_D = 26,
       A_TEX2DL_W = 27, A_TEX2DL_H = 28, A_TEX2DL_N = 29, A_TEX1DL_W = 42, A_TEX1DL_N = 43,
       A_GATHER_W = 45, A_GATHER_H = 46, A_CUBE_W = 52, A_CUBEL_W = 53, A_CUBEL_N = 54,
       A_SURF1D = 55, A_SURF2D_W = 56, A_SURF2D_H = 57, A_SURF3D_W = 58, A_SURF3D_H = 59, A_SURF3D_D = 60,
       A_SURF1DL_W = 61, A_SURF1DL_N = 62, A_SURF2DL_W = 63, A_SURF2DL_H = 64, A_SURF2DL_N = 65,
       A_SURFCUBE_W = 66, A_SURFCUBEL_W = 67, A_SURFCUBEL_N = 68, A_TEX1D_LINEAR = 69, A_TEX2D_LIN_W = 70,
       A_TEX2D_LIN_H = 71, A_TEX2D_LIN_P = 72, A_TEX_ALIGN = 14, A_TEX_PITCH_ALIGN = 51 };

static int within(size_t v, int a, int dev) { return v <= (size_t)attr(a, dev); }

/* The documented shape rules of a CUDA_ARRAY3D_DESCRIPTOR and the device's limits for its kind. */
static CUresult check_desc(const emu_array_desc_t *d, int dev, size_t *elem)
{
    const unsigned int known = 0x1ff;
    unsigned int f = d->Flags;
    if (f & ~known) return CUDA_ERROR_INVALID_VALUE;
    *elem = emu_array_elem(d->Format, d->NumChannels);
    if (!*elem) return format_known(d->Format) ? refuse("CUDA arrays of packed, planar or compressed formats")
                                               : CUDA_ERROR_INVALID_VALUE;
    if (f & (ARR_SPARSE | ARR_DEFERRED_MAPPING)) return refuse("sparse and deferred-mapping CUDA arrays");
    if (f & (ARR_DEPTH_TEXTURE | ARR_COLOR_ATTACHMENT | ARR_VIDEO_ENCODE_DECODE))
        return refuse("depth, color-attachment and video CUDA arrays");
    size_t w = d->Width, h = d->Height, n = d->Depth;
    int s = (f & ARR_SURFACE_LDST) != 0, ok;
    if (!w) return CUDA_ERROR_INVALID_VALUE;
    if (f & ARR_CUBEMAP) {
        if (w != h || ((f & ARR_LAYERED) ? (!n || n % 6) : n != 6)) return CUDA_ERROR_INVALID_VALUE;
        ok = (f & ARR_LAYERED) ? within(w, s ? A_SURFCUBEL_W : A_CUBEL_W, dev) && within(n, s ? A_SURFCUBEL_N : A_CUBEL_N, dev)
                               : within(w, s ? A_SURFCUBE_W : A_CUBE_W, dev);
    } else if (f & ARR_LAYERED) {
        if (!n) return CUDA_ERROR_INVALID_VALUE;
        ok = h ? within(w, s ? A_SURF2DL_W : A_TEX2DL_W, dev) && within(h, s ? A_SURF2DL_H : A_TEX2DL_H, dev)
                     && within(n, s ? A_SURF2DL_N : A_TEX2DL_N, dev)
               : within(w, s ? A_SURF1DL_W : A_TEX1DL_W, dev) && within(n, s ? A_SURF1DL_N : A_TEX1DL_N, dev);
    } else if (!h) {
        if (n) return CUDA_ERROR_INVALID_VALUE;
        ok = within(w, s ? A_SURF1D : A_TEX1D, dev);
    } else if (!n) {
        ok = within(w, s ? A_SURF2D_W : A_TEX2D_W, dev) && within(h, s ? A_SURF2D_H : A_TEX2D_H, dev);
    } else {
        ok = within(w, s ? A_SURF3D_W : A_TEX3D_W, dev) && within(h, s ? A_SURF3D_H : A_TEX3D_H, dev)
             && within(n, s ? A_SURF3D_D : A_TEX3D_D, dev);
    }
    if (f & ARR_TEXTURE_GATHER) {
        if ((f & (ARR_LAYERED | ARR_CUBEMAP)) || !h || n) return CUDA_ERROR_INVALID_VALUE;
        ok = ok && within(w, A_GATHER_W, dev) && within(h, A_GATHER_H, dev);
    }
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static size_t extent_bytes(const emu_array_desc_t *d, size_t elem)
{
    return d->Width * elem * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1);
}

/* A new array (checked), not yet listed. */
static CUresult make_array(arr_t **out, const emu_array_desc_t *d, size_t elem, int dev)
{
    arr_t *a = calloc(1, sizeof *a);
    if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
    a->d = *d;
    a->elem = elem;
    a->bytes = extent_bytes(d, elem);
    a->device = dev;
    CUresult r = RT(cudaMalloc(&a->data, a->bytes));
    if (r) {
        free(a);
        return r == 1 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = a;
    return CUDA_SUCCESS;
}

static int current_device(void)
{
    int dev = 0;
    return RT(cudaGetDevice(&dev)) ? -1 : dev;
}

int emu_array_create(void **out, const emu_array_desc_t *d)
{
    size_t elem;
    int dev = current_device();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = check_desc(d, dev, &elem);
    arr_t *a;
    if (r || (r = make_array(&a, d, elem, dev))) return r;
    pthread_mutex_lock(&g_lock);
    a->next = g_arrays;
    g_arrays = a;
    pthread_mutex_unlock(&g_lock);
    *out = a;
    return CUDA_SUCCESS;
}

int emu_array_destroy(void *h)
{
    pthread_mutex_lock(&g_lock);
    arr_t **pp = &g_arrays;
    while (*pp && *pp != h) pp = &(*pp)->next;
    arr_t *a = *pp;
    if (!a || a->level) {
        pthread_mutex_unlock(&g_lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *pp = a->next;
    pthread_mutex_unlock(&g_lock);
    RT(cudaFree(a->data));
    free(a);
    return CUDA_SUCCESS;
}

int emu_array_get(const void *h, emu_array_desc_t *d)
{
    pthread_mutex_lock(&g_lock);
    arr_t *a = find_array(h);
    if (a) *d = a->d;
    pthread_mutex_unlock(&g_lock);
    return a != NULL;
}

/* ------------------------------------------------------- mipmapped arrays */

static size_t halve(size_t v, unsigned int l) { return v >> l ? v >> l : 1; }

int emu_mipmap_create(void **out, const emu_array_desc_t *d, unsigned int levels)
{
    size_t elem;
    int dev = current_device();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = check_desc(d, dev, &elem);
    if (r) return r;
    int layered = (d->Flags & (ARR_LAYERED | ARR_CUBEMAP)) != 0;
    size_t big = d->Width > d->Height ? d->Width : d->Height;
    if (!layered && d->Depth > big) big = d->Depth;
    unsigned int most = 1;
    while (big >> most) most++;                  /* 1 + floor(log2(largest extent)) */
    if (!levels || levels > most) return CUDA_ERROR_INVALID_VALUE;
    mip_t *m = calloc(1, sizeof *m);
    arr_t **lv = calloc(levels, sizeof *lv);
    if (!m || !lv) {
        free(m);
        free(lv);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned int l = 0; l < levels && !r; l++) {
        emu_array_desc_t ld = *d;
        ld.Width = halve(d->Width, l);
        ld.Height = d->Height ? halve(d->Height, l) : 0;
        ld.Depth = d->Depth && !layered ? halve(d->Depth, l) : d->Depth;
        r = make_array(&lv[l], &ld, elem, dev);
        if (!r) lv[l]->level = 1;
    }
    if (r) {
        for (unsigned int l = 0; l < levels && lv[l]; l++) {
            RT(cudaFree(lv[l]->data));
            free(lv[l]);
        }
        free(lv);
        free(m);
        return r;
    }
    m->n = levels;
    m->levels = lv;
    pthread_mutex_lock(&g_lock);
    for (unsigned int l = 0; l < levels; l++) {
        lv[l]->next = g_arrays;
        g_arrays = lv[l];
    }
    m->next = g_mips;
    g_mips = m;
    pthread_mutex_unlock(&g_lock);
    *out = m;
    return CUDA_SUCCESS;
}

static mip_t *find_mip(const void *h)
{
    mip_t *m;
    for (m = g_mips; m && m != h; m = m->next) {}
    return m;
}

int emu_mipmap_level(void **out, void *h, unsigned int level)
{
    pthread_mutex_lock(&g_lock);
    mip_t *m = find_mip(h);
    CUresult r = !m ? CUDA_ERROR_INVALID_HANDLE : level >= m->n ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (!r) *out = m->levels[level];
    pthread_mutex_unlock(&g_lock);
    return r;
}

int emu_mipmap_destroy(void *h)
{
    pthread_mutex_lock(&g_lock);
    mip_t **pp = &g_mips;
    while (*pp && *pp != h) pp = &(*pp)->next;
    mip_t *m = *pp;
    if (!m) {
        pthread_mutex_unlock(&g_lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *pp = m->next;
    for (unsigned int l = 0; l < m->n; l++) {
        arr_t **ap = &g_arrays;
        while (*ap && *ap != m->levels[l]) ap = &(*ap)->next;
        if (*ap) *ap = m->levels[l]->next;
    }
    pthread_mutex_unlock(&g_lock);
    for (unsigned int l = 0; l < m->n; l++) {
        RT(cudaFree(m->levels[l]->data));
        free(m->levels[l]);
    }
    free(m->levels);
    free(m);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------- copies */

/* Resolves an array side: its first byte, row pitch and rows per slice, the region's bounds checked. */
static CUresult resolve(emu_side_t *s, size_t width, size_t height, size_t depth)
{
    if (!s->array) return CUDA_SUCCESS;
    pthread_mutex_lock(&g_lock);
    arr_t *a = find_array(s->array);
    emu_array_desc_t d;
    size_t elem = 0;
    char *data = NULL;
    if (a) {
        d = a->d;
        elem = a->elem;
        data = a->data;
    }
    pthread_mutex_unlock(&g_lock);
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    size_t row = d.Width * elem, rows = d.Height ? d.Height : 1, slices = d.Depth ? d.Depth : 1;
    if (s->x > row || width > row - s->x || s->y > rows || height > rows - s->y || s->z > slices
        || depth > slices - s->z)
        return CUDA_ERROR_INVALID_VALUE;
    s->base = data;
    s->pitch = row;
    s->height = rows;
    return CUDA_SUCCESS;
}

int emu_array_copy(const emu_side_t *dst0, const emu_side_t *src0, size_t width, size_t height, size_t depth,
                   int kind, void *st, int sync)
{
    emu_side_t d = *dst0, s = *src0;
    CUresult r = resolve(&d, width, height, depth);
    if (r || (r = resolve(&s, width, height, depth))) return r;
    if (!width || !height || !depth) return CUDA_SUCCESS;
    if ((height > 1 || depth > 1) && (d.pitch < width || s.pitch < width)) return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (d.height < height || s.height < height)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t z = 0; z < depth; z++) {
        char *dp = d.base + ((d.z + z) * d.height + d.y) * d.pitch + d.x;
        const char *sp = s.base + ((s.z + z) * s.height + s.y) * s.pitch + s.x;
        /* a synchronous copy of several slices returns once the last is done */
        r = RT(emu_copy(dp, d.pitch, sp, s.pitch, width, height, kind, st, sync));
        if (r) return r;
    }
    return CUDA_SUCCESS;
}

/* -------------------------------------------------- texture and surface objects */

typedef struct obj {
    struct obj *next;
    unsigned long long id;
    int surface, has_view;
    emu_res_desc_t res;
    emu_tex_desc_t tex;
    emu_view_desc_t view;
} obj_t;

static obj_t *g_objs;
static unsigned long long g_next_obj = 1;

/* Whether [p, p + n) is device (or managed) memory of one allocation. */
static int device_range(unsigned long long p, size_t n)
{
    emu_ptrinfo_t in;
    if (!emu_pointer_info(DP(p), &in) || (in.kind != EMU_PTR_DEVICE && in.kind != EMU_PTR_MANAGED)) return 0;
    size_t off = (size_t)((char *)DP(p) - (char *)in.base);
    return off <= in.size && n <= in.size - off;
}

/* A resource description's checks: the array or mipmapped array live, linear memory device memory, aligned
 * and within the device's limits (CUDA_ERROR_INVALID_VALUE otherwise, as documented for cuTexObjectCreate). */
static CUresult check_res(const emu_res_desc_t *r, int dev)
{
    if (r->flags) return CUDA_ERROR_INVALID_VALUE;
    switch (r->resType) {
    case RES_ARRAY: {
        emu_array_desc_t d;
        return emu_array_get(r->res.array.hArray, &d) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case RES_MIPMAP: {
        pthread_mutex_lock(&g_lock);
        int ok = find_mip(r->res.mipmap.hMipmappedArray) != NULL;
        pthread_mutex_unlock(&g_lock);
        return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case RES_LINEAR: {
        size_t elem = emu_array_elem(r->res.linear.format, r->res.linear.numChannels);
        size_t n = r->res.linear.sizeInBytes;
        if (!elem || !n || !r->res.linear.devPtr || r->res.linear.devPtr % (unsigned)attr(A_TEX_ALIGN, dev)
            || n / elem > (size_t)attr(A_TEX1D_LINEAR, dev) || !device_range(r->res.linear.devPtr, n))
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    case RES_PITCH2D: {
        size_t elem = emu_array_elem(r->res.pitch2D.format, r->res.pitch2D.numChannels);
        size_t w = r->res.pitch2D.width, h = r->res.pitch2D.height, p = r->res.pitch2D.pitchInBytes;
        if (!elem || !w || !h || !r->res.pitch2D.devPtr || r->res.pitch2D.devPtr % (unsigned)attr(A_TEX_ALIGN, dev)
            || p % (unsigned)attr(A_TEX_PITCH_ALIGN, dev) || p < w * elem || !within(w, A_TEX2D_LIN_W, dev)
            || !within(h, A_TEX2D_LIN_H, dev) || !within(p, A_TEX2D_LIN_P, dev)
            || !device_range(r->res.pitch2D.devPtr, (h - 1) * p + w * elem))
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* CU_TRSF_READ_AS_INTEGER, NORMALIZED_COORDINATES, SRGB, DISABLE_TRILINEAR_OPTIMIZATION, SEAMLESS_CUBEMAP */
enum { TRSF_KNOWN = 0x1 | 0x2 | 0x10 | 0x20 | 0x40 };

static CUresult check_tex(const emu_tex_desc_t *t)
{
    for (int i = 0; i < 3; i++)
        if ((unsigned)t->addressMode[i] > 3) return CUDA_ERROR_INVALID_VALUE;   /* WRAP CLAMP MIRROR BORDER */
    if ((unsigned)t->filterMode > 1 || (unsigned)t->mipmapFilterMode > 1 || (t->flags & ~TRSF_KNOWN))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult add_obj(unsigned long long *out, obj_t *o)
{
    obj_t *n = malloc(sizeof *n);
    if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
    *n = *o;
    pthread_mutex_lock(&g_lock);
    n->id = g_next_obj++;
    n->next = g_objs;
    g_objs = n;
    pthread_mutex_unlock(&g_lock);
    *out = n->id;
    return CUDA_SUCCESS;
}

int emu_texobj_create(unsigned long long *out, const emu_res_desc_t *r, const emu_tex_desc_t *t,
                      const emu_view_desc_t *v)
{
    int dev = current_device();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult e = check_res(r, dev);
    if (e || (e = check_tex(t))) return e;
    if (v && r->resType != RES_ARRAY && r->resType != RES_MIPMAP) return CUDA_ERROR_INVALID_VALUE;
    obj_t o = { .res = *r, .tex = *t, .has_view = v != NULL };
    if (v) o.view = *v;
    return add_obj(out, &o);
}

int emu_surfobj_create(unsigned long long *out, const emu_res_desc_t *r)
{
    emu_array_desc_t d;
    if (r->resType != RES_ARRAY || r->flags || !emu_array_get(r->res.array.hArray, &d)
        || !(d.Flags & ARR_SURFACE_LDST))
        return CUDA_ERROR_INVALID_VALUE;
    obj_t o = { .res = *r, .surface = 1 };
    return add_obj(out, &o);
}

int emu_obj_destroy(unsigned long long id, int surface)
{
    pthread_mutex_lock(&g_lock);
    obj_t **pp = &g_objs;
    while (*pp && ((*pp)->id != id || (*pp)->surface != surface)) pp = &(*pp)->next;
    obj_t *o = *pp;
    if (o) *pp = o->next;
    pthread_mutex_unlock(&g_lock);
    free(o);
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

int emu_obj_get(unsigned long long id, int surface, emu_res_desc_t *r, emu_tex_desc_t *t, emu_view_desc_t *v,
                int *has_view)
{
    pthread_mutex_lock(&g_lock);
    obj_t *o;
    for (o = g_objs; o && (o->id != id || o->surface != surface); o = o->next) {}
    if (o) {
        if (r) *r = o->res;
        if (t) *t = o->tex;
        if (v) *v = o->view;
        if (has_view) *has_view = o->has_view;
    }
    pthread_mutex_unlock(&g_lock);
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------- driver entry points */

typedef struct { size_t Width, Height; int Format; unsigned int NumChannels; } CUDA_ARRAY_DESCRIPTOR;

EXPORT CUresult cuArrayCreate_v2(void **out, const CUDA_ARRAY_DESCRIPTOR *d)
{
    DRV_ENTER_CREATE(cuArrayCreate_v2);
    if (!out || !d) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    emu_array_desc_t d3 = { d->Width, d->Height, 0, d->Format, d->NumChannels, 0 };
    return emu_array_create(out, &d3);
}

EXPORT CUresult cuArray3DCreate_v2(void **out, const emu_array_desc_t *d)
{
    DRV_ENTER_CREATE(cuArray3DCreate_v2);
    if (!out || !d) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_array_create(out, d);
}

EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *out, void *a)
{
    emu_array_desc_t d;
    DRV_ENTER(cuArrayGetDescriptor_v2);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (!emu_array_get(a, &d)) return CUDA_ERROR_INVALID_HANDLE;
    *out = (CUDA_ARRAY_DESCRIPTOR){ d.Width, d.Height, d.Format, d.NumChannels };
    return CUDA_SUCCESS;
}

EXPORT CUresult cuArray3DGetDescriptor_v2(emu_array_desc_t *out, void *a)
{
    DRV_ENTER(cuArray3DGetDescriptor_v2);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_array_get(a, out) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuArrayDestroy(void *a)
{
    DRV_ENTER(cuArrayDestroy);
    NEED_CTX();
    return emu_array_destroy(a);
}

EXPORT CUresult cuMipmappedArrayCreate(void **out, const emu_array_desc_t *d, unsigned int levels)
{
    DRV_ENTER_CREATE(cuMipmappedArrayCreate);
    if (!out || !d) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_mipmap_create(out, d, levels);
}

EXPORT CUresult cuMipmappedArrayGetLevel(void **out, void *m, unsigned int level)
{
    DRV_ENTER(cuMipmappedArrayGetLevel);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_mipmap_level(out, m, level);
}

EXPORT CUresult cuMipmappedArrayDestroy(void *m)
{
    DRV_ENTER(cuMipmappedArrayDestroy);
    NEED_CTX();
    return emu_mipmap_destroy(m);
}

/* CU_MEMORYTYPE_*: host, device, array, unified. */
enum { MT_HOST = 1, MT_DEVICE = 2, MT_ARRAY = 3, MT_UNIFIED = 4, KIND_DEFAULT = 4 };

/* One side of a CUDA_MEMCPY2D / CUDA_MEMCPY3D. */
static CUresult drv_side(emu_side_t *s, int type, const void *host, CUdeviceptr dev, void *array, size_t x,
                         size_t y, size_t z, size_t pitch, size_t height)
{
    *s = (emu_side_t){ .x = x, .y = y, .z = z, .pitch = pitch, .height = height };
    switch (type) {
    case MT_HOST: s->base = (char *)host; break;
    case MT_DEVICE: case MT_UNIFIED: s->base = DP(dev); break;
    case MT_ARRAY:
        if (!array) return CUDA_ERROR_INVALID_VALUE;
        s->array = array;
        break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (!array || type != MT_ARRAY) {
        if (z && (!height || pitch > SIZE_MAX / height || pitch * height > (SIZE_MAX - x) / z))
            return CUDA_ERROR_INVALID_VALUE;
        if (y && pitch > (SIZE_MAX - x) / y) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}


CUresult emu_array_copy2d(const void *p, void *st, int sync)
{
    const CUDA_MEMCPY2D *c = p;
    emu_side_t d, s;
    CUresult r = drv_side(&s, c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY,
                          0, c->srcPitch, 0);
    if (r || (r = drv_side(&d, c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY,
                           0, c->dstPitch, 0)))
        return r;
    return emu_array_copy(&d, &s, c->WidthInBytes, c->Height, 1, KIND_DEFAULT, st, sync);
}

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

static CUresult copy3d(const CUDA_MEMCPY3D *c, CUstream st, int sync)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (c->reserved0 || c->reserved1 || c->srcLOD || c->dstLOD) return CUDA_ERROR_INVALID_VALUE;
    emu_side_t d, s;
    CUresult r = drv_side(&s, c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY,
                          c->srcZ, c->srcPitch, c->srcHeight);
    if (r || (r = drv_side(&d, c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY,
                           c->dstZ, c->dstPitch, c->dstHeight)))
        return r;
    return emu_array_copy(&d, &s, c->WidthInBytes, c->Height, c->Depth, KIND_DEFAULT, st, sync);
}

EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *c)
{
    DRV_ENTER(cuMemcpy3D_v2);
    return copy3d(c, NULL, 1);
}

EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *c, CUstream st)
{
    DRV_ENTER(cuMemcpy3DAsync_v2);
    return copy3d(c, st, 0);
}

/* The 1D copies: byte offsets into the array's elements, in their packed order. */
static CUresult copy1d(void *da, size_t doff, void *dp, void *sa, size_t soff, const void *sp, size_t n,
                       CUstream st, int sync)
{
    NEED_CTX();
    char *base[2] = { dp, (char *)sp };
    void *arr[2] = { da, sa };
    size_t off[2] = { doff, soff };
    pthread_mutex_lock(&g_lock);
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < 2 && !r; i++) {
        if (!arr[i]) continue;
        arr_t *a = find_array(arr[i]);
        if (!a) r = CUDA_ERROR_INVALID_HANDLE;
        else if (off[i] > a->bytes || n > a->bytes - off[i]) r = CUDA_ERROR_INVALID_VALUE;
        else base[i] = (char *)a->data + off[i];
    }
    pthread_mutex_unlock(&g_lock);
    if (r || !n) return r;
    return RT(emu_copy(base[0], n, base[1], n, n, 1, KIND_DEFAULT, st, sync));
}

EXPORT CUresult cuMemcpyAtoH_v2(void *dst, void *src, size_t off, size_t n)
{
    DRV_ENTER(cuMemcpyAtoH_v2);
    return copy1d(NULL, 0, dst, src, off, NULL, n, NULL, 1);
}

EXPORT CUresult cuMemcpyHtoA_v2(void *dst, size_t off, const void *src, size_t n)
{
    DRV_ENTER(cuMemcpyHtoA_v2);
    return copy1d(dst, off, NULL, NULL, 0, src, n, NULL, 1);
}

EXPORT CUresult cuMemcpyAtoHAsync_v2(void *dst, void *src, size_t off, size_t n, CUstream st)
{
    DRV_ENTER(cuMemcpyAtoHAsync_v2);
    return copy1d(NULL, 0, dst, src, off, NULL, n, st, 0);
}

EXPORT CUresult cuMemcpyHtoAAsync_v2(void *dst, size_t off, const void *src, size_t n, CUstream st)
{
    DRV_ENTER(cuMemcpyHtoAAsync_v2);
    return copy1d(dst, off, NULL, NULL, 0, src, n, st, 0);
}

EXPORT CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, void *src, size_t off, size_t n)
{
    DRV_ENTER(cuMemcpyAtoD_v2);
    return copy1d(NULL, 0, DP(dst), src, off, NULL, n, NULL, 1);
}

EXPORT CUresult cuMemcpyDtoA_v2(void *dst, size_t off, CUdeviceptr src, size_t n)
{
    DRV_ENTER(cuMemcpyDtoA_v2);
    return copy1d(dst, off, NULL, NULL, 0, DP(src), n, NULL, 1);
}

EXPORT CUresult cuMemcpyAtoA_v2(void *dst, size_t doff, void *src, size_t soff, size_t n)
{
    DRV_ENTER(cuMemcpyAtoA_v2);
    return copy1d(dst, doff, NULL, src, soff, NULL, n, NULL, 1);
}

EXPORT CUresult cuTexObjectCreate(unsigned long long *out, const emu_res_desc_t *r, const emu_tex_desc_t *t,
                                  const emu_view_desc_t *v)
{
    DRV_ENTER_CREATE(cuTexObjectCreate);
    if (!out || !r || !t) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_texobj_create(out, r, t, v);
}

EXPORT CUresult cuTexObjectDestroy(unsigned long long o)
{
    DRV_ENTER(cuTexObjectDestroy);
    NEED_CTX();
    return emu_obj_destroy(o, 0);
}

EXPORT CUresult cuTexObjectGetResourceDesc(emu_res_desc_t *r, unsigned long long o)
{
    DRV_ENTER(cuTexObjectGetResourceDesc);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_obj_get(o, 0, r, NULL, NULL, NULL);
}

EXPORT CUresult cuTexObjectGetTextureDesc(emu_tex_desc_t *t, unsigned long long o)
{
    DRV_ENTER(cuTexObjectGetTextureDesc);
    if (!t) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_obj_get(o, 0, NULL, t, NULL, NULL);
}

/* A texture object made without a view has none to return: CUDA_ERROR_INVALID_VALUE. */
EXPORT CUresult cuTexObjectGetResourceViewDesc(emu_view_desc_t *v, unsigned long long o)
{
    int has = 0;
    DRV_ENTER(cuTexObjectGetResourceViewDesc);
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    emu_view_desc_t got;
    CUresult r = emu_obj_get(o, 0, NULL, NULL, &got, &has);
    if (r) return r;
    if (!has) return CUDA_ERROR_INVALID_VALUE;
    *v = got;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuSurfObjectCreate(unsigned long long *out, const emu_res_desc_t *r)
{
    DRV_ENTER_CREATE(cuSurfObjectCreate);
    if (!out || !r) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_surfobj_create(out, r);
}

EXPORT CUresult cuSurfObjectDestroy(unsigned long long o)
{
    DRV_ENTER(cuSurfObjectDestroy);
    NEED_CTX();
    return emu_obj_destroy(o, 1);
}

EXPORT CUresult cuSurfObjectGetResourceDesc(emu_res_desc_t *r, unsigned long long o)
{
    DRV_ENTER(cuSurfObjectGetResourceDesc);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    return emu_obj_get(o, 1, r, NULL, NULL, NULL);
}

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
#define PROC_V(name, since, fn) { name, since, #fn, (void *)fn },
const proc_t emu_array_procs[] = {
    PROC_V("cuArrayCreate", 0, cuArrayCreate_v2) PROC_V("cuArray3DCreate", 0, cuArray3DCreate_v2)
    PROC_V("cuArrayGetDescriptor", 0, cuArrayGetDescriptor_v2)
    PROC_V("cuArray3DGetDescriptor", 0, cuArray3DGetDescriptor_v2) PROC(cuArrayDestroy)
    PROC(cuMipmappedArrayCreate) PROC(cuMipmappedArrayGetLevel) PROC(cuMipmappedArrayDestroy)
    PROC_V("cuMemcpy3D", 0, cuMemcpy3D_v2) PROC_V("cuMemcpy3DAsync", 0, cuMemcpy3DAsync_v2)
    PROC_V("cuMemcpyAtoH", 0, cuMemcpyAtoH_v2) PROC_V("cuMemcpyHtoA", 0, cuMemcpyHtoA_v2)
    PROC_V("cuMemcpyAtoHAsync", 0, cuMemcpyAtoHAsync_v2) PROC_V("cuMemcpyHtoAAsync", 0, cuMemcpyHtoAAsync_v2)
    PROC_V("cuMemcpyAtoD", 0, cuMemcpyAtoD_v2) PROC_V("cuMemcpyDtoA", 0, cuMemcpyDtoA_v2)
    PROC_V("cuMemcpyAtoA", 0, cuMemcpyAtoA_v2)
    PROC(cuTexObjectCreate) PROC(cuTexObjectDestroy) PROC(cuTexObjectGetResourceDesc)
    PROC(cuTexObjectGetTextureDesc) PROC(cuTexObjectGetResourceViewDesc)
    PROC(cuSurfObjectCreate) PROC(cuSurfObjectDestroy) PROC(cuSurfObjectGetResourceDesc)
};
const size_t emu_array_nprocs = sizeof emu_array_procs / sizeof *emu_array_procs;

/* The per-thread-default-stream variants of the stream-ordered copies. */
static CUstream ptds(CUstream s) { return s ? s : (CUstream)(uintptr_t)2; }
EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *c, CUstream s) { return cuMemcpy3DAsync_v2(c, ptds(s)); }
EXPORT CUresult cuMemcpyAtoHAsync_v2_ptsz(void *d, void *a, size_t o, size_t n, CUstream s)
{
    return cuMemcpyAtoHAsync_v2(d, a, o, n, ptds(s));
}
EXPORT CUresult cuMemcpyHtoAAsync_v2_ptsz(void *a, size_t o, const void *src, size_t n, CUstream s)
{
    return cuMemcpyHtoAAsync_v2(a, o, src, n, ptds(s));
}
#define PTSZ(fn) { #fn, (void *)fn##_ptsz },
const variant_t emu_array_ptsz[] = { PTSZ(cuMemcpy3DAsync_v2) PTSZ(cuMemcpyAtoHAsync_v2) PTSZ(cuMemcpyHtoAAsync_v2) };
const size_t emu_array_nptsz = sizeof emu_array_ptsz / sizeof *emu_array_ptsz;
