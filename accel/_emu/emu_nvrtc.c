/* The libnvrtc.so.13 shim (`python -m accel emu`, issue 32): NVRTC itself, except that a compile for a
 * real architecture hands back accel's linked image (emu_ptxpack.h) holding the PTX where NVRTC hands
 * back a SASS cubin, so that a program which asks NVRTC for a cubin (cuda.core's compile("cubin"),
 * cuda.bindings' examples with NVRTC >= 13.1) runs on the emulator, which executes PTX only.
 *
 * Every entry point forwards to the real NVRTC, loaded privately (RTLD_LOCAL, by its path) at the first
 * call from ACCEL_EMU_NVRTC, which accel.emu sets to the library the process would otherwise load (the
 * real one is linked -Bsymbolic, so it never calls back into this shim).  Preloaded, this library is
 * the NVRTC every user finds: cuda.bindings looks each function up with dlsym(RTLD_DEFAULT) first,
 * cuda.pathfinder takes a library already loaded under the soname libnvrtc.so.13 before one on disk,
 * and torch's versioned imports bind to the first definition in the global scope.
 *
 * The one change: nvrtcCompileProgram with -arch=sm_XX (also --gpu-architecture, with '=' or as two
 * options, suffixes a / f) compiles for compute_XX instead, and for that program nvrtcGetCUBINSize /
 * nvrtcGetCUBIN answer with the image of its PTX; nvrtcGetPTX answers as for compute_XX.  A compile that
 * asks for LTO-IR (-dlto, --dlink-time-opt) is left as it is: the emulator cannot execute LTO-IR.
 * The real NVRTC's libnvrtc-builtins sibling is loaded first, as cuda.pathfinder does for NVRTC wheels
 * whose NVRTC does not find it itself. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_ptxpack.h"

#define EXPORT __attribute__((visibility("default")))

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_OUT_OF_MEMORY = 1, NVRTC_ERROR_INVALID_INPUT = 3,
       NVRTC_ERROR_INVALID_PROGRAM = 4, NVRTC_ERROR_INTERNAL_ERROR = 11 };

/* The real NVRTC's functions, by name, in one table: X(return type, name, parameters, arguments). */
#define NVRTC_FUNCTIONS(X) \
    X(nvrtcResult, nvrtcVersion, (int *major, int *minor), (major, minor)) \
    X(nvrtcResult, nvrtcGetNumSupportedArchs, (int *n), (n)) \
    X(nvrtcResult, nvrtcGetSupportedArchs, (int *archs), (archs)) \
    X(nvrtcResult, nvrtcCreateProgram, (nvrtcProgram *prog, const char *src, const char *name, int numHeaders, \
      const char *const *headers, const char *const *includeNames), \
      (prog, src, name, numHeaders, headers, includeNames)) \
    X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram *prog), (prog)) \
    X(nvrtcResult, nvrtcCompileProgram, (nvrtcProgram prog, int numOptions, const char *const *options), \
      (prog, numOptions, options)) \
    X(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram prog, size_t *size), (prog, size)) \
    X(nvrtcResult, nvrtcGetPTX, (nvrtcProgram prog, char *ptx), (prog, ptx)) \
    X(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t *size), (prog, size)) \
    X(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char *cubin), (prog, cubin)) \
    X(nvrtcResult, nvrtcGetLTOIRSize, (nvrtcProgram prog, size_t *size), (prog, size)) \
    X(nvrtcResult, nvrtcGetLTOIR, (nvrtcProgram prog, char *ltoir), (prog, ltoir)) \
    X(nvrtcResult, nvrtcGetOptiXIRSize, (nvrtcProgram prog, size_t *size), (prog, size)) \
    X(nvrtcResult, nvrtcGetOptiXIR, (nvrtcProgram prog, char *optixir), (prog, optixir)) \
    X(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *size), (prog, size)) \
    X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log), (prog, log)) \
    X(nvrtcResult, nvrtcAddNameExpression, (nvrtcProgram prog, const char *name), (prog, name)) \
    X(nvrtcResult, nvrtcGetLoweredName, (nvrtcProgram prog, const char *name, const char **lowered), \
      (prog, name, lowered)) \
    X(nvrtcResult, nvrtcGetPCHHeapSize, (size_t *size), (size)) \
    X(nvrtcResult, nvrtcSetPCHHeapSize, (size_t size), (size)) \
    X(nvrtcResult, nvrtcGetPCHCreateStatus, (nvrtcProgram prog), (prog)) \
    X(nvrtcResult, nvrtcGetPCHHeapSizeRequired, (nvrtcProgram prog, size_t *size), (prog, size)) \
    X(nvrtcResult, nvrtcSetFlowCallback, (nvrtcProgram prog, int (*callback)(void *, void *), void *payload), \
      (prog, callback, payload))

#define DECLARE(ret, name, params, args) static ret (*real_##name) params;
NVRTC_FUNCTIONS(DECLARE)
static const char *(*real_nvrtcGetErrorString)(nvrtcResult);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[600];

static void load_real(void)
{
    const char *path = getenv("ACCEL_EMU_NVRTC");
    if (!path || !*path) {
        snprintf(load_error, sizeof load_error, "accel's NVRTC shim: ACCEL_EMU_NVRTC does not name the real "
                 "libnvrtc.so.13 (run the program with `python -m accel emu`, which sets it)");
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "accel's NVRTC shim: cannot load ACCEL_EMU_NVRTC=%s: %s", path,
                 dlerror());
        return;
    }
    int ok = 1;
#define RESOLVE(ret, name, params, args) \
    *(void **)&real_##name = dlsym(h, #name); \
    if (!real_##name && strcmp(#name, "nvrtcSetFlowCallback") && strcmp(#name, "nvrtcGetOptiXIRSize") \
        && strcmp(#name, "nvrtcGetOptiXIR")) ok = 0;
    NVRTC_FUNCTIONS(RESOLVE)
    *(void **)&real_nvrtcGetErrorString = dlsym(h, "nvrtcGetErrorString");
    if (!ok || !real_nvrtcGetErrorString) {
        snprintf(load_error, sizeof load_error, "accel's NVRTC shim: %s is not NVRTC (functions missing)", path);
        return;
    }
    /* libnvrtc-builtins.so.MAJOR.MINOR beside it, loaded before NVRTC looks for it by name */
    int major, minor;
    const char *slash = strrchr(path, '/');
    if (slash && real_nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
        char sibling[4096];
        snprintf(sibling, sizeof sibling, "%.*s/libnvrtc-builtins.so.%d.%d", (int)(slash - path), path, major, minor);
        dlopen(sibling, RTLD_NOW | RTLD_LOCAL);   /* absent: NVRTC's own lookup may still find it */
    }
    loaded = 1;
}

static int ready(void)
{
    pthread_once(&once, load_real);
    if (!loaded) {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) fprintf(stderr, "%s\n", load_error);
    }
    return loaded;
}

/* Programs compiled for compute_XX in place of sm_XX, and their image once asked for. */
typedef struct cubin_prog {
    nvrtcProgram prog;
    unsigned char *image;
    size_t size;
    struct cubin_prog *next;
} cubin_prog;

static pthread_mutex_t progs_lock = PTHREAD_MUTEX_INITIALIZER;
static cubin_prog *progs;

static cubin_prog **find(nvrtcProgram prog)     /* under progs_lock */
{
    cubin_prog **p = &progs;
    while (*p && (*p)->prog != prog) p = &(*p)->next;
    return p;
}

static void forget(nvrtcProgram prog)
{
    pthread_mutex_lock(&progs_lock);
    cubin_prog **p = find(prog), *c = *p;
    if (c) {
        *p = c->next;
        free(c->image);
        free(c);
    }
    pthread_mutex_unlock(&progs_lock);
}

/* "sm_90a" -> "compute_90a" in a new string prefixed by `prefix`; NULL when v is not sm_<digits>[a|f]. */
static char *compute_arch(const char *prefix, const char *v)
{
    if (strncmp(v, "sm_", 3) != 0) return NULL;
    const char *d = v + 3;
    size_t digits = strspn(d, "0123456789");
    if (digits < 2 || (d[digits] && !((d[digits] == 'a' || d[digits] == 'f') && !d[digits + 1]))) return NULL;
    size_t n = strlen(prefix) + strlen("compute_") + strlen(d) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%scompute_%s", prefix, d);
    return s;
}

#define DEFINE_FORWARD(ret, name, params, args) \
    EXPORT ret name params { return ready() ? real_##name args : NVRTC_ERROR_INTERNAL_ERROR; }

DEFINE_FORWARD(nvrtcResult, nvrtcVersion, (int *major, int *minor), (major, minor))
DEFINE_FORWARD(nvrtcResult, nvrtcGetNumSupportedArchs, (int *n), (n))
DEFINE_FORWARD(nvrtcResult, nvrtcGetSupportedArchs, (int *archs), (archs))
DEFINE_FORWARD(nvrtcResult, nvrtcCreateProgram, (nvrtcProgram *prog, const char *src, const char *name,
               int numHeaders, const char *const *headers, const char *const *includeNames),
               (prog, src, name, numHeaders, headers, includeNames))
DEFINE_FORWARD(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram prog, size_t *size), (prog, size))
DEFINE_FORWARD(nvrtcResult, nvrtcGetPTX, (nvrtcProgram prog, char *ptx), (prog, ptx))
DEFINE_FORWARD(nvrtcResult, nvrtcGetLTOIRSize, (nvrtcProgram prog, size_t *size), (prog, size))
DEFINE_FORWARD(nvrtcResult, nvrtcGetLTOIR, (nvrtcProgram prog, char *ltoir), (prog, ltoir))
DEFINE_FORWARD(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *size), (prog, size))
DEFINE_FORWARD(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log), (prog, log))
DEFINE_FORWARD(nvrtcResult, nvrtcAddNameExpression, (nvrtcProgram prog, const char *name), (prog, name))
DEFINE_FORWARD(nvrtcResult, nvrtcGetLoweredName, (nvrtcProgram prog, const char *name, const char **lowered),
               (prog, name, lowered))
DEFINE_FORWARD(nvrtcResult, nvrtcGetPCHHeapSize, (size_t *size), (size))
DEFINE_FORWARD(nvrtcResult, nvrtcSetPCHHeapSize, (size_t size), (size))
DEFINE_FORWARD(nvrtcResult, nvrtcGetPCHCreateStatus, (nvrtcProgram prog), (prog))
DEFINE_FORWARD(nvrtcResult, nvrtcGetPCHHeapSizeRequired, (nvrtcProgram prog, size_t *size), (prog, size))

/* Functions a given NVRTC may lack: NVRTC_ERROR_INTERNAL_ERROR from here when it does. */
#define DEFINE_OPTIONAL(ret, name, params, args) \
    EXPORT ret name params { return ready() && real_##name ? real_##name args : NVRTC_ERROR_INTERNAL_ERROR; }
DEFINE_OPTIONAL(nvrtcResult, nvrtcGetOptiXIRSize, (nvrtcProgram prog, size_t *size), (prog, size))
DEFINE_OPTIONAL(nvrtcResult, nvrtcGetOptiXIR, (nvrtcProgram prog, char *optixir), (prog, optixir))
DEFINE_OPTIONAL(nvrtcResult, nvrtcSetFlowCallback,
                (nvrtcProgram prog, int (*callback)(void *, void *), void *payload), (prog, callback, payload))

EXPORT const char *nvrtcGetErrorString(nvrtcResult result)
{
    return ready() ? real_nvrtcGetErrorString(result) : load_error;
}

EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog)
{
    if (!ready()) return NVRTC_ERROR_INTERNAL_ERROR;
    nvrtcProgram p = prog ? *prog : NULL;
    nvrtcResult rc = real_nvrtcDestroyProgram(prog);
    if (rc == NVRTC_SUCCESS && p) forget(p);
    return rc;
}

EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options)
{
    if (!ready()) return NVRTC_ERROR_INTERNAL_ERROR;
    if (numOptions <= 0 || !options || !prog) return real_nvrtcCompileProgram(prog, numOptions, options);
    for (int i = 0; i < numOptions; i++)
        if (options[i] && (!strcmp(options[i], "-dlto") || !strcmp(options[i], "--dlink-time-opt")))
            return real_nvrtcCompileProgram(prog, numOptions, options);
    const char **opts = malloc((size_t)numOptions * sizeof *opts);
    char **made = calloc((size_t)numOptions, sizeof *made);
    if (!opts || !made) {
        free(opts);
        free(made);
        return NVRTC_ERROR_OUT_OF_MEMORY;
    }
    int rewritten = 0;
    for (int i = 0; i < numOptions; i++) {
        const char *o = opts[i] = options[i];
        if (!o) continue;
        static const char *const forms[] = {"-arch=", "--gpu-architecture="};
        for (int k = 0; k < 2 && !made[i]; k++)
            if (!strncmp(o, forms[k], strlen(forms[k]))) made[i] = compute_arch(forms[k], o + strlen(forms[k]));
        if (!made[i] && i > 0 && options[i - 1]
            && (!strcmp(options[i - 1], "-arch") || !strcmp(options[i - 1], "--gpu-architecture")))
            made[i] = compute_arch("", o);
        if (made[i]) {
            opts[i] = made[i];
            rewritten = 1;
        }
    }
    forget(prog);   /* a recompile: what it was compiled for before no longer holds */
    nvrtcResult rc = real_nvrtcCompileProgram(prog, numOptions, rewritten ? opts : options);
    if (rewritten) {
        cubin_prog *c = calloc(1, sizeof *c);
        if (c) {
            c->prog = prog;
            pthread_mutex_lock(&progs_lock);
            c->next = progs;
            progs = c;
            pthread_mutex_unlock(&progs_lock);
        } else if (rc == NVRTC_SUCCESS) {
            rc = NVRTC_ERROR_OUT_OF_MEMORY;
        }
    }
    for (int i = 0; i < numOptions; i++) free(made[i]);
    free(made);
    free(opts);
    return rc;
}

/* For a program compiled for compute_XX in place of sm_XX: the size of the image of its PTX (made once)
 * and, when `out` is given, the image copied there, all under progs_lock (a concurrent destroy cannot free
 * it meanwhile).  *handled is 0 for any other program: NVRTC's own answer stands. */
static nvrtcResult cubin_answer(nvrtcProgram prog, size_t *size, char *out, int *handled)
{
    pthread_mutex_lock(&progs_lock);
    cubin_prog *c = *find(prog);
    *handled = c != NULL;
    nvrtcResult rc = NVRTC_SUCCESS;
    if (c && !c->image) {
        size_t n = 0;
        char *ptx = NULL;
        rc = real_nvrtcGetPTXSize(prog, &n);
        if (rc == NVRTC_SUCCESS && !(ptx = malloc(n ? n : 1))) rc = NVRTC_ERROR_OUT_OF_MEMORY;
        if (rc == NVRTC_SUCCESS) rc = real_nvrtcGetPTX(prog, ptx);
        if (rc == NVRTC_SUCCESS) {
            ptxpack pack = {0};
            char err[300];
            if (ptxpack_add(&pack, PK_PTX, ptx, n, "NVRTC's PTX", err, sizeof err)) {
                rc = NVRTC_ERROR_INTERNAL_ERROR;
            } else {
                c->size = ptxpack_image_size(&pack);
                c->image = malloc(c->size);
                if (c->image) ptxpack_image_write(&pack, c->image);
                else rc = NVRTC_ERROR_OUT_OF_MEMORY;
            }
            ptxpack_free(&pack);
        }
        free(ptx);
    }
    if (c && rc == NVRTC_SUCCESS) {
        if (size) *size = c->size;
        if (out) memcpy(out, c->image, c->size);
    }
    pthread_mutex_unlock(&progs_lock);
    return rc;
}

EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *size)
{
    if (!ready()) return NVRTC_ERROR_INTERNAL_ERROR;
    int handled;
    if (!size) return NVRTC_ERROR_INVALID_INPUT;
    nvrtcResult rc = cubin_answer(prog, size, NULL, &handled);
    return handled ? rc : real_nvrtcGetCUBINSize(prog, size);
}

EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin)
{
    if (!ready()) return NVRTC_ERROR_INTERNAL_ERROR;
    int handled;
    if (!cubin) return NVRTC_ERROR_INVALID_INPUT;
    nvrtcResult rc = cubin_answer(prog, NULL, cubin, &handled);
    return handled ? rc : real_nvrtcGetCUBIN(prog, cubin);
}
