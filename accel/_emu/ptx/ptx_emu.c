/* The PTX engine over the emulator's memory, for the engine's own tests: an emulator-only entry point
 * (accelEmuPtxRun) that builds a program from PTX texts and runs one kernel synchronously, with device
 * memory from the emulator's allocation table (cudaMalloc) and module variables allocated there too.
 * The driver layer (module / launch APIs) has its own ptx_env over the same table. */
#include "../emu_runtime.h"
#include "ptx_internal.h"
#include "../emu_launch.h"

cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaGetDevice(int *d);

static void *env_alloc(void *ctx, size_t n, size_t align)
{
    (void)ctx;
    void *p = NULL;
    if (align <= 256) return cudaMalloc(&p, n) ? NULL : p;    /* cudaMalloc's alignment */
    int dev = 0;
    return cudaGetDevice(&dev) ? NULL : emu_mem_module_alloc(dev, n, align);   /* what the driver's loads use */
}

static void env_free(void *ctx, void *p)
{
    (void)ctx;
    cudaFree(p);
}

static int env_check(void *ctx, uint64_t addr, size_t n, uint64_t *lo, uint64_t *hi)
{
    (void)ctx;
    return emu_mem_bounds(addr, n, lo, hi);    /* what the driver's launches check (emu_launch.c) */
}

static const ptx_env ENV = {NULL, env_alloc, env_free, env_check};

/* Builds the program of `n` NUL-terminated PTX texts and launches `kernel` on grid x block threads with
 * `dyn_smem` bytes of dynamic shared memory; args[i] points at parameter i's value (its size from the
 * kernel's declaration), as cuLaunchKernel's kernelParams.  Returns a ptx.h code; err gets the message.
 * The Ex form also takes `cooperative` and returns the thread-instructions executed and, in seconds[0]
 * and seconds[1], the launch's wall time and the calling thread's CPU time (the build excluded; with
 * ACCEL_EMU_PTX_THREADS=1 the whole grid runs in the calling thread), for the benches. */
EXPORT int accelEmuPtxRunEx(const char *const *texts, int n, const char *kernel, const unsigned *grid,
                            const unsigned *block, size_t dyn_smem, void **args, int nargs, int cooperative,
                            unsigned long long *thread_insns, double *seconds, char *err, size_t errlen)
{
    ptx_module *m = NULL;
    int rc = ptx_program_build(texts, NULL, n, &ENV, &m, err, errlen);
    if (rc) return rc;
    const ptx_kernel *k = NULL;
    rc = ptx_module_get_kernel(m, kernel, &k);
    if (rc) {
        if (err && errlen) snprintf(err, errlen, "no kernel named '%s'", kernel ? kernel : "(null)");
        ptx_module_free(m);
        return rc;
    }
    ptx_kernel_info info;
    ptx_kernel_get_info(k, &info);
    if (nargs != info.nparams) {
        if (err && errlen) snprintf(err, errlen, "kernel '%s' takes %d parameters, %d given", kernel, info.nparams, nargs);
        ptx_module_free(m);
        return PTX_E_INVALID_VALUE;
    }
    unsigned char *buf = calloc(info.param_bytes ? info.param_bytes : 1, 1);
    if (!buf) { ptx_module_free(m); return PTX_E_OUT_OF_MEMORY; }
    for (int i = 0; i < nargs; i++) memcpy(buf + info.param_offset[i], args[i], info.param_size[i]);
    ptx_launch_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    for (int i = 0; i < 3; i++) { cfg.grid[i] = grid[i]; cfg.block[i] = block[i]; }
    cfg.dyn_smem = dyn_smem;
    cfg.params = buf;
    cfg.params_size = info.param_bytes;
    cfg.nsm = 132;
    cfg.gridid = 1;
    cfg.cooperative = cooperative;
    uint64_t cnt = 0;
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    rc = ptx_launch_counted(k, &cfg, &ENV, err, errlen, thread_insns ? &cnt : NULL);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (thread_insns) *thread_insns = cnt;
    if (seconds) {
        seconds[0] = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        seconds[1] = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
    }
    free(buf);
    ptx_module_free(m);
    return rc;
}

EXPORT int accelEmuPtxRun(const char *const *texts, int n, const char *kernel, const unsigned *grid,
                          const unsigned *block, size_t dyn_smem, void **args, int nargs, char *err, size_t errlen)
{
    return accelEmuPtxRunEx(texts, n, kernel, grid, block, dyn_smem, args, nargs, 0, NULL, NULL, err, errlen);
}

/* Builds only: PTX_OK or the build's code and message (for the build-error tests). */
EXPORT int accelEmuPtxBuild(const char *const *texts, int n, char *err, size_t errlen)
{
    ptx_module *m = NULL;
    int rc = ptx_program_build(texts, NULL, n, &ENV, &m, err, errlen);
    if (!rc) ptx_module_free(m);
    return rc;
}

/* What ptx_kernel_get_info reports for kernel `name` of the program: out[] = nparams, param_bytes,
 * static_smem, local_bytes, const_bytes, num_regs, max_threads_per_block, reqntid x/y/z, maxntid x/y/z,
 * minnctapersm, ptx_version, target_sm (16 values); offsets / sizes get the parameters' layout (up to
 * `maxp` of each). */
EXPORT int accelEmuPtxKernelInfo(const char *const *texts, int n, const char *name, long long *out,
                                 unsigned *offsets, unsigned *sizes, int maxp, char *err, size_t errlen)
{
    ptx_module *m = NULL;
    int rc = ptx_program_build(texts, NULL, n, &ENV, &m, err, errlen);
    if (rc) return rc;
    const ptx_kernel *k = NULL;
    rc = ptx_module_get_kernel(m, name, &k);
    if (!rc) {
        ptx_kernel_info i;
        ptx_kernel_get_info(k, &i);
        long long v[16] = {i.nparams, i.param_bytes, (long long)i.static_smem, (long long)i.local_bytes,
                           (long long)i.const_bytes, i.num_regs, i.max_threads_per_block, i.reqntid[0], i.reqntid[1],
                           i.reqntid[2], i.maxntid[0], i.maxntid[1], i.maxntid[2], i.minnctapersm, i.ptx_version,
                           i.target_sm};
        memcpy(out, v, sizeof v);
        for (int p = 0; p < i.nparams && p < maxp; p++) { offsets[p] = i.param_offset[p]; sizes[p] = i.param_size[p]; }
    }
    ptx_module_free(m);
    return rc;
}
