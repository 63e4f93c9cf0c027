/* NVML of the emulated machine: what nvidia-ml-py (pynvml), cuda.core's `system` (cuda.bindings.nvml),
 * torch's NVML paths and accel's own NVML call.  Exported by the bundled emulator and by the
 * libcudart.so.13 stand-in; the libnvidia-ml.so.1 stand-in (emu_libnvml.c) depends on the latter, so
 * NVML sees the same devices and allocations as the CUDA runtime and driver in the process.
 *
 * Model:
 *  - NVML sees the machine's physical devices (ACCEL_EMU_DEVICES), in physical order, whatever
 *    CUDA_VISIBLE_DEVICES says, as the real NVML does.  A handle is the address of the device's slot in
 *    a static table; anything else is NVML_ERROR_INVALID_ARGUMENT.
 *  - Every call but nvmlInit*, nvmlErrorString returns NVML_ERROR_UNINITIALIZED until nvmlInit and
 *    after the matching nvmlShutdown (init/shutdown are counted); then handles are checked
 *    (INVALID_ARGUMENT), then output pointers (INVALID_ARGUMENT), then buffer sizes
 *    (INSUFFICIENT_SIZE), then versioned structs' version (ARGUMENT_VERSION_MISMATCH): no call writes
 *    anything unless it succeeds.
 *  - Description (name, PCI ids, clocks, memory size, power limit, architecture, MIG capability) comes
 *    from the device's profile (emu_profiles.c), the same row the CUDA attributes come from.
 *  - Memory: total is the device's memory; used is what this process allocated on it through the
 *    runtime or the driver (cudaMalloc, pools' reservations), free the rest: v1 and v2 agree with
 *    cudaMemGetInfo exactly (reserved is 0).  Other processes' allocations are not seen: each process
 *    has its own emulated machine.
 *  - Running compute processes: this process, with its used memory, on each device it made a context
 *    on or allocated on.  No graphics or MPS processes.
 *  - Fixed plausible values: utilisation 0 % (no kernel ever runs), 34 C, power draw 12 % of the
 *    board's power limit, clocks at their maximum (P0), PCIe at the board's generation x16, ECC on,
 *    compute mode default, MIG disabled where the board has MIG and NOT_SUPPORTED where it does not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_internal.h"

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25, NVML_ERROR_UNKNOWN = 999
};

#define DRIVER_VERSION "580.65.06"      /* the Linux driver of CUDA 13.0 (EMU_CUDA_VERSION) */
#define NVML_VERSION "13." DRIVER_VERSION
#define DRIVER_BRANCH "r580_00"
#define NVML_VERSIONED(type, v) ((unsigned)(sizeof(type) | ((v) << 24)))

typedef char nvml_device_t;             /* a handle points into g_devices, at the physical index */
static nvml_device_t g_devices[EMU_MAX_DEVICES];
static int g_refs;                      /* nvmlInit count minus nvmlShutdown count */

/* ------------------------------------------------------------- structs */

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned version; int sensorType; int temperature; } nvmlTemperature_t;
typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned version, domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
    char busId[32];
} nvmlPciInfoExt_t;
typedef struct { unsigned version; char branch[80]; } nvmlSystemDriverBranchInfo_t;
typedef struct { unsigned pid; unsigned long long usedGpuMemory; } nvmlProcessInfo_v1_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(sizeof(nvmlPciInfoExt_t) == 64, "nvmlPciInfoExt_t");
_Static_assert(sizeof(nvmlTemperature_t) == 12, "nvmlTemperature_t");
_Static_assert(sizeof(nvmlSystemDriverBranchInfo_t) == 84, "nvmlSystemDriverBranchInfo_t");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t");

/* ------------------------------------------------------------- helpers */

static int ready(void) { return __atomic_load_n(&g_refs, __ATOMIC_ACQUIRE) > 0; }

/* The physical index of handle h, -1 when h is not a device handle. */
static int device_of(const nvml_device_t *h)
{
    uintptr_t i = (uintptr_t)h - (uintptr_t)g_devices;
    int n = emu_physical_devices();
    return n > 0 && i < (uintptr_t)n ? (int)i : -1;
}

#define ENTER() do { if (!ready()) return NVML_ERROR_UNINITIALIZED; } while (0)
#define DEVICE(h, d) \
    ENTER(); \
    int d = device_of(h); \
    if (d < 0) return NVML_ERROR_INVALID_ARGUMENT

/* The visible ordinal of physical device d in this process, -1 when CUDA_VISIBLE_DEVICES hides it. */
static int visible_of(int d)
{
    for (int v = 0; v < g_ndev; v++)
        if (g_phys[v] == d) return v;
    return -1;
}

static unsigned long long used_of(int d)
{
    int v = visible_of(d);
    return v < 0 ? 0 : emu_mem_used(v);
}

static nvmlReturn_t put_string(char *out, unsigned length, const char *s)
{
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

static void bus_id(int d, char *out, size_t len, int domain_digits)
{
    snprintf(out, len, "%0*X:%02X:00.0", domain_digits, 0, emu_pci_bus(d));
}

/* ---------------------------------------------------------- init, system */

static nvmlReturn_t init(void)
{
    if (emu_physical_devices() < 0) return NVML_ERROR_UNKNOWN;   /* a malformed ACCEL_EMU_* */
    __atomic_add_fetch(&g_refs, 1, __ATOMIC_ACQ_REL);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) { return init(); }
EXPORT nvmlReturn_t nvmlInit(void) { return init(); }
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags) { (void)flags; return init(); }

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    int refs = __atomic_load_n(&g_refs, __ATOMIC_ACQUIRE);
    while (refs > 0 && !__atomic_compare_exchange_n(&g_refs, &refs, refs - 1, 0, __ATOMIC_ACQ_REL,
                                                    __ATOMIC_ACQUIRE)) {
    }
    return refs > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

/* nvmlErrorString's texts, as NVML's headers document each code. */
static const struct { int code; const char *text; } errors[] = {
    {0, "Success"}, {1, "Uninitialized"}, {2, "Invalid Argument"}, {3, "Not Supported"},
    {4, "Insufficient Permissions"}, {5, "Already Initialized"}, {6, "Not Found"}, {7, "Insufficient Size"},
    {8, "Insufficient External Power"}, {9, "Driver Not Loaded"}, {10, "Timeout"},
    {11, "Interrupt Request Issue"}, {12, "NVML Shared Library Not Found"}, {13, "Function Not Found"},
    {14, "Corrupted infoROM"}, {15, "GPU is lost"}, {16, "GPU requires restart"},
    {17, "The operating system has blocked the request."}, {18, "RM has detected an NVML/RM version mismatch."},
    {19, "In use by another client"}, {20, "Insufficient Memory"}, {21, "No data"},
    {22, "The requested vgpu operation is not available on target device, because ECC is enabled"},
    {23, "Ran out of critical resources, other than memory"}, {24, "The requested frequency is not supported"},
    {25, "The provided version is invalid/unsupported"}, {26, "The requested functionality has been deprecated"},
    {27, "The system is not ready for the request"}, {28, "The GPU was not found"},
    {29, "The resource is in an invalid state"}, {30, "The reset type is not supported"},
    {999, "Unknown Error"},
};

EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].code == result) return errors[i].text;
    return "Unknown Error";
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length)
{
    ENTER();
    return put_string(version, length, DRIVER_VERSION);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned length)
{
    ENTER();
    return put_string(version, length, NVML_VERSION);
}

static nvmlReturn_t cuda_version(int *v)
{
    if (!v) return NVML_ERROR_INVALID_ARGUMENT;
    *v = EMU_CUDA_VERSION;
    return NVML_SUCCESS;
}

/* The CUDA version of the driver: works without nvmlInit in the real NVML too. */
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { return cuda_version(v); }
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return cuda_version(v); }

EXPORT nvmlReturn_t nvmlSystemGetDriverBranch(nvmlSystemDriverBranchInfo_t *info, unsigned length)
{
    ENTER();
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != NVML_VERSIONED(nvmlSystemDriverBranchInfo_t, 1))
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (length < sizeof DRIVER_BRANCH) return NVML_ERROR_INSUFFICIENT_SIZE;
    memset(info->branch, 0, sizeof info->branch);
    memcpy(info->branch, DRIVER_BRANCH, sizeof DRIVER_BRANCH);
    return NVML_SUCCESS;
}

/* The process's command (argv[0] from /proc); NOT_FOUND when there is no such process. */
EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned pid, char *name, unsigned length)
{
    ENTER();
    if (!name || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%u/cmdline", pid);
    FILE *f = fopen(path, "rb");
    if (!f) return NVML_ERROR_NOT_FOUND;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    size_t len = strlen(buf);
    if (len >= length) len = length - 1;    /* NVML truncates a long name */
    memcpy(name, buf, len);
    name[len] = 0;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------- handles */

static nvmlReturn_t count(unsigned *n)
{
    ENTER();
    if (!n) return NVML_ERROR_INVALID_ARGUMENT;
    *n = (unsigned)emu_physical_devices();
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) { return count(n); }
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *n) { return count(n); }

static nvmlReturn_t by_index(unsigned index, nvml_device_t **device)
{
    ENTER();
    if (!device || index >= (unsigned)emu_physical_devices()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &g_devices[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvml_device_t **device)
{
    return by_index(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvml_device_t **device)
{
    return by_index(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvml_device_t **device)
{
    ENTER();
    if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
    for (int d = 0; d < emu_physical_devices(); d++) {
        char text[EMU_UUID_TEXT];
        emu_uuid_text(d, text);
        if (strcmp(text, uuid) == 0) {
            *device = &g_devices[d];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* "[domain:]bus:device[.function]", hexadecimal: 1 and the parts when it reads so. */
static int parse_bus_id(const char *s, unsigned long v[4])
{
    unsigned long part[4] = {0, 0, 0, 0};
    int nparts = 0, function = 0;
    const char *p = s;
    for (;;) {
        char *end;
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))) return 0;
        unsigned long x = strtoul(p, &end, 16);
        if (end - p > 8 || nparts == 4) return 0;
        part[nparts++] = x;
        p = end;
        if (*p == ':' && !function && nparts < 3) { p++; continue; }
        if (*p == '.' && !function && nparts >= 2) { p++; function = 1; continue; }
        break;
    }
    if (*p || nparts < 2 + function) return 0;
    int colons = nparts - function;     /* 2: bus:device, 3: domain:bus:device */
    v[0] = colons == 3 ? part[0] : 0;
    v[1] = part[colons - 2];
    v[2] = part[colons - 1];
    v[3] = function ? part[nparts - 1] : 0;
    return 1;
}

static nvmlReturn_t by_bus_id(const char *id, nvml_device_t **device)
{
    ENTER();
    unsigned long v[4];
    if (!id || !device || !parse_bus_id(id, v)) return NVML_ERROR_INVALID_ARGUMENT;
    for (int d = 0; d < emu_physical_devices(); d++)
        if (v[0] == 0 && v[1] == (unsigned long)emu_pci_bus(d) && v[2] == 0 && v[3] == 0) {
            *device = &g_devices[d];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvml_device_t **device)
{
    return by_bus_id(id, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *id, nvml_device_t **device)
{
    return by_bus_id(id, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvml_device_t *h, unsigned *index)
{
    DEVICE(h, d);
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned)d;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------ identity */

EXPORT nvmlReturn_t nvmlDeviceGetName(nvml_device_t *h, char *name, unsigned length)
{
    DEVICE(h, d);
    char text[256];
    emu_device_name(d, text, sizeof text);
    return put_string(name, length, text);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvml_device_t *h, char *uuid, unsigned length)
{
    DEVICE(h, d);
    char text[EMU_UUID_TEXT];
    emu_uuid_text(d, text);
    return put_string(uuid, length, text);
}

EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvml_device_t *h, char *serial, unsigned length)
{
    DEVICE(h, d);
    char text[32];
    snprintf(text, sizeof text, "%013llu", 1650000000000ull + (unsigned long long)d);
    return put_string(serial, length, text);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvml_device_t *h, unsigned *minor)
{
    DEVICE(h, d);
    if (!minor) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = (unsigned)d;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvml_device_t *h, int *brand)
{
    DEVICE(h, d);
    if (!brand) return NVML_ERROR_INVALID_ARGUMENT;
    *brand = emu_profile(d)->nvml_brand;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvml_device_t *h, unsigned *arch)
{
    DEVICE(h, d);
    if (!arch) return NVML_ERROR_INVALID_ARGUMENT;
    *arch = (unsigned)emu_profile(d)->nvml_arch;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvml_device_t *h, int *major, int *minor)
{
    DEVICE(h, d);
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = emu_profile(d)->major;
    *minor = emu_profile(d)->minor;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvml_device_t *h, unsigned *cores)
{
    DEVICE(h, d);
    if (!cores) return NVML_ERROR_INVALID_ARGUMENT;
    *cores = (unsigned)(emu_profile(d)->sms * emu_profile(d)->cores_per_sm);
    return NVML_SUCCESS;
}

/* -------------------------------------------------------------- memory */

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvml_device_t *h, nvmlMemory_t *memory)
{
    DEVICE(h, d);
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long used = used_of(d);
    memory->total = g_phys_mem[d];
    memory->used = used;
    memory->free = g_phys_mem[d] - used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvml_device_t *h, nvmlMemory_v2_t *memory)
{
    DEVICE(h, d);
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != NVML_VERSIONED(nvmlMemory_v2_t, 2)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned long long used = used_of(d);
    memory->total = g_phys_mem[d];
    memory->reserved = 0;
    memory->used = used;
    memory->free = g_phys_mem[d] - used;
    return NVML_SUCCESS;
}

/* This process, on a device it made a context on or allocated on; `v1`: the 16-byte nvmlProcessInfo_v1_t. */
static nvmlReturn_t processes(nvml_device_t *h, unsigned *count, void *infos, int v1, int any)
{
    DEVICE(h, d);
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    int v = visible_of(d);
    unsigned long long used = used_of(d);
    unsigned n = any && v >= 0 && (atomic_load(&g_ctx[v]) || used) ? 1 : 0;
    if (*count < n || (n && !infos)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = n;
    if (n && v1) {
        nvmlProcessInfo_v1_t *p = infos;
        p->pid = (unsigned)getpid();
        p->usedGpuMemory = used;
    } else if (n) {
        nvmlProcessInfo_t *p = infos;
        p->pid = (unsigned)getpid();
        p->usedGpuMemory = used;
        p->gpuInstanceId = p->computeInstanceId = 0xFFFFFFFFu;     /* not a MIG device */
    }
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvml_device_t *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 0, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvml_device_t *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 0, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvml_device_t *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 1, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvml_device_t *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 0, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvml_device_t *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 0, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvml_device_t *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 1, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvml_device_t *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 0, 0);
}

/* ------------------------------------------------ utilisation, sensors */

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvml_device_t *h, nvmlUtilization_t *u)
{
    DEVICE(h, d);
    (void)d;
    if (!u) return NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = 0;
    u->memory = 0;
    return NVML_SUCCESS;
}

#define TEMPERATURE_C 34

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvml_device_t *h, int sensor, unsigned *temp)
{
    DEVICE(h, d);
    (void)d;
    if (sensor != 0 || !temp) return NVML_ERROR_INVALID_ARGUMENT;    /* NVML_TEMPERATURE_GPU only */
    *temp = TEMPERATURE_C;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvml_device_t *h, nvmlTemperature_t *t)
{
    DEVICE(h, d);
    (void)d;
    if (!t) return NVML_ERROR_INVALID_ARGUMENT;
    if (t->version != NVML_VERSIONED(nvmlTemperature_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (t->sensorType != 0) return NVML_ERROR_INVALID_ARGUMENT;
    t->temperature = TEMPERATURE_C;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvml_device_t *h, unsigned *mw)
{
    DEVICE(h, d);
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)emu_profile(d)->power_limit_w * 120;    /* 12 % of the limit, in mW */
    return NVML_SUCCESS;
}

static nvmlReturn_t power_limit(nvml_device_t *h, unsigned *mw)
{
    DEVICE(h, d);
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = (unsigned)emu_profile(d)->power_limit_w * 1000;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvml_device_t *h, unsigned *mw) { return power_limit(h, mw); }
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvml_device_t *h, unsigned *mw) { return power_limit(h, mw); }
EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvml_device_t *h, unsigned *mw) { return power_limit(h, mw); }

EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvml_device_t *h, unsigned *speed)
{
    DEVICE(h, d);
    (void)d;
    if (!speed) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NOT_SUPPORTED;    /* passively cooled boards */
}

EXPORT nvmlReturn_t nvmlDeviceGetNumFans(nvml_device_t *h, unsigned *n)
{
    DEVICE(h, d);
    (void)d;
    if (!n) return NVML_ERROR_INVALID_ARGUMENT;
    *n = 0;
    return NVML_SUCCESS;
}

/* --------------------------------------------------------------- clocks */

/* NVML_CLOCK_GRAPHICS, _SM, _MEM, _VIDEO in MHz; -1 for another type.  Video runs at 8/9 of graphics. */
static int clock_mhz(int d, int type)
{
    const emu_profile_t *p = emu_profile(d);
    switch (type) {
    case 0: case 1: return p->clock_khz / 1000;
    case 2: return p->mem_clock_khz / 1000;
    case 3: return p->clock_khz / 1000 * 8 / 9;
    default: return -1;
    }
}

static nvmlReturn_t clock_of(nvml_device_t *h, int type, unsigned *mhz)
{
    DEVICE(h, d);
    int c = clock_mhz(d, type);
    if (c < 0 || !mhz) return NVML_ERROR_INVALID_ARGUMENT;
    *mhz = (unsigned)c;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvml_device_t *h, int type, unsigned *mhz) { return clock_of(h, type, mhz); }
EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvml_device_t *h, int type, unsigned *mhz) { return clock_of(h, type, mhz); }

EXPORT nvmlReturn_t nvmlDeviceGetClock(nvml_device_t *h, int type, int id, unsigned *mhz)
{
    ENTER();
    if (device_of(h) >= 0 && (id < 0 || id > 3)) return NVML_ERROR_INVALID_ARGUMENT;
    return clock_of(h, type, mhz);      /* every clock id (current, application, boost) reads the same */
}

EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvml_device_t *h, int *pstate)
{
    DEVICE(h, d);
    (void)d;
    if (!pstate) return NVML_ERROR_INVALID_ARGUMENT;
    *pstate = 0;                        /* P0 */
    return NVML_SUCCESS;
}

static nvmlReturn_t event_reasons(nvml_device_t *h, unsigned long long *reasons, unsigned long long value)
{
    DEVICE(h, d);
    (void)d;
    if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = value;
    return NVML_SUCCESS;
}

/* Current: GPU idle (nvmlClocksEventReasonGpuIdle); supported: the ones a data-center board reports. */
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvml_device_t *h, unsigned long long *r)
{
    return event_reasons(h, r, 0x1ull);
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvml_device_t *h, unsigned long long *r)
{
    return event_reasons(h, r, 0x1ffull);
}

/* ------------------------------------------------------------------ PCI */

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvml_device_t *h, nvmlPciInfo_t *pci)
{
    DEVICE(h, d);
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    const emu_profile_t *p = emu_profile(d);
    memset(pci, 0, sizeof *pci);
    bus_id(d, pci->busIdLegacy, sizeof pci->busIdLegacy, 4);
    bus_id(d, pci->busId, sizeof pci->busId, 8);
    pci->bus = (unsigned)emu_pci_bus(d);
    pci->pciDeviceId = p->pci_device << 16 | 0x10de;
    pci->pciSubSystemId = p->pci_subsystem << 16 | 0x10de;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfoExt(nvml_device_t *h, nvmlPciInfoExt_t *pci)
{
    DEVICE(h, d);
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    if (pci->version != NVML_VERSIONED(nvmlPciInfoExt_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const emu_profile_t *p = emu_profile(d);
    unsigned version = pci->version;
    memset(pci, 0, sizeof *pci);
    pci->version = version;
    pci->bus = (unsigned)emu_pci_bus(d);
    pci->pciDeviceId = p->pci_device << 16 | 0x10de;
    pci->pciSubSystemId = p->pci_subsystem << 16 | 0x10de;
    pci->baseClass = 0x03;              /* display controller */
    pci->subClass = 0x02;               /* 3D controller */
    bus_id(d, pci->busId, sizeof pci->busId, 8);
    return NVML_SUCCESS;
}

static nvmlReturn_t pcie(nvml_device_t *h, unsigned *out, int width)
{
    DEVICE(h, d);
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    *out = width ? 16u : (unsigned)emu_profile(d)->pcie_gen;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvml_device_t *h, unsigned *g) { return pcie(h, g, 0); }
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvml_device_t *h, unsigned *g) { return pcie(h, g, 0); }
EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvml_device_t *h, unsigned *g) { return pcie(h, g, 0); }
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvml_device_t *h, unsigned *w) { return pcie(h, w, 1); }
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvml_device_t *h, unsigned *w) { return pcie(h, w, 1); }

/* ---------------------------------------------------------------- modes */

static nvmlReturn_t mode(nvml_device_t *h, int *out, int value)
{
    DEVICE(h, d);
    (void)d;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    *out = value;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvml_device_t *h, int *m) { return mode(h, m, 0); }   /* DEFAULT */
EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvml_device_t *h, int *m) { return mode(h, m, 1); }
EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvml_device_t *h, int *m) { return mode(h, m, 0); }
EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvml_device_t *h, int *m) { return mode(h, m, 0); }
EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvml_device_t *h, unsigned *is_mig)
{
    return mode(h, (int *)is_mig, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvml_device_t *h, int *current, int *pending)
{
    DEVICE(h, d);
    (void)d;
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = 1;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvml_device_t *h, unsigned *current, unsigned *pending)
{
    DEVICE(h, d);
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (!emu_profile(d)->mig) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = 0;            /* NVML_DEVICE_MIG_DISABLE */
    return NVML_SUCCESS;
}

/* --------------------------------------------- what cuda.core's system.Device reads besides */

EXPORT nvmlReturn_t nvmlDeviceGetModuleId(nvml_device_t *h, unsigned *id)
{
    DEVICE(h, d);
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    *id = (unsigned)d + 1;              /* the board's slot, counted from 1 */
    return NVML_SUCCESS;
}

/* Not a NUMA-attached GPU (cudaDevAttrNumaConfig is 0). */
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvml_device_t *h, unsigned *node)
{
    DEVICE(h, d);
    (void)d;
    if (!node) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NOT_SUPPORTED;
}

/* Data-center boards have no auto boost setting. */
EXPORT nvmlReturn_t nvmlDeviceGetAutoBoostedClocksEnabled(nvml_device_t *h, int *enabled, int *default_enabled)
{
    DEVICE(h, d);
    (void)d;
    if (!enabled || !default_enabled) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxCustomerBoostClock(nvml_device_t *h, int type, unsigned *mhz)
{
    return clock_of(h, type, mhz);
}

/* P0 only: from a quarter of the maximum (memory: its one speed) to the maximum. */
EXPORT nvmlReturn_t nvmlDeviceGetMinMaxClockOfPState(nvml_device_t *h, int type, int pstate, unsigned *min,
                                                     unsigned *max)
{
    DEVICE(h, d);
    int c = clock_mhz(d, type);
    if (c < 0 || !min || !max) return NVML_ERROR_INVALID_ARGUMENT;
    if (pstate != 0) return NVML_ERROR_NOT_SUPPORTED;
    *min = (unsigned)(type == 2 ? c : c / 4);
    *max = (unsigned)c;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvml_device_t *h, unsigned *count)
{
    DEVICE(h, d);
    (void)d;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}

/* NVML_PCIE_UTIL_TX_BYTES / RX_BYTES in KB/s: nothing moves over a bus. */
EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvml_device_t *h, int counter, unsigned *kbps)
{
    DEVICE(h, d);
    (void)d;
    if ((counter != 0 && counter != 1) || !kbps) return NVML_ERROR_INVALID_ARGUMENT;
    *kbps = 0;
    return NVML_SUCCESS;
}

typedef struct { unsigned version; int marginTemperature; } nvmlMarginTemperature_t;

/* Degrees below the slowdown threshold (87 C on these boards' data sheets' class). */
EXPORT nvmlReturn_t nvmlDeviceGetMarginTemperature(nvml_device_t *h, nvmlMarginTemperature_t *margin)
{
    DEVICE(h, d);
    (void)d;
    if (!margin) return NVML_ERROR_INVALID_ARGUMENT;
    if (margin->version != NVML_VERSIONED(nvmlMarginTemperature_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    margin->marginTemperature = 87 - TEMPERATURE_C;
    return NVML_SUCCESS;
}

/* MIG is disabled on every emulated board: no MIG devices. */
EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvml_device_t *h, unsigned *count)
{
    DEVICE(h, d);
    (void)d;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}

/* Every pair of distinct devices is peer-capable (cudaDeviceCanAccessPeer says so): NVML_P2P_STATUS_OK;
 * a device with itself: NVML_P2P_STATUS_NOT_SUPPORTED.  Capability indices 0..5 (read .. unknown). */
EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvml_device_t *h1, nvml_device_t *h2, int index, int *status)
{
    ENTER();
    int d1 = device_of(h1), d2 = device_of(h2);
    if (d1 < 0 || d2 < 0 || index < 0 || index > 5 || !status) return NVML_ERROR_INVALID_ARGUMENT;
    *status = d1 == d2 ? 5 : 0;
    return NVML_SUCCESS;
}
