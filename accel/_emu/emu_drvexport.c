/* cuGetExportTable in the libcuda.so.1 stand-in: NVIDIA's private tables of driver functions, asked for by the
 * CUDA runtime that is linked statically into cuda.bindings.runtime, cuBLAS, CuPy and nvcc's default builds.
 * Their layouts are not documented, so the emulator has none: every table is refused with
 * CUDA_ERROR_NOT_SUPPORTED and *ppExportTable set to NULL, and the first request of each table says so in one
 * stderr line that names it: its UUID and what public reports call it (docs/emulator_export_tables.md, with
 * the sources), so a user sees why the static runtime then fails.  cuGetProcAddress finds it through
 * emu_drvexport_procs (chained in emu_driver.c's lookup); the driver surface test counts it as a gap
 * (accelEmuDriverUnsupported). */
#include <stdio.h>

#include "emu_driver.h"

typedef struct { unsigned char bytes[16]; } CUuuid;

/* The tables public reports name (UUID bytes in memory order, as the callers pass them). */
static const struct { const char *id, *name; } g_known[] = {
    { "6bd5fb6c5bf4e74a8987d93912fd9df9", "CUDART_INTERFACE, the static runtime's start-up table" },
    { "f8cff95121468b4eb9e2fb469e7c0dd9", "the CUDA 12.8+/13 runtime's start-up probe" },
    { "a094798c2e742e7493f20800200c0a66", "TOOLS_RUNTIME_CALLBACK_HOOKS" },
    { "42d85a8123f6cb478298f6e78a3aecdc", "TOOLS_TLS" },
    { "c693336e1121df11a8c368f355d89593", "CONTEXT_LOCAL_STORAGE" },
    { "263e88607cd2614392f6bbd5006dfa7e", "CONTEXT_CHECKS" },
    { "d4082055bde6704b8d34ba123c66e1f2", "INTEGRITY_CHECK" },
};

#define TRACED_MAX 32
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static CUuuid g_traced[TRACED_MAX];
static int g_ntraced;

/* Whether this is the first request of table id (every table past TRACED_MAX counts as seen). */
static int first_request(const CUuuid *id)
{
    pthread_mutex_lock(&g_lock);
    int i = 0;
    while (i < g_ntraced && memcmp(&g_traced[i], id, sizeof *id)) i++;
    int first = i == g_ntraced && g_ntraced < TRACED_MAX;
    if (first) g_traced[g_ntraced++] = *id;
    pthread_mutex_unlock(&g_lock);
    return first;
}

EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    DRV_INIT();
    if (!table || !id) return CUDA_ERROR_INVALID_VALUE;
    *table = NULL;
    if (first_request(id)) {
        char hex[33], uuid[37];
        for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", id->bytes[i]);
        snprintf(uuid, sizeof uuid, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
        const char *name = "a table no public report names";
        for (size_t i = 0; i < sizeof g_known / sizeof *g_known; i++)
            if (!strcmp(g_known[i].id, hex)) name = g_known[i].name;
        fprintf(stderr, "accel emu: cuGetExportTable refuses table %s (%s): NVIDIA's private interface, not emulated "
                "(returns CUDA_ERROR_NOT_SUPPORTED; docs/emulator_export_tables.md)\n", uuid, name);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
const proc_t emu_drvexport_procs[] = { PROC(cuGetExportTable) };
const size_t emu_drvexport_nprocs = sizeof emu_drvexport_procs / sizeof *emu_drvexport_procs;
