/* NVML of the emulated machine, third part: performance states, clock offsets, topology, CPU and memory
 * affinity, and the persistence-mode setter (the model is described at the top of emu_nvml.c).
 *
 * The machine is one host with one NUMA node (node 0) that holds every online CPU and every GPU: two
 * distinct GPUs meet at NVML_TOPOLOGY_NODE, a GPU with itself at NVML_TOPOLOGY_INTERNAL, and every GPU's
 * CPU affinity is every online CPU.  Each board runs in P0 only (its clocks are at their maximum), with
 * no clock offsets and no dynamic P-state utilisation domains.  Changing the persistence mode needs root
 * on a real machine; here it is NVML_ERROR_NO_PERMISSION for everyone (the mode stays enabled). */
#include "emu_nvml.h"

enum { NVML_ERROR_NO_PERMISSION = 4 };
enum { PSTATE_UNKNOWN = 32, MAX_PSTATES = 16 };
enum { TOPOLOGY_INTERNAL = 0, TOPOLOGY_SINGLE = 10, TOPOLOGY_NODE = 40, TOPOLOGY_SYSTEM = 50 };
enum { AFFINITY_NODE = 0, AFFINITY_SOCKET = 1 };

typedef struct { unsigned version; int type; int pstate; int offset, min_offset, max_offset; } nvmlClockOffset_t;
typedef struct { unsigned present, percentage, inc_threshold, dec_threshold; } nvml_pstate_util_t;
typedef struct { unsigned flags; nvml_pstate_util_t utilization[8]; } nvmlGpuDynamicPstatesInfo_t;
_Static_assert(sizeof(nvmlClockOffset_t) == 24, "nvmlClockOffset_t");
_Static_assert(sizeof(nvmlGpuDynamicPstatesInfo_t) == 132, "nvmlGpuDynamicPstatesInfo_t");

/* ------------------------------------------------------- performance states */

/* `size` is in bytes: room for NVML_MAX_GPU_PERF_PSTATES (16) entries, P0 then NVML_PSTATE_UNKNOWN. */
EXPORT nvmlReturn_t nvmlDeviceGetSupportedPerformanceStates(nvml_device_t *h, int *pstates, unsigned size)
{
    if (EMU_FAULT(nvmlDeviceGetSupportedPerformanceStates)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!pstates) return NVML_ERROR_INVALID_ARGUMENT;
    if (size < MAX_PSTATES * sizeof(int)) return NVML_ERROR_INSUFFICIENT_SIZE;
    pstates[0] = 0;
    for (int i = 1; i < MAX_PSTATES; i++) pstates[i] = PSTATE_UNKNOWN;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetDynamicPstatesInfo(nvml_device_t *h, nvmlGpuDynamicPstatesInfo_t *info)
{
    if (EMU_FAULT(nvmlDeviceGetDynamicPstatesInfo)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof *info);
    return NVML_SUCCESS;
}

/* The graphics (0) and memory (2) clocks have offsets, of P0 only: all 0. */
EXPORT nvmlReturn_t nvmlDeviceGetClockOffsets(nvml_device_t *h, nvmlClockOffset_t *info)
{
    if (EMU_FAULT(nvmlDeviceGetClockOffsets)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != NVML_VERSIONED(nvmlClockOffset_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if ((info->type != 0 && info->type != 2) || info->pstate < 0 || info->pstate >= MAX_PSTATES)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (info->pstate != 0) return NVML_ERROR_NOT_FOUND;
    info->offset = info->min_offset = info->max_offset = 0;
    return NVML_SUCCESS;
}

/* --------------------------------------------------------------- topology */

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvml_device_t *h1, nvml_device_t *h2, int *level)
{
    if (EMU_FAULT(nvmlDeviceGetTopologyCommonAncestor)) return NVML_ERROR_UNKNOWN;
    ENTER();
    int d1 = device_of(h1), d2 = device_of(h2);
    if (d1 < 0 || d2 < 0 || !level) return NVML_ERROR_INVALID_ARGUMENT;
    *level = d1 == d2 ? TOPOLOGY_INTERNAL : TOPOLOGY_NODE;
    return NVML_SUCCESS;
}

/* A list of devices (every one but `except`, -1: none) into (count, out): *count 0 asks for the number;
 * a shorter array is NVML_ERROR_INSUFFICIENT_SIZE, and nothing is written. */
static nvmlReturn_t device_list(int except, unsigned *count, nvml_device_t **out)
{
    int n = emu_physical_devices();
    unsigned want = (unsigned)(n - (except >= 0));
    if (!count || (*count && !out)) return NVML_ERROR_INVALID_ARGUMENT;
    if (*count == 0) {
        *count = want;
        return NVML_SUCCESS;
    }
    if (*count < want) return NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned k = 0;
    for (int d = 0; d < n; d++)
        if (d != except) out[k++] = &g_nvml_devices[d];
    *count = want;
    return NVML_SUCCESS;
}

/* The other GPUs that meet this one at `level` or nearer: all of them from NVML_TOPOLOGY_NODE up. */
EXPORT nvmlReturn_t nvmlDeviceGetTopologyNearestGpus(nvml_device_t *h, int level, unsigned *count,
                                                     nvml_device_t **out)
{
    if (EMU_FAULT(nvmlDeviceGetTopologyNearestGpus)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (level < TOPOLOGY_INTERNAL || level > TOPOLOGY_SYSTEM || level % 10) return NVML_ERROR_INVALID_ARGUMENT;
    if (level < TOPOLOGY_NODE) {
        if (!count || (*count && !out)) return NVML_ERROR_INVALID_ARGUMENT;
        *count = 0;
        return NVML_SUCCESS;
    }
    return device_list(d, count, out);
}

static long online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* Every GPU is close to every online CPU. */
EXPORT nvmlReturn_t nvmlSystemGetTopologyGpuSet(unsigned cpu, unsigned *count, nvml_device_t **out)
{
    if (EMU_FAULT(nvmlSystemGetTopologyGpuSet)) return NVML_ERROR_UNKNOWN;
    ENTER();
    if (cpu >= (unsigned long)online_cpus()) return NVML_ERROR_INVALID_ARGUMENT;
    return device_list(-1, count, out);
}

/* ---------------------------------------------------------------- affinity */

/* A bit mask of `bits` ones in `size` words (the rest of what fits is cleared; more than fits is cut). */
static void mask(unsigned long *set, unsigned size, long bits)
{
    const long word = 8 * (long)sizeof *set;
    for (unsigned i = 0; i < size; i++) {
        long first = (long)i * word;
        set[i] = bits >= first + word ? ~0ul : bits > first ? (1ul << (bits - first)) - 1 : 0;
    }
}

static nvmlReturn_t affinity(nvml_device_t *h, unsigned size, unsigned long *set, int scope, long bits)
{
    DEVICE(h, d);
    (void)d;
    if (!size || !set || (scope != AFFINITY_NODE && scope != AFFINITY_SOCKET)) return NVML_ERROR_INVALID_ARGUMENT;
    mask(set, size, bits);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvml_device_t *h, unsigned size, unsigned long *set, int scope)
{
    if (EMU_FAULT(nvmlDeviceGetCpuAffinityWithinScope)) return NVML_ERROR_UNKNOWN;
    return affinity(h, size, set, scope, online_cpus());
}

EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvml_device_t *h, unsigned size, unsigned long *set)
{
    if (EMU_FAULT(nvmlDeviceGetCpuAffinity)) return NVML_ERROR_UNKNOWN;
    return affinity(h, size, set, AFFINITY_NODE, online_cpus());
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvml_device_t *h, unsigned size, unsigned long *set, int scope)
{
    if (EMU_FAULT(nvmlDeviceGetMemoryAffinity)) return NVML_ERROR_UNKNOWN;
    return affinity(h, size, set, scope, 1);      /* NUMA node 0 */
}

/* ------------------------------------------------------------------ setters */

EXPORT nvmlReturn_t nvmlDeviceSetPersistenceMode(nvml_device_t *h, int mode)
{
    if (EMU_FAULT(nvmlDeviceSetPersistenceMode)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    (void)d;
    if (mode != 0 && mode != 1) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NO_PERMISSION;
}
