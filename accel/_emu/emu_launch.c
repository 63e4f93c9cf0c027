/* Programs and kernel launches on the emulator: the PTX engine's environment over the allocation table,
 * launch checks and parameter copies, the kernel as a stream item, sticky errors (emu_launch.h).
 *
 * Documented choices:
 *  - A launch's configuration is checked at the call against the device's profile (emu_profiles.c) and
 *    the kernel's declared resources, with the driver's codes; its parameters are copied at the call.
 *  - The launch then runs when its stream's worker reaches it, in that worker (FIFO order, events and
 *    waits as for every item); ptx_launch spreads a large grid over the engine's own threads.
 *  - An execution fault (700, 702, 715-719) is sticky for the device: the message goes to stderr once,
 *    the runtime and driver calls on the device return the code until its primary context is reset, and
 *    its later kernels are skipped.  A resources failure found only at run time (701) is not sticky:
 *    its message goes to stderr. */
#include "emu_runtime.h"
#include "emu_graph.h"
#include "emu_launch.h"

atomic_int g_sticky_any;
atomic_int g_sticky[EMU_MAX_DEVICES];

void emu_sticky_clear(int dev)
{
    if (dev < 0 || dev >= EMU_MAX_DEVICES) return;
    atomic_store(&g_sticky[dev], 0);
    int any = 0;
    for (int d = 0; d < EMU_MAX_DEVICES && !any; d++) any = atomic_load(&g_sticky[d]) != 0;
    atomic_store(&g_sticky_any, any);
}

/* ------------------------------------------------------------------ the engine's environment */

/* Set while this thread drops a program's last reference with G held (its variables are freed then). */
static __thread int t_locked_free;

static void *env_alloc(void *ctx, size_t n, size_t align)
{
    return emu_mem_module_alloc((int)(intptr_t)ctx, n, align);
}

static void env_free(void *ctx, void *p)
{
    (void)ctx;
    if (t_locked_free) emu_mem_module_free_locked(p);
    else emu_mem_module_free(p);
}

static int env_check(void *ctx, uint64_t addr, size_t n, uint64_t *lo, uint64_t *hi)
{
    (void)ctx;
    return emu_mem_bounds(addr, n, lo, hi);
}

int emu_prog_build(const char *const *texts, const size_t *len, int n, int device, emu_prog_t **out, char *err,
                   size_t errlen)
{
    emu_prog_t *p = calloc(1, sizeof *p);
    if (!p) return PTX_E_OUT_OF_MEMORY;
    atomic_init(&p->refs, 1);
    p->device = device;
    p->env = (ptx_env){ (void *)(intptr_t)device, env_alloc, env_free, env_check };
    int r = ptx_program_build(texts, len, n, &p->env, &p->m, err, errlen);
    if (r) {
        free(p);
        return r;
    }
    *out = p;
    return PTX_OK;
}

void emu_prog_ref(emu_prog_t *p) { atomic_fetch_add(&p->refs, 1); }

static void prog_free(emu_prog_t *p)
{
    ptx_module_free(p->m);
    free(p);
}

void emu_prog_release(emu_prog_t *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) prog_free(p);
}

void emu_prog_unref_locked(emu_prog_t *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
        t_locked_free = 1;
        prog_free(p);
        t_locked_free = 0;
    }
}

/* ------------------------------------------------------------------ limits and checks */

void emu_device_limits(int dev, emu_devlimits_t *o)
{
    const emu_profile_t *p = emu_profile(dev >= 0 && dev < g_ndev ? g_phys[dev] : 0);
    o->sms = p->sms;
    o->cc = p->major * 10 + p->minor;
    o->threads_per_sm = p->threads_per_sm;
    o->blocks_per_sm = p->blocks_per_sm;
    o->regs_per_sm = 65536;         /* every profile's compute capability (7.5 - 10.0) */
    o->regs_per_block = 65536;
    o->smem_per_sm = p->smem_per_sm;
    o->smem_per_block = 49152;
    o->smem_optin = p->smem_optin;
    o->smem_reserved = p->smem_reserved;
    o->max_block[0] = 1024;
    o->max_block[1] = 1024;
    o->max_block[2] = 64;
    o->max_grid[0] = 0x7fffffffu;
    o->max_grid[1] = 65535;
    o->max_grid[2] = 65535;
}

enum { CU_LAUNCH_PARAM_END = 0, CU_LAUNCH_PARAM_BUFFER_POINTER = 1, CU_LAUNCH_PARAM_BUFFER_SIZE = 2 };
#define CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE 720

int emu_occupancy_blocks(const emu_devlimits_t *d, int threads, int regs, size_t smem)
{
    if (threads <= 0) return 0;
    int warps = (threads + 31) / 32;
    int by_threads = d->threads_per_sm / (warps * 32);
    int regs_warp = ((regs > 0 ? regs : 1) * 32 + 255) / 256 * 256;
    int by_regs = d->regs_per_sm / (regs_warp * warps);
    size_t per = smem + (size_t)d->smem_reserved;
    int by_smem = per ? (int)((size_t)d->smem_per_sm / per) : d->blocks_per_sm;
    int b = d->blocks_per_sm;
    if (by_threads < b) b = by_threads;
    if (by_regs < b) b = by_regs;
    if (by_smem < b) b = by_smem;
    return b;
}

int emu_launch_new(emu_prog_t *prog, const ptx_kernel *k, const emu_launch_req_t *req, emu_launch_t **out)
{
    ptx_kernel_info ki;
    emu_devlimits_t d;
    ptx_kernel_get_info(k, &ki);
    emu_device_limits(prog->device, &d);
    uint64_t threads = 1;
    for (int i = 0; i < 3; i++) {
        if (!req->grid[i] || !req->block[i] || req->grid[i] > d.max_grid[i] || req->block[i] > (unsigned)d.max_block[i])
            return CUDA_ERROR_INVALID_VALUE;
        threads *= req->block[i];
        if (ki.reqntid[0] && req->block[i] != (ki.reqntid[i] ? ki.reqntid[i] : 1)) return CUDA_ERROR_INVALID_VALUE;
    }
    if (threads > 1024 || threads > (uint64_t)ki.max_threads_per_block) return CUDA_ERROR_INVALID_VALUE;
    if (req->smem > req->max_dyn_smem || ki.static_smem + req->smem > (size_t)d.smem_optin)
        return CUDA_ERROR_INVALID_VALUE;
    if ((uint64_t)ki.num_regs * ((threads + 31) / 32 * 32) > (uint64_t)d.regs_per_block)
        return 701;     /* CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES */
    if (req->cooperative) {
        uint64_t blocks = (uint64_t)req->grid[0] * req->grid[1] * req->grid[2];
        int per_sm = emu_occupancy_blocks(&d, (int)threads, ki.num_regs, ki.static_smem + req->smem);
        if (blocks > (uint64_t)per_sm * (uint64_t)d.sms) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    /* the parameters: exactly one form when the kernel has any */
    const unsigned char *buf = NULL;
    size_t bufsize = 0;
    int have_buf = 0, have_size = 0;
    if (req->params && req->extra) return CUDA_ERROR_INVALID_VALUE;
    if (req->extra) {
        for (void **e = req->extra; (uintptr_t)e[0] != CU_LAUNCH_PARAM_END; e += 2) {
            uintptr_t key = (uintptr_t)e[0];
            if (key == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = e[1], have_buf = 1;
            else if (key == CU_LAUNCH_PARAM_BUFFER_SIZE) {
                if (!e[1]) return CUDA_ERROR_INVALID_VALUE;
                bufsize = *(const size_t *)e[1];
                have_size = 1;
            } else return CUDA_ERROR_INVALID_VALUE;
        }
        if (have_buf != have_size) return CUDA_ERROR_INVALID_VALUE;     /* the pointer needs its size */
    }
    size_t need = ki.nparams ? (size_t)ki.param_offset[ki.nparams - 1] + ki.param_size[ki.nparams - 1] : 0;
    if (ki.nparams) {
        if (!req->params && !have_buf) return CUDA_ERROR_INVALID_VALUE;
        if (have_buf && (!buf || bufsize < need || bufsize > ki.param_bytes)) return CUDA_ERROR_INVALID_VALUE;
        for (int i = 0; req->params && i < ki.nparams; i++)
            if (!req->params[i]) return CUDA_ERROR_INVALID_VALUE;
    }
    size_t pbytes = ((size_t)ki.param_bytes + 15) & ~(size_t)15;
    emu_launch_t *l = calloc(1, sizeof *l + pbytes + (size_t)ki.nparams * sizeof(void *) + 1);
    if (!l) return PTX_E_OUT_OF_MEMORY;
    l->argv = (void **)(l->params + pbytes);
    for (int i = 0; i < ki.nparams; i++) l->argv[i] = l->params + ki.param_offset[i];
    atomic_init(&l->refs, 1);
    l->prog = prog;
    emu_prog_ref(prog);
    l->k = k;
    l->device = prog->device;
    if (have_buf) memcpy(l->params, buf, bufsize);
    else
        for (int i = 0; i < ki.nparams; i++) memcpy(l->params + ki.param_offset[i], req->params[i], ki.param_size[i]);
    for (int i = 0; i < 3; i++) {
        l->cfg.grid[i] = req->grid[i];
        l->cfg.block[i] = req->block[i];
    }
    l->cfg.dyn_smem = req->smem;
    l->cfg.params = l->params;
    l->cfg.params_size = ki.param_bytes;
    l->cfg.nsm = (unsigned)d.sms;
    l->cfg.cooperative = req->cooperative;
    *out = l;
    return CUDA_SUCCESS;
}

emu_launch_t *emu_launch_ref(emu_launch_t *l)
{
    atomic_fetch_add(&l->refs, 1);
    return l;
}

void emu_launch_unref_locked(emu_launch_t *l)
{
    if (l && atomic_fetch_sub(&l->refs, 1) == 1) {
        emu_prog_unref_locked(l->prog);
        free(l);
    }
}

void emu_launch_release(emu_launch_t *l)
{
    if (l && atomic_fetch_sub(&l->refs, 1) == 1) {
        emu_prog_release(l->prog);
        free(l);
    }
}

/* ------------------------------------------------------------------ running */

static atomic_ullong g_gridid;

void emu_launch_run(emu_launch_t *l)
{
    if (emu_sticky(l->device)) return;      /* the context is dead: nothing more runs on it */
    char err[512] = "";
    ptx_launch_cfg cfg = l->cfg;
    cfg.gridid = atomic_fetch_add(&g_gridid, 1) + 1;
    int r = ptx_launch(l->k, &cfg, &l->prog->env, err, sizeof err);
    if (!r) return;
    ptx_kernel_info ki;
    ptx_kernel_get_info(l->k, &ki);
    if (r == PTX_E_LAUNCH_OUT_OF_RESOURCES) {
        fprintf(stderr, "accel emu: kernel %s was not launched: %s\n", ki.name, err[0] ? err : "out of resources");
        return;
    }
    int expected = 0;
    if (atomic_compare_exchange_strong(&g_sticky[l->device], &expected, r)) {
        atomic_store(&g_sticky_any, 1);
        fprintf(stderr, "accel emu: kernel %s faulted on device %d (error %d, sticky): %s\n", ki.name, l->device, r,
                err[0] ? err : "no detail");
    }
}

int emu_launch_submit(emu_launch_t *l, void *h)
{
    INIT();
    cudaError_t err = cudaSuccess;
    item_t *it = item_new(IT_KERNEL);
    pthread_mutex_lock(&G);
    stream_t *s = g_init_err ? NULL : get_stream((cudaStream_t)h, &err);
    if (g_init_err) err = g_init_err;
    if (!it && !err) err = cudaErrorMemoryAllocation;
    if (!err) {
        l->device = s->device;      /* its faults are that device's (a library's kernels run anywhere) */
        it->launch = l;
        l = NULL;
        err = submit(s, it);        /* frees it on failure, or records it as a kernel node */
        it = NULL;
    }
    if (l) emu_launch_unref_locked(l);
    pthread_mutex_unlock(&G);
    free(it);
    return err;
}

/* ------------------------------------------------------------------ the driver's objects */

static htab_t g_objs;       /* live module / function / library / kernel / link-state addresses -> kind */

int emu_obj_put(const void *p, int kind)
{
    pthread_mutex_lock(&G);
    int r = ht_put(&g_objs, (uint64_t)(uintptr_t)p, (void *)(intptr_t)kind);
    pthread_mutex_unlock(&G);
    return r;
}

int emu_obj_is(const void *p, int kind)
{
    if (!p) return 0;
    pthread_mutex_lock(&G);
    int r = (intptr_t)ht_get(&g_objs, (uint64_t)(uintptr_t)p) == kind;
    pthread_mutex_unlock(&G);
    return r;
}

void emu_obj_del(const void *p)
{
    pthread_mutex_lock(&G);
    ht_del(&g_objs, (uint64_t)(uintptr_t)p);
    pthread_mutex_unlock(&G);
}

static htab_t g_regs;       /* the runtime's registrations: host address -> record */

int emu_reg_put(const void *host, void *rec)
{
    pthread_mutex_lock(&G);
    int r = ht_put(&g_regs, (uint64_t)(uintptr_t)host, rec);
    pthread_mutex_unlock(&G);
    return r;
}

void *emu_reg_get(const void *host)
{
    if (!host) return NULL;
    pthread_mutex_lock(&G);
    void *r = ht_get(&g_regs, (uint64_t)(uintptr_t)host);
    pthread_mutex_unlock(&G);
    return r;
}

void emu_reg_del(const void *host)
{
    pthread_mutex_lock(&G);
    ht_del(&g_regs, (uint64_t)(uintptr_t)host);
    pthread_mutex_unlock(&G);
}
