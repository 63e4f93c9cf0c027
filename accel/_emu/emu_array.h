/* CUDA arrays, mipmapped arrays, texture and surface objects (emu_array.c: the driver's entry points and the
 * core; emu_array_rt.c: the runtime's).  Shared in plain C types, as the two files include the driver's and the
 * runtime's headers respectively.  Results are CUresult values; the codes used here (0, 1, 2, 400, 801) have
 * the same values as the runtime's cudaError_t.  Hidden like everything not marked EXPORT. */
#ifndef ACCEL_EMU_ARRAY_H
#define ACCEL_EMU_ARRAY_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

/* CUDA_ARRAY3D_DESCRIPTOR, as the driver lays it out. */
typedef struct { size_t Width, Height, Depth; int Format; unsigned int NumChannels, Flags; } emu_array_desc_t;

/* The CUDA_ARRAY3D_* flags (the runtime's cudaArray* flags have the same values). */
enum { ARR_LAYERED = 0x1, ARR_SURFACE_LDST = 0x2, ARR_CUBEMAP = 0x4, ARR_TEXTURE_GATHER = 0x8,
       ARR_DEPTH_TEXTURE = 0x10, ARR_COLOR_ATTACHMENT = 0x20, ARR_SPARSE = 0x40, ARR_DEFERRED_MAPPING = 0x80,
       ARR_VIDEO_ENCODE_DECODE = 0x100 };

/* The bytes of one element of format f with n channels; 0: not a format/channel count the emulator stores. */
size_t emu_array_elem(int f, unsigned int n);
/* A new array on the calling thread's current device (its memory is a device allocation, counted against the
 * device); levels: a mipmapped array's level count (0: a plain array). */
int emu_array_create(void **out, const emu_array_desc_t *d);
int emu_array_destroy(void *a);
/* The descriptor of a live array (1), or 0 for a handle that is none. */
int emu_array_get(const void *a, emu_array_desc_t *d);
int emu_mipmap_create(void **out, const emu_array_desc_t *d, unsigned int levels);
int emu_mipmap_level(void **out, void *m, unsigned int level);
int emu_mipmap_destroy(void *m);

/* One side of a copy: host or device memory (array NULL: base, pitch and height of its rows) or an array
 * (position x in bytes). */
typedef struct { void *array; char *base; size_t pitch, height; size_t x, y, z; int device; } emu_side_t;
/* Copies width bytes x height rows x depth slices between two sides (cudaMemcpyKind kind, on stream s; sync:
 * returns once done), with the array sides' bounds checked. */
int emu_array_copy(const emu_side_t *dst, const emu_side_t *src, size_t width, size_t height, size_t depth,
                   int kind, void *s, int sync);

/* Texture and surface objects: the driver's CUDA_RESOURCE_DESC (144 bytes), CUDA_TEXTURE_DESC (104) and
 * CUDA_RESOURCE_VIEW_DESC (112), kept as given after their checks. */
enum { RES_ARRAY = 0, RES_MIPMAP = 1, RES_LINEAR = 2, RES_PITCH2D = 3 };
typedef struct {
    int resType;
    union {
        struct { void *hArray; } array;
        struct { void *hMipmappedArray; } mipmap;
        struct { unsigned long long devPtr; int format; unsigned int numChannels; size_t sizeInBytes; } linear;
        struct {
            unsigned long long devPtr; int format; unsigned int numChannels;
            size_t width, height, pitchInBytes;
        } pitch2D;
        int reserved[32];
    } res;
    unsigned int flags;
} emu_res_desc_t;
typedef struct {
    int addressMode[3];
    int filterMode;
    unsigned int flags, maxAnisotropy;
    int mipmapFilterMode;
    float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
    float borderColor[4];
    int reserved[12];
} emu_tex_desc_t;
typedef struct {
    int format;
    size_t width, height, depth;
    unsigned int firstMipmapLevel, lastMipmapLevel, firstLayer, lastLayer;
    unsigned int reserved[16];
} emu_view_desc_t;
int emu_texobj_create(unsigned long long *out, const emu_res_desc_t *r, const emu_tex_desc_t *t,
                      const emu_view_desc_t *v);
int emu_surfobj_create(unsigned long long *out, const emu_res_desc_t *r);
/* surface: 1 for a surface object, 0 for a texture object. */
int emu_obj_destroy(unsigned long long o, int surface);
int emu_obj_get(unsigned long long o, int surface, emu_res_desc_t *r, emu_tex_desc_t *t, emu_view_desc_t *v,
                int *has_view);

#pragma GCC visibility pop

#endif
