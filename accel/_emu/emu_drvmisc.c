/* Smaller driver entry points of the libcuda.so.1 stand-in (issue 33): GPU coredump settings and process
 * checkpointing.  cuGetProcAddress finds them through emu_drvmisc_procs (chained in emu_driver.c's lookup).
 *
 * Coredump settings (cuCoredump{Get,Set}Attribute{,Global}) are kept as the driver documents them: booleans
 * (ENABLE_ON_EXCEPTION, TRIGGER_HOST, LIGHTWEIGHT, ENABLE_USER_TRIGGER: one byte), paths (FILE, PIPE: up to 1023
 * characters and a NUL) and GENERATION_FLAGS (an int of CU_COREDUMP_SKIP_* bits).  A NULL value asks for the
 * size; a context's setting (the current context's; none current: CUDA_ERROR_INVALID_CONTEXT) falls back to the
 * global one until set; ENABLE_USER_TRIGGER and PIPE are global only (CUDA_ERROR_NOT_PERMITTED per context), and
 * the pipe cannot change once user triggers are on.  The emulator runs no kernels, so no coredump is ever
 * written; the CUDA_*COREDUMP* environment variables are not read.
 *
 * Checkpointing (cuCheckpointProcess*) answers as a driver without checkpoint support does: after the argument
 * checks, CUDA_ERROR_NOT_SUPPORTED (each function's documented code); the emulated devices live in host memory,
 * so a CPU-side checkpoint of the process already holds them. */
#include <stdio.h>
#include <unistd.h>

#include "emu_driver.h"

enum { CD_ENABLE_ON_EXCEPTION = 1, CD_TRIGGER_HOST, CD_LIGHTWEIGHT, CD_ENABLE_USER_TRIGGER, CD_FILE, CD_PIPE,
       CD_GENERATION_FLAGS, CD_MAX };
enum { CUDA_ERROR_NOT_PERMITTED = 800 };
#define CD_PATH 1024
#define CD_FLAGS_KNOWN 0x3fu    /* CU_COREDUMP_SKIP_*: nonrelocated ELF, global, shared, local, abort, constbank */

typedef struct {
    unsigned char set[CD_MAX];      /* which settings this scope has */
    unsigned char flag[CD_MAX];     /* the booleans */
    int gen_flags;
    char file[CD_PATH], pipe[CD_PATH];
} cd_scope_t;

typedef struct { CUcontext ctx; cd_scope_t s; } cd_ctx_t;

static pthread_mutex_t g_cd_lock = PTHREAD_MUTEX_INITIALIZER;
static cd_scope_t g_cd_global;
static cd_ctx_t *g_cd_ctx;
static size_t g_cd_nctx;

static size_t cd_size(int attr)
{
    return attr == CD_FILE || attr == CD_PIPE ? CD_PATH : attr == CD_GENERATION_FLAGS ? sizeof(int) : 1;
}

/* The documented defaults: TRIGGER_HOST on, the rest off, core.cuda.HOSTNAME.PID / corepipe.cuda.HOSTNAME.PID. */
static void cd_default(int attr, void *out)
{
    char host[256] = "localhost";
    switch (attr) {
    case CD_TRIGGER_HOST: *(unsigned char *)out = 1; break;
    case CD_FILE:
    case CD_PIPE:
        gethostname(host, sizeof host - 1);
        snprintf(out, CD_PATH, "%s.cuda.%s.%d", attr == CD_FILE ? "core" : "corepipe", host, (int)getpid());
        break;
    case CD_GENERATION_FLAGS: *(int *)out = 0; break;
    default: *(unsigned char *)out = 0; break;
    }
}

static void cd_read(const cd_scope_t *s, int attr, void *out)
{
    if (attr == CD_FILE) strcpy(out, s->file);
    else if (attr == CD_PIPE) strcpy(out, s->pipe);
    else if (attr == CD_GENERATION_FLAGS) memcpy(out, &s->gen_flags, sizeof s->gen_flags);
    else *(unsigned char *)out = s->flag[attr];
}

/* The scope of the current context (made on first use); NULL when out of memory.  Lock held. */
static cd_scope_t *cd_ctx_scope(CUcontext c)
{
    for (size_t i = 0; i < g_cd_nctx; i++)
        if (g_cd_ctx[i].ctx == c) return &g_cd_ctx[i].s;
    cd_ctx_t *n = realloc(g_cd_ctx, (g_cd_nctx + 1) * sizeof *n);
    if (!n) return NULL;
    g_cd_ctx = n;
    memset(&n[g_cd_nctx], 0, sizeof *n);
    n[g_cd_nctx].ctx = c;
    return &n[g_cd_nctx++].s;
}

static CUresult cd_get(int attr, void *value, size_t *size, int global)
{
    DRV_INIT();
    if (!size || attr < CD_ENABLE_ON_EXCEPTION || attr >= CD_MAX) return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = global ? NULL : current_ctx();
    if (!global && !c) return CUDA_ERROR_INVALID_CONTEXT;
    if (!value) {
        *size = cd_size(attr);
        return CUDA_SUCCESS;
    }
    char buf[CD_PATH];
    pthread_mutex_lock(&g_cd_lock);
    const cd_scope_t *s = &g_cd_global;
    if (!global)
        for (size_t i = 0; i < g_cd_nctx; i++)
            if (g_cd_ctx[i].ctx == c && g_cd_ctx[i].s.set[attr]) s = &g_cd_ctx[i].s;
    if (s->set[attr]) cd_read(s, attr, buf);
    else cd_default(attr, buf);
    pthread_mutex_unlock(&g_cd_lock);
    size_t need = attr == CD_FILE || attr == CD_PIPE ? strlen(buf) + 1 : cd_size(attr);
    if (*size < need) return CUDA_ERROR_INVALID_VALUE;
    memcpy(value, buf, need);
    return CUDA_SUCCESS;
}

static CUresult cd_set(int attr, void *value, size_t *size, int global)
{
    DRV_INIT();
    if (!size || attr < CD_ENABLE_ON_EXCEPTION || attr >= CD_MAX) return CUDA_ERROR_INVALID_VALUE;
    CUcontext c = global ? NULL : current_ctx();
    if (!global && !c) return CUDA_ERROR_INVALID_CONTEXT;
    if (!global && (attr == CD_ENABLE_USER_TRIGGER || attr == CD_PIPE)) return CUDA_ERROR_NOT_PERMITTED;
    if (!value) {
        *size = cd_size(attr);
        return CUDA_SUCCESS;
    }
    size_t len = 0;
    int flags = 0;
    if (attr == CD_FILE || attr == CD_PIPE) {
        len = strnlen(value, *size < CD_PATH ? *size : CD_PATH);
        if (len == (*size < CD_PATH ? *size : CD_PATH) || !len) return CUDA_ERROR_INVALID_VALUE;  /* no NUL, or empty */
    } else if (attr == CD_GENERATION_FLAGS) {
        if (*size < sizeof flags) return CUDA_ERROR_INVALID_VALUE;
        memcpy(&flags, value, sizeof flags);
        if ((unsigned)flags & ~CD_FLAGS_KNOWN) return CUDA_ERROR_INVALID_VALUE;
    } else if (*size < 1) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&g_cd_lock);
    cd_scope_t *s = global ? &g_cd_global : cd_ctx_scope(c);
    if (!s) r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (attr == CD_PIPE && g_cd_global.flag[CD_ENABLE_USER_TRIGGER]) r = CUDA_ERROR_NOT_PERMITTED;
    else {
        if (attr == CD_FILE) memcpy(s->file, value, len + 1);
        else if (attr == CD_PIPE) memcpy(s->pipe, value, len + 1);
        else if (attr == CD_GENERATION_FLAGS) s->gen_flags = flags;
        else s->flag[attr] = *(const unsigned char *)value != 0;
        s->set[attr] = 1;
    }
    pthread_mutex_unlock(&g_cd_lock);
    return r;
}

EXPORT CUresult cuCoredumpGetAttribute(int attr, void *value, size_t *size) { return cd_get(attr, value, size, 0); }
EXPORT CUresult cuCoredumpGetAttributeGlobal(int attr, void *value, size_t *size) { return cd_get(attr, value, size, 1); }
EXPORT CUresult cuCoredumpSetAttribute(int attr, void *value, size_t *size) { return cd_set(attr, value, size, 0); }
EXPORT CUresult cuCoredumpSetAttributeGlobal(int attr, void *value, size_t *size) { return cd_set(attr, value, size, 1); }

/* ------------------------------------------------------------ checkpointing */

static CUresult no_checkpoint(int pid) { return pid <= 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED; }

EXPORT CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
    DRV_INIT();
    return !tid ? CUDA_ERROR_INVALID_VALUE : no_checkpoint(pid);
}

EXPORT CUresult cuCheckpointProcessGetState(int pid, int *state)
{
    DRV_INIT();
    return !state ? CUDA_ERROR_INVALID_VALUE : no_checkpoint(pid);
}

/* The optional arguments' reserved fields must be zero. */
static int reserved_zero(const void *args, size_t from, size_t to)
{
    for (size_t i = from; args && i < to; i++)
        if (((const unsigned char *)args)[i]) return 0;
    return 1;
}

EXPORT CUresult cuCheckpointProcessLock(int pid, void *args)
{
    DRV_INIT();
    return !reserved_zero(args, 4, 64) ? CUDA_ERROR_INVALID_VALUE : no_checkpoint(pid);   /* after timeoutMs */
}

EXPORT CUresult cuCheckpointProcessCheckpoint(int pid, void *args)
{
    DRV_INIT();
    return !reserved_zero(args, 0, 64) ? CUDA_ERROR_INVALID_VALUE : no_checkpoint(pid);
}

EXPORT CUresult cuCheckpointProcessRestore(int pid, void *args)
{
    DRV_INIT();
    return !reserved_zero(args, 12, 64) ? CUDA_ERROR_INVALID_VALUE : no_checkpoint(pid);  /* after the GPU pairs */
}

EXPORT CUresult cuCheckpointProcessUnlock(int pid, void *args)
{
    DRV_INIT();
    return !reserved_zero(args, 0, 64) ? CUDA_ERROR_INVALID_VALUE : no_checkpoint(pid);
}

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
const proc_t emu_drvmisc_procs[] = {
    PROC(cuCoredumpGetAttribute) PROC(cuCoredumpGetAttributeGlobal) PROC(cuCoredumpSetAttribute)
    PROC(cuCoredumpSetAttributeGlobal) PROC(cuCheckpointProcessGetRestoreThreadId) PROC(cuCheckpointProcessGetState)
    PROC(cuCheckpointProcessLock) PROC(cuCheckpointProcessCheckpoint) PROC(cuCheckpointProcessRestore)
    PROC(cuCheckpointProcessUnlock)
};
const size_t emu_drvmisc_nprocs = sizeof emu_drvmisc_procs / sizeof *emu_drvmisc_procs;
