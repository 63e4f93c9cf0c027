/* The runtime's side of device code in the libcudart.so.13 stand-in (issue 32): the registration path of
 * nvcc-built programs linked with -cudart shared, and the runtime's launch, symbol, attribute, occupancy and
 * kernel-node entry points over the driver layer (emu_module.c, emu_drvlaunch.c).
 *
 *  - __cudaRegisterFatBinary records the fatbin wrapper; __cudaRegisterFunction maps a host stub to its
 *    kernel's name, __cudaRegisterVar a host shadow variable to its device variable's name.  As CUDA's lazy
 *    loading does, a fatbin is loaded into a device (ptx/ptx_image.c picks its PTX) when one of its kernels
 *    or variables is first used there; a fatbin without PTX for the device (torch's) then gives
 *    cudaErrorNoKernelImageForDevice, and the once-per-process stderr notice names the kernel.
 *  - A launch (<<<...>>> through __cudaLaunchKernel(_ptsz), cudaLaunchKernel, cudaLaunchKernelExC,
 *    cudaLaunchCooperativeKernel) takes a host stub, or a kernel / function handle of the driver's; its
 *    configuration errors are cudaErrorInvalidConfiguration, other codes as the driver's (same numbers).
 *  - Every entry point records its failure as the thread's last error (t_last) and has the driver layer's
 *    checks; the runtime's context is made current for the device where work is queued. */
#include <stdio.h>

#include "emu_module.h"

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef struct { unsigned int x, y, z; } dim3;

enum { cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorInitializationError = 3,
       cudaErrorInvalidConfiguration = 9, cudaErrorInvalidSymbol = 13, cudaErrorInvalidMemcpyDirection = 21,
       cudaErrorInvalidDeviceFunction = 98 };

int cudaGetDevice(int *);

static cudaError_t rt_fail(cudaError_t e) { if (e) t_last = e; return e; }

/* The driver's code as the runtime reports it (the same number but for a launch configuration). */
static cudaError_t rt_code(CUresult r, int launch)
{
    if (r == CUDA_ERROR_INVALID_VALUE && launch) r = cudaErrorInvalidConfiguration;
    else if (r == CUDA_ERROR_INVALID_HANDLE && launch) r = 400;
    return rt_fail(r);
}

#define RT_STANDIN_ENTER() do { if (accelEmuDeviceCount() < 0) return rt_fail(cudaErrorInitializationError); } while (0)

/* ------------------------------------------------------------------------ registrations */

/* A registered fatbin: its wrapper and the modules loaded from it, per device. */
typedef struct loaded { int dev; CUresult code; mod_t *mod; struct loaded *next; } loaded_t;
typedef struct fatreg {
    void *self;                     /* what the program's handle (void **) points to */
    const void *wrapper;
    loaded_t *loads;
    struct reg *regs;               /* its functions and variables (unregistered with it) */
} fatreg_t;

enum { REG_FUNC = 1, REG_VAR = 2 };
typedef struct reg {
    int kind;
    const void *host;
    fatreg_t *fb;
    const char *name;               /* the program's own string, alive while its fatbin is registered */
    size_t size;                    /* variables */
    struct reg *next;
} reg_t;

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;

EXPORT void **__cudaRegisterFatBinary(void *wrapper)
{
    fatreg_t *fb = calloc(1, sizeof *fb);
    if (!fb) return NULL;
    fb->self = fb;
    fb->wrapper = wrapper;
    return &fb->self;
}

EXPORT void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }

static fatreg_t *fatreg_of(void **handle) { return handle ? (fatreg_t *)handle : NULL; }

static void reg_add(void **handle, int kind, const void *host, const char *name, size_t size)
{
    fatreg_t *fb = fatreg_of(handle);
    if (!fb || !host || !name) return;
    reg_t *r = calloc(1, sizeof *r);
    if (!r) return;
    r->name = name;
    r->kind = kind;
    r->host = host;
    r->fb = fb;
    r->size = size;
    if (emu_reg_put(host, r)) { free(r); return; }
    pthread_mutex_lock(&g_reg_lock);
    r->next = fb->regs;
    fb->regs = r;
    pthread_mutex_unlock(&g_reg_lock);
}

EXPORT void __cudaRegisterFunction(void **handle, const char *host_fun, char *device_fun, const char *device_name,
                                   int thread_limit, void *tid, void *bid, void *bdim, void *gdim, int *wsize)
{
    (void)device_fun; (void)thread_limit; (void)tid; (void)bid; (void)bdim; (void)gdim; (void)wsize;
    reg_add(handle, REG_FUNC, host_fun, device_name, 0);
}

EXPORT void __cudaRegisterVar(void **handle, char *host_var, char *device_address, const char *device_name, int ext,
                              size_t size, int constant, int global)
{
    (void)device_address; (void)ext; (void)constant; (void)global;
    reg_add(handle, REG_VAR, host_var, device_name, size);
}

EXPORT void __cudaUnregisterFatBinary(void **handle)
{
    fatreg_t *fb = fatreg_of(handle);
    if (!fb) return;
    for (reg_t *r = fb->regs, *n; r; r = n) {
        n = r->next;
        emu_reg_del(r->host);
        free(r);
    }
    for (loaded_t *l = fb->loads, *n; l; l = n) {
        n = l->next;
        if (l->mod) emu_module_unload(l->mod);
        free(l);
    }
    free(fb);
}

EXPORT char __cudaInitModule(void **handle) { (void)handle; return 1; }

/* The module of r's fatbin on device dev, loaded at first use (a failure is remembered: the same code
 * again, without loading twice). */
static CUresult reg_module(const reg_t *r, int dev, mod_t **out)
{
    fatreg_t *fb = r->fb;
    pthread_mutex_lock(&g_reg_lock);
    loaded_t *l = fb->loads;
    while (l && l->dev != dev) l = l->next;
    if (!l && (l = calloc(1, sizeof *l))) {
        char err[1024] = "";
        l->dev = dev;
        l->code = emu_module_load(fb->wrapper, 0, dev, r->kind == REG_FUNC ? r->name : NULL, &l->mod, err, sizeof err);
        if (l->code && err[0] && !emu_is_sass_message(err))
            fprintf(stderr, "accel emu: loading the fatbin of %s: %s\n", r->name, err);
        l->next = fb->loads;
        fb->loads = l;
    }
    CUresult code = l ? l->code : CUDA_ERROR_OUT_OF_MEMORY;
    if (l && !code) *out = l->mod;
    pthread_mutex_unlock(&g_reg_lock);
    return code;
}

static int cur_dev(void)
{
    int d = 0;
    int saved = t_last;
    if (cudaGetDevice(&d)) d = 0;
    t_last = saved;
    return d;
}

/* The function a runtime kernel argument names: a registered host stub (loaded for the current device), or
 * a driver kernel / function handle. */
static CUresult resolve_func(const void *fn, func_t **out)
{
    reg_t *r = emu_reg_get(fn);
    if (r && r->kind == REG_FUNC) {
        mod_t *m;
        CUresult c = reg_module(r, cur_dev(), &m);
        if (!c) c = emu_module_function(m, r->name, out);
        return c == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction : c;
    }
    func_t *f = emu_func_or_kernel((void *)fn);
    if (!f) return cudaErrorInvalidDeviceFunction;
    *out = f;
    return CUDA_SUCCESS;
}

/* A registered variable's device address and size on the current device. */
static CUresult resolve_var(const void *host, void **addr, size_t *size)
{
    reg_t *r = emu_reg_get(host);
    if (!r || r->kind != REG_VAR) return cudaErrorInvalidSymbol;
    mod_t *m;
    CUresult c = reg_module(r, cur_dev(), &m);
    if (c) return c;
    uint64_t a = 0;
    size_t n = 0;
    if (ptx_module_get_global(m->prog->m, r->name, &a, &n)) return cudaErrorInvalidSymbol;
    *addr = (void *)(uintptr_t)a;
    *size = n;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ launches */

static cudaError_t rt_launch(const void *fn, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s,
                             int cooperative)
{
    func_t *f;
    RT_STANDIN_ENTER();
    CUresult r = resolve_func(fn, &f);
    if (r) return rt_code(r, 0);
    emu_launch_req_t req = { { grid.x, grid.y, grid.z }, { block.x, block.y, block.z }, shmem, args, NULL, cooperative, 0 };
    return rt_code(emu_func_launch(f, &req, s), 1);
}

EXPORT cudaError_t cudaLaunchKernel(const void *fn, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
    return rt_launch(fn, grid, block, args, shmem, s, 0);
}

EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *fn, dim3 grid, dim3 block, void **args, size_t shmem,
                                         cudaStream_t s)
{
    return rt_launch(fn, grid, block, args, shmem, s ? s : (cudaStream_t)2, 0);
}

EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *fn, dim3 grid, dim3 block, void **args, size_t shmem,
                                               cudaStream_t s)
{
    return rt_launch(fn, grid, block, args, shmem, s, 1);
}

/* CUDA 13's launch stubs (crt/host_runtime.h): a kernel handle per host stub (the stub itself), then
 * __cudaLaunchKernel(_ptsz) with it. */
EXPORT cudaError_t __cudaGetKernel(void **kernel, const void *fn)
{
    if (!kernel) return rt_fail(cudaErrorInvalidValue);
    *kernel = (void *)fn;
    return 0;
}

EXPORT cudaError_t cudaGetKernel(void **kernel, const void *fn) { return __cudaGetKernel(kernel, fn); }

EXPORT cudaError_t __cudaLaunchKernel(void *kernel, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s)
{
    return rt_launch(kernel, grid, block, args, shmem, s, 0);
}

EXPORT cudaError_t __cudaLaunchKernel_ptsz(void *kernel, dim3 grid, dim3 block, void **args, size_t shmem,
                                           cudaStream_t s)
{
    return rt_launch(kernel, grid, block, args, shmem, s ? s : (cudaStream_t)2, 0);
}

/* cudaLaunchConfig_t: the grid and block as dim3, a size_t of dynamic shared memory, then as the driver's. */
typedef struct {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    launch_attr_t *attrs;
    unsigned nattrs;
} rt_launch_config_t;

EXPORT cudaError_t cudaLaunchKernelExC(const rt_launch_config_t *c, const void *fn, void **args)
{
    func_t *f;
    RT_STANDIN_ENTER();
    if (!c) return rt_fail(cudaErrorInvalidValue);
    if (c->smem > 0xffffffffu) return rt_fail(cudaErrorInvalidConfiguration);
    CUresult r = resolve_func(fn, &f);
    if (r) return rt_code(r, 0);
    launch_config_t d = { { c->grid.x, c->grid.y, c->grid.z }, { c->block.x, c->block.y, c->block.z },
                          (unsigned)c->smem, c->stream, c->attrs, c->nattrs };
    return rt_code(emu_launch_ex(f, &d, args, NULL), 1);
}

EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const rt_launch_config_t *c, const void *fn, void **args)
{
    if (!c) return cudaLaunchKernelExC(c, fn, args);
    rt_launch_config_t copy = *c;
    if (!copy.stream) copy.stream = (cudaStream_t)2;
    return cudaLaunchKernelExC(&copy, fn, args);
}

/* ------------------------------------------------------------------------ symbols */

EXPORT cudaError_t cudaGetSymbolAddress(void **addr, const void *symbol)
{
    size_t n;
    void *a;
    RT_STANDIN_ENTER();
    if (!addr) return rt_fail(cudaErrorInvalidValue);
    CUresult r = resolve_var(symbol, &a, &n);
    if (!r) *addr = a;
    return rt_code(r, 0);
}

EXPORT cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    size_t n;
    void *a;
    RT_STANDIN_ENTER();
    if (!size) return rt_fail(cudaErrorInvalidValue);
    CUresult r = resolve_var(symbol, &a, &n);
    if (!r) *size = n;
    return rt_code(r, 0);
}

enum { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice,
       cudaMemcpyDefault };

/* A copy into (to = 1) or out of a symbol: count bytes at offset, within the variable. */
static cudaError_t symbol_copy(int to, const void *symbol, void *mem, size_t count, size_t offset, int kind,
                               cudaStream_t s, int sync)
{
    size_t n;
    void *a;
    RT_STANDIN_ENTER();
    CUresult r = resolve_var(symbol, &a, &n);
    if (r) return rt_code(r, 0);
    if (offset > n || count > n - offset) return rt_fail(cudaErrorInvalidValue);
    if (to ? kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault
           : kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return rt_fail(cudaErrorInvalidMemcpyDirection);
    if (!count) return 0;
    char *dev = (char *)a + offset;
    return emu_copy(to ? dev : mem, count, to ? mem : dev, count, count, 1, kind, s, sync);
}

EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset, int kind)
{
    return symbol_copy(1, symbol, (void *)src, count, offset, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, int kind)
{
    return symbol_copy(0, symbol, dst, count, offset, kind, NULL, 1);
}

EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset, int kind,
                                           cudaStream_t s)
{
    return symbol_copy(1, symbol, (void *)src, count, offset, kind, s, 0);
}

EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset, int kind,
                                             cudaStream_t s)
{
    return symbol_copy(0, symbol, dst, count, offset, kind, s, 0);
}

/* ------------------------------------------------------------------------ attributes, occupancy */

struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA, maxDynamicSharedSizeBytes,
        preferredShmemCarveout, clusterDimMustBeSet, requiredClusterWidth, requiredClusterHeight, requiredClusterDepth,
        clusterSchedulingPolicyPreference, nonPortableClusterSizeAllowed, reserved[16];
};

EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *fn)
{
    func_t *f;
    RT_STANDIN_ENTER();
    if (!a) return rt_fail(cudaErrorInvalidValue);
    CUresult r = resolve_func(fn, &f);
    if (r) return rt_code(r, 0);
    int v[16];
    for (int i = 0; i < 16; i++) emu_func_get_attr(f, i, &v[i]);
    memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = v[0];
    a->sharedSizeBytes = (size_t)v[1];
    a->constSizeBytes = (size_t)v[2];
    a->localSizeBytes = (size_t)v[3];
    a->numRegs = v[4];
    a->ptxVersion = v[5];
    a->binaryVersion = v[6];
    a->cacheModeCA = v[7];
    a->maxDynamicSharedSizeBytes = v[8];
    a->preferredShmemCarveout = v[9];
    a->clusterDimMustBeSet = v[10];
    a->requiredClusterWidth = v[11];
    a->requiredClusterHeight = v[12];
    a->requiredClusterDepth = v[13];
    a->nonPortableClusterSizeAllowed = v[14];
    a->clusterSchedulingPolicyPreference = v[15];
    return 0;
}

EXPORT cudaError_t cudaFuncSetAttribute(const void *fn, int attr, int value)
{
    func_t *f;
    RT_STANDIN_ENTER();
    CUresult r = resolve_func(fn, &f);
    if (!r) r = emu_func_set_attr(f, attr, value);
    return rt_code(r, 0);
}

EXPORT cudaError_t cudaFuncSetCacheConfig(const void *fn, int config)
{
    func_t *f;
    RT_STANDIN_ENTER();
    CUresult r = resolve_func(fn, &f);
    if (!r && (config < 0 || config > 3)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) f->cache_config = config;
    return rt_code(r, 0);
}

/* The driver's function for a host stub (cudaGetFuncBySymbol). */
EXPORT cudaError_t cudaGetFuncBySymbol(void **out, const void *fn)
{
    func_t *f;
    RT_STANDIN_ENTER();
    if (!out) return rt_fail(cudaErrorInvalidValue);
    CUresult r = resolve_func(fn, &f);
    if (!r) *out = f;
    return rt_code(r, 0);
}

EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *fn, int block,
                                                                          size_t dyn, unsigned int flags)
{
    func_t *f;
    RT_STANDIN_ENTER();
    if (!n || flags > 1) return rt_fail(cudaErrorInvalidValue);
    CUresult r = resolve_func(fn, &f);
    if (!r) *n = emu_func_occupancy(f, block, dyn);
    return rt_code(r, 0);
}

EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *fn, int block, size_t dyn)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, fn, block, dyn, 0);
}

/* ------------------------------------------------------------------------ graph kernel nodes */

struct cudaKernelNodeParams { void *func; dim3 grid, block; unsigned int smem; void **params, **extra; };

static cudaError_t node_launch(const struct cudaKernelNodeParams *p, emu_launch_t **out)
{
    func_t *f;
    if (!p) return cudaErrorInvalidValue;
    CUresult r = resolve_func(p->func, &f);
    if (r) return r;
    emu_launch_req_t req = { { p->grid.x, p->grid.y, p->grid.z }, { p->block.x, p->block.y, p->block.z }, p->smem,
                             p->params, p->extra, 0, (size_t)f->max_dyn_smem };
    r = emu_launch_new(f->mod->prog, f->k, &req, out);
    if (r == CUDA_ERROR_INVALID_VALUE) return cudaErrorInvalidConfiguration;
    if (!r) (*out)->owner = p->func;
    return r;
}

EXPORT cudaError_t cudaGraphAddKernelNode(void **node, void *g, void *const *deps, size_t n,
                                          const struct cudaKernelNodeParams *p)
{
    emu_launch_t *l;
    RT_STANDIN_ENTER();
    cudaError_t e = node_launch(p, &l);
    if (!e) e = emu_graph_add_kernel_node(node, g, deps, n, l);
    return rt_fail(e);
}

EXPORT cudaError_t cudaGraphKernelNodeGetParams(void *node, struct cudaKernelNodeParams *p)
{
    emu_launch_t *l;
    RT_STANDIN_ENTER();
    if (!p) return rt_fail(cudaErrorInvalidValue);
    cudaError_t e = emu_graph_kernel_node_get(node, &l);
    if (e) return rt_fail(e);
    p->func = l->owner;
    p->grid = (dim3){ l->cfg.grid[0], l->cfg.grid[1], l->cfg.grid[2] };
    p->block = (dim3){ l->cfg.block[0], l->cfg.block[1], l->cfg.block[2] };
    p->smem = (unsigned)l->cfg.dyn_smem;
    p->params = l->argv;        /* valid while the node keeps its launch */
    p->extra = NULL;
    emu_launch_release(l);
    return 0;
}

EXPORT cudaError_t cudaGraphKernelNodeSetParams(void *node, const struct cudaKernelNodeParams *p)
{
    emu_launch_t *l;
    RT_STANDIN_ENTER();
    cudaError_t e = node_launch(p, &l);
    if (!e) e = emu_graph_kernel_node_set(node, l);
    return rt_fail(e);
}

EXPORT cudaError_t cudaGraphExecKernelNodeSetParams(void *exec, void *node, const struct cudaKernelNodeParams *p)
{
    emu_launch_t *l;
    RT_STANDIN_ENTER();
    cudaError_t e = node_launch(p, &l);
    if (!e) e = emu_graph_exec_kernel_node_set(exec, node, l);
    return rt_fail(e);
}

/* ------------------------------------------------------------------------ libraries (runtime) */

/* The runtime's library API over the driver's (cudaLibrary_t == CUlibrary, cudaKernel_t == CUkernel, which
 * cudaLaunchKernel and the attribute calls take); the codes as the driver's (same numbers). */
CUresult cuLibraryLoadData(void **, const void *, int *, void **, unsigned int, int *, void **, unsigned int);
CUresult cuLibraryLoadFromFile(void **, const char *, int *, void **, unsigned int, int *, void **, unsigned int);
CUresult cuLibraryUnload(void *);
CUresult cuLibraryGetKernel(void **, void *, const char *);
CUresult cuLibraryGetKernelCount(unsigned int *, void *);
CUresult cuLibraryEnumerateKernels(void **, unsigned int, void *);
CUresult cuLibraryGetGlobal(CUdeviceptr *, size_t *, void *, const char *);
CUresult cuLibraryGetManaged(CUdeviceptr *, size_t *, void *, const char *);

EXPORT cudaError_t cudaLibraryLoadData(void **lib, const void *code, int *jopts, void **jvals, unsigned int njit,
                                       int *lopts, void **lvals, unsigned int nlib)
{
    RT_STANDIN_ENTER();
    return rt_fail(cuLibraryLoadData(lib, code, jopts, jvals, njit, lopts, lvals, nlib));
}

EXPORT cudaError_t cudaLibraryLoadFromFile(void **lib, const char *path, int *jopts, void **jvals, unsigned int njit,
                                           int *lopts, void **lvals, unsigned int nlib)
{
    RT_STANDIN_ENTER();
    return rt_fail(cuLibraryLoadFromFile(lib, path, jopts, jvals, njit, lopts, lvals, nlib));
}

EXPORT cudaError_t cudaLibraryUnload(void *lib)
{
    RT_STANDIN_ENTER();
    return rt_fail(cuLibraryUnload(lib));
}

EXPORT cudaError_t cudaLibraryGetKernel(void **kernel, void *lib, const char *name)
{
    RT_STANDIN_ENTER();
    return rt_fail(cuLibraryGetKernel(kernel, lib, name));
}

EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned int *count, void *lib)
{
    RT_STANDIN_ENTER();
    return rt_fail(cuLibraryGetKernelCount(count, lib));
}

EXPORT cudaError_t cudaLibraryEnumerateKernels(void **kernels, unsigned int n, void *lib)
{
    RT_STANDIN_ENTER();
    return rt_fail(cuLibraryEnumerateKernels(kernels, n, lib));
}

EXPORT cudaError_t cudaLibraryGetGlobal(void **dptr, size_t *bytes, void *lib, const char *name)
{
    CUdeviceptr p = 0;
    RT_STANDIN_ENTER();
    CUresult r = cuLibraryGetGlobal(&p, bytes, lib, name);
    if (!r && dptr) *dptr = (void *)(uintptr_t)p;
    return rt_fail(r);
}

EXPORT cudaError_t cudaLibraryGetManaged(void **dptr, size_t *bytes, void *lib, const char *name)
{
    CUdeviceptr p = 0;
    RT_STANDIN_ENTER();
    CUresult r = cuLibraryGetManaged(&p, bytes, lib, name);
    if (!r && dptr) *dptr = (void *)(uintptr_t)p;
    return rt_fail(r);
}

EXPORT cudaError_t cudaKernelSetAttributeForDevice(const void *kernel, int attr, int value, int device)
{
    func_t *f;
    RT_STANDIN_ENTER();
    if (device < 0 || device >= accelEmuDeviceCount()) return rt_fail(101);    /* cudaErrorInvalidDevice */
    CUresult r = resolve_func(kernel, &f);
    if (!r) r = emu_func_set_attr(f, attr, value);
    return rt_code(r, 0);
}
