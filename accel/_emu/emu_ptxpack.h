/* The producers' side of accel's linked image (issue 32, PTX_CONTRACT.md): what the nvJitLink stand-in
 * (emu_nvjitlink.c) and the NVRTC shim (emu_nvrtc.c) hand back where the real libraries hand back a SASS
 * cubin, so that PTX reaches the emulator, which executes PTX only.
 *
 *     char     magic[8]   = "AEMUPTX1"
 *     uint32   count          number of PTX texts
 *     uint32   reserved       0
 *     uint64   total_size     bytes of the whole image, this header included
 *     then `count` entries: uint64 len, char text[len] (no NUL), zero padding to a multiple of 8 bytes
 *
 * A pack collects PTX texts from what a linker is given: PTX text, an image of this format, a fatbin or
 * its wrapper (its PTX entry for the target, decoded by the driver's ptx/ptx_image.c, LZ4 / zstd
 * included), a host object holding a fatbin (.nv_fatbin), an ar archive of those.  SASS (an ELF cubin)
 * and LTO-IR / NVVM IR are refused with a message that says why: the emulator executes PTX.
 *
 * Self-contained (libc and ptx_image.c), so that both stand-ins build without the emulator's state. */
#ifndef ACCEL_EMU_PTXPACK_H
#define ACCEL_EMU_PTXPACK_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* What an input is, by its first bytes (ptxpack_sniff) or as its producer declared it. */
typedef enum {
    PK_PTX,         /* PTX text */
    PK_IMAGE,       /* accel's linked image */
    PK_FATBIN,      /* a fatbin (0xBA55ED50) or its wrapper (0x466243b1) */
    PK_ELF_SASS,    /* an ELF for the GPU (e_machine EM_CUDA): a SASS cubin */
    PK_ELF_HOST,    /* a host ELF object: its .nv_fatbin section may hold PTX */
    PK_ARCHIVE,     /* an ar archive of host objects */
    PK_NVVM,        /* LLVM bitcode / NVVM's LTO-IR (magic 0x7F4E43ED) */
} ptxpack_kind;

typedef struct ptxpack {
    char **text;        /* count PTX texts (each NUL-terminated, NUL not counted in len) */
    size_t *len;
    int count, cap;
    int arch;           /* the link's target as its sm_ number (90 for sm_90, 100 for sm_100); 0: any */
} ptxpack;

ptxpack_kind ptxpack_sniff(const void *data, size_t size);

/* Adds the PTX texts of `data` (`size` bytes, read as `kind`) to `p`.  Returns 0, or -1 with a one-line
 * message naming `name` and the reason in err (errlen bytes); on failure `p` is unchanged. */
int ptxpack_add(ptxpack *p, ptxpack_kind kind, const void *data, size_t size, const char *name,
                char *err, size_t errlen);

/* The image of p's texts: its size, and the bytes written to out (ptxpack_image_size bytes). */
size_t ptxpack_image_size(const ptxpack *p);
void ptxpack_image_write(const ptxpack *p, void *out);

void ptxpack_free(ptxpack *p);

/* The number of the first `.target sm_XX[a|f]` of a PTX text (90 for sm_90a), or 0. */
int ptxpack_target(const char *text, size_t len);

#pragma GCC visibility pop

#endif
