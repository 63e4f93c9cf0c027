/* The driver's modules, libraries, functions, kernels and linker in the libcuda.so.1 stand-in (issue 32).
 *
 * An image (PTX text, accel's linked image, a fatbin or its wrapper: ptx/ptx_image.h) is decoded to PTX
 * texts, which the PTX engine builds into a program for the device current at load (emu_launch.h): a
 * module (CUmodule) has one function (CUfunction) per .entry, made at load; a library (CUlibrary) is a
 * module plus one kernel (CUkernel) per function.  Handles are the objects' addresses, registered by kind
 * (emu_obj_*), so a stale or foreign one is CUDA_ERROR_INVALID_HANDLE, never dereferenced.
 *
 * Documented choices:
 *  - A library is built once, for the runtime's current device at load (its variables live there); its
 *    kernels launch on any device's stream (device memory is host memory).
 *  - A SASS-only image (an ELF cubin, or a fatbin without PTX for the device) is CUDA_ERROR_NO_BINARY_FOR_GPU,
 *    and once per process a line on stderr names its kernels and says that the emulator executes PTX only.
 *    Other load failures (a PTX syntax error, an instruction the engine lacks: CUDA_ERROR_NOT_SUPPORTED with
 *    the opcode) go to the caller's CU_JIT_ERROR_LOG_BUFFER when it gave one, else to stderr.
 *  - The linker (cuLinkCreate / AddData / AddFile / Complete) accumulates PTX inputs (text, or the PTX of a
 *    fatbin or a linked image); cuLinkComplete builds them for the current device, to report link errors
 *    as the driver does, and returns accel's linked image (PTX_CONTRACT.md), which cuModuleLoadData and
 *    cuLibraryLoadData accept.  Libraries (.a) and NVVM IR inputs are CUDA_ERROR_NOT_SUPPORTED.
 *  - Function attributes: the kernel's declared resources (ptx_kernel_info: registers derived from its
 *    declarations, shared / local / const bytes, .maxntid / .reqntid), PTX version from .version, binary
 *    version the device's compute capability (what the JIT targets). */
#include <stdio.h>

#include "emu_module.h"
#include "ptx/ptx_image.h"

int cudaGetDevice(int *);

/* --------------------------------------------------------------------- JIT options */

enum { CU_JIT_INFO_LOG_BUFFER = 3, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4, CU_JIT_ERROR_LOG_BUFFER = 5,
       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };

/* Where a load or link reports: the caller's error and info log buffers (CU_JIT_*_LOG_BUFFER options). */
typedef struct { char *err; size_t errsize; void **errsize_slot; char *info; size_t infosize; void **infosize_slot; } jitlog_t;

static CUresult jit_options(unsigned n, const int *opts, void **vals, jitlog_t *log)
{
    memset(log, 0, sizeof *log);
    if (n && (!opts || !vals)) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++)
        switch (opts[i]) {
        case CU_JIT_ERROR_LOG_BUFFER: log->err = vals[i]; break;
        case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: log->errsize = (size_t)(uintptr_t)vals[i]; log->errsize_slot = &vals[i]; break;
        case CU_JIT_INFO_LOG_BUFFER: log->info = vals[i]; break;
        case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: log->infosize = (size_t)(uintptr_t)vals[i]; log->infosize_slot = &vals[i]; break;
        default: if (opts[i] < 0 || opts[i] > 64) return CUDA_ERROR_INVALID_VALUE; break;  /* others: no effect */
        }
    return CUDA_SUCCESS;
}

/* Writes the outcome: the message into the error log (its size slot gets the bytes written, NUL included),
 * an empty info log; without an error log a failure's message goes to stderr. */
static void jit_report(jitlog_t *log, const char *call, CUresult r, const char *msg)
{
    if (log->info && log->infosize) log->info[0] = 0;
    if (log->infosize_slot) *log->infosize_slot = (void *)(uintptr_t)0;
    if (log->err && log->errsize) {
        snprintf(log->err, log->errsize, "%s", r ? msg : "");
        if (log->errsize_slot) *log->errsize_slot = (void *)(uintptr_t)(strlen(log->err) + (r ? 1 : 0));
    } else if (r && r != CUDA_ERROR_INVALID_VALUE && r != CUDA_ERROR_OUT_OF_MEMORY && msg[0] && !emu_is_sass_message(msg)) {
        fprintf(stderr, "accel emu: %s: %s\n", call, msg);
    }
}

/* ------------------------------------------------------------------------ modules */

static atomic_int g_sass_noticed;

void emu_notice_sass(const char *kernels)
{
    if (atomic_exchange(&g_sass_noticed, 1)) return;
    fprintf(stderr, "accel emu: kernel %s is SASS only (a cubin for a real GPU, no PTX): accel's emulator executes "
            "PTX only (CUDA_ERROR_NO_BINARY_FOR_GPU)\n", kernels && kernels[0] ? kernels : "(unnamed)");
}

/* A load's message that the SASS notice stands for (printed once per process, not per load). */
int emu_is_sass_message(const char *msg)
{
    return strstr(msg, "accel's emulator executes PTX only") != NULL;
}

/* The current device (the driver's current context, else the runtime's current device); -1: none. */
static int cur_device(int need_ctx)
{
    CUcontext c = current_ctx();
    if (c) return ctx_device(c);
    if (need_ctx) return -1;
    int d = 0;
    return RT(cudaGetDevice(&d)) ? -1 : d;
}

/* The device a load builds for: the current one (CUDA_ERROR_INVALID_CONTEXT: none), not failed (its sticky
 * error). */
static CUresult load_device(int need_ctx, int *dev)
{
    *dev = cur_device(need_ctx);
    return *dev < 0 ? CUDA_ERROR_INVALID_CONTEXT : emu_sticky(*dev);
}

static void mod_free(mod_t *m)
{
    if (!m) return;
    if (m->prog) emu_prog_release(m->prog);
    free(m->funcs);
    free(m);
}

CUresult emu_module_load(const void *image, size_t size, int dev, const char *kernel, mod_t **out, char *err,
                         size_t errlen)
{
    emu_devlimits_t d;
    ptx_image im;
    emu_device_limits(dev, &d);
    int r = ptx_image_decode(image, size, d.cc, &im, err, errlen);
    if (r == PTX_IMAGE_E_NO_BINARY && im.kind != PTX_IMAGE_KIND_PTX && im.sass_kernels)
        emu_notice_sass(kernel ? kernel : im.sass_kernels);
    if (r) {
        ptx_image_release(&im);
        return r;
    }
    mod_t *m = calloc(1, sizeof *m);
    if (!m) { ptx_image_release(&im); return CUDA_ERROR_OUT_OF_MEMORY; }
    r = emu_prog_build((const char *const *)im.text, im.len, im.n, dev, &m->prog, err, errlen);
    ptx_image_release(&im);
    if (r) { free(m); return r; }
    int n = ptx_module_kernel_count(m->prog->m);
    if (n > 0 && !(m->funcs = calloc((size_t)n, sizeof *m->funcs))) { mod_free(m); return CUDA_ERROR_OUT_OF_MEMORY; }
    m->nfuncs = n;
    for (int i = 0; i < n; i++) {
        func_t *f = &m->funcs[i];
        f->mod = m;
        f->k = ptx_module_kernel_at(m->prog->m, i);
        ptx_kernel_get_info(f->k, &f->info);
        f->max_dyn_smem = d.smem_per_block > (int)f->info.static_smem ? d.smem_per_block - (int)f->info.static_smem : 0;
        f->carveout = -1;
    }
    for (int i = 0; i < n; i++)
        if (emu_obj_put(&m->funcs[i], OBJ_FUNCTION)) {
            for (int j = 0; j < i; j++) emu_obj_del(&m->funcs[j]);
            mod_free(m);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    if (emu_obj_put(m, OBJ_MODULE)) {
        emu_module_unload(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = m;
    return CUDA_SUCCESS;
}

void emu_module_unload(mod_t *m)
{
    emu_obj_del(m);
    for (int i = 0; i < m->nfuncs; i++) emu_obj_del(&m->funcs[i]);
    mod_free(m);
}

CUresult emu_module_function(mod_t *m, const char *name, func_t **out)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i].info.name, name)) {
            *out = &m->funcs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

/* The checks every loading entry point makes, then the load with its report. */
static CUresult module_load(const char *call, mod_t **out, const void *image, size_t size, jitlog_t *log)
{
    char err[1024] = "";
    int dev;
    if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = load_device(1, &dev);
    if (r) return r;
    r = emu_module_load(image, size, dev, NULL, out, err, sizeof err);
    jit_report(log, call, r, err);
    return r;
}

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    jitlog_t log = { 0 };
    DRV_ENTER_CREATE(cuModuleLoadData);
    return module_load("cuModuleLoadData", (mod_t **)m, image, 0, &log);
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, int *opts, void **vals)
{
    jitlog_t log;
    DRV_ENTER_CREATE(cuModuleLoadDataEx);
    CUresult r = jit_options(n, opts, vals, &log);
    return r ? r : module_load("cuModuleLoadDataEx", (mod_t **)m, image, 0, &log);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *m, const void *fatbin)
{
    jitlog_t log = { 0 };
    DRV_ENTER_CREATE(cuModuleLoadFatBinary);
    return module_load("cuModuleLoadFatBinary", (mod_t **)m, fatbin, 0, &log);
}

/* A whole file into a malloc'd buffer with a NUL after it: CUDA_ERROR_FILE_NOT_FOUND (301) when it cannot be
 * read. */
static CUresult read_file(const char *path, char **out, size_t *size)
{
    if (!path) return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(path, "rb");
    if (!f) return 301;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 65536) {
            char *nb = realloc(buf, cap = cap ? cap * 2 : 65536 + 1);
            if (!nb) { free(buf); fclose(f); return CUDA_ERROR_OUT_OF_MEMORY; }
            buf = nb;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (!k) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); return 301; }
    buf[n] = 0;
    *out = buf;
    *size = n;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoad(CUmodule *m, const char *path)
{
    jitlog_t log = { 0 };
    char *buf;
    size_t n;
    DRV_ENTER_CREATE(cuModuleLoad);
    if (!m) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = read_file(path, &buf, &n);
    if (r) return r;
    r = module_load("cuModuleLoad", (mod_t **)m, buf, n + 1, &log);
    free(buf);
    return r;
}

static mod_t *get_mod(CUmodule h) { return emu_obj_is(h, OBJ_MODULE) ? h : NULL; }
static func_t *get_func(CUfunction h) { return emu_obj_is(h, OBJ_FUNCTION) ? h : NULL; }
static lib_t *get_lib(CUlibrary h) { return emu_obj_is(h, OBJ_LIBRARY) ? h : NULL; }
static kern_t *get_kern(CUkernel h) { return emu_obj_is(h, OBJ_KERNEL) ? h : NULL; }

EXPORT CUresult cuModuleUnload(CUmodule h)
{
    DRV_ENTER(cuModuleUnload);
    mod_t *m = get_mod(h);
    if (!m || m->lib) return CUDA_ERROR_INVALID_HANDLE;     /* a library's module goes with the library */
    emu_module_unload(m);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule h, const char *name)
{
    DRV_ENTER(cuModuleGetFunction);
    if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(mod_t, m, get_mod, h);
    return emu_module_function(m, name, (func_t **)out);
}

EXPORT CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule h)
{
    DRV_ENTER(cuModuleGetFunctionCount);
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(mod_t, m, get_mod, h);
    *count = (unsigned)m->nfuncs;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *out, unsigned int n, CUmodule h)
{
    DRV_ENTER(cuModuleEnumerateFunctions);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(mod_t, m, get_mod, h);
    for (unsigned i = 0; i < n && i < (unsigned)m->nfuncs; i++) out[i] = &m->funcs[i];
    return CUDA_SUCCESS;
}

static CUresult get_global(mod_t *m, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
    uint64_t addr = 0;
    size_t size = 0;
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    if (ptx_module_get_global(m->prog->m, name, &addr, &size)) return CUDA_ERROR_NOT_FOUND;
    if (dptr) *dptr = addr;
    if (bytes) *bytes = size;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule h, const char *name)
{
    DRV_ENTER(cuModuleGetGlobal_v2);
    GET_HANDLE(mod_t, m, get_mod, h);
    return get_global(m, name, dptr, bytes);
}

/* CU_MODULE_EAGER_LOADING (1): modules are built whole at load. */
EXPORT CUresult cuModuleGetLoadingMode(int *mode)
{
    DRV_ENTER(cuModuleGetLoadingMode);
    if (!mode) return CUDA_ERROR_INVALID_VALUE;
    *mode = 1;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ libraries */

static void lib_free(lib_t *l)
{
    if (l->mod) {
        for (int i = 0; i < l->mod->nfuncs; i++) emu_obj_del(&l->kerns[i]);
        emu_module_unload(l->mod);
    }
    emu_obj_del(l);
    free(l->kerns);
    free(l);
}

static CUresult library_load(const char *call, CUlibrary *out, const void *code, size_t size, unsigned njit,
                             int *jopts, void **jvals, unsigned nlib, int *lopts, void **lvals)
{
    jitlog_t log;
    char err[1024] = "";
    if (!out || !code) return CUDA_ERROR_INVALID_VALUE;
    if (nlib && (!lopts || !lvals)) return CUDA_ERROR_INVALID_VALUE;
    int dev;
    CUresult r = jit_options(njit, jopts, jvals, &log);
    if (!r) r = load_device(0, &dev);
    if (r) return r;
    lib_t *l = calloc(1, sizeof *l);
    if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
    r = emu_module_load(code, size, dev, NULL, &l->mod, err, sizeof err);
    jit_report(&log, call, r, err);
    if (r) { free(l); return r; }
    l->mod->lib = l;
    if (l->mod->nfuncs && !(l->kerns = calloc((size_t)l->mod->nfuncs, sizeof *l->kerns))) r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; !r && i < l->mod->nfuncs; i++) {
        l->kerns[i] = (kern_t){ l, &l->mod->funcs[i] };
        if (emu_obj_put(&l->kerns[i], OBJ_KERNEL)) r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!r && emu_obj_put(l, OBJ_LIBRARY)) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r) {
        if (!l->kerns) { emu_module_unload(l->mod); l->mod = NULL; }
        lib_free(l);
        return r;
    }
    *out = l;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *out, const void *code, int *jopts, void **jvals, unsigned int njit,
                                  int *lopts, void **lvals, unsigned int nlib)
{
    DRV_ENTER_CREATE(cuLibraryLoadData);
    return library_load("cuLibraryLoadData", out, code, 0, njit, jopts, jvals, nlib, lopts, lvals);
}

EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *out, const char *path, int *jopts, void **jvals, unsigned int njit,
                                      int *lopts, void **lvals, unsigned int nlib)
{
    char *buf;
    size_t n;
    DRV_ENTER_CREATE(cuLibraryLoadFromFile);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = read_file(path, &buf, &n);
    if (r) return r;
    r = library_load("cuLibraryLoadFromFile", out, buf, n + 1, njit, jopts, jvals, nlib, lopts, lvals);
    free(buf);
    return r;
}

EXPORT CUresult cuLibraryUnload(CUlibrary h)
{
    DRV_ENTER(cuLibraryUnload);
    GET_HANDLE(lib_t, l, get_lib, h);
    lib_free(l);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *out, CUlibrary h, const char *name)
{
    DRV_ENTER(cuLibraryGetKernel);
    if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(lib_t, l, get_lib, h);
    func_t *f;
    CUresult r = emu_module_function(l->mod, name, &f);
    if (!r) *out = &l->kerns[f - l->mod->funcs];
    return r;
}

EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary h)
{
    DRV_ENTER(cuLibraryGetKernelCount);
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(lib_t, l, get_lib, h);
    *count = (unsigned)l->mod->nfuncs;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *out, unsigned int n, CUlibrary h)
{
    DRV_ENTER(cuLibraryEnumerateKernels);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(lib_t, l, get_lib, h);
    for (unsigned i = 0; i < n && i < (unsigned)l->mod->nfuncs; i++) out[i] = &l->kerns[i];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetModule(CUmodule *out, CUlibrary h)
{
    DRV_ENTER(cuLibraryGetModule);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(lib_t, l, get_lib, h);
    *out = l->mod;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary h, const char *name)
{
    DRV_ENTER(cuLibraryGetGlobal);
    GET_HANDLE(lib_t, l, get_lib, h);
    return get_global(l->mod, name, dptr, bytes);
}

/* Managed variables (.attribute(.managed)) are module variables like the others: device memory is host
 * memory. */
EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary h, const char *name)
{
    DRV_ENTER(cuLibraryGetManaged);
    GET_HANDLE(lib_t, l, get_lib, h);
    return get_global(l->mod, name, dptr, bytes);
}

EXPORT CUresult cuKernelGetFunction(CUfunction *out, CUkernel h)
{
    DRV_ENTER(cuKernelGetFunction);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(kern_t, k, get_kern, h);
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    *out = k->f;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetLibrary(CUlibrary *out, CUkernel h)
{
    DRV_ENTER(cuKernelGetLibrary);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(kern_t, k, get_kern, h);
    *out = k->lib;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel h)
{
    DRV_ENTER(cuKernelGetName);
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(kern_t, k, get_kern, h);
    *name = k->f->info.name;
    return CUDA_SUCCESS;
}

static CUresult param_info(const func_t *f, size_t index, size_t *offset, size_t *size)
{
    if (!offset && !size) return CUDA_ERROR_INVALID_VALUE;
    if (index >= (size_t)f->info.nparams) return CUDA_ERROR_INVALID_VALUE;
    if (offset) *offset = f->info.param_offset[index];
    if (size) *size = f->info.param_size[index];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetParamInfo(CUkernel h, size_t index, size_t *offset, size_t *size)
{
    DRV_ENTER(cuKernelGetParamInfo);
    GET_HANDLE(kern_t, k, get_kern, h);
    return param_info(k->f, index, offset, size);
}

static CUresult kernel_dev(CUdevice dev)
{
    return dev < 0 || dev >= accelEmuDeviceCount() ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetAttribute(int *value, int attr, CUkernel h, CUdevice dev)
{
    DRV_ENTER(cuKernelGetAttribute);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(kern_t, k, get_kern, h);
    CUresult r = kernel_dev(dev);
    return r ? r : emu_func_get_attr(k->f, attr, value);
}

EXPORT CUresult cuKernelSetAttribute(int attr, int value, CUkernel h, CUdevice dev)
{
    DRV_ENTER(cuKernelSetAttribute);
    GET_HANDLE(kern_t, k, get_kern, h);
    CUresult r = kernel_dev(dev);
    return r ? r : emu_func_set_attr(k->f, attr, value);
}

static CUresult set_cache_config(func_t *f, int config)
{
    if (config < 0 || config > 3) return CUDA_ERROR_INVALID_VALUE;    /* CU_FUNC_CACHE_PREFER_NONE .. EQUAL */
    f->cache_config = config;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelSetCacheConfig(CUkernel h, int config, CUdevice dev)
{
    DRV_ENTER(cuKernelSetCacheConfig);
    GET_HANDLE(kern_t, k, get_kern, h);
    CUresult r = kernel_dev(dev);
    return r ? r : set_cache_config(k->f, config);
}

/* ------------------------------------------------------------------------ functions */

enum { ATTR_MAX_THREADS = 0, ATTR_SHARED = 1, ATTR_CONST = 2, ATTR_LOCAL = 3, ATTR_REGS = 4, ATTR_PTX_VERSION = 5,
       ATTR_BINARY_VERSION = 6, ATTR_CACHE_MODE_CA = 7, ATTR_MAX_DYN_SHARED = 8, ATTR_CARVEOUT = 9,
       ATTR_CLUSTER_MUST_BE_SET = 10, ATTR_CLUSTER_W = 11, ATTR_CLUSTER_H = 12, ATTR_CLUSTER_D = 13,
       ATTR_NON_PORTABLE = 14, ATTR_SCHED_POLICY = 15 };

/* Threads per block the kernel can have: its declared limit, and whole warps of its registers in a block's
 * 64K. */
static int max_threads(const func_t *f)
{
    int t = f->info.max_threads_per_block > 0 ? f->info.max_threads_per_block : 1024;
    if (t > 1024) t = 1024;
    int per_warp = ((f->info.num_regs > 0 ? f->info.num_regs : 1) * 32 + 255) / 256 * 256;
    int by_regs = 65536 / per_warp * 32;
    return by_regs < t ? by_regs : t;
}

CUresult emu_func_get_attr(const func_t *f, int attr, int *v)
{
    emu_devlimits_t d;
    switch (attr) {
    case ATTR_MAX_THREADS: *v = max_threads(f); break;
    case ATTR_SHARED: *v = (int)f->info.static_smem; break;
    case ATTR_CONST: *v = (int)f->info.const_bytes; break;
    case ATTR_LOCAL: *v = (int)f->info.local_bytes; break;
    case ATTR_REGS: *v = f->info.num_regs; break;
    case ATTR_PTX_VERSION: *v = f->info.ptx_version; break;
    case ATTR_BINARY_VERSION: emu_device_limits(f->mod->prog->device, &d); *v = d.cc; break;
    case ATTR_CACHE_MODE_CA: *v = 0; break;
    case ATTR_MAX_DYN_SHARED: *v = f->max_dyn_smem; break;
    case ATTR_CARVEOUT: *v = f->carveout; break;
    case ATTR_CLUSTER_MUST_BE_SET: *v = 0; break;
    case ATTR_CLUSTER_W: case ATTR_CLUSTER_H: case ATTR_CLUSTER_D: *v = f->cluster[attr - ATTR_CLUSTER_W]; break;
    case ATTR_NON_PORTABLE: *v = f->non_portable; break;
    case ATTR_SCHED_POLICY: *v = f->sched_policy; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult emu_func_set_attr(func_t *f, int attr, int value)
{
    emu_devlimits_t d;
    emu_device_limits(f->mod->prog->device, &d);
    switch (attr) {
    case ATTR_MAX_DYN_SHARED:
        if (value < 0 || (size_t)value + f->info.static_smem > (size_t)d.smem_optin) return CUDA_ERROR_INVALID_VALUE;
        f->max_dyn_smem = value;
        return CUDA_SUCCESS;
    case ATTR_CARVEOUT:
        if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
        f->carveout = value;
        return CUDA_SUCCESS;
    case ATTR_CLUSTER_W: case ATTR_CLUSTER_H: case ATTR_CLUSTER_D:
        if (value < 0 || value > 16) return CUDA_ERROR_INVALID_VALUE;
        f->cluster[attr - ATTR_CLUSTER_W] = value;
        return CUDA_SUCCESS;
    case ATTR_NON_PORTABLE:
        if (value != 0 && value != 1) return CUDA_ERROR_INVALID_VALUE;
        f->non_portable = value;
        return CUDA_SUCCESS;
    case ATTR_SCHED_POLICY:
        if (value < 0 || value > 2) return CUDA_ERROR_INVALID_VALUE;
        f->sched_policy = value;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;   /* read-only or unknown */
    }
}

EXPORT CUresult cuFuncGetAttribute(int *value, int attr, CUfunction h)
{
    DRV_ENTER(cuFuncGetAttribute);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, get_func, h);
    return emu_func_get_attr(f, attr, value);
}

EXPORT CUresult cuFuncSetAttribute(CUfunction h, int attr, int value)
{
    DRV_ENTER(cuFuncSetAttribute);
    GET_HANDLE(func_t, f, get_func, h);
    return emu_func_set_attr(f, attr, value);
}

EXPORT CUresult cuFuncSetCacheConfig(CUfunction h, int config)
{
    DRV_ENTER(cuFuncSetCacheConfig);
    GET_HANDLE(func_t, f, get_func, h);
    return set_cache_config(f, config);
}

/* Shared memory bank size: the emulator keeps what is set (4 or 8 bytes, or the default). */
EXPORT CUresult cuFuncSetSharedMemConfig(CUfunction h, int config)
{
    DRV_ENTER(cuFuncSetSharedMemConfig);
    if (!get_func(h)) return CUDA_ERROR_INVALID_HANDLE;
    return config < 0 || config > 2 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction h)
{
    DRV_ENTER(cuFuncGetName);
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, get_func, h);
    *name = f->info.name;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction h, size_t index, size_t *offset, size_t *size)
{
    DRV_ENTER(cuFuncGetParamInfo);
    GET_HANDLE(func_t, f, get_func, h);
    return param_info(f, index, offset, size);
}

EXPORT CUresult cuFuncGetModule(CUmodule *out, CUfunction h)
{
    DRV_ENTER(cuFuncGetModule);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    GET_HANDLE(func_t, f, get_func, h);
    *out = f->mod;
    return CUDA_SUCCESS;
}

/* CU_FUNCTION_LOADING_STATE_LOADED (1): modules are loaded whole. */
EXPORT CUresult cuFuncIsLoaded(int *state, CUfunction h)
{
    DRV_ENTER(cuFuncIsLoaded);
    if (!state) return CUDA_ERROR_INVALID_VALUE;
    if (!get_func(h)) return CUDA_ERROR_INVALID_HANDLE;
    *state = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncLoad(CUfunction h)
{
    DRV_ENTER(cuFuncLoad);
    return get_func(h) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ------------------------------------------------------------------------ linker */

enum { CU_JIT_INPUT_CUBIN = 0, CU_JIT_INPUT_PTX = 1, CU_JIT_INPUT_FATBINARY = 2, CU_JIT_INPUT_OBJECT = 3,
       CU_JIT_INPUT_LIBRARY = 4, CU_JIT_INPUT_NVVM = 5 };

typedef struct {
    int n;
    char **texts;
    size_t *lens;
    void *image;
    size_t image_size;
    jitlog_t log;
} link_t;

static link_t *get_link(void *h) { return emu_obj_is(h, OBJ_LINK) ? h : NULL; }

EXPORT CUresult cuLinkCreate_v2(unsigned int n, int *opts, void **vals, void **out)
{
    DRV_ENTER_CREATE(cuLinkCreate_v2);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (!current_ctx()) return CUDA_ERROR_INVALID_CONTEXT;
    link_t *l = calloc(1, sizeof *l);
    if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = jit_options(n, opts, vals, &l->log);
    if (!r && emu_obj_put(l, OBJ_LINK)) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r) { free(l); return r; }
    *out = l;
    return CUDA_SUCCESS;
}

static CUresult link_add(link_t *l, int type, const void *data, size_t size, const char *name)
{
    char err[1024] = "";
    CUresult r;
    ptx_image im;
    memset(&im, 0, sizeof im);
    if (type == CU_JIT_INPUT_LIBRARY || type == CU_JIT_INPUT_NVVM) {
        snprintf(err, sizeof err, "%s: %s inputs are not supported by accel's emulator (it links PTX)",
                 name ? name : "input", type == CU_JIT_INPUT_LIBRARY ? "library (.a)" : "NVVM IR");
        r = CUDA_ERROR_NOT_SUPPORTED;
    } else if (type < 0 || type > CU_JIT_INPUT_NVVM) {
        return CUDA_ERROR_INVALID_VALUE;
    } else {
        int dev = cur_device(1);
        emu_devlimits_t d;
        emu_device_limits(dev < 0 ? 0 : dev, &d);
        /* PTX is text of `size` bytes; the other kinds are sniffed (a fatbin, a linked image, an ELF) */
        r = ptx_image_decode(data, size, d.cc, &im, err, sizeof err);
        if (r == PTX_IMAGE_E_NO_BINARY && im.sass_kernels) emu_notice_sass(im.sass_kernels);
    }
    for (int i = 0; !r && i < im.n; i++) {
        char **t = realloc(l->texts, (size_t)(l->n + 1) * sizeof *t);
        size_t *ln = t ? realloc(l->lens, (size_t)(l->n + 1) * sizeof *ln) : NULL;
        if (t) l->texts = t;
        if (ln) l->lens = ln;
        if (!t || !ln) { r = CUDA_ERROR_OUT_OF_MEMORY; break; }
        l->texts[l->n] = im.text[i];        /* the image's copy moves into the link state */
        l->lens[l->n++] = im.len[i];
        im.text[i] = NULL;
    }
    ptx_image_release(&im);
    jit_report(&l->log, "cuLinkAddData", r, err);
    return r;
}

EXPORT CUresult cuLinkAddData_v2(void *h, int type, void *data, size_t size, const char *name, unsigned int n,
                                 int *opts, void **vals)
{
    jitlog_t ignored;
    DRV_ENTER(cuLinkAddData_v2);
    GET_HANDLE(link_t, l, get_link, h);
    if (!data || !size) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = jit_options(n, opts, vals, &ignored);
    return r ? r : link_add(l, type, data, size, name);
}

EXPORT CUresult cuLinkAddFile_v2(void *h, int type, const char *path, unsigned int n, int *opts, void **vals)
{
    jitlog_t ignored;
    char *buf;
    size_t size;
    DRV_ENTER(cuLinkAddFile_v2);
    GET_HANDLE(link_t, l, get_link, h);
    CUresult r = jit_options(n, opts, vals, &ignored);
    if (!r) r = read_file(path, &buf, &size);
    if (r) return r;
    r = link_add(l, type, buf, size + 1, path);
    free(buf);
    return r;
}

EXPORT CUresult cuLinkComplete(void *h, void **image, size_t *size)
{
    char err[1024] = "";
    DRV_ENTER(cuLinkComplete);
    GET_HANDLE(link_t, l, get_link, h);
    if (!image || !size) return CUDA_ERROR_INVALID_VALUE;
    int dev = cur_device(1);
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = l->n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (!l->n) snprintf(err, sizeof err, "nothing to link");
    emu_prog_t *p = NULL;
    if (!r) r = emu_prog_build((const char *const *)l->texts, l->lens, l->n, dev, &p, err, sizeof err);
    if (p) emu_prog_release(p);
    if (!r) {
        free(l->image);
        if (!(l->image = ptx_image_link((const char *const *)l->texts, l->lens, l->n, &l->image_size)))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    jit_report(&l->log, "cuLinkComplete", r, err);
    if (r) return r;
    *image = l->image;
    *size = l->image_size;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLinkDestroy(void *h)
{
    DRV_ENTER(cuLinkDestroy);
    GET_HANDLE(link_t, l, get_link, h);
    emu_obj_del(l);
    for (int i = 0; i < l->n; i++) free(l->texts[i]);
    free(l->texts);
    free(l->lens);
    free(l->image);
    free(l);
    return CUDA_SUCCESS;
}
