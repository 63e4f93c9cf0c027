/* The PTX engine's one interface to the rest of the emulator (issue 32).
 *
 * The engine parses PTX text (ISA up to what NVRTC 13.x, libNVVM 13.x and Triton 3.x emit), links several
 * texts into one program (`.extern .func` / `.extern .global` resolved by name), decodes it once to a compact
 * form and executes kernels with CUDA's semantics: grids of blocks of warps of 32 lanes, divergence, barriers,
 * warp-synchronous operations, atomics, the memory spaces, generic addressing, rounding modes.
 *
 * What is NOT here (the driver layer's, accel/_emu/emu_module*.c and friends): image formats (fatbins and
 * their compression, accel's linked-image container, ELF/SASS refusal), handles, contexts, streams, sticky
 * errors, graphs.  The engine knows nothing of the emulator's state: it reaches device memory only through
 * the ptx_env callbacks below, and device memory is host memory (a device pointer is a host address).
 *
 * Threading: a module is immutable after ptx_program_build (any number of threads may launch its kernels
 * at once); ptx_launch runs the whole grid before it returns, in the calling thread and, for large grids,
 * in worker threads of the engine's own (which it joins before returning).
 *
 * Codes are the driver's CUresult values, so the driver layer returns them as they are. */
#ifndef ACCEL_EMU_PTX_H
#define ACCEL_EMU_PTX_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

enum {
    PTX_OK = 0,
    PTX_E_INVALID_VALUE = 1,
    PTX_E_OUT_OF_MEMORY = 2,
    PTX_E_INVALID_PTX = 218,                /* syntax error, undefined name, unresolved .extern */
    PTX_E_UNSUPPORTED_PTX_VERSION = 222,    /* .version newer than the engine knows */
    PTX_E_NOT_FOUND = 500,                  /* no such kernel / global */
    PTX_E_ILLEGAL_ADDRESS = 700,            /* sticky: out-of-bounds or unmapped access */
    PTX_E_LAUNCH_OUT_OF_RESOURCES = 701,    /* not sticky: the launch did not start */
    PTX_E_LAUNCH_TIMEOUT = 702,             /* sticky: livelock / watchdog */
    PTX_E_ILLEGAL_INSTRUCTION = 715,        /* sticky: trap, brkpt */
    PTX_E_MISALIGNED_ADDRESS = 716,         /* sticky */
    PTX_E_LAUNCH_FAILED = 719,              /* sticky: barrier deadlock, bad shared access, ... */
    PTX_E_NOT_SUPPORTED = 801,              /* an instruction or directive the engine lacks; the message names it */
};

typedef struct ptx_module ptx_module;      /* a built (parsed, linked, decoded) program */
typedef struct ptx_kernel ptx_kernel;      /* an .entry of a module; owned by the module */

/* What the engine needs from the emulator.  Every callback may be called from several threads at once. */
typedef struct ptx_env {
    void *ctx;
    /* Device memory for a module's .global / .const variables (zero-filled, `align`-aligned), registered
     * with the emulator as allocations of the current device so that copies and bounds checks see them;
     * NULL when out of memory. */
    void *(*alloc)(void *ctx, size_t n, size_t align);
    void (*free)(void *ctx, void *p);
    /* Non-zero when [addr, addr + n) lies inside one live piece of device-accessible memory: a device
     * allocation, a module variable, managed memory, pinned / registered host memory.  The engine caches
     * the range it was answered about (a warp's accesses mostly fall in the same allocation), so `lo` /
     * `hi` receive that piece's bounds when the callback can give them (else addr and addr + n). */
    int (*check)(void *ctx, uint64_t addr, size_t n, uint64_t *lo, uint64_t *hi);
} ptx_env;

/* Builds one program from `n` PTX texts (each `len[i]` bytes, or NUL-terminated when len[i] is 0), linking
 * their .extern declarations against each other's .visible definitions.  Module variables are allocated and
 * initialised through env (which must outlive the module).  On failure returns a code above and writes a
 * one-line message naming the file position, the instruction or the symbol into err (errlen bytes). */
int ptx_program_build(const char *const *texts, const size_t *len, int n, const ptx_env *env,
                      ptx_module **out, char *err, size_t errlen);
void ptx_module_free(ptx_module *m);

/* Kernels (.entry) by name, and by index for enumeration (cuModuleEnumerateFunctions). */
int ptx_module_get_kernel(const ptx_module *m, const char *name, const ptx_kernel **out);
int ptx_module_kernel_count(const ptx_module *m);
const ptx_kernel *ptx_module_kernel_at(const ptx_module *m, int i);

/* A .visible (or .common) .global / .const variable's device address and size. */
int ptx_module_get_global(const ptx_module *m, const char *name, uint64_t *addr, size_t *size);

/* What the driver reports about a kernel (cuFuncGetAttribute, cuFuncGetParamInfo, launch checks). */
typedef struct ptx_kernel_info {
    const char *name;
    int nparams;
    const uint32_t *param_offset;   /* nparams offsets into the parameter buffer (alignment applied) */
    const uint32_t *param_size;     /* nparams sizes in bytes */
    uint32_t param_bytes;           /* the whole buffer, padded */
    size_t static_smem;             /* .shared bytes the kernel reaches (its own and the module's) */
    size_t local_bytes;             /* .local bytes per thread (incl. call frames' locals) */
    size_t const_bytes;             /* the module's .const bytes */
    int num_regs;                   /* a plausible register count derived from the declarations */
    unsigned maxntid[3];            /* .maxntid, or 0s */
    unsigned reqntid[3];            /* .reqntid, or 0s */
    unsigned minnctapersm;          /* .minnctapersm, or 0 */
    int max_threads_per_block;      /* from .maxntid / .reqntid, else 1024 */
    int ptx_version;                /* .version as major * 10 + minor (e.g. 90 for 9.0) */
    int target_sm;                  /* .target as a number: 90 for sm_90 and sm_90a */
} ptx_kernel_info;
void ptx_kernel_get_info(const ptx_kernel *k, ptx_kernel_info *out);

typedef struct ptx_launch_cfg {
    unsigned grid[3], block[3];
    size_t dyn_smem;                /* bytes of .extern .shared per block */
    const void *params;             /* the parameter buffer, laid out as ptx_kernel_info says */
    size_t params_size;
    unsigned nsm;                   /* %nsmid (the device's SM count) */
    int cooperative;                /* all blocks co-resident: grid-wide sync allowed */
    unsigned long long gridid;      /* %gridid */
} ptx_launch_cfg;

/* Runs the whole grid.  PTX_OK, or a fault code with a message naming the kernel, the block and thread,
 * the instruction and (for memory faults) the address.  Launch-configuration errors (block too large,
 * shared memory over the kernel's limit) are the caller's to check before calling. */
int ptx_launch(const ptx_kernel *k, const ptx_launch_cfg *cfg, const ptx_env *env, char *err, size_t errlen);

#pragma GCC visibility pop

#endif
