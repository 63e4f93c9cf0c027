/* The driver's modules, functions, libraries and kernels in the stand-ins (emu_module.c), for the launch
 * entry points (emu_module_launch.c) and the runtime's registration path (emu_register.c).  Hidden. */
#ifndef ACCEL_EMU_MODULE_H
#define ACCEL_EMU_MODULE_H

#include "emu_driver.h"
#include "emu_launch.h"

#pragma GCC visibility push(hidden)

typedef void *CUmodule, *CUfunction, *CUlibrary, *CUkernel;

enum { OBJ_MODULE = 1, OBJ_FUNCTION, OBJ_LIBRARY, OBJ_KERNEL, OBJ_LINK };

enum { CUDA_ERROR_INVALID_IMAGE = 200, CUDA_ERROR_NO_BINARY_FOR_GPU = 209, CUDA_ERROR_INVALID_PTX = 218,
       CUDA_ERROR_INVALID_HANDLE = 400, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701 };

/* An entry point's handle argument h, looked up by `get` into a new variable `var`: CUDA_ERROR_INVALID_HANDLE
 * from the entry point when it is not a live object of that kind.  (A declaration, so not a do-while.) */
#define GET_HANDLE(type, var, get, h) type *var = get(h); if (!var) return CUDA_ERROR_INVALID_HANDLE

typedef struct mod mod_t;
typedef struct lib lib_t;

/* A function (CUfunction): one kernel of a module, with the attributes set on it. */
typedef struct func {
    mod_t *mod;
    const ptx_kernel *k;
    ptx_kernel_info info;
    int max_dyn_smem;               /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    int carveout;                   /* CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT (-1: default) */
    int cluster[3], non_portable, sched_policy, cache_config;
} func_t;

/* A module (CUmodule): a program built for one device, its functions. */
struct mod {
    emu_prog_t *prog;
    int nfuncs;
    func_t *funcs;
    lib_t *lib;                     /* the library it belongs to, NULL for cuModuleLoad* */
};

/* A kernel (CUkernel) of a library: its function in the library's module. */
typedef struct { lib_t *lib; func_t *f; } kern_t;

/* A library (CUlibrary): its module (built for the device current at load), its kernels. */
struct lib {
    mod_t *mod;
    kern_t *kerns;
};

/* Loads `image` (size bytes, 0: unknown) for visible device dev: a module (registered as OBJ_MODULE), or a
 * code with the message in err (CUDA_ERROR_NO_BINARY_FOR_GPU for SASS, with the once-per-process stderr
 * notice naming `kernel`, or the image's kernels when NULL). */
CUresult emu_module_load(const void *image, size_t size, int dev, const char *kernel, mod_t **out, char *err,
                         size_t errlen);
void emu_module_unload(mod_t *m);
/* The function of kernel `name` (CUDA_ERROR_NOT_FOUND). */
CUresult emu_module_function(mod_t *m, const char *name, func_t **out);
/* Once per process: the stderr notice for a SASS-only image, naming the kernel(s); a load's message that
 * the notice stands for (not printed again). */
void emu_notice_sass(const char *kernels);
int emu_is_sass_message(const char *msg);

/* CUlaunchAttribute: an id, then a 64-byte value union. */
typedef struct { int id; int pad; union { char bytes[64]; int i; unsigned dim[3]; } value; } launch_attr_t;
typedef struct {
    unsigned grid[3], block[3], smem;
    CUstream stream;
    launch_attr_t *attrs;
    unsigned nattrs;
} launch_config_t;
_Static_assert(sizeof(launch_attr_t) == 72, "CUlaunchAttribute");

/* cuLaunchKernelEx after its handle and context checks: the attributes, then the launch. */
CUresult emu_launch_ex(func_t *f, const launch_config_t *c, void **params, void **extra);
/* A function handle or, as the driver accepts in launches and queries, a library kernel (CUkernel) cast to
 * one; NULL when neither. */
func_t *emu_func_or_kernel(CUfunction h);

/* Launches f with req's configuration on `stream` (a CUstream: 0 legacy, 1 legacy, 2 per-thread): the
 * driver's checks, the parameters copied, the launch queued (or captured). */
CUresult emu_func_launch(func_t *f, emu_launch_req_t *req, CUstream stream);
/* cuFuncGetAttribute's value for f (CUDA_ERROR_INVALID_VALUE: an unknown attribute), and its setter. */
CUresult emu_func_get_attr(const func_t *f, int attr, int *value);
CUresult emu_func_set_attr(func_t *f, int attr, int value);
/* Occupancy: resident blocks per SM for f at blockSize threads with dyn bytes of dynamic shared memory. */
int emu_func_occupancy(const func_t *f, int block, size_t dyn);

#pragma GCC visibility pop

#endif
