/* NVML of the emulated machine: what nvidia-ml-py (pynvml), cuda.core's `system` (cuda.bindings.nvml),
 * torch's NVML paths and accel's own NVML call.  Exported by the bundled emulator and by the
 * libcudart.so.13 stand-in; the libnvidia-ml.so.1 stand-in (emu_libnvml.c) depends on the latter, so
 * NVML sees the same devices and allocations as the CUDA runtime and driver in the process.  This
 * file: init, system, handles, identity, memory and processes; emu_nvml_device.c: utilisation,
 * sensors, power, clocks, PCI and modes; emu_nvml.h: what both share.
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
#include "emu_nvml.h"

nvml_device_t g_nvml_devices[EMU_MAX_DEVICES];
int g_nvml_refs;

/* ---------------------------------------------------------- init, system */

static nvmlReturn_t init(void)
{
    if (emu_physical_devices() < 0) return NVML_ERROR_UNKNOWN;   /* a malformed ACCEL_EMU_* */
    __atomic_add_fetch(&g_nvml_refs, 1, __ATOMIC_ACQ_REL);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    if (EMU_FAULT(nvmlInit_v2)) return NVML_ERROR_UNKNOWN;
    return init();
}
EXPORT nvmlReturn_t nvmlInit(void)
{
    if (EMU_FAULT(nvmlInit)) return NVML_ERROR_UNKNOWN;
    return init();
}
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags)
{
    if (EMU_FAULT(nvmlInitWithFlags)) return NVML_ERROR_UNKNOWN;
    (void)flags;
    return init();
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    if (EMU_FAULT(nvmlShutdown)) return NVML_ERROR_UNKNOWN;
    int refs = __atomic_load_n(&g_nvml_refs, __ATOMIC_ACQUIRE);
    while (refs > 0 && !__atomic_compare_exchange_n(&g_nvml_refs, &refs, refs - 1, 0, __ATOMIC_ACQ_REL,
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
    if (EMU_FAULT(nvmlSystemGetDriverVersion)) return NVML_ERROR_UNKNOWN;
    ENTER();
    return put_string(version, length, DRIVER_VERSION);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned length)
{
    if (EMU_FAULT(nvmlSystemGetNVMLVersion)) return NVML_ERROR_UNKNOWN;
    ENTER();
    return put_string(version, length, NVML_VERSION);
}

static nvmlReturn_t cuda_version(int *v)
{
    if (!v) return NVML_ERROR_INVALID_ARGUMENT;
    *v = emu_driver_version();
    return NVML_SUCCESS;
}

/* The CUDA version of the driver: works without nvmlInit in the real NVML too. */
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    if (EMU_FAULT(nvmlSystemGetCudaDriverVersion)) return NVML_ERROR_UNKNOWN;
    return cuda_version(v);
}
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    if (EMU_FAULT(nvmlSystemGetCudaDriverVersion_v2)) return NVML_ERROR_UNKNOWN;
    return cuda_version(v);
}

EXPORT nvmlReturn_t nvmlSystemGetDriverBranch(nvmlSystemDriverBranchInfo_t *info, unsigned length)
{
    if (EMU_FAULT(nvmlSystemGetDriverBranch)) return NVML_ERROR_UNKNOWN;
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
    if (EMU_FAULT(nvmlSystemGetProcessName)) return NVML_ERROR_UNKNOWN;
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

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    if (EMU_FAULT(nvmlDeviceGetCount_v2)) return NVML_ERROR_UNKNOWN;
    return count(n);
}
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *n)
{
    if (EMU_FAULT(nvmlDeviceGetCount)) return NVML_ERROR_UNKNOWN;
    return count(n);
}

static nvmlReturn_t by_index(unsigned index, nvml_device_t **device)
{
    ENTER();
    if (!device || index >= (unsigned)emu_physical_devices()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &g_nvml_devices[index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvml_device_t **device)
{
    if (EMU_FAULT(nvmlDeviceGetHandleByIndex_v2)) return NVML_ERROR_UNKNOWN;
    return by_index(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvml_device_t **device)
{
    if (EMU_FAULT(nvmlDeviceGetHandleByIndex)) return NVML_ERROR_UNKNOWN;
    return by_index(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvml_device_t **device)
{
    if (EMU_FAULT(nvmlDeviceGetHandleByUUID)) return NVML_ERROR_UNKNOWN;
    ENTER();
    if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
    for (int d = 0; d < emu_physical_devices(); d++) {
        char text[EMU_UUID_TEXT];
        emu_uuid_text(d, text);
        /* with its "GPU-" prefix, or without it as CUDA writes a UUID (cuda.core's to_system_device) */
        if (strcmp(text, uuid) == 0 || (strncmp(text, "GPU-", 4) == 0 && strcmp(text + 4, uuid) == 0)) {
            *device = &g_nvml_devices[d];
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
            *device = &g_nvml_devices[d];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvml_device_t **device)
{
    if (EMU_FAULT(nvmlDeviceGetHandleByPciBusId_v2)) return NVML_ERROR_UNKNOWN;
    return by_bus_id(id, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *id, nvml_device_t **device)
{
    if (EMU_FAULT(nvmlDeviceGetHandleByPciBusId)) return NVML_ERROR_UNKNOWN;
    return by_bus_id(id, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvml_device_t *h, unsigned *index)
{
    if (EMU_FAULT(nvmlDeviceGetIndex)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned)d;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------ identity */

EXPORT nvmlReturn_t nvmlDeviceGetName(nvml_device_t *h, char *name, unsigned length)
{
    if (EMU_FAULT(nvmlDeviceGetName)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    char text[256];
    emu_device_name(d, text, sizeof text);
    return put_string(name, length, text);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvml_device_t *h, char *uuid, unsigned length)
{
    if (EMU_FAULT(nvmlDeviceGetUUID)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    char text[EMU_UUID_TEXT];
    emu_uuid_text(d, text);
    return put_string(uuid, length, text);
}

EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvml_device_t *h, char *serial, unsigned length)
{
    if (EMU_FAULT(nvmlDeviceGetSerial)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    char text[32];
    snprintf(text, sizeof text, "%013llu", 1650000000000ull + (unsigned long long)d);
    return put_string(serial, length, text);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvml_device_t *h, unsigned *minor)
{
    if (EMU_FAULT(nvmlDeviceGetMinorNumber)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!minor) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = (unsigned)d;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvml_device_t *h, int *brand)
{
    if (EMU_FAULT(nvmlDeviceGetBrand)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!brand) return NVML_ERROR_INVALID_ARGUMENT;
    *brand = emu_profile(d)->nvml_brand;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvml_device_t *h, unsigned *arch)
{
    if (EMU_FAULT(nvmlDeviceGetArchitecture)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!arch) return NVML_ERROR_INVALID_ARGUMENT;
    *arch = (unsigned)emu_profile(d)->nvml_arch;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvml_device_t *h, int *major, int *minor)
{
    if (EMU_FAULT(nvmlDeviceGetCudaComputeCapability)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = emu_profile(d)->major;
    *minor = emu_profile(d)->minor;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvml_device_t *h, unsigned *cores)
{
    if (EMU_FAULT(nvmlDeviceGetNumGpuCores)) return NVML_ERROR_UNKNOWN;
    DEVICE(h, d);
    if (!cores) return NVML_ERROR_INVALID_ARGUMENT;
    *cores = (unsigned)(emu_profile(d)->sms * emu_profile(d)->cores_per_sm);
    return NVML_SUCCESS;
}

/* -------------------------------------------------------------- memory */

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvml_device_t *h, nvmlMemory_t *memory)
{
    if (EMU_FAULT(nvmlDeviceGetMemoryInfo)) return NVML_ERROR_UNKNOWN;
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
    if (EMU_FAULT(nvmlDeviceGetMemoryInfo_v2)) return NVML_ERROR_UNKNOWN;
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
    if (EMU_FAULT(nvmlDeviceGetComputeRunningProcesses_v3)) return NVML_ERROR_UNKNOWN;
    return processes(h, count, infos, 0, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvml_device_t *h, unsigned *count, void *infos)
{
    if (EMU_FAULT(nvmlDeviceGetComputeRunningProcesses_v2)) return NVML_ERROR_UNKNOWN;
    return processes(h, count, infos, 0, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvml_device_t *h, unsigned *count, void *infos)
{
    if (EMU_FAULT(nvmlDeviceGetComputeRunningProcesses)) return NVML_ERROR_UNKNOWN;
    return processes(h, count, infos, 1, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvml_device_t *h, unsigned *count, void *infos)
{
    if (EMU_FAULT(nvmlDeviceGetGraphicsRunningProcesses_v3)) return NVML_ERROR_UNKNOWN;
    return processes(h, count, infos, 0, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvml_device_t *h, unsigned *count, void *infos)
{
    if (EMU_FAULT(nvmlDeviceGetGraphicsRunningProcesses_v2)) return NVML_ERROR_UNKNOWN;
    return processes(h, count, infos, 0, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvml_device_t *h, unsigned *count, void *infos)
{
    if (EMU_FAULT(nvmlDeviceGetGraphicsRunningProcesses)) return NVML_ERROR_UNKNOWN;
    return processes(h, count, infos, 1, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvml_device_t *h, unsigned *count, void *infos)
{
    if (EMU_FAULT(nvmlDeviceGetMPSComputeRunningProcesses_v3)) return NVML_ERROR_UNKNOWN;
    return processes(h, count, infos, 0, 0);
}
