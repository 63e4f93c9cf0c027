/* The driver's launches, occupancy and graph kernel nodes in the libcuda.so.1 stand-in (issue 32), over
 * emu_module.c's functions and emu_launch.c's launches.
 *
 *  - cuLaunchKernel / cuLaunchKernelEx / cuLaunchCooperativeKernel check the configuration at the call
 *    (emu_launch_new: CUDA_ERROR_INVALID_VALUE for a block or grid over the limits, dynamic shared memory over
 *    the function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kernelParams and extra both given;
 *    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), copy the parameters and
 *    queue the launch on the stream (or record a kernel node when it captures).
 *  - cuLaunchKernelEx's attributes: cooperative as cuLaunchCooperativeKernel; a cluster dimension must divide
 *    the grid and hold at most 8 blocks (16 with CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED), else
 *    CUDA_ERROR_INVALID_CLUSTER_SIZE; the engine runs the blocks without cluster grouping (the %cluster_*
 *    registers read as clusters of one block).  Priority, synchronisation policy, programmatic
 *    serialisation / events, memory sync domains, access policy windows, completion events and carveouts are
 *    accepted and have no effect (the order the stream gives is kept).
 *  - Occupancy follows the calculator's rules (emu_occupancy_blocks) on the device's profile and the
 *    function's declared resources. */
#include "emu_module.h"

enum { CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720, CUDA_ERROR_INVALID_CLUSTER_SIZE = 912 };

/* A function handle or, as the driver accepts there, a library kernel (CUkernel) cast to one. */
func_t *emu_func_or_kernel(CUfunction h)
{
    if (emu_obj_is(h, OBJ_FUNCTION)) return h;
    if (emu_obj_is(h, OBJ_KERNEL)) return ((kern_t *)h)->f;
    return NULL;
}

CUresult emu_func_launch(func_t *f, emu_launch_req_t *req, CUstream stream)
{
    int dev = ctx_device(current_ctx());
    int st = emu_sticky(dev >= 0 ? dev : f->mod->prog->device);
    if (st) return st;
    req->max_dyn_smem = (size_t)f->max_dyn_smem;
    emu_launch_t *l;
    CUresult r = emu_launch_new(f->mod->prog, f->k, req, &l);
    if (r) return r;
    l->owner = f;
    return emu_launch_submit(l, stream);
}

static CUresult launch(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned smem, CUstream s, void **params, void **extra, int cooperative)
{
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    emu_launch_req_t req = { { gx, gy, gz }, { bx, by, bz }, smem, params, extra, cooperative, 0 };
    return emu_func_launch(f, &req, s);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    DRV_ENTER(cuLaunchKernel);
    return launch(f, gx, gy, gz, bx, by, bz, smem, s, params, extra, 0);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                          unsigned by, unsigned bz, unsigned smem, CUstream s, void **params)
{
    DRV_ENTER(cuLaunchCooperativeKernel);
    return launch(f, gx, gy, gz, bx, by, bz, smem, s, params, NULL, 1);
}

enum { LA_IGNORE = 0, LA_COOPERATIVE = 2, LA_CLUSTER_DIMENSION = 4, LA_LAST_KNOWN = 20 };

/* The cluster and cooperative attributes of config c for f: CUDA_SUCCESS or the driver's error. */
static CUresult launch_attrs(const launch_config_t *c, const func_t *f, int *cooperative, unsigned cluster[3])
{
    cluster[0] = cluster[1] = cluster[2] = 1;
    *cooperative = 0;
    if (c->nattrs && !c->attrs) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < c->nattrs; i++) {
        const launch_attr_t *a = &c->attrs[i];
        if (a->id < 0 || a->id > LA_LAST_KNOWN) return CUDA_ERROR_INVALID_VALUE;
        if (a->id == LA_COOPERATIVE) *cooperative = a->value.i != 0;
        if (a->id == LA_CLUSTER_DIMENSION) memcpy(cluster, a->value.dim, sizeof a->value.dim);
    }
    uint64_t size = (uint64_t)cluster[0] * cluster[1] * cluster[2];
    if (size == 1) return CUDA_SUCCESS;
    emu_devlimits_t d;
    emu_device_limits(f->mod->prog->device, &d);
    if (!size || d.cc < 90 || size > (f->non_portable ? 16u : 8u)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    for (int k = 0; k < 3; k++)
        if (c->grid[k] % cluster[k]) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernelEx(const launch_config_t *c, CUfunction h, void **params, void **extra)
{
    DRV_ENTER(cuLaunchKernelEx);
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    return emu_launch_ex(f, c, params, extra);
}

CUresult emu_launch_ex(func_t *f, const launch_config_t *c, void **params, void **extra)
{
    int coop;
    unsigned cluster[3];
    CUresult r = launch_attrs(c, f, &coop, cluster);
    if (r) return r;
    emu_launch_req_t req = { { c->grid[0], c->grid[1], c->grid[2] }, { c->block[0], c->block[1], c->block[2] },
                             c->smem, params, extra, coop, 0 };
    return emu_func_launch(f, &req, c->stream);
}

/* The per-thread-default-stream variants: stream 0 is the calling thread's per-thread stream. */
static CUstream ptds(CUstream s) { return s ? s : (CUstream)(uintptr_t)2; }

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, ptds(s), params, extra);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned smem, CUstream s, void **params)
{
    return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, smem, ptds(s), params);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const launch_config_t *c, CUfunction h, void **params, void **extra)
{
    if (!c) return cuLaunchKernelEx(c, h, params, extra);
    launch_config_t copy = *c;
    copy.stream = ptds(c->stream);
    return cuLaunchKernelEx(&copy, h, params, extra);
}

/* ------------------------------------------------------------------------ occupancy */

int emu_func_occupancy(const func_t *f, int block, size_t dyn)
{
    emu_devlimits_t d;
    int maxt;
    emu_device_limits(f->mod->prog->device, &d);
    if (emu_func_get_attr(f, 0, &maxt) || block <= 0 || block > maxt) return 0;
    if (f->info.static_smem + dyn > (size_t)d.smem_optin) return 0;
    return emu_occupancy_blocks(&d, block, f->info.num_regs, f->info.static_smem + dyn);
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction h, int block, size_t dyn,
                                                                     unsigned int flags)
{
    DRV_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags);
    if (!n || flags > 1) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    *n = emu_func_occupancy(f, block, dyn);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction h, int block, size_t dyn)
{
    DRV_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    *n = emu_func_occupancy(f, block, dyn);
    return CUDA_SUCCESS;
}

typedef size_t (*b2d_t)(int);

/* The block size with the most resident threads per SM (the larger on a tie), and the grid that fills the
 * device with it. */
static CUresult potential(int *min_grid, int *block, const func_t *f, b2d_t b2d, size_t dyn, int limit)
{
    if (!min_grid || !block) return CUDA_ERROR_INVALID_VALUE;
    emu_devlimits_t d;
    int maxt;
    emu_device_limits(f->mod->prog->device, &d);
    emu_func_get_attr(f, 0, &maxt);
    if (limit > 0 && limit < maxt) maxt = limit;
    int best = 0, best_blocks = 0;
    long best_threads = 0;
    for (int b = maxt; b > 0; b = b > 32 && b % 32 ? b / 32 * 32 : b - 32) {
        size_t need = b2d ? b2d(b) : dyn;
        int blocks = emu_func_occupancy(f, b, need);
        long t = (long)blocks * b;
        if (t > best_threads) best_threads = t, best = b, best_blocks = blocks;
    }
    *block = best;
    *min_grid = best_blocks * d.sms;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction h, b2d_t b2d, size_t dyn,
                                                 int limit)
{
    DRV_ENTER(cuOccupancyMaxPotentialBlockSize);
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    return potential(min_grid, block, f, b2d, dyn, limit);
}

EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *min_grid, int *block, CUfunction h, b2d_t b2d,
                                                          size_t dyn, int limit, unsigned int flags)
{
    DRV_ENTER(cuOccupancyMaxPotentialBlockSizeWithFlags);
    if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    return potential(min_grid, block, f, b2d, dyn, limit);
}

EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *out, CUfunction h, int nblocks, int block)
{
    DRV_ENTER(cuOccupancyAvailableDynamicSMemPerBlock);
    if (!out || nblocks <= 0 || block <= 0) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    emu_devlimits_t d;
    emu_device_limits(f->mod->prog->device, &d);
    size_t per = (size_t)d.smem_per_sm / (size_t)nblocks, used = f->info.static_smem + (size_t)d.smem_reserved;
    size_t cap = (size_t)d.smem_optin > f->info.static_smem ? (size_t)d.smem_optin - f->info.static_smem : 0;
    size_t avail = per > used ? per - used : 0;
    *out = emu_func_occupancy(f, block, 0) ? (avail < cap ? avail : cap) : 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *out, CUfunction h, const launch_config_t *c)
{
    DRV_ENTER(cuOccupancyMaxPotentialClusterSize);
    if (!out || !c) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    emu_devlimits_t d;
    emu_device_limits(f->mod->prog->device, &d);
    *out = d.cc < 90 ? 0 : f->non_portable ? 16 : 8;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxActiveClusters(int *out, CUfunction h, const launch_config_t *c)
{
    DRV_ENTER(cuOccupancyMaxActiveClusters);
    if (!out || !c) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, emu_func_or_kernel, h);
    int coop;
    unsigned cl[3];
    CUresult r = launch_attrs(c, f, &coop, cl);
    if (r) return r;
    emu_devlimits_t d;
    emu_device_limits(f->mod->prog->device, &d);
    int per_sm = emu_func_occupancy(f, (int)(c->block[0] * c->block[1] * c->block[2]), c->smem);
    *out = (int)((uint64_t)per_sm * (uint64_t)d.sms / ((uint64_t)cl[0] * cl[1] * cl[2]));
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ graph kernel nodes */

/* CUDA_KERNEL_NODE_PARAMS (v1: up to extra; v2 adds the kernel and the context). */
typedef struct {
    CUfunction func;
    unsigned grid[3], block[3], smem;
    void **params, **extra;
    CUkernel kern;
    CUcontext ctx;
} knode_params_t;

static CUresult node_launch(const knode_params_t *p, int v2, emu_launch_t **out)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    func_t *f = emu_func_or_kernel(p->func);
    if (!p->func && v2 && p->kern) f = emu_func_or_kernel(p->kern);
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    emu_launch_req_t req = { { p->grid[0], p->grid[1], p->grid[2] }, { p->block[0], p->block[1], p->block[2] },
                             p->smem, p->params, p->extra, 0, (size_t)f->max_dyn_smem };
    CUresult r = emu_launch_new(f->mod->prog, f->k, &req, out);
    if (!r) (*out)->owner = f;
    return r;
}

static CUresult add_kernel_node(void **node, void *g, void *const *deps, size_t n, const knode_params_t *p, int v2)
{
    emu_launch_t *l;
    CUresult r = node_launch(p, v2, &l);
    return r ? r : emu_graph_add_kernel_node(node, g, deps, n, l);
}

EXPORT CUresult cuGraphAddKernelNode_v2(void **node, void *g, void *const *deps, size_t n, const knode_params_t *p)
{
    DRV_ENTER_CREATE(cuGraphAddKernelNode_v2);
    return add_kernel_node(node, g, deps, n, p, 1);
}

EXPORT CUresult cuGraphAddKernelNode(void **node, void *g, void *const *deps, size_t n, const knode_params_t *p)
{
    DRV_ENTER_CREATE(cuGraphAddKernelNode_v2);
    return add_kernel_node(node, g, deps, n, p, 0);
}

static CUresult node_get(void *node, knode_params_t *p, int v2)
{
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    emu_launch_t *l;
    CUresult r = emu_graph_kernel_node_get(node, &l);
    if (r) return r;
    p->func = l->owner;
    for (int i = 0; i < 3; i++) p->grid[i] = l->cfg.grid[i], p->block[i] = l->cfg.block[i];
    p->smem = (unsigned)l->cfg.dyn_smem;
    p->params = l->argv;        /* valid while the node keeps its launch */
    p->extra = NULL;
    if (v2) {
        p->kern = NULL;
        p->ctx = ctx_primary(l->prog->device);
    }
    emu_launch_release(l);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphKernelNodeGetParams_v2(void *node, knode_params_t *p)
{
    DRV_ENTER(cuGraphKernelNodeGetParams_v2);
    return node_get(node, p, 1);
}

EXPORT CUresult cuGraphKernelNodeGetParams(void *node, knode_params_t *p)
{
    DRV_ENTER(cuGraphKernelNodeGetParams_v2);
    return node_get(node, p, 0);
}

static CUresult node_set(void *exec, void *node, const knode_params_t *p, int v2)
{
    emu_launch_t *l;
    CUresult r = node_launch(p, v2, &l);
    if (r) return r;
    return exec ? emu_graph_exec_kernel_node_set(exec, node, l) : emu_graph_kernel_node_set(node, l);
}

EXPORT CUresult cuGraphKernelNodeSetParams_v2(void *node, const knode_params_t *p)
{
    DRV_ENTER(cuGraphKernelNodeSetParams_v2);
    return node_set(NULL, node, p, 1);
}

EXPORT CUresult cuGraphKernelNodeSetParams(void *node, const knode_params_t *p)
{
    DRV_ENTER(cuGraphKernelNodeSetParams_v2);
    return node_set(NULL, node, p, 0);
}

EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const knode_params_t *p)
{
    DRV_ENTER(cuGraphExecKernelNodeSetParams_v2);
    return node_set(exec, node, p, 1);
}

EXPORT CUresult cuGraphExecKernelNodeSetParams(void *exec, void *node, const knode_params_t *p)
{
    DRV_ENTER(cuGraphExecKernelNodeSetParams_v2);
    return node_set(exec, node, p, 0);
}

/* ------------------------------------------------------------------------ proc addresses */

/* emu_module.c's entry points, declared for their addresses only. */
#define DECLARE(fn) CUresult fn();
DECLARE(cuModuleLoadData) DECLARE(cuModuleLoadDataEx) DECLARE(cuModuleLoadFatBinary) DECLARE(cuModuleLoad)
DECLARE(cuModuleUnload) DECLARE(cuModuleGetFunction) DECLARE(cuModuleGetFunctionCount)
DECLARE(cuModuleEnumerateFunctions) DECLARE(cuModuleGetGlobal_v2) DECLARE(cuModuleGetLoadingMode)
DECLARE(cuLibraryLoadData) DECLARE(cuLibraryLoadFromFile) DECLARE(cuLibraryUnload) DECLARE(cuLibraryGetKernel)
DECLARE(cuLibraryGetKernelCount) DECLARE(cuLibraryEnumerateKernels) DECLARE(cuLibraryGetModule)
DECLARE(cuLibraryGetGlobal) DECLARE(cuLibraryGetManaged) DECLARE(cuKernelGetFunction) DECLARE(cuKernelGetLibrary)
DECLARE(cuKernelGetName) DECLARE(cuKernelGetParamInfo) DECLARE(cuKernelGetAttribute) DECLARE(cuKernelSetAttribute)
DECLARE(cuKernelSetCacheConfig) DECLARE(cuFuncGetAttribute) DECLARE(cuFuncSetAttribute) DECLARE(cuFuncSetCacheConfig)
DECLARE(cuFuncSetSharedMemConfig) DECLARE(cuFuncGetName) DECLARE(cuFuncGetParamInfo) DECLARE(cuFuncGetModule)
DECLARE(cuFuncIsLoaded) DECLARE(cuFuncLoad) DECLARE(cuLinkCreate_v2) DECLARE(cuLinkAddData_v2)
DECLARE(cuLinkAddFile_v2) DECLARE(cuLinkComplete) DECLARE(cuLinkDestroy)

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
#define PROC_V(name, since, fn) { name, since, #fn, (void *)fn },

/* Every entry point of emu_module.c and this file that cuGetProcAddress hands out (emu_driver.c searches
 * this table after its own). */
const proc_t emu_module_procs[] = {
    PROC(cuModuleLoadData) PROC(cuModuleLoadDataEx) PROC(cuModuleLoadFatBinary) PROC(cuModuleLoad)
    PROC(cuModuleUnload) PROC(cuModuleGetFunction) PROC(cuModuleGetFunctionCount) PROC(cuModuleEnumerateFunctions)
    PROC_V("cuModuleGetGlobal", 0, cuModuleGetGlobal_v2) PROC(cuModuleGetLoadingMode)
    PROC(cuLibraryLoadData) PROC(cuLibraryLoadFromFile) PROC(cuLibraryUnload) PROC(cuLibraryGetKernel)
    PROC(cuLibraryGetKernelCount) PROC(cuLibraryEnumerateKernels) PROC(cuLibraryGetModule) PROC(cuLibraryGetGlobal)
    PROC(cuLibraryGetManaged) PROC(cuKernelGetFunction) PROC(cuKernelGetLibrary) PROC(cuKernelGetName)
    PROC(cuKernelGetParamInfo) PROC(cuKernelGetAttribute) PROC(cuKernelSetAttribute) PROC(cuKernelSetCacheConfig)
    PROC(cuFuncGetAttribute) PROC(cuFuncSetAttribute) PROC(cuFuncSetCacheConfig) PROC(cuFuncSetSharedMemConfig)
    PROC(cuFuncGetName) PROC(cuFuncGetParamInfo) PROC(cuFuncGetModule) PROC(cuFuncIsLoaded) PROC(cuFuncLoad)
    PROC_V("cuLinkCreate", 0, cuLinkCreate_v2) PROC_V("cuLinkAddData", 0, cuLinkAddData_v2)
    PROC_V("cuLinkAddFile", 0, cuLinkAddFile_v2) PROC(cuLinkComplete) PROC(cuLinkDestroy)
    PROC(cuOccupancyMaxActiveBlocksPerMultiprocessor) PROC(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)
    PROC(cuOccupancyMaxPotentialBlockSize) PROC(cuOccupancyMaxPotentialBlockSizeWithFlags)
    PROC(cuOccupancyAvailableDynamicSMemPerBlock) PROC(cuOccupancyMaxPotentialClusterSize)
    PROC(cuOccupancyMaxActiveClusters)
    PROC(cuLaunchKernel) PROC(cuLaunchKernelEx) PROC(cuLaunchCooperativeKernel)
    PROC_V("cuGraphAddKernelNode", 0, cuGraphAddKernelNode) PROC_V("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2)
    PROC_V("cuGraphKernelNodeGetParams", 0, cuGraphKernelNodeGetParams)
    PROC_V("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2)
    PROC_V("cuGraphKernelNodeSetParams", 0, cuGraphKernelNodeSetParams)
    PROC_V("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2)
    PROC_V("cuGraphExecKernelNodeSetParams", 0, cuGraphExecKernelNodeSetParams)
    PROC_V("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2)
};
const size_t emu_module_nprocs = sizeof emu_module_procs / sizeof *emu_module_procs;

#define PTSZ(fn) { #fn, (void *)fn##_ptsz },
const variant_t emu_module_ptsz[] = { PTSZ(cuLaunchKernel) PTSZ(cuLaunchKernelEx) PTSZ(cuLaunchCooperativeKernel) };
const size_t emu_module_nptsz = sizeof emu_module_ptsz / sizeof *emu_module_ptsz;
