/* Programs and kernel launches on the emulator (emu_launch.c), shared by the runtime's files (streams,
 * capture and graphs run launches) and the stand-ins' driver and registration layers (emu_module.c,
 * emu_standin.c build them).  Only emu_internal.h's world here (no emu_runtime.h), so both sides can
 * include it.  Codes are CUresult values (the runtime's cudaError_t has the same numbers for all of them
 * but CUDA_ERROR_INVALID_VALUE on a launch configuration, which the runtime reports as
 * cudaErrorInvalidConfiguration: the callers translate).  Hidden. */
#ifndef ACCEL_EMU_LAUNCH_H
#define ACCEL_EMU_LAUNCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "emu_internal.h"
#include "ptx/ptx.h"

#pragma GCC visibility push(hidden)

/* A built PTX program on one device: its module variables are that device's allocations.  Refcounted:
 * the module or library that loaded it holds one reference and every launch not yet run (queued, or a
 * graph's kernel node) another, so unloading while work is queued is safe. */
typedef struct emu_prog {
    atomic_int refs;
    int device;
    ptx_module *m;
    ptx_env env;
} emu_prog_t;

/* Builds texts[0..n) (len[i] bytes, 0: NUL-terminated) for visible device `device`: a code and a one-line
 * message in err. */
int emu_prog_build(const char *const *texts, const size_t *len, int n, int device, emu_prog_t **out, char *err,
                   size_t errlen);
void emu_prog_ref(emu_prog_t *p);
/* Drops a reference (the runtime's lock G not held; emu_prog_unref_locked: held). */
void emu_prog_release(emu_prog_t *p);
void emu_prog_unref_locked(emu_prog_t *p);

/* The device's limits a launch is checked against (from its profile, emu_profiles.c). */
typedef struct {
    int sms, cc, threads_per_sm, blocks_per_sm, regs_per_sm, regs_per_block, smem_per_sm, smem_per_block,
        smem_optin, smem_reserved, max_block[3];
    unsigned max_grid[3];
} emu_devlimits_t;
void emu_device_limits(int dev, emu_devlimits_t *out);
/* Resident blocks per SM for blocks of `threads` threads of `regs` registers each using `smem` bytes of
 * shared memory (static + dynamic): the occupancy calculator's rules (whole warps, registers allocated
 * per warp in units of 256, the per-block shared memory reservation). */
int emu_occupancy_blocks(const emu_devlimits_t *d, int threads, int regs, size_t smem);

/* What a launch asks for. */
typedef struct {
    unsigned grid[3], block[3];
    size_t smem;                    /* dynamic shared memory per block */
    void **params;                  /* kernelParams */
    void **extra;                   /* or the `extra` buffer form */
    int cooperative;
    size_t max_dyn_smem;            /* the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
} emu_launch_req_t;

/* A launch: the kernel, its configuration and a copy of its parameters (taken at the call).  Refcounted:
 * stream items and graph kernel nodes share it; the program stays alive while it does. */
typedef struct emu_launch {
    atomic_int refs;
    emu_prog_t *prog;
    const ptx_kernel *k;
    int device;
    void *owner;                    /* the handle it was launched through (a CUfunction), for node queries */
    void **argv;                    /* nparams pointers into params[] (a kernel node's kernelParams) */
    ptx_launch_cfg cfg;             /* cfg.params points at params[] */
    unsigned char params[];
} emu_launch_t;

/* Checks req against kernel k of prog on prog's device and copies its parameters: CUDA_SUCCESS,
 * CUDA_ERROR_INVALID_VALUE (both or neither parameter forms with parameters, an `extra` buffer of the wrong
 * size, a block or grid over the limits, dynamic shared memory over the kernel's limit),
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (more registers or static + dynamic shared memory than a block may
 * have; a cooperative grid whose blocks cannot all be resident), CUDA_ERROR_OUT_OF_MEMORY. */
int emu_launch_new(emu_prog_t *prog, const ptx_kernel *k, const emu_launch_req_t *req, emu_launch_t **out);
emu_launch_t *emu_launch_ref(emu_launch_t *l);
void emu_launch_unref_locked(emu_launch_t *l);     /* G held */
void emu_launch_release(emu_launch_t *l);          /* G not held */
/* Runs the grid in the calling thread (G not held).  A fault becomes its device's sticky error, and its
 * message goes to stderr; a device with a sticky error runs no more kernels. */
void emu_launch_run(emu_launch_t *l);
/* Queues l on stream `stream` (a runtime stream handle: 0 legacy, 2 per-thread) as a kernel item after the
 * stream's implicit synchronisation, or records it as a kernel node when the stream captures; takes the
 * caller's reference in every case.  A cudaError_t (400 for a bad stream, capture errors, 2). */
int emu_launch_submit(emu_launch_t *l, void *stream);

/* The driver objects the stand-ins hand out as pointers (modules, functions, libraries, kernels, link
 * states), registered by kind so that a stale or foreign handle is refused instead of dereferenced:
 * emu_obj_put: 0, -1 when out of memory; emu_obj_is: 1 when p is a live object of that kind. */
int emu_obj_put(const void *p, int kind);
int emu_obj_is(const void *p, int kind);
void emu_obj_del(const void *p);

/* The runtime's registrations (emu_register.c): a host address (kernel stub, device variable's shadow) ->
 * its record.  emu_reg_put: 0, -1 when out of memory. */
int emu_reg_put(const void *host, void *rec);
void *emu_reg_get(const void *host);
void emu_reg_del(const void *host);

/* emu_memory.c: module variables as allocations of device dev (NULL when out of memory), their release
 * (G not held / held), and the bounds of the live memory holding [addr, addr + n). */
void *emu_mem_module_alloc(int dev, size_t n, size_t align);
void emu_mem_module_free(void *p);
void emu_mem_module_free_locked(void *p);
int emu_mem_bounds(uint64_t addr, size_t n, uint64_t *lo, uint64_t *hi);

/* emu_graph_nodes.c: an explicit kernel node of graph g (a runtime graph handle) running l (takes the
 * caller's reference, also on failure), its launch (a new reference) and its replacement (takes the
 * reference); cudaError_t codes. */
int emu_graph_add_kernel_node(void **out, void *g, void *const *deps, size_t n, emu_launch_t *l);
int emu_graph_kernel_node_get(void *node, emu_launch_t **out);
int emu_graph_kernel_node_set(void *node, emu_launch_t *l);
int emu_graph_exec_kernel_node_set(void *exec, void *node, emu_launch_t *l);

#pragma GCC visibility pop

#endif
