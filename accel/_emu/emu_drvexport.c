/* cuGetExportTable in the libcuda.so.1 stand-in: NVIDIA's private tables of driver functions, asked for by the
 * CUDA runtime that is linked statically into cuda.bindings.runtime, cuBLAS, CuPy and nvcc's default builds.
 * Their contents are not documented, so the emulator has none: every table is refused with
 * CUDA_ERROR_NOT_SUPPORTED and *ppExportTable set to NULL, and with ACCEL_EMU_TRACE=1 the first request of each
 * table logs its UUID, so users see which library asked (docs/emulator_export_tables.md lists what is known).
 * cuGetProcAddress finds it through emu_drvexport_procs (chained in emu_driver.c's lookup); the driver surface
 * test counts it as a gap (accelEmuDriverUnsupported). */
#include <stdio.h>

#include "emu_driver.h"

typedef struct { unsigned char bytes[16]; } CUuuid;

#define TRACED_MAX 32
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static CUuuid g_traced[TRACED_MAX];
static atomic_int g_traced_seen[TRACED_MAX + 1];     /* the last: every table past TRACED_MAX */
static int g_ntraced;

/* The trace slot of table id: its own while there is room. */
static atomic_int *slot(const CUuuid *id)
{
    pthread_mutex_lock(&g_lock);
    int i = 0;
    while (i < g_ntraced && memcmp(&g_traced[i], id, sizeof *id)) i++;
    if (i == g_ntraced && g_ntraced < TRACED_MAX) g_traced[g_ntraced++] = *id;
    pthread_mutex_unlock(&g_lock);
    return &g_traced_seen[i < TRACED_MAX ? i : TRACED_MAX];
}

EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    DRV_INIT();
    if (!table || !id) return CUDA_ERROR_INVALID_VALUE;
    *table = NULL;
    if (emu_trace_unsupported) {
        char name[96];
        int k = snprintf(name, sizeof name, "cuGetExportTable (table ");
        for (int i = 0; i < 16; i++) k += snprintf(name + k, sizeof name - (size_t)k, "%02x", id->bytes[i]);
        snprintf(name + k, sizeof name - (size_t)k, ", NVIDIA's private interface)");
        emu_trace_unsupported(name, slot(id));
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}

#define PROC(fn) { #fn, 0, #fn, (void *)fn },
const proc_t emu_drvexport_procs[] = { PROC(cuGetExportTable) };
const size_t emu_drvexport_nprocs = sizeof emu_drvexport_procs / sizeof *emu_drvexport_procs;
