/* Images the driver is handed (cuModuleLoadData, cuLibraryLoadData, cuModuleLoadFatBinary,
 * __cudaRegisterFatBinary), decoded to the PTX texts the engine builds a program from (issue 32).
 *
 * Sniffing order: accel's linked image ("AEMUPTX1", PTX_CONTRACT.md: what cuLinkComplete returns); the
 * fatbin wrapper (u32 0x466243b1, then u32 version, then a pointer to the fatbin); a fatbin (u32
 * 0xBA55ED50); an ELF ("\x7fELF": a SASS cubin, refused); otherwise PTX text, NUL-terminated.
 *
 * The fatbin layout, as nvcc 13.0 writes it (checked on tests/data/fatbin/, made by make_fatbins.sh):
 *   header (16 bytes): u32 magic 0xBA55ED50, u16 version 1, u16 header size (16), u64 bytes of entries
 *   entry header (64 or 80 bytes): u16 kind (1 PTX, 2 ELF), u16 0x0101, u32 entry header size,
 *     u64 payload bytes (padded), u32 compressed bytes (0: not compressed), u32, u16 minor and u16 major
 *     (the PTX ISA version of a PTX entry), u32 arch (90 for compute_90 / sm_90), u32 name offset,
 *     u32 name length, u64 flags (0x2000: an LZ4 block, 0x8000: a zstd frame; 0x1: 64-bit, 0x10: Linux),
 *     u64, u64 decompressed bytes; then the payload.
 * A fatbin's PTX entry is chosen for the device: the highest compute_XX not above its compute capability.
 * LZ4 blocks are decoded here; zstd frames through libzstd.so.1, loaded at run time when one is first
 * met (no build or run-time dependency otherwise): without it such an entry is refused with
 * CUDA_ERROR_NOT_SUPPORTED and a message naming libzstd.so.1.
 *
 * Codes are the driver's CUresult values.  Hidden, as everything of the emulator not marked EXPORT. */
#ifndef ACCEL_EMU_PTX_IMAGE_H
#define ACCEL_EMU_PTX_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define PTX_IMAGE_MAGIC "AEMUPTX1"
#define PTX_IMAGE_HEADER 24                 /* magic, u32 count, u32 0, u64 total size (PTX_CONTRACT.md) */
#define PTX_FATBIN_WRAPPER_MAGIC 0x466243b1u
#define PTX_FATBIN_MAGIC 0xBA55ED50u

enum {
    PTX_IMAGE_OK = 0,
    PTX_IMAGE_E_INVALID_VALUE = 1,
    PTX_IMAGE_E_OUT_OF_MEMORY = 2,
    PTX_IMAGE_E_INVALID_IMAGE = 200,        /* CUDA_ERROR_INVALID_IMAGE: a malformed container */
    PTX_IMAGE_E_NO_BINARY = 209,            /* CUDA_ERROR_NO_BINARY_FOR_GPU: SASS only, or PTX for a newer cc */
    PTX_IMAGE_E_NOT_SUPPORTED = 801,        /* a zstd entry without libzstd.so.1 */
};

enum { PTX_IMAGE_KIND_PTX, PTX_IMAGE_KIND_LINKED, PTX_IMAGE_KIND_FATBIN, PTX_IMAGE_KIND_ELF };

/* The PTX texts of an image, each a NUL-terminated copy the image owns. */
typedef struct ptx_image {
    int kind;                   /* PTX_IMAGE_KIND_*: what the image was */
    int n;
    char **text;
    size_t *len;
    /* After PTX_IMAGE_E_NO_BINARY for SASS: the kernels the ELF(s) define, comma-separated ("" when
     * none could be read); owned by the image. */
    char *sass_kernels;
} ptx_image;

/* Decodes `image` (`size` bytes when known, 0 when the caller gives only a pointer, as cuModuleLoadData
 * does: then the containers' own sizes and PTX's NUL bound the reads) for a device of compute capability
 * `cc` (major * 10 + minor).  On failure writes a one-line message into err and releases what it made. */
int ptx_image_decode(const void *image, size_t size, int cc, ptx_image *out, char *err, size_t errlen);
void ptx_image_release(ptx_image *im);

/* accel's linked image of n texts (len[i] bytes each, or NUL-terminated when len[i] is 0): a malloc'd
 * buffer of *size bytes, NULL when out of memory. */
void *ptx_image_link(const char *const *texts, const size_t *len, int n, size_t *size);

/* The readers of the containers, for what reads the files that hold them (emu_ptxpack.c: host objects,
 * archives).  Each walks one layout and hands each piece to `each`, which returns 0 to go on; a non-zero
 * return stops the walk and is returned.  A malformed layout is PTX_IMAGE_E_INVALID_IMAGE with a message
 * (err may be NULL).  `avail` / `n`: the bytes readable, 0 when unknown (then the headers are trusted). */

/* Little-endian fields. */
static inline uint16_t ptx_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t ptx_rd32(const uint8_t *p) { return (uint32_t)ptx_rd16(p) | (uint32_t)ptx_rd16(p + 2) << 16; }
static inline uint64_t ptx_rd64(const uint8_t *p) { return (uint64_t)ptx_rd32(p) | (uint64_t)ptx_rd32(p + 4) << 32; }

/* The texts of accel's linked image at p, in order: each(ctx, index, text, len), text not NUL-terminated. */
int ptx_linked_walk(const uint8_t *p, size_t avail, int (*each)(void *ctx, uint32_t i, const char *text, uint64_t len),
                    void *ctx, char *err, size_t errlen);

/* The sections of the ELF64 little-endian object at elf (n bytes): each(ctx, name, offset, size) for every
 * section with a readable name; the section's own bytes are not checked against n (the caller reads them). */
int ptx_elf_sections(const uint8_t *elf, size_t n,
                     int (*each)(void *ctx, const char *name, uint64_t off, uint64_t size),
                     void *ctx, char *err, size_t errlen);

/* Bytes of the fatbin at fb (its 16-byte header and its entries); 0 when its header is malformed or the
 * fatbin overruns `avail`.  The magic is the caller's to check. */
uint64_t ptx_fatbin_size(const uint8_t *fb, size_t avail);

/* The linked image of ptx_image_link, in two steps: its size, and its bytes written to out (that many). */
size_t ptx_image_link_size(const char *const *texts, const size_t *len, int n);
void ptx_image_link_write(const char *const *texts, const size_t *len, int n, void *out);

/* Decodes one LZ4 block (raw, no frame) of n bytes into exactly cap bytes of out: 0, or -1 when malformed
 * or not exactly cap bytes long. */
int ptx_lz4_block_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

#pragma GCC visibility pop

#endif
